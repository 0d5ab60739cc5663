// Extraction of a graph from an e-graph (eqsat.h): greedy bottom-up, then the exact 0-1 program through Z3.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>
#include <map>
#include <stdexcept>

#include <fmt/format.h>
#include <z3++.h>

#include "search/subst/eqsat.h"
#include "util/timer.h"

namespace strata::search::subst {
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
  res.used = Extraction::kGreedy;
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
class IlpExtractor {
 public:
  IlpExtractor(const EGraph& eg, std::span<const ClassId> roots, SignatureCost& sc, double time_limit_s,
               double greedy_cost, std::string& note)
      : eg_(eg),
        roots_(roots),
        sc_(sc),
        time_limit_s_(time_limit_s),
        greedy_cost_(greedy_cost),
        note_(note),
        classes_(reachable_classes(eg, roots)),
        n_ids_(eg.class_capacity()) {}

  std::optional<ExtractionResult> run() {
    // Z3 spends seconds just taking in models of this size (beyond any timeout) and has not been seen to
    // finish above a few thousand classes: not attempted.
    constexpr std::size_t kMaxClasses = 10000;
    if (classes_.size() > kMaxClasses) {
      note_ = fmt::format("not attempted: {} classes (limit {})", classes_.size(), kMaxClasses);
      return std::nullopt;
    }
    // Integer weights: 0.1 ns units, coarser if needed to keep the sum within 32 bits.
    scale_ = std::min(1e10, 1e9 / std::max(greedy_cost_, 1e-12));
    ctx_.emplace();
    hard_.emplace(*ctx_);
    gvars_.emplace(*ctx_);
    if (!build_model()) return std::nullopt;
    if (auto res = maxsat_phase()) return res;
    return bound_phase();
  }

 private:
  // The hard constraints, operator-instance variables and their weights; false (with the note set) when the
  // model cannot be built in time or some class has no selectable e-node.
  bool build_model() {
    z3::context& ctx = *ctx_;
    cvar_.resize(n_ids_);
    for (ClassId c : classes_)
      cvar_[static_cast<std::size_t>(c)] = ctx.bool_const(fmt::format("c{}", c).c_str());
    xvar_.resize(n_ids_);
    for (ClassId r : roots_) hard_->push_back(*cvar_[static_cast<std::size_t>(eg_.find(r))]);
    std::size_t built = 0;
    for (ClassId c : classes_) {
      if (++built % 256 == 0 && watch_.seconds() > time_limit_s_) {
        note_ = fmt::format("time limit ({} s) reached while building the model ({} of {} classes)",
                            time_limit_s_, built, classes_.size());
        return false;
      }
      if (!add_class(c)) {
        note_ = fmt::format("class {} has no selectable e-node", c);
        return false;
      }
    }
    return true;
  }

  // The constraints of class c: a needed class picks one of its selectable e-nodes, a picked e-node needs
  // its children and pays its operator instance. False when c has no selectable e-node.
  bool add_class(ClassId c) {
    z3::context& ctx = *ctx_;
    const EClass& cls = eg_.eclass(c);
    auto& xs = xvar_[static_cast<std::size_t>(c)];
    xs.resize(cls.nodes.size());
    z3::expr_vector any(ctx);
    for (std::size_t k = 0; k < cls.nodes.size(); ++k) {
      const ENode& n = cls.nodes[k];
      if (!selectable(eg_, cls, n)) continue;
      z3::expr x = ctx.bool_const(fmt::format("x{}_{}", c, k).c_str());
      xs[k] = x;
      any.push_back(x);
      for (ClassId child : n.children)
        hard_->push_back(z3::implies(x, *cvar_[static_cast<std::size_t>(eg_.find(child))]));
      if (!eg_.signature(n.sig).op) continue;
      auto key = std::pair{n.sig, n.children};
      auto it = group_index_.find(key);
      if (it == group_index_.end()) {
        it = group_index_.emplace(key, gvars_->size()).first;
        gvars_->push_back(ctx.bool_const(fmt::format("g{}", gvars_->size()).c_str()));
        // Every operator instance costs at least one unit, so ties prefer fewer nodes.
        weights_.push_back(
            static_cast<int>(std::max<long long>(1, std::llround(node_cost(cls, n, sc_) * scale_))));
      }
      hard_->push_back(z3::implies(x, (*gvars_)[static_cast<unsigned>(it->second)]));
    }
    if (any.empty()) return false;
    hard_->push_back(z3::implies(*cvar_[static_cast<std::size_t>(c)], z3::mk_or(any)));
    return true;
  }

  // The choice of a model (first picked e-node per needed class) and its cost; records a cycle cut instead
  // when the choice is cyclic.
  std::optional<ExtractionResult> read_model(const z3::model& m) {
    ExtractionResult res;
    res.used = Extraction::kIlp;
    res.choice.assign(n_ids_, -1);
    for (ClassId c : classes_) {
      const auto& xs = xvar_[static_cast<std::size_t>(c)];
      for (std::size_t k = 0; k < xs.size(); ++k)
        if (xs[k] && m.eval(*xs[k], true).is_true()) {
          res.choice[static_cast<std::size_t>(c)] = static_cast<int>(k);
          break;
        }
    }
    cycle_.clear();
    auto cost = dag_cost(eg_, roots_, res.choice, sc_, &cycle_);
    if (cost) res.cost = *cost;
    return cost ? std::optional<ExtractionResult>(std::move(res)) : std::nullopt;
  }

  // Adds the clause forbidding the e-nodes of cycle_ together to the hard constraints (the last one).
  void cut() {
    z3::expr_vector on_cycle(*ctx_);
    for (const auto& [c, k] : cycle_)
      on_cycle.push_back(*xvar_[static_cast<std::size_t>(c)][static_cast<std::size_t>(k)]);
    hard_->push_back(!z3::mk_and(on_cycle));
  }

  // Phase 1: weighted MaxSAT (core-guided, Z3's default maxres), which proves optimality quickly when the
  // e-graph has few interchangeable alternatives; it gets half the time.
  std::optional<ExtractionResult> maxsat_phase() {
    z3::context& ctx = *ctx_;
    z3::expr_vector& hard = *hard_;
    z3::expr_vector& gvars = *gvars_;
    z3::optimize opt(ctx);
    for (unsigned i = 0; i < hard.size(); ++i) opt.add(hard[i]);
    for (unsigned i = 0; i < gvars.size(); ++i) opt.add_soft(!gvars[i], std::to_string(weights_[i]).c_str());
    for (;;) {
      const double left = time_limit_s_ / 2 - watch_.seconds();
      if (left <= 0) break;
      z3::params p(ctx);
      p.set("timeout", static_cast<unsigned>(std::max(1.0, left * 1000)));
      opt.set(p);
      if (opt.check() != z3::sat) break;
      auto res = read_model(opt.get_model());
      if (res) {
        note_ = fmt::format("{} classes, {} operator instances, {} cycle cuts; MaxSAT optimal",
                            classes_.size(), gvars.size(), cuts_);
        return res;
      }
      if (cycle_.empty()) break;
      cut();
      opt.add(hard[hard.size() - 1]);
      ++cuts_;
    }
    return std::nullopt;
  }

  std::string unproved_note() const {
    return fmt::format(
        "{} classes, {} operator instances, {} improvements, {} cycle cuts; time limit {} s, best "
        "found kept (not proved optimal)",
        classes_.size(), gvars_->size(), improvements_, cuts_, time_limit_s_);
  }

  // Phase 2: satisfiability queries under a falling cost bound, starting from the greedy cost: anytime.
  std::optional<ExtractionResult> bound_phase() {
    z3::context& ctx = *ctx_;
    z3::expr_vector& hard = *hard_;
    z3::expr_vector& gvars = *gvars_;
    z3::solver solver(ctx);
    for (unsigned i = 0; i < hard.size(); ++i) solver.add(hard[i]);
    std::optional<ExtractionResult> best;
    long long bound = std::llround(greedy_cost_ * scale_) + static_cast<long long>(gvars.size()) - 1;
    for (;;) {
      const double left = time_limit_s_ - watch_.seconds();
      if (left <= 0) {
        note_ = unproved_note();
        break;
      }
      z3::params p(ctx);
      p.set("timeout", static_cast<unsigned>(std::max(1.0, left * 1000)));
      solver.set(p);
      solver.push();
      solver.add(z3::pble(gvars, weights_.data(), static_cast<int>(std::min<long long>(bound, 2000000000))));
      const auto r = solver.check();
      if (r == z3::unsat) {
        solver.pop();
        note_ = fmt::format("{} classes, {} operator instances, {} improvements, {} cycle cuts; optimal",
                            classes_.size(), gvars.size(), improvements_, cuts_);
        break;
      }
      if (r != z3::sat) {
        solver.pop();
        note_ = unproved_note();
        break;
      }
      const z3::model m = solver.get_model();
      solver.pop();
      auto res = read_model(m);
      if (!res) {
        if (cycle_.empty()) {
          note_ = "model without a complete choice";
          return std::nullopt;
        }
        cut();
        solver.add(hard[hard.size() - 1]);
        ++cuts_;
        continue;
      }
      // The next model must be strictly cheaper in the integer weights.
      long long units = 0;
      for (unsigned i = 0; i < gvars.size(); ++i)
        if (m.eval(gvars[i], true).is_true()) units += weights_[i];
      bound = std::min(bound, units - 1);
      best = std::move(*res);
      ++improvements_;
    }
    if (!best) {
      note_ += "; no acyclic choice cheaper than greedy found";
      return std::nullopt;
    }
    return best;
  }

  const EGraph& eg_;
  std::span<const ClassId> roots_;
  SignatureCost& sc_;
  const double time_limit_s_, greedy_cost_;
  std::string& note_;
  util::Stopwatch watch_;
  const std::vector<ClassId> classes_;
  const std::size_t n_ids_;
  double scale_ = 1;
  std::optional<z3::context> ctx_;
  std::optional<z3::expr_vector> hard_, gvars_;
  std::vector<std::optional<z3::expr>> cvar_;
  std::map<std::pair<SignatureId, std::vector<ClassId>>, std::size_t> group_index_;
  std::vector<int> weights_;
  std::vector<std::vector<std::optional<z3::expr>>> xvar_;
  std::vector<std::pair<ClassId, int>> cycle_;
  int cuts_ = 0, improvements_ = 0;
};

std::optional<ExtractionResult> ilp_extract(const EGraph& eg, std::span<const ClassId> roots,
                                            SignatureCost& sc, double time_limit_s, double greedy_cost,
                                            std::string& note) {
  return IlpExtractor(eg, roots, sc, time_limit_s, greedy_cost, note).run();
}

}  // namespace

ExtractionResult extract(const EGraph& eg, std::span<const ClassId> roots, const models::CostModel& cost,
                         Extraction method, double ilp_time_limit_s) {
  SignatureCost sc(eg, cost);
  ExtractionResult greedy = greedy_extract(eg, roots, sc);
  if (method == Extraction::kGreedy) return greedy;
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

}  // namespace strata::search::subst
