// The CPU replay in bf16 (validate/cpu_replay.h, docs/replay.md "bf16"): rounding to bf16 (hand-derived
// cases); every operator lowered to oneDNN gives, on bf16 inputs, the reference executor's result
// (models/exec, double precision, on the same bf16 inputs) within the bf16 bound derived at `tolerance`;
// nodes without a lowering run the reference kernel and round its result once to bf16; whole small zoo models
// in bf16; and the refusal where the CPU has no bf16 kernels (injected with ScopedBf16Unsupported where it
// has them). The numeric tests report themselves skipped on a CPU where oneDNN has no bf16 kernels
// (cpu_runs_bf16()).
#include <algorithm>
#include <cmath>
#include <string>

#include <gtest/gtest.h>

#include "models/zoo/zoo.h"
#include "one_node_graph.h"
#include "validate/cpu_replay.h"
#include "validate/replay_buffer.h"

namespace strata::validate {
namespace {

using models::Attrs;
using models::DType;
using models::Graph;
using models::Ints;
using models::TensorType;
using models::ValueId;

#define SKIP_WITHOUT_BF16()                                                                         \
  if (!onednn_available()) GTEST_SKIP() << onednn_description();                                    \
  if (!cpu_runs_bf16())                                                                             \
  GTEST_SKIP() << "oneDNN has no bf16 kernels on this CPU (bf16 matmul: " << cpu_bf16_matmul_note() \
               << "); the refusal is tested instead"

TEST(Bf16Rounding, NearestTiesToEvenAndOneRoundingFromDouble) {
  // bf16 keeps 8 significant bits: the spacing just above 1 is 2^-7.
  EXPECT_EQ(round_to_bf16(1.0f + 0x1p-7f), 1.0f + 0x1p-7f);      // representable
  EXPECT_EQ(round_to_bf16(1.0f + 0x1p-8f), 1.0f);                // tie: to the even 1
  EXPECT_EQ(round_to_bf16(1.0f + 3 * 0x1p-8f), 1.0f + 0x1p-6f);  // tie: to the even 1 + 2^-6
  EXPECT_EQ(round_to_bf16(1.0f + 0x1p-8f + 0x1p-20f), 1.0f + 0x1p-7f);
  EXPECT_EQ(round_to_bf16(-2.5f), -2.5f);
  EXPECT_EQ(bf16_from_float(1.0f), 0x3f80);
  EXPECT_TRUE(std::isinf(round_to_bf16(3.4e38f)));  // past bf16's largest finite, 3.3895e38
  EXPECT_TRUE(std::isnan(float_from_bf16(bf16_from_float(std::nanf("")))));
  // 1 + 2^-8 + 2^-40 is above the tie: 1 + 2^-7. Through f32 first it would become the tie 1 + 2^-8 and
  // then 1.
  EXPECT_EQ(float_from_bf16(bf16_from_double(1.0 + 0x1p-8 + 0x1p-40)), 1.0f + 0x1p-7f);
  EXPECT_EQ(float_from_bf16(bf16_from_double(1.0 + 0x1p-8)), 1.0f);
  EXPECT_EQ(float_from_bf16(bf16_from_double(-(1.0 + 0x1p-8 + 0x1p-40))), -(1.0f + 0x1p-7f));
  ReplayBuffer b(DType::kBF16, std::vector<float>{1.0f + 0x1p-8f, 3.0f});
  EXPECT_TRUE(b.bf16());
  EXPECT_EQ(b.widened(), (std::vector<float>{1.0f, 3.0f}));
}

// Tolerance for one bf16 result against the double reference on the same (bf16) inputs. oneDNN reads the
// bf16 operands exactly, multiplies them exactly in f32 (8 + 8 significant bits fit f32's 24), accumulates
// in f32 and rounds the result to bf16 once. So: the f32 sum of `terms` products, off by at most
// terms²·2^-24 with inputs in [-1, 1] (Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed., §3.1,
// as the f32 test), plus `roundings` bf16 roundings, each at most 2^-8 relative (8 significant bits, round to
// nearest: half a unit in the last place) of a value of order max(1, |ref|): 1 for a single primitive; more
// for composites that round intermediates to bf16 (derived where used). On top, 1e-5 for oneDNN's polynomial
// approximations of exp, tanh and erf, as for f32. Data movement (concat, split, transpose) is exact.
double tolerance(double ref, std::int64_t terms, double roundings = 1) {
  const double n = static_cast<double>(terms);
  return roundings * std::ldexp(std::max(1.0, std::abs(ref)), -8) + n * n * std::ldexp(1.0, -24) +
         1e-5 * (1 + std::abs(ref));
}

// Every source of `g` as the replay materializes it, rounded to bf16: the reference executor then computes
// in double from exactly the inputs the bf16 kernels read.
models::Feeds<double> bf16_inputs(const Graph& g, const models::Feeds<double>& given = {}) {
  models::Feeds<double> feeds;
  for (std::size_t i = 0; i < g.values().size(); ++i) {
    const auto& v = g.values()[i];
    if (v.producer >= 0) continue;
    const auto id = static_cast<ValueId>(i);
    auto values = replay_source_values(g, id, given, {});
    if (v.type.dtype == DType::kBF16)
      std::transform(values.begin(), values.end(), values.begin(), round_to_bf16);
    feeds.emplace(id, std::vector<double>(values.begin(), values.end()));
  }
  return feeds;
}

// One node on fresh bf16 inputs: it ran on oneDNN (or on the reference kernel when `onednn` is false, rounded
// once to bf16: then the result is exactly the rounded reference), and every output is within `tolerance`
// (`terms`, `roundings`; exactly equal when `exact`).
void expect_matches_reference(const Graph& g, std::int64_t terms, double roundings = 1, bool onednn = true,
                              bool exact = false) {
  const auto feeds = bf16_inputs(g);
  const auto replay = replay_on_cpu(g, feeds);
  const auto ref = models::execute<double>(g, feeds);
  ASSERT_EQ(replay.nodes.size(), g.nodes().size());
  for (const auto& n : replay.nodes) {
    EXPECT_EQ(n.backend, onednn ? CpuBackend::kOneDnn : CpuBackend::kReference)
        << g.node(n.node).name << ": " << n.detail;
    if (onednn) {
      EXPECT_EQ(n.detail.find("ref:"), std::string::npos) << "slow reference loops: " << n.detail;
    }
  }
  for (auto out : g.outputs()) {
    const auto& got = replay.values[static_cast<std::size_t>(out)];
    const auto& want = ref[static_cast<std::size_t>(out)];
    ASSERT_EQ(got.size(), want.size());
    double worst = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i], round_to_bf16(got[i])) << "not a bf16 value";
      if (!onednn) {
        ASSERT_EQ(got[i], float_from_bf16(bf16_from_double(want[i]))) << g.value(out).name << "[" << i << "]";
        continue;
      }
      const double bound = exact ? 0.0 : tolerance(want[i], terms, roundings);
      ASSERT_LE(std::abs(got[i] - want[i]), bound)
          << g.value(out).name << "[" << i << "]: bf16 " << got[i] << ", reference " << want[i];
      worst = std::max(worst, std::abs(got[i] - want[i]));
    }
    testing::Test::RecordProperty(g.value(out).name + ".max_abs_error", std::to_string(worst));
  }
}

Graph one_node(std::string_view op, const std::vector<models::Shape>& inputs, Attrs attrs = {}) {
  return test::one_node(op, inputs, std::move(attrs), DType::kBF16);
}

TEST(CpuReplayBf16Ops, MatmulAndBatchMatmul) {
  SKIP_WITHOUT_BF16();
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb) {
      SCOPED_TRACE(testing::Message() << "trans_a " << ta << " trans_b " << tb);
      const models::Shape a = ta ? models::Shape{40, 7} : models::Shape{7, 40};
      const models::Shape b = tb ? models::Shape{5, 40} : models::Shape{40, 5};
      expect_matches_reference(
          one_node("matmul", {a, b}, {{"trans_a", std::int64_t{ta}}, {"trans_b", std::int64_t{tb}}}), 40);
    }
  expect_matches_reference(one_node("matmul", {{6, 64}, {64, 9}}, {{"activation", std::string("relu")}}), 64);
  expect_matches_reference(
      one_node("batch_matmul", {{2, 3, 5, 8}, {2, 3, 6, 8}}, {{"trans_b", std::int64_t{1}}}), 8);
  expect_matches_reference(
      one_node("batch_matmul", {{2, 1, 8, 5}, {3, 8, 4}}, {{"trans_a", std::int64_t{1}}}), 8);
}

TEST(CpuReplayBf16Ops, Convolutions) {
  SKIP_WITHOUT_BF16();
  expect_matches_reference(one_node("conv2d", {{2, 4, 9, 9}, {6, 4, 3, 3}}), 4 * 9);
  expect_matches_reference(
      one_node("conv2d", {{1, 4, 11, 10}, {8, 4, 3, 3}, {8}},
               {{"strides", Ints{2, 1}}, {"pads", Ints{1, 0, 2, 1}}, {"activation", std::string("relu")}}),
      4 * 9 + 1);
  expect_matches_reference(one_node("conv2d", {{1, 8, 7, 7}, {12, 2, 3, 3}},
                                    {{"groups", std::int64_t{4}}, {"pads", Ints{1, 1, 1, 1}}}),
                           2 * 9);
  expect_matches_reference(one_node("conv2d", {{1, 32, 10, 10}, {64, 32, 3, 3}, {64}},
                                    {{"pads", Ints{1, 1, 1, 1}}, {"activation", std::string("relu")}}),
                           32 * 9 + 1);
}

TEST(CpuReplayBf16Ops, PoolingSoftmaxAndActivations) {
  SKIP_WITHOUT_BF16();
  const Attrs padded{{"kernel", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}};
  expect_matches_reference(one_node("maxpool2d", {{2, 16, 8, 8}}, padded), 9, 0);  // picks an input: exact
  expect_matches_reference(one_node("avgpool2d", {{2, 16, 8, 8}}, padded), 9);
  expect_matches_reference(one_node("softmax", {{3, 4, 40}}), 40);
  // Causal: the visible scores plus a 0 mask are exact in bf16; masked ones become -1e30 and exp flushes to
  // 0.
  expect_matches_reference(one_node("softmax", {{2, 3, 6, 6}}, {{"causal", std::int64_t{1}}}), 6);
  for (const char* op : {"relu", "sigmoid", "tanh", "gelu", "silu"}) {
    SCOPED_TRACE(op);
    expect_matches_reference(one_node(op, {{3, 5, 32}}), 1);
  }
  Graph g("rsqrt");  // positive inputs (literal data, bf16-exact)
  const auto x = g.add_constant("x", TensorType{{2, 3}, DType::kBF16}, {0.25, 1, 2, 4, 9, 0.5});
  g.mark_output(g.add("rsqrt", {x}));
  expect_matches_reference(g, 1);
}

TEST(CpuReplayBf16Ops, BinaryOpsAndReductions) {
  SKIP_WITHOUT_BF16();
  for (const char* op : {"ewadd", "ewsub", "ewmul"}) {
    SCOPED_TRACE(op);
    expect_matches_reference(one_node(op, {{4, 32}, {4, 32}}), 1);
    expect_matches_reference(one_node(op, {{2, 4, 32}, {32}}), 1);
  }
  expect_matches_reference(one_node("scalar_mul", {{3, 32}, {}}), 1);
  for (const char* op : {"reduce_sum", "reduce_mean"}) {
    SCOPED_TRACE(op);
    expect_matches_reference(one_node(op, {{3, 4, 40}}, {{"axes", Ints{-1}}}), 40);
    expect_matches_reference(one_node(op, {{3, 4, 5}}, {{"axes", Ints{}}, {"keepdims", std::int64_t{0}}}),
                             60);
  }
}

TEST(CpuReplayBf16Ops, Normalizations) {
  SKIP_WITHOUT_BF16();
  // Normalized values reach ~sqrt(n) in magnitude; the tolerance scales with max(1, |ref|).
  expect_matches_reference(one_node("layernorm", {{5, 64}, {64}, {64}}), 64);
  expect_matches_reference(one_node("layernorm", {{5, 64}, {64}}), 64);
  // rmsnorm rounds the squares to bf16 (each 2^-8 relative, all positive, so their mean too), which moves
  // 1/sqrt by half that: 1.5 roundings, 2 counted.
  expect_matches_reference(one_node("rmsnorm", {{2, 5, 64}, {64}}), 64, 2);
  Graph g("bn");  // variance positive: literal data
  const auto x = g.add_input("x", TensorType{{2, 4, 3, 3}, DType::kBF16});
  std::vector<ValueId> stats;
  for (const char* name : {"scale", "bias", "mean"})
    stats.push_back(g.add_input(name, TensorType{{4}, DType::kBF16}));
  const auto var = g.add_constant("var", TensorType{{4}, DType::kBF16}, {0.5, 1.0, 2.0, 0.25});
  g.mark_output(g.add("batchnorm", {x, stats[0], stats[1], stats[2], var}));
  expect_matches_reference(g, 1);
}

TEST(CpuReplayBf16Ops, DataMovementIsExact) {
  SKIP_WITHOUT_BF16();
  expect_matches_reference(one_node("concat", {{1, 3, 4, 4}, {1, 5, 4, 4}}, {{"axis", std::int64_t{1}}}), 0,
                           0, true, true);
  expect_matches_reference(one_node("transpose", {{2, 3, 4, 5}}, {{"perm", Ints{0, 2, 1, 3}}}), 0, 0, true,
                           true);
  Graph g("split");
  const auto x = g.add_input("x", TensorType{{2, 9, 6}, DType::kBF16});
  for (auto y : g.add_node("split", {x}, {{"axis", std::int64_t{1}}, {"sizes", Ints{2, 3, 4}}}))
    g.mark_output(y);
  expect_matches_reference(g, 0, 0, true, true);
}

// Attention in bf16 keeps the scores and probabilities in bf16 (p v's operands share a type). A score s =
// scale·q·k has |s| <= sqrt(D) (q, k in [-1, 1], scale 1/sqrt(D)); rounding it moves exp(s) by at most
// |s|·2^-8 relative, so each probability by 2·sqrt(D)·2^-8 after normalization; rounding the probabilities
// adds 2^-8, and o = Σ p v (Σ p = 1, |v| <= 1) carries these absolute, then one rounding of o:
// 2 + 2·sqrt(D) roundings (D = 8: 7.7, 8 counted).
TEST(CpuReplayBf16Ops, FusedAttention) {
  SKIP_WITHOUT_BF16();
  expect_matches_reference(one_node("attention", {{2, 3, 5, 8}, {2, 3, 5, 8}, {2, 3, 5, 8}}), 8, 8);
  expect_matches_reference(
      one_node("attention", {{1, 8, 6, 8}, {1, 2, 6, 8}, {1, 2, 6, 8}}, {{"causal", std::int64_t{1}}}), 8, 8);
}

TEST(CpuReplayBf16Ops, UnloweredNodesRunTheReferenceKernelRoundedOnceToBf16) {
  SKIP_WITHOUT_BF16();
  // The first operand broadcasting: no oneDNN lowering for ewsub.
  expect_matches_reference(one_node("ewsub", {{32}, {3, 32}}), 1, 1, /*onednn=*/false);
  const auto replay = replay_on_cpu(one_node("ewsub", {{32}, {3, 32}}));
  EXPECT_NE(replay.nodes[0].detail.find("broadcasts"), std::string::npos) << replay.nodes[0].detail;
  // Mixed element types are not lowered either (said per node).
  Graph mixed("mixed");
  const auto a = mixed.add_input("a", TensorType{{4, 8}, DType::kBF16});
  const auto b = mixed.add_input("b", TensorType{{8, 4}, DType::kF32});
  mixed.mark_output(mixed.add("matmul", {a, b}));
  try {
    const auto r = replay_on_cpu(mixed);
    EXPECT_EQ(r.nodes[0].backend, CpuBackend::kReference);
    EXPECT_NE(r.nodes[0].detail.find("mixed element types"), std::string::npos) << r.nodes[0].detail;
  } catch (const models::GraphError& e) {
    GTEST_SKIP() << "the graph refuses mixed matmul operands: " << e.what();
  }
}

// Weights scaled by 1/sqrt(fan-in) as in the f32 model tests (cpu_replay_test.cc), then rounded to bf16.
models::Feeds<double> scaled_weights(const Graph& g) {
  models::Feeds<double> feeds;
  for (std::size_t i = 0; i < g.values().size(); ++i) {
    const auto& v = g.values()[i];
    if (v.kind != models::ValueKind::kParam || v.data || v.type.rank() < 2) continue;
    auto w = models::random_values<double>(v.type.numel(), 0, v.name);
    const double scale = 1 / std::sqrt(static_cast<double>(v.type.numel() / v.type.shape[0]));
    for (auto& x : w) x *= scale;
    feeds.emplace(static_cast<ValueId>(i), std::move(w));
  }
  return bf16_inputs(g, feeds);
}

// Every graph output against the reference on the same bf16 inputs: max |bf16 - f64| <= depth·2^-8 · max
// |f64|. Each layer rounds its output to bf16 (2^-8 relative) and, with weights scaled by 1/sqrt(fan-in),
// passes its input's relative error on without amplifying it on average, so the errors of `depth` layers in
// sequence add up to at most depth·2^-8 (a random walk typically gives sqrt(depth)·2^-9).
void expect_model_matches_reference(const Graph& g, int depth, int min_onednn_nodes) {
  const auto feeds = scaled_weights(g);
  const auto replay = replay_on_cpu(g, feeds);
  const auto ref = models::execute<double>(g, feeds);
  EXPECT_GE(replay.onednn_nodes(), min_onednn_nodes);
  for (auto out : g.outputs()) {
    const auto v = static_cast<std::size_t>(out);
    double scale = 0, worst = 0;
    for (std::size_t i = 0; i < ref[v].size(); ++i) {
      scale = std::max(scale, std::abs(ref[v][i]));
      worst = std::max(worst, std::abs(replay.values[v][i] - ref[v][i]));
    }
    EXPECT_LE(worst, depth * std::ldexp(scale, -8))
        << g.values()[v].name << ": max error " << worst << " of " << scale;
    testing::Test::RecordProperty(g.values()[v].name + ".relative_error", std::to_string(worst / scale));
  }
}

TEST(CpuReplayBf16Models, SqueezeNet) {
  SKIP_WITHOUT_BF16();
  const Graph g = models::zoo::build_model("squeezenet", {.batch = 1, .dtype = DType::kBF16});
  int lowered = 0;
  for (const auto& n : g.nodes()) lowered += n.op->name != "reshape";
  // 26 convolutions, at most 18 on any path from the input (conv1, 8 fire modules of 2, conv10), and the
  // pooling layers: depth 22.
  expect_model_matches_reference(g, 22, lowered);
}

TEST(CpuReplayBf16Models, TinyBert) {
  SKIP_WITHOUT_BF16();
  const Graph g = models::zoo::build_bert({.batch = 1, .seq_len = 8, .dtype = DType::kBF16}, 2, 64, 4, 256);
  int matmuls = 0;
  for (const auto& n : g.nodes()) matmuls += n.op->kind == models::OpKind::kContraction;
  // Per layer: the projections, attention, its output projection, two layernorms and the two FFN matmuls;
  // 2 layers and the embedding's layernorm: counted as 8 per layer, 20 in all.
  expect_model_matches_reference(g, 20, matmuls);
}

TEST(CpuReplayBf16Timing, TimeGraphAndTimeNodeRunTheBf16Kernels) {
  SKIP_WITHOUT_BF16();
  Graph g("two");
  const auto x = g.add_input("x", TensorType{{128, 128}, DType::kBF16});
  const auto w = g.add_param("w", TensorType{{128, 128}, DType::kBF16});
  const auto z = g.add("gelu", {g.add("matmul", {x, w})});
  g.mark_output(z);
  const auto t = time_graph(g, {.warmup = 1, .repeat = 3});
  const auto replay = replay_on_cpu(g);
  for (const auto& n : t.nodes) EXPECT_EQ(n.backend, CpuBackend::kOneDnn) << n.detail;
  EXPECT_EQ(t.values[static_cast<std::size_t>(z)], replay.values[static_cast<std::size_t>(z)]);
  const auto node = time_node(g, 0, {.warmup = 1, .repeat = 3});
  EXPECT_EQ(node.backend.backend, CpuBackend::kOneDnn);
  EXPECT_GT(node.median_seconds, 0);
}

// The refusal, injected on a CPU with bf16 kernels: a bf16 node with a lowering names itself, its operator
// and the CPU feature; nodes without a lowering and f32 graphs are unaffected.
TEST(CpuReplayBf16Refusal, NamesTheNodeTheOperatorAndTheCpuFeature) {
  if (!onednn_available()) GTEST_SKIP() << onednn_description();
  const ScopedBf16Unsupported unsupported;
  EXPECT_FALSE(cpu_runs_bf16());
  const Graph g = one_node("matmul", {{4, 8}, {8, 4}});
  try {
    replay_on_cpu(g);
    ADD_FAILURE() << "a bf16 graph was replayed on a CPU taken to lack bf16";
  } catch (const models::GraphError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("'" + g.nodes()[0].name + "' (matmul)"), std::string::npos) << m;
    EXPECT_NE(m.find("avx512_bf16"), std::string::npos) << m;
    EXPECT_NE(m.find("--dtype f32"), std::string::npos) << m;
  }
  EXPECT_THROW(time_node(g, 0), models::GraphError);
  EXPECT_THROW(time_graph(g), models::GraphError);
  // Without a lowering (ewsub whose first operand broadcasts), the reference kernel runs: nothing to refuse.
  EXPECT_EQ(replay_on_cpu(one_node("ewsub", {{8}, {3, 8}})).nodes[0].backend, CpuBackend::kReference);
  Graph f32("f32");
  f32.mark_output(f32.add("relu", {f32.add_input("x", TensorType{{4}, DType::kF32})}));
  EXPECT_EQ(replay_on_cpu(f32).nodes[0].backend, CpuBackend::kOneDnn);
}

// On a CPU without bf16 kernels, the same refusal for real (skipped here when the CPU has them).
TEST(CpuReplayBf16Refusal, RealOnACpuWithoutBf16) {
  if (!onednn_available()) GTEST_SKIP() << onednn_description();
  if (cpu_runs_bf16()) GTEST_SKIP() << "this CPU runs bf16 (" << cpu_bf16_matmul_note() << ")";
  EXPECT_THROW(replay_on_cpu(one_node("conv2d", {{1, 4, 6, 6}, {4, 4, 3, 3}})), models::GraphError);
}

}  // namespace
}  // namespace strata::validate
