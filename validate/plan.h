// A measurement plan: what the MPI worker (mpi_worker.cc) runs, and what it reports. A plan is a list of
// cases; a case is a sequence of steps, each a set of concurrent collective calls on disjoint groups of MPI
// ranks (a single collective, or a lowered reduction program of search/reduce). The worker times every case
// `iterations` times after `warmup` untimed runs; one timing is the slowest rank's time from a common barrier
// to its last call's return. Plans and results travel as JSON files between `strata` and the worker.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sim/collective.h"

namespace strata::validate {

struct PlanCall {
  sim::CollectiveOp op = sim::CollectiveOp::kAllReduce;
  std::vector<int> group;  // MPI ranks of MPI_COMM_WORLD, root first; the communicator keeps this order
  std::int64_t bytes = 0;  // nccl-tests convention (sim::CollectiveSpec::bytes), float32 elements
};
struct PlanStep {
  std::vector<PlanCall> calls;  // concurrent; disjoint groups
};
struct PlanCase {
  std::string name;
  std::vector<PlanStep> steps;
};
struct MeasurementPlan {
  int ranks = 0;  // size of MPI_COMM_WORLD the plan is for
  int warmup = 2;
  int iterations = 10;
  std::vector<PlanCase> cases;
};

// Bytes a call must be a multiple of so that every rank's share is whole float32 elements: 4 for the
// whole-vector collectives, 4 x group size for the split ones (reduce-scatter, all-gather, all-to-all).
std::int64_t byte_granularity(sim::CollectiveOp op, int group_size);
// `bytes` rounded down to that granularity (at least one granule), as nccl-tests rounds its sizes.
std::int64_t round_bytes(sim::CollectiveOp op, int group_size, std::int64_t bytes);

// Checks a plan (ranks in range, groups disjoint within a step, sizes whole elements, counts within MPI's
// int); throws std::invalid_argument naming the case, step and call.
void check_plan(const MeasurementPlan& plan);

std::string plan_to_json(const MeasurementPlan& plan);
// Parses and checks; `source` names the file in errors.
MeasurementPlan plan_from_json(std::string_view text, std::string_view source);

struct CaseResult {
  std::string name;
  std::vector<double> seconds;              // per timed iteration: the slowest rank's time
  std::vector<double> rank_median_seconds;  // per rank: its median over the iterations
  // Elements found wrong by the worker's correctness check, summed over ranks and calls (nccl-tests'
  // #wrong); -1: not checked (the MPI worker does not check).
  std::int64_t wrong = -1;
};
struct PlanResult {
  int ranks = 0;
  std::string library;  // MPI_Get_library_version, first line (the NCCL worker: NCCL's version too)
  std::vector<CaseResult> cases;
};

std::string result_to_json(const PlanResult& result);
PlanResult result_from_json(std::string_view text, std::string_view source);

// Order statistics of a case's timings.
struct Spread {
  double median = 0, min = 0, max = 0;
  double relative_spread() const { return median > 0 ? (max - min) / median : 0; }  // (max - min) / median
};
Spread spread_of(std::vector<double> values);

}  // namespace strata::validate
