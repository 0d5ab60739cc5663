// Is the optimized graph really faster? (issue 15; docs/replay.md §2, TASO's question, Jia et al., SOSP
// 2019, §7.) The candidates the graph optimizers choose between — the original graph, every graph along the
// backtracking search's path to its result, the equality-saturation result, and a seeded sample of graphs one
// rule application away from the original — are predicted by the cost model, checked equal in function to
// the original and timed for real on the host CPU with the oneDNN replay (validate/cpu_replay.h); the report
// says how well the prediction ranks them (validate/stats.h) and what the optimizer's choice gains.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "models/cost/cost_model.h"
#include "models/ir/graph.h"
#include "search/subst/eqsat.h"
#include "search/subst/optimizer.h"
#include "search/subst/rule.h"
#include "validate/cpu_replay.h"
#include "validate/replay_device.h"
#include "validate/stats.h"

namespace strata::validate {

struct GraphCandidate {
  std::string name;  // "original", "backtrack", "backtrack step 2/5", "eqsat", "sample 3"; duplicates merged:
                     // "backtrack = eqsat"
  std::string how;   // the rewrites that lead to it from the original ("" for the original)
  models::Graph graph;
};

struct CandidateOptions {
  search::subst::OptimizerOptions backtrack;  // record_path is set by optimizer_candidates
  search::subst::EqsatOptions eqsat;
  int sample = 5;           // graphs one rewrite away from the original, drawn with `seed`
  int max_path_steps = 16;  // intermediate graphs of the backtracking path kept, evenly spaced (0: all)
  std::uint64_t seed = 1;   // the sample's draw
};

// The candidate set, in this order: the original (dead nodes removed, as the optimizers see it), the
// backtracking search's intermediate graphs (at most max_path_steps of them: steps ⌈j·n/(max+1)⌉ of the n,
// j = 1..max, so a long path such as ResNet-50's 86 steps is measured in under a minute) and its result, the
// eqsat result, then the sample. The sample draws from every rule match and hand-written transformation site
// on the original (rules in order, their matches in find_matches order, then the transformations), shuffled
// by a Fisher-Yates pass driven by std::mt19937_64(seed) (fully specified by the standard, so the draw is the
// same everywhere), keeping the first `sample` that build and differ from every candidate before them.
// Structurally equal graphs (search::subst::graph_hash) appear once, under the joined names. Deterministic
// for a seed, except where eqsat stops at a wall-clock limit (its time_limit_s, or Z3's ILP time limit
// falling back to greedy extraction): then its result depends on the machine's speed.
struct CandidateSet {
  std::vector<GraphCandidate> candidates;  // the original first
  std::size_t backtrack = 0, eqsat = 0;    // the optimizers' results (the same index when they are equal)
  // One line per optimizer that returned the original because its best graph saved less than its min_gain
  // ("eqsat: best graph found ...", search/subst/min_gain.h).
  std::vector<std::string> declined;
};
CandidateSet optimizer_candidates(const models::Graph& g, std::span<const search::subst::Rule> rules,
                                  const models::CostModel& cost, const CandidateOptions& options);

// Does `candidate` compute what `original` computes? Both are replayed on the CPU (f32, oneDNN) on the same
// inputs: sources by name and seed, weights of rank >= 2 scaled by 1/sqrt(fan-in) (He et al., ICCV 2015) so
// activations stay of order 1 through deep models; outputs are compared in order.
struct EquivalenceCheck {
  double max_rel_error = 0;  // max |a - b| / max(1e-30, max |a|) over outputs, per output, the largest
  bool pass = false;
  std::string failure;  // why not, when !pass
};
// Replayed on `device` (default: the CPU).
EquivalenceCheck check_equivalent(const models::Graph& original, const models::Graph& candidate,
                                  double tolerance = 1e-3, std::uint64_t seed = 0,
                                  const ReplayDevice& device = cpu_replay_device());

// The sum of node medians of a graph: weight-only nodes folded first (search::subst::fold_weight_only: the
// cost model charges them nothing, they run once before inference), then the sum over its kernels of each
// distinct operator instance's median time (profile_on_cpu) times its instances; views cost nothing.
double measure_graph_seconds(const models::Graph& g, const TimingOptions& timing,
                             const ReplayDevice& device = cpu_replay_device());

// The whole-graph time of a graph: weight-only nodes folded as above, then time_graph's median over
// `timing.repeat` passes of the whole graph (after its first pass and `timing.warmup` untimed ones). Unlike
// the sum of node medians, each kernel reads its weights once per pass, after the other kernels ran, so small
// weights do not stay in cache between repetitions of one node.
double measure_whole_graph_seconds(const models::Graph& g, const TimingOptions& timing,
                                   const ReplayDevice& device = cpu_replay_device());

// One row of the report.
struct CandidateRow {
  std::string name, how;
  std::size_t nodes = 0;
  double predicted = 0;  // seconds (graph_cost)
  // Seconds, one per repeat of the whole measurement: the ranked time (`validate graphs`: whole-graph time,
  // measure_whole_graph_seconds) ...
  std::vector<double> measured_runs;
  std::vector<double> node_sum_runs;  // ... and the sum of node medians (measure_graph_seconds), reported
  bool equivalent = true;             // false: a bug in a rule or rewrite, reported and not ranked
  double max_rel_error = 0;
  double measured() const;  // median of measured_runs
  double node_sum() const;  // median of node_sum_runs (0 when none)
  double spread() const;    // (max - min) / median of measured_runs; 0 with one run
};

struct GraphCheckReport {
  std::vector<CandidateRow> rows;
  std::size_t original = 0, backtrack = 0, eqsat = 0;  // rows of the three named candidates
  int ranked = 0;                                      // equivalent rows, the ones the statistics use
  double noise = 0;  // median spread of the ranked rows: the top-k tolerance
  bool top1 = false, top3 = false, top5 = false;
  bool top1_exact =
      false;  // top-1 without the noise tolerance: the predicted fastest is the measured fastest
  double spearman = 0, regret = 0;
  ErrorSummary errors;
  double backtrack_speedup = 0, eqsat_speedup = 0;  // measured original / measured choice
  // The choice is measured slower than the original by more than the noise: its median is above the
  // original's by more than `noise`, the tolerance top-k uses (docs/replay.md §2 says why not the
  // non-overlap of the repeats' ranges, the rule before 2026-11-28).
  bool backtrack_slower = false, eqsat_slower = false;
};

// The statistics of a candidate table (rows in any order; `original`, `backtrack`, `eqsat` index it).
GraphCheckReport summarize_candidates(std::vector<CandidateRow> rows, std::size_t original,
                                      std::size_t backtrack, std::size_t eqsat);

// How check_candidates measures: `timing` is one measurement (whole-graph passes, or runs per operator
// instance), `repeat` measurements of every candidate both ways, the candidates interleaved (round 1 over
// all, then round 2, ...) so slow drift of the machine spreads over all of them.
struct CandidateCheckOptions {
  TimingOptions timing{.warmup = 2, .repeat = 10, .seed = 0};
  int repeat = 3;
  double tolerance = 1e-3;                            // check_equivalent's
  const ReplayDevice* device = &cpu_replay_device();  // where the candidates are replayed and timed
  std::function<void(std::string_view)> log;          // progress lines (may be empty)
};

// What `strata validate graphs` and the cpu-validation experiment kind do with a candidate set: every
// candidate predicted (search::subst::graph_cost under `cost`), checked against the original
// (check_equivalent; one that fails is logged "NOT EQUIVALENT: ..." and not measured), measured `repeat`
// times both ways, then summarize_candidates.
GraphCheckReport check_candidates(const CandidateSet& set, const models::CostModel& cost,
                                  const CandidateCheckOptions& options);

}  // namespace strata::validate
