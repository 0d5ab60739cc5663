// Matching rule left-hand sides in a graph (optimizer.h, optimizer_internal.h).
#include <algorithm>
#include <functional>
#include <map>

#include "search/subst/optimizer_internal.h"

namespace strata::search::subst {
namespace optimizer_detail {

LhsIndex::LhsIndex(const Rule& rule) {
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

bool Matcher::match(const Term& t, ValueId v, MatchState& st) const {
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
    if (computed && !rules_may_use(*n.op, n.attrs)) computed.reset();
  }
  const auto& inst = index_ ? index_->instances[static_cast<std::size_t>(val.producer)] : computed;
  if (!inst) return false;
  const Op want = t.op() == Op::kSplit1 ? Op::kSplit0 : t.op();
  if (inst->op != want) return false;
  if (val.producer_output != (t.op() == Op::kSplit1 ? 1 : 0)) return false;
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

bool root_candidate(const Graph& g, const Term& t, ValueId v) {
  const auto& val = g.value(v);
  if (t.is_variable()) return false;  // a bare-variable lhs is not a rewrite site
  if (val.producer < 0) return false;
  return val.producer_output == (t.op() == Op::kSplit1 ? 1 : 0);
}

namespace {

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
  const Op root_op = t.op() == Op::kSplit1 ? Op::kSplit0 : t.op();
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
    const std::size_t k = t.op() == Op::kSplit1 ? 1 : 0;
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

}  // namespace

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

}  // namespace optimizer_detail

using namespace optimizer_detail;

GraphUses::GraphUses(const Graph& g) : consumers(g.values().size()), is_output(g.values().size(), 0) {
  for (NodeId n = 0; n < static_cast<NodeId>(g.nodes().size()); ++n)
    for (ValueId v : g.node(n).inputs) consumers[static_cast<std::size_t>(v)].push_back(n);
  for (ValueId v : g.outputs()) is_output[static_cast<std::size_t>(v)] = 1;
}

MatchIndex::MatchIndex(const Graph& g) : GraphUses(g), instances(g.nodes().size()) {
  for (NodeId n = 0; n < static_cast<NodeId>(g.nodes().size()); ++n) {
    const Node& node = g.node(n);
    auto inst = from_ir(g, node);
    if (!inst || !rules_may_use(*node.op, node.attrs)) continue;
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

}  // namespace strata::search::subst
