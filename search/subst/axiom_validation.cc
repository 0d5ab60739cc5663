#include "search/subst/axiom_validation.h"

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include "search/subst/term_eval.h"

namespace strata::search::subst {
namespace {

using models::ModP;
using ShapeMap = std::map<std::string, Shape, std::less<>>;

// Ranks a tensor variable may have, from the operator positions it occupies (a cheap pre-filter; the shape
// rules decide the rest).
void constrain_ranks(const Term& t, std::map<std::string, std::set<int>>& ranks) {
  if (t.is_variable()) return;
  for (std::size_t i = 0; i < t.args().size(); ++i) {
    const Term& a = t.args()[i];
    if (!a.is_variable()) {
      constrain_ranks(a, ranks);
      continue;
    }
    std::set<int> allowed{0, 1, 2, 3, 4};
    switch (t.op()) {
      case Op::kConv2d:
      case Op::kPoolavg:
      case Op::kPoolmax:
      case Op::kEnlarge:
        allowed = {4};
        break;
      case Op::kMatmul:
      case Op::kTranspose:
        allowed = {2};
        break;
      case Op::kSmul:
        if (i == 1) allowed = {0};
        break;
      case Op::kConcat:
      case Op::kSplit0:
      case Op::kSplit1:
      case Op::kRelu:
        allowed = {1, 2, 3, 4};
        break;
      default:
        break;
    }
    auto [it, inserted] = ranks.emplace(a.name(), allowed);
    if (!inserted) {
      std::set<int> common;
      std::set_intersection(it->second.begin(), it->second.end(), allowed.begin(), allowed.end(),
                            std::inserter(common, common.begin()));
      it->second = std::move(common);
    }
  }
}

bool has_constant(const Term& t) {
  if (t.is_variable()) return false;
  if (op_info(t.op()).tensor_args == 0) return true;
  return std::any_of(t.args().begin(), t.args().end(), has_constant);
}

void collect_subterms(const Term& t, std::vector<Term>& out) {
  if (t.is_variable()) return;
  for (const Term& a : t.args()) collect_subterms(a, out);
  if (std::find(out.begin(), out.end(), t) == out.end()) out.push_back(t);
}

std::vector<Shape> all_shapes(const std::set<int>& ranks, std::int64_t max_dim) {
  std::vector<Shape> out;
  for (int r : ranks) {
    Shape s(static_cast<std::size_t>(r), 1);
    while (true) {
      out.push_back(s);
      int d = r - 1;
      while (d >= 0 && s[static_cast<std::size_t>(d)] == max_dim) s[static_cast<std::size_t>(d--)] = 1;
      if (d < 0) break;
      ++s[static_cast<std::size_t>(d)];
    }
  }
  return out;
}

struct AssignmentResult {
  std::size_t instances = 0;
  std::size_t failures = 0;
  bool exhaustive = true;
  std::optional<AxiomCounterExample> counter_example;
};

// Depth-first search over the shapes of one instantiated axiom: variables in order of first occurrence; after
// each choice, every subterm whose variables are all bound must type-check.
class InstanceSearch {
 public:
  InstanceSearch(const Axiom& axiom, std::vector<std::int64_t> params, const AxiomValidationOptions& options,
                 std::uint64_t seed, bool values_only = false)
      : axiom_(axiom),
        params_(std::move(params)),
        options_(options),
        rng_(seed),
        seed_(seed),
        values_only_(values_only) {
    std::tie(lhs_, rhs_) = instantiate(axiom, params_);
    std::map<std::string, std::set<int>> ranks;
    constrain_ranks(lhs_, ranks);
    constrain_ranks(rhs_, ranks);
    for (const auto& v : axiom.tensor_variables) {
      auto it = ranks.find(v);
      candidates_.push_back(
          all_shapes(it == ranks.end() ? std::set<int>{0, 1, 2, 3, 4} : it->second, options.max_dim));
      std::shuffle(candidates_.back().begin(), candidates_.back().end(), rng_);
    }
    // Subterms closed at each level: level 0 binds the free constant size, level k+1 the k-th variable.
    std::vector<Term> subterms;
    collect_subterms(lhs_, subterms);
    collect_subterms(rhs_, subterms);
    closed_at_.resize(axiom.tensor_variables.size() + 1);
    for (const Term& t : subterms) {
      std::vector<std::string> vars;
      collect_variables(t, vars);
      std::size_t level = 0;
      for (const auto& v : vars) {
        const auto k = static_cast<std::size_t>(
            std::find(axiom.tensor_variables.begin(), axiom.tensor_variables.end(), v) -
            axiom.tensor_variables.begin());
        level = std::max(level, k + 1);
      }
      closed_at_[level].push_back(t);
    }
    if (has_constant(lhs_) || has_constant(rhs_))
      for (std::int64_t n = 1; n <= options.max_dim; ++n) free_sizes_.push_back(n);
    else
      free_sizes_.push_back(0);
  }

  AssignmentResult run() {
    for (std::int64_t n : free_sizes_) {
      eval_options_.free_constant_size = n == 0 ? 4 : n;
      free_size_ = n;
      if (!closed_ok(0)) continue;
      if (!search(0)) break;
    }
    return result_;
  }

 private:
  bool capped() {
    if (result_.instances >= options_.max_instances || trials_ >= options_.max_shape_trials) {
      result_.exhaustive = false;
      return true;
    }
    return false;
  }

  bool closed_ok(std::size_t level) {
    for (const Term& t : closed_at_[level]) {
      ++trials_;
      if (!try_infer_type(t, shapes_, eval_options_)) return false;
    }
    return true;
  }

  // false: a cap was hit, stop.
  bool search(std::size_t k) {
    if (k == axiom_.tensor_variables.size()) {
      check_instance();
      return !capped();
    }
    const std::string& name = axiom_.tensor_variables[k];
    for (const Shape& s : candidates_[k]) {
      if (capped()) return false;
      shapes_[name] = s;
      if (closed_ok(k + 1) && !search(k + 1)) return false;
    }
    shapes_.erase(name);
    return true;
  }

  // Why the two sides differ on this instance; "" when they differ in shape or split history and only values
  // count (values_only_); nullopt when they agree.
  std::optional<std::string> instance_difference(const std::vector<std::pair<std::string, Shape>>& shapes,
                                                 std::uint64_t seed) const {
    const auto mvars = random_bindings<ModP>(shapes, seed);
    auto ml = try_evaluate(lhs_, mvars, eval_options_);
    if (!ml) return fmt::format("evaluation failed: {}", ml.diagnostic());
    auto mr = try_evaluate(rhs_, mvars, eval_options_);
    if (!mr) return fmt::format("evaluation failed: {}", mr.diagnostic());
    const auto& l = ml.value().type;
    const auto& r = mr.value().type;
    if (values_only_ && (l.shape != r.shape || !same_split_history(l, r))) return std::string();
    if (auto why = value_difference(ml.value(), mr.value())) return why;
    if (!same_split_history(l, r))
      return "split histories differ (split_0/split_1 would undo different concatenations)";
    const auto dvars = random_bindings<double>(shapes, seed);
    auto dl = try_evaluate(lhs_, dvars, eval_options_);
    if (!dl) return fmt::format("evaluation failed: {}", dl.diagnostic());
    auto dr = try_evaluate(rhs_, dvars, eval_options_);
    if (!dr) return fmt::format("evaluation failed: {}", dr.diagnostic());
    return value_difference(dl.value(), dr.value(), options_.tolerance);
  }

  void check_instance() {
    std::vector<std::pair<std::string, Shape>> shapes;
    for (const auto& v : axiom_.tensor_variables) shapes.emplace_back(v, shapes_.at(v));
    const std::uint64_t seed = seed_ + result_.instances;
    ++result_.instances;
    const auto why = instance_difference(shapes, seed);
    if (why && why->empty()) return;  // values only: shapes or split histories differ, not counted
    if (!why) return;
    ++result_.failures;
    if (!result_.counter_example)
      result_.counter_example = AxiomCounterExample{params_, shapes, free_size_, *why};
  }

  const Axiom& axiom_;
  std::vector<std::int64_t> params_;
  const AxiomValidationOptions& options_;
  std::mt19937_64 rng_;
  std::uint64_t seed_;
  bool values_only_;
  Term lhs_, rhs_;
  std::vector<std::vector<Shape>> candidates_;
  std::vector<std::vector<Term>> closed_at_;
  std::vector<std::int64_t> free_sizes_;
  std::int64_t free_size_ = 0;
  TermEvalOptions eval_options_;
  ShapeMap shapes_;
  std::size_t trials_ = 0;
  AssignmentResult result_;
};

}  // namespace

std::vector<AxiomValidation> validate_axioms(std::span<const Axiom> axioms,
                                             const AxiomValidationOptions& options) {
  struct Task {
    std::size_t axiom;
    std::vector<std::int64_t> params;
  };
  std::vector<Task> tasks;
  for (std::size_t a = 0; a < axioms.size(); ++a)
    for (auto& p : parameter_assignments(axioms[a])) tasks.push_back({a, std::move(p)});
  std::vector<AssignmentResult> results(tasks.size());
  const int jobs = options.jobs > 0 ? options.jobs : tbb::this_task_arena::max_concurrency();
  tbb::task_arena arena(jobs);
  arena.execute([&] {
    tbb::parallel_for(std::size_t{0}, tasks.size(), [&](std::size_t i) {
      const std::uint64_t seed = options.seed * 0x9E3779B97F4A7C15ull + i * 1000003ull;
      results[i] = InstanceSearch(axioms[tasks[i].axiom], tasks[i].params, options, seed).run();
    });
  });
  std::vector<AxiomValidation> out(axioms.size());
  for (std::size_t a = 0; a < axioms.size(); ++a) out[a].name = axioms[a].name;
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    auto& v = out[tasks[i].axiom];
    const auto& r = results[i];
    ++v.assignments;
    if (r.instances > 0) ++v.typed_assignments;
    v.instances += r.instances;
    v.failures += r.failures;
    v.exhaustive = v.exhaustive && r.exhaustive;
    if (!v.counter_example && r.counter_example) v.counter_example = r.counter_example;
  }
  return out;
}

std::optional<AxiomCounterExample> find_counter_example(const Term& lhs, const Term& rhs,
                                                        const AxiomValidationOptions& options,
                                                        bool values_only) {
  Axiom eq;
  eq.lhs = lhs;
  eq.rhs = rhs;
  collect_variables(lhs, eq.tensor_variables);
  collect_variables(rhs, eq.tensor_variables);
  return InstanceSearch(eq, {}, options, options.seed, values_only).run().counter_example;
}

std::string format_counter_example(const AxiomCounterExample& ce, const Axiom& axiom) {
  std::vector<std::string> parts;
  for (std::size_t i = 0; i < ce.params.size() && i < axiom.param_variables.size(); ++i)
    parts.push_back(fmt::format("{}={}", axiom.param_variables[i].name, ce.params[i]));
  for (const auto& [name, shape] : ce.shapes)
    parts.push_back(fmt::format("{}: {}", name, shape_to_string(std::optional<Shape>(shape))));
  if (ce.free_constant_size > 0) parts.push_back(fmt::format("free constants n={}", ce.free_constant_size));
  return fmt::format("{}: {}", fmt::join(parts, ", "), ce.what);
}

}  // namespace strata::search::subst
