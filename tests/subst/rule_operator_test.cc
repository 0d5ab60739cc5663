// An operator outside TASO's vocabulary becomes usable in rules by its OpDef alone (issue 10: "adding an
// operator usable in rules: one entry plus its tests"). sigmoid and tanh declare a symbol, a split-axis
// trace, a rule form and their own axioms (models/ops/elementwise.cc); nothing in search/subst names them.
// These tests take them through every stage: vocabulary, IR bridge, evaluation, axiom validation,
// verification and the generator.
#include <cmath>

#include <gtest/gtest.h>

#include "models/ir/graph.h"
#include "models/ir/op_def.h"
#include "search/subst/axiom_validation.h"
#include "search/subst/axioms.h"
#include "search/subst/generator.h"
#include "search/subst/ir_bridge.h"
#include "search/subst/rule.h"
#include "search/subst/term_eval.h"
#include "search/subst/verifier.h"

namespace strata::search::subst {
namespace {

Term parse(std::string_view text) {
  std::size_t pos = 0;
  return parse_term(text, pos, TextOrigin{"test", 1, 1});
}

TEST(RuleOperator, SigmoidAndTanhJoinTheVocabularyAfterTasosSymbols) {
  for (std::string_view name : {"sigmoid", "tanh"}) {
    const auto op = find_op(name);
    ASSERT_TRUE(op.has_value()) << name;
    EXPECT_GE(static_cast<int>(*op), kNumNamedOps) << name;
    const OpInfo& info = op_info(*op);
    EXPECT_EQ(info.ir_op, name);
    EXPECT_EQ(info.tensor_args, 1);
    EXPECT_TRUE(info.params.empty());
  }
  // TASO's 17 symbols (`operator_data` of verify/verify.py) plus these two.
  EXPECT_EQ(all_ops().size(), 19u);
}

TEST(RuleOperator, IrBridgeRoundTripsASigmoidNode) {
  models::Graph g;
  const auto x = g.add_input("x", {{2, 3}, models::DType::kF32});
  const auto y = g.add("sigmoid", {x}, {}, "s");
  g.mark_output(y);
  const auto inst = from_ir(g, g.node(g.value(y).producer));
  ASSERT_TRUE(inst.has_value());
  EXPECT_EQ(inst->op, *find_op("sigmoid"));
  const std::vector<models::Shape> shapes{{2, 3}};
  const auto ir = to_ir(*inst, shapes);
  ASSERT_TRUE(ir.has_value());
  EXPECT_EQ(ir->name(), "sigmoid");
  EXPECT_FALSE(to_ir(*inst, std::vector<models::Shape>{{}}).has_value());  // TASO's activations take tensors
}

TEST(RuleOperator, EvaluatesWithTheOperatorsKernelAndCarriesTheSplitHistory) {
  TermBindings<double> vars;
  vars["x"].type = TermType{{1, 2}, std::vector<SplitTreePtr>(2)};
  vars["x"].data = {0.0, 1.0};
  vars["y"].type = TermType{{1, 1}, std::vector<SplitTreePtr>(2)};
  vars["y"].data = {-2.0};
  const auto v = evaluate(parse("sigmoid(concat(1,x,y))"), vars).data;
  ASSERT_EQ(v.size(), 3u);
  EXPECT_DOUBLE_EQ(v[0], 0.5);
  EXPECT_NEAR(v[1], 1 / (1 + std::exp(-1.0)), 1e-15);
  EXPECT_NEAR(v[2], 1 / (1 + std::exp(2.0)), 1e-15);
  // The concatenation boundary survives the activation: split_1 recovers sigmoid(y).
  EXPECT_NEAR(evaluate(parse("split_1(1,sigmoid(concat(1,x,y)))"), vars).data.at(0), 1 / (1 + std::exp(2.0)),
              1e-15);
  EXPECT_NEAR(evaluate(parse("tanh(y)"), vars).data.at(0), std::tanh(-2.0), 1e-15);
}

TEST(RuleOperator, DeclaredAxiomsAreValidatedAndProveRulesTasosAxiomsCannot) {
  const auto axioms = verification_axioms();
  ASSERT_EQ(axioms.size(), taso_axioms().size() + 4);  // sigmoid and tanh: concat and transpose each
  AxiomValidationOptions vo;
  vo.max_instances = 16;
  for (const auto& r : validate_axioms(std::span(axioms).subspan(taso_axioms().size()), vo))
    EXPECT_TRUE(r.valid()) << r.name;

  const auto rules = parse_rules(
      "rule sig_concat (x: 2x4, y: 2x3)\n  concat(1,sigmoid(x),sigmoid(y)) == sigmoid(concat(1,x,y))\n"
      "rule tanh_split (x: 2x4, y: 2x3)\n  tanh(x) == split_0(1,tanh(concat(1,x,y)))\n"
      "rule sig_is_tanh (x: 2x4)\n  sigmoid(x) == tanh(x)\n",
      "inline.rules");
  VerifyOptions o;
  o.timeout_ms = 2000;
  const auto with = verify_rules(rules, axioms, o);
  EXPECT_EQ(with[0].status, VerifyStatus::kProved) << with[0].reason;
  EXPECT_EQ(with[1].status, VerifyStatus::kProved) << with[1].reason;
  EXPECT_EQ(with[2].status, VerifyStatus::kFalse) << with[2].reason;
  // Without the operator's own axioms the first rule does not follow (TASO's axioms say nothing of sigmoid).
  EXPECT_NE(verify_rules(std::span(rules).first(1), taso_axioms(), o)[0].status, VerifyStatus::kProved);
}

TEST(RuleOperator, GeneratorEnumeratesItByName) {
  GeneratorOptions g;
  g.ops = parse_operator_set("sigmoid,concat");
  g.max_ops = 3;
  const auto result = generate_rules(g);
  bool found = false;
  for (const Rule& r : result.rules)
    for (const auto& eq : r.outputs) {
      const std::string text = to_string(eq.lhs) + " == " + to_string(eq.rhs);
      found = found || text.find("sigmoid(concat(") != std::string::npos;
    }
  EXPECT_TRUE(found) << "no rule moves sigmoid through a concatenation among " << result.rules.size();
  EXPECT_THROW((void)parse_operator_set("gelu"), std::invalid_argument);  // no rule form declared
}

}  // namespace
}  // namespace strata::search::subst
