// The rule file formats: strata's own (parse/format round trip, error messages naming file:line:column) and
// TASO's published equation files (counts and sizes against tests/subst/data/taso-rules/README.md).
#include <cctype>
#include <map>
#include <ostream>
#include <string>

#include <gtest/gtest.h>

#include "hw/config_error.h"
#include "search/subst/rule.h"
#include "test_data.h"

namespace strata::search::subst {
namespace {

using testing::kTaso133;
using testing::kTaso619;
using testing::kTaso820;
using testing::taso_data;

constexpr std::string_view kSample = R"(# two rules
rule matmul_assoc (x: 2x4, w1: 4x4, w2: 4x4)
  matmul(matmul(x,w1),w2) == matmul(x, matmul(w1, w2))   # spaces are allowed

rule split_merge (a: 2x4x5x5, b: 2x4x5x5, w: 4x4x3x3, s: scalar)
  split_0(1, concat(1, a, b)) == a
  conv2d(1,1,0,2,smul(a,s),w) == conv2d(1, 1, 0, 2, a, smul(w, s))
rule constants (x: ?)
  ewmul(x,Iewmul) == matmul(x, Imatmul())
)";

TEST(RuleFormat, ParsesEntriesWithShapesAndMultipleOutputs) {
  const auto rules = parse_rules(kSample, "sample.rules");
  ASSERT_EQ(rules.size(), 3u);
  EXPECT_EQ(rules[0].name, "matmul_assoc");
  ASSERT_EQ(rules[0].inputs.size(), 3u);
  EXPECT_EQ(rules[0].inputs[0].shape, (Shape{2, 4}));
  EXPECT_EQ(to_string(rules[0].outputs[0].rhs), "matmul(x,matmul(w1,w2))");
  EXPECT_EQ(rules[0].origin, "sample.rules:2");
  ASSERT_EQ(rules[1].outputs.size(), 2u);
  EXPECT_EQ(rules[1].inputs[3].shape, Shape{});  // scalar
  EXPECT_EQ(rules[1].outputs[1].lhs.params()[3].value, 2);
  EXPECT_FALSE(rules[2].inputs[0].shape.has_value());
  EXPECT_EQ(to_string(rules[2].outputs[0].rhs), "matmul(x,Imatmul)");
  EXPECT_EQ(source_op_count(rules[1]), 4);  // concat, split, smul, conv2d
  EXPECT_EQ(target_op_count(rules[1]), 2);  // smul, conv2d (the first output is an input)
}

TEST(RuleFormat, RoundTripsSample) {
  const auto rules = parse_rules(kSample, "sample.rules");
  const std::string text = format_rules(rules);
  const auto again = parse_rules(text, "formatted.rules");
  EXPECT_EQ(again, rules);
  EXPECT_EQ(format_rules(again), text);
}

TEST(RuleFormat, RoundTripsTheTaso820File) {
  const auto rules = load_rules(taso_data(kTaso820));
  const auto again = parse_rules(format_rules(rules), "formatted.rules");
  ASSERT_EQ(again.size(), rules.size());
  EXPECT_EQ(again, rules);
}

// Each malformed input must fail with exactly this "file:line:column: message" prefix.
struct BadInput {
  std::string text;
  std::string expected;
};

// Stable, readable test names for ctest: the expected position and message, letters and digits only.
void PrintTo(const BadInput& input, std::ostream* os) {
  std::string name;
  for (char c : input.expected.substr(10, 40)) name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  *os << name;
}

class RuleFormatErrors : public ::testing::TestWithParam<BadInput> {};

TEST_P(RuleFormatErrors, NameFileLineColumnAndWhatWasExpected) {
  try {
    (void)parse_rules(GetParam().text, "bad.rules");
    FAIL() << "accepted: " << GetParam().text;
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()).substr(0, GetParam().expected.size()), GetParam().expected) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, RuleFormatErrors,
    ::testing::Values(
        BadInput{"rule r (x: 2x4)\n  ewadd(x,y) == x\n", "bad.rules:2:11: 'y' is not an input of rule 'r'"},
        BadInput{"rule r (x: 2by4)\n  x == x\n", "bad.rules:1:12: expected a shape of input 'x'"},
        BadInput{"rule r (x: 2x4)\n  foo(x) == x\n", "bad.rules:2:3: unknown operator 'foo'"},
        BadInput{"rule r (x: 2x4x5x5, w: 4x4x3x3)\n  conv2d(1,1,x,w) == x\n",
                 "bad.rules:2:14: expected an integer for parameter 'pad' (padding) of conv2d"},
        BadInput{"rule r (x: 2x4)\n  relu(x) = x\n", "bad.rules:2:11: expected '==' between the two sides"},
        BadInput{"rule r (x: 2x4)\n  relu(x,x) == x\n",
                 "bad.rules:2:9: expected ')' after the 1 arguments of relu"},
        BadInput{"rule r (x: 2x4)\n  relu(x) == x )\n", "bad.rules:2:16: expected end of line"},
        BadInput{"  relu(x) == x\n", "bad.rules:1:1: expected 'rule NAME (INPUT: SHAPE, ...)' before"},
        BadInput{"rule r (x: 2x4)\n", "bad.rules:1:1: rule 'r' has no equations"},
        BadInput{"rule r (x: 2x4, y: 2x4)\n  relu(x) == x\n",
                 "bad.rules:1:1: rule 'r': input 'y' is declared but"},
        BadInput{"rule r (x: 2x4)\n  relu(x) == x\nrule r (x: 2x4)\n  x == relu(x)\n",
                 "bad.rules:3:6: rule name 'r' already used on line 1"},
        BadInput{"rule r (x: 2x4, x: 4x4)\n  x == x\n", "bad.rules:1:17: input 'x' declared twice"},
        BadInput{"rule r (relu: 2x4)\n  x == x\n", "bad.rules:1:9: expected an input name"},
        BadInput{"rules r (x: 2x4)\n", "bad.rules:1:1: expected an entry 'rule NAME (INPUT: SHAPE, ...)'"},
        BadInput{"rule r x: 2x4\n", "bad.rules:1:8: expected '(' opening the input list of rule 'r'"}));

TEST(TasoEquations, ReadsThe820FileWithGeneratorShapes) {
  const auto rules = load_rules(taso_data(kTaso820));
  ASSERT_EQ(rules.size(), 820u);
  std::size_t equations = 0, multi = 0;
  std::map<std::pair<int, int>, int> sizes;
  for (const auto& r : rules) {
    equations += r.outputs.size();
    multi += r.outputs.size() > 1 ? 1 : 0;
    ++sizes[{source_op_count(r), target_op_count(r)}];
  }
  // Counts and the size histogram of the 820 file given in its README (tests/subst/data/taso-rules).
  EXPECT_EQ(equations, 957u);
  EXPECT_EQ(multi, 137u);
  const std::map<std::pair<int, int>, int> expected{{{3, 3}, 642}, {{2, 3}, 92}, {{3, 2}, 47}, {{2, 2}, 20},
                                                    {{3, 1}, 10},  {{1, 3}, 5},  {{1, 2}, 3},  {{2, 1}, 1}};
  EXPECT_EQ(sizes, expected);
  // Rule 0: matmul(matmul(input_1,input_4),input_5) == ..., inputs in generator order with table shapes.
  ASSERT_EQ(rules[0].inputs.size(), 3u);
  EXPECT_EQ(rules[0].inputs[0], (RuleInput{"input_1", Shape{2, 4}}));
  EXPECT_EQ(rules[0].inputs[1], (RuleInput{"input_4", Shape{4, 4}}));
  EXPECT_EQ(rules[10].outputs.size(), 1u);
  EXPECT_EQ(rules[11].outputs.size(), 2u);  // "11" is the first index on two lines
  EXPECT_EQ(rules[820 - 1].name, "819");
}

TEST(TasoEquations, CountsOfThe619And133Files) {
  const auto r619 = load_rules(taso_data(kTaso619));
  const auto r133 = load_rules(taso_data(kTaso133), RuleFileFormat::kTaso, TasoShapes::kUnknown);
  std::size_t e619 = 0, e133 = 0, m619 = 0, m133 = 0;
  for (const auto& r : r619) e619 += r.outputs.size(), m619 += r.outputs.size() > 1;
  for (const auto& r : r133) e133 += r.outputs.size(), m133 += r.outputs.size() > 1;
  EXPECT_EQ(r619.size(), 619u);
  EXPECT_EQ(e619, 703u);
  EXPECT_EQ(m619, 84u);
  EXPECT_EQ(r133.size(), 133u);
  EXPECT_EQ(e133, 146u);
  EXPECT_EQ(m133, 13u);
  EXPECT_FALSE(r133[0].inputs[0].shape.has_value());
}

TEST(TasoEquations, ErrorsNameTheLine) {
  auto message = [](std::string_view text, TasoShapes shapes) {
    try {
      (void)parse_taso_equations(text, "t.txt", shapes);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(
      message("0\trelu(input_1) == input_1\n1\tinput_1 == input_2\n0\tinput_1 == input_1\n",
              TasoShapes::kGeneratorTable),
      "t.txt:3:1: rule index 0 was already used on line 1; the equations of a multi-output rule must be "
      "consecutive");
  EXPECT_EQ(message("0\trelu(input_21) == input_1\n", TasoShapes::kGeneratorTable).substr(0, 35),
            "t.txt:1:8: 'input_21' is not one of");
  EXPECT_EQ(message("0\trelu(x) == x\n", TasoShapes::kUnknown), "accepted");
  EXPECT_EQ(message("x\trelu(x) == x\n", TasoShapes::kUnknown).substr(0, 36),
            "t.txt:1:1: expected 'INDEX<TAB>LHS =");
  EXPECT_EQ(message("3\trelu(input_1) input_1\n", TasoShapes::kUnknown).substr(0, 55),
            "t.txt:1:17: expected '==' between the two sides, got 'i");
}

TEST(Shapes, ParseAndPrint) {
  EXPECT_EQ(shape_to_string(Shape{4, 4, 3, 3}), "4x4x3x3");
  EXPECT_EQ(shape_to_string(Shape{}), "scalar");
  EXPECT_EQ(shape_to_string(std::nullopt), "?");
  EXPECT_EQ(parse_shape("2x4"), std::optional<std::optional<Shape>>(Shape{2, 4}));
  EXPECT_FALSE(parse_shape("2x").has_value());
  EXPECT_FALSE(parse_shape("0x4").has_value());
  EXPECT_FALSE(parse_shape("").has_value());
}

// Issue 11: a rule nested 20,000 deep overflowed the stack in the recursive term parser (in both formats).
TEST(RuleFormat, DeeplyNestedTermsAreAnErrorNotAStackOverflow) {
  std::string term = "x";
  for (int i = 0; i < 20000; ++i) term = "relu(" + term + ")";
  for (const bool taso : {false, true}) {
    try {
      if (taso)
        (void)parse_taso_equations("0\t" + term + " == input_1\n", "deep.txt", TasoShapes::kUnknown);
      else
        (void)parse_rules("rule deep (x: 2x4)\n  " + term + " == x\n", "deep.rules");
      FAIL() << "no error";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("nested more than 256 operators deep"), std::string::npos)
          << e.what();
    }
  }
  // 256 levels (255 operators around a variable) are fine.
  std::string ok = "x";
  for (int i = 0; i < 255; ++i) ok = "relu(" + ok + ")";
  EXPECT_EQ(parse_rules("rule ok (x: 2x4)\n  " + ok + " == x\n", "ok.rules").size(), 1u);
}

}  // namespace
}  // namespace strata::search::subst
