#include "search/subst/rule_check.h"

#include <functional>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "models/ir/modp.h"
#include "search/subst/axiom_validation.h"
#include "search/subst/term_eval.h"

namespace strata::search::subst {
namespace {

using Shapes = std::vector<std::pair<std::string, Shape>>;

std::optional<Shapes> declared_shapes(const Rule& rule) {
  Shapes out;
  for (const RuleInput& in : rule.inputs) {
    if (!in.shape) return std::nullopt;
    out.emplace_back(in.name, *in.shape);
  }
  return out;
}

std::string output_label(const Rule& rule, std::size_t i) {
  return rule.outputs.size() > 1 ? fmt::format("output {}: ", i) : "";
}

std::string shapes_text(const Shapes& shapes) {
  std::string s;
  for (const auto& [name, shape] : shapes)
    s += fmt::format("{}{}: {}", s.empty() ? "" : ", ", name, shape_to_string(std::optional<Shape>(shape)));
  return s;
}

// Sizes of the declared shapes changed consistently: equal sizes stay equal, so the rule usually stays
// well-typed and its convolutions keep their grouping. The first three keep 1 and 3 (unit dimensions, kernel
// sizes); the last changes every size.
struct SizeMap {
  std::string_view name;
  std::int64_t (*map)(std::int64_t);
};
constexpr SizeMap kOtherSizes[] = {
    {"+2", [](std::int64_t v) { return v == 1 || v == 3 ? v : v + 2; }},
    {"x2", [](std::int64_t v) { return v == 1 || v == 3 ? v : 2 * v; }},
    {"+1", [](std::int64_t v) { return v == 1 || v == 3 ? v : v + 1; }},
    {"all+2", [](std::int64_t v) { return v + 2; }},  // kernels too: 1x3 -> 3x5 exposes boundary effects
};

// The prime-field model has relu and max-pooling as fixed pseudo-random functions: a difference there means
// the equation is not entailed by properties that hold for every such function (the axioms), and usually, but
// not always (relu(relu(x)) = relu(x)), that it is false over the reals. Says which.
bool differs_in_double_precision(const Equation& eq, const Shapes& shapes, const TermEvalOptions& eval,
                                 std::uint64_t seed) {
  const auto vars = random_bindings<double>(shapes, seed);
  return value_difference(evaluate(eq.lhs, vars, eval), evaluate(eq.rhs, vars, eval), 1e-9).has_value();
}

}  // namespace

std::optional<std::string> rule_shape_error(const Rule& rule) {
  const auto shapes = declared_shapes(rule);
  if (!shapes) return std::nullopt;
  const std::map<std::string, Shape, std::less<>> by_name(shapes->begin(), shapes->end());
  for (std::size_t i = 0; i < rule.outputs.size(); ++i) {
    const Equation& eq = rule.outputs[i];
    TermType types[2];
    const Term* sides[2] = {&eq.lhs, &eq.rhs};
    for (int s = 0; s < 2; ++s) {
      auto type = try_infer_type(*sides[s], by_name);
      if (!type)
        return fmt::format("{}{} does not type-check: {}", output_label(rule, i),
                           s == 0 ? "source" : "target", type.diagnostic());
      types[s] = std::move(type).value();
    }
    if (types[0].shape != types[1].shape)
      return fmt::format("{}source has shape {} but target has shape {}", output_label(rule, i),
                         shape_to_string(std::optional<Shape>(types[0].shape)),
                         shape_to_string(std::optional<Shape>(types[1].shape)));
  }
  return std::nullopt;
}

std::optional<Refutation> refute_by_evaluation(const Rule& rule, const RefuteOptions& options) {
  const auto declared = declared_shapes(rule);
  if (!declared) return std::nullopt;
  std::vector<std::pair<Shapes, std::int64_t>> trials{{*declared, TermEvalOptions{}.free_constant_size}};
  if (options.other_shapes)
    for (const SizeMap& m : kOtherSizes) {
      Shapes s = *declared;
      for (auto& [name, shape] : s)
        for (auto& d : shape) d = m.map(d);
      trials.emplace_back(std::move(s), m.map(TermEvalOptions{}.free_constant_size));
    }
  for (std::size_t t = 0; t < trials.size(); ++t) {
    const auto& [shapes, free_size] = trials[t];
    const TermEvalOptions eval{free_size};
    for (int sample = 0; sample < options.samples; ++sample) {
      const auto vars = random_bindings<models::ModP>(
          shapes, options.seed + 7919 * static_cast<std::uint64_t>(sample) + 104729 * t);
      for (std::size_t i = 0; i < rule.outputs.size(); ++i) {
        std::optional<std::string> why;
        auto lhs = try_evaluate(rule.outputs[i].lhs, vars, eval);
        auto rhs = lhs ? try_evaluate(rule.outputs[i].rhs, vars, eval) : lhs;
        if (!lhs || !rhs) break;  // not well-typed at these shapes: try the next ones
        why = value_difference(lhs.value(), rhs.value());
        if (why && why->starts_with("shapes differ")) break;  // ill-typed for the rewrite at these sizes
        if (why) {
          const bool real = differs_in_double_precision(rule.outputs[i], shapes, eval, options.seed);
          return Refutation{
              fmt::format("{}at {}{}: {}; {}", output_label(rule, i), shapes_text(shapes),
                          t == 0 ? "" : fmt::format(" (declared sizes {})", kOtherSizes[t - 1].name), *why,
                          real ? "also false in double precision"
                               : "equal in double precision (not entailed by the axioms)"),
              real};
        }
      }
    }
  }
  if (options.small_shape_instances > 0) {
    AxiomValidationOptions small;
    small.max_dim = options.max_dim;
    small.max_instances = options.small_shape_instances;
    small.max_shape_trials = 200 * options.small_shape_instances;
    small.seed = options.seed;
    for (std::size_t i = 0; i < rule.outputs.size(); ++i)
      if (auto ce = find_counter_example(rule.outputs[i].lhs, rule.outputs[i].rhs, small, true))
        return Refutation{fmt::format("{}at {} (small shapes): {}", output_label(rule, i),
                                      shapes_text(ce->shapes), ce->what)};
  }
  return std::nullopt;
}

}  // namespace strata::search::subst
