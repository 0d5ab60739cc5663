// Cost parameters as a file (models/cost/cost_params.h): per-operator curves win over the kind's, the file
// round-trips, every bad field is reported by name, and parameters of one device are refused on another.
#include <cmath>
#include <string>

#include <gtest/gtest.h>

#include "hw/config_error.h"
#include "hw/gpu_spec.h"
#include "models/cost/cost_params.h"

namespace strata::models {
namespace {

Graph matmul_graph(std::int64_t m, std::int64_t k, std::int64_t n) {
  Graph g("mm");
  auto a = g.add_input("a", TensorType{{m, k}, DType::kF32});
  auto b = g.add_input("b", TensorType{{k, n}, DType::kF32});
  g.mark_output(g.add("matmul", {a, b}));
  return g;
}

std::string message_of(std::string_view text) {
  try {
    (void)parse_cost_params(text, "p.json");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(CostParams, PerOperatorCurveWinsOverTheKindAndFollowsTheRooflineFormula) {
  const hw::GpuSpec gpu = *hw::find_gpu("host-cpu");  // 80 GFLOP/s fp32, 10 GB/s, no launch overhead
  const auto g = matmul_graph(512, 512, 512);
  // Hand-derived: 2·512³ FLOP = 268,435,456 FLOP; ideal 3.3554432 ms at 80 GFLOP/s. Bytes 3·512²·4 = 3 MiB,
  // 0.3145728 ms at 10 GB/s: compute bound. With max 0.5 and half 1 ms: (3.3554432 + 1) / 0.5 ms.
  auto params = RooflineParams::defaults();
  params.by_kind[static_cast<std::size_t>(OpKind::kContraction)].compute = {0.25, 0};
  params.by_op["matmul"] = {{0.5, 1e-3}, {1.0, 0}};
  const CostModel with_op(gpu, params);
  EXPECT_NEAR(with_op.node_cost(g, g.node(0)).seconds, (3.3554432e-3 + 1e-3) / 0.5, 1e-12);
  params.by_op.clear();  // the kind's curve: 3.3554432 ms / 0.25
  const CostModel kind_only(gpu, params);
  EXPECT_NEAR(kind_only.node_cost(g, g.node(0)).seconds, 3.3554432e-3 / 0.25, 1e-12);
}

Graph pool_graph(std::string_view op, std::int64_t c, std::int64_t h, std::int64_t k, std::int64_t pad) {
  Graph g("pool");
  auto x = g.add_input("x", TensorType{{1, c, h, h}, DType::kF32});
  g.mark_output(g.add(op, {x}, {{"kernel", Ints{k, k}}, {"pads", Ints{pad, pad, pad, pad}}}));
  return g;
}

// A global pool (the window is the whole image, no padding) is priced by "<op>:global" when the parameters
// have that curve, else by the operator's; any other window by the operator's.
TEST(CostParams, GlobalPoolingHasACurveOfItsOwn) {
  const hw::GpuSpec gpu = *hw::find_gpu("host-cpu");  // 80 GFLOP/s fp32, 10 GB/s, no launch overhead
  const auto global = pool_graph("avgpool2d", 64, 8, 8, 0), windowed = pool_graph("avgpool2d", 64, 8, 3, 1);
  const auto padded = pool_graph("avgpool2d", 64, 8, 8, 1), global_max = pool_graph("maxpool2d", 64, 8, 8, 0);
  EXPECT_EQ(cost_curve_name(global, global.node(0)), "avgpool2d:global");
  EXPECT_EQ(cost_curve_name(global_max, global_max.node(0)), "maxpool2d:global");
  EXPECT_EQ(cost_curve_name(windowed, windowed.node(0)), "avgpool2d");
  EXPECT_EQ(cost_curve_name(padded, padded.node(0)), "avgpool2d");  // a 3x3 output: not one window
  EXPECT_EQ(cost_curve_name(matmul_graph(4, 4, 4), matmul_graph(4, 4, 4).node(0)), "matmul");
  // Hand-derived, both memory bound at 10 GB/s. Global: 64 outputs x 64 window elements = 4096 FLOP
  // (0.0512 us at 80 GFLOP/s); bytes: the 1x64x8x8 input and 64 outputs in f32. Windowed 3x3: 4096 outputs
  // x 9 = 36864 FLOP (0.4608 us); bytes: input and an output of the same size.
  const double global_memory_s = (64 * 8 * 8 + 64) * 4.0 / 10e9,
               windowed_memory_s = 2 * 64 * 8 * 8 * 4.0 / 10e9;
  auto params = RooflineParams::defaults();
  params.by_op["avgpool2d"] = {{1.0, 0}, {0.25, 0}};
  params.by_op["avgpool2d:global"] = {{1.0, 0}, {0.5, 0}};
  const CostModel both(gpu, params);
  EXPECT_NEAR(both.node_cost(global, global.node(0)).seconds, global_memory_s / 0.5, 1e-15);
  EXPECT_NEAR(both.node_cost(windowed, windowed.node(0)).seconds, windowed_memory_s / 0.25, 1e-15);
  params.by_op.erase("avgpool2d:global");  // without its own curve, the operator's
  const CostModel op_only(gpu, params);
  EXPECT_NEAR(op_only.node_cost(global, global.node(0)).seconds, global_memory_s / 0.25, 1e-15);
}

TEST(CostParams, FileRoundTripsAndKeepsUnlistedKindsAtTheirDefaults) {
  CostParams p;
  p.device = "host-cpu";
  p.roofline = RooflineParams::defaults();
  p.roofline.by_kind[static_cast<std::size_t>(OpKind::kReduction)] = {{0.125, 3e-6}, {2.5, 7e-7}};
  p.roofline.by_op["conv2d"] = {{0.7, 1.5e-5}, {0.3, 0}};
  p.roofline.by_op["avgpool2d:global"] = {{0.5, 0}, {0.2, 2e-6}};
  p.fit = {{"note", "test"}};
  const auto back = parse_cost_params(cost_params_json(p), "roundtrip");
  EXPECT_EQ(back.device, "host-cpu");
  const auto& r = back.roofline.by_kind[static_cast<std::size_t>(OpKind::kReduction)];
  EXPECT_EQ(r.compute.max, 0.125);
  EXPECT_EQ(r.compute.half_seconds, 3e-6);
  EXPECT_EQ(r.memory.max, 2.5);
  EXPECT_EQ(r.memory.half_seconds, 7e-7);
  ASSERT_EQ(back.roofline.by_op.count("conv2d"), 1u);
  EXPECT_EQ(back.roofline.by_op.at("conv2d").compute.half_seconds, 1.5e-5);
  ASSERT_EQ(back.roofline.by_op.count("avgpool2d:global"), 1u);
  EXPECT_EQ(back.roofline.by_op.at("avgpool2d:global").memory.half_seconds, 2e-6);
  EXPECT_EQ(back.fit["note"], "test");

  // Only one kind listed: the others keep RooflineParams::defaults().
  const auto partial = parse_cost_params(
      R"({"format": "strata-cost-params", "version": 1, "device": "host-cpu",
          "kinds": {"elementwise": {"memory": {"max": 1.5, "half_seconds": 0}}}})",
      "partial");
  const auto d = RooflineParams::defaults();
  const auto& ew = partial.roofline.by_kind[static_cast<std::size_t>(OpKind::kElementwise)];
  EXPECT_EQ(ew.memory.max, 1.5);
  EXPECT_EQ(ew.compute.max, d.by_kind[static_cast<std::size_t>(OpKind::kElementwise)].compute.max);
  EXPECT_EQ(partial.roofline.by_kind[0].compute.max, d.by_kind[0].compute.max);
}

TEST(CostParams, BadFieldsAreNamed) {
  const std::string head = R"({"format": "strata-cost-params", "version": 1, "device": "host-cpu", )";
  EXPECT_NE(
      message_of(R"({"version": 1, "device": "x"})").find("p.json: format: expected \"strata-cost-params\""),
      std::string::npos);
  EXPECT_NE(message_of(R"({"format": "strata-cost-params", "version": 2, "device": "x"})")
                .find("version: expected 1"),
            std::string::npos);
  EXPECT_NE(message_of(R"({"format": "strata-cost-params", "version": 1})").find("device: expected"),
            std::string::npos);
  EXPECT_NE(message_of(head + R"("kinds": {"tensor": {}}})").find("kinds.tensor: unknown operator kind"),
            std::string::npos);
  EXPECT_NE(message_of(head + R"("ops": {"convolution": {}}})").find("ops.convolution: unknown operator"),
            std::string::npos);
  EXPECT_NE(
      message_of(head + R"("ops": {"avgpool2d:windowed": {}}})")
          .find("ops.avgpool2d:windowed: unknown variant 'windowed' of avgpool2d (expected one of: global)"),
      std::string::npos);
  EXPECT_NE(message_of(head + R"("ops": {"matmul:global": {}}})")
                .find("ops.matmul:global: matmul has no kernel variants with curves of their own"),
            std::string::npos);
  EXPECT_NE(
      message_of(head + R"("ops": {"pool:global": {}}})").find("ops.pool:global: unknown operator 'pool'"),
      std::string::npos);
  EXPECT_NE(message_of(head + R"("ops": {"conv2d": {"compute": {"max": 0, "half_seconds": 0}}}})")
                .find("ops.conv2d.compute.max: expected a number in (0, 16], got 0"),
            std::string::npos);
  EXPECT_NE(message_of(head + R"("ops": {"conv2d": {"memory": {"max": 1, "half_seconds": -1}}}})")
                .find("ops.conv2d.memory.half_seconds: expected a number in [0, 1], got -1"),
            std::string::npos);
  EXPECT_NE(message_of(head + R"("ops": {"conv2d": {"memory": {"max": 1}}}})")
                .find("ops.conv2d.memory: missing field \"half_seconds\""),
            std::string::npos);
  EXPECT_NE(message_of(head + R"("ops": {"conv2d": {"memory": {"max": "1", "half_seconds": 0}}}})")
                .find("ops.conv2d.memory.max: expected a number"),
            std::string::npos);
  EXPECT_NE(message_of(head + R"("kinds": {}, "extra": 1})").find("extra: unknown field"), std::string::npos);
  EXPECT_NE(message_of(head + R"("kinds": {}, "kinds": {}})").find("key \"kinds\" appears twice"),
            std::string::npos);
  EXPECT_NE(message_of("{").find("p.json: not valid JSON"), std::string::npos);
}

TEST(CostParams, ParametersOfOneDeviceAreRefusedOnAnother) {
  const auto dir = testing::TempDir();
  CostParams p;
  p.device = "host-cpu";
  p.roofline = RooflineParams::defaults();
  p.roofline.by_op["matmul"] = {{0.5, 0}, {0.5, 0}};
  const std::string path = dir + "/cost_params_test.json";
  save_cost_params(path, p);
  EXPECT_EQ(roofline_params_for(path, "host-cpu").by_op.at("matmul").compute.max, 0.5);
  EXPECT_TRUE(roofline_params_for("", "h100-sxm").by_op.empty());  // no file: the priors
  try {
    (void)roofline_params_for(path, "h100-sxm");
    ADD_FAILURE() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("fitted on 'host-cpu' but the system's GPU is 'h100-sxm'"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW((void)load_cost_params(dir + "/no_such_file.json"), ConfigError);
}

}  // namespace
}  // namespace strata::models

namespace strata::models {
namespace {

TEST(CostParams, CacheLevelCarriesKernelsThatFitAtItsBandwidth) {
  hw::GpuSpec gpu = *hw::find_gpu("host-cpu");  // 10 GB/s memory
  gpu.caches = {{1 << 20, 100e9}};              // 1 MiB at 100 GB/s
  auto params = RooflineParams::defaults();
  params.by_kind[static_cast<std::size_t>(OpKind::kElementwise)] = {{1.0, 0}, {1.0, 0}};
  const CostModel cost(gpu, params);
  // relu of 2^18 floats: 1 MiB read + 1 MiB written = 2 MiB, more than the cache: all from memory.
  Graph g("relu");
  g.mark_output(g.add("relu", {g.add_input("x", TensorType{{512, 512}, DType::kF32})}));
  const double mib = 1 << 20;
  EXPECT_NEAR(cost.node_cost(g, g.node(0)).seconds, 2 * mib / 10e9, 1e-15);
  // 2^16 floats: 0.5 MiB in all, within the cache: at the cache's bandwidth.
  Graph small("relu");
  small.mark_output(small.add("relu", {small.add_input("x", TensorType{{256, 256}, DType::kF32})}));
  EXPECT_NEAR(cost.node_cost(small, small.node(0)).seconds, 0.5 * mib / 100e9, 1e-15);
  // Between half and twice the capacity the rate falls log-linearly in the bytes moved: at exactly the
  // capacity (2^17 floats, 1 MiB) it is the geometric mean, sqrt(100 * 10) GB/s; at 1.5 MiB (3·2^16 floats),
  // log2(1.5 / 0.5) / 2 of the way, 100^(1-t)·10^t GB/s with t = log2(3) / 2.
  Graph edge("relu");
  edge.mark_output(edge.add("relu", {edge.add_input("x", TensorType{{256, 512}, DType::kF32})}));
  EXPECT_NEAR(cost.node_cost(edge, edge.node(0)).seconds, mib / std::sqrt(100e9 * 10e9), 1e-15);
  Graph beyond("relu");
  beyond.mark_output(beyond.add("relu", {beyond.add_input("x", TensorType{{384, 512}, DType::kF32})}));
  const double t = std::log2(3.0) / 2;
  EXPECT_NEAR(cost.node_cost(beyond, beyond.node(0)).seconds,
              1.5 * mib / (std::pow(100e9, 1 - t) * std::pow(10e9, t)), 1e-15);
  EXPECT_NEAR(gpu.bandwidth_for(0.5 * mib), 100e9, 1);  // the ramp's ends
  EXPECT_NEAR(gpu.bandwidth_for(2 * mib), 10e9, 1);
  // Without a cache level (every catalogue GPU): memory bandwidth only.
  const CostModel plain(*hw::find_gpu("host-cpu"), params);
  EXPECT_NEAR(plain.node_cost(small, small.node(0)).seconds, 0.5 * mib / 10e9, 1e-15);

  // Two levels, 256 KiB at 200 GB/s in front of 1 MiB at 100 GB/s: each kernel at the smallest level
  // holding its bytes. relu of 2^14 floats moves 128 KiB (the L2), 2^16 floats 0.5 MiB (the larger level),
  // 2^18 floats 2 MiB (memory). The capacities are 4x apart, so the ramps (128-512 KiB and 512 KiB-2 MiB)
  // just meet; at 2x apart they narrow to meet halfway: sqrt(2)x either side.
  gpu.caches = {{256 << 10, 200e9}, {1 << 20, 100e9}};
  const CostModel two(gpu, params);
  Graph tiny("relu");
  tiny.mark_output(tiny.add("relu", {tiny.add_input("x", TensorType{{128, 128}, DType::kF32})}));
  EXPECT_NEAR(two.node_cost(tiny, tiny.node(0)).seconds, 0.125 * mib / 200e9, 1e-15);
  EXPECT_NEAR(two.node_cost(small, small.node(0)).seconds, 0.5 * mib / 100e9, 1e-15);
  EXPECT_NEAR(two.node_cost(g, g.node(0)).seconds, 2 * mib / 10e9, 1e-15);
  EXPECT_NEAR(gpu.bandwidth_for(256 << 10), std::sqrt(200e9 * 100e9), 1);
  gpu.caches = {{512 << 10, 200e9}, {1 << 20, 100e9}};
  EXPECT_NEAR(gpu.bandwidth_for(std::sqrt(0.5) * 0.5 * mib), 200e9, 1);
  EXPECT_NEAR(gpu.bandwidth_for(0.5 * mib), std::sqrt(200e9 * 100e9), 1);
  EXPECT_NEAR(gpu.bandwidth_for(std::sqrt(2.0) * 0.5 * mib), 100e9, 1);
  EXPECT_NEAR(gpu.bandwidth_for(mib), std::sqrt(100e9 * 10e9), 1);
}

}  // namespace
}  // namespace strata::models
