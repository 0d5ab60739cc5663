// `strata validate collectives`: one collective at a range of sizes, measured on the emulated cluster and
// simulated on its system file with the same schedule (Open MPI's, sim/algorithms/openmpi.cc), side by side
// in nccl-tests' columns.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hw/topology.h"
#include "validate/cluster.h"
#include "validate/plan.h"

namespace strata::validate {

struct CollectiveCheck {
  std::int64_t bytes = 0;
  Spread measured;          // seconds over the timed iterations (slowest rank each)
  Spread ranks;             // seconds: the ranks' own medians (how much the ranks' views of one call differ)
  double simulated = 0;     // seconds
  std::int64_t wrong = -1;  // elements the worker's correctness check found wrong (-1: not checked)
  double error() const { return measured.median > 0 ? simulated / measured.median - 1 : 0; }
};

struct CollectiveCheckRequest {
  sim::CollectiveOp op = sim::CollectiveOp::kAllReduce;
  std::vector<std::int64_t> sizes;  // rounded to whole elements per rank (plan.h round_bytes)
  std::vector<int> group;           // MPI ranks, root first; empty = all
  int warmup = 1, iterations = 5;
};

// On the emulated cluster with Open MPI (backend mpi), simulated with Open MPI's schedules.
std::vector<CollectiveCheck> check_collectives(const ClusterSpec& spec, const hw::Topology& topo,
                                               const CollectiveCheckRequest& request);
// The same with any way of measuring a plan of `ranks` ranks (e.g. measure_on_hosts with backend nccl),
// simulated on `topo` with the registered collective algorithm `algorithm`.
std::vector<CollectiveCheck> check_collectives(
    int ranks, const hw::Topology& topo, const CollectiveCheckRequest& request, std::string_view algorithm,
    const std::function<PlanResult(const MeasurementPlan&)>& measure);

// nccl-tests' table (size, count, type, redop, root, time, algbw, busbw) for the measured median and the
// simulated time, with the spread and the error per size; nccl-tests' #wrong column after the measured ones
// when the rows were checked (wrong >= 0).
std::string collective_table(sim::CollectiveOp op, int group_size, std::span<const CollectiveCheck> rows);

// CSV of the same rows (units in the column names).
std::string collective_csv(sim::CollectiveOp op, int group_size, std::span<const CollectiveCheck> rows);

}  // namespace strata::validate
