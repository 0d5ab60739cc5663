// FlexFlow-style per-operator plans (`strata parallelize --search mcmc`, search/parallel/op_search.h) as the
// command line and the Python API run them: any model's forward graph, the MCMC search, and the JSON both
// print.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "hw/topology.h"
#include "models/ir/graph.h"
#include "search/parallel/op_search.h"

namespace strata::experiments {

struct McmcQuery {
  std::string model;               // zoo name, transformer:..., model YAML or .onnx file
  std::int64_t global_batch = 0;   // samples per step: plans split it
  std::int64_t seq = 0;            // 0: the model's default (not for ONNX files)
  std::int64_t proposals = 20000;  // per chain
  std::int64_t seed = 1;
  double seconds = 0;  // wall-clock budget per chain; 0: none
};

struct McmcReport {
  models::Graph graph;  // the forward graph searched
  search::parallel::McmcResult result;
};

// Throws ConfigError naming --model or --seq, util::InputError for an option out of the command line's range.
McmcReport mcmc_search(const McmcQuery& query, const hw::Topology& topo);
// `strata parallelize --search mcmc --format json`.
nlohmann::json mcmc_json(const McmcQuery& query, const hw::Topology& topo, const McmcReport& report);

}  // namespace strata::experiments
