#include "search/subst/eqsat.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <stdexcept>

#include <fmt/format.h>
#include <tbb/parallel_for.h>
#include <z3++.h>

#include "search/subst/optimizer.h"

namespace strata::search::subst {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

using Bindings = std::vector<ClassId>;

int variable_index(const std::vector<std::string>& vars, const std::string& name) {
  auto it = std::find(vars.begin(), vars.end(), name);
  return it == vars.end() ? -1 : static_cast<int>(it - vars.begin());
}

// A grouped convolution is neither matched nor built (ir_bridge.h: rules_may_use).
bool ungroupable(const Signature& sig) {
  return sig.op && !rules_may_use(sig.op->name, sig.attrs);
}

// Whether e-node n is an instance of the application at the top of pattern t.
bool node_matches(const EGraph& eg, const ENode& n, const Term& t) {
  const auto& op = eg.signature(n.sig).rule_op;
  if (!op) return false;
  const Op want = t.op() == Op::split_1 ? Op::split_0 : t.op();
  if (op->op != want || n.output != (t.op() == Op::split_1 ? 1 : 0)) return false;
  if (ungroupable(eg.signature(n.sig))) return false;
  if (op->params.size() != t.params().size() || n.children.size() != t.args().size()) return false;
  for (std::size_t i = 0; i < t.params().size(); ++i)
    if (t.params()[i].is_var() || t.params()[i].value != op->params[i]) return false;
  return true;
}

// Backtracking e-matching: every extension of `b` under which pattern t denotes class c.
void match_pattern(const EGraph& eg, const Term& t, ClassId c, const Bindings& b,
                   const std::vector<std::string>& vars, std::vector<Bindings>& out) {
  c = eg.find(c);
  if (t.is_variable()) {
    const auto i = static_cast<std::size_t>(variable_index(vars, t.name()));
    if (b[i] < 0) {
      out.push_back(b);
      out.back()[i] = c;
    } else if (b[i] == c) {
      out.push_back(b);
    }
    return;
  }
  for (const ENode& n : eg.eclass(c).nodes) {
    if (!node_matches(eg, n, t)) continue;
    std::vector<Bindings> cur{b};
    for (std::size_t i = 0; i < t.args().size() && !cur.empty(); ++i) {
      std::vector<Bindings> next;
      for (const auto& cb : cur) match_pattern(eg, t.args()[i], n.children[i], cb, vars, next);
      cur = std::move(next);
    }
    out.insert(out.end(), std::make_move_iterator(cur.begin()), std::make_move_iterator(cur.end()));
  }
}

// Classes that contain an e-node matching the root operator of t.
std::vector<ClassId> root_candidates(const EGraph& eg, const Term& t) {
  std::vector<ClassId> out;
  for (ClassId c : eg.class_ids())
    for (const ENode& n : eg.eclass(c).nodes)
      if (node_matches(eg, n, t)) {
        out.push_back(c);
        break;
      }
  return out;
}

// How a nullary constant of a target graph takes its shape from its context (as in the backtracking
// optimizer: as in TASO's generator, constants are sized by the operator that consumes them).
struct ConstantContext {
  Op parent = Op::ewadd;
  std::size_t arg = 0;
  ClassId sibling = -1;
};

// TASO's split point of class c along `axis` (ir_bridge.h): the class's e-nodes in order.
std::optional<std::int64_t> concat_boundary(const EGraph& eg, ClassId c, std::int64_t axis, int depth) {
  return subst::concat_boundary(c, axis, depth, [&eg](std::int64_t id) {
    std::vector<SplitTraceStep> steps;
    const EClass& cls = eg.eclass(eg.find(static_cast<ClassId>(id)));
    for (const ENode& n : cls.nodes) {
      const Signature& sig = eg.signature(n.sig);
      if (!sig.op) continue;
      SplitTraceStep& s = steps.emplace_back();
      s.op = sig.op;
      s.attrs = &sig.attrs;
      s.inputs = sig.inputs;
      s.output = cls.type;
      s.children.assign(n.children.begin(), n.children.end());
    }
    return steps;
  });
}

// Adds target term t under bindings b; `expected` is the type it must have when it is an rhs root (a root
// split takes its split point from it).
std::optional<ClassId> build_target(EGraph& eg, const Term& t, const Bindings& b,
                                    const std::vector<std::string>& vars, std::optional<ConstantContext> ctx,
                                    const models::TensorType* expected) {
  if (t.is_variable()) {
    const int i = variable_index(vars, t.name());
    if (i < 0 || b[static_cast<std::size_t>(i)] < 0) return std::nullopt;
    return eg.find(b[static_cast<std::size_t>(i)]);
  }
  const auto& args = t.args();
  std::vector<ClassId> kids(args.size(), -1);
  // Non-constant arguments first: a constant's shape comes from its sibling.
  for (int pass = 0; pass < 2; ++pass) {
    for (std::size_t i = 0; i < args.size(); ++i) {
      const bool constant = !args[i].is_variable() && op_info(args[i].op()).tensor_args == 0;
      const bool through_enlarge = !args[i].is_variable() && args[i].op() == Op::enlarge;
      if ((pass == 0) == (constant || through_enlarge)) continue;
      std::optional<ConstantContext> child;
      if (constant || through_enlarge) {
        if (t.op() == Op::enlarge)
          child = ctx;
        else if (args.size() == 2)
          child = ConstantContext{t.op(), i, kids[1 - i]};
      }
      auto k = build_target(eg, args[i], b, vars, child, nullptr);
      if (!k) return std::nullopt;
      kids[i] = *k;
    }
  }
  OpInstance inst{t.op(), {}};
  for (const auto& p : t.params()) {
    if (p.is_var()) return std::nullopt;
    inst.params.push_back(p.value);
  }
  std::vector<models::Shape> shapes;
  for (ClassId k : kids) shapes.push_back(eg.eclass(k).type.shape);
  std::int64_t split_point = 0;
  if (inst.op == Op::split_0 || inst.op == Op::split_1) {
    const auto axis = inst.params[0];
    if (axis < 0 || axis >= static_cast<std::int64_t>(shapes[0].size())) return std::nullopt;
    const auto dim = shapes[0][static_cast<std::size_t>(axis)];
    if (expected && expected->shape.size() == shapes[0].size()) {
      const auto part = expected->shape[static_cast<std::size_t>(axis)];
      split_point = inst.op == Op::split_0 ? part : dim - part;
    } else {
      auto point = concat_boundary(eg, kids[0], axis, 8);
      if (!point) return std::nullopt;
      split_point = *point;
    }
  }
  models::Shape cshape;
  if (op_info(t.op()).tensor_args == 0) {
    if (!ctx || ctx->sibling < 0) return std::nullopt;
    auto s = constant_shape_in(ctx->parent, ctx->arg, eg.eclass(ctx->sibling).type.shape);
    if (!s) return std::nullopt;
    cshape = *s;
  }
  auto ir = to_ir(inst, shapes, split_point, cshape);
  if (!ir || !rules_may_use(ir->name, ir->attrs)) return std::nullopt;
  return eg.add_op(ir->name, ir->attrs, kids, ir->output);
}

// Whether `target` is reachable from class `from` through the children of any e-node.
bool reaches(const EGraph& eg, ClassId from, const std::vector<ClassId>& targets, std::vector<char>& seen) {
  std::fill(seen.begin(), seen.end(), 0);
  std::vector<ClassId> stack{eg.find(from)};
  while (!stack.empty()) {
    const ClassId c = stack.back();
    stack.pop_back();
    if (std::find(targets.begin(), targets.end(), c) != targets.end()) return true;
    if (seen[static_cast<std::size_t>(c)]) continue;
    seen[static_cast<std::size_t>(c)] = 1;
    for (const ENode& n : eg.eclass(c).nodes)
      for (ClassId k : n.children) {
        const ClassId kc = eg.find(k);
        if (!seen[static_cast<std::size_t>(kc)]) stack.push_back(kc);
      }
  }
  return false;
}

}  // namespace

std::string_view stop_reason_name(StopReason r) {
  switch (r) {
    case StopReason::saturated:
      return "saturated";
    case StopReason::iteration_limit:
      return "iteration limit";
    case StopReason::node_limit:
      return "node limit";
    case StopReason::time_limit:
      return "time limit";
  }
  return "?";
}

std::string_view extraction_name(Extraction e) {
  return e == Extraction::ilp ? "ilp" : "greedy";
}

std::vector<std::string> rule_variables(const Rule& rule) {
  std::vector<std::string> vars;
  for (const auto& eq : rule.outputs) collect_variables(eq.lhs, vars);
  for (const auto& eq : rule.outputs) collect_variables(eq.rhs, vars);
  return vars;
}

std::vector<EMatch> ematch(const EGraph& eg, const Rule& rule) {
  std::vector<EMatch> result;
  if (rule.outputs.empty()) return result;
  for (const auto& eq : rule.outputs)
    if (eq.lhs.is_variable()) return result;  // a bare-variable lhs is not a rewrite site
  const auto vars = rule_variables(rule);
  std::vector<EMatch> partial{EMatch{{}, Bindings(vars.size(), -1)}};
  for (const auto& eq : rule.outputs) {
    // Matches of this lhs on its own, then joined with the partial matches on the shared variables.
    std::vector<std::pair<ClassId, Bindings>> own;
    for (ClassId c : root_candidates(eg, eq.lhs)) {
      std::vector<Bindings> found;
      match_pattern(eg, eq.lhs, c, Bindings(vars.size(), -1), vars, found);
      for (auto& b : found) own.emplace_back(c, std::move(b));
    }
    // A root sharing no variable with the earlier ones (e.g. rule 70: relu(a), relu(b)) would pair with every
    // other match; as in the backtracking optimizer, it is paired only with roots it has a common consumer
    // with.
    std::vector<std::string> earlier, own_vars;
    for (std::size_t e = 0; e < static_cast<std::size_t>(&eq - rule.outputs.data()); ++e)
      collect_variables(rule.outputs[e].lhs, earlier);
    collect_variables(eq.lhs, own_vars);
    const bool unrelated =
        !earlier.empty() && std::none_of(own_vars.begin(), own_vars.end(), [&](const std::string& v) {
          return std::find(earlier.begin(), earlier.end(), v) != earlier.end();
        });
    auto common_consumer = [&](ClassId a, const std::vector<ClassId>& others) {
      for (const auto& [node, cls] : eg.eclass(a).parents)
        for (ClassId k : node.children)
          if (std::find(others.begin(), others.end(), eg.find(k)) != others.end()) return true;
      return false;
    };
    std::vector<EMatch> next;
    for (const auto& p : partial) {
      for (const auto& [root, b] : own) {
        if (std::find(p.roots.begin(), p.roots.end(), root) != p.roots.end()) continue;
        if (unrelated && !common_consumer(root, p.roots)) continue;
        Bindings joined = p.bindings;
        bool ok = true;
        for (std::size_t i = 0; i < b.size() && ok; ++i) {
          if (b[i] < 0) continue;
          if (joined[i] < 0)
            joined[i] = b[i];
          else
            ok = joined[i] == b[i];
        }
        if (!ok) continue;
        EMatch m{p.roots, std::move(joined)};
        m.roots.push_back(root);
        next.push_back(std::move(m));
      }
    }
    partial = std::move(next);
    if (partial.empty()) break;
  }
  std::sort(partial.begin(), partial.end());
  partial.erase(std::unique(partial.begin(), partial.end()), partial.end());
  return partial;
}

bool apply_ematch(EGraph& eg, const Rule& rule, const EMatch& m, bool& changed) {
  changed = false;
  const auto vars = rule_variables(rule);
  std::vector<ClassId> rhs;
  for (std::size_t i = 0; i < rule.outputs.size(); ++i) {
    const models::TensorType expected = eg.eclass(m.roots[i]).type;
    auto r = build_target(eg, rule.outputs[i].rhs, m.bindings, vars, std::nullopt, &expected);
    if (!r || eg.eclass(*r).type != expected) return false;
    rhs.push_back(*r);
  }
  for (std::size_t i = 0; i < rhs.size(); ++i) changed = eg.merge(m.roots[i], rhs[i]) || changed;
  return true;
}

namespace {

// Per-signature operator time, computed once.
class SignatureCost {
 public:
  SignatureCost(const EGraph& eg, const models::CostModel& cost) : eg_(eg), cost_(cost) {}
  double operator()(SignatureId id) {
    auto i = static_cast<std::size_t>(id);
    if (i >= memo_.size()) memo_.resize(i + 1, -1.0);
    if (memo_[i] < 0) {
      const Signature& sig = eg_.signature(id);
      if (!sig.op) {
        memo_[i] = 0;
      } else if (sig.op->name == "split") {
        // The cost model prices a split by its consumers (a view when all of them read strided operands, as
        // element-wise kernels and GEMMs do): priced here for element-wise consumers, the common case of
        // merged projections; graph_cost of the extracted graph is the final word.
        models::Graph g("signature");
        std::vector<models::ValueId> ins;
        for (std::size_t k = 0; k < sig.inputs.size(); ++k)
          ins.push_back(g.add_input(fmt::format("in{}", k), sig.inputs[k]));
        for (auto v : g.add_node(sig.op->name, std::move(ins), sig.attrs, "op"))
          g.mark_output(g.add("relu", {v}));
        memo_[i] = cost_.node_cost(g, g.node(0)).seconds;
      } else {
        const models::Graph g = signature_graph(sig);
        memo_[i] = cost_.node_cost(g, g.node(0)).seconds;
      }
    }
    return memo_[i];
  }

 private:
  const EGraph& eg_;
  const models::CostModel& cost_;
  std::vector<double> memo_;
};

// The e-nodes extraction may pick in class c: in a weight-only class only weight-only ones (computed from
// parameters and constants alone, so folded and free, as graph_cost treats them).
bool selectable(const EGraph& eg, const EClass& cls, const ENode& n) {
  if (!cls.weight_only) return true;
  const Signature& sig = eg.signature(n.sig);
  if (!sig.op)
    return sig.source_kind == models::ValueKind::kParam || sig.source_kind == models::ValueKind::kConstant;
  return std::all_of(n.children.begin(), n.children.end(),
                     [&](ClassId k) { return eg.eclass(k).weight_only; });
}

double node_cost(const EClass& cls, const ENode& n, SignatureCost& sc) {
  return cls.weight_only ? 0.0 : sc(n.sig);
}

std::vector<ClassId> reachable_classes(const EGraph& eg, std::span<const ClassId> roots) {
  std::vector<char> seen(eg.class_capacity(), 0);
  std::vector<ClassId> stack, out;
  for (ClassId r : roots) stack.push_back(eg.find(r));
  while (!stack.empty()) {
    const ClassId c = stack.back();
    stack.pop_back();
    if (seen[static_cast<std::size_t>(c)]) continue;
    seen[static_cast<std::size_t>(c)] = 1;
    out.push_back(c);
    const EClass& cls = eg.eclass(c);
    for (const ENode& n : cls.nodes)
      if (selectable(eg, cls, n))
        for (ClassId k : n.children) stack.push_back(eg.find(k));
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Cost of a choice with every operator instance counted once; nullopt when the choice is cyclic or
// incomplete. `cycle` receives the (class, node index) pairs of a cycle found.
std::optional<double> dag_cost(const EGraph& eg, std::span<const ClassId> roots,
                               const std::vector<int>& choice, SignatureCost& sc,
                               std::vector<std::pair<ClassId, int>>* cycle = nullptr) {
  std::vector<char> state(choice.size(), 0);  // 0 new, 1 on stack, 2 done
  std::map<std::pair<SignatureId, std::vector<ClassId>>, char> instances;
  double total = 0;
  std::vector<std::pair<ClassId, int>> path;
  std::function<bool(ClassId)> visit = [&](ClassId c) -> bool {
    c = eg.find(c);
    auto& s = state[static_cast<std::size_t>(c)];
    if (s == 2) return true;
    if (s == 1) {
      if (cycle) {
        auto it = std::find_if(path.begin(), path.end(), [&](const auto& p) { return p.first == c; });
        cycle->assign(it, path.end());
      }
      return false;
    }
    const int k = choice[static_cast<std::size_t>(c)];
    if (k < 0) return false;
    s = 1;
    const EClass& cls = eg.eclass(c);
    const ENode& n = cls.nodes[static_cast<std::size_t>(k)];
    path.emplace_back(c, k);
    for (ClassId child : n.children)
      if (!visit(child)) return false;
    path.pop_back();
    if (instances.emplace(std::pair{n.sig, n.children}, 1).second) total += node_cost(cls, n, sc);
    s = 2;
    return true;
  };
  for (ClassId r : roots)
    if (!visit(r)) return std::nullopt;
  return total;
}

ExtractionResult greedy_extract(const EGraph& eg, std::span<const ClassId> roots, SignatureCost& sc) {
  const std::size_t n_ids = eg.class_capacity();
  ExtractionResult res;
  res.choice.assign(n_ids, -1);
  const auto classes = reachable_classes(eg, roots);
  // (tree cost, tree size) per class, lexicographic; improving strictly keeps the choice acyclic even
  // through zero-cost (folded) nodes, since every node adds at least 1 to the size.
  constexpr double kInf = std::numeric_limits<double>::infinity();
  std::vector<std::pair<double, double>> best(n_ids, {kInf, kInf});
  for (bool changed = true; changed;) {
    changed = false;
    for (ClassId c : classes) {
      const EClass& cls = eg.eclass(c);
      for (std::size_t k = 0; k < cls.nodes.size(); ++k) {
        const ENode& n = cls.nodes[k];
        if (!selectable(eg, cls, n)) continue;
        std::pair<double, double> v{node_cost(cls, n, sc), 1.0};
        for (ClassId child : n.children) {
          const auto& b = best[static_cast<std::size_t>(eg.find(child))];
          v.first += b.first;
          v.second += b.second;
        }
        if (v < best[static_cast<std::size_t>(c)]) {
          best[static_cast<std::size_t>(c)] = v;
          res.choice[static_cast<std::size_t>(c)] = static_cast<int>(k);
          changed = true;
        }
      }
    }
  }
  auto cost = dag_cost(eg, roots, res.choice, sc);
  if (!cost) throw std::logic_error("eqsat: greedy extraction found no acyclic choice");
  res.cost = *cost;
  res.used = Extraction::greedy;
  // Tree cost cannot see that the outputs of one operator instance used by several classes are paid once
  // (the split outputs of a merged matmul): switching one class to split_0 of the merged operator is never
  // cheaper on its own. So: moves that switch every class holding an output of one shared instance at once,
  // kept when the DAG cost (instances counted once) falls, until no move improves.
  std::map<std::pair<SignatureId, std::vector<ClassId>>, std::vector<std::pair<ClassId, int>>> shared;
  for (ClassId c : classes) {
    const EClass& cls = eg.eclass(c);
    for (std::size_t k = 0; k < cls.nodes.size(); ++k)
      if (selectable(eg, cls, cls.nodes[k]) && eg.signature(cls.nodes[k].sig).outputs.size() > 1)
        shared[{cls.nodes[k].sig, cls.nodes[k].children}].emplace_back(c, static_cast<int>(k));
  }
  // Classes the current choice uses: a move touching none of them cannot change the cost.
  std::vector<char> in_dag(n_ids, 0);
  auto mark_dag = [&] {
    std::fill(in_dag.begin(), in_dag.end(), 0);
    std::vector<ClassId> stack;
    for (ClassId r : roots) stack.push_back(eg.find(r));
    while (!stack.empty()) {
      const ClassId c = stack.back();
      stack.pop_back();
      if (in_dag[static_cast<std::size_t>(c)] || res.choice[static_cast<std::size_t>(c)] < 0) continue;
      in_dag[static_cast<std::size_t>(c)] = 1;
      for (ClassId k :
           eg.eclass(c).nodes[static_cast<std::size_t>(res.choice[static_cast<std::size_t>(c)])].children)
        stack.push_back(eg.find(k));
    }
  };
  mark_dag();
  int moves = 0;
  for (bool improved = true; improved;) {
    improved = false;
    for (const auto& [key, members] : shared) {
      if (members.size() < 2) continue;
      if (std::none_of(members.begin(), members.end(),
                       [&](const auto& m) { return in_dag[static_cast<std::size_t>(m.first)] != 0; }))
        continue;
      auto trial = res.choice;
      bool differs = false;
      for (const auto& [c, k] : members) {
        differs = differs || trial[static_cast<std::size_t>(c)] != k;
        trial[static_cast<std::size_t>(c)] = k;
      }
      if (!differs) continue;
      auto c2 = dag_cost(eg, roots, trial, sc);
      if (c2 && *c2 < res.cost * (1 - 1e-12)) {
        res.choice = std::move(trial);
        res.cost = *c2;
        improved = true;
        ++moves;
        mark_dag();
      }
    }
  }
  if (moves > 0) res.note = fmt::format("{} shared-instance moves", moves);
  return res;
}

// The 0-1 program of DAG extraction, solved through Z3 as a sequence of satisfiability queries with a
// falling pseudo-Boolean cost bound (each model must be cheaper than the best so far, starting below the
// greedy extraction), so the answer improves on greedy whenever it returns and is optimal when the last
// query is unsatisfiable. Variables: x (e-node picked), c (class needed), g (operator instance paid: both
// outputs of a split share one). Acyclicity by cuts: a model whose choice has a cycle gets a clause
// forbidding that cycle's e-nodes together, and the query is repeated.
std::optional<ExtractionResult> ilp_extract(const EGraph& eg, std::span<const ClassId> roots,
                                            SignatureCost& sc, double time_limit_s, double greedy_cost,
                                            std::string& note) {
  const auto start = Clock::now();
  const auto classes = reachable_classes(eg, roots);
  const std::size_t n_ids = eg.class_capacity();
  // Z3 spends seconds just taking in models of this size (beyond any timeout) and has not been seen to
  // finish above a few thousand classes: not attempted.
  constexpr std::size_t kMaxClasses = 10000;
  if (classes.size() > kMaxClasses) {
    note = fmt::format("not attempted: {} classes (limit {})", classes.size(), kMaxClasses);
    return std::nullopt;
  }
  // Integer weights: 0.1 ns units, coarser if needed to keep the sum within 32 bits.
  const double scale = std::min(1e10, 1e9 / std::max(greedy_cost, 1e-12));
  z3::context ctx;
  z3::expr_vector hard(ctx);
  std::vector<std::optional<z3::expr>> cvar(n_ids);
  for (ClassId c : classes) cvar[static_cast<std::size_t>(c)] = ctx.bool_const(fmt::format("c{}", c).c_str());
  std::map<std::pair<SignatureId, std::vector<ClassId>>, std::size_t> group_index;
  z3::expr_vector gvars(ctx);
  std::vector<int> weights;
  std::vector<std::vector<std::optional<z3::expr>>> xvar(n_ids);
  for (ClassId r : roots) hard.push_back(*cvar[static_cast<std::size_t>(eg.find(r))]);
  std::size_t built = 0;
  for (ClassId c : classes) {
    if (++built % 256 == 0 && since(start) > time_limit_s) {
      note = fmt::format("time limit ({} s) reached while building the model ({} of {} classes)",
                         time_limit_s, built, classes.size());
      return std::nullopt;
    }
    const EClass& cls = eg.eclass(c);
    auto& xs = xvar[static_cast<std::size_t>(c)];
    xs.resize(cls.nodes.size());
    z3::expr_vector any(ctx);
    for (std::size_t k = 0; k < cls.nodes.size(); ++k) {
      const ENode& n = cls.nodes[k];
      if (!selectable(eg, cls, n)) continue;
      z3::expr x = ctx.bool_const(fmt::format("x{}_{}", c, k).c_str());
      xs[k] = x;
      any.push_back(x);
      for (ClassId child : n.children)
        hard.push_back(z3::implies(x, *cvar[static_cast<std::size_t>(eg.find(child))]));
      if (!eg.signature(n.sig).op) continue;
      auto key = std::pair{n.sig, n.children};
      auto it = group_index.find(key);
      if (it == group_index.end()) {
        it = group_index.emplace(key, gvars.size()).first;
        gvars.push_back(ctx.bool_const(fmt::format("g{}", gvars.size()).c_str()));
        // Every operator instance costs at least one unit, so ties prefer fewer nodes.
        weights.push_back(
            static_cast<int>(std::max<long long>(1, std::llround(node_cost(cls, n, sc) * scale))));
      }
      hard.push_back(z3::implies(x, gvars[static_cast<unsigned>(it->second)]));
    }
    if (any.empty()) {
      note = fmt::format("class {} has no selectable e-node", c);
      return std::nullopt;
    }
    hard.push_back(z3::implies(*cvar[static_cast<std::size_t>(c)], z3::mk_or(any)));
  }
  // The choice of a model (first picked e-node per needed class) and its cost; records a cycle cut instead
  // when the choice is cyclic.
  auto read_model = [&](const z3::model& m, std::vector<std::pair<ClassId, int>>& cycle) {
    ExtractionResult res;
    res.used = Extraction::ilp;
    res.choice.assign(n_ids, -1);
    for (ClassId c : classes) {
      const auto& xs = xvar[static_cast<std::size_t>(c)];
      for (std::size_t k = 0; k < xs.size(); ++k)
        if (xs[k] && m.eval(*xs[k], true).is_true()) {
          res.choice[static_cast<std::size_t>(c)] = static_cast<int>(k);
          break;
        }
    }
    cycle.clear();
    auto cost = dag_cost(eg, roots, res.choice, sc, &cycle);
    if (cost) res.cost = *cost;
    return cost ? std::optional<ExtractionResult>(std::move(res)) : std::nullopt;
  };
  auto cut = [&](const std::vector<std::pair<ClassId, int>>& cycle) {
    z3::expr_vector on_cycle(ctx);
    for (const auto& [c, k] : cycle)
      on_cycle.push_back(*xvar[static_cast<std::size_t>(c)][static_cast<std::size_t>(k)]);
    hard.push_back(!z3::mk_and(on_cycle));
  };
  int cuts = 0, improvements = 0;
  std::vector<std::pair<ClassId, int>> cycle;
  // Phase 1: weighted MaxSAT (core-guided, Z3's default maxres), which proves optimality quickly when the
  // e-graph has few interchangeable alternatives; it gets half the time.
  {
    z3::optimize opt(ctx);
    for (unsigned i = 0; i < hard.size(); ++i) opt.add(hard[i]);
    for (unsigned i = 0; i < gvars.size(); ++i) opt.add_soft(!gvars[i], std::to_string(weights[i]).c_str());
    for (;;) {
      const double left = time_limit_s / 2 - since(start);
      if (left <= 0) break;
      z3::params p(ctx);
      p.set("timeout", static_cast<unsigned>(std::max(1.0, left * 1000)));
      opt.set(p);
      if (opt.check() != z3::sat) break;
      auto res = read_model(opt.get_model(), cycle);
      if (res) {
        note = fmt::format("{} classes, {} operator instances, {} cycle cuts; MaxSAT optimal", classes.size(),
                           gvars.size(), cuts);
        return res;
      }
      if (cycle.empty()) break;
      cut(cycle);
      opt.add(hard[hard.size() - 1]);
      ++cuts;
    }
  }
  // Phase 2: satisfiability queries under a falling cost bound, starting from the greedy cost: anytime.
  z3::solver solver(ctx);
  for (unsigned i = 0; i < hard.size(); ++i) solver.add(hard[i]);
  std::optional<ExtractionResult> best;
  long long bound = std::llround(greedy_cost * scale) + static_cast<long long>(gvars.size()) - 1;
  for (;;) {
    const double left = time_limit_s - since(start);
    if (left <= 0) {
      note = fmt::format(
          "{} classes, {} operator instances, {} improvements, {} cycle cuts; time limit {} s, best "
          "found kept (not proved optimal)",
          classes.size(), gvars.size(), improvements, cuts, time_limit_s);
      break;
    }
    z3::params p(ctx);
    p.set("timeout", static_cast<unsigned>(std::max(1.0, left * 1000)));
    solver.set(p);
    solver.push();
    solver.add(z3::pble(gvars, weights.data(), static_cast<int>(std::min<long long>(bound, 2000000000))));
    const auto r = solver.check();
    if (r == z3::unsat) {
      solver.pop();
      note = fmt::format("{} classes, {} operator instances, {} improvements, {} cycle cuts; optimal",
                         classes.size(), gvars.size(), improvements, cuts);
      break;
    }
    if (r != z3::sat) {
      solver.pop();
      note = fmt::format(
          "{} classes, {} operator instances, {} improvements, {} cycle cuts; time limit {} s, best "
          "found kept (not proved optimal)",
          classes.size(), gvars.size(), improvements, cuts, time_limit_s);
      break;
    }
    const z3::model m = solver.get_model();
    solver.pop();
    auto res = read_model(m, cycle);
    if (!res) {
      if (cycle.empty()) {
        note = "model without a complete choice";
        return std::nullopt;
      }
      cut(cycle);
      solver.add(hard[hard.size() - 1]);
      ++cuts;
      continue;
    }
    // The next model must be strictly cheaper in the integer weights.
    long long units = 0;
    for (unsigned i = 0; i < gvars.size(); ++i)
      if (m.eval(gvars[i], true).is_true()) units += weights[i];
    bound = std::min(bound, units - 1);
    best = std::move(*res);
    ++improvements;
  }
  if (!best) {
    note += "; no acyclic choice cheaper than greedy found";
    return std::nullopt;
  }
  return best;
}

}  // namespace

ExtractionResult extract(const EGraph& eg, std::span<const ClassId> roots, const models::CostModel& cost,
                         Extraction method, double ilp_time_limit_s) {
  SignatureCost sc(eg, cost);
  ExtractionResult greedy = greedy_extract(eg, roots, sc);
  if (method == Extraction::greedy) return greedy;
  std::string note;
  auto ilp = ilp_extract(eg, roots, sc, ilp_time_limit_s, greedy.cost, note);
  if (!ilp) {
    greedy.note = (greedy.note.empty() ? "" : greedy.note + "; ") + "ILP: " + note + "; greedy used";
    return greedy;
  }
  if (ilp->cost > greedy.cost) {  // cannot happen for an optimal ILP answer; guards the rounding of weights
    greedy.note = (greedy.note.empty() ? "" : greedy.note + "; ") +
                  fmt::format("ILP result ({:.6f} ms) above greedy; greedy used", ilp->cost * 1e3);
    return greedy;
  }
  ilp->note = note;
  return *ilp;
}

models::Graph extracted_graph(const GraphEGraph& geg, const ExtractionResult& ex, const models::Graph& like) {
  const EGraph& eg = geg.egraph;
  models::Graph out(like.name());
  std::map<std::string, models::ValueId, std::less<>> source_value;
  for (models::ValueId v : geg.sources) {
    const auto& val = like.value(v);
    source_value.emplace(val.name, out.add_source(val.name, val.type, val.kind, val.data));
  }
  std::map<ENode, std::string> names;
  for (const auto& [n, name] : geg.node_names) names.emplace(eg.canonical(n), name);
  std::map<std::pair<SignatureId, std::vector<ClassId>>, std::vector<models::ValueId>> emitted;
  std::vector<models::ValueId> value(ex.choice.size(), models::kNoValue);
  std::vector<char> on_stack(ex.choice.size(), 0);
  int fresh = 0;
  std::function<models::ValueId(ClassId)> emit = [&](ClassId c) -> models::ValueId {
    c = eg.find(c);
    auto& v = value[static_cast<std::size_t>(c)];
    if (v != models::kNoValue) return v;
    if (on_stack[static_cast<std::size_t>(c)] || ex.choice[static_cast<std::size_t>(c)] < 0)
      throw std::logic_error("eqsat: extraction is cyclic or incomplete");
    on_stack[static_cast<std::size_t>(c)] = 1;
    const ENode& n = eg.eclass(c).nodes[static_cast<std::size_t>(ex.choice[static_cast<std::size_t>(c)])];
    const Signature& sig = eg.signature(n.sig);
    if (!sig.op) {
      v = source_value.at(sig.source_name);
    } else {
      std::vector<models::ValueId> ins;
      for (ClassId k : n.children) ins.push_back(emit(k));
      auto key = std::pair{n.sig, n.children};
      auto it = emitted.find(key);
      if (it == emitted.end()) {
        auto nit = names.find(ENode{n.sig, 0, n.children});
        std::string name =
            nit != names.end() ? nit->second : fmt::format("eqsat{}_{}", fresh++, sig.op->name);
        it = emitted.emplace(key, out.add_node(sig.op->name, std::move(ins), sig.attrs, std::move(name)))
                 .first;
      }
      v = it->second.at(static_cast<std::size_t>(n.output));
    }
    on_stack[static_cast<std::size_t>(c)] = 0;
    return v;
  };
  std::vector<char> renamed(out.values().size() + ex.choice.size() * 2 + 16, 0);
  for (std::size_t i = 0; i < geg.roots.size(); ++i) {
    const models::ValueId v = emit(geg.roots[i]);
    out.mark_output(v);
    const auto& want = like.value(like.outputs()[i]).name;
    if (out.value(v).producer >= 0 && static_cast<std::size_t>(v) < renamed.size() &&
        !renamed[static_cast<std::size_t>(v)]) {
      renamed[static_cast<std::size_t>(v)] = 1;
      out.set_value_name(v, want);
    }
  }
  return out;
}

EqsatResult eqsat_optimize(const models::Graph& input, std::span<const Rule> rules,
                           const models::CostModel& cost, const EqsatOptions& options) {
  const auto start = Clock::now();
  const models::Graph g0 = remove_dead_nodes(input);
  EqsatResult res;
  res.cost_before = graph_cost(g0, cost);
  GraphEGraph geg = egraph_from_graph(g0);
  EGraph& eg = geg.egraph;
  std::vector<int> applications(rules.size(), 0);
  std::vector<char> multi(rules.size(), 0);
  for (std::size_t r = 0; r < rules.size(); ++r) multi[r] = rules[r].outputs.size() > 1;
  res.stop = StopReason::iteration_limit;
  bool stopped = false;
  for (int iter = 0; iter < options.max_iterations && !stopped; ++iter) {
    const auto t_iter = Clock::now();
    const bool with_multi = iter < options.multi_iterations;
    // Search (read-only, parallel over rules), then apply in rule order: deterministic.
    std::vector<std::vector<EMatch>> matches(rules.size());
    tbb::parallel_for(std::size_t{0}, rules.size(), [&](std::size_t r) {
      if (!multi[r] || with_multi) matches[r] = ematch(eg, rules[r]);
    });
    EqsatIteration it;
    std::vector<char> seen;
    for (int phase = 0; phase < 2 && !stopped; ++phase) {  // single-root rules, then multi-root ones
      for (std::size_t r = 0; r < rules.size() && !stopped; ++r) {
        if (multi[r] != (phase == 1)) continue;
        for (const EMatch& m : matches[r]) {
          if (phase == 1) {
            // Skip matches whose rhs would read one of its own roots (a cycle through the e-graph).
            seen.assign(eg.class_capacity(), 0);
            std::vector<ClassId> roots;
            for (ClassId root : m.roots) roots.push_back(eg.find(root));
            bool cyclic = false;
            for (ClassId b : m.bindings)
              if (b >= 0 && reaches(eg, b, roots, seen)) cyclic = true;
            if (cyclic) {
              ++it.multi_skipped_cycles;
              continue;
            }
          }
          bool changed = false;
          if (!apply_ematch(eg, rules[r], m, changed) || !changed) continue;
          ++it.applied;
          if (phase == 1) ++it.multi_applied;
          ++applications[r];
          if (eg.num_nodes() > options.node_limit) {
            res.stop = StopReason::node_limit;
            stopped = true;
            break;
          }
          if (since(start) > options.time_limit_s) {
            res.stop = StopReason::time_limit;
            stopped = true;
            break;
          }
        }
      }
    }
    eg.rebuild();
    it.nodes = eg.num_nodes();
    it.classes = eg.num_classes();
    it.seconds = since(t_iter);
    res.iterations.push_back(it);
    if (options.progress)
      options.progress(fmt::format(
          "eqsat: iteration {}: {} unions ({} multi-root, {} skipped as cyclic), {} e-nodes, "
          "{} e-classes, {:.2f} s",
          iter + 1, it.applied, it.multi_applied, it.multi_skipped_cycles, it.nodes, it.classes, it.seconds));
    if (stopped) break;
    if (it.applied == 0) {
      res.stop = StopReason::saturated;
      break;
    }
    if (eg.num_nodes() > options.node_limit) {
      res.stop = StopReason::node_limit;
      break;
    }
    if (since(start) > options.time_limit_s) {
      res.stop = StopReason::time_limit;
      break;
    }
  }
  res.saturation_seconds = since(start);
  res.nodes = eg.num_nodes();
  res.classes = eg.num_classes();
  for (std::size_t r = 0; r < rules.size(); ++r)
    if (applications[r] > 0) res.rule_applications.emplace_back(rules[r].name, applications[r]);
  const auto t_ex = Clock::now();
  const ExtractionResult ex = extract(eg, geg.roots, cost, options.extraction, options.ilp_time_limit_s);
  res.extraction = ex.used;
  res.extraction_note = ex.note;
  res.extraction_cost = ex.cost;
  res.graph = extracted_graph(geg, ex, g0);
  res.cost_after = graph_cost(res.graph, cost);
  if (res.cost_after > res.cost_before) {
    // The extractor's estimate and graph_cost agree up to rounding; never return a worse graph.
    res.graph = g0;
    res.cost_after = res.cost_before;
    res.extraction_note += "; extracted graph not cheaper, input kept";
  }
  res.extraction_seconds = since(t_ex);
  res.seconds = since(start);
  return res;
}

}  // namespace strata::search::subst
