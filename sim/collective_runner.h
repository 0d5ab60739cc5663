// Simulates one collective on its own (the `strata sim collective` path): picks the algorithm and protocol
// (explicitly, or like NCCL's tuner with "auto"), builds the task graph, runs it, reports nccl-tests numbers.
#pragma once

#include <string>
#include <string_view>

#include "hw/topology.h"
#include "sim/collective.h"
#include "sim/simulator.h"

namespace strata::sim {

// The tuner's choices an --algo may name besides a registered algorithm: "auto", what NCCL would run (its own
// tuner on its topology graphs, sim/nccl_tuner.h, among the algorithms NCCL has: nccl::Candidates::kNccl), and
// "best", the fastest of every registered algorithm by strata's estimate, strata's own schedules included
// (kAll).
inline bool is_tuner_choice(std::string_view algorithm) {
  return algorithm == "auto" || algorithm == "best";
}
// Empty when `algorithm` is a tuner choice or a registered algorithm; otherwise what was expected, as
// "unknown algorithm 'x' (expected auto, best or one of: ring, tree, ...)", for callers to put the option or
// field in front of.
std::string unknown_algorithm_reason(std::string_view algorithm);
inline constexpr std::string_view kTunerChoicesHelp =
    "auto (what NCCL 2.21's own tuner picks among the algorithms NCCL has; strata's estimate where it does "
    "not rebuild NCCL's topology graphs: several nodes of GPUs wired to each other by NVLink, groups with "
    "different GPU counts per node), best (fastest of all by strata's estimate, strata's own schedules "
    "included)";

struct CollectiveRequest {
  CollectiveSpec spec;
  std::string algorithm = "auto";  // a registered name, "auto" (NCCL's choice) or "best" (is_tuner_choice)
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
