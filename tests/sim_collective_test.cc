#include <gtest/gtest.h>

#include <numeric>

#include "sim/collective_runner.h"
#include "sim/nccl_model.h"
#include "sim/trace.h"
#include "test_systems.h"

namespace strata::sim {
namespace {

std::vector<hw::Rank> all(const hw::Topology& t) {
  std::vector<hw::Rank> g(static_cast<std::size_t>(t.num_gpus()));
  std::iota(g.begin(), g.end(), 0);
  return g;
}

CollectiveResult run(const hw::Topology& t, CollectiveOp op, double bytes, const std::string& algo,
                     Protocol p = Protocol::kSimple, bool timeline = false) {
  CollectiveRequest req;
  req.spec.op = op;
  req.spec.group = all(t);
  req.spec.bytes = bytes;
  req.spec.protocol = p;
  req.algorithm = algo;
  req.auto_protocol = false;
  req.record_timeline = timeline;
  return run_collective(t, req);
}

constexpr double kUs = 1e-6;
// NCCL constants (tuning.cc): Ring/Simple base latency and NVLink per-hop latency.
constexpr double kRingBase = 8.4 * kUs, kRingNvlinkHop = 3.4 * kUs;

}  // namespace

TEST(Collectives, RingAllReduceMatchesClosedForm) {
  // n GPUs on a switch with B per port: 2(n-1) steps, each S/n at B plus the per-hop latency, after the base
  // launch latency: T = base + 2(n-1) (alpha + S/(n B)).
  for (int n : {2, 4, 8}) {
    const auto t = test::uniform_switch(1, n, 100, 10);
    const double S = 1 << 30, B = 100e9;
    const auto r = run(t, CollectiveOp::kAllReduce, S, "ring");
    const double expected = kRingBase + 2 * (n - 1) * (kRingNvlinkHop + S / n / B);
    EXPECT_NEAR(r.seconds, expected, expected * 1e-9) << n;
    // Hence busbw -> B for large S (nccl-tests' definition).
    EXPECT_NEAR(r.busbw, B, 0.01 * B);
  }
}

TEST(Collectives, RingReduceScatterAndAllGatherTakeHalfTheSteps) {
  const auto t = test::uniform_switch(1, 8, 100, 10);
  const double S = 1 << 30, B = 100e9;
  for (auto op : {CollectiveOp::kReduceScatter, CollectiveOp::kAllGather}) {
    const auto r = run(t, op, S, "ring");
    const double expected = kRingBase + 7 * (kRingNvlinkHop + S / 8 / B);
    EXPECT_NEAR(r.seconds, expected, expected * 1e-9);
  }
}

TEST(Collectives, ProtocolsChangeWireBytesAndLatency) {
  const auto t = test::uniform_switch(1, 4, 100, 10);
  const double S = 1 << 26;
  const auto ll = run(t, CollectiveOp::kAllReduce, S, "ring", Protocol::kLL);
  // LL: 6.6 us base, 0.6 us per NVLink hop, but twice the bytes on the wire.
  const double expected = 6.6 * kUs + 6 * (0.6 * kUs + 2 * S / 4 / 100e9);
  EXPECT_NEAR(ll.seconds, expected, expected * 1e-9);
}

TEST(Collectives, NvlsOnH100MatchesNcclsRule) {
  // NVLS: each port carries S(n+1)/n at 0.85 of 370.8 GB/s; with 8 GPUs algbw ~ 280 GB/s (NVIDIA quotes
  // algbw ~275, busbw ~480 for NVLS on 8 H100).
  const hw::Topology t = hw::load_system(test::preset("dgx-h100.yaml"));
  const auto r = run(t, CollectiveOp::kAllReduce, 8.0 * (1 << 30), "nvls");
  EXPECT_NEAR(r.algbw, 0.85 * 370.8e9 * 8 / 9, 0.01 * r.algbw);
  EXPECT_NEAR(r.busbw / 1e9, 480, 0.10 * 480);
}

TEST(Collectives, TreeBeatsRingForSmallMessagesOnManyNodes) {
  const hw::Topology t = hw::load_system(test::preset("dgx-h100.yaml"), hw::LoadOptions{16});
  const auto ring = run(t, CollectiveOp::kAllReduce, 1024, "ring", Protocol::kLL);
  const auto tree = run(t, CollectiveOp::kAllReduce, 1024, "tree", Protocol::kLL);
  EXPECT_LT(tree.seconds * 3, ring.seconds);
  // ...and the NCCL-like automatic choice picks the tree there.
  CollectiveRequest req;
  req.spec.group = all(t);
  req.spec.bytes = 1024;
  EXPECT_EQ(run_collective(t, req).algorithm, "tree");
}

TEST(Collectives, EveryAlgorithmRunsEveryOpItSupports) {
  const hw::Topology t = hw::load_system(test::preset("dgx-h100.yaml"), hw::LoadOptions{2});
  for (const auto* algo : AlgorithmRegistry::instance().all())
    for (auto op : {CollectiveOp::kAllReduce, CollectiveOp::kReduceScatter, CollectiveOp::kAllGather, CollectiveOp::kReduce,
                    CollectiveOp::kBroadcast, CollectiveOp::kAllToAll}) {
      CollectiveSpec spec;
      spec.op = op;
      spec.group = all(t);
      spec.bytes = 1 << 24;
      if (!algo->unsupported_reason(spec, t).empty()) continue;
      const auto r = run(t, op, 1 << 24, std::string(algo->name()));
      EXPECT_GT(r.seconds, 0) << algo->name() << " " << op_name(op);
      // No schedule beats the bandwidth bound of the slowest per-GPU path it must use (NIC: 47 GB/s x 8).
      if (op == CollectiveOp::kAllReduce) {
        EXPECT_LT(r.busbw, 8 * 47e9 * 1.01) << algo->name();
      }
    }
}

TEST(Collectives, HierarchicalReducesInterNodeTraffic) {
  // P2's A100 system, 2 nodes, one 8 GB/s NIC: the flat ring pushes 2(n-1)/n S through the NIC; the
  // hierarchical schedule pushes only 2(N-1)/N * S/L per GPU, 16x less in total (L = 16).
  const hw::Topology t = hw::load_system(test::preset("gcp-a100x16.yaml"), hw::LoadOptions{2});
  const double S = 1 << 30;
  const auto ring = run(t, CollectiveOp::kAllReduce, S, "ring");
  const auto hier = run(t, CollectiveOp::kAllReduce, S, "hierarchical");
  EXPECT_LT(hier.seconds, ring.seconds);
  // Ring bound: one ring through the 8 GB/s NIC: 2 (31/32) S / 8 GB/s.
  EXPECT_GT(ring.seconds, 2.0 * 31 / 32 * S / 8e9);
}

TEST(Collectives, DeterministicTimelines) {
  const hw::Topology t = hw::load_system(test::preset("dgx1-v100.yaml"), hw::LoadOptions{2});
  const auto a = run(t, CollectiveOp::kAllReduce, 1 << 26, "ring", Protocol::kSimple, true);
  const auto b = run(t, CollectiveOp::kAllReduce, 1 << 26, "ring", Protocol::kSimple, true);
  EXPECT_EQ(a.sim.makespan, b.sim.makespan);
  EXPECT_EQ(a.sim.events, b.sim.events);
  ASSERT_EQ(a.sim.timeline.size(), b.sim.timeline.size());
  for (std::size_t i = 0; i < a.sim.timeline.size(); ++i) EXPECT_EQ(a.sim.timeline[i].done, b.sim.timeline[i].done);
  EXPECT_EQ(chrome_trace_json(t, a.graph, a.sim), chrome_trace_json(t, b.graph, b.sim));
}

TEST(Collectives, BadRequestsAreRejectedWithReasons) {
  const hw::Topology t = hw::load_system(test::preset("dgx-h100.yaml"), hw::LoadOptions{2});
  TaskGraph g;
  CollectiveSpec spec;
  spec.group = all(t);
  spec.bytes = 1024;
  EXPECT_THROW(add_collective(t, g, spec, "butterfly"), std::invalid_argument);
  spec.op = CollectiveOp::kAllToAll;
  try {
    add_collective(t, g, spec, "tree");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("tree implements allreduce, broadcast and reduce only"), std::string::npos);
  }
  spec.op = CollectiveOp::kAllReduce;
  EXPECT_THROW(add_collective(t, g, spec, "nvls"), std::invalid_argument);  // multi-node
  spec.group = {0, 0};
  EXPECT_THROW(add_collective(t, g, spec, "ring"), std::invalid_argument);
}

TEST(Collectives, BusBandwidthFactorsFollowNcclTests) {
  EXPECT_DOUBLE_EQ(busbw_factor(CollectiveOp::kAllReduce, 8), 14.0 / 8);
  EXPECT_DOUBLE_EQ(busbw_factor(CollectiveOp::kAllGather, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(busbw_factor(CollectiveOp::kBroadcast, 8), 1.0);
}

}  // namespace strata::sim
