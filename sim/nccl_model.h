// NCCL's published latency constants (NVIDIA/nccl src/graph/tuning.cc, at the snapshot cited in
// docs/fidelity.md) and a tuner that, like NCCL's, predicts every eligible (algorithm, protocol) pair's time
// and picks the fastest. Each algorithm owns its prediction (CollectiveAlgorithm::estimate); by default it
// is NCCL's latency + bytes / bandwidth form read off the algorithm's own expansion (expansion_estimate).
#pragma once

#include <string>
#include <vector>

#include "hw/link_kind.h"
#include "hw/topology.h"
#include "sim/collective.h"

namespace strata::sim::nccl {

// NCCL's nvlsEfficiency for Hopper: the share of NVLink bandwidth the in-switch reduction path sustains.
inline constexpr double kNvlsEfficiency = 0.85;

// Base latency per launch, seconds.
double base_latency(Family f, Protocol p);
// Per-hop latency, seconds, for a transport class (NVLink, PCI, NET); host shared memory counts as PCI.
double hop_latency(hw::Transport t, Family f, Protocol p);

// What the tuner reads of the group: its size and spread over nodes, and whether the intra-node path is
// NVLink/NVSwitch (NCCL enables LL128 only there).
struct GroupShape {
  int ranks = 0, nodes = 0;
  bool nvlink = false;
};
GroupShape group_shape(const hw::Topology& topo, std::span<const hw::Rank> group);

// Everything an algorithm's estimate reads: the spec (with the protocol being tried), the group's shape,
// and NCCL's latencies for the algorithm's family and that protocol.
struct EstimateInputs {
  const hw::Topology& topo;
  const CollectiveSpec& spec;
  GroupShape group;
  double base_latency = 0;   // seconds per launch
  double intra_latency = 0;  // seconds per intra-node hop
  double inter_latency = 0;  // seconds per network hop
  // Wire bytes per payload byte of the protocol (the simulator moves protocol_wire_factor x payload).
  double wire_factor = 1;
};

// NCCL's cost form, latency + bytes / bandwidth, read off the algorithm's own flow-form expansion instead of
// a per-GPU "bus bandwidth": the launch and hop latencies are NCCL's tables (as the expansion carries them),
// and each transfer's bandwidth time is the time its busiest link needs for everything the expansion puts
// on that link in the same stage (tasks at equal dependency depth run together). The estimate is the
// longest path through the expansion with those durations. Nothing is simulated: no event ordering, no
// max-min sharing; it is exact when every flow on a bottleneck link starts and ends with the others.
double expansion_estimate(const EstimateInputs& in, const CollectiveAlgorithm& algorithm);

struct Estimate {
  std::string algorithm;
  Protocol protocol;
  double seconds;
};
// Which algorithms a choice considers: NCCL's (what `--algo auto` models: NCCL's tuner picks among the
// algorithms NCCL has, CollectiveAlgorithm::nccl_unsupported_reason) or every registered one, strata's own
// schedules included (`--algo best`: what-if studies).
enum class Candidates { kNccl, kAll };

// NCCL-style predictions for every (registered algorithm, protocol) pair that can run the spec, fastest
// first (ties keep registration order). An algorithm takes part when its unsupported_reason (with kNccl also
// its nccl_unsupported_reason) is empty for the spec at that protocol; NCCL's global protocol rule applies on
// top: LL128 only over NVLink. Host-MPI schedules (Family::kHostMpi) take part only when named by `only`. `only`: estimate just that algorithm's protocols (an explicit --algo without
// --protocol; `candidates` does not apply).
std::vector<Estimate> estimate_all(const hw::Topology& topo, const CollectiveSpec& spec,
                                   std::string_view only = {}, Candidates candidates = Candidates::kNccl);

}  // namespace strata::sim::nccl
