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

// Row of a family and column of a protocol in NCCL's tables (src/graph/tuning.cc order: Tree, Ring, NVLS,
// NVLS-Tree; LL, LL128, Simple); strata's host-MPI family takes row 4.
int table_index(Family f);
int table_index(Protocol p);

// Base latency per launch, seconds.
double base_latency(Family f, Protocol p);
// Per-hop latency, seconds, for a transport class (NVLink, PCI, NET); host shared memory counts as PCI.
double hop_latency(hw::Transport t, Family f, Protocol p);

// NCCL's rating of its protocols' throughput (src/graph/tuning.cc, ncclTopoTuneModel; NVIDIA/nccl v2.21.5-1
// and HEAD 5067397c). These are properties of the kernels, which the link model alone does not see:
//
// Link bytes charged per payload byte: the protocol's wire factor (protocol_wire_factor), except for the
// tree, whose LL NCCL rates at 1/3.8 of its Simple bandwidth and whose LL128 at 7/9 on one node (120/128
// across nodes), where the wire factors alone would give 1/2 and 120/128. So tree LL costs 3.8 and tree LL128
// 9/7 on one node.
double payload_cost(Family f, Protocol p, int nodes);
// The bus bandwidth (nccl-tests' busbw, bytes/s) that NCCL's LL protocol reaches at most, for ring and tree:
// llMaxBws, 8-byte stores of 4 B data and a 4 B flag. One node by GPU generation (Volta and older 39.0,
// Ampere 87.7, Hopper 141.0, Blackwell 282.0 GB/s); across nodes by the hosts' CPU, which the NIC's traffic
// crosses (2 nodes 39.0, 3 or more 20.4 GB/s; AMD hosts 22.5 and 19.0). +inf for Simple, LL128 and the
// other families. (NCCL's per-channel LL128 and tree ceilings act only through the tuner, sim/nccl_tuner.cc:
// they scale with the channels of NCCL's topology graph, not with the channels NCCL runs; NVLS-Tree's is
// applied to its transfers, nccl::nvls_tree_busbw_ceiling; docs/fidelity.md §2.3.)
double protocol_busbw_ceiling(Family f, Protocol p, hw::GpuArch arch, int nodes, hw::CpuVendor vendor);

// NCCL's channels for one call (v2.21.5-1 src/enqueue.cc, getChannnelThreadInfo): a ring or tree call drops
// one channel at a time, from `channels`, while the message is smaller than channels x threads x threshold
// bytes, down to one. Threads per channel (src/include/device.h): 512 for Simple and LL, 640 for LL128; the
// ring's Simple kernel gets 256 where the ring graph is no faster than PCIe Gen3 (PCI_BW 12 GB/s,
// tuning.cc), which strata takes to be a node without NVLink. Threshold per thread (src/include/comm.h,
// tuning.cc): 64 B for Simple, 8 B for LL128, 8 B for tree LL and 8 B x ranks for ring LL. NVLS and
// NVLS-Tree keep their 16 channels; other families keep `channels`.
int call_channels(int channels, double bytes, Family f, Protocol p, int ranks, bool nvlink);

// The slice handoffs one channel of NCCL's ring makes under the Simple protocol (v2.21.5-1): all-reduce runs
// 2N - 1 primitives per loop (src/device/all_reduce.h, runRing), reduce-scatter and all-gather N, each over
// two slices (ProtoSimple<2,2>). A loop covers N chunks of 2 MiB per channel (the default 4 MiB buffer in 8
// steps, 4 steps per chunk: include/collectives.h); the last loop's chunk is the rest / N rounded up to 4 KiB
// (enqueue.cc). A chunk's slices are half of it but at least 32 KiB (a slice buffer / 32,
// device/prims_simple.h, genericOp); a chunk below 64 KiB fills the first slice and leaves less, possibly
// nothing, for the second, whose handoff still waits and posts. `bytes_per_channel` is the channel's share of
// nccl-tests' size. Returns (slice bytes, handoffs) pairs, full loops first.
struct SliceCount {
  double bytes = 0;
  double handoffs = 0;
};
std::vector<SliceCount> ring_simple_slices(CollectiveOp op, double bytes_per_channel, int ranks);
// The payload of one FIFO step of a connection's buffer, NCCL's chunk wherever a chunk is one step (tree,
// ring broadcast and reduce: BROADCAST_CHUNKSTEPS = REDUCE_CHUNKSTEPS = 1, include/collectives.h; v2.21.5-1):
// Simple 4 MiB / 8 steps = 512 KiB; LL a 64 KiB step, half of it flags: 32 KiB; LL128 kLl128StepPayload.
double step_payload(Protocol p);
// The payload a channel's threads pass on together, which the next hop of a tree or chain can work on before
// the rest of its chunk has arrived: the pipeline's fill moves in these units. LL and LL128 forward line by
// line, each thread polling the flags of the lines it reads and storing them straight to the next peer
// (v2.21.5-1 device/prims_ll.h LLGenericOp, prims_ll128.h GenericOp): one pass of LL's 512 threads is 512
// lines of 8 payload bytes, 4 KiB; one pass of LL128's 20 warps is 20 warp slices of 32 x 8 words, 15/16 of
// them payload, 38,400 B. Simple posts a step only once it is whole (the receiver waits on the step's
// tail), so its unit is the chunk itself: +infinity here. Callers take min(chunk, unit).
double forward_unit(Protocol p);

// NCCL's LL128 step (v2.21.5-1): the default 4,915,200 B buffer in 8 steps of 614,400 B, 120 of every 128
// bytes payload (include/device.h; enqueue.cc computeCollChunkInfo), and LL128 chunks in whole 480 B for each
// of the kernel's 20 warps (enqueue.h NCCL_LL128_ALIGNMENT_PER_WARP, computeCollAlignCount).
inline constexpr double kLl128StepBytes = 614400, kLl128StepPayload = kLl128StepBytes / 128 * 120;
inline constexpr double kLl128ChunkAlign = 480.0 * 20;
// The same for the LL128 protocol, whose primitives move one step each (ProtoLL128): a loop is N chunks of
// one step's payload per channel (kLl128StepPayload, 576,000 B), 2N - 1 primitives per loop for all-reduce
// and N for reduce-scatter and all-gather (runRing); the last loop's chunk is the rest / N rounded up to
// kLl128ChunkAlign (9,600 B). Returns (step payload bytes, handoffs) pairs, full loops first.
std::vector<SliceCount> ring_ll128_steps(CollectiveOp op, double bytes_per_channel, int ranks);

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
  // Link bytes charged per payload byte (payload_cost, what BuildContext::wire charges in the expansion).
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

// Predictions for every (registered algorithm, protocol) pair that can run the spec, fastest first (ties
// keep registration order): NCCL 2.21's own tuner (sim/nccl_tuner.h) for NCCL's algorithms with kNccl or an
// explicit `only`, where strata rebuilds NCCL's graphs (pairs NCCL disables are left out); otherwise each
// algorithm's estimate. An algorithm takes part when its unsupported_reason (with kNccl also
// its nccl_unsupported_reason) is empty for the spec at that protocol; NCCL's global protocol rule applies on
// top: LL128 only over NVLink. Host-MPI schedules (Family::kHostMpi) take part only when named by `only`.
// `only`: estimate just that algorithm's protocols (an explicit --algo without
// --protocol; `candidates` does not apply).
std::vector<Estimate> estimate_all(const hw::Topology& topo, const CollectiveSpec& spec,
                                   std::string_view only = {}, Candidates candidates = Candidates::kNccl);

}  // namespace strata::sim::nccl
