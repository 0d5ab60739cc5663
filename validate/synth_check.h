// `strata validate synth`: P2's placements x synthesized reduction programs (search/reduce), measured on the
// emulated cluster with Open MPI and compared with the simulator's ranking of them: top-k accuracy (is a
// measured-fastest candidate among the simulator's k fastest?), Spearman's rank correlation, the regret of
// the simulator's pick, and the error of the predicted times.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "hw/topology.h"
#include "validate/cluster.h"
#include "validate/plan.h"
#include "validate/stats.h"

namespace strata::validate {

struct SynthCheckRequest {
  std::vector<int> axes, reduce_axes;
  double bytes = 1 << 20;  // buffer per rank
  int max_size = 5;        // program size bound
  // Candidates measured: all when there are at most top + sample; otherwise the simulator's `top` fastest
  // plus `sample` others drawn with `seed`.
  int top = 10, sample = 10;
  std::uint64_t seed = 1;
  int warmup = 1, iterations = 5;
  // Top-k: a candidate measured within this share of the measured best counts as measured-fastest (the
  // order of candidates closer than the measurement noise is not decided by the measurement).
  double tolerance = 0.02;
};

struct SynthCandidate {
  std::string placement;    // matrix, e.g. [[2,2]]
  std::string program;      // text form
  std::string shape;        // e.g. ReduceScatter-AllReduce-AllGather
  double predicted = 0;     // seconds
  Spread measured;          // seconds
  std::int64_t wrong = -1;  // elements the worker's correctness check found wrong (-1: not checked)
};

struct RankingStats {
  int candidates = 0;
  bool top1 = false, top5 = false, top10 = false;
  double spearman = 0;  // NaN when undefined
  double regret = 1;
  ErrorSummary error;
  double median_spread = 0;  // median relative spread of the measurements: differences below it are noise
};
// `use_min`: rank by each candidate's fastest run instead of its median. Interference on a shared machine
// only ever slows a run down, so the fastest run estimates the undisturbed time the simulator predicts.
RankingStats ranking_stats(const std::vector<SynthCandidate>& measured, double tolerance,
                           bool use_min = false);

struct SynthCheck {
  std::size_t total_candidates = 0;      // placements x programs before sampling
  std::vector<SynthCandidate> measured;  // in the simulator's order, fastest first
  RankingStats stats;                    // on the measured medians
  RankingStats stats_min;  // on the fastest of each candidate's timed runs (the least disturbed one)
  double tolerance = 0;
};

// On the emulated cluster with Open MPI, simulated with Open MPI's schedules.
SynthCheck check_synth(const ClusterSpec& spec, const hw::Topology& topo, const SynthCheckRequest& request);
// The same with any way of measuring a plan of `ranks` ranks (e.g. measure_on_hosts with backend nccl: every
// group of a lowered program its own NCCL communicator), programs synthesized and simulated with the
// registered collective algorithm `algorithm`.
SynthCheck check_synth(int ranks, const hw::Topology& topo, const SynthCheckRequest& request,
                       std::string_view algorithm,
                       const std::function<PlanResult(const MeasurementPlan&)>& measure);

// Readable report: every measured candidate with predicted and measured times and ranks, then the statistics.
std::string synth_report(const SynthCheck& check);
std::string synth_csv(const SynthCheck& check);

}  // namespace strata::validate
