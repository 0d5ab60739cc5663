// The CPU replay (validate/cpu_replay.h): every operator it runs on oneDNN gives the reference executor's
// result (models/exec, double precision) within f32 rounding, whole zoo models too; nodes without a lowering
// run the reference kernel; a profile it writes is read back by ProfileDb and replaces the cost model's
// roofline estimate. Skipped only where the build has no oneDNN.
#include "validate/cpu_replay.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>

#include <gtest/gtest.h>

#include "hw/gpu_spec.h"
#include "models/zoo/zoo.h"
#include "one_node_graph.h"

namespace strata::validate {
namespace {

using models::Attrs;
using models::DType;
using models::Graph;
using models::Ints;
using models::TensorType;
using models::ValueId;

#define SKIP_WITHOUT_ONEDNN() \
  if (!onednn_available()) GTEST_SKIP() << onednn_description()

// Tolerance for one f32 result against the double reference. `terms` is the longest sum that forms one
// output element (K of a GEMM, C/g·kh·kw of a convolution, the pooling window, the softmax or normalized
// length; 1 for element-wise ops). A sum of n products in f32 is off by at most n·u·Σ|a_i b_i| (Higham,
// Accuracy and Stability of Numerical Algorithms, 2nd ed., §3.1, u = 2^-24); inputs in [-1, 1] bound
// Σ|a_i b_i| by n, so n²·u. On top, 1e-5 relative (about 170 f32 ulps) for the inputs' own rounding to f32
// and for oneDNN's polynomial approximations of exp, tanh and erf.
double tolerance(double ref, std::int64_t terms) {
  const double n = static_cast<double>(terms);
  return n * n * std::ldexp(1.0, -24) + 1e-5 * (1 + std::abs(ref));
}

// One node on fresh inputs: checks it ran on oneDNN (or on the reference kernel, when `onednn` is false) and
// that every output equals the reference executor's.
void expect_matches_reference(const Graph& g, std::int64_t terms, bool onednn = true) {
  const auto replay = replay_on_cpu(g);
  const auto ref = models::execute<double>(g);
  ASSERT_EQ(replay.nodes.size(), g.nodes().size());
  for (const auto& n : replay.nodes)
    EXPECT_EQ(n.backend, onednn ? CpuBackend::kOneDnn : CpuBackend::kReference)
        << g.node(n.node).name << ": " << n.detail;
  for (auto out : g.outputs()) {
    const auto& got = replay.values[static_cast<std::size_t>(out)];
    const auto& want = ref[static_cast<std::size_t>(out)];
    ASSERT_EQ(got.size(), want.size());
    double worst = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
      ASSERT_LE(std::abs(got[i] - want[i]), tolerance(want[i], terms))
          << g.value(out).name << "[" << i << "]: f32 " << got[i] << ", reference " << want[i];
      worst = std::max(worst, std::abs(got[i] - want[i]));
    }
    testing::Test::RecordProperty(g.value(out).name + ".max_abs_error", std::to_string(worst));
  }
}

using test::one_node;

TEST(CpuReplayOps, MatmulAllTransposesAndFusedRelu) {
  SKIP_WITHOUT_ONEDNN();
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb) {
      SCOPED_TRACE(testing::Message() << "trans_a " << ta << " trans_b " << tb);
      const models::Shape a = ta ? models::Shape{24, 7} : models::Shape{7, 24};
      const models::Shape b = tb ? models::Shape{5, 24} : models::Shape{24, 5};
      expect_matches_reference(
          one_node("matmul", {a, b}, {{"trans_a", std::int64_t{ta}}, {"trans_b", std::int64_t{tb}}}), 24);
    }
  expect_matches_reference(one_node("matmul", {{6, 16}, {16, 9}}, {{"activation", std::string("relu")}}), 16);
}

TEST(CpuReplayOps, BatchMatmulBroadcastsBatchDimsAndTransposes) {
  SKIP_WITHOUT_ONEDNN();
  expect_matches_reference(one_node("batch_matmul", {{2, 3, 5, 8}, {2, 3, 8, 4}}), 8);
  // Attention's q·kᵀ: b transposed.
  expect_matches_reference(
      one_node("batch_matmul", {{2, 3, 5, 8}, {2, 3, 6, 8}}, {{"trans_b", std::int64_t{1}}}), 8);
  // Batch dims broadcast (numpy): [2,1,...] x [3,...] -> [2,3,...]; a transposed.
  expect_matches_reference(
      one_node("batch_matmul", {{2, 1, 8, 5}, {3, 8, 4}}, {{"trans_a", std::int64_t{1}}}), 8);
}

TEST(CpuReplayOps, ConvolutionStridesPadsDilationsGroupsBias) {
  SKIP_WITHOUT_ONEDNN();
  expect_matches_reference(one_node("conv2d", {{2, 4, 9, 9}, {6, 4, 3, 3}}), 4 * 9);
  expect_matches_reference(
      one_node("conv2d", {{1, 4, 11, 10}, {8, 4, 3, 3}, {8}},
               {{"strides", Ints{2, 1}}, {"pads", Ints{1, 0, 2, 1}}, {"activation", std::string("relu")}}),
      4 * 9 + 1);
  expect_matches_reference(one_node("conv2d", {{1, 3, 12, 12}, {5, 3, 3, 3}},
                                    {{"dilations", Ints{2, 3}}, {"pads", Ints{2, 3, 2, 3}}}),
                           3 * 9);
  // Grouped (ResNeXt) and depth-wise.
  expect_matches_reference(one_node("conv2d", {{1, 8, 7, 7}, {12, 2, 3, 3}},
                                    {{"groups", std::int64_t{4}}, {"pads", Ints{1, 1, 1, 1}}}),
                           2 * 9);
  expect_matches_reference(one_node("conv2d", {{1, 6, 8, 8}, {6, 1, 3, 3}}, {{"groups", std::int64_t{6}}}),
                           9);
  // Wide enough for oneDNN's blocked layouts (nChw8c/16c): the input and output reorders run too.
  const Graph wide = one_node("conv2d", {{1, 32, 10, 10}, {64, 32, 3, 3}, {64}},
                              {{"pads", Ints{1, 1, 1, 1}}, {"activation", std::string("relu")}});
  expect_matches_reference(wide, 32 * 9 + 1);
  const auto detail = replay_on_cpu(wide).nodes[0].detail;
  EXPECT_NE(detail.find("reorders"), std::string::npos) << detail;
}

TEST(CpuReplayOps, MaxAndAveragePoolingWithPadsAndCeilMode) {
  SKIP_WITHOUT_ONEDNN();
  const Attrs plain{{"kernel", Ints{3, 3}}, {"strides", Ints{2, 2}}};
  const Attrs padded{{"kernel", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}};
  const Attrs ceil{{"kernel", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"ceil_mode", std::int64_t{1}}};
  for (const auto* a : {&plain, &padded, &ceil}) {
    expect_matches_reference(one_node("maxpool2d", {{2, 3, 8, 8}}, *a), 9);
    expect_matches_reference(one_node("avgpool2d", {{2, 3, 8, 8}}, *a), 9);
  }
  Attrs include = padded;
  include.set("count_include_pad", std::int64_t{1});
  expect_matches_reference(one_node("avgpool2d", {{1, 2, 7, 7}}, include), 9);
  // Ceil-mode windows past the padding with count_include_pad: the reference divides by the part inside the
  // declared pads, oneDNN by the whole kernel, so it is not lowered (and the reference kernel runs).
  Attrs include_ceil = ceil;
  include_ceil.set("count_include_pad", std::int64_t{1});
  expect_matches_reference(one_node("avgpool2d", {{1, 2, 8, 8}}, include_ceil), 9, /*onednn=*/false);
}

TEST(CpuReplayOps, SoftmaxAnyAxisAndCausal) {
  SKIP_WITHOUT_ONEDNN();
  expect_matches_reference(one_node("softmax", {{3, 4, 10}}), 10);
  expect_matches_reference(one_node("softmax", {{3, 7, 5}}, {{"axis", std::int64_t{1}}}), 7);
  // Causal: square (self-attention) and with more keys than queries (a KV cache), over [B, H, S, Skv].
  expect_matches_reference(one_node("softmax", {{2, 3, 6, 6}}, {{"causal", std::int64_t{1}}}), 6);
  expect_matches_reference(one_node("softmax", {{2, 4, 9}}, {{"causal", std::int64_t{1}}}), 9);
  // The masked probabilities are exactly 0 (query 0 of a square mask sees key 0 only).
  const auto square = one_node("softmax", {{1, 4, 4}}, {{"causal", std::int64_t{1}}});
  const auto square_replay = replay_on_cpu(square);
  const auto& p = square_replay.values[static_cast<std::size_t>(square.outputs()[0])];
  EXPECT_EQ(p[0], 1.0f);
  EXPECT_EQ(p[1], 0.0f);
  EXPECT_EQ(p[3], 0.0f);
  // Fewer keys than queries leaves rows without a visible key: not lowered, the reference kernel runs.
  const auto replay = replay_on_cpu(one_node("softmax", {{2, 6, 4}}, {{"causal", std::int64_t{1}}}));
  EXPECT_EQ(replay.nodes[0].backend, CpuBackend::kReference);
  EXPECT_NE(replay.nodes[0].detail.find("fewer keys"), std::string::npos) << replay.nodes[0].detail;
}

TEST(CpuReplayOps, ActivationsAndBroadcastingBinaryOps) {
  SKIP_WITHOUT_ONEDNN();
  for (const char* op : {"relu", "sigmoid", "tanh", "gelu", "silu"}) {
    SCOPED_TRACE(op);
    expect_matches_reference(one_node(op, {{3, 5, 7}}), 1);
  }
  for (const char* op : {"ewadd", "ewsub", "ewmul"}) {
    SCOPED_TRACE(op);
    expect_matches_reference(one_node(op, {{4, 6}, {4, 6}}), 1);
    expect_matches_reference(one_node(op, {{2, 4, 6}, {6}}), 1);        // bias-style row broadcast
    expect_matches_reference(one_node(op, {{2, 4, 6}, {2, 1, 6}}), 1);  // a middle dim of 1
  }
  // The first operand broadcasting: swapped for add/mul, the reference kernel for sub.
  expect_matches_reference(one_node("ewadd", {{6}, {3, 6}}), 1);
  expect_matches_reference(one_node("ewmul", {{3, 1}, {3, 6}}), 1);
  expect_matches_reference(one_node("ewsub", {{6}, {3, 6}}), 1, false);
  expect_matches_reference(one_node("scalar_mul", {{3, 4}, {}}), 1);
}

TEST(CpuReplayOps, LayerRmsAndBatchNormalization) {
  SKIP_WITHOUT_ONEDNN();
  expect_matches_reference(one_node("layernorm", {{5, 16}, {16}, {16}}), 16);
  expect_matches_reference(one_node("layernorm", {{5, 16}, {16}}), 16);  // no beta
  expect_matches_reference(one_node("rmsnorm", {{2, 5, 16}, {16}}), 16);
  expect_matches_reference(one_node("rmsnorm", {{3, 7}, {7}}, {{"epsilon", 0.5}}), 7);
  expect_matches_reference(one_node("layernorm", {{2, 3, 4, 5}, {4, 5}, {4, 5}}, {{"axis", std::int64_t{2}}}),
                           20);
  // batchnorm's variance must be positive: fed explicitly.
  Graph g("bn");
  const auto x = g.add_input("x", TensorType{{2, 4, 3, 3}, DType::kF32});
  std::vector<ValueId> stats;
  for (const char* name : {"scale", "bias", "mean"})
    stats.push_back(g.add_input(name, TensorType{{4}, DType::kF32}));
  const auto var = g.add_constant("var", TensorType{{4}, DType::kF32}, {0.5, 1.0, 2.0, 0.25});
  g.mark_output(g.add("batchnorm", {x, stats[0], stats[1], stats[2], var}));
  expect_matches_reference(g, 1);
}

TEST(CpuReplayOps, EmbeddingCopiesTheIndexedRowsExactly) {
  // Table [7, 5], indices [2, 3] with negative ones (ONNX Gather counts them from the end): every output row
  // is the table's row, bit for bit, in f32 and in bf16 (a copy rounds nothing); an index past the table
  // throws what the reference kernel throws.
  SKIP_WITHOUT_ONEDNN();
  for (const DType dt : {DType::kF32, DType::kBF16}) {
    if (dt == DType::kBF16 && !cpu_runs_bf16()) continue;
    Graph g("emb");
    const auto table = g.add_input("table", TensorType{{7, 5}, dt});
    const auto idx = g.add_input("idx", TensorType{{2, 3}, DType::kI64});
    const auto out = g.add("embedding", {table, idx});
    g.mark_output(out);
    const std::vector<double> rows{0, 6, -1, 3, -7, 2};
    const auto replay = replay_on_cpu(g, {{idx, rows}});
    EXPECT_EQ(replay.nodes.at(0).backend, CpuBackend::kOneDnn) << replay.nodes.at(0).detail;
    const auto& t = replay.values[static_cast<std::size_t>(table)];
    const auto& y = replay.values[static_cast<std::size_t>(out)];
    ASSERT_EQ(y.size(), 6u * 5u);
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const auto row = static_cast<std::size_t>(rows[i] < 0 ? rows[i] + 7 : rows[i]);
      for (std::size_t k = 0; k < 5; ++k) EXPECT_EQ(y[i * 5 + k], t[row * 5 + k]) << i << "," << k;
    }
    EXPECT_THROW(replay_on_cpu(g, {{idx, {0, 1, 7, 2, 3, 4}}}), std::out_of_range);
  }
}

TEST(CpuReplayOps, ConcatSplitAndTranspose) {
  SKIP_WITHOUT_ONEDNN();
  expect_matches_reference(one_node("concat", {{1, 3, 4, 4}, {1, 5, 4, 4}}, {{"axis", std::int64_t{1}}}), 1);
  expect_matches_reference(one_node("concat", {{2, 3}, {2, 4}, {2, 1}}, {{"axis", std::int64_t{-1}}}), 1);
  expect_matches_reference(one_node("concat", {{2, 3, 5}, {4, 3, 5}}, {{"axis", std::int64_t{0}}}), 1);
  expect_matches_reference(one_node("concat", {{2, 2, 3}, {2, 2, 1}}, {{"axis", std::int64_t{2}}}), 1);
  expect_matches_reference(one_node("transpose", {{2, 3, 4, 5}}, {{"perm", Ints{0, 2, 1, 3}}}), 1);
  for (std::int64_t axis : {1, -1}) {  // split into three along the middle and the last axis: every output
    Graph g("split");
    const auto x = g.add_input("x", TensorType{{2, 9, 6}, DType::kF32});
    const Ints sizes = axis == 1 ? Ints{2, 3, 4} : Ints{1, 2, 3};
    for (auto y : g.add_node("split", {x}, {{"axis", axis}, {"sizes", sizes}})) g.mark_output(y);
    expect_matches_reference(g, 1);
  }
  expect_matches_reference(one_node("transpose", {{2, 3, 4}}), 1);  // empty perm: reversed
  expect_matches_reference(
      one_node("transpose", {{3, 4}}, {{"perm", Ints{1, 0}}, {"shuffle", std::int64_t{0}}}), 1);
}

TEST(CpuReplayOps, ReductionsAndRsqrt) {
  SKIP_WITHOUT_ONEDNN();
  for (const char* op : {"reduce_sum", "reduce_mean"}) {
    SCOPED_TRACE(op);
    expect_matches_reference(one_node(op, {{3, 4, 5}}, {{"axes", Ints{1}}, {"keepdims", std::int64_t{0}}}),
                             4);
    expect_matches_reference(one_node(op, {{3, 4, 5}}, {{"axes", Ints{-1, 0}}}), 15);
    expect_matches_reference(one_node(op, {{3, 4, 5}}, {{"axes", Ints{}}, {"keepdims", std::int64_t{0}}}),
                             60);
  }
  // rsqrt needs positive inputs: literal data.
  Graph g("rsqrt");
  const auto x = g.add_constant("x", TensorType{{2, 3}, DType::kF32}, {0.25, 1, 2, 4, 9, 0.01});
  g.mark_output(g.add("rsqrt", {x}));
  expect_matches_reference(g, 1);
}

TEST(CpuReplayOps, FusedAttentionGroupedCausalAndScaled) {
  SKIP_WITHOUT_ONEDNN();
  // Multi-head (H = Hkv), grouped-query (4 query heads per key/value head), causal with a longer KV, and an
  // explicit scale; each checked against the reference kernel (FlashAttention's math in double).
  expect_matches_reference(one_node("attention", {{2, 3, 5, 8}, {2, 3, 5, 8}, {2, 3, 5, 8}}), 8);
  expect_matches_reference(
      one_node("attention", {{1, 8, 6, 4}, {1, 2, 6, 4}, {1, 2, 6, 4}}, {{"causal", std::int64_t{1}}}), 6);
  expect_matches_reference(one_node("attention", {{2, 4, 3, 8}, {2, 2, 7, 8}, {2, 2, 7, 8}},
                                    {{"causal", std::int64_t{1}}, {"scale", 0.3}}),
                           8);
}

TEST(CpuReplayInput, BadGraphsAndFeedsAreErrorsNamingTheValue) {
  SKIP_WITHOUT_ONEDNN();
  Graph g = one_node("relu", {{2, 3}});
  auto message = [&](const models::Feeds<double>& feeds) {
    try {
      replay_on_cpu(g, feeds);
    } catch (const models::GraphError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message({{0, {1, 2}}}).find("feed for 'x0' has 2 elements"), std::string::npos)
      << message({{0, {1, 2}}});
  EXPECT_NE(message({{99, {1}}}).find("unknown value id 99"), std::string::npos);
  models::ExecOptions strict;
  strict.randomize_missing = false;
  EXPECT_THROW(replay_on_cpu(g, {}, strict), models::GraphError);
  // f16 graphs: the replay computes in f32, so it refuses them rather than mislabel what it ran.
  Graph half("half");
  half.mark_output(half.add("relu", {half.add_input("h", TensorType{{4}, DType::kF16})}));
  try {
    replay_on_cpu(half);
    ADD_FAILURE() << "an f16 graph was replayed";
  } catch (const models::GraphError& e) {
    EXPECT_NE(std::string(e.what()).find("'h' is f16"), std::string::npos) << e.what();
  }
}

// Weights scaled by 1/sqrt(fan-in) (He et al. 2015, as trained networks keep activations of order 1); the
// executors' own [-1, 1] draws make a 26-layer network's activations grow by ~sqrt(fan-in) per layer, and
// the comparison below would then measure the growth, not the kernels.
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
  return feeds;
}

// Every value of the graph against the reference: max |f32 - f64| <= 1e-3 · max |f64| per value. Per layer
// the f32 error is at most n²·u relative to the layer's scale with inputs of order 1 (above); summed over the
// layers of these models (n up to 512·9 for SqueezeNet's expand convolutions, but typically sqrt(n)·u
// relative, Higham §3.1) this stays well below 1e-3.
void expect_model_matches_reference(const Graph& g, int min_onednn_nodes) {
  const auto feeds = scaled_weights(g);
  const auto replay = replay_on_cpu(g, feeds);
  const auto ref = models::execute<double>(g, feeds);
  EXPECT_GE(replay.onednn_nodes(), min_onednn_nodes);
  for (std::size_t v = 0; v < ref.size(); ++v) {
    double scale = 0, worst = 0;
    for (std::size_t i = 0; i < ref[v].size(); ++i) {
      scale = std::max(scale, std::abs(ref[v][i]));
      worst = std::max(worst, std::abs(replay.values[v][i] - ref[v][i]));
    }
    EXPECT_LE(worst, 1e-3 * scale) << g.values()[v].name << ": max error " << worst << " of " << scale;
  }
}

TEST(CpuReplayModels, SqueezeNetEqualsTheReferenceExecutor) {
  SKIP_WITHOUT_ONEDNN();
  const Graph g = models::zoo::build_model("squeezenet", {.batch = 1});
  // Every node but the final reshape (a view, run by the reference kernel) has a lowering.
  int lowered = 0;
  for (const auto& n : g.nodes()) lowered += n.op->name != "reshape";
  expect_model_matches_reference(g, lowered);
}

TEST(CpuReplayModels, TinyBertEqualsTheReferenceExecutor) {
  SKIP_WITHOUT_ONEDNN();
  // BERT's graph at 2 layers, hidden 64, 4 heads, FFN 256, 8 tokens.
  const Graph g = models::zoo::build_bert({.batch = 1, .seq_len = 8}, 2, 64, 4, 256);
  int matmuls = 0;
  for (const auto& n : g.nodes()) matmuls += n.op->kind == models::OpKind::kContraction;
  expect_model_matches_reference(g, matmuls);
}

TEST(CpuProfile, WrittenProfileIsReadBackAndOverridesTheCostModel) {
  SKIP_WITHOUT_ONEDNN();
  Graph g("mlp");
  const auto x = g.add_input("x", TensorType{{32, 64}, DType::kF32});
  const auto w1 = g.add_param("w1", TensorType{{64, 64}, DType::kF32});
  const auto w2 = g.add_param("w2", TensorType{{64, 64}, DType::kF32});
  const auto h = g.add("matmul", {x, w1}, {{"activation", std::string("relu")}});
  const auto y = g.add("matmul", {h, w2}, {{"activation", std::string("relu")}});  // same key as the first
  g.mark_output(g.add("gelu", {g.add("reshape", {y}, {{"shape", Ints{64, 32}}})}));
  const auto p = profile_on_cpu(g, {.warmup = 1, .repeat = 5});
  ASSERT_EQ(p.ops.size(), 2u);  // matmul (2 instances) and gelu; the reshape is a view
  EXPECT_EQ(p.ops[0].instances, 2);
  EXPECT_EQ(p.view_nodes, 1);
  for (const auto& op : p.ops) {
    EXPECT_GT(op.timing.median_seconds, 0);
    EXPECT_LE(op.timing.min_seconds, op.timing.median_seconds);
    EXPECT_LE(op.timing.median_seconds, op.timing.max_seconds);
  }
  const auto path = std::filesystem::temp_directory_path() / "strata_cpu_profile_test.json";
  p.db.save(path.string());
  const auto db = models::ProfileDb::load(path.string());
  std::filesystem::remove(path);
  EXPECT_EQ(db.size(), 2u);
  const hw::GpuSpec* cpu = hw::find_gpu(std::string(kHostCpuDevice));
  ASSERT_NE(cpu, nullptr);
  const models::CostModel roofline(*cpu), measured(*cpu, models::RooflineParams::defaults(), &db);
  for (const auto& op : p.ops) {
    const auto& node = g.node(op.node);
    EXPECT_FALSE(roofline.node_cost(g, node).measured);
    const auto c = measured.node_cost(g, node);
    EXPECT_TRUE(c.measured) << op.key;
    EXPECT_DOUBLE_EQ(c.seconds, op.timing.median_seconds) << op.key;
  }
  // The second matmul shares the first's entry.
  EXPECT_DOUBLE_EQ(measured.node_cost(g, g.node(1)).seconds, p.ops[0].timing.median_seconds);
}

// time_graph: one pass over the whole graph contains a run of every kernel, so its time is at least the
// larger node's fastest run on its own; the values it leaves are the replay's.
TEST(CpuTimeGraph, TwoNodesTakeAtLeastTheLargerNodeAndComputeTheReplaysOutput) {
  SKIP_WITHOUT_ONEDNN();
  Graph g("two");
  const auto x = g.add_input("x", TensorType{{256, 256}, DType::kF32});
  const auto w = g.add_param("w", TensorType{{256, 256}, DType::kF32});
  const auto z = g.add("gelu", {g.add("matmul", {x, w})});
  g.mark_output(z);
  const TimingOptions timing{.warmup = 2, .repeat = 15};
  const auto t = time_graph(g, timing);
  EXPECT_EQ(t.kernels, 2);
  EXPECT_EQ(t.view_nodes, 0);
  ASSERT_EQ(t.nodes.size(), 2u);
  for (const auto& n : t.nodes) EXPECT_EQ(n.backend, CpuBackend::kOneDnn) << n.detail;
  const auto a = time_node(g, 0, timing), b = time_node(g, 1, timing);
  EXPECT_GE(t.median_seconds, std::max(a.min_seconds, b.min_seconds));
  EXPECT_LE(t.min_seconds, t.median_seconds);
  EXPECT_LE(t.median_seconds, t.max_seconds);
  const auto replay = replay_on_cpu(g);
  EXPECT_EQ(t.values[static_cast<std::size_t>(z)], replay.values[static_cast<std::size_t>(z)]);
}

// A view between two kernels (run in the first pass only) and a reference-kernel node reading a oneDNN
// node's output: every value equals the replay's.
TEST(CpuTimeGraph, ViewsAndReferenceNodesReadTheirProducersOutputs) {
  SKIP_WITHOUT_ONEDNN();
  Graph g("mixed");
  const auto x = g.add_input("x", TensorType{{4, 8}, DType::kF32});
  const auto w = g.add_param("w", TensorType{{8, 8}, DType::kF32});
  const auto bias = g.add_param("b", TensorType{{4}, DType::kF32});
  const auto h = g.add("gelu", {g.add("reshape", {g.add("matmul", {x, w})}, {{"shape", Ints{8, 4}}})});
  g.mark_output(g.add("ewsub", {bias, h}));  // the first operand broadcasts: the reference kernel
  const auto t = time_graph(g, {.warmup = 0, .repeat = 3});
  const auto replay = replay_on_cpu(g);
  EXPECT_EQ(t.kernels, 3);
  EXPECT_EQ(t.view_nodes, 1);
  ASSERT_EQ(t.nodes.size(), replay.nodes.size());
  for (std::size_t i = 0; i < t.nodes.size(); ++i) EXPECT_EQ(t.nodes[i].backend, replay.nodes[i].backend);
  EXPECT_EQ(t.nodes.back().backend, CpuBackend::kReference);
  ASSERT_EQ(t.values.size(), replay.values.size());
  for (std::size_t v = 0; v < t.values.size(); ++v)
    EXPECT_EQ(t.values[v], replay.values[v]) << g.values()[v].name;
  EXPECT_THROW(time_graph(g, {.warmup = -1}), std::invalid_argument);
  EXPECT_THROW(time_graph(g, {.repeat = 0}), std::invalid_argument);
}

}  // namespace
}  // namespace strata::validate
