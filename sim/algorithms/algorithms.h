// The built-in collective algorithms. Each is one file in this folder; adding one means writing that file
// and one line in builtin.cc.
#pragma once

#include <limits>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "sim/collective.h"
#include "sim/nccl_model.h"

namespace strata::sim::algorithms {

std::unique_ptr<CollectiveAlgorithm> make_ring();
std::unique_ptr<CollectiveAlgorithm> make_tree();
std::unique_ptr<CollectiveAlgorithm> make_direct();
std::unique_ptr<CollectiveAlgorithm> make_hierarchical();
std::unique_ptr<CollectiveAlgorithm> make_nvls();
std::unique_ptr<CollectiveAlgorithm> make_nvls_tree();
std::unique_ptr<CollectiveAlgorithm> make_openmpi();

void register_builtin(AlgorithmRegistry& registry);

// Shared by several algorithms: a start task (NCCL's base launch latency after ctx.after) and a join.
TaskId begin_collective(BuildContext& ctx);
TaskId join(BuildContext& ctx, std::span<const Dep> deps);

// Ring orders for `channels` parallel rings over the group (ring.cc). Rings visit nodes in ascending order;
// on switched nodes each channel starts the node at a different GPU so channels enter and leave nodes
// through different NICs; on directly wired nodes (ring, cube-mesh) rings follow direct links, balanced
// over the links' multiplicities. On one directly wired node, when spec.channels is 0 and no `channels` rings
// load every link evenly, it may return more rings (e.g. 6 on 4 GPUs with one link per pair): callers use
// one channel per returned ring.
std::vector<std::vector<hw::Rank>> ring_orders(const BuildContext& ctx, int channels);
// The rings one NCCL call uses (ring.cc): ring_orders(ctx, ctx.channels()), and when the spec leaves the
// channel count to strata (channels 0), only the first nccl::call_channels of them, as NCCL drops channels
// for small messages. The ring and the tree run one channel per returned ring.
std::vector<std::vector<hw::Rank>> call_rings(const BuildContext& ctx);

// How many pieces a pipeline of `chunks` chunks forwards: the chunks, each in units of `fill_unit` where the
// protocol forwards less than a chunk (pipeline_stage_fill); at least one. What LinkShares counts as a
// bundle's transfers in flight while it fills.
double pipeline_pieces(double chunk, int chunks, double fill_unit);

// Each link's share of a collective's flow bundles (pipelines of chunks). pace(): in the flow model's steady
// state, every bundle streaming at one rate, the link's bandwidth over the bundles' total route weight on it.
// fill_pace(): while a pipeline fills, a bundle of K pieces has at most K transfers on a link at once (one
// where K = 1: a single chunk crosses the stages one after another), so the link's bandwidth over the sum of
// min(weight, K) over the bundles. A tree's all-reduce fills in two phases: while the first piece goes up no
// down hop carries anything, and while it comes down at most K - 1 pieces still go up. A fat pipe (not
// shared) gives its whole bandwidth to each. The fill of a tree or chain crosses each stage at the fill pace
// of that stage's links (tree_flow_bundle, chain_pipeline).
class LinkShares {
 public:
  explicit LinkShares(const hw::Topology& topo)
      : topo_(topo),
        weight_(topo.links().size(), 0.0),
        first_fill_(topo.links().size(), 0.0),
        second_fill_(topo.links().size(), 0.0),
        count_(topo.links().size(), 0),
        network_(topo.links().size(), 0) {}
  // Adds a bundle that pipelines `pieces` pieces (pipeline_pieces) over `first` (its hops of the first phase:
  // a chain's, or a tree's up hops, or its down hops where it has no up phase) and then `second` (an
  // all-reduce tree's down hops; empty otherwise). Links that a hop between nodes crosses count
  // `network_pieces` (the K chunks: the network moves whole chunks) instead.
  void add(std::span<const std::pair<hw::Rank, hw::Rank>> first,
           std::span<const std::pair<hw::Rank, hw::Rank>> second, double pieces, double network_pieces);
  // The smallest share (bytes/s per unit of route weight) over `links`; +infinity for none.
  double pace(std::span<const hw::LinkId> links) const { return smallest_share(links, weight_); }
  double fill_pace(std::span<const hw::LinkId> links, bool second_phase = false) const {
    return smallest_share(links, second_phase ? second_fill_ : first_fill_);
  }

 private:
  using Loads = std::vector<double>;  // per link id
  double smallest_share(std::span<const hw::LinkId> links, const Loads& load) const;
  const hw::Topology& topo_;
  // Adds `hops`' crossings of each link to count_, marks in network_ the links a hop between nodes crosses,
  // and lists the links touched.
  void count(std::span<const std::pair<hw::Rank, hw::Rank>> hops);
  Loads weight_, first_fill_, second_fill_;
  std::vector<int> count_;     // one bundle's crossings per link, zero between calls
  std::vector<char> network_;  // likewise: crossed by a hop between nodes
  std::vector<hw::LinkId> touched_;
};

// Adds `steps` consecutive ring steps around `ring` for one channel, each moving `slice` payload bytes per
// rank, starting after `start`. Returns tasks whose completion means every rank is done: at step
// granularity the last transfer of every position, at flow granularity the single bundle. Each step
// carries its hops' NCCL latencies, or, given `latency` (seconds for the whole phase, e.g. measured
// handoffs), latency / steps.
std::vector<TaskId> ring_phase(BuildContext& ctx, std::span<const hw::Rank> ring, int steps, double slice,
                               TaskId start, std::int32_t label, int lane,
                               std::optional<double> latency = std::nullopt);

// Directed Hamiltonian cycles over direct GPU-GPU links among `members` (3 or more; none for fewer), each
// starting at members[0], at most `limit` of them, in depth-first order over members (ring.cc).
std::vector<std::vector<hw::Rank>> hamiltonian_cycles(const hw::Topology& topo,
                                                      std::span<const hw::Rank> members, std::size_t limit);
// The hops of a chain (root first): broadcast flows root -> end, reduce end -> root (ring.cc).
std::vector<std::pair<hw::Rank, hw::Rank>> chain_hops(std::span<const hw::Rank> chain, CollectiveOp op);
// `chunks` chunks of `chunk` payload bytes pipelined along `hops` (each hop forwards what has arrived once
// its previous transfer has left): at flow granularity one bundle of the K chunks plus the first piece's
// trip through the stages (pipeline_stage_fill of every hop: `fill_unit` inside a node, a chunk at and after
// a network hop), plus the chain's latency, its chunks streaming at no more than `stream_rate`
// (cap_streaming). The trip crosses each stage at that stage's fill pace where `shares` is given (every
// bundle of the collective added; LinkShares), else at the bundle's slowest hop's pace, which overstates it
// where hops differ in speed. At step granularity a transfer per chunk and hop, or per unit inside a node
// where fill_unit < chunk (step_form_units), the first hop's capped at `stream_rate` (it feeds the others).
// Returns the last delivery.
TaskId chain_pipeline(BuildContext& ctx, std::span<const std::pair<hw::Rank, hw::Rank>> hops, double chunk,
                      int chunks, double fill_unit, TaskId start, std::int32_t label, int lane,
                      Granularity granularity, double stream_rate = std::numeric_limits<double>::infinity(),
                      const LinkShares* shares = nullptr);
// What a stage of a tree or chain pipeline after the first adds to its fill: what the previous hop must hand
// over before this one can start, a whole chunk where either hop crosses the network, else `fill_unit` (at
// most the chunk; nccl::forward_unit). NCCL's network proxy sends a step only once all of it is in its
// buffer, every LL line or LL128 flag in place (or the GPU posted the step, Simple and GPU Direct LL128;
// v2.21.5-1 transport/net.cc sendProxyProgress), and the receiving GPU is handed the step whole.
inline double pipeline_stage_fill(bool hop_crosses_network, bool previous_crosses_network, double chunk,
                                  double fill_unit) {
  return hop_crosses_network || previous_crosses_network ? chunk : fill_unit;
}
// Caps a pipeline's flow bundle (`bundle`, `payload` bytes per hop of which `streamed` are its K chunks, the
// rest its fill) so that its chunks stream at no more than `stream_rate` payload bytes/s: a protocol's
// ceiling (NCCL's llMaxBw) bounds how fast a channel streams, not how fast the first chunk and units cross
// idle stages, which run at the links' pace. +infinity: no cap.
void cap_streaming(BuildContext& ctx, TaskId bundle, double payload, double streamed, double stream_rate);
// Pieces per chunk inside a node in a tree's or chain's step form: 1, or where the pipeline fills in a
// smaller unit (`fill_unit` < chunk, nccl::forward_unit) the chunk in units, at most 256 pieces over all
// `chunks` (never fewer than one a chunk): beyond, pieces are larger and the fill is under stages / 256 of
// the time. The step form is for small groups and traces: this bounds its cost at mid sizes.
int step_form_units(double chunk, int chunks, double fill_unit);
// One hop's transfers of one chunk in a step form: the chunk whole where the hop crosses the network, else in
// `units` equal pieces. Piece j waits for piece j of every upstream hop's transfers of the chunk (their last
// piece where this hop or theirs moves the chunk whole), for `start` where there is no upstream hop, and for
// the hop's previous transfer to have left (`last`, updated). A hop with no upstream feeds the pipeline: its
// pieces are capped at `stream_rate` payload bytes/s (a protocol's streaming ceiling; +infinity for none),
// which bounds the stream while units cross the later stages at their links' pace.
std::vector<TaskId> add_step_pieces(BuildContext& ctx, hw::Rank from, hw::Rank to, double chunk, int units,
                                    double latency, std::span<const std::vector<TaskId>* const> upstream,
                                    TaskId start, TaskId& last, std::int32_t label, int lane,
                                    double stream_rate = std::numeric_limits<double>::infinity());

// A pipelined flow bundle: every hop carries `payload_per_hop` bytes (before protocol overhead) at one common
// rate, then the whole bundle is done after `latency` seconds.
TaskId add_bundle(BuildContext& ctx, std::span<const std::pair<hw::Rank, hw::Rank>> hops,
                  double payload_per_hop, double latency, std::int32_t label, std::span<const Dep> deps,
                  int lane);
// The same over `route`, the hops' bundle_route already merged.
TaskId add_bundle(BuildContext& ctx, const CustomRoute& route,
                  std::span<const std::pair<hw::Rank, hw::Rank>> hops, double payload_per_hop, double latency,
                  std::int32_t label, std::span<const Dep> deps, int lane);

// A tree over members (tree.cc): chains inside nodes, NCCL's binary trees over nodes.
struct TreeShape {
  std::vector<hw::Rank> members;
  std::vector<int> parent;  // index into members; -1 for the root
  std::vector<std::vector<int>> children;
  int root = 0;
  std::vector<int> preorder;  // parents before children, from the root
  int depth = 0;              // hops from the root to the deepest member: pipeline stages in one direction
};
// NCCL's double binary tree over n positions (NVIDIA/nccl v2.21.5-1 src/graph/trees.cc, ncclGetBtree and
// ncclGetDtree): the parent position of each position, -1 for the root. which = 0: the first tree, rooted at
// 0, in which even positions are interior and odd ones leaves (e.g. 4 positions: 0 -> 2 -> {1, 3}); which =
// 1: the second, the first's mirror image p -> n-1-p for even n (3 -> 1 -> {2, 0}) or the first shifted by
// one position for odd n, so that a position interior in one tree is a leaf in the other.
std::vector<int> nccl_tree_parents(int n, int which);
// Chains inside nodes (members in the given order, the first heads the chain) and the tree over `order`
// (node indices) whose position p hangs off position parent_position[p] (-1: the root). A node's chain head
// hangs off its parent node's member at gateway[node].
TreeShape make_tree(const std::vector<std::vector<hw::Rank>>& nodes, const std::vector<int>& order,
                    std::span<const int> parent_position, const std::vector<std::size_t>& gateway);
// The whole pipelined tree (reduce up and/or broadcast down) as one flow bundle: `chunks` chunks of `chunk`
// payload bytes take the K chunks' time plus the first piece's trip along the path with the longest
// (pipeline_stage_fill of each stage: `fill_unit` inside a node, at most the chunk, nccl::forward_unit; the
// chunk at and after a network hop), then the deepest paths' latency; its chunks stream at no more than
// `stream_rate` payload bytes/s (cap_streaming). With `shares` (every bundle of the collective added) the
// trip crosses each stage at that stage's fill pace, the all-reduce's down stages in its second phase
// (LinkShares), else at the bundle's slowest link's. With `measured` (one NCCL channel's chunk handoffs,
// tree_chunk_handoffs; fill_unit must be the chunk) its fixed time is the latency instead, and the bundle
// moves its bytes no faster than the channel's copy time allows.
TaskId tree_flow_bundle(BuildContext& ctx, const TreeShape& shape, bool do_up, bool do_down, double chunk,
                        int chunks, double fill_unit, TaskId start, std::int32_t label, int lane,
                        const hw::SizeTimes::Split* measured = nullptr,
                        double stream_rate = std::numeric_limits<double>::infinity(),
                        const LinkShares* shares = nullptr);
// The hops of a tree's bundle: every member's hop to its parent (up) and from it (down), in preorder.
std::vector<std::pair<hw::Rank, hw::Rank>> tree_hops(const TreeShape& shape, bool do_up, bool do_down);
// One NCCL channel's tree at a measured time per chunk handoff between nodes (node.nics.nccl_tree,
// hw/nccl_measured.h): `bytes` in K chunks of `chunk` (the last one what is left) through `stages` pipeline
// stages make K + stages - 1 handoffs, the fill's at whole chunks. Every stage, on
// NVLink or the network, is charged the network's time, because the channel's primitives move one chunk
// each in lockstep, at the pace of its slowest hop (docs/fidelity.md §6.6). The fixed parts and the per-byte
// parts of the table, summed.
hw::SizeTimes::Split tree_chunk_handoffs(const hw::SizeTimes& table, double bytes, double chunk, int stages);

// Payload bytes of one tree chunk as NCCL 2.21 sizes it (tree.cc): `per_channel` bytes a channel carries,
// over `nodes` nodes with `ranks_per_node` ranks each.
double tree_chunk_bytes(double per_channel, Protocol protocol, int nodes, double ranks_per_node);
// The LL128 part of that rule: from one step's payload `step_payload` (NCCL's 576,000 B, or what
// NCCL_LL128_BUFFSIZE makes it), halved while a channel would carry too few chunks.
double ll128_tree_chunk_bytes(double per_channel, int nodes, double ranks_per_node,
                              double step_payload = nccl::kLl128StepPayload);

// The GPU's links to and from the NVSwitch of its node (nvls.cc); -1 where there is none.
std::pair<hw::LinkId, hw::LinkId> nvswitch_port(const hw::Topology& topo, hw::Rank gpu);

// NCCL's NVLS rules (nvls.cc; NVIDIA/nccl v2.21.5-1 src/enqueue.cc computeCollChunkInfo / computeCollSteps,
// src/transport/nvls.cc): NVLS and NVLS-Tree run on 16 channels on Hopper, each step of a channel moves one
// chunk per head, and the chunk shrinks for messages that give the channels x heads few chunks.
inline constexpr int kNvlsChannels = 16;
inline constexpr double kNvlsChunk = 128 * 1024.0;  // NCCL_NVLS_CHUNKSIZE's default
// The one-node NVLS all-reduce chunk for `bytes` over `heads` heads (one head per GPU on one node):
// 128 KiB, 64 KiB below 64 x ops x chunk, 32 KiB below 8 x ops x 64 KiB, 16 KiB below 2 x ops x 32 KiB,
// ops = 16 channels x heads.
double nvls_chunk_bytes(double bytes, int heads);
// The NVLS-Tree chunk (nvls_tree.cc) over `nodes` nodes.
double nvls_tree_chunk_bytes(double bytes, int nodes, int heads);
// Payload bytes that the NVLS part's switch ports carry per GPU in the time model: the message plus the
// pipeline's fill and drain. The NVLS kernel's scatter, reduce/multicast and gather warps form a three-stage
// pipeline coupled by FIFOs, through which each channel runs its steps (one `chunk` per head each), so a
// channel's n steps take n + 2 step times: bytes + 2 x channels x (one step's payload).
double nvls_pipeline_payload(double bytes, int heads, double chunk);

// Latency of the slowest chain of `steps` consecutive hops around a ring whose hop latencies are `lat`
// (step s of rank i waits for step s-1 of rank i-1, so latencies add along windows of the ring).
double ring_window_latency(std::span<const double> lat, int steps);

}  // namespace strata::sim::algorithms
