// NCCL's published cost constants (NVIDIA/nccl src/graph/tuning.cc, at the snapshot cited in
// docs/fidelity.md) and a tuner that, like NCCL, predicts each (algorithm, protocol) pair's time from them
// and picks the fastest. The simulator then runs the chosen pair on the flow model.
#pragma once

#include <string>
#include <vector>

#include "hw/link_kind.h"
#include "hw/topology.h"
#include "sim/collective.h"

namespace strata::sim::nccl {

enum class Family { kTree, kRing, kNvls };
// NCCL's nvlsEfficiency for Hopper: the share of NVLink bandwidth the in-switch reduction path sustains.
inline constexpr double kNvlsEfficiency = 0.85;
// Family of a strata algorithm name for NCCL's latency tables: tree -> Tree, nvls -> NVLS, anything else
// (ring, direct, hierarchical) -> Ring.
Family family_of(std::string_view algorithm);

// Base latency per launch, seconds.
double base_latency(Family f, Protocol p);
// Per-hop latency, seconds, for a transport class (NVLink, PCI, NET); host shared memory counts as PCI.
double hop_latency(hw::Transport t, Family f, Protocol p);

// Bandwidths the tuner assembles from the topology (bytes/s, per GPU).
struct GroupBandwidth {
  int ranks = 0, nodes = 0, ranks_per_node = 0;  // ranks_per_node = max over nodes
  double intra = 0;   // a GPU's scale-up bandwidth to its node peers
  double inter = 0;   // a node's NIC bandwidth (all NICs), 0 on one node
  bool nvlink = false;  // intra-node path is NVLink/NVSwitch (enables LL128)
  bool nvls = false;    // NVSwitch in-switch reduction available
};
GroupBandwidth group_bandwidth(const hw::Topology& topo, std::span<const hw::Rank> group);

struct Estimate {
  std::string algorithm;
  Protocol protocol;
  double seconds;
};
// NCCL-style predictions for every (registered algorithm, protocol) pair that supports the spec, fastest first
// (ties keep registration order).
std::vector<Estimate> estimate_all(const hw::Topology& topo, const CollectiveSpec& spec);

}  // namespace strata::sim::nccl
