// NCCL's own choice of algorithm and protocol: the topology graphs its search builds for a communicator and
// the cost model its tuner ranks (algorithm, protocol) pairs with, as in NVIDIA/nccl v2.21.5-1
// (src/graph/search.cc ncclTopoCompute and ncclTopoDupChannels; src/graph/tuning.cc ncclTopoTuneModel and
// ncclTopoGetAlgoTime). These are NCCL's predictions, not strata's: `--algo auto` uses them to pick what
// NCCL would run, and the simulator then times that pick (docs/fidelity.md §6.8).
#pragma once

#include <optional>
#include <span>
#include <string>

#include "hw/topology.h"
#include "sim/collective.h"

namespace strata::sim::nccl {

// One topology graph as NCCL's search leaves it: channels and the bandwidth each channel is rated inside a
// node and across nodes, in NCCL's units (GB/s, from hw::LinkKind::nccl_rating).
struct TopoGraph {
  int channels = 0;
  double bw_intra = 0, bw_inter = 0;
};

// What NCCL's tuner reads of a communicator.
struct TunerModel {
  TopoGraph ring, tree, nvls;  // nvls.channels == 0: no NVLS (no NVLink SHARP switch, or 2 GPUs or fewer)
  int ranks = 0, nodes = 0, gpus_per_node = 0;
  int comm_channels = 0;       // the communicator's channels (src/graph/connect.cc ncclTopoPostset)
  int compute_capability = 0;  // 70 Volta, 80 Ampere, 90 Hopper, 100 Blackwell; 60 and older below
  bool nvlink = false;         // the GPUs' links into the node are NVLink (else PCIe): LL128 allowed
  bool amd_host = false;       // NCCL's per-message network overhead and LL ceiling depend on the CPU
};

// NCCL's graphs for a group, or std::nullopt (with `why`) where strata does not reproduce NCCL's search:
// several nodes of GPUs wired to each other directly by NVLink (NCCL's rings through the NICs), a group on
// one such node that no ring over direct NVLinks visits, or a group with different GPU counts on different
// nodes. Supported: nodes whose GPUs meet in one switch (NVSwitch or PCIe), one or several of them joined by
// NICs; one node of GPUs wired to each other (DGX-1's hybrid cube-mesh), rings over its direct NVLinks.
std::optional<TunerModel> tuner_model(const hw::Topology& topo, std::span<const hw::Rank> group,
                                      std::string* why = nullptr);

// The most bus bandwidth (nccl-tests' busbw, GB/s) NCCL's NVLS-Tree kernel sustains on the group: the NVLS
// graph's channels x perChMaxNVLSTreeBw, NVIDIA's per-channel ceiling of that kernel, which NCCL's tuner has
// applied since v2.28.3-1 (src/graph/tuning.cc, perChMaxNVLSTreeBws: Hopper 57.7 GB/s on 2 nodes and 45.5
// from 3, Blackwell 96.0 and 80.0; busBw x nRanks / (2 (nRanks - 1)) is then its algorithm bandwidth). The
// 2.21 tuner this file otherwise follows rates NVLS-Tree without it (x 5/6 instead), so it takes no part in
// the choice; the simulator charges it as the kernel's throughput (docs/fidelity.md §6.5). +infinity where
// the group has no NVLS graph, spans one node or has GPUs older than Hopper.
double nvls_tree_busbw_ceiling(const TunerModel& m);

// NCCL's predicted time (seconds) for one call of `op` on `bytes` with the family's algorithm at protocol
// `p`: latency + bytes / bandwidth with NCCL's corrections. +infinity where NCCL does not run the pair
// (disabled algorithm or protocol, or the operation is not one the algorithm implements); std::nullopt for
// what NCCL's tuner does not rate (point-to-point operations, host MPI schedules).
std::optional<double> tuner_time(const TunerModel& m, Family f, Protocol p, CollectiveOp op, double bytes);

}  // namespace strata::sim::nccl
