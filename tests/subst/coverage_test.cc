// Rule-set comparison modulo input renaming: the canonical form agrees with a brute-force search over all
// shape-preserving renamings, and the published sets relate as the taso-rules README states.
#include <algorithm>
#include <map>
#include <numeric>

#include <gtest/gtest.h>

#include "search/subst/coverage.h"
#include "search/subst/rule.h"
#include "test_data.h"

namespace strata::search::subst {
namespace {

using testing::kTaso133;
using testing::kTaso619;
using testing::kTaso820;
using testing::taso_data;

Term rename(const Term& t, const std::map<std::string, std::string>& names) {
  if (t.is_variable()) return Term::variable(names.at(t.name()));
  std::vector<Term> args;
  for (const Term& a : t.args()) args.push_back(rename(a, names));
  return Term::apply(t.op(), t.params(), std::move(args));
}

// Brute force: is there a shape-preserving bijection of inputs, an orientation and an output order under
// which a and b are identical?
bool same_by_brute_force(const Rule& a, const Rule& b) {
  if (a.inputs.size() != b.inputs.size() || a.outputs.size() != b.outputs.size()) return false;
  std::vector<std::size_t> perm(b.inputs.size());
  std::iota(perm.begin(), perm.end(), 0);
  do {
    std::map<std::string, std::string> names;
    bool shapes_match = true;
    for (std::size_t i = 0; i < a.inputs.size(); ++i) {
      names[a.inputs[i].name] = b.inputs[perm[i]].name;
      shapes_match = shapes_match && a.inputs[i].shape == b.inputs[perm[i]].shape;
    }
    if (!shapes_match) continue;
    std::vector<std::size_t> order(a.outputs.size());
    std::iota(order.begin(), order.end(), 0);
    do {
      for (bool swap : {false, true}) {
        bool all = true;
        for (std::size_t k = 0; k < order.size() && all; ++k) {
          const Equation& ea = a.outputs[order[k]];
          const Equation& eb = b.outputs[k];
          const Term l = rename(swap ? ea.rhs : ea.lhs, names), r = rename(swap ? ea.lhs : ea.rhs, names);
          all = l == eb.lhs && r == eb.rhs;
        }
        if (all) return true;
      }
    } while (std::next_permutation(order.begin(), order.end()));
  } while (std::next_permutation(perm.begin(), perm.end()));
  return false;
}

TEST(Coverage, CanonicalFormHandlesRenamingOrientationAndOutputOrder) {
  const auto rules = parse_rules(
      "rule a (x: 2x4, y: 2x4, w: 4x4)\n  matmul(ewadd(x,y),w) == ewadd(matmul(x,w),matmul(y,w))\n"
      "rule b (p: 2x4, q: 2x4, v: 4x4)\n  ewadd(matmul(q,v),matmul(p,v)) == matmul(ewadd(q,p),v)\n"
      "rule c (x: 2x4, y: 4x4, w: 4x4)\n  matmul(ewadd(x,y),w) == ewadd(matmul(x,w),matmul(y,w))\n"
      "rule d (a: 2x4, b: 2x4)\n  split_0(0,concat(0,a,b)) == a\n  split_1(0,concat(0,a,b)) == b\n"
      "rule e (b: 2x4, a: 2x4)\n  split_1(0,concat(0,b,a)) == a\n  split_0(0,concat(0,b,a)) == b\n",
      "inline.rules");
  EXPECT_EQ(canonical_form(rules[0]), canonical_form(rules[1]));  // renamed and reversed
  EXPECT_NE(canonical_form(rules[0], {.match_shapes = true, .modulo_orientation = false}),
            canonical_form(rules[1], {.match_shapes = true, .modulo_orientation = false}));
  EXPECT_NE(canonical_form(rules[0]), canonical_form(rules[2]));  // y has another shape
  EXPECT_EQ(canonical_form(rules[0], {.match_shapes = false}),
            canonical_form(rules[2], {.match_shapes = false}));
  EXPECT_EQ(canonical_form(rules[3]), canonical_form(rules[4]));  // outputs in the other order
  for (const Rule& x : rules)
    for (const Rule& y : rules) EXPECT_EQ(canonical_form(x) == canonical_form(y), same_by_brute_force(x, y));
}

// Exactness on real data: canonical-form equality agrees with brute force on all pairs of a sample of rules
// that share input count and sizes (where the question is not trivially "no").
TEST(Coverage, CanonicalFormAgreesWithBruteForceOnTasoRules) {
  const auto rules = load_rules(taso_data(kTaso820));
  int pairs = 0, equal = 0;
  for (std::size_t i = 0; i < 400; ++i)
    for (std::size_t j = i; j < 400; ++j) {
      const Rule &a = rules[i], &b = rules[j];
      if (a.inputs.size() != b.inputs.size() || a.outputs.size() != b.outputs.size()) continue;
      const bool brute = same_by_brute_force(a, b);
      ASSERT_EQ(canonical_form(a) == canonical_form(b), brute) << a.name << " vs " << b.name;
      ++pairs;
      equal += brute;
    }
  EXPECT_GT(pairs, 10000);
  EXPECT_GT(equal, 400);  // every rule equals itself, and the file has renamed/reversed duplicates
}

TEST(Coverage, Every619RuleOccursInThe820File) {
  const auto r619 = load_rules(taso_data(kTaso619));
  const auto r820 = load_rules(taso_data(kTaso820));
  const auto rep = compare_rule_sets(r619, r820);
  EXPECT_TRUE(rep.options.match_shapes);
  EXPECT_EQ(rep.a_rules, 619u);
  EXPECT_EQ(rep.a_in_b, 619u);
  EXPECT_TRUE(rep.only_in_a.empty());
  EXPECT_EQ(rep.a_equations_in_b, 703u);
  EXPECT_EQ(rep.b_in_a + rep.only_in_b.size(), 820u);
  EXPECT_GT(rep.only_in_b.size(), 0u);  // the 3x1-convolution rules of the artifact generator
  // And the comparison is not symmetric by accident: 820 vs 619 finds the same overlap.
  const auto back = compare_rule_sets(r820, r619);
  EXPECT_EQ(back.a_in_b, rep.b_in_a);
  EXPECT_EQ(back.only_in_b.size(), 0u);
}

TEST(Coverage, ShippedRulesMostlyOccurInThe820File) {
  // README: 121 of the 133 shipped rules occur verbatim (as text) in the 820 file; modulo renaming at least
  // those.
  const auto r133 = load_rules(taso_data(kTaso133), RuleFileFormat::kTaso, TasoShapes::kUnknown);
  const auto r820 = load_rules(taso_data(kTaso820));
  const auto rep = compare_rule_sets(r133, r820);
  EXPECT_FALSE(rep.options.match_shapes);  // the 133 file has no shapes
  EXPECT_GE(rep.a_in_b, 121u);
  EXPECT_LT(rep.a_in_b, 133u);
}

}  // namespace
}  // namespace strata::search::subst
