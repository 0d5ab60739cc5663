// Simulates one collective on its own (the `strata sim collective` path): picks the algorithm and protocol
// (explicitly, or like NCCL's tuner with "auto"), builds the task graph, runs it, reports nccl-tests numbers.
#pragma once

#include <string>

#include "hw/topology.h"
#include "sim/collective.h"
#include "sim/simulator.h"

namespace strata::sim {

struct CollectiveRequest {
  CollectiveSpec spec;
  std::string algorithm = "auto";  // a registered name or "auto"
  bool auto_protocol = true;       // with "auto": let the tuner choose the protocol too
  bool record_timeline = false;
};

struct CollectiveResult {
  std::string algorithm;
  Protocol protocol;
  double seconds = 0;
  double algbw = 0;  // bytes/s, nccl-tests definition S / t
  double busbw = 0;  // bytes/s, algbw x busbw_factor
  SimResult sim;
  TaskGraph graph;
};

CollectiveResult run_collective(const hw::Topology& topo, const CollectiveRequest& request);

}  // namespace strata::sim
