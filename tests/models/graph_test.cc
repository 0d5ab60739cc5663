// Graph::try_add_node and friends: the non-throwing form the search loops use (docs/subst.md, "Rejected
// candidates"). A rejection leaves the graph unchanged and gives the diagnostic add_node would throw; a
// success is the same node add_node builds.
#include <cstdint>
#include <string>

#include <gtest/gtest.h>

#include "models/ir/graph.h"

namespace strata::models {
namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A graph with two matrices whose inner dimensions differ (a: 2x3, b: 4x5) and one that fits a (c: 3x5).
struct Mats {
  Graph g{"mats"};
  ValueId a = g.add_input("a", TensorType{{2, 3}});
  ValueId b = g.add_input("b", TensorType{{4, 5}});
  ValueId c = g.add_input("c", TensorType{{3, 5}});
};

TEST(TryAddNode, ShapeRejectionIsADiagnosticNamingNodeOperatorAndReason) {
  Mats m;
  const auto nodes = m.g.nodes().size(), values = m.g.values().size();
  TryResult<std::vector<ValueId>> r({});
  EXPECT_NO_THROW(r = m.g.try_add_node("matmul", {m.a, m.b}, {}, "mm"));
  ASSERT_FALSE(r.ok());
  const std::string& d = r.diagnostic();
  EXPECT_TRUE(contains(d, "node 'mm' (matmul): ")) << d;
  // a's inner dimension is 3, b's is 4 (the matmul shape rule names them in that order).
  EXPECT_TRUE(contains(d, "contraction dimensions differ: 3 vs 4")) << d;
  EXPECT_TRUE(contains(d, "inputs: f32[2,3], f32[4,5]")) << d;
  // Nothing was added.
  EXPECT_EQ(m.g.nodes().size(), nodes);
  EXPECT_EQ(m.g.values().size(), values);
}

TEST(TryAddNode, AddNodeThrowsTheSameDiagnostic) {
  Mats m;
  const auto r = m.g.try_add_node("matmul", {m.a, m.b}, {}, "mm");
  ASSERT_FALSE(r.ok());
  try {
    m.g.add_node("matmul", {m.a, m.b}, {}, "mm");
    FAIL() << "add_node accepted a contraction mismatch";
  } catch (const GraphError& e) {
    EXPECT_EQ(std::string(e.what()), r.diagnostic());
  }
  EXPECT_TRUE(m.g.nodes().empty());
}

TEST(TryAddNode, EveryCheckGivesADiagnosticWithoutThrowing) {
  Mats m;
  struct Case {
    TryResult<std::vector<ValueId>> r;
    const char* expected;
  };
  const Case cases[] = {
      {m.g.try_add_node("no_such_op", {m.a}, {}, "x"), "node 'x': unknown operator 'no_such_op' (known: "},
      {m.g.try_add_node("matmul", {m.a}, {}, "x"), "node 'x' (matmul): 1 inputs given, expected 2"},
      {m.g.try_add_node("relu", {ValueId{17}}, {}, "x"), "node 'x' (relu): input value id 17 does not exist"},
      {m.g.try_add_node("relu", {m.a}, {{"alpha", 1.0}}, "x"),
       "node 'x' (relu): operator 'relu' has no attribute 'alpha'"},
      {m.g.try_add_node("concat", {m.a, m.c}, {}, "x"),
       "node 'x' (concat): operator 'concat' requires attribute "
       "'axis'"},
      {m.g.try_add_node("concat", {m.a, m.c}, {{"axis", std::string("0")}}, "x"),
       "node 'x' (concat): attribute 'axis' of 'concat' must be int, got string"},
  };
  for (const auto& c : cases) {
    ASSERT_FALSE(c.r.ok()) << c.expected;
    EXPECT_TRUE(contains(c.r.diagnostic(), c.expected)) << c.r.diagnostic();
  }
  EXPECT_TRUE(m.g.nodes().empty());
  EXPECT_EQ(m.g.values().size(), 3u);
}

TEST(TryAddNode, OutputTooLargeForInt64IsADiagnostic) {
  Graph g;
  // 2^40 x 2^10 times 2^10 x 2^40: each input has 2^50 elements, the product 2^80.
  const std::int64_t big = std::int64_t{1} << 40, k = 1024;
  const ValueId a = g.add_input("a", TensorType{{big, k}});
  const ValueId b = g.add_input("b", TensorType{{k, big}});
  const auto r = g.try_add_node("matmul", {a, b}, {}, "huge");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(contains(r.diagnostic(),
                       "node 'huge' (matmul): shape [1099511627776,1099511627776] has more "
                       "than 2^63 - 1 elements"))
      << r.diagnostic();
  EXPECT_TRUE(g.nodes().empty());
}

TEST(TryAddNode, SuccessIsTheNodeAddNodeBuilds) {
  Graph thrown("t"), tried("t");
  for (Graph* g : {&thrown, &tried}) {
    g->add_input("x", TensorType{{1, 4, 8, 8}});
    g->add_param("w", TensorType{{6, 4, 3, 3}});
  }
  const Attrs conv_attrs{{"pads", Ints{1, 1, 1, 1}}};
  const Attrs split_attrs{{"axis", std::int64_t{1}}, {"sizes", Ints{2, 4}}};
  const auto y1 = thrown.add_node("conv2d", {0, 1}, conv_attrs);
  const auto p1 = thrown.add_node("split", {y1[0]}, split_attrs, "parts", ValueKind::kGradient);
  const auto r1 = tried.try_add_node("conv2d", {0, 1}, conv_attrs);
  ASSERT_TRUE(r1.ok()) << r1.diagnostic();
  const auto r2 = tried.try_add_node("split", {r1.value()[0]}, split_attrs, "parts", ValueKind::kGradient);
  ASSERT_TRUE(r2.ok()) << r2.diagnostic();
  EXPECT_EQ(r1.value(), y1);
  EXPECT_EQ(r2.value(), p1);
  ASSERT_EQ(tried.nodes().size(), 2u);
  ASSERT_EQ(tried.values().size(), thrown.values().size());
  // The default name is "<op><index>", the output of a 3x3 convolution padded by 1 keeps 8x8, and the split
  // outputs are "<name>:<i>" of 2 and 4 channels.
  EXPECT_EQ(tried.node(0).name, "conv2d0");
  EXPECT_EQ(tried.type(r1.value()[0]).shape, (Shape{1, 6, 8, 8}));
  EXPECT_EQ(tried.type(r2.value()[0]).shape, (Shape{1, 2, 8, 8}));
  EXPECT_EQ(tried.type(r2.value()[1]).shape, (Shape{1, 4, 8, 8}));
  EXPECT_EQ(tried.value(r2.value()[1]).name, "parts:1");
  for (NodeId n = 0; n < 2; ++n) {
    EXPECT_EQ(tried.node(n).op, thrown.node(n).op);
    EXPECT_EQ(tried.node(n).name, thrown.node(n).name);
    EXPECT_EQ(tried.node(n).inputs, thrown.node(n).inputs);
    EXPECT_EQ(tried.node(n).outputs, thrown.node(n).outputs);
    // Defaults filled in the same way (conv2d's strides, groups, activation, ...).
    EXPECT_EQ(tried.node(n).attrs.str(), thrown.node(n).attrs.str());
  }
  EXPECT_TRUE(tried.node(0).attrs.has("groups"));
  for (ValueId v = 0; v < static_cast<ValueId>(tried.values().size()); ++v) {
    EXPECT_EQ(tried.value(v).name, thrown.value(v).name);
    EXPECT_EQ(tried.value(v).type, thrown.value(v).type);
    EXPECT_EQ(tried.value(v).kind, thrown.value(v).kind);
    EXPECT_EQ(tried.value(v).producer, thrown.value(v).producer);
    EXPECT_EQ(tried.value(v).producer_output, thrown.value(v).producer_output);
  }
}

TEST(TryAdd, MultiOutputOperatorIsRejectedBeforeAnythingIsAdded) {
  Graph g;
  const ValueId x = g.add_input("x", TensorType{{2, 6}});
  const Attrs split_attrs{{"axis", std::int64_t{1}}, {"sizes", Ints{2, 4}}};
  const auto r = g.try_add("split", {x}, split_attrs, "s");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.diagnostic(), "operator 'split' has 2 outputs, not 1");
  EXPECT_TRUE(g.nodes().empty());
  EXPECT_EQ(g.values().size(), 1u);
  // The throwing form has the same message, and leaves the graph unchanged too.
  try {
    g.add("split", {x}, split_attrs, "s");
    FAIL() << "add accepted a two-output operator";
  } catch (const GraphError& e) {
    EXPECT_EQ(std::string(e.what()), r.diagnostic());
  }
  EXPECT_TRUE(g.nodes().empty());
  const auto ok = g.try_add("relu", {x}, {}, "r");
  ASSERT_TRUE(ok.ok()) << ok.diagnostic();
  EXPECT_EQ(g.node(0).outputs, std::vector<ValueId>{ok.value()});
}

TEST(TryCompleteAttrs, FillsDefaultsWidensIntsAndDiagnosesTheRest) {
  const OpDef& bn = *OpRegistry::instance().find("batchnorm");
  // An integer where a float is expected is accepted as that float.
  const auto widened = try_complete_attrs(bn, Attrs{{"epsilon", std::int64_t{2}}}, "here");
  ASSERT_TRUE(widened.ok()) << widened.diagnostic();
  EXPECT_EQ(widened.value().f("epsilon"), 2.0);
  const auto wrong = try_complete_attrs(bn, Attrs{{"epsilon", std::string("small")}}, "here");
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.diagnostic(), "here: attribute 'epsilon' of 'batchnorm' must be float, got string");
  EXPECT_THROW(complete_attrs(bn, Attrs{{"epsilon", std::string("small")}}, "here"), GraphError);
}

TEST(TryInferTypes, OutputTypesOrTheShapeRulesReasonWithoutAGraph) {
  const OpDef& mm = *OpRegistry::instance().find("matmul");
  const Attrs attrs = complete_attrs(mm, {}, "here");
  // 2x3 times 3x5 is 2x5.
  const std::vector<TensorType> fits = {TensorType{{2, 3}}, TensorType{{3, 5}}};
  const auto ok = try_infer_types(mm, fits, attrs, "here");
  ASSERT_TRUE(ok.ok()) << ok.diagnostic();
  ASSERT_EQ(ok.value().size(), 1u);
  EXPECT_EQ(ok.value()[0], (TensorType{{2, 5}}));
  const std::vector<TensorType> mismatch = {TensorType{{2, 3}}, TensorType{{4, 5}}};
  TryResult<std::vector<TensorType>> r({});
  EXPECT_NO_THROW(r = try_infer_types(mm, mismatch, attrs, "here"));
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.diagnostic().starts_with("here: contraction dimensions differ: 3 vs 4")) << r.diagnostic();
  EXPECT_TRUE(contains(r.diagnostic(), "(inputs: f32[2,3], f32[4,5]; attributes: ")) << r.diagnostic();
}

}  // namespace
}  // namespace strata::models
