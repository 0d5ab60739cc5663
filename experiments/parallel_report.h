// Parallelization strategies as `strata sim step`, `strata parallelize` and the Python API run them: the
// options turned into a strategy (checked with the command line's messages), the simulation or search, and
// the JSON both print (`--format json`).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "hw/topology.h"
#include "models/zoo/transformer_spec.h"
#include "search/parallel/llm_search.h"

namespace strata::experiments {

// The transformer `model` names (zoo name, transformer:..., model YAML), with its sequence length replaced by
// `seq` when > 0. Throws ConfigError for anything else (naming what was expected).
models::zoo::TransformerSpec resolve_transformer(const std::string& model, std::int64_t seq);

// --search: "exhaustive" (LLM strategies, search_strategies) or "mcmc" (per-operator plans,
// parallel_mcmc_report.h); throws ConfigError otherwise.
enum class SearchKind { kExhaustive, kMcmc };
SearchKind parse_search_kind(const std::string& text);

// "bf16", "fp16" or "fp8" (--dtype of the parallel commands).
hw::DType parse_compute_dtype(const std::string& text);

// `strata sim step`: one training step under one strategy.
struct StepQuery {
  std::string model, hw, recompute = "none", dtype = "bf16", schedule, placement;
  int nodes = 0, tp = 1, pp = 1, dp = 1, cp = 1, ep = 1, micro_batch = 1, virtual_stages = 1, zero = 0;
  std::int64_t global_batch = 0, seq = 0;
  bool sequence_parallel = false, no_overlap = false, record_timeline = false;
  double bucket_mb = 0;
};

struct StepReport {
  hw::Topology topo;
  models::zoo::TransformerSpec spec;
  search::parallel::LlmStepResult result;
};

StepReport simulate_step(const StepQuery& query);
// `--trace`: the step (simulated with record_timeline) as a Chrome/Perfetto trace at `path`.
void write_step_trace(const StepReport& report, const std::string& path);
// One plan as `--format json` prints it.
nlohmann::json step_result_json(const search::parallel::LlmStepResult& r);
// `strata sim step --format json`: the plan with the model, system and GPU count.
nlohmann::json step_json(const StepReport& report);

// `strata parallelize --search exhaustive`.
struct SearchQuery {
  std::string model, hw, dtype = "bf16";
  int nodes = 0, top = 10;
  std::int64_t global_batch = 0, seq = 0;
  bool megatron_placement_only = false;
};

struct SearchReport {
  hw::Topology topo;
  models::zoo::TransformerSpec spec;
  search::parallel::LlmSearchResult result;
};

// `progress` (if set) is called as plans are simulated: (simulated so far, best step so far).
SearchReport search_strategies(const SearchQuery& query,
                               const std::function<void(std::size_t, double)>& progress = {});
// `strata parallelize --format json`.
nlohmann::json search_json(const SearchReport& report);

}  // namespace strata::experiments
