// Runs a TaskGraph on a Topology: compute tasks queue on per-GPU streams (FIFO per stream, streams run
// concurrently), transfers become flows in the NetworkModel, and every task starts as soon as its
// dependencies allow, so communication and computation overlap wherever the graph permits.
#pragma once

#include <cstdint>
#include <vector>

#include "hw/topology.h"
#include "sim/compute_model.h"
#include "sim/task_graph.h"
#include "sim/time.h"

namespace strata::sim {

struct SimOptions {
  // Times compute tasks without a fixed duration (e.g. models::KernelCost); required when there are any.
  const ComputeCost* compute = nullptr;
  bool record_timeline = false;  // keep per-task start/end (needed for traces)
};

struct TaskTiming {
  SimTime start = -1;
  SimTime sent = -1;  // transfers: bandwidth phase over
  SimTime done = -1;
};

struct LinkUsage {
  hw::LinkId link;
  double bytes;        // carried over the run
  double utilization;  // bytes / (capacity x makespan)
};

struct SimResult {
  SimTime makespan = 0;
  std::uint64_t events = 0;
  std::uint64_t rate_solves = 0;
  std::vector<double> link_bytes;  // per directed link
  std::vector<TaskTiming> timeline;

  double seconds() const { return time_to_seconds(makespan); }
  // Links sorted by utilization (highest first; ties by link id); only links that carried bytes.
  std::vector<LinkUsage> link_usage(const hw::Topology& topo) const;
};

SimResult simulate(const hw::Topology& topo, const TaskGraph& graph, const SimOptions& options = {});

}  // namespace strata::sim
