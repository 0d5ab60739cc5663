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

// `strata synth --joint`: one placement for several reductions, each "AXES:BYTES" (axes joined by '+', e.g.
// "0:4GiB", "0+2:1GiB"); placements ranked by the sum of each reduction's best program. Uses the query's hw,
// nodes, axes, algo (one registered algorithm), max_size, canonical and split_levels.
struct JointReport {
  hw::Topology topo;
  std::vector<int> axes;
  std::vector<search::reduce::ReductionSpec> reductions;  // labelled with their "AXES:BYTES" text
  std::vector<search::reduce::JointEval> results;         // fastest total first
};
JointReport synthesize_joint(const SynthQuery& query, const std::vector<std::string>& joint);
// `strata synth --joint ... --format json`: one record per placement.
nlohmann::json joint_json(const JointReport& report);

// Helpers the command line shares: a list of axis sizes or indices, and the synthesis options.
std::vector<int> parse_axis_list(const std::string& text, util::IntRange range, const std::string& option,
                                 char sep = ',');
search::reduce::SynthesisOptions synthesis_options(int max_size, const std::string& canonical);
// The largest axis size: every GPU of the largest system on one axis.
inline constexpr std::int64_t kMaxAxis = hw::limits::kMaxGpus;

}  // namespace strata::experiments
