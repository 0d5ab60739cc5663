#include <algorithm>
#include <stdexcept>

#include <gtest/gtest.h>

#include "sim/simulator.h"
#include "test_systems.h"

namespace strata::sim {

TEST(Network, OneFlowRunsAtLinkSpeedPlusLatency) {
  const auto topo = test::uniform_switch(1, 2, 100, 10);
  TaskGraph g;
  g.add_transfer(0, 1, 1e9, 2e-6, g.intern("x"));
  const auto r = simulate(topo, g);
  EXPECT_NEAR(r.seconds(), 1e9 / 100e9 + 2e-6, 1e-11);  // 10 ms + 2 us
}

TEST(Network, TwoFlowsSharingALinkEachGetHalf) {
  // GPU 0 sends to GPUs 1 and 2 at once: both flows cross GPU 0's switch port (100 GB/s).
  const auto topo = test::uniform_switch(1, 3, 100, 10);
  TaskGraph g;
  const auto a = g.add_transfer(0, 1, 1e9, 0, g.intern("a"));
  const auto b = g.add_transfer(0, 2, 1e9, 0, g.intern("b"));
  const auto r = simulate(topo, g, SimOptions{nullptr, true});
  EXPECT_NEAR(time_to_seconds(r.timeline[a].done), 2e9 / 100e9, 1e-11);
  EXPECT_NEAR(time_to_seconds(r.timeline[b].done), 2e9 / 100e9, 1e-11);
}

TEST(Network, ShorterFlowFinishingFreesBandwidth) {
  // 0.5 GB and 1 GB share 100 GB/s: the short one ends at 10 ms (50 GB/s each), the long one then runs
  // alone: 0.5 GB left at 100 GB/s -> 15 ms.
  const auto topo = test::uniform_switch(1, 3, 100, 10);
  TaskGraph g;
  const auto a = g.add_transfer(0, 1, 0.5e9, 0, g.intern("a"));
  const auto b = g.add_transfer(0, 2, 1e9, 0, g.intern("b"));
  const auto r = simulate(topo, g, SimOptions{nullptr, true});
  EXPECT_NEAR(time_to_seconds(r.timeline[a].done), 0.010, 1e-11);
  EXPECT_NEAR(time_to_seconds(r.timeline[b].done), 0.015, 1e-11);
  // The makespan is the last task's end, not the long flow's first (superseded) completion at 20 ms.
  EXPECT_NEAR(r.seconds(), 0.015, 1e-11);
}

TEST(Network, SixteenGroupsCrossingOneNicGetASixteenthEach) {
  // P2's A100 system: 16 GPUs per node share one 8 GB/s NIC. 16 concurrent cross-node transfers (one per
  // GPU pair) each get 0.5 GB/s, so 1 GB each takes 2 s instead of 125 ms.
  const hw::Topology topo = hw::load_system(test::preset("gcp-a100x16.yaml"), hw::LoadOptions{2});
  TaskGraph g;
  for (int i = 0; i < 16; ++i) g.add_transfer(i, 16 + i, 1e9, 0, g.intern("x"));
  const auto r = simulate(topo, g);
  EXPECT_NEAR(r.seconds(), 16 * 1e9 / 8e9, 1e-9);
  // The NIC's uplink was busy the whole time.
  const auto usage = r.link_usage(topo);
  ASSERT_FALSE(usage.empty());
  EXPECT_NEAR(usage.front().utilization, 1.0, 1e-6);
}

TEST(Simulator, ComputeStreamsSerializeAndOverlapWithTransfers) {
  const auto topo = test::uniform_switch(1, 2, 100, 10);
  TaskGraph g;
  const auto label = g.intern("k");
  const auto c1 = g.add_compute_fixed(0, 0, 1e-3, label);
  const auto c2 = g.add_compute_fixed(0, 0, 1e-3, label);  // same stream: after c1
  const auto c3 = g.add_compute_fixed(0, 1, 1e-3, label);  // other stream: concurrent
  const std::array deps{Dep{c1}};
  const auto t = g.add_transfer(0, 1, 1e8, 0, label, deps);  // 1 ms after c1, overlaps c2
  const auto r = simulate(topo, g, SimOptions{nullptr, true});
  EXPECT_EQ(r.timeline[c2].start, r.timeline[c1].done);
  EXPECT_EQ(r.timeline[c3].start, 0);
  EXPECT_NEAR(time_to_seconds(r.timeline[t].done), 2e-3, 1e-11);
  EXPECT_NEAR(r.seconds(), 2e-3, 1e-11);
}

// Compute tasks without a fixed duration are timed by the ComputeCost in SimOptions (models::KernelCost in
// strata; here a plain roofline written out), on the topology's GPU.
TEST(Simulator, ComputeCostTimesComputeWork) {
  struct Roofline final : ComputeCost {
    double seconds(const ComputeWork& w, const hw::GpuSpec& gpu) const override {
      return gpu.launch_overhead +
             std::max(w.flops / gpu.peak_flops(w.dtype), w.mem_bytes / gpu.hbm_bandwidth);
    }
  } roofline;
  const auto topo = test::uniform_switch(1, 2, 100, 10);
  TaskGraph g;
  // 989.4 TFLOP of bf16 on an H100 = 1 s at peak, plus the 3 us launch overhead; memory-light.
  g.add_compute(0, 0, ComputeWork{989.4e12, 1e6, hw::DType::kBf16}, g.intern("gemm"));
  EXPECT_NEAR(simulate(topo, g, SimOptions{&roofline, false}).seconds(), 1.0 + 3e-6, 1e-9);
  EXPECT_THROW(simulate(topo, g), std::invalid_argument);  // nothing to time it with
}

}  // namespace strata::sim
