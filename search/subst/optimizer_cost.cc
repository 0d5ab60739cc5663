// Cost of graphs and predicted cost of rewrites (optimizer.h, optimizer_internal.h).
#include <map>

#include "search/subst/optimizer_internal.h"
#include "search/subst/weight_folding.h"

namespace strata::search::subst {

using namespace optimizer_detail;

NodeCosts node_costs(const Graph& g, const models::CostModel& cost) {
  // Nodes computed from weights and constants only (a concatenation of two weight matrices, an enlarged
  // kernel) are folded once before inference, as in TASO, and cost nothing per step.
  // (search/subst/weight_folding.h: the written graph holds them folded too.)
  NodeCosts c;
  c.node.assign(g.nodes().size(), 0.0);
  c.folded = weight_only_values(g);
  for (NodeId i = 0; i < static_cast<NodeId>(g.nodes().size()); ++i) {
    const Node& n = g.node(i);
    if (!n.outputs.empty() && c.folded[static_cast<std::size_t>(n.outputs[0])]) continue;
    c.node[static_cast<std::size_t>(i)] = cost.node_cost(g, n).seconds;
    c.total += c.node[static_cast<std::size_t>(i)];
  }
  return c;
}

double graph_cost(const Graph& g, const models::CostModel& cost) {
  return node_costs(g, cost).total;
}

namespace optimizer_detail {

// The predicted time of the graph with a rule's target graph in place of the match (optimizer_internal.h):
// the target costed alone on stand-ins for the bound values. `unknown` when a split point lies outside the
// target graph; `rejected` when the target cannot be built on these shapes.
std::pair<Estimate, double> target_cost(const Graph& g, const NodeCosts& costs, const Rule& rule,
                                        const Match& match, const models::CostModel& cost,
                                        std::size_t& new_nodes) {
  Graph scratch;
  std::map<std::string, ValueId> vars;
  for (const auto& [name, v] : match.bindings) {
    const bool folded = costs.folded[static_cast<std::size_t>(v)] != 0;
    vars.emplace(name, scratch.add_source(name, g.type(v),
                                          folded ? models::ValueKind::kParam : models::ValueKind::kInput));
  }
  TargetBuilder tb(vars);
  for (const auto& eq : rule.outputs)
    if (!tb.build(eq.rhs)) return {Estimate::kRejected, 0};
  const auto& fresh = tb.nodes();
  new_nodes = fresh.size();
  std::vector<std::vector<ValueId>> outs(fresh.size());
  auto value_of = [&](const Ref& r) -> ValueId {
    if (r.node < 0) return r.old;
    const auto& o = outs[static_cast<std::size_t>(r.node)];
    return static_cast<std::size_t>(r.output) < o.size() ? o[static_cast<std::size_t>(r.output)]
                                                         : models::kNoValue;
  };
  for (std::size_t k = 0; k < fresh.size(); ++k) {
    const auto& nn = fresh[k];
    std::vector<ValueId> ins;
    for (const Ref& r : nn.args) ins.push_back(value_of(r));
    const bool split = nn.term->op() == Op::kSplit0 || nn.term->op() == Op::kSplit1;
    if (split && !ins.empty() && ins[0] != models::kNoValue &&
        !concat_boundary(scratch, ins[0], nn.term->params()[0].value, 8))
      return {Estimate::kUnknown, 0};
    const ValueId sibling = nn.context ? value_of(nn.context->sibling) : models::kNoValue;
    auto o = emit_new_node(scratch, nn, std::move(ins), sibling, "t");
    if (!o) return {Estimate::kRejected, 0};  // not expressible, or shape inference rejects it
    outs[k] = std::move(*o);
  }
  double removed = 0;
  for (NodeId n : match.nodes) removed += costs.node[static_cast<std::size_t>(n)];
  return {Estimate::kOk, costs.total - removed + graph_cost(scratch, cost)};
}

}  // namespace optimizer_detail
}  // namespace strata::search::subst
