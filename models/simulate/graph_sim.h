// Single-device simulation of a graph (an inference pass or a training step) on the sim engine: one
// compute task per kernel on GPU `gpu`'s stream 0, ordered by the graph's data dependencies, timed by the
// cost model (KernelCost) on the topology's GPU; views are zero-length delays. Reports the step time, the
// per-operator breakdown and peak memory.
#pragma once

#include <string>
#include <vector>

#include "hw/topology.h"
#include "models/cost/cost_model.h"
#include "models/simulate/memory.h"
#include "sim/simulator.h"
#include "sim/task_graph.h"

namespace strata::models {

struct OpBreakdown {
  std::string op;
  int count = 0;
  double seconds = 0, flops = 0, bytes = 0;
  int measured = 0;  // nodes timed from the profile database
};

struct GraphSimResult {
  double seconds = 0;                // makespan
  std::vector<double> node_seconds;  // per node (0 for views)
  std::vector<OpBreakdown> by_op;    // sorted by time, largest first (ties by name)
  double flops = 0;
  MemoryProfile memory;
  sim::TaskGraph tasks;
  sim::SimResult sim;
};

struct GraphSimOptions {
  hw::Rank gpu = 0;
  bool record_timeline = false;  // for Chrome traces
};

GraphSimResult simulate_graph(const Graph& g, const hw::Topology& topo, const CostModel& cost,
                              const GraphSimOptions& options = {});

}  // namespace strata::models
