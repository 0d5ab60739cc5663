// NVLS-Tree (NCCL >= 2.18, NCCL_ALGO_NVLS_TREE): all-reduce across nodes of NVSwitch gen3+ systems. Inside
// each node the switch reduces and multicasts as in NVLS; every GPU is the "head" of 1/n of the buffer and
// carries that share across nodes over its own NIC through a double binary tree of the heads of the other
// nodes (channels alternate between the two mirrored trees). The four parts run concurrently in one kernel
// (scatter, reduce-and-send-up, receive-and-broadcast, gather warps), so in flow form they are concurrent
// flows:
//  - each GPU's NVSwitch port carries S + S/n each way, at NCCL's nvlsEfficiency, as in NVLS;
//  - each head moves S/n through its two trees (S/(2n) each) over the network: on 2 nodes each NIC direction
//    carries S/(2n) per tree, half of what a ring needs, which is why NCCL doubles NVLS-Tree's inter-node
//    bandwidth on <= 2 nodes; on more nodes an interior node carries about 2 S/n each way, like the ring.
// The whole pipeline moves the buffer no faster than NCCL's ceiling on the kernel
// (nccl::nvls_tree_busbw_ceiling, perChMaxNVLSTreeBw x the NVLS graph's channels), which binds on 2 nodes.
// Sources (NVIDIA/nccl 5067397c): src/device/all_reduce.h RunWorkColl<..., NCCL_ALGO_NVLS_TREE, ...> (the
// warp roles), src/graph/connect.cc (nvls.treeUp / treeDown: the local NVLS "down" plus up to two remote
// children, tree c % 2 per channel), src/enqueue.cc (chunk size rule below), src/transport/nvls.cc (16 NVLS
// channels on SM90, 128 KiB chunks, tree chunks at most 64 KiB from 4 nodes), src/graph/tuning.cc (latency
// intraLat + 2 log2(nodes) interLat; NVLSTree hop latencies NVLink 25 us, NET 20.9 us).
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <optional>

#include "sim/algorithms/algorithms.h"
#include "sim/nccl_model.h"
#include "sim/nccl_tuner.h"

namespace strata::sim::algorithms {
namespace {

class NvlsTree final : public CollectiveAlgorithm {
 public:
  std::string_view name() const override { return "nvls-tree"; }
  std::string_view description() const override {
    return "NVLS inside each node with a double binary tree of per-NIC heads across nodes (all-reduce, "
           "NVSwitch "
           "gen3+, 2+ nodes)";
  }
  nccl::Family family() const override { return nccl::Family::kNvlsTree; }
  std::string unsupported_reason(const CollectiveSpec& spec, const hw::Topology& topo) const override {
    if (spec.op != CollectiveOp::kAllReduce) return "nvls-tree implements allreduce only";
    if (!topo.nvls_capable()) return "the system has no NVSwitch with in-switch reduction (NVSwitch gen3+)";
    if (spec.protocol != Protocol::kSimple) return "nvls-tree uses the simple protocol only";
    std::map<int, int> per_node;
    for (hw::Rank r : spec.group) ++per_node[topo.node_of(r)];
    if (per_node.size() < 2) return "nvls-tree spans nodes (NCCL disables it on one node; use nvls)";
    for (const auto& [node, count] : per_node)
      if (count != topo.gpus_per_node())
        return "nvls-tree needs every GPU of each of its nodes in the group (NVLS works on whole nodes)";
    if (topo.nics_per_node() != topo.gpus_per_node())
      return "nvls-tree is modelled with one NIC per GPU (one tree head per NIC, as on DGX H100)";
    return {};
  }

  TaskId build(BuildContext& ctx) const override {
    const TaskId start = begin_collective(ctx);
    const auto nodes = ctx.members_by_node();
    const int heads = static_cast<int>(nodes.front().size());
    const int num_nodes = static_cast<int>(nodes.size());
    const double bytes = ctx.spec.bytes;
    // Across nodes: per head, NCCL's double binary tree over the nodes (ncclGetDtree), each tree carrying
    // S/(2 heads) in chunks per channel (half of the channels per tree): K chunks through D stages cost
    // (K + D - 1) chunks.
    std::vector<int> order(static_cast<std::size_t>(num_nodes));
    for (int i = 0; i < num_nodes; ++i) order[static_cast<std::size_t>(i)] = i;
    const double per_tree = bytes / (2.0 * heads);
    const double per_channel = per_tree / (kNvlsChannels / 2);
    const int chunks = std::max(
        1, static_cast<int>(std::ceil(per_channel / nvls_tree_chunk_bytes(bytes, num_nodes, heads))));
    const auto tree_label = ctx.label("tree");
    // NCCL's ceiling on the kernel (perChMaxNVLSTreeBw x the NVLS graph's channels, as nccl-tests busbw):
    // every part of the pipeline, the trees and the switch ports, moves the buffer no faster than its
    // algorithm bandwidth allows. It binds on 2 nodes, where the switch ports alone would allow about 280
    // GB/s algbw on DGX H100 and NCCL rates 246 (docs/fidelity.md §6.5).
    double algbw_ceiling = std::numeric_limits<double>::infinity();
    if (const auto model = nccl::tuner_model(ctx.topo, ctx.spec.group))
      algbw_ceiling = nccl::nvls_tree_busbw_ceiling(*model) * 1e9 /
                      busbw_factor(CollectiveOp::kAllReduce, static_cast<int>(ctx.spec.group.size()));
    // Where the network's chunk handoffs were measured (node.nics.nccl_tree), each tree is charged as one
    // of NCCL's channels moves one head's share over it: every chunk through every stage at the measured
    // time per chunk (tree_chunk_handoffs). The network part of NVLS-Tree is the tree's transport (a send
    // per chunk, 8 steps in flight); its GPU side (the NVLS warps feeding the tree) is not the classic tree
    // kernel's, which the measurement cannot separate (docs/fidelity.md §6.6).
    const auto& net = ctx.topo.nccl_table(hw::NcclTableId::kNetTree);
    std::vector<Dep> finals;
    double tree_latency = 0;
    const std::array<std::vector<int>, 2> parents{nccl_tree_parents(num_nodes, 0),
                                                  nccl_tree_parents(num_nodes, 1)};
    // Both trees of every head; without a measured table their fill crosses each stage at its links' share
    // of all trees' bundles (LinkShares: one chunk per channel in flight per tree and link while it fills).
    std::vector<TreeShape> shapes;
    std::optional<LinkShares> shares;
    if (net.empty()) shares.emplace(ctx.topo);
    for (int h = 0; h < heads; ++h) {
      std::vector<std::vector<hw::Rank>> chains;
      for (const auto& members : nodes) chains.push_back({members[static_cast<std::size_t>(h)]});
      const std::vector<std::size_t> gateway(chains.size(), 0);
      for (int mirror = 0; mirror < 2; ++mirror) {
        shapes.push_back(make_tree(chains, order, parents[static_cast<std::size_t>(mirror)], gateway));
        if (shares)
          shares->add(tree_hops(shapes.back(), true, false), tree_hops(shapes.back(), false, true), chunks,
                      chunks);
      }
    }
    for (int h = 0; h < heads; ++h) {
      for (int mirror = 0; mirror < 2; ++mirror) {
        const TreeShape& shape = shapes[static_cast<std::size_t>(2 * h + mirror)];
        const int stages = 2 * shape.depth;
        std::optional<hw::SizeTimes::Split> measured;
        if (!net.empty())
          measured = tree_chunk_handoffs(net.times, per_channel,
                                         nvls_tree_chunk_bytes(bytes, num_nodes, heads), stages);
        tree_latency = std::max(tree_latency,
                                measured ? measured->fixed_seconds
                                         : stages * ctx.step_latency(nodes[0][static_cast<std::size_t>(h)],
                                                                     nodes[1][static_cast<std::size_t>(h)]));
        // The bundle carries its head's share of the tree no faster than each of NCCL's channels moves its
        // part of it (they run side by side).
        finals.push_back(
            {tree_flow_bundle(ctx, shape, true, true, per_tree / chunks, chunks, per_tree / chunks, start,
                              tree_label, 2 * h + mirror, measured ? &*measured : nullptr,
                              algbw_ceiling * per_tree / bytes, shares ? &*shares : nullptr)});
      }
    }
    // Inside each node: NVLS on every GPU's switch port. Its latency carries the whole pipeline's (NVLS, then
    // the trees up and down, then the multicast): NCCL's intraLat + 2 log2(nodes) interLat.
    // The NVLS warps (scatter, gather, and the reduce/broadcast warps that feed the trees) pipeline one
    // tree chunk per head per step, with the same fill and drain as one-node NVLS.
    const int n = heads;
    const double payload = nvls_pipeline_payload(bytes, n, nvls_tree_chunk_bytes(bytes, num_nodes, heads));
    const double wire = payload * (n + 1.0) / n / nccl::kNvlsEfficiency;
    const double lat =
        nccl::hop_latency(hw::Transport::kNvlink, nccl::Family::kNvlsTree, Protocol::kSimple) + tree_latency;
    const std::array<Dep, 1> deps{Dep{start}};
    const auto up = ctx.label("nvls up"), down = ctx.label("nvls down");
    for (const auto& members : nodes)
      for (hw::Rank r : members) {
        const auto [to_switch, from_switch] = nvswitch_port(ctx.topo, r);
        for (const auto& [link, label] : {std::pair{to_switch, up}, std::pair{from_switch, down}}) {
          const TaskId port =
              ctx.graph.add_transfer_on(CustomRoute{{link}, {}}, r, r, wire, lat, label, deps);
          if (std::isfinite(algbw_ceiling)) ctx.graph.cap_transfer(port, algbw_ceiling * wire / payload);
          finals.push_back({port});
        }
      }
    return join(ctx, finals);
  }
};

}  // namespace

std::unique_ptr<CollectiveAlgorithm> make_nvls_tree() {
  return std::make_unique<NvlsTree>();
}

}  // namespace strata::sim::algorithms
