// Graph optimization with substitution rules as `strata optimize` and the Python API set it up: the model,
// the system whose GPU prices the operators, the rules and the search options, checked with the command
// line's messages.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "hw/topology.h"
#include "hw/yaml_reader.h"
#include "models/cost/cost_model.h"
#include "models/ir/graph.h"
#include "search/subst/optimizer.h"
#include "search/subst/rule.h"

namespace strata::experiments {

// The default rule set: the rules of TASO's shipped 133-rule file that strata's verifier proves, written by
// `strata subst verify` (configs/subst/README.md gives the command); found next to the installed binary or in
// the source tree (util/path.h).
inline constexpr std::string_view kDefaultRules = "configs/subst/taso_shipped_verified.rules";

struct OptimizeQuery {
  std::string model, hw, rules, cost_params;  // rules: empty for kDefaultRules
  std::string xfers = "all";                  // all, none, or a comma-separated list (search/subst/xfers.h)
  double alpha = 1.05;
  int budget = 1000;
  std::int64_t batch = 0, seq = 0;  // 0: the model's default
  // Both optimizers return the input unless their best graph is predicted this much faster, in percent of the
  // input's predicted time (search/subst/min_gain.h).
  double min_gain_percent = 100 * search::subst::kDefaultMinGain;
};

struct OptimizeSetup {
  hw::Topology topo;
  models::Graph graph;
  std::vector<search::subst::Rule> rules;
  models::CostModel cost;
  search::subst::OptimizerOptions options;  // no progress callback
};

OptimizeSetup prepare_optimize(const OptimizeQuery& query);

// An experiment file's `min_gain:` (both optimizers, search/subst/min_gain.h): a percentage in 0..100,
// returned as the fraction OptimizerOptions and EqsatOptions take; ConfigError at the field otherwise.
double min_gain_fraction(const YamlReader& node);

// `--output`: an optimized graph as ONNX with its weight-only nodes folded into parameters, as the cost model
// assumes (search/subst/weight_folding.h).
void export_optimized(const models::Graph& graph, const std::string& path);

}  // namespace strata::experiments
