// Cost model (roofline with kind/size efficiencies, profile overrides), peak memory from tensor lifetimes,
// and single-device simulation on the sim engine.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string_view>

#include <fmt/format.h>

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

// NVIDIA A100 Tensor Core GPU datasheet (2021,
// https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/
// a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf), SXM4 80 GB column: FP16 Tensor Core 312
// TFLOPS (dense), FP32 19.5 TFLOPS, HBM2e 2,039 GB/s.
constexpr double kA100Fp16 = 312e12, kA100Fp32 = 19.5e12, kA100Hbm = 2039e9;

TEST(CostModel, GpuCatalogMatchesTheDatasheet) {
  EXPECT_DOUBLE_EQ(a100().peak_flops(hw::DType::kFp16), kA100Fp16);
  EXPECT_DOUBLE_EQ(a100().peak_flops(hw::DType::kFp32), kA100Fp32);
  EXPECT_DOUBLE_EQ(a100().hbm_bandwidth, kA100Hbm);
}

// Efficiencies chosen by the test (not the defaults), so the expected times below follow from the roofline
// formula alone: t = launch + max(F / (P x eff_c(F/P)), B / (W x eff_m(B/W))), eff(t) = max x t / (t + half).
RooflineParams test_params() {
  RooflineParams p;
  for (auto& k : p.by_kind) k = {{0.5, 0}, {0.5, 0}};
  p.by_kind[static_cast<std::size_t>(OpKind::kContraction)] = {{0.7, 3e-6}, {0.6, 1e-6}};
  p.by_kind[static_cast<std::size_t>(OpKind::kElementwise)] = {{0.4, 1e-6}, {0.85, 2e-6}};
  return p;
}
double saturating(double max, double half, double ideal) {
  return max * ideal / (ideal + half);
}

Graph matmul_graph(std::int64_t m, std::int64_t k, std::int64_t n, DType dt) {
  Graph g;
  const auto a = g.add_input("a", {{m, k}, dt});
  const auto b = g.add_param("b", {{k, n}, dt});
  g.mark_output(g.add("matmul", {a, b}, {}, "mm"));
  return g;
}

TEST(CostModel, LargeGemmFollowsTheRooflineFormula) {
  const CostModel cm(a100(), test_params());
  const double n = 8192;
  const auto g = matmul_graph(8192, 8192, 8192, DType::kF16);
  const auto c = cm.node_cost(g, g.node(0));
  EXPECT_DOUBLE_EQ(c.flops, 2 * n * n * n);  // one multiply-add per (i, j, k)
  EXPECT_DOUBLE_EQ(c.bytes, 2 * 3 * n * n);  // A, B read and C written once, 2 B each
  const double tc = c.flops / kA100Fp16, tm = c.bytes / kA100Hbm;
  EXPECT_TRUE(c.compute_bound);
  EXPECT_NEAR(c.seconds, 4e-6 + tc / saturating(0.7, 3e-6, tc), 1e-15);  // launch 4 us (hw catalog)
  // f32 operands run on the f32 pipes and move twice the bytes.
  const auto g32 = matmul_graph(8192, 8192, 8192, DType::kF32);
  const double tc32 = c.flops / kA100Fp32;
  EXPECT_NEAR(cm.node_cost(g32, g32.node(0)).seconds, 4e-6 + tc32 / saturating(0.7, 3e-6, tc32), 1e-15);
  (void)tm;
}

TEST(CostModel, SmallKernelsAreLessEfficientAndViewsAreFree) {
  const CostModel cm(a100(), test_params());
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
  g.add("reshape", {x}, {{"shape", Ints{-1}}});
  g.add("transpose", {x}, {{"shuffle", std::int64_t{0}}});
  g.add("relu", {x});
  EXPECT_EQ(cm.node_cost(g, g.node(0)).seconds, 0.0);
  EXPECT_EQ(cm.node_cost(g, g.node(1)).seconds, 0.0);
  // relu of 1 Mi f16 elements: 2 MiB read + 2 MiB written, one comparison per element.
  const auto c = cm.node_cost(g, g.node(2));
  EXPECT_DOUBLE_EQ(c.bytes, 4.0 * 1024 * 1024);
  EXPECT_FALSE(c.compute_bound);
  const double tm = c.bytes / kA100Hbm;
  EXPECT_NEAR(c.seconds, 4e-6 + tm / saturating(0.85, 2e-6, tm), 1e-15);
}

// A grouped convolution's compute time is divided by the tile utilization of the device it runs on
// (hw::GpuSpec::gemm_tile): ResNeXt-50's layer-1 3x3 (128 channels in 32 groups, 56x56, f32) on an
// A100 with its 32 x 16 tile, and on the same GPU given a CPU's 16 x 1 tile.
TEST(CostModel, GroupedConvolutionsPayTheDevicesTilePadding) {
  Graph g;
  const auto x = g.add_input("x", {{1, 128, 56, 56}, DType::kF32});
  const auto w = g.add_param("w", {{128, 4, 3, 3}, DType::kF32});
  g.mark_output(g.add("conv2d", {x, w}, {{"pads", Ints{1, 1, 1, 1}}, {"groups", std::int64_t{32}}}, "c"));
  hw::GpuSpec wide = a100();
  wide.gemm_tile = {16, 1};
  const CostModel gpu_tile(a100(), test_params()), cpu_tile(wide, test_params());
  const auto c = gpu_tile.node_cost(g, g.node(0));
  // 2 FLOP x 56·56 pixels x 128 outputs x 4·3·3 inputs per output.
  EXPECT_DOUBLE_EQ(c.flops, 2.0 * 56 * 56 * 128 * 36);
  ASSERT_TRUE(c.compute_bound);
  const double tc = c.flops / kA100Fp32, eff = saturating(0.7, 3e-6, tc);
  // N_g = 4 of 32, K_g = 36 of 48 under the GPU's tile; 4 of 16 lanes, no K padding under the CPU's.
  EXPECT_NEAR(c.seconds, 4e-6 + tc / (eff * (4.0 / 32) * (36.0 / 48)), 1e-15);
  EXPECT_NEAR(cpu_tile.node_cost(g, g.node(0)).seconds, 4e-6 + tc / (eff * (4.0 / 16)), 1e-15);
}

// The simulator times operator kernels through the cost model (KernelCost as sim::ComputeCost): a graph on
// one stream takes the sum of its kernels' roofline times, derived here by hand for a matmul and a relu.
TEST(GraphSim, StepTimeIsTheHandDerivedRooflineSum) {
  const auto topo = hw::load_system("configs/hw/dgx-a100.yaml");
  ASSERT_EQ(topo.gpu().name, "a100-sxm4-80gb");
  Graph g;
  const auto a = g.add_input("a", {{4096, 1024}, DType::kF16});
  const auto b = g.add_param("b", {{1024, 2048}, DType::kF16});
  g.mark_output(g.add("relu", {g.add("matmul", {a, b})}));
  const double flops = 2.0 * 4096 * 1024 * 2048, mm_bytes = 2.0 * (4096 * 1024 + 1024 * 2048 + 4096 * 2048);
  const double tc = flops / kA100Fp16, tm = mm_bytes / kA100Hbm;
  const double matmul = 4e-6 + std::max(tc / saturating(0.7, 3e-6, tc), tm / saturating(0.6, 1e-6, tm));
  const double relu_bytes = 2.0 * 2 * 4096 * 2048, tr = relu_bytes / kA100Hbm;
  const double relu = 4e-6 + tr / saturating(0.85, 2e-6, tr);
  const CostModel cm(topo.gpu(), test_params());
  const auto r = simulate_graph(g, topo, cm, {.gpu = 5});
  EXPECT_NEAR(r.seconds, matmul + relu, 2e-12);  // the engine keeps integer picoseconds
  ASSERT_EQ(r.node_seconds.size(), 2u);
  EXPECT_NEAR(r.node_seconds[0], matmul, 1e-15);
  EXPECT_NEAR(r.node_seconds[1], relu, 1e-15);
}

// Before the one compute-cost interface, simulate_graph put fixed-duration tasks (node_cost seconds) on the
// task graph; now the simulator asks KernelCost. Rebuilt here the old way, the makespans are identical.
TEST(GraphSim, SameTimesAsFixedDurationTasks) {
  const auto topo = hw::load_system("configs/hw/dgx-a100.yaml");
  const CostModel cm(topo.gpu());
  for (const char* name : {"resnet50", "bert-base", "nasrnn"}) {
    SCOPED_TRACE(name);
    const auto g = zoo::build_model(name, {.dtype = DType::kF16});
    sim::TaskGraph fixed;
    std::vector<sim::TaskId> producer(g.values().size(), -1);
    for (const auto& n : g.nodes()) {
      std::vector<sim::Dep> deps;
      for (auto v : n.inputs) {
        const auto t = producer[static_cast<std::size_t>(v)];
        if (t >= 0 && std::none_of(deps.begin(), deps.end(), [&](const sim::Dep& d) { return d.task == t; }))
          deps.push_back({t, sim::DepKind::kDone});
      }
      const double seconds = cm.node_cost(g, n).seconds;
      const auto label = fixed.intern(n.name);
      const auto task =
          seconds > 0 ? fixed.add_compute_fixed(0, 0, seconds, label, deps) : fixed.add_delay(0, label, deps);
      for (auto v : n.outputs) producer[static_cast<std::size_t>(v)] = task;
    }
    const auto before = sim::simulate(topo, fixed);
    const auto after = simulate_graph(g, topo, cm);
    EXPECT_EQ(after.sim.makespan, before.makespan);
    EXPECT_GT(after.seconds, 0);
  }
}

// KernelCost refuses work it did not register rather than timing it as something else.
TEST(GraphSim, KernelCostRejectsUnregisteredWork) {
  const CostModel cm(a100());
  KernelCost kernels(cm);
  const auto g = matmul_graph(64, 64, 64, DType::kF16);
  const auto work = kernels.add(g, 0);
  EXPECT_EQ(work.kernel, 0);
  EXPECT_DOUBLE_EQ(work.flops, 2.0 * 64 * 64 * 64);
  EXPECT_DOUBLE_EQ(kernels.seconds(work, a100()), cm.node_cost(g, g.node(0)).seconds);
  EXPECT_THROW(kernels.seconds(sim::ComputeWork{1e9, 1e6, hw::DType::kFp16, 1}, a100()),
               std::invalid_argument);
  EXPECT_THROW(kernels.seconds(sim::ComputeWork{}, a100()), std::invalid_argument);
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

// The error message of ProfileDb::parse(text, "db.json"), or "" when it parses.
std::string profile_error(std::string_view text) {
  try {
    ProfileDb::parse(text, "db.json");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

// Issue 11: nlohmann::json keeps the last of repeated keys, so a repeated key or entry replaced a measured
// time silently; a number beyond double escaped as json::out_of_range without the file name.
TEST(ProfileDb, RepeatedKeysAndEntriesAreErrorsNamingFileAndKey) {
  constexpr std::string_view kEntry =
      R"({"op": "relu", "attrs": "", "inputs": ["f32[1024]"], "device": "a100", "seconds": 2e-6})";
  const auto one = ProfileDb::parse(fmt::format(R"({{"entries": [{}]}})", kEntry), "db.json");
  ASSERT_EQ(one.size(), 1u);
  ASSERT_NE(one.find("relu||f32[1024]|a100"), nullptr);
  EXPECT_DOUBLE_EQ(*one.find("relu||f32[1024]|a100"), 2e-6);

  const auto twice = profile_error(fmt::format(R"({{"entries": [{}, {}]}})", kEntry, kEntry));
  EXPECT_NE(twice.find("db.json: entries[1]: the same kernel as entries[0] (relu||f32[1024]|a100)"),
            std::string::npos)
      << twice;
  const auto key = profile_error(
      R"({"entries": [{"op": "relu", "attrs": "", "inputs": [], "device": "x", "seconds": 1, "seconds": 2}]})");
  EXPECT_NE(key.find("db.json: key \"seconds\" appears twice in one object"), std::string::npos) << key;
  const auto top = profile_error(R"({"entries": [], "entries": []})");
  EXPECT_NE(top.find("db.json: key \"entries\" appears twice"), std::string::npos) << top;
  // The same key in two different objects is fine.
  EXPECT_EQ(profile_error(R"({"entries": [{"op": "a", "attrs": "", "inputs": [], "device": "x", "seconds": 1},
                                          {"op": "b", "attrs": "", "inputs": [], "device": "x", "seconds": 1}]})"),
            "");
}

TEST(ProfileDb, NumbersOutOfRangeNameTheFile) {
  const auto overflow = profile_error(
      R"({"entries": [{"op": "a", "attrs": "", "inputs": [], "device": "x", "seconds": 1e999}]})");
  EXPECT_EQ(overflow.rfind("db.json: not valid JSON:", 0), 0u) << overflow;
  EXPECT_NE(overflow.find("number overflow"), std::string::npos) << overflow;
  // 1e300 s is a double but not a simulated time (int64 picoseconds reach 9.2e6 s; the limit is 1e6 s).
  const auto huge = profile_error(
      R"({"entries": [{"op": "a", "attrs": "", "inputs": [], "device": "x", "seconds": 1e300}]})");
  EXPECT_NE(huge.find("db.json: entries[0].seconds: expected a number of seconds from 0 to 1e+06"),
            std::string::npos)
      << huge;
  EXPECT_NE(
      profile_error(R"({"entries": [{"op": "a", "attrs": "", "inputs": [], "device": "x", "seconds": -1}]})")
          .find("entries[0].seconds"),
      std::string::npos);
}

TEST(ProfileDb, LoadNamesADirectory) {
  const auto dir = std::filesystem::temp_directory_path();
  try {
    ProfileDb::load(dir.string());
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("is a directory"), std::string::npos) << e.what();
  }
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
  // A training step keeps f16 parameters, their gradients, and fp32 master weights and Adam moments.
  Graph f;
  const auto in = f.add_input("in", {{4, 8}, DType::kF16});
  const auto w = f.add_param("w", {{8, 8}, DType::kF16});
  f.mark_output(f.add("matmul", {in, w}));
  const auto tg = derive_training_graph(f);
  const auto tm = memory_profile(tg.graph);
  EXPECT_EQ(tm.params, 128);
  EXPECT_EQ(tm.optimizer_state, 3 * 64 * 4);
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
