// Placement enumeration and reduction-program synthesis (P2) as `strata synth` and the Python API run it:
// the options checked with the command line's messages, the ranked evaluation, and the JSON both print.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "hw/limits.h"
#include "hw/topology.h"
#include "search/reduce/evaluate.h"
#include "util/parse.h"

namespace strata::experiments {

struct SynthQuery {
  std::string hw, axes, reduce = "0", bytes = "4GiB", algo = "ring", canonical = "none";
  int nodes = 0, top = 10, max_size = 5;
  bool all = false, split_levels = false;
};

struct SynthReport {
  hw::Topology topo;
  search::reduce::PlacementHierarchy hierarchy;
  search::reduce::EvalConfig config;
  std::vector<search::reduce::PlacementEval> results;  // fastest best program first
  std::size_t shown = 0;                               // the first `top` (0: all)
  search::reduce::EvalStats stats;
};

// Throws ConfigError or util::InputError naming the option (--axes, --reduce, --bytes, --algo, ...).
SynthReport synthesize(const SynthQuery& query);
// `strata synth --format json`: one record per shown placement; every program too with `all`.
nlohmann::json synth_json(const SynthReport& report, bool all);

// Helpers the command line shares: a list of axis sizes or indices, and the synthesis options.
std::vector<int> parse_axis_list(const std::string& text, util::IntRange range, const std::string& option,
                                 char sep = ',');
search::reduce::SynthesisOptions synthesis_options(int max_size, const std::string& canonical);
// The largest axis size: every GPU of the largest system on one axis.
inline constexpr std::int64_t kMaxAxis = hw::limits::kMaxGpus;

}  // namespace strata::experiments
