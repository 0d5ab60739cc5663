#include "search/parallel/op_cost.h"

#include <map>

#include "models/train/training.h"

namespace strata::search::parallel {

using models::Graph;
using models::ValueKind;

namespace {

// Forward and backward seconds of `node` run on input blocks of these shapes; nullopt when the operator's
// shape rule rejects them.
std::optional<PartCost> scratch_cost(const Graph& g, const models::Node& node,
                                     const std::vector<models::Shape>& in_shapes,
                                     const models::CostModel& cost) {
  Graph s(node.name + ".part");
  std::vector<models::ValueId> ins;
  for (std::size_t j = 0; j < node.inputs.size(); ++j) {
    const auto& v = g.value(node.inputs[j]);
    models::TensorType t{in_shapes[j], v.type.dtype};
    // Activations and weights need gradients in the backward pass: both become parameters of the scratch
    // graph (the derivation differentiates with respect to parameters); data inputs and constants do not.
    const bool grad = v.kind == ValueKind::kParam || v.kind == ValueKind::kActivation;
    // Literal data only where the block is the whole value (a shape rule may read it).
    ins.push_back(grad ? s.add_param(v.name, t)
                       : s.add_source(v.name, t, v.kind, t == v.type ? v.data : nullptr));
  }
  auto outs = s.try_add_node(node.op->name, ins, node.attrs, node.name);
  if (!outs) return std::nullopt;
  for (auto o : outs.value()) s.mark_output(o);
  PartCost pc;
  pc.forward = cost.node_cost(s, s.node(0)).seconds;
  if (node.op->grad == nullptr) return pc;  // not differentiable: nothing flows back through it
  const auto tg = models::derive_training_graph(s, {.optimizer = models::Optimizer::kNone});
  for (int n = tg.num_forward_nodes; n < tg.first_update_node; ++n)
    pc.backward += cost.node_cost(tg.graph, tg.graph.node(n)).seconds;
  return pc;
}

}  // namespace

ShardCosts::ShardCosts(const PlanSpace& space, const models::CostModel& cost) {
  const Graph& g = space.graph();
  for (int i = 0; i < space.size(); ++i) {
    const auto& node = g.node(space.nodes()[ix(i)]);
    std::map<std::vector<int>, int> seen;
    std::vector<PartCost> costs;
    std::vector<int> index;
    std::optional<PartCost> whole;
    for (const auto& c : space.configs(i)) {
      auto [it, fresh] = seen.emplace(c.degrees, static_cast<int>(costs.size()));
      index.push_back(it->second);
      if (!fresh) continue;
      std::vector<models::Shape> shapes;
      for (std::size_t j = 0; j < node.inputs.size(); ++j) {
        const auto b = space.input_block(i, c, 0, static_cast<int>(j));
        models::Shape sh(b.lo.size());
        for (std::size_t a = 0; a < sh.size(); ++a) sh[a] = b.hi[a] - b.lo[a];
        shapes.push_back(std::move(sh));
      }
      auto pc = scratch_cost(g, node, shapes, cost);
      if (!pc) {
        if (!whole) {
          std::vector<models::Shape> full;
          for (auto v : node.inputs) full.push_back(g.type(v).shape);
          whole = scratch_cost(g, node, full, cost);
          if (!whole) whole = PartCost{cost.node_cost(g, node).seconds, 0, false};
        }
        const double parts = c.parts();
        pc = PartCost{whole->forward / parts, whole->backward / parts, true};
        ++scaled_;
      }
      costs.push_back(*pc);
    }
    costs_.push_back(std::move(costs));
    index_.push_back(std::move(index));
  }
}

}  // namespace strata::search::parallel
