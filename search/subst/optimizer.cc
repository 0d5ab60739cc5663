#include "search/subst/optimizer.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <queue>
#include <set>
#include <unordered_set>

#include <fmt/format.h>
#include <tbb/parallel_for.h>

#include "search/subst/ir_bridge.h"

namespace strata::search::subst {
namespace {

using models::Graph;
using models::Node;
using models::NodeId;
using models::ValueId;

// Consumers of every value, in node order.
std::vector<std::vector<NodeId>> consumers_of(const Graph& g) {
  std::vector<std::vector<NodeId>> c(g.values().size());
  for (NodeId n = 0; n < static_cast<NodeId>(g.nodes().size()); ++n)
    for (ValueId v : g.node(n).inputs) c[static_cast<std::size_t>(v)].push_back(n);
  return c;
}

struct MatchState {
  std::map<std::string, ValueId> vars;
  std::map<std::string, ValueId> apps;  // lhs subterm (prefix text) -> the value it matched
};

class Matcher {
 public:
  explicit Matcher(const Graph& g) : g_(g) {}

  bool match(const Term& t, ValueId v, MatchState& st) const {
    if (t.is_variable()) {
      auto [it, inserted] = st.vars.emplace(t.name(), v);
      return inserted || it->second == v;
    }
    const std::string key = to_string(t);
    if (auto it = st.apps.find(key); it != st.apps.end()) return it->second == v;
    const auto& val = g_.value(v);
    if (val.producer < 0) return false;
    const Node& n = g_.node(val.producer);
    const auto inst = from_ir(g_, n);
    if (!inst) return false;
    const Op want = t.op() == Op::split_1 ? Op::split_0 : t.op();
    if (inst->op != want) return false;
    if (val.producer_output != (t.op() == Op::split_1 ? 1 : 0)) return false;
    if (inst->params.size() != t.params().size()) return false;
    for (std::size_t i = 0; i < t.params().size(); ++i)
      if (t.params()[i].is_var() || t.params()[i].value != inst->params[i]) return false;
    if (n.inputs.size() != t.args().size()) return false;
    st.apps.emplace(key, v);
    for (std::size_t i = 0; i < t.args().size(); ++i)
      if (!match(t.args()[i], n.inputs[i], st)) return false;
    return true;
  }

 private:
  const Graph& g_;
};

// Whether v can be the value of a term with this root operator (cheap pre-filter).
bool root_candidate(const Graph& g, const Term& t, ValueId v) {
  const auto& val = g.value(v);
  if (t.is_variable()) return false;  // a bare-variable lhs is not a rewrite site
  if (val.producer < 0) return false;
  return val.producer_output == (t.op() == Op::split_1 ? 1 : 0);
}

void match_equations(const Graph& g, const Matcher& m, const Rule& rule, std::size_t eq, MatchState st,
                     std::vector<ValueId>& roots,
                     std::vector<std::pair<MatchState, std::vector<ValueId>>>& out) {
  if (eq == rule.outputs.size()) {
    out.emplace_back(std::move(st), roots);
    return;
  }
  const Term& t = rule.outputs[eq].lhs;
  for (ValueId v = 0; v < static_cast<ValueId>(g.values().size()); ++v) {
    if (!root_candidate(g, t, v) || std::find(roots.begin(), roots.end(), v) != roots.end()) continue;
    MatchState next = st;
    if (!m.match(t, v, next)) continue;
    roots.push_back(v);
    match_equations(g, m, rule, eq + 1, std::move(next), roots, out);
    roots.pop_back();
  }
}

std::uint64_t mix(std::uint64_t h, std::uint64_t x) {
  h ^= x + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  h ^= h >> 31;
  h *= 0xbf58476d1ce4e5b9ULL;
  return h ^ (h >> 29);
}

std::uint64_t hash_text(std::string_view s) {
  std::uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
  return h;
}

}  // namespace

std::vector<Match> find_matches(const Graph& g, const Rule& rule, std::size_t rule_index) {
  std::vector<Match> result;
  if (rule.outputs.empty()) return result;
  const Matcher m(g);
  std::vector<std::pair<MatchState, std::vector<ValueId>>> raw;
  std::vector<ValueId> roots;
  match_equations(g, m, rule, 0, MatchState{}, roots, raw);
  if (raw.empty()) return result;
  const auto consumers = consumers_of(g);
  std::vector<char> is_output(g.values().size(), 0);
  for (ValueId v : g.outputs()) is_output[static_cast<std::size_t>(v)] = 1;
  for (auto& [st, rts] : raw) {
    std::set<NodeId> nodes;
    for (const auto& [key, v] : st.apps) nodes.insert(g.value(v).producer);
    bool ok = true;
    // A variable bound to a value computed inside the match would lose its producer.
    for (const auto& [name, v] : st.vars)
      if (g.value(v).producer >= 0 && nodes.contains(g.value(v).producer)) ok = false;
    for (NodeId n : nodes) {
      for (ValueId o : g.node(n).outputs) {
        const bool root = std::find(rts.begin(), rts.end(), o) != rts.end();
        if (root) continue;
        bool external = is_output[static_cast<std::size_t>(o)] != 0;
        for (NodeId c : consumers[static_cast<std::size_t>(o)])
          if (!nodes.contains(c)) external = true;
        if (external) ok = false;
      }
    }
    if (!ok) continue;
    Match match;
    match.rule = rule_index;
    match.nodes.assign(nodes.begin(), nodes.end());
    match.bindings.assign(st.vars.begin(), st.vars.end());
    result.push_back(std::move(match));
  }
  std::sort(result.begin(), result.end(), [](const Match& a, const Match& b) {
    return std::tie(a.nodes, a.bindings) < std::tie(b.nodes, b.bindings);
  });
  result.erase(std::unique(result.begin(), result.end(),
                           [](const Match& a, const Match& b) {
                             return a.nodes == b.nodes && a.bindings == b.bindings;
                           }),
               result.end());
  return result;
}

namespace {

// A value of the graph being built: an existing value or output `output` of new node `node`.
struct Ref {
  ValueId old = models::kNoValue;
  int node = -1;
  int output = 0;
};

// How a nullary constant of the target graph takes its shape from its context (taso.md §2.2: constants are
// sized by the operator that consumes them).
struct ConstantContext {
  Op parent = Op::ewadd;
  std::size_t arg = 0;
  Ref sibling;
};

struct NewNode {
  const Term* term = nullptr;
  std::vector<Ref> args;
  std::optional<ConstantContext> context;
};

class TargetBuilder {
 public:
  TargetBuilder(const std::map<std::string, ValueId>& vars) : vars_(vars) {}

  // nullopt: a variable of the rhs that the lhs does not bind.
  std::optional<Ref> build(const Term& t, std::optional<ConstantContext> ctx = std::nullopt) {
    if (t.is_variable()) {
      auto it = vars_.find(t.name());
      if (it == vars_.end()) return std::nullopt;
      return Ref{it->second, -1, 0};
    }
    std::string key = to_string(t);
    int output = 0;
    if (t.op() == Op::split_0 || t.op() == Op::split_1) {
      output = t.op() == Op::split_1 ? 1 : 0;
      key = "split" + key.substr(key.find('('));  // split_0 and split_1 of one tensor share one IR node
    }
    if (auto it = memo_.find(key); it != memo_.end()) return Ref{models::kNoValue, it->second, output};
    NewNode nn;
    nn.term = &t;
    const auto& args = t.args();
    nn.args.resize(args.size());
    // Non-constant arguments first: a constant's shape comes from its sibling.
    for (int pass = 0; pass < 2; ++pass) {
      for (std::size_t i = 0; i < args.size(); ++i) {
        const bool constant = !args[i].is_variable() && op_info(args[i].op()).tensor_args == 0;
        const bool through_enlarge = !args[i].is_variable() && args[i].op() == Op::enlarge;
        if ((pass == 0) == (constant || through_enlarge)) continue;
        std::optional<ConstantContext> child;
        if (constant || through_enlarge) {
          if (t.op() == Op::enlarge) {
            child = ctx;
          } else if (args.size() == 2) {
            child = ConstantContext{t.op(), i, nn.args[1 - i]};
          }
        }
        auto r = build(args[i], child);
        if (!r) return std::nullopt;
        nn.args[i] = *r;
      }
    }
    if (op_info(t.op()).tensor_args == 0) {
      if (!ctx) return std::nullopt;
      nn.context = ctx;
    }
    nodes_.push_back(std::move(nn));
    const int id = static_cast<int>(nodes_.size()) - 1;
    memo_.emplace(std::move(key), id);
    return Ref{models::kNoValue, id, output};
  }

  std::vector<NewNode>& nodes() { return nodes_; }

 private:
  const std::map<std::string, ValueId>& vars_;
  std::map<std::string, int> memo_;
  std::vector<NewNode> nodes_;
};

std::optional<models::Shape> constant_shape(const ConstantContext& c, const models::Shape& sibling) {
  switch (c.parent) {
    case Op::conv2d:  // Iconv / Cpool as weight: one kernel per input channel
      if (c.arg != 1 || sibling.size() != 4) return std::nullopt;
      return models::Shape{sibling[1]};
    case Op::matmul:
      if (sibling.size() != 2) return std::nullopt;
      return c.arg == 1 ? models::Shape{sibling[1], sibling[1]} : models::Shape{sibling[0], sibling[0]};
    case Op::ewmul:
    case Op::ewadd:
      return sibling;
    default:
      return std::nullopt;
  }
}

// TASO's split point: the most recent concatenation boundary along `axis` of v, traced back through the
// operators that carry that axis from one input to their output (element-wise, matmul, conv2d
// channels/batch).
std::optional<std::int64_t> concat_boundary(const Graph& g, ValueId v, std::int64_t axis, int depth) {
  const auto& val = g.value(v);
  if (depth <= 0 || val.producer < 0) return std::nullopt;
  const Node& n = g.node(val.producer);
  const std::string_view op = n.op->name;
  const auto rank = static_cast<std::int64_t>(val.type.shape.size());
  if (op == "concat" && n.inputs.size() == 2) {
    auto a = n.attrs.i("axis");
    if (a < 0) a += rank;
    if (a == axis) return g.type(n.inputs[0]).shape[static_cast<std::size_t>(axis)];
    return std::nullopt;
  }
  if (op == "relu" || op == "ewadd" || op == "ewmul" || op == "scalar_mul") {
    for (ValueId in : n.inputs)
      if (g.type(in).shape == val.type.shape)
        if (auto p = concat_boundary(g, in, axis, depth - 1)) return p;
    return std::nullopt;
  }
  if (op == "matmul" && rank == 2 && n.inputs.size() == 2)
    return concat_boundary(g, n.inputs[axis == 0 ? 0 : 1], axis, depth - 1);
  if (op == "conv2d" && (axis == 0 || axis == 1) && n.inputs.size() >= 2)
    return concat_boundary(g, n.inputs[axis == 0 ? 0 : 1], 0, depth - 1);
  return std::nullopt;
}

}  // namespace

std::optional<Graph> apply_match(const Graph& g, const Rule& rule, const Match& match,
                                 std::string_view name_prefix) {
  const std::map<std::string, ValueId> vars(match.bindings.begin(), match.bindings.end());
  // Re-derive the lhs roots of this match.
  std::vector<ValueId> roots;
  {
    const Matcher m(g);
    MatchState st;
    st.vars = vars;
    const std::set<NodeId> nodes(match.nodes.begin(), match.nodes.end());
    for (const auto& eq : rule.outputs) {
      ValueId found = models::kNoValue;
      for (NodeId n : match.nodes) {
        for (ValueId o : g.node(n).outputs) {
          if (found != models::kNoValue) break;
          if (!root_candidate(g, eq.lhs, o)) continue;
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
  }
  TargetBuilder tb(vars);
  std::vector<Ref> replacement;
  for (const auto& eq : rule.outputs) {
    auto r = tb.build(eq.rhs);
    if (!r) return std::nullopt;
    replacement.push_back(*r);
  }
  auto& fresh = tb.nodes();
  const std::set<NodeId> removed(match.nodes.begin(), match.nodes.end());
  std::map<ValueId, Ref> remap;
  for (std::size_t i = 0; i < roots.size(); ++i) remap[roots[i]] = replacement[i];
  auto resolve = [&](ValueId v) {
    auto it = remap.find(v);
    return it == remap.end() ? Ref{v, -1, 0} : it->second;
  };

  // Items: old nodes 0..N-1 (not removed), new nodes N..N+M-1. Kahn's algorithm ordered by original position
  // (new nodes at the first matched node) gives a topological order or detects a cycle.
  const int n_old = static_cast<int>(g.nodes().size());
  const int n_new = static_cast<int>(fresh.size());
  const int total = n_old + n_new;
  std::vector<std::vector<int>> deps(static_cast<std::size_t>(total));
  auto dep_of = [&](const Ref& r) -> int {
    if (r.node >= 0) return n_old + r.node;
    const NodeId p = g.value(r.old).producer;
    return p;  // -1 for sources
  };
  for (int n = 0; n < n_old; ++n) {
    if (removed.contains(n)) continue;
    for (ValueId v : g.node(n).inputs) deps[static_cast<std::size_t>(n)].push_back(dep_of(resolve(v)));
  }
  for (int k = 0; k < n_new; ++k) {
    auto& d = deps[static_cast<std::size_t>(n_old + k)];
    for (const Ref& r : fresh[static_cast<std::size_t>(k)].args) d.push_back(dep_of(r));
    if (fresh[static_cast<std::size_t>(k)].context)
      d.push_back(dep_of(fresh[static_cast<std::size_t>(k)].context->sibling));
  }
  std::vector<int> indegree(static_cast<std::size_t>(total), 0);
  std::vector<std::vector<int>> users(static_cast<std::size_t>(total));
  for (int i = 0; i < total; ++i) {
    if (i < n_old && removed.contains(i)) continue;
    for (int d : deps[static_cast<std::size_t>(i)]) {
      if (d < 0) continue;
      if (d < n_old && removed.contains(d)) return std::nullopt;  // would read a removed value
      ++indegree[static_cast<std::size_t>(i)];
      users[static_cast<std::size_t>(d)].push_back(i);
    }
  }
  const int anchor = match.nodes.front();
  auto order_key = [&](int i) { return i < n_old ? std::pair{i, 0} : std::pair{anchor, i - n_old - n_new}; };
  auto later = [&](int a, int b) { return order_key(a) > order_key(b); };
  std::priority_queue<int, std::vector<int>, decltype(later)> ready(later);
  int live = 0;
  for (int i = 0; i < total; ++i) {
    if (i < n_old && removed.contains(i)) continue;
    ++live;
    if (indegree[static_cast<std::size_t>(i)] == 0) ready.push(i);
  }
  std::vector<int> order;
  while (!ready.empty()) {
    const int i = ready.top();
    ready.pop();
    order.push_back(i);
    for (int u : users[static_cast<std::size_t>(i)])
      if (--indegree[static_cast<std::size_t>(u)] == 0) ready.push(u);
  }
  if (static_cast<int>(order.size()) != live) return std::nullopt;  // the rewrite closes a cycle

  Graph out(g.name());
  std::vector<ValueId> old_to_new(g.values().size(), models::kNoValue);
  for (ValueId v = 0; v < static_cast<ValueId>(g.values().size()); ++v) {
    const auto& val = g.value(v);
    if (val.producer >= 0) continue;
    old_to_new[static_cast<std::size_t>(v)] = out.add_source(val.name, val.type, val.kind, val.data);
  }
  std::vector<std::vector<ValueId>> fresh_outputs(static_cast<std::size_t>(n_new));
  auto value_of = [&](const Ref& r) -> ValueId {
    if (r.node >= 0) {
      const auto& outs = fresh_outputs[static_cast<std::size_t>(r.node)];
      return static_cast<std::size_t>(r.output) < outs.size() ? outs[static_cast<std::size_t>(r.output)]
                                                              : models::kNoValue;
    }
    return old_to_new[static_cast<std::size_t>(r.old)];
  };
  try {
    for (int i : order) {
      if (i < n_old) {
        const Node& n = g.node(i);
        std::vector<ValueId> ins;
        for (ValueId v : n.inputs) ins.push_back(value_of(resolve(v)));
        const auto kind = n.outputs.empty() ? models::ValueKind::kActivation : g.value(n.outputs[0]).kind;
        const auto outs = out.add_node(n.op->name, std::move(ins), n.attrs, n.name, kind);
        for (std::size_t k = 0; k < outs.size() && k < n.outputs.size(); ++k) {
          old_to_new[static_cast<std::size_t>(n.outputs[k])] = outs[k];
          out.set_value_name(outs[k], g.value(n.outputs[k]).name);
        }
        continue;
      }
      const int k = i - n_old;
      const auto& nn = fresh[static_cast<std::size_t>(k)];
      std::vector<ValueId> ins;
      std::vector<models::Shape> shapes;
      for (const Ref& r : nn.args) {
        ins.push_back(value_of(r));
        if (ins.back() == models::kNoValue) return std::nullopt;
        shapes.push_back(out.type(ins.back()).shape);
      }
      OpInstance inst{nn.term->op(), {}};
      for (const auto& p : nn.term->params()) {
        if (p.is_var()) return std::nullopt;
        inst.params.push_back(p.value);
      }
      std::int64_t split_point = 0;
      if (inst.op == Op::split_0 || inst.op == Op::split_1) {
        auto point = concat_boundary(out, ins[0], inst.params[0], 8);
        if (!point) return std::nullopt;
        split_point = *point;
      }
      models::Shape cshape;
      if (nn.context) {
        const ValueId sib = value_of(nn.context->sibling);
        if (sib == models::kNoValue) return std::nullopt;
        auto s = constant_shape(*nn.context, out.type(sib).shape);
        if (!s) return std::nullopt;
        cshape = *s;
      }
      auto ir = to_ir(inst, shapes, split_point, cshape);
      if (!ir) return std::nullopt;
      fresh_outputs[static_cast<std::size_t>(k)] =
          out.add_node(ir->name, std::move(ins), ir->attrs, fmt::format("{}{}_{}", name_prefix, k, ir->name));
    }
  } catch (const models::GraphError&) {
    return std::nullopt;
  }
  for (ValueId v : g.outputs()) {
    const ValueId nv = value_of(resolve(v));
    if (nv == models::kNoValue) return std::nullopt;
    out.mark_output(nv);
  }
  // Replaced graph outputs keep their names, so results line up with the original's by name.
  for (std::size_t i = 0; i < roots.size(); ++i) {
    const bool is_out = std::find(g.outputs().begin(), g.outputs().end(), roots[i]) != g.outputs().end();
    if (is_out && replacement[i].node >= 0)
      out.set_value_name(value_of(replacement[i]), g.value(roots[i]).name);
  }
  return remove_dead_nodes(out);
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
  Graph out(g.name());
  std::vector<ValueId> map(g.values().size(), models::kNoValue);
  for (ValueId v = 0; v < static_cast<ValueId>(g.values().size()); ++v) {
    const auto& val = g.value(v);
    if (val.producer < 0)
      map[static_cast<std::size_t>(v)] = out.add_source(val.name, val.type, val.kind, val.data);
  }
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

double graph_cost(const Graph& g, const models::CostModel& cost) {
  // Nodes computed from weights and constants only (a concatenation of two weight matrices, an enlarged
  // kernel) are folded once before inference, as in TASO, and cost nothing per step.
  std::vector<char> folded(g.values().size(), 0);
  for (ValueId v = 0; v < static_cast<ValueId>(g.values().size()); ++v) {
    const auto k = g.value(v).kind;
    if (g.value(v).producer < 0 && (k == models::ValueKind::kParam || k == models::ValueKind::kConstant))
      folded[static_cast<std::size_t>(v)] = 1;
  }
  double total = 0;
  for (const Node& n : g.nodes()) {
    const bool foldable = std::all_of(n.inputs.begin(), n.inputs.end(),
                                      [&](ValueId v) { return folded[static_cast<std::size_t>(v)] != 0; });
    if (foldable) {
      for (ValueId o : n.outputs) folded[static_cast<std::size_t>(o)] = 1;
      continue;
    }
    total += cost.node_cost(g, n).seconds;
  }
  return total;
}

std::uint64_t graph_hash(const Graph& g) {
  std::vector<std::uint64_t> vh(g.values().size(), 0);
  std::vector<std::uint64_t> nh;
  for (ValueId v = 0; v < static_cast<ValueId>(g.values().size()); ++v) {
    const auto& val = g.value(v);
    if (val.producer < 0)
      vh[static_cast<std::size_t>(v)] = mix(hash_text(val.name), hash_text(models::type_str(val.type)));
  }
  for (const Node& n : g.nodes()) {
    std::uint64_t h = mix(hash_text(n.op->name), hash_text(n.attrs.str()));
    for (ValueId v : n.inputs) h = mix(h, vh[static_cast<std::size_t>(v)]);
    for (std::size_t k = 0; k < n.outputs.size(); ++k)
      vh[static_cast<std::size_t>(n.outputs[k])] = mix(h, k + 1);
    nh.push_back(h);
  }
  std::sort(nh.begin(), nh.end());
  std::uint64_t h = 0x5354524154410000ULL;
  for (auto x : nh) h = mix(h, x);
  for (ValueId v : g.outputs()) h = mix(h, vh[static_cast<std::size_t>(v)]);
  return h;
}

OptimizeResult optimize(const Graph& input, std::span<const Rule> rules, const models::CostModel& cost,
                        const OptimizerOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  struct State {
    Graph graph;
    double cost = 0;
    std::vector<AppliedSubstitution> path;
  };
  struct Candidate {
    Graph graph;
    double cost = 0;
    std::uint64_t hash = 0;
    AppliedSubstitution step;
  };
  std::vector<State> states;
  Graph start_graph = remove_dead_nodes(input);
  const double c0 = graph_cost(start_graph, cost);
  const auto max_ops =
      static_cast<std::size_t>(options.max_op_ratio * static_cast<double>(start_graph.nodes().size()));
  states.push_back({start_graph, c0, {}});
  std::unordered_set<std::uint64_t> seen{graph_hash(start_graph)};
  using Entry = std::pair<double, std::size_t>;  // cost, state index (earlier states first on ties)
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> queue;
  queue.push({c0, 0});
  std::size_t best = 0;
  OptimizeResult res{input, c0, c0, {}, 0, 0, 0};
  while (!queue.empty() && res.explored < options.budget) {
    const auto [c, idx] = queue.top();
    queue.pop();
    ++res.explored;
    if (c < states[best].cost) best = idx;
    const Graph current = states[idx].graph;  // copy: states may grow below
    const auto path = states[idx].path;
    std::vector<std::vector<Candidate>> per_rule(rules.size());
    const int pop = res.explored;
    tbb::parallel_for(std::size_t{0}, rules.size(), [&](std::size_t r) {
      const auto matches = find_matches(current, rules[r], r);
      for (std::size_t mi = 0; mi < matches.size(); ++mi) {
        auto next =
            apply_match(current, rules[r], matches[mi], fmt::format("opt{}_{}_{}_", pop, rules[r].name, mi));
        if (!next || next->nodes().size() > max_ops) continue;
        const double nc = graph_cost(*next, cost);
        AppliedSubstitution step{rules[r].name, {}};
        for (NodeId n : matches[mi].nodes) step.nodes.push_back(current.node(n).name);
        const auto h = graph_hash(*next);
        per_rule[r].push_back({std::move(*next), nc, h, std::move(step)});
      }
    });
    for (auto& cands : per_rule) {
      for (auto& cand : cands) {
        if (cand.cost >= options.alpha * states[best].cost) continue;
        if (!seen.insert(cand.hash).second) continue;
        auto p = path;
        p.push_back(std::move(cand.step));
        states.push_back({std::move(cand.graph), cand.cost, std::move(p)});
        queue.push({cand.cost, states.size() - 1});
        ++res.generated;
        if (cand.cost < states[best].cost) best = states.size() - 1;
      }
    }
    if (options.progress && res.explored % 50 == 0)
      options.progress(fmt::format("optimize: {} graphs explored, {} generated, best {:.4f} ms", res.explored,
                                   res.generated, states[best].cost * 1e3));
  }
  res.graph = states[best].graph;
  res.cost_after = states[best].cost;
  res.applied = states[best].path;
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return res;
}

}  // namespace strata::search::subst
