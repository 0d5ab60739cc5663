// Shape inference and reference kernels of every operator against hand-computed values; the prime-field
// kernels against exact integer results and TASO's constant axioms.
#include <cmath>

#include "models/exec/executor.h"
#include "models/ir/graph.h"
#include "tests/models/test_util.h"

namespace strata::models {
namespace {

using testing::expect_near;
using testing::iota;
using testing::Lit;
using testing::run1;

TEST(OpTable, EveryOperatorIsCompleteAndUnique) {
  const auto& reg = OpRegistry::instance();
  EXPECT_GE(reg.all().size(), 40u);
  for (const auto& op : reg.all()) {
    EXPECT_FALSE(op.symbol.empty()) << op.name;
    EXPECT_FALSE(op.summary.empty()) << op.name;
    // Forward operators on real tensors are differentiable unless they are constants.
    if (!op.backward && op.kind != OpKind::kConstant) {
      EXPECT_NE(op.grad, nullptr) << op.name;
    }
  }
  for (const char* name :
       {"conv2d",    "matmul",    "batch_matmul", "ewadd",      "ewmul",       "scalar_mul",
        "relu",      "gelu",      "silu",         "sigmoid",    "tanh",        "concat",
        "split",     "transpose", "reshape",      "maxpool2d",  "avgpool2d",   "batchnorm",
        "layernorm", "rmsnorm",   "softmax",      "reduce_sum", "reduce_mean", "enlarge",
        "embedding", "const_imm", "const_iconv",  "const_one",  "const_pool"})
    EXPECT_NE(reg.find(name), nullptr) << name;
  EXPECT_EQ(reg.get("scalar_mul").symbol, "smul");
  EXPECT_EQ(reg.get("maxpool2d").symbol, "poolmax");  // TASO's rule spelling
  EXPECT_THROW(reg.get("nope"), std::invalid_argument);
}

TEST(Elementwise, BroadcastAddSubMul) {
  Shape s;
  expect_near(run1("ewadd", {{{2, 3}, iota(6)}, {{3}, {10, 20, 30}}}, {}, &s), {11, 22, 33, 14, 25, 36});
  EXPECT_EQ(s, (Shape{2, 3}));
  expect_near(run1("ewsub", {{{2, 1}, {1, 2}}, {{3}, {1, 2, 3}}}, {}, &s), {0, -1, -2, 1, 0, -1});
  EXPECT_EQ(s, (Shape{2, 3}));
  expect_near(run1("ewmul", {{{2, 2}, {1, 2, 3, 4}}, {{2, 1}, {2, -1}}}), {2, 4, -3, -4});
  expect_near(run1("scalar_mul", {{{2}, {1, 2}}, {{}, {3}}}), {3, 6});
  EXPECT_THROW(testing::build("ewadd", {{{2, 3}, {}}, {{2}, {}}}), GraphError);
  EXPECT_THROW(testing::build("scalar_mul", {{{2}, {}}, {{1}, {}}}), GraphError);
}

TEST(Elementwise, Activations) {
  expect_near(run1("relu", {{{3}, {-1, 0.5, 2}}}), {0, 0.5, 2});
  expect_near(run1("sigmoid", {{{2}, {0, 2}}}), {0.5, 0.8807970780});
  expect_near(run1("tanh", {{{1}, {0.5}}}), {0.4621171573});
  expect_near(run1("gelu", {{{2}, {1, -1}}}), {0.8413447461, -0.1586552539});
  expect_near(run1("silu", {{{1}, {1}}}), {0.7310585786});
  expect_near(run1("rsqrt", {{{2}, {4, 0.25}}}), {0.5, 2});
  expect_near(run1("relu_grad", {{{2}, {-1, 2}}, {{2}, {5, 7}}}), {0, 7});
}

TEST(Contraction, Matmul) {
  Shape s;
  const std::vector<double> a = {1, 2, 3, 4, 5, 6}, b = {7, 8, 9, 10, 11, 12};
  expect_near(run1("matmul", {{{2, 3}, a}, {{3, 2}, b}}, {}, &s), {58, 64, 139, 154});
  EXPECT_EQ(s, (Shape{2, 2}));
  expect_near(run1("matmul", {{{2, 3}, a}, {{2, 3}, {7, 9, 11, 8, 10, 12}}}, {{"trans_b", std::int64_t{1}}}),
              {58, 64, 139, 154});
  expect_near(run1("matmul", {{{3, 2}, {1, 4, 2, 5, 3, 6}}, {{3, 2}, b}}, {{"trans_a", std::int64_t{1}}}),
              {58, 64, 139, 154});
  expect_near(
      run1("matmul", {{{1, 2}, {1, -1}}, {{2, 2}, {1, 2, 3, 1}}}, {{"activation", std::string("relu")}}),
      {0, 1});
  EXPECT_THROW(testing::build("matmul", {{{2, 3}, {}}, {{2, 3}, {}}}), GraphError);
  EXPECT_THROW(testing::build("matmul", {{{2, 3, 1}, {}}, {{1, 3}, {}}}), GraphError);
}

TEST(Contraction, BatchMatmulBroadcastsBatchDims) {
  Shape s;
  expect_near(run1("batch_matmul", {{{2, 2, 2}, iota(8)}, {{2, 2}, {0, 1, 1, 0}}}, {}, &s),
              {2, 1, 4, 3, 6, 5, 8, 7});
  EXPECT_EQ(s, (Shape{2, 2, 2}));
  testing::build("batch_matmul", {{{3, 1, 4, 5}, {}}, {{2, 5, 6}, {}}});
  EXPECT_EQ(testing::build("batch_matmul", {{{3, 1, 4, 5}, {}}, {{2, 5, 6}, {}}}).g.type(2).shape,
            (Shape{3, 2, 4, 6}));
}

TEST(Contraction, Conv2d) {
  Shape s;
  const Lit x{{1, 1, 3, 3}, iota(9)};
  const Lit ones{{1, 1, 2, 2}, {1, 1, 1, 1}};
  expect_near(run1("conv2d", {x, ones}, {}, &s), {12, 16, 24, 28});
  EXPECT_EQ(s, (Shape{1, 1, 2, 2}));
  expect_near(run1("conv2d", {x, ones}, {{"pads", Ints{1, 1, 1, 1}}, {"strides", Ints{2, 2}}}, &s),
              {1, 5, 11, 28});
  EXPECT_EQ(s, (Shape{1, 1, 2, 2}));
  expect_near(run1("conv2d", {x, ones}, {{"dilations", Ints{2, 2}}}, &s), {20});
  const Lit x2{{1, 2, 2, 2}, iota(8)};
  const Lit dw{{2, 1, 1, 1}, {2, -1}};
  expect_near(run1("conv2d", {x2, dw}, {{"groups", std::int64_t{2}}}), {2, 4, 6, 8, -5, -6, -7, -8});
  expect_near(run1("conv2d", {x2, dw}, {{"groups", std::int64_t{2}}, {"activation", std::string("relu")}}),
              {2, 4, 6, 8, 0, 0, 0, 0});
  expect_near(run1("conv2d", {x2, dw, {{2}, {1, 10}}}, {{"groups", std::int64_t{2}}}),
              {3, 5, 7, 9, 5, 4, 3, 2});
  try {
    testing::build("conv2d", {{{1, 3, 4, 4}, {}}, {{2, 2, 3, 3}, {}}});
    FAIL() << "channel mismatch accepted";
  } catch (const GraphError& e) {
    EXPECT_NE(std::string(e.what()).find("node 'n' (conv2d)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("input channels"), std::string::npos) << e.what();
  }
}

TEST(Contraction, EnlargeCentresTheKernel) {
  Shape s;
  expect_near(run1("enlarge", {{{1, 1, 1, 3}, {1, 2, 3}}}, {{"kernel", Ints{3, 3}}}, &s),
              {0, 0, 0, 1, 2, 3, 0, 0, 0});
  EXPECT_EQ(s, (Shape{1, 1, 3, 3}));
  EXPECT_THROW(testing::build("enlarge", {{{1, 1, 2, 2}, {}}}, {{"kernel", Ints{3, 3}}}), GraphError);
}

TEST(Movement, ConcatSplitTransposeReshapeExpand) {
  Shape s;
  expect_near(run1("concat", {{{2, 1}, {1, 2}}, {{2, 2}, {3, 4, 5, 6}}}, {{"axis", std::int64_t{1}}}, &s),
              {1, 3, 4, 2, 5, 6});
  EXPECT_EQ(s, (Shape{2, 3}));
  auto parts = testing::run_op<double>("split", {{{2, 3}, iota(6)}},
                                       {{"axis", std::int64_t{1}}, {"sizes", Ints{1, 2}}});
  ASSERT_EQ(parts.size(), 2u);
  expect_near(parts[0], {1, 4});
  expect_near(parts[1], {2, 3, 5, 6});
  expect_near(run1("transpose", {{{2, 3}, iota(6)}}, {}, &s), {1, 4, 2, 5, 3, 6});
  EXPECT_EQ(s, (Shape{3, 2}));
  expect_near(run1("transpose", {{{2, 2, 2}, iota(8)}}, {{"perm", Ints{1, 0, 2}}}), {1, 2, 5, 6, 3, 4, 7, 8});
  expect_near(run1("reshape", {{{2, 3}, iota(6)}}, {{"shape", Ints{3, -1}}}, &s), iota(6));
  EXPECT_EQ(s, (Shape{3, 2}));
  expect_near(run1("expand", {{{3, 1}, {1, 2, 3}}}, {{"shape", Ints{3, 2}}}), {1, 1, 2, 2, 3, 3});
  EXPECT_THROW(testing::build("split", {{{2, 3}, {}}}, {{"axis", std::int64_t{1}}, {"sizes", Ints{1, 1}}}),
               GraphError);
  EXPECT_THROW(testing::build("reshape", {{{2, 3}, {}}}, {{"shape", Ints{4, -1}}}), GraphError);
  EXPECT_THROW(testing::build("concat", {{{2, 3}, {}}, {{3, 3}, {}}}, {{"axis", std::int64_t{1}}}),
               GraphError);
}

TEST(Pooling, MaxAndAverage) {
  Shape s;
  const Lit x{{1, 1, 4, 4}, iota(16)};
  const Attrs k2s2{{"kernel", Ints{2, 2}}, {"strides", Ints{2, 2}}};
  expect_near(run1("maxpool2d", {x}, k2s2, &s), {6, 8, 14, 16});
  EXPECT_EQ(s, (Shape{1, 1, 2, 2}));
  expect_near(run1("avgpool2d", {x}, k2s2), {3.5, 5.5, 11.5, 13.5});
  const Lit small{{1, 1, 2, 2}, {1, 2, 3, 4}};
  const Attrs k3p1{{"kernel", Ints{3, 3}}, {"pads", Ints{1, 1, 1, 1}}};
  expect_near(run1("avgpool2d", {small}, k3p1), {2.5, 2.5, 2.5, 2.5});
  Attrs incl = k3p1;
  incl.set("count_include_pad", std::int64_t{1});
  expect_near(run1("avgpool2d", {small}, incl), {10.0 / 9, 10.0 / 9, 10.0 / 9, 10.0 / 9});
  Attrs ceil = k2s2;
  ceil.set("ceil_mode", std::int64_t{1});
  expect_near(run1("maxpool2d", {{{1, 1, 3, 3}, iota(9)}}, ceil, &s), {5, 6, 8, 9});
  EXPECT_EQ(s, (Shape{1, 1, 2, 2}));
}

TEST(Normalization, BatchLayerRmsSoftmax) {
  expect_near(run1("batchnorm",
                   {{{1, 2, 1, 2}, {1, 2, 3, 4}}, {{2}, {1, 2}}, {{2}, {0, 1}}, {{2}, {1, 3}}, {{2}, {4, 1}}},
                   {{"epsilon", 0.0}}),
              {0, 0.5, 1, 3});
  expect_near(run1("layernorm", {{{3}, {1, 2, 3}}, {{3}, {1, 1, 2}}, {{3}, {0, 1, 0}}}, {{"epsilon", 0.0}}),
              {-1.2247448714, 1, 2.4494897428});
  expect_near(run1("layernorm", {{{2, 2}, {1, 3, 5, 5}}, {{2, 2}, {1, 1, 1, 1}}},
                   {{"epsilon", 0.0}, {"axis", std::int64_t{0}}}),
              {-1.5075567229, -0.3015113446, 0.9045340337, 0.9045340337});
  expect_near(run1("rmsnorm", {{{2}, {3, 4}}, {{2}, {1, 2}}}, {{"epsilon", 0.0}}),
              {0.8485281374, 2.2627416998});
  expect_near(run1("softmax", {{{3}, {1, 2, 3}}}), {0.0900305732, 0.2447284711, 0.6652409558});
  expect_near(run1("softmax", {{{2, 2}, {1, 2, 3, 4}}}, {{"axis", std::int64_t{0}}}),
              {0.1192029220, 0.1192029220, 0.8807970780, 0.8807970780});
  expect_near(run1("softmax", {{{2, 2}, {0, 0, 0, 0}}}, {{"causal", std::int64_t{1}}}), {1, 0, 0.5, 0.5});
}

TEST(Reduction, SumAndMean) {
  Shape s;
  expect_near(run1("reduce_sum", {{{2, 3}, iota(6)}}, {{"axes", Ints{1}}, {"keepdims", std::int64_t{0}}}, &s),
              {6, 15});
  EXPECT_EQ(s, (Shape{2}));
  expect_near(run1("reduce_mean", {{{2, 3}, iota(6)}}, {{"axes", Ints{0}}}, &s), {2.5, 3.5, 4.5});
  EXPECT_EQ(s, (Shape{1, 3}));
  expect_near(run1("reduce_sum", {{{2, 3}, iota(6)}}, {{"keepdims", std::int64_t{0}}}, &s), {21});
  EXPECT_EQ(s, (Shape{}));
}

TEST(Embedding, GathersRowsAndRejectsBadIndices) {
  Shape s;
  expect_near(run1("embedding", {{{3, 2}, iota(6)}, {{3}, {2, 0, 2}, DType::kI64}}, {}, &s),
              {5, 6, 1, 2, 5, 6});
  EXPECT_EQ(s, (Shape{3, 2}));
  EXPECT_THROW(run1("embedding", {{{3, 2}, iota(6)}, {{1}, {3}, DType::kI64}}), std::out_of_range);
  EXPECT_THROW(testing::build("embedding", {{{3, 2}, {}}, {{1}, {}}}), GraphError);
  expect_near(run1("embedding_grad", {{{3}, {2, 0, 2}, DType::kI64}, {{3, 2}, iota(6)}},
                   {{"vocab", std::int64_t{3}}}),
              {3, 4, 0, 0, 6, 8});
}

TEST(Constants, TasoConstants) {
  expect_near(testing::run_op<double>("const_imm", {}, {{"size", std::int64_t{2}}})[0], {1, 0, 0, 1});
  expect_near(
      testing::run_op<double>("const_pool", {}, {{"channels", std::int64_t{1}}, {"kernel", Ints{2, 2}}})[0],
      {0.25, 0.25, 0.25, 0.25});
  expect_near(testing::run_op<double>("const_one", {}, {{"shape", Ints{2}}})[0], {1, 1});
  const auto ic =
      testing::run_op<double>("const_iconv", {}, {{"channels", std::int64_t{2}}, {"kernel", Ints{3, 3}}})[0];
  ASSERT_EQ(ic.size(), 36u);
  double total = 0;
  for (double v : ic) total += v;
  EXPECT_EQ(total, 2);
  EXPECT_EQ(ic[4], 1);       // (0,0,1,1)
  EXPECT_EQ(ic[27 + 4], 1);  // (1,1,1,1)
}

TEST(Optimizer, SgdAndAdamFirstStep) {
  expect_near(run1("sgd_update", {{{2}, {1, 2}}, {{2}, {0.5, -1}}}, {{"lr", 0.1}}), {0.95, 2.1});
  // Adam's first bias-corrected step moves each parameter by lr against the gradient's sign.
  const auto out = testing::run_op<double>(
      "adam_update", {{{2}, {1, 2}}, {{2}, {0.5, -3}}, {{2}, {0, 0}}, {{2}, {0, 0}}}, {{"lr", 0.1}});
  ASSERT_EQ(out.size(), 3u);
  expect_near(out[0], {0.9, 2.1}, 1e-6);
  expect_near(out[1], {0.05, -0.3});             // m = (1 - 0.9) g
  expect_near(out[2], {0.00025, 0.009}, 1e-12);  // v = (1 - 0.999) g^2
}

// Mixed precision: the update starts from the f32 master copy (last input), not from the rounded parameter,
// and returns the new master copy as its last output (p' = master - lr * step, by hand).
TEST(Optimizer, MasterWeightsAreTheUpdateBase) {
  const auto sgd = testing::run_op<double>(
      "sgd_update", {{{2}, {1, 2}, DType::kF16}, {{2}, {0.5, -1}, DType::kF16}, {{2}, {1.25, 2.5}}},
      {{"lr", 0.1}});
  ASSERT_EQ(sgd.size(), 2u);
  expect_near(sgd[0], {1.2, 2.6});
  expect_near(sgd[1], {1.2, 2.6});
  const auto adam = testing::run_op<double>("adam_update",
                                            {{{2}, {1, 2}, DType::kBF16},
                                             {{2}, {0.5, -3}, DType::kBF16},
                                             {{2}, {0, 0}},
                                             {{2}, {0, 0}},
                                             {{2}, {1.25, 2.5}}},
                                            {{"lr", 0.1}});
  ASSERT_EQ(adam.size(), 4u);
  expect_near(adam[0], {1.15, 2.6}, 1e-6);  // first step moves by lr against the gradient's sign
  expect_near(adam[3], {1.15, 2.6}, 1e-6);
}

// Issue 10, defect 1: a concat of f16 and f32 inputs of the same rank said "expected rank 2 and f16" for a
// rank-2 input; the message names what differs.
TEST(Concat, MismatchMessageNamesWhatDiffers) {
  try {
    testing::build("concat", {{{1, 4}, {}, DType::kF16}, {{1, 8}, {}, DType::kF32}},
                   {{"axis", std::int64_t{1}}});
    FAIL() << "mixed element types accepted";
  } catch (const GraphError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("input 1 has type f32[1,8], expected element type f16 like input 0 (f16[1,4])"),
              std::string::npos)
        << msg;
    EXPECT_EQ(msg.find("expected rank"), std::string::npos) << msg;
  }
  try {
    testing::build("concat", {{{1, 4}, {}}, {{1, 4, 1}, {}}}, {{"axis", std::int64_t{1}}});
    FAIL() << "mixed ranks accepted";
  } catch (const GraphError& e) {
    EXPECT_NE(std::string(e.what()).find("input 1 has type f32[1,4,1], expected rank 2 like input 0"),
              std::string::npos)
        << e.what();
  }
}

TEST(Attributes, UnknownAndMissingAreErrors) {
  EXPECT_THROW(testing::build("relu", {{{2}, {}}}, {{"alpha", 1.0}}), GraphError);
  EXPECT_THROW(testing::build("concat", {{{2}, {}}}), GraphError);  // axis required
  EXPECT_THROW(
      testing::build("conv2d", {{{1, 1, 3, 3}, {}}, {{1, 1, 1, 1}, {}}}, {{"groups", std::string("x")}}),
      GraphError);
  EXPECT_THROW(testing::build("ewadd", {{{2}, {}}}), GraphError);  // arity
}

// ---- prime field ----

std::vector<std::int64_t> centered(const std::vector<ModP>& v) {
  std::vector<std::int64_t> out;
  for (auto x : v) out.push_back(x.centered());
  return out;
}
std::vector<std::int64_t> rounded(const std::vector<double>& v) {
  std::vector<std::int64_t> out;
  for (auto x : v) out.push_back(std::llround(x));
  return out;
}

TEST(ModP, ArithmeticAndInverse) {
  const ModP a = ModP::from_int(-5), b = ModP::from_int(7);
  EXPECT_EQ((a + b).centered(), 2);
  EXPECT_EQ((a * b).centered(), -35);
  EXPECT_EQ((b * b.inv()).v, 1u);
  EXPECT_EQ((ModP::from_double(0.25) * ModP::from_int(4)).v, 1u);
  EXPECT_EQ(ModP::from_int(ModP::kP).v, 0u);
}

// Polynomial operators compute exactly the integer result in the field.
TEST(ModP, PolynomialKernelsAgreeWithIntegerResults) {
  struct Case {
    const char* op;
    std::vector<Lit> in;
    Attrs attrs;
  };
  const std::vector<Case> cases = {
      {"matmul", {{{2, 3}, {1, -2, 3, 4, 5, -6}}, {{3, 2}, {7, 8, -9, 10, 11, 12}}}, {}},
      {"conv2d", {{{1, 2, 3, 3}, iota(18, -9)}, {{2, 2, 2, 2}, iota(16, -8)}}, {{"pads", Ints{1, 0, 1, 0}}}},
      {"ewmul", {{{2, 2}, {1, -2, 3, 4}}, {{2}, {-3, 5}}}, {}},
      {"ewsub", {{{2}, {1, -2}}, {{2}, {5, 5}}}, {}},
      {"maxpool2d", {{{1, 1, 3, 3}, {3, -1, 4, 1, -5, 9, 2, 6, -5}}}, {{"kernel", Ints{2, 2}}}},
      {"transpose", {{{2, 3}, iota(6)}}, {}},
      {"reduce_sum", {{{2, 3}, iota(6, -3)}}, {{"axes", Ints{0}}}},
      {"embedding", {{{3, 2}, iota(6)}, {{2}, {1, 2}, DType::kI64}}, {}},
  };
  for (const auto& c : cases) {
    const auto real = testing::run_op<double>(c.op, c.in, c.attrs)[0];
    const auto field = testing::run_op<ModP>(c.op, c.in, c.attrs)[0];
    EXPECT_EQ(centered(field), rounded(real)) << c.op;
  }
  // Division by a count is exact: average pooling times the window size is the window sum.
  const auto avg =
      testing::run_op<ModP>("avgpool2d", {{{1, 1, 2, 2}, {1, 2, 3, 5}}}, {{"kernel", Ints{2, 2}}})[0];
  EXPECT_EQ((avg[0] * ModP::from_int(4)).centered(), 11);
}

// TASO's constant axioms hold exactly in the field (axioms 39, 40, 41 and 42 of TASO §3).
TEST(ModP, TasoConstantAxiomsHoldExactly) {
  Graph g;
  const auto x = g.add_input("x", {{2, 4, 5, 5}});
  const auto m = g.add_input("m", {{2, 4}});
  const auto pool = g.add("const_pool", {}, {{"channels", std::int64_t{4}}, {"kernel", Ints{3, 3}}});
  const auto iconv = g.add("const_iconv", {}, {{"channels", std::int64_t{4}}, {"kernel", Ints{3, 3}}});
  const auto imm = g.add("const_imm", {}, {{"size", std::int64_t{4}}});
  const auto one = g.add("const_one", {}, {{"shape", Ints{2, 4, 5, 5}}});
  const Ints same{1, 1, 1, 1};
  const auto conv_pool = g.add("conv2d", {x, pool}, {{"pads", same}, {"groups", std::int64_t{4}}});
  const auto avg = g.add("avgpool2d", {x},
                         {{"kernel", Ints{3, 3}}, {"pads", same}, {"count_include_pad", std::int64_t{1}}});
  const auto conv_id = g.add("conv2d", {x, iconv}, {{"pads", same}});
  const auto mm = g.add("matmul", {m, imm});
  const auto mul1 = g.add("ewmul", {x, one});
  // relu(conv) = conv with fused relu; silu(x) = x * sigmoid(x)
  const auto w = g.add_param("w", {{4, 4, 3, 3}});
  const auto fused = g.add("conv2d", {x, w}, {{"pads", same}, {"activation", std::string("relu")}});
  const auto unfused = g.add("relu", {g.add("conv2d", {x, w}, {{"pads", same}})});
  const auto silu = g.add("silu", {x});
  const auto xsig = g.add("ewmul", {x, g.add("sigmoid", {x})});
  const auto d = execute<ModP>(g);
  auto at = [&](ValueId v) { return d[static_cast<std::size_t>(v)]; };
  EXPECT_EQ(at(conv_pool), at(avg));
  EXPECT_EQ(at(conv_id), at(x));
  EXPECT_EQ(at(mm), at(m));
  EXPECT_EQ(at(mul1), at(x));
  EXPECT_EQ(at(fused), at(unfused));
  EXPECT_EQ(at(silu), at(xsig));
  // Over the reals the same identities hold up to rounding.
  const auto r = execute<double>(g);
  for (std::size_t i = 0; i < r[static_cast<std::size_t>(avg)].size(); ++i)
    ASSERT_NEAR(r[static_cast<std::size_t>(conv_pool)][i], r[static_cast<std::size_t>(avg)][i], 1e-12);
}

TEST(Fingerprint, SeparatesDifferentFunctionsAndMatchesEqualOnes) {
  auto chain = [](bool left) {
    Graph g;
    const auto x = g.add_input("x", {{3, 4}}), y = g.add_input("y", {{4, 5}}), z = g.add_input("z", {{5, 2}});
    g.mark_output(left ? g.add("matmul", {g.add("matmul", {x, y}), z})
                       : g.add("matmul", {x, g.add("matmul", {y, z})}));
    return g;
  };
  EXPECT_EQ(fingerprint(chain(true)), fingerprint(chain(false)));
  auto transposed = [](bool swap) {
    Graph g;
    const auto x = g.add_input("x", {{3, 4}}), y = g.add_input("y", {{4, 3}});
    if (swap)
      g.mark_output(g.add("matmul", {g.add("transpose", {y}), g.add("transpose", {x})}));
    else
      g.mark_output(g.add("transpose", {g.add("matmul", {x, y})}));
    return g;
  };
  EXPECT_EQ(fingerprint(transposed(true)), fingerprint(transposed(false)));
  Graph a, b;
  const auto ax = a.add_input("x", {{3, 3}}), ay = a.add_input("y", {{3, 3}});
  a.mark_output(a.add("matmul", {ax, ay}));
  const auto bx = b.add_input("x", {{3, 3}}), by = b.add_input("y", {{3, 3}});
  b.mark_output(b.add("matmul", {by, bx}));
  EXPECT_NE(fingerprint(a), fingerprint(b));
  // relu does not distribute over addition: the uninterpreted stand-in must tell them apart.
  Graph c, e;
  const auto cx = c.add_input("x", {{4}}), cy = c.add_input("y", {{4}});
  c.mark_output(c.add("relu", {c.add("ewadd", {cx, cy})}));
  const auto ex = e.add_input("x", {{4}}), ey = e.add_input("y", {{4}});
  e.mark_output(e.add("ewadd", {e.add("relu", {ex}), e.add("relu", {ey})}));
  EXPECT_NE(fingerprint(c), fingerprint(e));
}

}  // namespace
}  // namespace strata::models
