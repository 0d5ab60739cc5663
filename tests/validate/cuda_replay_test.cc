// The GPU replay (validate/cuda_replay.h). On a machine with a CUDA device: every operator it lowers to
// cuBLAS, cuDNN or strata's kernels gives the reference executor's result (models/exec, double precision)
// within f32 rounding (causal softmax and fused attention included), whole zoo models too (squeezenet, a
// transformer decoder with every node on the GPU), nodes without a lowering run the reference kernel, and
// CUDA-event timings are positive, ordered and grow with the work. Without a device (or without the
// backend) each of those tests reports itself skipped with the reason; the one test that runs everywhere
// checks that reason is what every GPU entry point throws.
#include "validate/cuda_replay.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include <gtest/gtest.h>

#include "models/zoo/transformer_spec.h"
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

#define SKIP_WITHOUT_GPU()                                                     \
  if (auto why = cuda_unavailable_reason(); !why.empty()) GTEST_SKIP() << why; \
  static_assert(true)

// As the CPU replay's tolerance (tests/validate/cpu_replay_test.cc): n²·u for a sum of n terms in f32
// (Higham, §3.1), plus 1e-5 relative for the inputs' rounding and the libraries' exp/tanh/erf.
double tolerance(double ref, std::int64_t terms) {
  const double n = static_cast<double>(terms);
  return n * n * std::ldexp(1.0, -24) + 1e-5 * (1 + std::abs(ref));
}

void expect_matches_reference(const Graph& g, std::int64_t terms, bool on_gpu = true) {
  const auto replay = replay_on_cuda(g);
  const auto ref = models::execute<double>(g);
  ASSERT_EQ(replay.nodes.size(), g.nodes().size());
  for (const auto& n : replay.nodes)
    EXPECT_EQ(n.backend, on_gpu ? CpuBackend::kCuda : CpuBackend::kReference)
        << g.node(n.node).name << ": " << n.detail;
  for (auto out : g.outputs()) {
    const auto& got = replay.values[static_cast<std::size_t>(out)];
    const auto& want = ref[static_cast<std::size_t>(out)];
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      if (std::isnan(want[i])) {  // the reference's 0 / 0: a causal softmax row that sees no key
        ASSERT_TRUE(std::isnan(got[i])) << g.value(out).name << "[" << i << "]: GPU " << got[i];
        continue;
      }
      ASSERT_LE(std::abs(got[i] - want[i]), tolerance(want[i], terms))
          << g.value(out).name << "[" << i << "]: GPU " << got[i] << ", reference " << want[i];
    }
  }
}

using test::one_node;

// A whole graph's outputs against the reference executor's: every element within 1e-3 of the output's largest
// magnitude (f32 kernels over graphs a few dozen layers deep).
void expect_outputs_near_reference(const Graph& g, const std::vector<std::vector<float>>& values) {
  const auto ref = models::execute<double>(g);
  for (auto out : g.outputs()) {
    const auto& got = values[static_cast<std::size_t>(out)];
    const auto& want = ref[static_cast<std::size_t>(out)];
    double scale = 0, worst = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
      scale = std::max(scale, std::abs(want[i]));
      worst = std::max(worst, std::abs(got[i] - want[i]));
    }
    EXPECT_LE(worst, 1e-3 * std::max(scale, 1e-30)) << g.value(out).name;
  }
}

TEST(CudaReplay, WithoutADeviceEveryEntryPointSaysWhy) {
  const auto why = cuda_unavailable_reason();
  if (why.empty()) GTEST_SKIP() << "a CUDA device is present: " << cuda_description();
  // Built without CUDA, the reason is kCudaNotBuilt; built with it on a machine without a GPU or driver, the
  // runtime's own error (cudaGetDeviceCount) is quoted.
  if (cuda_built())
    EXPECT_EQ(why.rfind("no CUDA device (", 0), 0u) << why;
  else
    EXPECT_EQ(why, kCudaNotBuilt);
  const Graph g = one_node("relu", {{4}});
  for (auto call : std::initializer_list<std::function<void()>>{
           [&] { replay_on_cuda(g); }, [&] { time_node_cuda(g, 0); }, [&] { time_graph_cuda(g); },
           [&] { profile_on_cuda(g); }, [&] { cuda_description(); }}) {
    try {
      call();
      ADD_FAILURE() << "a GPU entry point ran without a device";
    } catch (const std::runtime_error& e) {
      EXPECT_EQ(std::string(e.what()), why);
    }
  }
}

// cuBLAS is loaded with dlopen, not linked: the library strata was built against loads, and has every
// function the replay calls under the names it looks up (no GPU needed).
TEST(CudaReplay, CublasLoadsWithEveryFunctionTheReplayCalls) {
  if (!cuda_built()) GTEST_SKIP() << kCudaNotBuilt;
  EXPECT_EQ(cublas_load_error(), "");
}

TEST(CudaReplayOps, MatmulAllTransposesBatchesAndFusedRelu) {
  SKIP_WITHOUT_GPU();
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb) {
      SCOPED_TRACE(testing::Message() << "trans_a " << ta << " trans_b " << tb);
      const models::Shape a = ta ? models::Shape{24, 7} : models::Shape{7, 24};
      const models::Shape b = tb ? models::Shape{5, 24} : models::Shape{24, 5};
      expect_matches_reference(
          one_node("matmul", {a, b}, {{"trans_a", std::int64_t{ta}}, {"trans_b", std::int64_t{tb}}}), 24);
    }
  expect_matches_reference(one_node("matmul", {{6, 16}, {16, 9}}, {{"activation", std::string("relu")}}), 16);
  expect_matches_reference(
      one_node("batch_matmul", {{2, 3, 5, 8}, {2, 3, 6, 8}}, {{"trans_b", std::int64_t{1}}}), 8);
  expect_matches_reference(one_node("batch_matmul", {{4, 5, 8}, {8, 3}}), 8);
  // A batch broadcast one strided batch cannot express runs on the reference kernel.
  expect_matches_reference(
      one_node("batch_matmul", {{2, 1, 8, 5}, {3, 8, 4}}, {{"trans_a", std::int64_t{1}}}), 8, false);
}

TEST(CudaReplayOps, ConvolutionPoolingSoftmaxActivationsNormalisations) {
  SKIP_WITHOUT_GPU();
  expect_matches_reference(one_node("conv2d", {{2, 4, 9, 9}, {6, 4, 3, 3}}), 4 * 9);
  expect_matches_reference(
      one_node("conv2d", {{1, 4, 11, 10}, {8, 4, 3, 3}, {8}},
               {{"strides", Ints{2, 1}}, {"pads", Ints{1, 1, 1, 1}}, {"activation", std::string("relu")}}),
      4 * 9 + 1);
  expect_matches_reference(
      one_node("conv2d", {{1, 8, 7, 7}, {12, 2, 3, 3}},
               {{"groups", std::int64_t{4}}, {"pads", Ints{1, 1, 1, 1}}, {"dilations", Ints{2, 2}}}),
      2 * 9);
  // Asymmetric pads: cuDNN's legacy descriptors pad both sides alike, so the reference kernel runs.
  expect_matches_reference(one_node("conv2d", {{1, 4, 11, 10}, {8, 4, 3, 3}}, {{"pads", Ints{1, 0, 2, 1}}}),
                           4 * 9, false);
  expect_matches_reference(
      one_node("maxpool2d", {{2, 3, 9, 9}},
               {{"kernel", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}}),
      1);
  expect_matches_reference(
      one_node("avgpool2d", {{2, 3, 8, 8}}, {{"kernel", Ints{2, 2}}, {"strides", Ints{2, 2}}}), 4);
  expect_matches_reference(one_node("softmax", {{3, 5, 7}}, {{"axis", std::int64_t{1}}}), 5);
  expect_matches_reference(one_node("softmax", {{3, 5, 7}}), 7);
  for (const char* op : {"relu", "sigmoid", "tanh", "gelu", "silu"}) {
    SCOPED_TRACE(op);
    expect_matches_reference(one_node(op, {{3, 17}}), 1);
  }
  expect_matches_reference(one_node("layernorm", {{4, 6, 33}, {33}, {33}}, {{"axis", std::int64_t{-1}}}), 33);
  expect_matches_reference(one_node("rmsnorm", {{4, 300}, {300}}), 300);
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

TEST(CudaReplayOps, PoolingInCeilModeAndWithAsymmetricPadsRunsStratasKernel) {
  SKIP_WITHOUT_GPU();
  // 3x3 stride 2 over 8: cuDNN's floor gives 3, the graph's ceil mode 4.
  const Attrs ceil{{"kernel", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"ceil_mode", std::int64_t{1}}};
  expect_matches_reference(one_node("maxpool2d", {{2, 3, 8, 8}}, ceil), 9);
  expect_matches_reference(one_node("avgpool2d", {{2, 3, 8, 8}}, ceil), 9);
  const Attrs asym{{"kernel", Ints{2, 3}},
                   {"strides", Ints{1, 2}},
                   {"pads", Ints{0, 1, 1, 0}},
                   {"count_include_pad", std::int64_t{1}}};
  expect_matches_reference(one_node("avgpool2d", {{1, 2, 7, 6}}, asym), 6);
}

TEST(CudaReplayOps, EmbeddingGathersRowsOnTheGpu) {
  SKIP_WITHOUT_GPU();
  Graph g("emb");
  const auto table = g.add_input("table", TensorType{{50, 8}, DType::kF32});
  const auto idx = g.add_input("idx", TensorType{{3, 4}, DType::kI64});
  g.mark_output(g.add("embedding", {table, idx}));
  expect_matches_reference(g, 1);  // the replay's source indices: pseudo-random rows of the table
}

TEST(CudaReplayOps, CausalSoftmaxRunsStratasRowKernel) {
  SKIP_WITHOUT_GPU();
  const Attrs causal{{"axis", std::int64_t{-1}}, {"causal", std::int64_t{1}}};
  // Keys = queries (lengths not multiples of 32), more keys than queries (the mask shifted by Skv - S), rows
  // longer than the kernel's 256 threads, and fewer keys than queries: rows that see no key are NaN, as in
  // the reference (0 / 0).
  for (const models::Shape& shape :
       std::vector<models::Shape>{{4, 4}, {2, 3, 37, 37}, {2, 5, 70}, {3, 33, 300}, {2, 9, 4}}) {
    SCOPED_TRACE(testing::PrintToString(shape));
    expect_matches_reference(one_node("softmax", {shape}, causal), shape.back());
  }
}

TEST(CudaReplayOps, AttentionRunsAsTwoGemmsAroundTheRowSoftmax) {
  SKIP_WITHOUT_GPU();
  struct Case {
    models::Shape q, kv;
    std::int64_t causal;
    double scale;
  };
  for (const auto& t :
       std::vector<Case>{{{1, 1, 5, 4}, {1, 1, 5, 4}, 1, 0},
                         {{2, 4, 37, 16}, {2, 4, 37, 16}, 1, 0},     // S not a multiple of 32
                         {{2, 8, 33, 64}, {2, 2, 33, 64}, 1, 0},     // grouped-query, 4 per group
                         {{1, 6, 20, 32}, {1, 6, 45, 32}, 1, 0},     // more keys than queries
                         {{3, 4, 50, 24}, {3, 1, 70, 24}, 0, 0.2},   // one k/v head, scale
                         {{2, 2, 300, 8}, {2, 2, 300, 8}, 0, 0}}) {  // rows over 256 keys
    SCOPED_TRACE(testing::Message() << testing::PrintToString(t.q) << " kv " << testing::PrintToString(t.kv)
                                    << " causal " << t.causal);
    const Graph g = one_node("attention", {t.q, t.kv, t.kv}, {{"causal", t.causal}, {"scale", t.scale}});
    expect_matches_reference(g, t.q[3] + t.kv[2]);
    EXPECT_NE(replay_on_cuda(g).nodes.at(0).detail.find("row-softmax"), std::string::npos);
  }
}

// A decoder whose every node runs on the GPU, with fused attention (GQA) and with the unfused causal softmax:
// the transformer of the H200 run (docs/gpu.md) had attention as its only node on the host.
TEST(CudaReplay, WholeTransformerRunsOnTheGpuAndMatchesTheReference) {
  SKIP_WITHOUT_GPU();
  for (const char* spec : {"layers=2,hidden=64,heads=4,kv_heads=2,vocab=100,seq=37,attention=flash",
                           "layers=2,hidden=64,heads=4,vocab=100,seq=37,attention=naive"}) {
    SCOPED_TRACE(spec);
    const Graph g = models::zoo::build_transformer(models::zoo::parse_transformer_spec(spec), {});
    const auto replay = replay_on_cuda(g);
    for (const auto& n : replay.nodes)
      EXPECT_EQ(n.backend, CpuBackend::kCuda) << g.node(n.node).name << ": " << n.detail;
    expect_outputs_near_reference(g, replay.values);
  }
}

TEST(CudaReplayOps, ElementWiseAndMovement) {
  SKIP_WITHOUT_GPU();
  expect_matches_reference(one_node("ewadd", {{2, 3, 4}, {3, 1}}), 1);
  expect_matches_reference(one_node("ewsub", {{1, 4}, {3, 4}}), 1);
  expect_matches_reference(one_node("ewmul", {{2, 3, 4}, {2, 3, 4}}), 1);
  expect_matches_reference(one_node("concat", {{2, 3, 4}, {2, 5, 4}}, {{"axis", std::int64_t{1}}}), 1);
  {  // split into three along the middle axis: every output checked
    Graph g("split");
    const auto x = g.add_input("x", TensorType{{2, 9, 4}, DType::kF32});
    for (auto y : g.add_node("split", {x}, {{"axis", std::int64_t{1}}, {"sizes", Ints{2, 3, 4}}}))
      g.mark_output(y);
    expect_matches_reference(g, 1);
  }
  expect_matches_reference(one_node("transpose", {{2, 3, 4}}, {{"perm", Ints{2, 0, 1}}}), 1);
  expect_matches_reference(one_node("reduce_sum", {{2, 3, 4}}, {{"axes", Ints{1}}}), 3);
  expect_matches_reference(one_node("reduce_mean", {{2, 3, 4}}, {{"axes", Ints{0, 2}}}), 8);
}

TEST(CudaReplay, WholeZooModelMatchesTheReference) {
  SKIP_WITHOUT_GPU();
  const Graph g = models::zoo::build_model("squeezenet", {.batch = 1});
  const auto replay = replay_on_cuda(g);
  EXPECT_GT(std::count_if(replay.nodes.begin(), replay.nodes.end(),
                          [](const NodeBackend& n) { return n.backend == CpuBackend::kCuda; }),
            0);
  expect_outputs_near_reference(g, replay.values);
}

TEST(CudaReplay, TimingsArePositiveOrderedAndGrowWithTheWork) {
  SKIP_WITHOUT_GPU();
  const TimingOptions t{.warmup = 2, .repeat = 9, .seed = 0};
  const auto small = time_node_cuda(one_node("matmul", {{64, 64}, {64, 64}}), 0, t);
  const auto large = time_node_cuda(one_node("matmul", {{2048, 2048}, {2048, 2048}}), 0, t);
  for (const auto* x : {&small, &large}) {
    EXPECT_GT(x->min_seconds, 0);
    EXPECT_LE(x->min_seconds, x->median_seconds);
    EXPECT_LE(x->median_seconds, x->max_seconds);
    EXPECT_EQ(x->backend.backend, CpuBackend::kCuda);
    // cuBLAS's GEMM can be captured: the timed runs replay a CUDA graph, without the host's issue time.
    EXPECT_NE(x->backend.detail.find("timed as a CUDA graph"), std::string::npos) << x->backend.detail;
  }
  // 2048³ is 32768x the multiply-adds of 64³: no GPU runs both in the same time.
  EXPECT_GT(large.median_seconds, 4 * small.median_seconds);
  const auto whole = time_graph_cuda(one_node("relu", {{1 << 20}}), t);
  EXPECT_GT(whole.median_seconds, 0);
  EXPECT_EQ(whole.kernels, 1);
  EXPECT_TRUE(whole.cuda_graph);
  // Attention (two GEMMs and the softmax kernel on a workspace the node owns) is captured too.
  const auto attn = time_node_cuda(
      one_node("attention", {{2, 8, 64, 64}, {2, 8, 64, 64}, {2, 8, 64, 64}}, {{"causal", std::int64_t{1}}}),
      0, t);
  EXPECT_EQ(attn.backend.backend, CpuBackend::kCuda);
  EXPECT_NE(attn.backend.detail.find("timed as a CUDA graph"), std::string::npos) << attn.backend.detail;
  // A node on the host's reference kernel (a convolution with asymmetric pads, which cuDNN's legacy
  // descriptors cannot express) copies synchronously, which cannot be captured: it is timed by direct
  // launches.
  const auto host =
      time_node_cuda(one_node("conv2d", {{1, 4, 11, 10}, {8, 4, 3, 3}}, {{"pads", Ints{1, 0, 2, 1}}}), 0, t);
  EXPECT_EQ(host.backend.backend, CpuBackend::kReference);
  EXPECT_NE(host.backend.detail.find("timed by direct launches"), std::string::npos) << host.backend.detail;
  const auto p = profile_on_cuda(one_node("relu", {{1 << 20}}), t, "test-gpu");
  ASSERT_EQ(p.ops.size(), 1u);
  EXPECT_NE(p.ops[0].key.find("test-gpu"), std::string::npos);
}

}  // namespace
}  // namespace strata::validate
