#include "search/subst/optimizer.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <queue>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <variant>

#include <fmt/format.h>
#include <tbb/parallel_for.h>

#include "search/subst/ir_bridge.h"
#include "search/subst/weight_folding.h"

namespace strata::search::subst {
namespace {

using models::Graph;
using models::Node;
using models::NodeId;
using models::ValueId;

// The lhs of a rule with every distinct subterm (by text) and variable numbered once, so matching keeps its
// state in flat vectors instead of maps keyed by printed terms.
struct LhsIndex {
  std::unordered_map<const Term*, int> term_id;  // applications -> subterm id; variables -> variable id
  std::vector<std::string> var_names;
  int num_terms = 0;

  explicit LhsIndex(const Rule& rule) {
    std::map<std::string, int> by_text, by_var;
    std::function<void(const Term&)> visit = [&](const Term& t) {
      if (t.is_variable()) {
        auto [it, inserted] = by_var.emplace(t.name(), static_cast<int>(var_names.size()));
        if (inserted) var_names.push_back(t.name());
        term_id.emplace(&t, it->second);
        return;
      }
      auto [it, inserted] = by_text.emplace(to_string(t), num_terms);
      if (inserted) ++num_terms;
      term_id.emplace(&t, it->second);
      for (const auto& a : t.args()) visit(a);
    };
    for (const auto& eq : rule.outputs) visit(eq.lhs);
  }
};

struct MatchState {
  std::vector<ValueId> vars;  // by variable id; kNoValue = unbound
  std::vector<ValueId> apps;  // by subterm id: the value it matched
};

class Matcher {
 public:
  // index may be null: operators are then derived per visited node (one-off matches).
  Matcher(const Graph& g, const MatchIndex* index, const LhsIndex& lhs) : g_(g), index_(index), lhs_(lhs) {}

  bool match(const Term& t, ValueId v, MatchState& st) const {
    const int id = lhs_.term_id.at(&t);
    if (t.is_variable()) {
      auto& slot = st.vars[static_cast<std::size_t>(id)];
      if (slot == models::kNoValue) slot = v;
      return slot == v;
    }
    auto& app = st.apps[static_cast<std::size_t>(id)];
    if (app != models::kNoValue) return app == v;
    const auto& val = g_.value(v);
    if (val.producer < 0) return false;
    std::optional<OpInstance> computed;
    if (!index_) {
      computed = from_ir(g_, g_.node(val.producer));
      const Node& n = g_.node(val.producer);
      if (computed && !rules_may_use(n.op->name, n.attrs)) computed.reset();
    }
    const auto& inst = index_ ? index_->instances[static_cast<std::size_t>(val.producer)] : computed;
    if (!inst) return false;
    const Op want = t.op() == Op::split_1 ? Op::split_0 : t.op();
    if (inst->op != want) return false;
    if (val.producer_output != (t.op() == Op::split_1 ? 1 : 0)) return false;
    if (inst->params.size() != t.params().size()) return false;
    for (std::size_t i = 0; i < t.params().size(); ++i)
      if (t.params()[i].is_var() || t.params()[i].value != inst->params[i]) return false;
    const Node& n = g_.node(val.producer);
    if (n.inputs.size() != t.args().size()) return false;
    app = v;
    for (std::size_t i = 0; i < t.args().size(); ++i)
      if (!match(t.args()[i], n.inputs[i], st)) return false;
    return true;
  }

  MatchState empty() const {
    return {std::vector<ValueId>(lhs_.var_names.size(), models::kNoValue),
            std::vector<ValueId>(static_cast<std::size_t>(lhs_.num_terms), models::kNoValue)};
  }

 private:
  const Graph& g_;
  const MatchIndex* index_;
  const LhsIndex& lhs_;
};

// Whether v can be the value of a term with this root operator (cheap pre-filter).
bool root_candidate(const Graph& g, const Term& t, ValueId v) {
  const auto& val = g.value(v);
  if (t.is_variable()) return false;  // a bare-variable lhs is not a rewrite site
  if (val.producer < 0) return false;
  return val.producer_output == (t.op() == Op::split_1 ? 1 : 0);
}

bool shares_variable_with_earlier(const Rule& rule, std::size_t eq) {
  std::vector<std::string> earlier, mine;
  for (std::size_t i = 0; i < eq; ++i) collect_variables(rule.outputs[i].lhs, earlier);
  collect_variables(rule.outputs[eq].lhs, mine);
  return std::any_of(mine.begin(), mine.end(), [&](const std::string& v) {
    return std::find(earlier.begin(), earlier.end(), v) != earlier.end();
  });
}

void match_equations(const Graph& g, const MatchIndex& index, const Matcher& m, const Rule& rule,
                     std::size_t eq, MatchState st, std::vector<ValueId>& roots,
                     std::vector<std::pair<MatchState, std::vector<ValueId>>>& out) {
  if (eq == rule.outputs.size()) {
    out.emplace_back(std::move(st), roots);
    return;
  }
  const Term& t = rule.outputs[eq].lhs;
  if (t.is_variable()) return;
  const Op root_op = t.op() == Op::split_1 ? Op::split_0 : t.op();
  const auto& all = index.by_op[static_cast<std::size_t>(root_op)];
  std::vector<NodeId> near;
  if (eq > 0 && !shares_variable_with_earlier(rule, eq)) {
    // An output of a multi-output rule that shares no input with the earlier ones (relu(a), relu(b) merged
    // through concat) is only paired with operators whose results meet an earlier root's at a common
    // consumer: only there can the concat/split it introduces cancel. All pairs would be quadratic in the
    // graph size and almost all of them useless (docs/subst.md).
    for (ValueId r : roots)
      for (NodeId c : index.consumers[static_cast<std::size_t>(r)])
        for (ValueId in : g.node(c).inputs)
          if (const NodeId p = g.value(in).producer; p >= 0 && std::binary_search(all.begin(), all.end(), p))
            near.push_back(p);
    std::sort(near.begin(), near.end());
    near.erase(std::unique(near.begin(), near.end()), near.end());
  }
  MatchState next;
  for (NodeId n : (eq > 0 && !shares_variable_with_earlier(rule, eq)) ? near : all) {
    const auto& outs = g.node(n).outputs;
    const std::size_t k = t.op() == Op::split_1 ? 1 : 0;
    if (k >= outs.size()) continue;
    const ValueId v = outs[k];
    if (std::find(roots.begin(), roots.end(), v) != roots.end()) continue;
    next.vars.assign(st.vars.begin(), st.vars.end());  // reuses the buffers: most attempts fail
    next.apps.assign(st.apps.begin(), st.apps.end());
    if (!m.match(t, v, next)) continue;
    roots.push_back(v);
    match_equations(g, index, m, rule, eq + 1, next, roots, out);
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

std::uint64_t hash_attrs(const models::Attrs& attrs) {
  std::uint64_t h = 0x6174747273ULL;
  for (const auto& [name, value] : attrs.items()) {
    h = mix(h, hash_text(name));
    h = mix(h, value.index());
    std::visit(
        [&](const auto& x) {
          using X = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<X, std::int64_t>) {
            h = mix(h, static_cast<std::uint64_t>(x));
          } else if constexpr (std::is_same_v<X, double>) {
            h = mix(h, std::bit_cast<std::uint64_t>(x));
          } else if constexpr (std::is_same_v<X, std::string>) {
            h = mix(h, hash_text(x));
          } else {
            for (auto i : x) h = mix(h, static_cast<std::uint64_t>(i));
          }
        },
        value);
  }
  return h;
}

std::uint64_t hash_type(const models::TensorType& t) {
  std::uint64_t h = mix(0x74797065ULL, static_cast<std::uint64_t>(t.dtype));
  for (auto d : t.shape) h = mix(h, static_cast<std::uint64_t>(d));
  return h;
}

}  // namespace

namespace {
std::vector<Match> find_matches_with(const Graph& g, const MatchIndex& index, const LhsIndex& lhs,
                                     const Rule& rule, std::size_t rule_index);
}  // namespace

GraphUses::GraphUses(const Graph& g) : consumers(g.values().size()), is_output(g.values().size(), 0) {
  for (NodeId n = 0; n < static_cast<NodeId>(g.nodes().size()); ++n)
    for (ValueId v : g.node(n).inputs) consumers[static_cast<std::size_t>(v)].push_back(n);
  for (ValueId v : g.outputs()) is_output[static_cast<std::size_t>(v)] = 1;
}

MatchIndex::MatchIndex(const Graph& g) : GraphUses(g), instances(g.nodes().size()) {
  for (NodeId n = 0; n < static_cast<NodeId>(g.nodes().size()); ++n) {
    const Node& node = g.node(n);
    auto inst = from_ir(g, node);
    if (!inst || !rules_may_use(node.op->name, node.attrs)) continue;
    by_op[static_cast<std::size_t>(inst->op)].push_back(n);
    instances[static_cast<std::size_t>(n)] = std::move(inst);
  }
}

std::vector<Match> find_matches(const Graph& g, const Rule& rule, std::size_t rule_index) {
  return find_matches(g, MatchIndex(g), rule, rule_index);
}

std::vector<Match> find_matches(const Graph& g, const MatchIndex& index, const Rule& rule,
                                std::size_t rule_index) {
  return find_matches_with(g, index, LhsIndex(rule), rule, rule_index);
}

namespace {

std::vector<Match> find_matches_with(const Graph& g, const MatchIndex& index, const LhsIndex& lhs,
                                     const Rule& rule, std::size_t rule_index) {
  std::vector<Match> result;
  if (rule.outputs.empty()) return result;
  const Matcher m(g, &index, lhs);
  std::vector<std::pair<MatchState, std::vector<ValueId>>> raw;
  std::vector<ValueId> roots;
  match_equations(g, index, m, rule, 0, m.empty(), roots, raw);
  for (auto& [st, rts] : raw) {
    std::vector<NodeId> nodes;
    for (ValueId v : st.apps)
      if (v != models::kNoValue) nodes.push_back(g.value(v).producer);
    std::sort(nodes.begin(), nodes.end());
    nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
    auto inside = [&](NodeId n) { return std::binary_search(nodes.begin(), nodes.end(), n); };
    bool ok = true;
    // A variable bound to a value computed inside the match would lose its producer.
    for (ValueId v : st.vars)
      if (v == models::kNoValue || (g.value(v).producer >= 0 && inside(g.value(v).producer))) ok = false;
    for (NodeId n : nodes) {
      for (ValueId o : g.node(n).outputs) {
        if (std::find(rts.begin(), rts.end(), o) != rts.end()) continue;
        bool external = index.is_output[static_cast<std::size_t>(o)] != 0;
        for (NodeId c : index.consumers[static_cast<std::size_t>(o)])
          if (!inside(c)) external = true;
        if (external) ok = false;
      }
    }
    if (!ok) continue;
    Match match;
    match.rule = rule_index;
    match.nodes = std::move(nodes);
    for (std::size_t i = 0; i < st.vars.size(); ++i)
      match.bindings.emplace_back(lhs.var_names[i], st.vars[i]);
    std::sort(match.bindings.begin(), match.bindings.end());
    result.push_back(std::move(match));
  }
  std::sort(result.begin(), result.end());  // all of one rule: by nodes, then bindings
  result.erase(std::unique(result.begin(), result.end()), result.end());
  return result;
}

// A value of the graph being built: an existing value or output `output` of new node `node`.
struct Ref {
  ValueId old = models::kNoValue;
  int node = -1;
  int output = 0;
};

// How a nullary constant of the target graph takes its shape from its context (as in TASO's generator,
// constants are sized by the operator that consumes them).
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

// TASO's split point of value v along `axis` (ir_bridge.h): one producer per value.
std::optional<std::int64_t> concat_boundary(const Graph& g, ValueId v, std::int64_t axis, int depth) {
  return subst::concat_boundary(v, axis, depth, [&g](std::int64_t id) {
    std::vector<SplitTraceStep> steps;
    const auto& val = g.value(static_cast<ValueId>(id));
    if (val.producer < 0) return steps;
    const Node& n = g.node(val.producer);
    SplitTraceStep& s = steps.emplace_back();
    s.op = n.op;
    s.attrs = &n.attrs;
    for (ValueId in : n.inputs) {
      s.inputs.push_back(g.type(in));
      s.children.push_back(in);
    }
    s.output = val.type;
    return steps;
  });
}

// Emits one node of a rule's target graph into `out` (inputs already there); nullopt when the rule operator
// cannot be expressed on these shapes. Throws GraphError when shape inference rejects it.
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
  if (inst.op == Op::split_0 || inst.op == Op::split_1) {
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
  if (!rules_may_use(ir->name, ir->attrs)) return std::nullopt;
  return out.add_node(ir->name, std::move(ins), ir->attrs, name_prefix + std::string(ir->name));
}

}  // namespace

std::optional<Graph> apply_match(const Graph& g, const Rule& rule, const Match& match,
                                 std::string_view name_prefix) {
  const std::map<std::string, ValueId> vars(match.bindings.begin(), match.bindings.end());
  // Re-derive the lhs roots of this match.
  std::vector<ValueId> roots;
  {
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
  // Items that reach no graph output (the replaced nodes' exclusive producers) are dropped while building.
  std::vector<char> reaches_output(static_cast<std::size_t>(total), 0);
  for (ValueId v : g.outputs())
    if (const int d = dep_of(resolve(v)); d >= 0) reaches_output[static_cast<std::size_t>(d)] = 1;
  for (auto it = order.rbegin(); it != order.rend(); ++it)
    if (reaches_output[static_cast<std::size_t>(*it)])
      for (int d : deps[static_cast<std::size_t>(*it)])
        if (d >= 0) reaches_output[static_cast<std::size_t>(d)] = 1;

  std::vector<ValueId> old_to_new;
  Graph out = copy_sources(g, old_to_new);
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
      if (!reaches_output[static_cast<std::size_t>(i)]) continue;
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
      for (const Ref& r : nn.args) ins.push_back(value_of(r));
      const ValueId sibling = nn.context ? value_of(nn.context->sibling) : models::kNoValue;
      auto outs = emit_new_node(out, nn, std::move(ins), sibling, fmt::format("{}{}_", name_prefix, k));
      if (!outs) return std::nullopt;
      fresh_outputs[static_cast<std::size_t>(k)] = std::move(*outs);
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

namespace {

enum class Estimate : std::uint8_t { ok, rejected, unknown };

// The predicted time of a rule's target graph alone, built on stand-ins for the bound values (weights and
// weight-only values as parameters, so they fold). The rewritten graph's cost is then the current cost minus
// the matched nodes plus this, without rebuilding the graph; dead producers of dropped variables only make
// the real graph cheaper. `unknown` when a split point lies outside the target graph.
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
    if (!tb.build(eq.rhs)) return {Estimate::rejected, 0};
  const auto& fresh = tb.nodes();
  new_nodes = fresh.size();
  std::vector<std::vector<ValueId>> outs(fresh.size());
  auto value_of = [&](const Ref& r) -> ValueId {
    if (r.node < 0) return r.old;
    const auto& o = outs[static_cast<std::size_t>(r.node)];
    return static_cast<std::size_t>(r.output) < o.size() ? o[static_cast<std::size_t>(r.output)]
                                                         : models::kNoValue;
  };
  try {
    for (std::size_t k = 0; k < fresh.size(); ++k) {
      const auto& nn = fresh[k];
      std::vector<ValueId> ins;
      for (const Ref& r : nn.args) ins.push_back(value_of(r));
      const bool split = nn.term->op() == Op::split_0 || nn.term->op() == Op::split_1;
      if (split && !ins.empty() && ins[0] != models::kNoValue &&
          !concat_boundary(scratch, ins[0], nn.term->params()[0].value, 8))
        return {Estimate::unknown, 0};
      const ValueId sibling = nn.context ? value_of(nn.context->sibling) : models::kNoValue;
      auto o = emit_new_node(scratch, nn, std::move(ins), sibling, "t");
      if (!o) return {Estimate::rejected, 0};
      outs[k] = std::move(*o);
    }
  } catch (const models::GraphError&) {
    return {Estimate::rejected, 0};
  }
  double removed = 0;
  for (NodeId n : match.nodes) removed += costs.node[static_cast<std::size_t>(n)];
  return {Estimate::ok, costs.total - removed + graph_cost(scratch, cost)};
}

}  // namespace

std::string graph_listing(const Graph& g) {
  std::string out = fmt::format("graph {}: {} nodes\n", g.name(), g.nodes().size());
  for (const auto& v : g.values())
    if (v.producer < 0)
      out += fmt::format("  {} {} : {}\n", models::value_kind_name(v.kind), v.name, models::type_str(v.type));
  for (const Node& n : g.nodes()) {
    std::vector<std::string_view> outs, ins;
    std::vector<std::string> types;
    for (ValueId v : n.outputs) {
      outs.push_back(g.value(v).name);
      types.push_back(models::type_str(g.type(v)));
    }
    for (ValueId v : n.inputs) ins.push_back(g.value(v).name);
    out += fmt::format("  {} = {}[{}]({}) : {}    # {}\n", fmt::join(outs, ", "), n.op->name, n.attrs.str(),
                       fmt::join(ins, ", "), fmt::join(types, ", "), n.name);
  }
  std::vector<std::string_view> outs;
  for (ValueId v : g.outputs()) outs.push_back(g.value(v).name);
  out += fmt::format("  outputs: {}\n", fmt::join(outs, ", "));
  return out;
}

std::uint64_t graph_hash(const Graph& g) {
  std::vector<std::uint64_t> vh(g.values().size(), 0);
  std::vector<std::uint64_t> nh;
  for (ValueId v = 0; v < static_cast<ValueId>(g.values().size()); ++v) {
    const auto& val = g.value(v);
    if (val.producer < 0) vh[static_cast<std::size_t>(v)] = mix(hash_text(val.name), hash_type(val.type));
  }
  for (const Node& n : g.nodes()) {
    std::uint64_t h = mix(hash_text(n.op->name), hash_attrs(n.attrs));
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
  // A candidate waiting in the queue: a rule match on a parent state, materialized only when popped (most
  // candidates never are), or a graph already built (hand-written transformations, or a rule whose cost
  // could not be predicted without building it).
  struct Pending {
    double estimate = 0;
    std::size_t parent = 0;
    std::size_t rule = 0;
    Match match;
    std::optional<Graph> graph;
    AppliedSubstitution step;
    std::function<std::optional<Graph>(const Graph&)> xfer;  // hand-written transformation site
  };
  std::vector<State> states;
  std::vector<std::unique_ptr<Pending>> pending;  // null once popped or dropped
  Graph start_graph = remove_dead_nodes(input);
  const double c0 = graph_cost(start_graph, cost);
  const auto max_ops =
      static_cast<std::size_t>(options.max_op_ratio * static_cast<double>(start_graph.nodes().size()));
  std::unordered_set<std::uint64_t> seen{graph_hash(start_graph)};
  states.push_back({std::move(start_graph), c0, {}});
  using Entry = std::pair<double, std::size_t>;  // estimated cost, pending index (earlier first on ties)
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> queue;
  std::size_t best = 0;
  OptimizeResult res{input, c0, c0, {}, 0, 0, 0};

  struct DeltaEstimate {
    Estimate status = Estimate::unknown;
    double delta = 0;
    std::size_t new_nodes = 0;
  };
  std::vector<LhsIndex> lhs_indices;
  for (const auto& r : rules) lhs_indices.emplace_back(r);
  std::unordered_map<std::uint64_t, DeltaEstimate> delta_cache;
  std::mutex cache_mutex;

  auto expand = [&](std::size_t idx) {
    ++res.explored;
    const Graph& current = states[idx].graph;
    const NodeCosts costs = node_costs(current, cost);
    const MatchIndex index(current);
    const double threshold = options.alpha * states[best].cost;
    std::vector<std::uint64_t> node_hash, value_hash;
    for (const Node& n : current.nodes()) node_hash.push_back(hash_text(n.name));
    for (const auto& v : current.values()) value_hash.push_back(hash_text(v.name));
    std::vector<std::vector<Pending>> per_rule(rules.size() + options.xfers.size());
    tbb::parallel_for(std::size_t{0}, per_rule.size(), [&](std::size_t r) {
      if (r >= rules.size()) {
        for (auto& site : options.xfers[r - rules.size()](current, costs, cost)) {
          if (costs.total + site.delta >= threshold) continue;
          Pending p{costs.total + site.delta, idx, r, {}, std::nullopt, {site.name, {}}, {}};
          for (NodeId n : site.nodes) p.step.nodes.push_back(current.node(n).name);
          p.xfer = std::move(site.apply);
          per_rule[r].push_back(std::move(p));
        }
        return;
      }
      for (auto& m : find_matches_with(current, index, lhs_indices[r], rules[r], r)) {
        // The same match (same rule, nodes and bound values, identified by name: rewrites keep the names of
        // the nodes and values they do not replace) recurs in every descendant of the graph it was found in;
        // its cost change is computed once.
        std::uint64_t key = mix(0x6d61746368ULL, r);
        for (NodeId n : m.nodes) key = mix(key, node_hash[static_cast<std::size_t>(n)]);
        for (const auto& [name, v] : m.bindings)
          key = mix(mix(key, value_hash[static_cast<std::size_t>(v)]),
                    costs.folded[static_cast<std::size_t>(v)]);
        DeltaEstimate d;
        bool cached = false;
        {
          std::lock_guard lock(cache_mutex);
          if (auto it = delta_cache.find(key); it != delta_cache.end()) {
            d = it->second;
            cached = true;
          }
        }
        if (!cached) {
          std::size_t new_nodes = 0;
          const auto [status, estimate] = target_cost(current, costs, rules[r], m, cost, new_nodes);
          d = {status, estimate - costs.total, new_nodes};
          if (status == Estimate::unknown) {  // split points outside the target graph: build it once
            const auto next = apply_match(current, rules[r], m, "probe_");
            d = next ? DeltaEstimate{Estimate::ok, graph_cost(*next, cost) - costs.total,
                                     next->nodes().size() + m.nodes.size() - current.nodes().size()}
                     : DeltaEstimate{Estimate::rejected, 0, 0};
          }
          std::lock_guard lock(cache_mutex);
          delta_cache.emplace(key, d);
        }
        if (d.status != Estimate::ok || costs.total + d.delta >= threshold) continue;
        per_rule[r].push_back({costs.total + d.delta, idx, r, std::move(m), std::nullopt, {}, {}});
      }
    });
    for (auto& cands : per_rule)
      for (auto& cand : cands) {
        if (cand.estimate >= options.alpha * states[best].cost) continue;
        pending.push_back(std::make_unique<Pending>(std::move(cand)));
        queue.push({pending.back()->estimate, pending.size() - 1});
        ++res.generated;
      }
    // At most `budget - explored` more graphs are expanded, so candidates ranked far below that can never be
    // reached; dropping them (keeping a wide margin for duplicates and failed rewrites) bounds memory without
    // changing the search.
    const std::size_t keep = 32 * static_cast<std::size_t>(std::max(options.budget - res.explored, 1)) + 4096;
    if (queue.size() > 2 * keep) {
      std::vector<Entry> entries;
      entries.reserve(queue.size());
      while (!queue.empty()) {
        entries.push_back(queue.top());
        queue.pop();
      }
      for (std::size_t i = keep; i < entries.size(); ++i) pending[entries[i].second].reset();
      entries.resize(keep);
      queue = decltype(queue)(std::greater<>{}, std::move(entries));
    }
  };

  expand(0);
  while (!queue.empty() && res.explored < options.budget) {
    const std::size_t pi = queue.top().second;
    queue.pop();
    Pending p = std::move(*pending[pi]);
    pending[pi].reset();
    std::optional<Graph> next = std::move(p.graph);
    if (p.xfer) {
      next = p.xfer(states[p.parent].graph);
    } else if (!next) {
      const Graph& parent = states[p.parent].graph;
      next = apply_match(parent, rules[p.rule], p.match, fmt::format("s{}_", pi));
      p.step.rule = rules[p.rule].name;
      for (NodeId n : p.match.nodes) p.step.nodes.push_back(parent.node(n).name);
    }
    if (!next) continue;
    const NodeCosts next_costs = node_costs(*next, cost);
    // The operator cap counts operators that run per step; weight-only ones are folded before inference.
    std::size_t runtime_ops = 0;
    for (const Node& n : next->nodes())
      runtime_ops += n.outputs.empty() || next_costs.folded[static_cast<std::size_t>(n.outputs[0])] == 0;
    if (runtime_ops > max_ops) continue;
    if (!seen.insert(graph_hash(*next)).second) continue;
    const double c = next_costs.total;
    if (c >= options.alpha * states[best].cost) continue;
    auto path = states[p.parent].path;
    path.push_back(std::move(p.step));
    states.push_back({std::move(*next), c, std::move(path)});
    if (c < states[best].cost) best = states.size() - 1;
    expand(states.size() - 1);
    if (options.progress && res.explored % 50 == 0)
      options.progress(fmt::format("optimize: {} graphs explored, {} candidates, best {:.4f} ms",
                                   res.explored, res.generated, states[best].cost * 1e3));
  }
  res.graph = states[best].graph;
  res.cost_after = states[best].cost;
  res.applied = states[best].path;
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return res;
}

}  // namespace strata::search::subst
