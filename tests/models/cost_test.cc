// Cost model (roofline with kind/size efficiencies, profile overrides), peak memory from tensor lifetimes,
// and single-device simulation on the sim engine.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "hw/config_error.h"
#include "hw/system_loader.h"
#include "models/cost/cost_model.h"
#include "models/simulate/graph_sim.h"
#include "models/train/training.h"
#include "models/zoo/zoo.h"

namespace strata::models {
namespace {

const hw::GpuSpec& a100() {
  return *hw::find_gpu("a100-sxm4-80gb");
}

Graph matmul_graph(std::int64_t m, std::int64_t k, std::int64_t n, DType dt) {
  Graph g;
  const auto a = g.add_input("a", {{m, k}, dt});
  const auto b = g.add_param("b", {{k, n}, dt});
  g.mark_output(g.add("matmul", {a, b}, {}, "mm"));
  return g;
}

TEST(CostModel, LargeGemmIsComputeBoundNearPeak) {
  const CostModel cm(a100());
  const auto g = matmul_graph(8192, 8192, 8192, DType::kF16);
  const auto c = cm.node_cost(g, g.node(0));
  EXPECT_TRUE(c.compute_bound);
  EXPECT_DOUBLE_EQ(c.flops, 2.0 * 8192 * 8192 * 8192);
  // 1.1 TFLOP at 312 TFLOP/s = 3.52 ms ideal; 80% efficiency (minus the size term) => ~4.4 ms.
  const double ideal = c.flops / 312e12;
  EXPECT_NEAR(c.seconds, 4e-6 + ideal / (0.8 * ideal / (ideal + 2e-6)), 1e-12);
  EXPECT_NEAR(c.seconds, 4.41e-3, 0.02e-3);
  // fp32 runs on the fp32 pipes (19.5 TFLOP/s): 16x slower.
  const auto g32 = matmul_graph(8192, 8192, 8192, DType::kF32);
  EXPECT_NEAR(cm.node_cost(g32, g32.node(0)).seconds / c.seconds, 312.0 / 19.5, 0.05);
}

TEST(CostModel, SmallKernelsAreLessEfficientAndViewsAreFree) {
  const CostModel cm(a100());
  double prev = 1e30;
  for (std::int64_t n : {64, 256, 1024, 4096}) {
    const auto g = matmul_graph(n, n, n, DType::kF16);
    const auto c = cm.node_cost(g, g.node(0));
    const double sec_per_flop = (c.seconds - a100().launch_overhead) / c.flops;
    EXPECT_LT(sec_per_flop, prev) << n;
    prev = sec_per_flop;
  }
  Graph g;
  const auto x = g.add_input("x", {{1024, 1024}, DType::kF16});
  const auto r = g.add("reshape", {x}, {{"shape", Ints{-1}}});
  const auto t = g.add("transpose", {x}, {{"shuffle", std::int64_t{0}}});
  const auto relu = g.add("relu", {x});
  EXPECT_EQ(cm.node_cost(g, g.node(0)).seconds, 0.0);
  EXPECT_EQ(cm.node_cost(g, g.node(1)).seconds, 0.0);
  // relu of 2 MiB in + 2 MiB out: memory bound at 90% x size factor of 2039 GB/s.
  const auto c = cm.node_cost(g, g.node(2));
  EXPECT_FALSE(c.compute_bound);
  EXPECT_DOUBLE_EQ(c.bytes, 4.0 * 1024 * 1024);
  const double ideal = c.bytes / 2039e9;
  EXPECT_NEAR(c.seconds, 4e-6 + ideal / (0.9 * ideal / (ideal + 1e-6)), 1e-12);
  (void)r;
  (void)t;
  (void)relu;
}

TEST(ProfileDb, OverridesRooflineAndRoundTrips) {
  const auto g = matmul_graph(128, 256, 512, DType::kF16);
  const auto key = profile_key(g, g.node(0), "a100-sxm4-80gb");
  EXPECT_EQ(key, "matmul|activation=none,trans_a=0,trans_b=0|f16[128,256];f16[256,512]|a100-sxm4-80gb");
  ProfileDb db;
  db.add(key, 123e-6);
  const auto path = (std::filesystem::temp_directory_path() / "strata_profile_test.json").string();
  db.save(path);
  const auto loaded = ProfileDb::load(path);
  const CostModel cm(a100(), RooflineParams::defaults(), &loaded);
  const auto c = cm.node_cost(g, g.node(0));
  EXPECT_TRUE(c.measured);
  EXPECT_DOUBLE_EQ(c.seconds, 123e-6);
  // Another device does not match the entry.
  const CostModel h100(*hw::find_gpu("h100-sxm"), RooflineParams::defaults(), &loaded);
  EXPECT_FALSE(h100.node_cost(g, g.node(0)).measured);
  std::ofstream(path) << R"({"entries": [{"op": "matmul", "attrs": "", "inputs": [], "device": "x"}]})";
  try {
    ProfileDb::load(path);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("entries[0]: missing field \"seconds\""), std::string::npos)
        << e.what();
  }
  std::filesystem::remove(path);
}

TEST(Memory, LifetimesViewsAndTraining) {
  Graph g;
  const TensorType t{{256}, DType::kF32};  // 1 KiB
  const auto x = g.add_input("x", t);
  const auto a = g.add("relu", {x}, {}, "a");
  const auto v = g.add("reshape", {a}, {{"shape", Ints{16, 16}}}, "view");
  const auto b = g.add("relu", {x}, {}, "b");
  const auto c = g.add("ewadd", {g.add("reshape", {b}, {{"shape", Ints{16, 16}}}), v}, {}, "c");
  g.mark_output(c);
  const auto m = memory_profile(g);
  EXPECT_EQ(m.inputs, 1024);
  // a (aliased by the view) is still live when c runs: a + b + c.
  EXPECT_EQ(m.peak_transient, 3 * 1024);
  EXPECT_EQ(m.peak(), 4 * 1024);
  // A training step keeps parameters, their gradients and fp32 Adam moments.
  Graph f;
  const auto in = f.add_input("in", {{4, 8}, DType::kF16});
  const auto w = f.add_param("w", {{8, 8}, DType::kF16});
  f.mark_output(f.add("matmul", {in, w}));
  const auto tg = derive_training_graph(f);
  const auto tm = memory_profile(tg.graph);
  EXPECT_EQ(tm.params, 128);
  EXPECT_EQ(tm.optimizer_state, 2 * 64 * 4);
  // y (64 B) and dW (128 B) are the transient buffers; the seed dy is an input.
  EXPECT_EQ(tm.peak_transient, 64 + 128);
}

TEST(GraphSim, SingleStreamTimeIsTheSumOfKernelTimes) {
  const auto topo = hw::load_system("configs/hw/dgx-a100.yaml");
  const auto g = zoo::build_model("squeezenet", {.dtype = DType::kF16});
  const CostModel cm(topo.gpu());
  const auto r = simulate_graph(g, topo, cm, {.gpu = 3});
  double sum = 0;
  for (const auto& n : g.nodes()) sum += cm.node_cost(g, n).seconds;
  EXPECT_NEAR(r.seconds, sum, 1e-12 * static_cast<double>(g.nodes().size()));  // integer picoseconds
  double by_op = 0;
  for (const auto& b : r.by_op) by_op += b.seconds;
  EXPECT_NEAR(by_op, sum, sum * 1e-12);
  EXPECT_EQ(r.by_op.front().op, "conv2d");
  // Training: every convolution runs forward, weight gradient and input gradient -- except the first,
  // whose input (the image) needs no gradient: 3 x forward - first conv.
  const auto tg = derive_training_graph(g);
  auto conv_flops = [](const Graph& gr) {
    double f = 0;
    for (const auto& n : gr.nodes())
      if (n.op->kind == OpKind::kContraction) f += node_flops(gr, n);
    return f;
  };
  EXPECT_NEAR(conv_flops(tg.graph), 3 * conv_flops(g) - node_flops(g, g.node(0)), 1.0);
  const auto rt = simulate_graph(tg.graph, topo, cm);
  EXPECT_GT(rt.seconds, 2.5 * r.seconds);
}

}  // namespace
}  // namespace strata::models
