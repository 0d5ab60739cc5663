// The cost-based optimizer: matching respects operators, parameters and outside consumers; rewrites lower the
// predicted time and leave the computed function unchanged (reference executor on random data); results are
// deterministic.
#include <cmath>

#include <gtest/gtest.h>

#include "hw/gpu_spec.h"
#include "models/exec/executor.h"
#include "search/subst/optimizer.h"
#include "search/subst/rule.h"

namespace strata::search::subst {
namespace {

using models::Graph;
using models::TensorType;

// TASO's shipped rules 64 (conv + relu fusion) and 77 (two matmuls sharing an input merged through concat).
const char* kRules =
    "64\trelu(conv2d(1,1,0,0,input_7,input_10)) == conv2d(1,1,0,2,input_7,input_10)\n"
    "77\tmatmul(input_1,input_4) == split_0(1,matmul(input_1,concat(1,input_4,input_5)))\n"
    "77\tmatmul(input_1,input_5) == split_1(1,matmul(input_1,concat(1,input_4,input_5)))\n";

std::vector<Rule> rules() {
  return parse_taso_equations(kRules, "test", TasoShapes::unknown);
}

models::CostModel a100() {
  return models::CostModel(*hw::find_gpu("a100-sxm4-80gb"));
}

// x -> conv(w1) -> relu -> out1 ; x -> matmul-branch: y @ a, y @ b -> out2, out3
Graph test_graph(bool extra_conv_consumer) {
  Graph g("t");
  const auto x = g.add_input("x", TensorType{{1, 16, 14, 14}});
  const auto w = g.add_param("w", TensorType{{16, 16, 3, 3}});
  const auto c = g.add("conv2d", {x, w}, {{"pads", models::Ints{1, 1, 1, 1}}}, "conv");
  const auto r = g.add("relu", {c}, {}, "relu");
  g.mark_output(r);
  if (extra_conv_consumer) g.mark_output(c);
  const auto y = g.add_input("y", TensorType{{64, 128}});
  const auto a = g.add_param("a", TensorType{{128, 128}});
  const auto b = g.add_param("b", TensorType{{128, 128}});
  g.mark_output(g.add("matmul", {y, a}, {}, "mm_a"));
  g.mark_output(g.add("matmul", {y, b}, {}, "mm_b"));
  return g;
}

double max_abs_difference(const Graph& a, const Graph& b, std::uint64_t seed) {
  models::ExecOptions o;
  o.seed = seed;
  const auto ra = models::execute<double>(a, {}, o);
  const auto rb = models::execute<double>(b, {}, o);
  // execute returns every value's data, indexed by value id; compare the graph outputs in order.
  EXPECT_EQ(a.outputs().size(), b.outputs().size());
  double d = 0;
  for (std::size_t i = 0; i < a.outputs().size() && i < b.outputs().size(); ++i) {
    const auto& va = ra[static_cast<std::size_t>(a.outputs()[i])];
    const auto& vb = rb[static_cast<std::size_t>(b.outputs()[i])];
    EXPECT_EQ(va.size(), vb.size());
    for (std::size_t k = 0; k < va.size() && k < vb.size(); ++k) d = std::max(d, std::abs(va[k] - vb[k]));
  }
  return d;
}

TEST(OptimizerMatch, FindsConvReluAndMatmulPair) {
  const auto rs = rules();
  ASSERT_EQ(rs.size(), 2u);
  const Graph g = test_graph(false);
  const auto conv = find_matches(g, rs[0], 0);
  ASSERT_EQ(conv.size(), 1u);
  EXPECT_EQ(conv[0].nodes.size(), 2u);
  // Both orders of the two matmuls.
  EXPECT_EQ(find_matches(g, rs[1], 1).size(), 2u);
}

TEST(OptimizerMatch, IntermediateWithOutsideConsumerIsNotMatched) {
  const auto rs = rules();
  EXPECT_TRUE(find_matches(test_graph(true), rs[0], 0).empty());
}

TEST(OptimizerMatch, ParametersMustAgree) {
  Graph g("s");
  const auto x = g.add_input("x", TensorType{{1, 16, 14, 14}});
  const auto w = g.add_param("w", TensorType{{16, 16, 3, 3}});
  // stride 2: rule 64 is stated for stride 1
  const auto c =
      g.add("conv2d", {x, w}, {{"pads", models::Ints{1, 1, 1, 1}}, {"strides", models::Ints{2, 2}}});
  g.mark_output(g.add("relu", {c}));
  EXPECT_TRUE(find_matches(g, rules()[0], 0).empty());
}

TEST(OptimizerApply, RewriteIsEquivalentAndCheaper) {
  const auto rs = rules();
  const Graph g = test_graph(false);
  const auto m = find_matches(g, rs[0], 0);
  ASSERT_EQ(m.size(), 1u);
  const auto out = apply_match(g, rs[0], m[0], "t_");
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(out->nodes().size(), g.nodes().size() - 1);
  EXPECT_LT(graph_cost(*out, a100()), graph_cost(g, a100()));
  EXPECT_LT(max_abs_difference(g, *out, 3), 1e-9);
  const auto mm = find_matches(g, rs[1], 1);
  ASSERT_FALSE(mm.empty());
  const auto merged = apply_match(g, rs[1], mm[0], "t_");
  ASSERT_TRUE(merged.has_value());
  EXPECT_LT(max_abs_difference(g, *merged, 4), 1e-9);
}

TEST(Optimizer, LowersCostKeepsFunctionDeterministic) {
  const auto rs = rules();
  const Graph g = test_graph(false);
  const auto cost = a100();
  const auto r1 = optimize(g, rs, cost);
  EXPECT_LT(r1.cost_after, r1.cost_before);
  EXPECT_DOUBLE_EQ(r1.cost_before, graph_cost(g, cost));
  EXPECT_DOUBLE_EQ(r1.cost_after, graph_cost(r1.graph, cost));
  ASSERT_FALSE(r1.applied.empty());
  bool fused = false;
  for (const auto& a : r1.applied)
    fused |= a.rule == "64" && a.nodes == std::vector<std::string>{"conv", "relu"};
  EXPECT_TRUE(fused);
  EXPECT_LT(max_abs_difference(g, r1.graph, 11), 1e-9);
  const auto r2 = optimize(g, rs, cost);
  EXPECT_EQ(graph_hash(r1.graph), graph_hash(r2.graph));
  EXPECT_EQ(r1.cost_after, r2.cost_after);
  EXPECT_EQ(r1.explored, r2.explored);
  ASSERT_EQ(r1.applied.size(), r2.applied.size());
  for (std::size_t i = 0; i < r1.applied.size(); ++i) EXPECT_EQ(r1.applied[i].nodes, r2.applied[i].nodes);
}

TEST(Optimizer, GraphHashIgnoresNodeOrder) {
  Graph a("a"), b("b");
  for (Graph* g : {&a, &b}) {
    g->add_input("x", TensorType{{4, 4}});
  }
  const auto xa = a.find_value("x");
  const auto xb = b.find_value("x");
  const auto ra = a.add("relu", {xa});
  const auto ta = a.add("transpose", {xa}, {{"perm", models::Ints{1, 0}}});
  const auto tb = b.add("transpose", {xb}, {{"perm", models::Ints{1, 0}}});
  const auto rb = b.add("relu", {xb});
  a.mark_output(ra);
  a.mark_output(ta);
  b.mark_output(rb);
  b.mark_output(tb);
  EXPECT_EQ(graph_hash(a), graph_hash(b));
  Graph c("c");
  const auto xc = c.add_input("x", TensorType{{4, 4}});
  c.mark_output(c.add("relu", {xc}));
  c.mark_output(c.add("relu", {xc}));
  EXPECT_NE(graph_hash(a), graph_hash(c));
}

}  // namespace
}  // namespace strata::search::subst
