// Pairing of the generator's fingerprint classes into candidate rules, TASO's structural checks and the
// pruning of duplicates (generator_internal.h).
#include <algorithm>
#include <atomic>
#include <set>
#include <stdexcept>

#include <fmt/format.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>

#include "search/subst/coverage.h"
#include "search/subst/generator_internal.h"

namespace strata::search::subst {
namespace {

void collect_operators(const Term& t, std::set<std::string>& out) {
  if (t.is_variable()) return;
  out.insert(to_string(t));
  for (const auto& a : t.args()) collect_operators(a, out);
}

}  // namespace

bool has_unrelated_equations(const Rule& rule) {
  const std::size_t n = rule.outputs.size();
  if (n < 2) return false;
  // Operator nodes of each side of each equation; a graph has no duplicated computation, so an operator
  // subterm occurring in two equations of one side is one shared node.
  std::vector<std::set<std::string>> lhs(n), rhs(n);
  for (std::size_t i = 0; i < n; ++i) {
    collect_operators(rule.outputs[i].lhs, lhs[i]);
    collect_operators(rule.outputs[i].rhs, rhs[i]);
  }
  auto meet = [](const std::set<std::string>& a, const std::set<std::string>& b) {
    return std::any_of(a.begin(), a.end(), [&](const auto& t) { return b.contains(t); });
  };
  // Connected components of "shares an operator on a side"; more than one = a conjunction of smaller rules.
  std::vector<std::size_t> comp(n);
  for (std::size_t i = 0; i < n; ++i) comp[i] = i;
  bool changed = true;
  while (changed) {
    changed = false;
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = i + 1; j < n; ++j) {
        if (comp[i] == comp[j] || !(meet(lhs[i], lhs[j]) || meet(rhs[i], rhs[j]))) continue;
        const auto from = std::max(comp[i], comp[j]), to = std::min(comp[i], comp[j]);
        for (auto& c : comp)
          if (c == from) c = to;
        changed = true;
      }
  }
  return std::any_of(comp.begin(), comp.end(), [&](std::size_t c) { return c != comp[0]; });
}

namespace generator_detail {
namespace {

Term tensor_term(const Enc& g, const std::vector<OpInstance>& ops, int tensor,
                 std::vector<int>& used_inputs) {
  if (tensor < kInputs) {
    used_inputs.push_back(tensor);
    return Term::variable(fmt::format("input_{}", tensor + 1));
  }
  const auto prod = producers(g, ops);
  const int k = prod.op[static_cast<std::size_t>(tensor)];
  const auto& e = g.ops[static_cast<std::size_t>(k)];
  const auto& inst = ops[e.tmpl];
  Op op = inst.op;
  if (is_split(op)) op = prod.out[static_cast<std::size_t>(tensor)] == 0 ? Op::kSplit0 : Op::kSplit1;
  std::vector<Param> params;
  if (op != Op::kTranspose)  // both transposes print alike (TASO's text form drops the shuffle flag)
    for (auto p : inst.params) params.push_back(Param{p, {}});
  std::vector<Term> args;
  for (int a = 0; a < e.nin; ++a)
    args.push_back(tensor_term(g, ops, e.in[static_cast<std::size_t>(a)], used_inputs));
  return Term::apply(op, std::move(params), std::move(args));
}

// All tensors of a graph as values of `store`.
std::vector<ValueId> replay(const Enc& g, ValueStore& store) {
  std::vector<ValueId> ts;
  for (ValueId i = 0; i < kInputs; ++i) ts.push_back(i);
  for (int k = 0; k < g.n; ++k) {
    const auto& e = g.ops[static_cast<std::size_t>(k)];
    std::array<ValueId, 2> args{};
    for (int a = 0; a < e.nin; ++a) args[static_cast<std::size_t>(a)] = ts[e.in[static_cast<std::size_t>(a)]];
    const auto r = store.apply(e.tmpl, std::span(args.data(), e.nin));
    if (r.count == 0) throw std::logic_error("generator: replay failed");
    for (int o = 0; o < r.count; ++o) ts.push_back(r.ids[static_cast<std::size_t>(o)]);
  }
  return ts;
}

// TASO's pass_checks (src/generator/generator.cc) on two graphs over the same inputs: a shared operator
// applied to the same input variables, or a constant on both sides (common subgraph), or single-output graphs
// whose roots are the same instance with at most one argument that is not the same input variable (common
// supergraph). Either makes the pair implied by a smaller one (for constants: by the constant's identities).
bool common_subgraph(const Enc& a, const Enc& b) {
  for (int i = 0; i < a.n; ++i)
    for (int j = 0; j < b.n; ++j) {
      const auto& x = a.ops[static_cast<std::size_t>(i)];
      const auto& y = b.ops[static_cast<std::size_t>(j)];
      if (x.tmpl != y.tmpl) continue;
      bool same = true;
      for (int k = 0; k < x.nin; ++k)
        same = same && x.in[static_cast<std::size_t>(k)] < kInputs &&
               x.in[static_cast<std::size_t>(k)] == y.in[static_cast<std::size_t>(k)];
      if (same) return true;
    }
  return false;
}
bool common_supergraph(const Enc& a, const Enc& b, const std::vector<OpInstance>& ops,
                       const ValueStore& store, const std::vector<ValueId>& av,
                       const std::vector<ValueId>& bv) {
  const auto ao = graph_outputs(a, ops), bo = graph_outputs(b, ops);
  if (ao.size() != 1 || bo.size() != 1) return false;
  const auto& x = a.ops[static_cast<std::size_t>(a.n - 1)];
  const auto& y = b.ops[static_cast<std::size_t>(b.n - 1)];
  if (x.tmpl != y.tmpl || x.nin == 0) return false;
  // TASO's convolution instances are per kernel size: conv(x, w) and conv(x, enlarge(w)) are different ones.
  auto rank = [&](const EncOp& e, const std::vector<ValueId>& v) {
    std::array<ValueId, 2> args{};
    for (int k = 0; k < e.nin; ++k) args[static_cast<std::size_t>(k)] = v[e.in[static_cast<std::size_t>(k)]];
    return taso_rank(ops[e.tmpl], store, std::span(args.data(), e.nin));
  };
  if (rank(x, av) != rank(y, bv)) return false;
  int differ = 0;
  for (int k = 0; k < x.nin; ++k)
    differ += x.in[static_cast<std::size_t>(k)] < kInputs &&
                      x.in[static_cast<std::size_t>(k)] == y.in[static_cast<std::size_t>(k)]
                  ? 0
                  : 1;
  return differ <= 1;
}

// Two centres per class: the graph TASO's search visits first (TASO's star, for comparability) and the
// smallest graph (fewest operators, then TASO's order): every member is also paired with its simplest
// equivalent, so each equivalence to a smaller form is a rule of its own.
std::pair<std::size_t, std::size_t> class_centres(const std::vector<Record>& all, std::size_t b,
                                                  std::size_t e, const std::vector<OpInstance>& ops,
                                                  ValueStore& store) {
  std::size_t first = b, smallest = b;
  std::vector<int> first_key, small_key;
  for (std::size_t i = b; i < e; ++i) {
    const Enc g = unpack(all[i].graph, ops);
    auto key = taso_key(g, ops, store);
    if (i == b || key < first_key) {
      first_key = key;
      first = i;
    }
    key.insert(key.begin(), g.n);
    if (i == b || key < small_key) {
      small_key = std::move(key);
      smallest = i;
    }
  }
  return {first, smallest};
}

// Pairs the outputs of the representative with those of a member by value identity; false when some output
// has no partner.
bool pair_outputs(const ValueStore& store, const std::vector<ValueId>& rv, const std::vector<int>& r_out,
                  const std::vector<ValueId>& mv, const std::vector<int>& m_out, Candidate& cand) {
  std::vector<bool> taken(m_out.size(), false);
  bool ok = true;
  for (int ta : r_out) {
    bool found = false;
    for (std::size_t j = 0; j < m_out.size() && !found; ++j)
      if (!taken[j] && store.identity(rv[static_cast<std::size_t>(ta)]) ==
                           store.identity(mv[static_cast<std::size_t>(m_out[j])])) {
        taken[j] = found = true;
        cand.outputs.emplace_back(ta, m_out[j]);
      }
    ok = ok && found;
  }
  return ok;
}

// The rule of a candidate whose outputs are paired: one equation per output pair, over the inputs used.
void build_rule(Candidate& cand, const Enc& rg, const Enc& mg, const std::vector<OpInstance>& ops) {
  Rule& rule = cand.rule;
  std::vector<int> used;
  for (auto [ta, tb] : cand.outputs)
    rule.outputs.push_back({tensor_term(rg, ops, ta, used), tensor_term(mg, ops, tb, used)});
  std::sort(used.begin(), used.end());
  used.erase(std::unique(used.begin(), used.end()), used.end());
  for (int u : used)
    rule.inputs.push_back({fmt::format("input_{}", u + 1), taso_generator_input_shape(u + 1)});
}

struct ClassCounts {
  std::uint64_t candidates = 0, after_structure = 0;
};

// Candidates of one class [b, e): star around each centre; outputs paired by value; TASO's structural checks
// (common subgraph / supergraph).
std::vector<Candidate> pair_class(const std::vector<Record>& all, std::size_t b, std::size_t e,
                                  const std::vector<OpInstance>& ops, ValueStore& store,
                                  ClassCounts& counts) {
  std::vector<Candidate> out;
  const auto [first, smallest] = class_centres(all, b, e, ops, store);
  for (int centre = 0; centre < 2; ++centre) {
    if (centre == 1 && smallest == first) break;
    const std::size_t rep = centre == 0 ? first : smallest;
    const Enc rg = unpack(all[rep].graph, ops);
    const auto rv = replay(rg, store);
    const auto r_out = graph_outputs(rg, ops);
    for (std::size_t i = b; i < e; ++i) {
      if (i == rep || (centre == 1 && i == first)) continue;  // first-smallest is paired once
      const Enc mg = unpack(all[i].graph, ops);
      const auto mv = replay(mg, store);
      auto m_out = graph_outputs(mg, ops);
      if (m_out.size() != r_out.size()) continue;
      Candidate cand;
      cand.rep = all[rep].graph;
      cand.member = all[i].graph;
      if (!pair_outputs(store, rv, r_out, mv, m_out, cand)) continue;
      ++counts.candidates;
      if (common_subgraph(rg, mg) || common_supergraph(rg, mg, ops, store, rv, mv)) continue;
      ++counts.after_structure;
      build_rule(cand, rg, mg, ops);
      out.push_back(std::move(cand));
    }
  }
  return out;
}

// Keeps the first candidate of each key.
void keep_first_of_each_key(std::vector<Candidate>& stage, const std::vector<std::string>& keys) {
  std::set<std::string> seen;
  std::vector<Candidate> next;
  for (std::size_t i = 0; i < stage.size(); ++i)
    if (seen.insert(keys[i]).second) next.push_back(std::move(stage[i]));
  stage = std::move(next);
}

}  // namespace

std::vector<Candidate> pair_classes(const std::vector<Record>& all,
                                    const std::vector<std::pair<std::size_t, std::size_t>>& classes,
                                    const GeneratorOptions& options, Progress& progress,
                                    GeneratorStats& stats) {
  const auto& ops = options.ops;
  tbb::enumerable_thread_specific<ValueStore> stores([&] { return ValueStore(ops, options.seed); });
  std::vector<std::vector<Candidate>> per_class(classes.size());
  std::atomic<std::uint64_t> candidates{0}, after_structure{0};
  std::atomic<std::size_t> classes_done{0};
  tbb::parallel_for(std::size_t{0}, classes.size(), [&](std::size_t c) {
    auto& store = stores.local();
    if (store.memory_bytes() > (std::size_t{64} << 20)) store.clear();
    ClassCounts counts;
    per_class[c] = pair_class(all, classes[c].first, classes[c].second, ops, store, counts);
    candidates += counts.candidates;
    after_structure += counts.after_structure;
    const auto d = ++classes_done;
    if (std::unique_lock lock(progress.mu, std::try_to_lock); lock.owns_lock()) {
      if (progress.since_last.seconds() > 2.0) {
        progress.since_last.restart();
        progress.say(fmt::format("  pairing: {}/{} classes, {} candidates, {:.1f} s", d, classes.size(),
                                 candidates.load(), progress.elapsed()));
      }
    }
  });
  stats.candidates = candidates;
  stats.after_common_subgraph = after_structure;
  std::vector<Candidate> stage;
  for (auto& v : per_class)
    for (auto& r : v) stage.push_back(std::move(r));
  return stage;
}

void prune_candidates(std::vector<Candidate>& stage, const GeneratorOptions& options, GeneratorStats& stats) {
  // Exact duplicates (same equations, either orientation).
  {
    std::vector<std::string> keys(stage.size());
    tbb::parallel_for(std::size_t{0}, stage.size(), [&](std::size_t i) {
      std::vector<std::string> eqs;
      for (const auto& e : stage[i].rule.outputs) {
        auto l = to_string(e.lhs), r = to_string(e.rhs);
        eqs.push_back(std::min(l, r) + "==" + std::max(l, r));
      }
      std::sort(eqs.begin(), eqs.end());
      keys[i] = fmt::format("{}", fmt::join(eqs, ";"));
    });
    keep_first_of_each_key(stage, keys);
  }
  stats.after_duplicates = stage.size();
  // Input renaming.
  {
    std::vector<std::string> keys(stage.size());
    tbb::parallel_for(std::size_t{0}, stage.size(),
                      [&](std::size_t i) { keys[i] = canonical_form(stage[i].rule); });
    keep_first_of_each_key(stage, keys);
  }
  stats.after_renaming = stage.size();
  // Conjunctions of unrelated equations over separate inputs.
  if (options.prune_unrelated)
    std::erase_if(stage, [](const Candidate& c) { return has_unrelated_equations(c.rule); });
  stats.after_unrelated = stage.size();
}

}  // namespace generator_detail
}  // namespace strata::search::subst
