// Double binary tree (NCCL's Tree): inside a node the group's GPUs form a chain; across nodes the node
// leaders form binary trees. Trees come in pairs: the second is the mirror of the first, so (almost) every
// node is a leaf in one tree and interior in the other. Every channel (one per NIC across nodes) carries one
// pair, with its own leader GPU per node so each pair crosses the network through its own NIC. All-reduce
// reduces up the trees then broadcasts down, pipelined in chunks, so its latency grows with log2(nodes)
// instead of the ring's 2(n-1) steps; at large sizes each NIC carries about 2S/C each way, like the ring.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <limits>
#include <optional>
#include <unordered_map>

#include "sim/algorithms/algorithms.h"
#include "sim/nccl_model.h"

namespace strata::sim::algorithms {
namespace {

// One tree: chains inside nodes (members in the given order, the first heads the chain), and NCCL's binary
// tree over `order` (node indices) across nodes. A node's chain head hangs off its parent node's gateway, the
// member at gateway[node] of that node's chain (the GPU whose NIC the channel uses; the head except on the
// root node of broadcast/reduce, whose chain starts at the root GPU).
}  // namespace

// NCCL's tree chunk (algorithms.h), one FIFO step of the protocol's buffer (NCCL v2.21.5-1, ab2b89c4,
// src/enqueue.cc, computeCollChunkInfo): Simple 4 MiB / 8 steps = 512 KiB; LL a 64 KiB step, half of it
// flags: 32 KiB; LL128 a 614,400 B step, 15/16 of it data: 576,000 B (nccl::kLl128StepPayload), halved while
// a channel would carry fewer than nsteps x 64 / ppn chunks (down to 128 KiB) and nsteps x 16 / ppn (down to
// 32 KiB), nsteps = 1 + floor(log2 nodes) + 0.1 ppn, ppn = ranks per node. Up to NCCL 2.19 the Simple chunk
// also shrank for small messages; from 2.20 it is fixed.
double tree_chunk_bytes(double per_channel, Protocol protocol, int nodes, double ranks_per_node) {
  if (protocol != Protocol::kLL128) return nccl::step_payload(protocol);
  return ll128_tree_chunk_bytes(per_channel, nodes, ranks_per_node);
}

double ll128_tree_chunk_bytes(double per_channel, int nodes, double ranks_per_node, double step_payload) {
  auto chunk = static_cast<long long>(step_payload);
  const double ppn = std::max(ranks_per_node, 1.0);
  const double nsteps = 1 + std::floor(std::log2(std::max(nodes, 1))) + 0.1 * ppn;
  const auto fewer = [&](double factor) {
    return std::floor(per_channel / static_cast<double>(chunk)) < nsteps * factor / ppn;
  };
  while (fewer(64) && chunk > 131072) chunk /= 2;
  while (fewer(16) && chunk > 32768) chunk /= 2;
  return static_cast<double>(chunk);
}

std::vector<int> nccl_tree_parents(int n, int which) {
  // ncclGetBtree: position 0 is the root with one child (the highest power of two below n); every other
  // position p with lowest set bit b hangs off (p ^ b) | 2b, or p ^ b where that is out of range.
  const auto btree_parent = [n](int p) {
    if (p == 0) return -1;
    int bit = 1;
    while (bit < n && !(bit & p)) bit <<= 1;
    const int up = (p ^ bit) | (bit << 1);
    return up >= n ? (p ^ bit) : up;
  };
  std::vector<int> parents(static_cast<std::size_t>(std::max(n, 0)), -1);
  for (int p = 0; p < n; ++p) {
    if (which == 0) {
      parents[static_cast<std::size_t>(p)] = btree_parent(p);
    } else if (n % 2 == 0) {  // ncclGetDtree: the mirror image of the first tree
      const int u = btree_parent(n - 1 - p);
      parents[static_cast<std::size_t>(p)] = u < 0 ? -1 : n - 1 - u;
    } else {  // odd n: the first tree shifted by one position
      const int u = btree_parent((p - 1 + n) % n);
      parents[static_cast<std::size_t>(p)] = u < 0 ? -1 : (u + 1) % n;
    }
  }
  return parents;
}

TreeShape make_tree(const std::vector<std::vector<hw::Rank>>& nodes, const std::vector<int>& order,
                    std::span<const int> parent_position, const std::vector<std::size_t>& gateway) {
  TreeShape t;
  std::vector<int> head_index(nodes.size(), -1);
  for (int node : order) {
    const auto& m = nodes[static_cast<std::size_t>(node)];
    head_index[static_cast<std::size_t>(node)] = static_cast<int>(t.members.size());
    for (std::size_t i = 0; i < m.size(); ++i) {
      t.members.push_back(m[i]);
      t.parent.push_back(i == 0 ? -1 : static_cast<int>(t.members.size()) - 2);
    }
  }
  for (std::size_t p = 0; p < order.size(); ++p) {
    const int up_position = parent_position[p];
    if (up_position < 0) continue;
    const auto node = static_cast<std::size_t>(order[p]);
    const auto up = static_cast<std::size_t>(order[static_cast<std::size_t>(up_position)]);
    t.parent[static_cast<std::size_t>(head_index[node])] = head_index[up] + static_cast<int>(gateway[up]);
  }
  t.children.resize(t.members.size());
  for (std::size_t i = 0; i < t.members.size(); ++i) {
    if (t.parent[i] >= 0)
      t.children[static_cast<std::size_t>(t.parent[i])].push_back(static_cast<int>(i));
    else
      t.root = static_cast<int>(i);
  }
  t.preorder = {t.root};
  std::vector<int> level(t.members.size(), 0);
  for (std::size_t q = 0; q < t.preorder.size(); ++q) {
    const auto v = static_cast<std::size_t>(t.preorder[q]);
    for (int c : t.children[v]) {
      t.preorder.push_back(c);
      level[static_cast<std::size_t>(c)] = level[v] + 1;
      t.depth = std::max(t.depth, level[v] + 1);
    }
  }
  return t;
}

namespace {

// The members of each node (in `nodes` order) in the order `ring` visits them.
std::vector<std::vector<hw::Rank>> node_chains(const BuildContext& ctx,
                                               const std::vector<std::vector<hw::Rank>>& nodes,
                                               std::span<const hw::Rank> ring) {
  std::vector<std::vector<hw::Rank>> chains(nodes.size());
  // Each node appears once in `nodes` (members_by_node), so a lookup replaces a scan per ring member, which
  // cost ring length x nodes (quadratic in cluster size).
  std::unordered_map<int, std::size_t> chain_of_node;
  for (std::size_t i = 0; i < nodes.size(); ++i) chain_of_node.emplace(ctx.topo.node_of(nodes[i].front()), i);
  for (hw::Rank r : ring)
    if (auto it = chain_of_node.find(ctx.topo.node_of(r)); it != chain_of_node.end())
      chains[it->second].push_back(r);
  return chains;
}

// NCCL chains a node's GPUs by the tree graph's own search, whose path need not close as a ring's must
// (NVIDIA/nccl v2.21.5-1 src/graph/search.cc, ncclTopoSearchParams: only the ring pattern goes back to its
// first GPU; src/graph/connect.cc, ncclTopoPreset: the chain is the tree graph's intra-node order). So where
// the channel's ring through a node has a hop slower than its others, e.g. a group on part of an NVLink ring
// that the ring closes over PCIe, the chain starts just after that hop and never takes it. Returns true when
// it cut the ring so: the chain is then a path, which the mirror tree must keep (turning its tail would take
// the cut hop).
bool start_after_slowest_hop(const hw::Topology& topo, std::vector<hw::Rank>& chain) {
  const std::size_t n = chain.size();
  // One hop or none; on a switched node every pair is alike (Topology::node_is_switched), so there is no
  // slower hop to look for.
  if (n < 3 || topo.node_is_switched()) return false;
  std::size_t slowest = 0;
  double lowest = std::numeric_limits<double>::infinity(), highest = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double bw = topo.route_bandwidth(chain[i], chain[(i + 1) % n]);
    if (bw < lowest) {
      lowest = bw;
      slowest = i;
    }
    highest = std::max(highest, bw);
  }
  if (!(lowest < highest)) return false;  // every hop alike: any start will do
  std::rotate(chain.begin(), chain.begin() + static_cast<std::ptrdiff_t>((slowest + 1) % n), chain.end());
  return true;
}

// Caps every transfer added after `before` (one tree's) at the rate that moves the tree's (K + D - 1) chunk
// times of `chunk` bytes in `measured`'s copy time: no faster than NCCL's channel moves its share.
void cap_at_measured_rate(BuildContext& ctx, TaskId before, double chunk, int chunks, int stages,
                          const hw::SizeTimes::Split& measured) {
  if (measured.copy_seconds > 0)
    ctx.graph.cap_transfers_after(before, ctx.wire(chunk * (chunks + stages - 1)) / measured.copy_seconds);
}

// The measured tree table for the call where it applies, an all-reduce over whole nodes (where NCCL's
// channel count is the table's): across nodes the network's for the call's protocol (node.nics.nccl_tree for
// Simple, nccl_tree_ll128 for LL128: what `strata validate net-chunks` and `net-chunks-ll128` measure), on
// one node its chains' under Simple (node.fabric.nccl_tree: `strata validate tree-chunks`); nullptr
// elsewhere.
const hw::NcclMeasured* measured_tree(const BuildContext& ctx,
                                      const std::vector<std::vector<hw::Rank>>& nodes) {
  const auto protocol = ctx.spec.protocol;
  if (ctx.spec.op != CollectiveOp::kAllReduce || !ctx.whole_nodes(nodes)) return nullptr;
  std::optional<hw::NcclTableId> id;
  if (nodes.size() == 1) {
    if (protocol == Protocol::kSimple) id = hw::NcclTableId::kTree;
  } else if (protocol == Protocol::kSimple) {
    id = hw::NcclTableId::kNetTree;
  } else if (protocol == Protocol::kLL128) {
    id = hw::NcclTableId::kNetTreeLl128;
  }
  if (!id) return nullptr;
  const auto& table = ctx.topo.nccl_table(*id);
  return table.empty() ? nullptr : &table;
}

class Tree final : public CollectiveAlgorithm {
 public:
  std::string_view name() const override { return "tree"; }
  std::string_view description() const override {
    return "NCCL-style double binary trees across nodes (a pair per channel), chains inside nodes, "
           "chunk-pipelined";
  }
  nccl::Family family() const override { return nccl::Family::kTree; }
  std::string unsupported_reason(const CollectiveSpec& spec, const hw::Topology&) const override {
    if (spec.op != CollectiveOp::kAllReduce && spec.op != CollectiveOp::kBroadcast &&
        spec.op != CollectiveOp::kReduce)
      return "tree implements allreduce, broadcast and reduce only";
    return {};
  }

  std::string nccl_unsupported_reason(const CollectiveSpec& spec, const hw::Topology& topo) const override {
    if (spec.op != CollectiveOp::kAllReduce) return "NCCL's tree implements allreduce only";
    return unsupported_reason(spec, topo);
  }

  TaskId build(BuildContext& ctx) const override {
    const TaskId start = begin_collective(ctx);
    const auto nodes = ctx.members_by_node();
    const auto op = ctx.spec.op;
    const hw::Rank root = ctx.spec.group[0];
    // The root of broadcast/reduce leads its node in every tree, and its node is the tree root.
    int root_node = 0;
    if (op != CollectiveOp::kAllReduce)
      for (std::size_t i = 0; i < nodes.size(); ++i)
        if (std::find(nodes[i].begin(), nodes[i].end(), root) != nodes[i].end())
          root_node = static_cast<int>(i);
    std::vector<int> order(nodes.size());
    for (std::size_t i = 0; i < nodes.size(); ++i)
      order[i] = static_cast<int>((i + static_cast<std::size_t>(root_node)) % nodes.size());
    // Chains inside nodes follow the channel's ring (ring_orders): direct NVLinks on directly wired nodes
    // (DGX-1's hybrid cube-mesh), and on switched nodes a different first GPU, hence NIC, per channel. One
    // channel per ring (ring_orders may return more rings than asked for, to load every link evenly; small
    // messages use fewer, call_rings).
    const auto rings = call_rings(ctx);
    const int channels = static_cast<int>(rings.size());
    // All-reduce uses mirrored pairs (each node interior in at most one tree of a pair); broadcast and
    // reduce have a fixed root, so one tree per channel.
    const int per_channel = op == CollectiveOp::kAllReduce ? 2 : 1;
    const int trees = channels * per_channel;
    const double per_tree = ctx.spec.bytes / trees;
    const auto up_label = ctx.label("up"), down_label = ctx.label("down");
    const bool do_up = op != CollectiveOp::kBroadcast, do_down = op != CollectiveOp::kReduce;
    // NCCL's double binary tree over the nodes: the first tree of a pair, and its mirror (even node counts)
    // or shift (odd), in which the first tree's interior nodes are leaves. The same for every channel.
    const std::array<std::vector<int>, 2> parents{nccl_tree_parents(static_cast<int>(order.size()), 0),
                                                  nccl_tree_parents(static_cast<int>(order.size()), 1)};
    // Where the tree's chunk handoffs were measured (between nodes, or through one node's chain), each tree
    // is charged as one of NCCL's channels (their count for the call, or --channels) moves its share: every
    // chunk through every stage at the measured time per chunk (tree_chunk_handoffs).
    const hw::NcclMeasured* table = measured_tree(ctx, nodes);
    const double nccl_share =
        table ? ctx.spec.bytes /
                    (ctx.spec.channels > 0
                         ? ctx.spec.channels
                         : nccl::call_channels(table->channels, ctx.spec.bytes, nccl::Family::kTree,
                                               ctx.spec.protocol, ctx.group_size(),
                                               ctx.topo.has_nvlink(ctx.spec.group[0])))
              : 0.0;
    const double ranks_per_node = static_cast<double>(ctx.group_size()) / static_cast<double>(nodes.size());
    const int num_nodes = static_cast<int>(nodes.size());
    // Every tree carries the same share in the same chunks; NCCL's channel chunks its own share.
    const int chunks =
        ctx.spec.pipeline_chunks > 0
            ? ctx.spec.pipeline_chunks
            : std::max(1,
                       static_cast<int>(std::ceil(per_tree / tree_chunk_bytes(per_tree, ctx.spec.protocol,
                                                                              num_nodes, ranks_per_node))));
    const double chunk = per_tree / chunks;
    // The pipeline fills in the protocol's forwarding unit (nccl::forward_unit: whole chunks under Simple,
    // passes of lines under LL and LL128). A measured table timed whole-chunk handoffs, fill included.
    const double fill_unit = table ? chunk : std::min(chunk, nccl::forward_unit(ctx.spec.protocol));
    const double nccl_chunk =
        table ? tree_chunk_bytes(nccl_share, ctx.spec.protocol, num_nodes, ranks_per_node) : 0.0;
    // NCCL's tree moves half its bus bandwidth as algorithm bandwidth (tuning.cc's bus-to-algorithm ratio
    // 0.5), and the trees' algorithm bandwidth is trees x the per-hop payload rate of each: so its protocol
    // ceiling caps every tree's streaming at ceiling / 2 / trees.
    const double stream_rate = 0.5 * ctx.protocol_busbw_ceiling() / trees;
    std::vector<TreeShape> shapes;
    for (int t = 0; t < trees; ++t) {
      const int channel = t / per_channel;
      const bool mirror = t % per_channel == 1;
      auto chains = node_chains(ctx, nodes, rings[static_cast<std::size_t>(channel)]);
      std::vector<std::size_t> gateway(chains.size(), 0);
      for (std::size_t i = 0; i < chains.size(); ++i) {
        auto& m = chains[i];
        if (op != CollectiveOp::kAllReduce && static_cast<int>(i) == root_node) {
          // The root GPU starts its node's chain; the channel still leaves the node through its own GPU
          // (the one the ring enters the node at), so every channel uses a different NIC, as NCCL's do.
          const hw::Rank entry = m.front();
          std::rotate(m.begin(), std::find(m.begin(), m.end(), root), m.end());
          gateway[i] = static_cast<std::size_t>(std::find(m.begin(), m.end(), entry) - m.begin());
          continue;
        }
        if (start_after_slowest_hop(ctx.topo, m)) continue;  // the same path in both trees, as NCCL's
        if (mirror && m.size() > 1) std::reverse(m.begin() + 1, m.end());  // the chain runs the other way
      }
      shapes.push_back(make_tree(chains, order, parents[mirror ? 1 : 0], gateway));
    }
    // At flow granularity the trees' fill crosses each stage at its link's share of all trees' bundles
    // (LinkShares); a measured table charges every stage the network's time per chunk instead.
    const bool flow = ctx.spec.granularity == Granularity::kFlow;
    std::optional<LinkShares> shares;
    if (flow && !table) {
      shares.emplace(ctx.topo);
      for (const auto& shape : shapes) {
        // An all-reduce fills up, then down; broadcast and reduce in one phase.
        shares->add(
            tree_hops(shape, do_up, !do_up),
            do_up && do_down ? tree_hops(shape, false, true) : std::vector<std::pair<hw::Rank, hw::Rank>>{},
            pipeline_pieces(chunk, chunks, fill_unit), chunks);
      }
    }
    std::vector<Dep> finals;
    for (int t = 0; t < trees; ++t) {
      const TreeShape& shape = shapes[static_cast<std::size_t>(t)];
      const int stages = 2 * shape.depth;  // all-reduce: up, then down
      std::optional<hw::SizeTimes::Split> measured;
      if (table) measured = tree_chunk_handoffs(table->times, nccl_share, nccl_chunk, stages);
      if (flow) {
        finals.push_back(
            {tree_flow_bundle(ctx, shape, do_up, do_down, chunk, chunks, fill_unit, start, up_label, t,
                              measured ? &*measured : nullptr, stream_rate, shares ? &*shares : nullptr)});
        continue;
      }
      const TaskId before = static_cast<TaskId>(ctx.graph.size()) - 1;
      build_steps(ctx, shape, do_up, do_down, chunk, chunks, step_form_units(chunk, chunks, fill_unit), start,
                  up_label, down_label, t, finals,
                  measured ? std::optional(measured->fixed_seconds / (chunks + stages - 1)) : std::nullopt,
                  stream_rate);
      if (measured) cap_at_measured_rate(ctx, before, chunk, chunks, stages, *measured);
    }
    return join(ctx, finals);
  }

 private:
  // Step granularity: every chunk on every edge is a transfer, or `units` transfers of a unit each inside a
  // node (LL, LL128: pipeline_stage_fill), which the next hop forwards one by one; a hop across the network
  // moves whole chunks, and the hop after it waits for the whole chunk. A node forwards up once its
  // children's data arrived and its link is free of the previous transfer; the root turns chunks around.
  // `hop_latency`, where given, replaces every hop's latency (a measured fixed time per chunk handoff). The
  // streaming rate (payload bytes/s, +infinity for none) caps the hops that nothing feeds (the leaves' up
  // hops, or the root's down hops of a broadcast): the stream goes no faster, while a unit crosses the later
  // stages at their links' pace, as in the flow form (cap_streaming).
  static void build_steps(BuildContext& ctx, const TreeShape& s, bool do_up, bool do_down, double chunk,
                          int chunks, int units, TaskId start, std::int32_t up_label, std::int32_t down_label,
                          int lane, std::vector<Dep>& finals, std::optional<double> hop_latency,
                          double stream_rate) {
    const std::size_t m = s.members.size();
    const auto latency = [&](hw::Rank a, hw::Rank b) {
      return hop_latency ? *hop_latency : ctx.step_latency(a, b);
    };
    // Post-order (children before parents) for the reduction.
    std::vector<int> post;
    std::vector<std::pair<int, std::size_t>> stack{{s.root, 0}};
    while (!stack.empty()) {
      auto& [v, next] = stack.back();
      if (next < s.children[static_cast<std::size_t>(v)].size()) {
        const int c = s.children[static_cast<std::size_t>(v)][next++];
        stack.push_back({c, 0});
      } else {
        post.push_back(v);
        stack.pop_back();
      }
    }
    // This chunk's transfers on member v's edge to its parent (up) and from its parent (down), and the last
    // transfer of each edge so far (the link is free once it has been sent).
    std::vector<std::vector<TaskId>> up(m), down(m);
    std::vector<TaskId> up_last(m, -1), down_last(m, -1);
    // One edge's transfers of this chunk (add_step_pieces).
    const auto edge = [&](hw::Rank from, hw::Rank to, std::int32_t label,
                          const std::vector<const std::vector<TaskId>*>& upstream, TaskId& last) {
      return add_step_pieces(ctx, from, to, chunk, units, latency(from, to), upstream, start, last, label,
                             lane, stream_rate);
    };
    for (int k = 0; k < chunks; ++k) {
      if (do_up) {
        for (int v : post) {
          const auto vi = static_cast<std::size_t>(v);
          if (s.parent[vi] < 0) continue;
          std::vector<const std::vector<TaskId>*> upstream;
          for (int c : s.children[vi]) upstream.push_back(&up[static_cast<std::size_t>(c)]);
          up[vi] = edge(s.members[vi], s.members[static_cast<std::size_t>(s.parent[vi])], up_label, upstream,
                        up_last[vi]);
        }
      }
      if (do_down) {
        for (int v : s.preorder) {
          const auto vi = static_cast<std::size_t>(v);
          std::vector<const std::vector<TaskId>*> upstream;
          if (s.parent[vi] >= 0) {
            upstream.push_back(&down[vi]);
          } else if (do_up) {
            // The root forwards once its children's reduced data has arrived.
            for (int c : s.children[vi]) upstream.push_back(&up[static_cast<std::size_t>(c)]);
          }
          for (int c : s.children[vi]) {
            const auto ci = static_cast<std::size_t>(c);
            down[ci] = edge(s.members[vi], s.members[ci], down_label, upstream, down_last[ci]);
          }
        }
      }
    }
    if (do_down) {
      for (std::size_t v = 0; v < m; ++v)
        if (s.parent[v] >= 0) finals.push_back({down_last[v]});
    } else {
      for (int c : s.children[static_cast<std::size_t>(s.root)])
        finals.push_back({up_last[static_cast<std::size_t>(c)]});
    }
  }
};

}  // namespace

std::vector<std::pair<hw::Rank, hw::Rank>> tree_hops(const TreeShape& s, bool do_up, bool do_down) {
  std::vector<std::pair<hw::Rank, hw::Rank>> hops;
  hops.reserve(s.members.size() * ((do_up ? 1 : 0) + (do_down ? 1 : 0)));
  for (int v : s.preorder) {
    const auto vi = static_cast<std::size_t>(v);
    if (s.parent[vi] < 0) continue;
    const hw::Rank parent = s.members[static_cast<std::size_t>(s.parent[vi])];
    if (do_up) hops.push_back({s.members[vi], parent});
    if (do_down) hops.push_back({parent, s.members[vi]});
  }
  return hops;
}

// Flow granularity: the whole pipelined tree is one bundle. K chunks through the stages of its deepest path
// (up, then down) finish after the first piece's trip (pipeline_stage_fill through every stage: a unit
// inside a node, a chunk at and after the network) and the time of the K chunks less that piece, plus the
// path's latencies. With `shares` the trip crosses each stage at that stage's fill pace (the bundle carries
// the stage's bytes scaled by the bundle's pace over the stage's), else at the bundle's.
TaskId tree_flow_bundle(BuildContext& ctx, const TreeShape& s, bool do_up, bool do_down, double chunk,
                        int chunks, double fill_unit, TaskId start, std::int32_t label, int lane,
                        const hw::SizeTimes::Split* measured, double stream_rate, const LinkShares* shares) {
  const std::size_t m = s.members.size();
  // Each member's hop to its parent and from it, looked up once: for the bundle's route, the stages' paces
  // and the latencies.
  std::vector<std::pair<hw::Rank, hw::Rank>> hops;
  std::vector<std::span<const hw::LinkId>> up_route(m), down_route(m), routes;
  hops.reserve(2 * m);
  routes.reserve(2 * m);
  for (int v : s.preorder) {
    const auto vi = static_cast<std::size_t>(v);
    if (s.parent[vi] < 0) continue;
    const hw::Rank parent = s.members[static_cast<std::size_t>(s.parent[vi])];
    up_route[vi] = ctx.topo.route(s.members[vi], parent);
    down_route[vi] = ctx.topo.route(parent, s.members[vi]);
    if (do_up) {
      hops.push_back({s.members[vi], parent});
      routes.push_back(up_route[vi]);
    }
    if (do_down) {
      hops.push_back({parent, s.members[vi]});
      routes.push_back(down_route[vi]);
    }
  }
  const CustomRoute route = BuildContext::merge_routes(routes);
  const double bundle_pace = shares ? shares->pace(route.links) : 1.0;
  // Seconds per byte of a stage, relative to the bundle's pace (1 without shares). Down stages fill in the
  // all-reduce's second phase.
  const auto inverse_pace = [&](std::span<const hw::LinkId> links, bool down) {
    return shares ? 1.0 / shares->fill_pace(links, down && do_up) : 1.0;
  };
  std::vector<double> lat_to_root(m, 0.0), lat_from_root(m, 0.0);
  // The trip of the path from v up to the root's child (trip_up, from its second stage) and from the root's
  // child down to v (trip_down, likewise), in bytes over pace; net[v]: whether v's hop to its parent crosses
  // the network; top[v]: the root's child on v's path; up_cost[v], down_cost[v]: the inverse pace of v's hop
  // to and from its parent.
  const auto stage = [&](bool hop_net, bool previous_net) {
    return pipeline_stage_fill(hop_net, previous_net, chunk, fill_unit);
  };
  std::vector<double> trip_up(m, 0.0), trip_down(m, 0.0), up_cost(m, 1.0), down_cost(m, 1.0);
  std::vector<char> net(m, 0);
  std::vector<std::size_t> top(m, 0);
  double extra = -std::numeric_limits<double>::infinity();
  for (int v : s.preorder) {
    const auto vi = static_cast<std::size_t>(v);
    if (s.parent[vi] < 0) continue;
    const auto p = static_cast<std::size_t>(s.parent[vi]);
    lat_to_root[vi] = lat_to_root[p] + ctx.step_latency(up_route[vi]);
    lat_from_root[vi] = lat_from_root[p] + ctx.step_latency(down_route[vi]);
    net[vi] = ctx.topo.node_of(s.members[vi]) != ctx.topo.node_of(s.members[p]);
    top[vi] = s.parent[p] < 0 ? vi : top[p];
    up_cost[vi] = inverse_pace(up_route[vi], false);
    down_cost[vi] = inverse_pace(down_route[vi], true);
    if (s.parent[p] >= 0) {
      trip_up[vi] = trip_up[p] + stage(net[p], net[vi]) * up_cost[p];
      trip_down[vi] = trip_down[p] + stage(net[vi], net[p]) * down_cost[vi];
    }
    // Up to the root and back down the same path: the turn at the root is a stage after the hop into it.
    // What the first piece's trip adds to the K chunks, which include that piece's first stage.
    const std::size_t t = top[vi];
    const double first = do_up ? stage(net[vi], net[vi]) : stage(net[t], net[t]);
    const double path_trip = do_up
                                 ? first * up_cost[vi] + trip_up[vi] +
                                       (do_down ? stage(net[t], net[t]) * down_cost[t] + trip_down[vi] : 0.0)
                                 : first * down_cost[t] + trip_down[vi];
    extra = std::max(extra, path_trip * bundle_pace - first);
  }
  const double payload = chunk * chunks + (std::isfinite(extra) ? extra : 0.0);  // no hop: nothing to fill
  const int stages = s.depth * ((do_up ? 1 : 0) + (do_down ? 1 : 0));
  const double latency =
      measured ? measured->fixed_seconds
               : (do_up ? *std::max_element(lat_to_root.begin(), lat_to_root.end()) : 0.0) +
                     (do_down ? *std::max_element(lat_from_root.begin(), lat_from_root.end()) : 0.0);
  const std::array<Dep, 1> deps{Dep{start}};
  const TaskId bundle = add_bundle(ctx, route, hops, payload, latency, label, deps, lane);
  if (measured) cap_at_measured_rate(ctx, bundle - 1, chunk, chunks, stages, *measured);
  cap_streaming(ctx, bundle, payload, chunk * chunks, stream_rate);
  return bundle;
}

hw::SizeTimes::Split tree_chunk_handoffs(const hw::SizeTimes& table, double bytes, double chunk, int stages) {
  if (!(bytes > 0) || !(chunk > 0)) return {};
  const double full = std::floor(bytes / chunk);
  const double rest = bytes - full * chunk;
  // The fill and drain: the first chunk's trip through the other stages, each at a whole chunk (or the
  // whole message, where it is smaller).
  auto total = table.split(std::min(chunk, bytes), full + std::max(stages - 1, 0));
  if (rest > 0) {
    const auto last = table.split(rest, 1);
    total.fixed_seconds += last.fixed_seconds;
    total.copy_seconds += last.copy_seconds;
  }
  return total;
}

std::unique_ptr<CollectiveAlgorithm> make_tree() {
  return std::make_unique<Tree>();
}

}  // namespace strata::sim::algorithms
