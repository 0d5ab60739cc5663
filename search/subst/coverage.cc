#include "search/subst/coverage.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>

#include <tbb/parallel_for.h>

namespace strata::search::subst {
namespace {

// Serialises terms, naming each input by its order of first occurrence (and its shape).
class Canonicalizer {
 public:
  Canonicalizer(const Rule& rule, bool match_shapes) : rule_(rule), match_shapes_(match_shapes) {}

  void term(const Term& t) {
    if (t.is_variable()) {
      auto [it, inserted] = numbers_.try_emplace(t.name(), numbers_.size());
      out_ += '%';
      out_ += std::to_string(it->second);
      if (match_shapes_) {
        const RuleInput* in = rule_.find_input(t.name());
        out_ += ':';
        out_ += shape_to_string(in != nullptr ? in->shape : std::nullopt);
      }
      return;
    }
    out_ += op_info(t.op()).name;
    out_ += '(';
    for (const Param& p : t.params()) out_ += (p.is_var() ? p.var : std::to_string(p.value)) + ',';
    for (const Term& a : t.args()) {
      term(a);
      out_ += ',';
    }
    out_ += ')';
  }
  void separator(char c) { out_ += c; }
  [[nodiscard]] std::string take() { return std::move(out_); }

 private:
  const Rule& rule_;
  bool match_shapes_;
  std::map<std::string, std::size_t, std::less<>> numbers_;
  std::string out_;
};

std::string serialise(const Rule& rule, std::span<const Equation* const> order, bool swap,
                      bool match_shapes) {
  Canonicalizer c(rule, match_shapes);
  for (const Equation* eq : order) {
    c.term(swap ? eq->rhs : eq->lhs);
    c.separator('=');
    c.term(swap ? eq->lhs : eq->rhs);
    c.separator(';');
  }
  return c.take();
}

bool all_shapes_known(std::span<const Rule> rules) {
  return std::all_of(rules.begin(), rules.end(), [](const Rule& r) {
    return std::all_of(r.inputs.begin(), r.inputs.end(),
                       [](const RuleInput& in) { return in.shape.has_value(); });
  });
}

}  // namespace

std::string canonical_form(const Rule& rule, const CanonicalOptions& options) {
  std::vector<const Equation*> order;
  for (const Equation& eq : rule.outputs) order.push_back(&eq);
  std::sort(order.begin(), order.end());
  std::string best;
  bool first = true;
  do {
    for (bool swap : {false, true}) {
      if (swap && !options.modulo_orientation) continue;
      std::string s = serialise(rule, order, swap, options.match_shapes);
      if (first || s < best) best = std::move(s);
      first = false;
    }
  } while (std::next_permutation(order.begin(), order.end()));
  return best;
}

std::string canonical_form(const Equation& equation, const Rule& rule, const CanonicalOptions& options) {
  const Equation* one[] = {&equation};
  std::string s = serialise(rule, one, false, options.match_shapes);
  if (options.modulo_orientation) s = std::min(s, serialise(rule, one, true, options.match_shapes));
  return s;
}

CoverageReport compare_rule_sets(std::span<const Rule> a, std::span<const Rule> b, bool modulo_orientation) {
  CoverageReport report;
  report.options.modulo_orientation = modulo_orientation;
  report.options.match_shapes = all_shapes_known(a) && all_shapes_known(b);
  report.a_rules = a.size();
  report.b_rules = b.size();

  auto forms = [&](std::span<const Rule> rules) {
    std::vector<std::string> out(rules.size());
    tbb::parallel_for(std::size_t{0}, rules.size(),
                      [&](std::size_t i) { out[i] = canonical_form(rules[i], report.options); });
    return out;
  };
  auto equation_forms = [&](std::span<const Rule> rules) {
    std::vector<std::string> out;
    for (const Rule& r : rules)
      for (const Equation& eq : r.outputs) out.push_back(canonical_form(eq, r, report.options));
    return out;
  };
  const auto fa = forms(a), fb = forms(b);
  const std::set<std::string> sa(fa.begin(), fa.end()), sb(fb.begin(), fb.end());
  report.a_distinct = sa.size();
  report.b_distinct = sb.size();
  for (std::size_t i = 0; i < fa.size(); ++i) {
    if (sb.contains(fa[i]))
      ++report.a_in_b;
    else
      report.only_in_a.push_back(i);
  }
  for (std::size_t i = 0; i < fb.size(); ++i) {
    if (sa.contains(fb[i]))
      ++report.b_in_a;
    else
      report.only_in_b.push_back(i);
  }
  const auto ea = equation_forms(a), eb = equation_forms(b);
  const std::set<std::string> esa(ea.begin(), ea.end()), esb(eb.begin(), eb.end());
  report.a_equations = ea.size();
  report.b_equations = eb.size();
  report.a_equations_in_b = static_cast<std::size_t>(
      std::count_if(ea.begin(), ea.end(), [&](const std::string& s) { return esb.contains(s); }));
  report.b_equations_in_a = static_cast<std::size_t>(
      std::count_if(eb.begin(), eb.end(), [&](const std::string& s) { return esa.contains(s); }));
  return report;
}

}  // namespace strata::search::subst
