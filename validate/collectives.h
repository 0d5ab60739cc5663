// `strata validate collectives`: one collective at a range of sizes, measured on the emulated cluster and
// simulated on its system file with the same schedule (Open MPI's, sim/algorithms/openmpi.cc), side by side
// in nccl-tests' columns.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "hw/topology.h"
#include "validate/cluster.h"
#include "validate/plan.h"

namespace strata::validate {

struct CollectiveCheck {
  std::int64_t bytes = 0;
  Spread measured;       // seconds over the timed iterations (slowest rank each)
  Spread ranks;          // seconds: the ranks' own medians (how much the ranks' views of one call differ)
  double simulated = 0;  // seconds
  double error() const { return measured.median > 0 ? simulated / measured.median - 1 : 0; }
};

struct CollectiveCheckRequest {
  sim::CollectiveOp op = sim::CollectiveOp::kAllReduce;
  std::vector<std::int64_t> sizes;  // rounded to whole elements per rank (plan.h round_bytes)
  std::vector<int> group;           // MPI ranks, root first; empty = all
  int warmup = 1, iterations = 5;
};

std::vector<CollectiveCheck> check_collectives(const ClusterSpec& spec, const hw::Topology& topo,
                                               const CollectiveCheckRequest& request);

// nccl-tests' table (size, count, type, redop, root, time, algbw, busbw) for the measured median and the
// simulated time, with the spread and the error per size.
std::string collective_table(sim::CollectiveOp op, int group_size, std::span<const CollectiveCheck> rows);

// CSV of the same rows (units in the column names).
std::string collective_csv(sim::CollectiveOp op, int group_size, std::span<const CollectiveCheck> rows);

}  // namespace strata::validate
