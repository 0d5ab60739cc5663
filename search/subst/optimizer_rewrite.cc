// Rewriting a graph with a matched rule: the rule's target graph is built beside the kept nodes and the
// result ordered topologically (optimizer.h, optimizer_internal.h).
#include <algorithm>
#include <map>
#include <queue>
#include <set>

#include <fmt/format.h>

#include "search/subst/optimizer_internal.h"

namespace strata::search::subst {
namespace optimizer_detail {

std::optional<Ref> TargetBuilder::build(const Term& t, std::optional<ConstantContext> ctx) {
  if (t.is_variable()) {
    auto it = vars_.find(t.name());
    if (it == vars_.end()) return std::nullopt;
    return Ref{it->second, -1, 0};
  }
  std::string key = to_string(t);
  int output = 0;
  if (t.op() == Op::kSplit0 || t.op() == Op::kSplit1) {
    output = t.op() == Op::kSplit1 ? 1 : 0;
    key = "split" + key.substr(key.find('('));  // split_0 and split_1 of one tensor share one IR node
  }
  if (auto it = memo_.find(key); it != memo_.end()) return Ref{models::kNoValue, it->second, output};
  NewNode nn;
  nn.term = &t;
  if (!build_target_args(
          t, ctx, nn.args, Ref{},
          [this](const Term& arg, const std::optional<ConstantContext>& c) { return build(arg, c); }))
    return std::nullopt;
  if (op_info(t.op()).tensor_args == 0) {
    if (!ctx) return std::nullopt;
    nn.context = ctx;
  }
  nodes_.push_back(std::move(nn));
  const int id = static_cast<int>(nodes_.size()) - 1;
  memo_.emplace(std::move(key), id);
  return Ref{models::kNoValue, id, output};
}

// Emits one node of a rule's target graph into `out` (inputs already there); nullopt when the rule operator
// cannot be expressed on these shapes or shape inference rejects it (Graph::try_add_node).
std::optional<std::vector<ValueId>> emit_new_node(Graph& out, const NewNode& nn, std::vector<ValueId> ins,
                                                  ValueId sibling, const std::string& name_prefix) {
  std::vector<models::Shape> shapes;
  for (ValueId v : ins) {
    if (v == models::kNoValue) return std::nullopt;
    shapes.push_back(out.type(v).shape);
  }
  OpInstance inst{nn.term->op(), {}};
  for (const auto& p : nn.term->params()) {
    if (p.is_var()) return std::nullopt;
    inst.params.push_back(p.value);
  }
  std::int64_t split_point = 0;
  if (inst.op == Op::kSplit0 || inst.op == Op::kSplit1) {
    auto point = concat_boundary(out, ins[0], inst.params[0], 8);
    if (!point) return std::nullopt;
    split_point = *point;
  }
  models::Shape cshape;
  if (nn.context) {
    if (sibling == models::kNoValue) return std::nullopt;
    auto s = constant_shape_in(nn.context->parent, nn.context->arg, out.type(sibling).shape);
    if (!s) return std::nullopt;
    cshape = *s;
  }
  auto ir = to_ir(inst, shapes, split_point, cshape);
  if (!ir) return std::nullopt;
  if (!rules_may_use(*ir->def, ir->attrs)) return std::nullopt;
  auto outs = out.try_add_node(ir->name(), std::move(ins), ir->attrs, name_prefix + std::string(ir->name()));
  if (!outs) return std::nullopt;
  return std::move(outs).value();
}

}  // namespace optimizer_detail

using namespace optimizer_detail;

namespace {

// The lhs roots of a match, re-derived from its nodes and bindings, in equation order.
std::optional<std::vector<ValueId>> match_roots(const Graph& g, const Rule& rule, const Match& match,
                                                const std::map<std::string, ValueId>& vars) {
  std::vector<ValueId> roots;
  const LhsIndex lhs(rule);
  const Matcher m(g, nullptr, lhs);
  MatchState st = m.empty();
  for (std::size_t i = 0; i < lhs.var_names.size(); ++i) {
    auto it = vars.find(lhs.var_names[i]);
    if (it == vars.end()) return std::nullopt;
    st.vars[i] = it->second;
  }
  for (const auto& eq : rule.outputs) {
    ValueId found = models::kNoValue;
    for (NodeId n : match.nodes) {
      for (ValueId o : g.node(n).outputs) {
        if (found != models::kNoValue) break;
        if (!root_candidate(g, eq.lhs, o) || std::find(roots.begin(), roots.end(), o) != roots.end())
          continue;
        MatchState trial = st;
        if (m.match(eq.lhs, o, trial)) {
          found = o;
          st = std::move(trial);
        }
      }
    }
    if (found == models::kNoValue) return std::nullopt;
    roots.push_back(found);
  }
  return roots;
}

// One rewrite of g: the kept old nodes 0..N-1 and the target graph's new nodes N..N+M-1 ("items"), with the
// replaced roots remapped to the target graph's values.
class Rewrite {
 public:
  Rewrite(const Graph& g, const Match& match, std::vector<NewNode>& fresh, const std::vector<ValueId>& roots,
          const std::vector<Ref>& replacement)
      : g_(g),
        match_(match),
        fresh_(fresh),
        removed_(match.nodes.begin(), match.nodes.end()),
        n_old_(static_cast<int>(g.nodes().size())),
        n_new_(static_cast<int>(fresh.size())),
        total_(n_old_ + n_new_) {
    for (std::size_t i = 0; i < roots.size(); ++i) remap_[roots[i]] = replacement[i];
  }

  // Kahn's algorithm ordered by original position (new nodes at the first matched node) gives a topological
  // order of the items; false when the rewrite would read a removed value or close a cycle.
  bool order() {
    collect_deps();
    std::vector<int> indegree(static_cast<std::size_t>(total_), 0);
    std::vector<std::vector<int>> users(static_cast<std::size_t>(total_));
    for (int i = 0; i < total_; ++i) {
      if (i < n_old_ && removed_.contains(i)) continue;
      for (int d : deps_[static_cast<std::size_t>(i)]) {
        if (d < 0) continue;
        if (d < n_old_ && removed_.contains(d)) return false;  // would read a removed value
        ++indegree[static_cast<std::size_t>(i)];
        users[static_cast<std::size_t>(d)].push_back(i);
      }
    }
    const int anchor = match_.nodes.front();
    auto order_key = [&](int i) {
      return i < n_old_ ? std::pair{i, 0} : std::pair{anchor, i - n_old_ - n_new_};
    };
    auto later = [&](int a, int b) { return order_key(a) > order_key(b); };
    std::priority_queue<int, std::vector<int>, decltype(later)> ready(later);
    int live = 0;
    for (int i = 0; i < total_; ++i) {
      if (i < n_old_ && removed_.contains(i)) continue;
      ++live;
      if (indegree[static_cast<std::size_t>(i)] == 0) ready.push(i);
    }
    while (!ready.empty()) {
      const int i = ready.top();
      ready.pop();
      order_.push_back(i);
      for (int u : users[static_cast<std::size_t>(i)])
        if (--indegree[static_cast<std::size_t>(u)] == 0) ready.push(u);
    }
    if (static_cast<int>(order_.size()) != live) return false;  // the rewrite closes a cycle
    mark_reaching_outputs();
    return true;
  }

  // The rewritten graph, its items emitted in order; nullopt when a target node cannot be built.
  std::optional<Graph> build(std::string_view name_prefix) {
    out_ = copy_sources(g_, old_to_new_);
    fresh_outputs_.assign(static_cast<std::size_t>(n_new_), {});
    for (int i : order_) {
      if (!reaches_output_[static_cast<std::size_t>(i)]) continue;
      if (i < n_old_) {
        if (!copy_old_node(i)) return std::nullopt;
        continue;
      }
      const int k = i - n_old_;
      const auto& nn = fresh_[static_cast<std::size_t>(k)];
      std::vector<ValueId> ins;
      for (const Ref& r : nn.args) ins.push_back(value_of(r));
      const ValueId sibling = nn.context ? value_of(nn.context->sibling) : models::kNoValue;
      auto outs = emit_new_node(out_, nn, std::move(ins), sibling, fmt::format("{}{}_", name_prefix, k));
      if (!outs) return std::nullopt;
      fresh_outputs_[static_cast<std::size_t>(k)] = std::move(*outs);
    }
    for (ValueId v : g_.outputs()) {
      const ValueId nv = value_of(resolve(v));
      if (nv == models::kNoValue) return std::nullopt;
      out_.mark_output(nv);
    }
    return std::move(out_);
  }

  ValueId value_of(const Ref& r) const {
    if (r.node >= 0) {
      const auto& outs = fresh_outputs_[static_cast<std::size_t>(r.node)];
      return static_cast<std::size_t>(r.output) < outs.size() ? outs[static_cast<std::size_t>(r.output)]
                                                              : models::kNoValue;
    }
    return old_to_new_[static_cast<std::size_t>(r.old)];
  }

 private:
  Ref resolve(ValueId v) const {
    auto it = remap_.find(v);
    return it == remap_.end() ? Ref{v, -1, 0} : it->second;
  }
  int dep_of(const Ref& r) const {
    if (r.node >= 0) return n_old_ + r.node;
    const NodeId p = g_.value(r.old).producer;
    return p;  // -1 for sources
  }

  void collect_deps() {
    deps_.assign(static_cast<std::size_t>(total_), {});
    for (int n = 0; n < n_old_; ++n) {
      if (removed_.contains(n)) continue;
      for (ValueId v : g_.node(n).inputs) deps_[static_cast<std::size_t>(n)].push_back(dep_of(resolve(v)));
    }
    for (int k = 0; k < n_new_; ++k) {
      auto& d = deps_[static_cast<std::size_t>(n_old_ + k)];
      for (const Ref& r : fresh_[static_cast<std::size_t>(k)].args) d.push_back(dep_of(r));
      if (fresh_[static_cast<std::size_t>(k)].context)
        d.push_back(dep_of(fresh_[static_cast<std::size_t>(k)].context->sibling));
    }
  }

  // Items that reach no graph output (the replaced nodes' exclusive producers) are dropped while building.
  void mark_reaching_outputs() {
    reaches_output_.assign(static_cast<std::size_t>(total_), 0);
    for (ValueId v : g_.outputs())
      if (const int d = dep_of(resolve(v)); d >= 0) reaches_output_[static_cast<std::size_t>(d)] = 1;
    for (auto it = order_.rbegin(); it != order_.rend(); ++it)
      if (reaches_output_[static_cast<std::size_t>(*it)])
        for (int d : deps_[static_cast<std::size_t>(*it)])
          if (d >= 0) reaches_output_[static_cast<std::size_t>(d)] = 1;
  }

  // A kept node copied onto its (possibly rewired) inputs; false when shape inference rejects it there.
  bool copy_old_node(int i) {
    const Node& n = g_.node(i);
    std::vector<ValueId> ins;
    for (ValueId v : n.inputs) ins.push_back(value_of(resolve(v)));
    const auto kind = n.outputs.empty() ? models::ValueKind::kActivation : g_.value(n.outputs[0]).kind;
    const auto outs = out_.try_add_node(n.op->name, std::move(ins), n.attrs, n.name, kind);
    if (!outs) return false;
    for (std::size_t k = 0; k < outs.value().size() && k < n.outputs.size(); ++k) {
      old_to_new_[static_cast<std::size_t>(n.outputs[k])] = outs.value()[k];
      out_.set_value_name(outs.value()[k], g_.value(n.outputs[k]).name);
    }
    return true;
  }

  const Graph& g_;
  const Match& match_;
  std::vector<NewNode>& fresh_;
  const std::set<NodeId> removed_;
  std::map<ValueId, Ref> remap_;
  const int n_old_, n_new_, total_;
  std::vector<std::vector<int>> deps_;
  std::vector<int> order_;
  std::vector<char> reaches_output_;
  Graph out_;
  std::vector<ValueId> old_to_new_;
  std::vector<std::vector<ValueId>> fresh_outputs_;
};

}  // namespace

std::optional<Graph> apply_match(const Graph& g, const Rule& rule, const Match& match,
                                 std::string_view name_prefix) {
  const std::map<std::string, ValueId> vars(match.bindings.begin(), match.bindings.end());
  const auto roots = match_roots(g, rule, match, vars);
  if (!roots) return std::nullopt;
  TargetBuilder tb(vars);
  std::vector<Ref> replacement;
  for (const auto& eq : rule.outputs) {
    auto r = tb.build(eq.rhs);
    if (!r) return std::nullopt;
    replacement.push_back(*r);
  }
  Rewrite rewrite(g, match, tb.nodes(), *roots, replacement);
  if (!rewrite.order()) return std::nullopt;
  auto out = rewrite.build(name_prefix);
  if (!out) return std::nullopt;
  // Replaced graph outputs keep their names, so results line up with the original's by name.
  for (std::size_t i = 0; i < roots->size(); ++i) {
    const ValueId root = (*roots)[i];
    const bool is_out = std::find(g.outputs().begin(), g.outputs().end(), root) != g.outputs().end();
    if (is_out && replacement[i].node >= 0)
      out->set_value_name(rewrite.value_of(replacement[i]), g.value(root).name);
  }
  return out;
}

Graph copy_sources(const Graph& g, std::vector<ValueId>& map) {
  Graph out(g.name());
  map.assign(g.values().size(), models::kNoValue);
  for (ValueId v = 0; v < static_cast<ValueId>(g.values().size()); ++v) {
    const auto& val = g.value(v);
    if (val.producer < 0)
      map[static_cast<std::size_t>(v)] = out.add_source(val.name, val.type, val.kind, val.data);
  }
  return out;
}

Graph remove_dead_nodes(const Graph& g) {
  std::vector<char> live_value(g.values().size(), 0), live_node(g.nodes().size(), 0);
  for (ValueId v : g.outputs()) live_value[static_cast<std::size_t>(v)] = 1;
  for (NodeId n = static_cast<NodeId>(g.nodes().size()) - 1; n >= 0; --n) {
    const Node& node = g.node(n);
    for (ValueId o : node.outputs)
      if (live_value[static_cast<std::size_t>(o)]) live_node[static_cast<std::size_t>(n)] = 1;
    if (live_node[static_cast<std::size_t>(n)])
      for (ValueId v : node.inputs) live_value[static_cast<std::size_t>(v)] = 1;
  }
  if (std::all_of(live_node.begin(), live_node.end(), [](char c) { return c != 0; })) return g;
  std::vector<ValueId> map;
  Graph out = copy_sources(g, map);
  for (NodeId n = 0; n < static_cast<NodeId>(g.nodes().size()); ++n) {
    if (!live_node[static_cast<std::size_t>(n)]) continue;
    const Node& node = g.node(n);
    std::vector<ValueId> ins;
    for (ValueId v : node.inputs) ins.push_back(map[static_cast<std::size_t>(v)]);
    const auto kind = node.outputs.empty() ? models::ValueKind::kActivation : g.value(node.outputs[0]).kind;
    const auto outs = out.add_node(node.op->name, std::move(ins), node.attrs, node.name, kind);
    for (std::size_t k = 0; k < outs.size(); ++k) {
      map[static_cast<std::size_t>(node.outputs[k])] = outs[k];
      out.set_value_name(outs[k], g.value(node.outputs[k]).name);
    }
  }
  for (ValueId v : g.outputs()) out.mark_output(map[static_cast<std::size_t>(v)]);
  return out;
}

}  // namespace strata::search::subst
