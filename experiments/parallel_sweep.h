// The `parallel-sweep` experiment kind (configs/experiments/parallel_*.yaml): one transformer on one system
// at several node counts, each strategy family (the search's best plan, the Megatron-style expert plan, pure
// data parallelism, explicit strategies) simulated step by step (search/parallel); plans.csv, summary.md and
// figures (docs/experiments.md, "parallel-sweep"). parallel_sweep_parse.cc reads the file,
// parallel_sweep.cc runs and reports.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "experiments/experiment.h"
#include "models/zoo/transformer_spec.h"
#include "search/parallel/llm_search.h"

namespace strata::experiments::parallel_sweep {

// The built-in families; every explicit strategy of the file is a family of its own, named by the file.
inline constexpr std::string_view kBest = "best";                   // search_llm's fastest plan
inline constexpr std::string_view kMegatron = "megatron";           // megatron_expert_strategy
inline constexpr std::string_view kDataParallel = "data-parallel";  // tp = pp = cp = 1
inline constexpr std::string_view kBuiltinFamilies = "best, megatron, data-parallel";

struct Point {  // one cluster size
  int nodes = 0;
  std::int64_t global_batch = 0;
  hw::Topology topology;
};

struct NamedStrategy {  // an explicit strategy; dp (and global batch) follow from each point
  std::string name;
  search::parallel::LlmStrategy strategy;
};

struct Config {
  std::string name, description, model_text, hw_text;
  models::zoo::TransformerSpec spec;
  std::vector<Point> points;               // increasing node counts
  std::vector<std::string> builtin;        // the built-in families asked for, in the file's order
  std::vector<NamedStrategy> strategies;   // explicit families, in the file's order
  search::parallel::LlmSearchSpace space;  // of `best` (and the data-parallel baseline)
  hw::DType dtype = hw::DType::kBf16;
  bool wants(std::string_view family) const;
  bool needs_search() const { return wants(kBest) || wants(kDataParallel); }
};

// The strategy an explicit family runs at one point: dp = GPUs / (tp x pp x cp). Empty with `why` set
// when it cannot run there (GPU count, strategy_problems).
std::optional<search::parallel::LlmStrategy> strategy_at(const Config& config, const NamedStrategy& named,
                                                         const Point& point, std::string& why);

// strategy_problems' lines joined with "; " (one CSV field, one table cell).
std::string one_line(const std::string& problems);

Config parse(const ExperimentFile& file);

}  // namespace strata::experiments::parallel_sweep
