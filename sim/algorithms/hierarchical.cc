// Hierarchical all-reduce (ASTRA-sim's localBWAware shape, P2's program (ii)): reduce-scatter inside each
// node, all-reduce across nodes among the GPUs with the same local index (one ring per local index, each on
// its own NIC), then all-gather inside each node. Inter-node traffic shrinks to S/L per GPU, L = GPUs of the
// group per node. All-gather and reduce-scatter are the corresponding halves.
#include <map>

#include <fmt/format.h>

#include "sim/algorithms/algorithms.h"

namespace strata::sim::algorithms {
namespace {

class Hierarchical final : public CollectiveAlgorithm {
 public:
  std::string_view name() const override { return "hierarchical"; }
  std::string_view description() const override {
    return "intra-node ring reduce-scatter, inter-node ring all-reduce per local rank, intra-node all-gather";
  }
  nccl::Family family() const override { return nccl::Family::kRing; }
  std::string nccl_unsupported_reason(const CollectiveSpec&, const hw::Topology&) const override {
    return "NCCL has no hierarchical algorithm (strata's own; P2 builds it from NCCL calls)";
  }
  std::string unsupported_reason(const CollectiveSpec& spec, const hw::Topology& topo) const override {
    if (spec.op != CollectiveOp::kAllReduce) return "hierarchical implements allreduce only";
    std::map<int, int> per_node;
    for (hw::Rank r : spec.group) ++per_node[topo.node_of(r)];
    if (per_node.size() < 2) return "the group lies on one node (nothing to do hierarchically)";
    const int first = per_node.begin()->second;
    for (const auto& [node, count] : per_node)
      if (count != first)
        return fmt::format("nodes hold different numbers of group members ({} vs {})", first, count);
    return {};
  }

  TaskId build(BuildContext& ctx) const override {
    const TaskId start = begin_collective(ctx);
    const auto nodes = ctx.members_by_node();
    const std::size_t L = nodes.front().size();
    const double S = ctx.spec.bytes;
    const auto label_rs = ctx.label("intra reduce-scatter"), label_ar = ctx.label("inter all-reduce"),
               label_ag = ctx.label("intra all-gather");
    // Phase 1: reduce-scatter inside each node (L-1 steps of S/L).
    std::vector<Dep> phase1;
    for (const auto& members : nodes)
      if (L > 1)
        for (TaskId t : ring_phase(ctx, members, static_cast<int>(L) - 1, S / L, start, label_rs, 0))
          phase1.push_back({t});
    const TaskId after1 = join(ctx, phase1.empty() ? std::vector<Dep>{{start}} : phase1);
    // Phase 2: for each local index j, ring all-reduce of S/L over the nodes.
    std::vector<Dep> phase2;
    const int n_nodes = static_cast<int>(nodes.size());
    for (std::size_t j = 0; j < L; ++j) {
      std::vector<hw::Rank> ring;
      for (const auto& members : nodes) ring.push_back(members[j]);
      for (TaskId t :
           ring_phase(ctx, ring, 2 * (n_nodes - 1), S / L / n_nodes, after1, label_ar, static_cast<int>(j)))
        phase2.push_back({t});
    }
    const TaskId after2 = join(ctx, phase2);
    // Phase 3: all-gather inside each node.
    std::vector<Dep> phase3{{after2}};
    for (const auto& members : nodes)
      if (L > 1)
        for (TaskId t : ring_phase(ctx, members, static_cast<int>(L) - 1, S / L, after2, label_ag, 0))
          phase3.push_back({t});
    return join(ctx, phase3);
  }
};

}  // namespace

std::unique_ptr<CollectiveAlgorithm> make_hierarchical() {
  return std::make_unique<Hierarchical>();
}

}  // namespace strata::sim::algorithms
