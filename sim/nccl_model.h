// NCCL's published cost constants (NVIDIA/nccl src/graph/tuning.cc, at the snapshot cited in
// docs/fidelity.md) and a tuner that, like NCCL, predicts every eligible (algorithm, protocol) pair's time
// and picks the fastest. Each algorithm's prediction lives in its own file (sim/algorithms/); this file
// holds only what all of them share: the latency tables, the protocol caps and the group's bandwidths.
#pragma once

#include <algorithm>
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

// Bandwidths the tuner assembles from the topology (bytes/s, per GPU).
struct GroupBandwidth {
  int ranks = 0, nodes = 0, ranks_per_node = 0;  // ranks_per_node = max over nodes
  double intra = 0;     // a GPU's scale-up bandwidth to its node peers
  double inter = 0;     // a node's NIC bandwidth (the NICs its group members can use), 0 on one node
  bool nvlink = false;  // intra-node path is NVLink/NVSwitch (enables LL128)
};
GroupBandwidth group_bandwidth(const hw::Topology& topo, std::span<const hw::Rank> group);

// Everything an algorithm's estimate reads: the spec (with the protocol being tried), the group's
// bandwidths, and NCCL's latencies for the algorithm's family and that protocol.
struct EstimateInputs {
  const hw::Topology& topo;
  const CollectiveSpec& spec;
  GroupBandwidth group;
  double base_latency = 0;   // seconds per launch
  double intra_latency = 0;  // seconds per intra-node hop
  double inter_latency = 0;  // seconds per network hop
  // NCCL's per-protocol bus-bandwidth caps. ll_cap: llMaxBw (GB/s by GPU generation, or by node count).
  double ll_cap = 0;
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

// The bus bandwidth a rank can use: its scale-up fabric, or on several nodes the smaller of that and the
// node's NICs.
inline double bus_bandwidth(const EstimateInputs& in) {
  return in.group.nodes > 1 ? std::min(in.group.intra, in.group.inter) : in.group.intra;
}

struct Estimate {
  std::string algorithm;
  Protocol protocol;
  double seconds;
};
// NCCL-style predictions for every (registered algorithm, protocol) pair that can run the spec, fastest
// first (ties keep registration order). An algorithm takes part when its unsupported_reason is empty for
// the spec at that protocol; NCCL's global protocol rule applies on top: LL128 only over NVLink.
std::vector<Estimate> estimate_all(const hw::Topology& topo, const CollectiveSpec& spec);

}  // namespace strata::sim::nccl
