// Measured NCCL kernels (node.fabric.nccl_ring, nccl_nvls) and network handoffs (node.nics.nccl_ring,
// nccl_tree): the ring's slice counts follow NCCL's loop, chunk and slice rules (checked by hand below), the
// tables interpolate as documented, and the ring, NVLS, the tree and NVLS-Tree charge what the tables say,
// with every expected time derived by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <stdexcept>

#include <fmt/format.h>

#include "hw/system_loader.h"
#include "sim/collective_runner.h"
#include "sim/nccl_model.h"
#include "test_systems.h"

namespace strata::sim {
namespace {

constexpr double KiB = 1024.0, MiB = 1024.0 * 1024;

// 8 GPUs on one switch whose ports carry exactly `port_gbps` GB/s per direction, 0.2 us per hop
// (test_systems.h; nvswitch3 reduces in the switch: NVLS); `measured` the fabric's measured NCCL entry, e.g.
// "nccl_ring: {...}" (empty: none).
hw::Topology switch8(const std::string& measured, int nodes = 1, const char* switch_kind = "nvswitch2",
                     double port_gbps = 240) {
  return test::uniform_switch(nodes, 8, port_gbps, 25, -1, switch_kind, measured);
}

std::vector<hw::Rank> all(const hw::Topology& t) {
  std::vector<hw::Rank> g(static_cast<std::size_t>(t.num_gpus()));
  std::iota(g.begin(), g.end(), 0);
  return g;
}

CollectiveResult run(const hw::Topology& t, double bytes, Granularity g = Granularity::kFlow,
                     Protocol p = Protocol::kSimple, CollectiveOp op = CollectiveOp::kAllReduce) {
  CollectiveRequest req;
  req.spec.op = op;
  req.spec.group = all(t);
  req.spec.bytes = bytes;
  req.spec.protocol = p;
  req.spec.granularity = g;
  req.algorithm = "ring";
  return run_collective(t, req);
}

// Seconds of a 64 MiB all-reduce over `group` with `algorithm`.
double all_reduce_64mib(const hw::Topology& t, const char* algorithm, std::vector<hw::Rank> group,
                        Granularity g = Granularity::kFlow, Protocol p = Protocol::kSimple) {
  CollectiveRequest req;
  req.spec.op = CollectiveOp::kAllReduce;
  req.spec.group = std::move(group);
  req.spec.bytes = 64 * MiB;
  req.spec.protocol = p;
  req.spec.granularity = g;
  req.algorithm = algorithm;
  return run_collective(t, req).seconds;
}

}  // namespace

// NCCL v2.21.5-1: a loop covers ranks x 2 MiB per channel; full loops have 1 MiB slices, two per primitive;
// all-reduce runs 2N - 1 primitives per loop, reduce-scatter and all-gather N; the last loop's chunk is the
// rest / N rounded up to 4 KiB, its first slice half of it but at least 32 KiB.
TEST(NcclRing, SliceHandoffsFollowNcclsLoopsChunksAndSlices) {
  using nccl::ring_simple_slices;
  // 64 MiB over 24 channels, 8 ranks: 2,796,202.67 B per channel, under one 16 MiB loop; chunk
  // ceil(349,525.3 / 4096) x 4096 = 352,256 B, two slices of 176,128 B, 15 primitives each.
  auto s = ring_simple_slices(CollectiveOp::kAllReduce, 64 * MiB / 24, 8);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_DOUBLE_EQ(s[0].bytes, 176128);
  EXPECT_DOUBLE_EQ(s[0].handoffs, 15);
  EXPECT_DOUBLE_EQ(s[1].bytes, 176128);
  EXPECT_DOUBLE_EQ(s[1].handoffs, 15);
  // 40 MiB on one channel: two full loops of 16 MiB (2 x 2 x 15 = 60 handoffs of 1 MiB), then 8 MiB: chunk
  // 1 MiB, slices of 512 KiB.
  s = ring_simple_slices(CollectiveOp::kAllReduce, 40 * MiB, 8);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_DOUBLE_EQ(s[0].bytes, MiB);
  EXPECT_DOUBLE_EQ(s[0].handoffs, 60);
  EXPECT_DOUBLE_EQ(s[1].bytes, 512 * KiB);
  EXPECT_DOUBLE_EQ(s[2].bytes, 512 * KiB);
  EXPECT_DOUBLE_EQ(s[2].handoffs, 15);
  // 1 MiB over 24 channels: 43,690.67 B per channel, chunk 5,461.3 -> 8 KiB, which fills the first slice
  // (the 32 KiB floor is above it) and leaves the second empty.
  s = ring_simple_slices(CollectiveOp::kAllReduce, MiB / 24, 8);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_DOUBLE_EQ(s[0].bytes, 8 * KiB);
  EXPECT_DOUBLE_EQ(s[1].bytes, 0);
  // A 48 KiB chunk: first slice 32 KiB (the floor), second 16 KiB.
  s = ring_simple_slices(CollectiveOp::kAllGather, 8 * 48 * KiB, 8);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_DOUBLE_EQ(s[0].bytes, 32 * KiB);
  EXPECT_DOUBLE_EQ(s[1].bytes, 16 * KiB);
  EXPECT_DOUBLE_EQ(s[0].handoffs, 8);                                     // N primitives
  s = ring_simple_slices(CollectiveOp::kReduceScatter, 4 * 16 * MiB, 4);  // 4 full loops of 4 x 2 MiB
  ASSERT_EQ(s.size(), 1u);
  EXPECT_DOUBLE_EQ(s[0].handoffs, 2 * 4 * 8);
  EXPECT_TRUE(ring_simple_slices(CollectiveOp::kAllReduce, MiB, 1).empty());
}

TEST(NcclRing, MeasuredHandoffTimesInterpolateAsDocumented) {
  const hw::SizeTimes t({{32 * KiB, 20e-6}, {MiB, 500e-6}, {2 * MiB, 900e-6}});
  EXPECT_DOUBLE_EQ(t.seconds(16 * KiB), 20e-6);  // below the first point: its time, all fixed
  EXPECT_DOUBLE_EQ(t.linear_at(16 * KiB).per_byte, 0);
  EXPECT_NEAR(t.seconds(528 * KiB), 20e-6 + 480e-6 * (496.0 / 992.0), 1e-12);
  const auto mid = t.linear_at(528 * KiB);
  EXPECT_NEAR(mid.per_byte, 480e-6 / (992 * KiB), 1e-18);
  EXPECT_NEAR(t.seconds(4 * MiB), 900e-6 + 400e-6 * 2, 1e-12);  // the last segment extended
  // A segment that does not rise is all fixed; beyond the last point the time grows with the bytes.
  const hw::SizeTimes flat({{32 * KiB, 20e-6}, {64 * KiB, 10e-6}});
  EXPECT_NEAR(flat.seconds(48 * KiB), 15e-6, 1e-12);
  EXPECT_DOUBLE_EQ(flat.linear_at(48 * KiB).per_byte, 0);
  EXPECT_NEAR(flat.seconds(128 * KiB), 20e-6, 1e-12);
  const hw::SizeTimes one({{MiB, 100e-6}});
  EXPECT_DOUBLE_EQ(one.seconds(2 * MiB), 200e-6);
  EXPECT_THROW(hw::SizeTimes({{MiB, 1e-6}, {MiB, 2e-6}}), std::invalid_argument);
  EXPECT_THROW(hw::SizeTimes({{MiB, 0}}), std::invalid_argument);
}

// 64 MiB all-reduce on 8 GPUs, NCCL's 24 channels: each makes 30 handoffs of 176,128 B (above). Table
// {32 KiB: 20 us, 1 MiB: 500 us}: per byte 480 us / 992 KiB = 4.7253e-10 s, fixed 20 us - 32 KiB x that =
// 4.5161 us per handoff. One channel copies 30 x 176,128 B x 4.7253e-10 s = 2,496.8 us, so 24 channels move
// 7/4 x 64 MiB over the ports at 47.0 GB/s, below the ports' 240: T = 8.4 us (NCCL's base latency) +
// 30 x 4.5161 + 2,496.8 = 2,640.7 us. Table {32 KiB: 6 us, 1 MiB: 60 us}: copies would go at 451 GB/s, so
// the ports bind: 7/4 x 64 MiB / 240 GB/s = 489.3 us, plus 8.4 and 30 x 4.2581 us fixed = 625.5 us. Without a
// table: the ports' 489.3 us, base latency and 14 hops of NCCL's 3.4 us for Simple on NVLink plus the
// fabric's 2 x 0.2 us.
TEST(NcclRing, MeasuredHandoffsSetTheRingsTimeOnANode) {
  const auto slow = switch8(
      "nccl_ring: {channels: 24, handoffs: [{slice: 32KiB, time: 20us}, {slice: 1MiB, time: 500us}]}");
  EXPECT_NEAR(run(slow, 64 * MiB).seconds, 2640.7e-6, 0.1e-6);
  EXPECT_NEAR(run(slow, 64 * MiB, Granularity::kStep).seconds, 2640.7e-6, 0.1e-6);
  const auto fast =
      switch8("nccl_ring: {channels: 24, handoffs: [{slice: 32KiB, time: 6us}, {slice: 1MiB, time: 60us}]}");
  EXPECT_NEAR(run(fast, 64 * MiB).seconds, 625.5e-6, 0.1e-6);
  const double plain = run(switch8(""), 64 * MiB).seconds;
  EXPECT_GT(plain, 489.3e-6 + 8.4e-6 + 14 * 3.4e-6);
  EXPECT_LT(plain, 489.3e-6 + 8.4e-6 + 14 * 3.8e-6);
  // Reduce-scatter: 8 primitives of two slices per channel. 64 MiB over 24 channels: chunk 352,256 B as
  // above, so 16 handoffs: 8.4 + 16 x 4.5161 + 16 x 176,128 x 4.7253e-10 s = 1,412.3 us.
  EXPECT_NEAR(
      run(slow, 64 * MiB, Granularity::kFlow, Protocol::kSimple, CollectiveOp::kReduceScatter).seconds,
      1412.3e-6, 0.1e-6);
}

// The node's table measures Simple over a whole node: LL, LL128, a part of the node and (without the
// network's table, node.nics.nccl_ring) rings across nodes keep NCCL's latencies and the links' rates.
TEST(NcclRing, MeasuredHandoffsApplyToSimpleRingsInsideANodeOnly) {
  const std::string table =
      "nccl_ring: {channels: 24, handoffs: [{slice: 32KiB, time: 20us}, {slice: 1MiB, time: 500us}]}";
  EXPECT_DOUBLE_EQ(run(switch8(table), 64 * MiB, Granularity::kFlow, Protocol::kLL128).seconds,
                   run(switch8(""), 64 * MiB, Granularity::kFlow, Protocol::kLL128).seconds);
  EXPECT_DOUBLE_EQ(run(switch8(table, 2), 256 * MiB).seconds, run(switch8("", 2), 256 * MiB).seconds);
  const auto half = [](const hw::Topology& t) { return all_reduce_64mib(t, "ring", {0, 1, 2, 3}); };
  EXPECT_DOUBLE_EQ(half(switch8(table)), half(switch8("")));
}

// Two nodes of 8 GPUs (16 ranks), 64 MiB all-reduce, the network's table {32 KiB: 30 us, 1 MiB: 500 us} with
// NCCL's 16 channels: 4 MiB per channel, under one 32 MiB loop, so chunk 4 MiB / 16 = 256 KiB, two slices of
// 128 KiB, 31 primitives each: 62 handoffs. Per byte 470 us / 992 KiB = 4.6268e-10 s, fixed 30 us - 32 KiB x
// that = 14.839 us: 62 x 14.839 = 920.0 us fixed, 62 x 128 KiB x 4.6268e-10 s = 3,760.0 us copy. Each of
// strata's rings then moves its bytes at a few GB/s, far below the 25 GB/s NICs and 240 GB/s ports, so
// T = 8.4 us (NCCL's base latency) + 920.0 + 3,760.0 = 4,688.4 us. With 8 channels: slices of 256 KiB, copy
// 7,520.0 us, T = 8,448.4 us. A node table {32 KiB: 40 us, 1 MiB: 1000 us} beside it is slower per 128 KiB
// slice (9.032 + 123.87 us against 14.839 + 60.645), so it sets the pace: 62 x 9.032 = 560.0 us fixed,
// 62 x 123.87 = 7,680.0 us copy, T = 8,248.4 us.
TEST(NcclRing, MeasuredNetworkHandoffsSetTheRingsTimeAcrossWholeNodes) {
  const std::string net16 =
      "nccl_ring: {channels: 16, handoffs: [{slice: 32KiB, time: 30us}, {slice: 1MiB, time: 500us}]}";
  const std::string net8 =
      "nccl_ring: {channels: 8, handoffs: [{slice: 32KiB, time: 30us}, {slice: 1MiB, time: 500us}]}";
  const std::string node =
      "nccl_ring: {channels: 24, handoffs: [{slice: 32KiB, time: 40us}, {slice: 1MiB, time: 1000us}]}";
  const auto two_nodes = [](const std::string& fabric, const std::string& nics) {
    return test::uniform_switch(2, 8, 240, 25, -1, "nvswitch2", fabric, nics);
  };
  EXPECT_NEAR(run(two_nodes("", net16), 64 * MiB).seconds, 4688.4e-6, 0.1e-6);
  EXPECT_NEAR(run(two_nodes("", net16), 64 * MiB, Granularity::kStep).seconds, 4688.4e-6, 0.1e-6);
  EXPECT_NEAR(run(two_nodes("", net8), 64 * MiB).seconds, 8448.4e-6, 0.1e-6);
  EXPECT_NEAR(run(two_nodes(node, net16), 64 * MiB).seconds, 8248.4e-6, 0.1e-6);
  // Inside one node the network's table does not apply; nor to LL128, nor to part of each node.
  EXPECT_DOUBLE_EQ(run(test::uniform_switch(1, 8, 240, 25, -1, "nvswitch2", "", net16), 64 * MiB).seconds,
                   run(switch8(""), 64 * MiB).seconds);
  EXPECT_DOUBLE_EQ(run(two_nodes("", net16), 64 * MiB, Granularity::kFlow, Protocol::kLL128).seconds,
                   run(two_nodes("", ""), 64 * MiB, Granularity::kFlow, Protocol::kLL128).seconds);
  const auto half_of_each = [](const hw::Topology& t) {
    return all_reduce_64mib(t, "ring", {0, 1, 2, 3, 8, 9, 10, 11});
  };
  EXPECT_DOUBLE_EQ(half_of_each(two_nodes("", net16)), half_of_each(two_nodes("", "")));
}

// NVLS on 8 GPUs whose switch ports carry exactly 340 GB/s. 64 MiB: NCCL's chunk is 64 KiB (below 64 x 16
// channels x 8 heads x 128 KiB = 1 GiB, not below 8 x 128 x 64 KiB = 64 MiB), each channel runs (64 MiB / 16)
// / (8 x 64 KiB) = 8 steps, 10 stage times with fill and drain. The ports carry (64 MiB + 2 x 16 x 512 KiB) x
// 9/8 / 0.85 = 111,030,988 B: 326.56 us at 340 GB/s; NVLS has no base latency and NCCL's 25 us hop. Table
// {16 KiB: 20 us, 128 KiB: 40 us}: per byte 20 us / 112 KiB, fixed at 64 KiB 20 - 16,384 x that = 17.143 us,
// so 10 x 17.143 = 171.43 us of latency, and one channel alone would copy its chunks in 10 x 64 KiB
// x 1.7439e-10 s = 114.3 us, less than the ports need: 171.43 + 326.56 = 497.99 us. Table {16 KiB: 100 us,
// 128 KiB: 800 us} is all per-byte (100 - 16,384 x 700 us / 114,688 B = 0 fixed): 10 x 64 KiB x 6.1035e-9 s =
// 4,000 us.
// NCCL v2.21.5-1's LL128 ring: a loop covers ranks x 576,000 B per channel (one step's payload per chunk),
// every primitive one step; the last loop's chunk is the rest / N rounded up to 9,600 B.
TEST(NcclRing, Ll128StepsFollowNcclsLoopsAndChunks) {
  using nccl::ring_ll128_steps;
  // 64 MiB over 24 channels, 8 ranks: 2,796,202.67 B per channel, under one 4,608,000 B loop; chunk
  // ceil(ceil(349,525.3) / 9,600) x 9,600 = 37 x 9,600 = 355,200 B, 15 primitives of one step.
  auto s = ring_ll128_steps(CollectiveOp::kAllReduce, 64 * MiB / 24, 8);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_DOUBLE_EQ(s[0].bytes, 355200);
  EXPECT_DOUBLE_EQ(s[0].handoffs, 15);
  // 40 MiB on one channel: 9 full loops (9 x 15 = 135 steps of 576,000 B), then 471,040 B: chunk
  // ceil(58,880 / 9,600) x 9,600 = 67,200 B.
  s = ring_ll128_steps(CollectiveOp::kAllReduce, 40 * MiB, 8);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_DOUBLE_EQ(s[0].bytes, 576000);
  EXPECT_DOUBLE_EQ(s[0].handoffs, 135);
  EXPECT_DOUBLE_EQ(s[1].bytes, 67200);
  EXPECT_DOUBLE_EQ(s[1].handoffs, 15);
  // Reduce-scatter and all-gather: N primitives per loop; 4 full loops of 4 x 576,000 B on 4 ranks.
  s = ring_ll128_steps(CollectiveOp::kReduceScatter, 4 * 4 * 576000.0, 4);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_DOUBLE_EQ(s[0].handoffs, 16);
  EXPECT_DOUBLE_EQ(ring_ll128_steps(CollectiveOp::kAllGather, 8 * 9600.0, 8)[0].handoffs, 8);
  EXPECT_TRUE(ring_ll128_steps(CollectiveOp::kAllReduce, MiB, 1).empty());
}

// 64 MiB LL128 all-reduce on 8 GPUs, NCCL's 24 channels (LL128 keeps all 24 from 24 x 640 x 8 B = 120 KiB):
// each makes 15 steps of 355,200 B (above). Table {144,000 B: 40 us, 576,000 B: 100 us}: per byte 60 us /
// 432,000 B = 1.38889e-10 s, fixed 40 us - 144,000 x that = 20 us per step: 300 us fixed, 15 x 355,200 x
// 1.38889e-10 s = 740 us copy. The ports would carry 7/4 x 64 MiB x 128/120 in 521.9 us at 240 GB/s, so the
// copy binds: T = 14 us (NCCL's LL128 ring base latency) + 300 + 740 = 1,054 us. Table {144,000 B: 10 us,
// 576,000 B: 25 us}: 5 us fixed and 12.333 us copy per step, 75 us and 185 us in all: the ports bind,
// T = 14 + 75 + 521.9 = 610.9 us.
TEST(NcclRing, MeasuredLl128StepsSetTheRingsTimeOnANode) {
  const auto ll128 = [](const std::string& table) {
    return switch8(table.empty() ? "" : "nccl_ring_ll128: " + table);
  };
  const auto slow =
      ll128("{channels: 24, handoffs: [{step: 144000, time: 40us}, {step: 576000, time: 100us}]}");
  EXPECT_NEAR(run(slow, 64 * MiB, Granularity::kFlow, Protocol::kLL128).seconds, 1054e-6, 0.1e-6);
  EXPECT_NEAR(run(slow, 64 * MiB, Granularity::kStep, Protocol::kLL128).seconds, 1054e-6, 0.1e-6);
  const auto fast =
      ll128("{channels: 24, handoffs: [{step: 144000, time: 10us}, {step: 576000, time: 25us}]}");
  EXPECT_NEAR(run(fast, 64 * MiB, Granularity::kFlow, Protocol::kLL128).seconds, 610.9e-6, 0.1e-6);
  // The LL128 table leaves Simple (and the Simple table LL128, above) as they were, and a part of the node.
  EXPECT_DOUBLE_EQ(run(slow, 64 * MiB).seconds, run(switch8(""), 64 * MiB).seconds);
  const auto half = [](const hw::Topology& t) {
    return all_reduce_64mib(t, "ring", {0, 1, 2, 3}, Granularity::kFlow, Protocol::kLL128);
  };
  EXPECT_DOUBLE_EQ(half(slow), half(switch8("")));
}

// Two nodes of 8 GPUs (16 ranks), 64 MiB LL128 all-reduce, the network's LL128 table {144,000 B: 30 us,
// 576,000 B: 100 us} with NCCL's 16 channels: 4 MiB per channel, under one 9,216,000 B loop, so the chunk is
// ceil(262,144 / 9,600) x 9,600 = 268,800 B, 31 primitives. Per byte 70 us / 432,000 B = 1.62037e-10 s, fixed
// 30 - 23.333 = 6.667 us: 206.67 us fixed, 31 x 268,800 x 1.62037e-10 s = 1,350.22 us copy, far slower than
// the NICs and ports: T = 14 + 206.67 + 1,350.22 = 1,570.9 us. Inside one node the network's table does not
// apply.
TEST(NcclRing, MeasuredNetworkLl128StepsSetTheRingsTimeAcrossWholeNodes) {
  const std::string net =
      "nccl_ring_ll128: {channels: 16, handoffs: [{step: 144000, time: 30us}, {step: 576000, time: 100us}]}";
  const auto two = test::uniform_switch(2, 8, 240, 25, -1, "nvswitch2", "", net);
  EXPECT_NEAR(run(two, 64 * MiB, Granularity::kFlow, Protocol::kLL128).seconds, 1570.9e-6, 0.1e-6);
  const auto one = test::uniform_switch(1, 8, 240, 25, -1, "nvswitch2", "", net);
  EXPECT_DOUBLE_EQ(run(one, 64 * MiB, Granularity::kFlow, Protocol::kLL128).seconds,
                   run(switch8(""), 64 * MiB, Granularity::kFlow, Protocol::kLL128).seconds);
}

TEST(NcclNvls, MeasuredStepsSetNvlsTimeOnANode) {
  const auto nvls8 = [](const std::string& steps) {
    return switch8(steps.empty() ? "" : "nccl_nvls: " + steps, 1, "nvswitch3", 340);
  };
  const auto nvls = [](const hw::Topology& t) { return all_reduce_64mib(t, "nvls", all(t)); };
  EXPECT_NEAR(nvls(nvls8("")), 351.56e-6, 0.05e-6);
  EXPECT_NEAR(nvls(nvls8("{steps: [{chunk: 16KiB, time: 20us}, {chunk: 128KiB, time: 40us}]}")), 497.99e-6,
              0.05e-6);
  EXPECT_NEAR(nvls(nvls8("{steps: [{chunk: 16KiB, time: 100us}, {chunk: 128KiB, time: 800us}]}")), 4000e-6,
              0.05e-6);
}

// Two nodes of 8 GPUs (16 ranks), 64 MiB tree all-reduce, the network's tree table {64 KiB: 30 us, 512 KiB:
// 150 us} (per byte 120 us / 448 KiB, so a 512 KiB chunk is 12.857 us fixed + 137.143 us copy) with NCCL's 16
// channels: 4 MiB per channel, 8 chunks of NCCL's 512 KiB. strata's trees (8 channels x a mirrored pair, 4
// MiB each) have 8 GPUs in a chain per node, and the chain of the child node hangs off the root node's first
// GPU: depth 8, 16 stages up and down, so each tree is charged 8 + 15 = 23 handoffs: 295.71 us fixed and
// 3,154.29 us copy, 3,450 us in all. Its 11.5 MiB (23 chunks) then go at 3.8 GB/s, under the 25 GB/s NICs (2
// trees per NIC direction) and the 240 GB/s ports (2 hops of each of 16 trees per port direction: 122 GB/s):
// T = 8.4 us (NCCL's tree base latency) + 3,450 = 3,458.4 us. With 8 channels: 8 MiB per channel, 16 + 15 =
// 31 handoffs, T = 8.4 + 4,650 = 4,658.4 us.
TEST(NcclTree, MeasuredNetworkChunksSetTheTreesTimeAcrossWholeNodes) {
  const auto table = [](int channels) {
    return fmt::format(
        "nccl_tree: {{channels: {}, handoffs: [{{chunk: 64KiB, time: 30us}}, {{chunk: 512KiB, time: "
        "150us}}]}}",
        channels);
  };
  const auto two_nodes = [](const std::string& nics) {
    return test::uniform_switch(2, 8, 240, 25, -1, "nvswitch2", "", nics);
  };
  const auto tree = [](const hw::Topology& t, std::vector<hw::Rank> group, Granularity g = Granularity::kFlow,
                       Protocol p = Protocol::kSimple) {
    return all_reduce_64mib(t, "tree", std::move(group), g, p);
  };
  const auto t16 = two_nodes(table(16)), t8 = two_nodes(table(8)), plain = two_nodes("");
  EXPECT_NEAR(tree(t16, all(t16)), 3458.4e-6, 0.05e-6);
  EXPECT_NEAR(tree(t8, all(t8)), 4658.4e-6, 0.05e-6);
  // Step by step, each chunk's transfer on a hop carries 1/23 of the fixed time and its bytes at the cap; a
  // hop's next chunk starts once the bytes have left, so the fixed times overlap a little: at most the
  // flow form's time, and no less than its copy time plus one chunk's trip through the 16 stages.
  const double step = tree(t16, all(t16), Granularity::kStep);
  EXPECT_LE(step, 3458.4e-6 + 0.05e-6);
  EXPECT_GE(step, 8.4e-6 + 3154.29e-6 + 16 * 12.857e-6 - 0.05e-6);
  // One node, LL128 and a part of each node keep the model without the table.
  const auto one = test::uniform_switch(1, 8, 240, 25, -1, "nvswitch2", "", table(16));
  EXPECT_DOUBLE_EQ(tree(one, all(one)), tree(switch8(""), all(one)));
  EXPECT_DOUBLE_EQ(tree(t16, all(t16), Granularity::kFlow, Protocol::kLL128),
                   tree(plain, all(plain), Granularity::kFlow, Protocol::kLL128));
  const std::vector<hw::Rank> half_of_each{0, 1, 2, 3, 8, 9, 10, 11};
  EXPECT_DOUBLE_EQ(tree(t16, half_of_each), tree(plain, half_of_each));
  EXPECT_GT(tree(t16, all(t16)), 2 * tree(plain, all(plain)));
}

// One node of 8 GPUs (240 GB/s ports), 64 MiB, Simple tree with the node's table {64 KiB: 30 us, 512 KiB:
// 150 us} (per byte 120 us / 448 KiB, fixed 30 - 17.143 = 12.857 us) and NCCL's 24 channels (kept from
// 24 x 512 x 64 B): 2,796,202.7 B per channel, 5 chunks of 512 KiB and 174,762.7 B. A chain through 8 GPUs
// has 7 stages up and 7 down; each tree is charged its 5 chunks and 13 more for the fill at 12.857 + 137.143
// us, and the rest at 12.857 + 45.714 us: 244.29 us fixed, 2,514.29 us copy, far below what the ports allow,
// so T = 8.4 us (NCCL's tree Simple base latency) + 244.29 + 2,514.29 = 2,766.97 us. LL128 and part of the
// node keep the model without the table; across nodes the network's table applies, not this one.
TEST(NcclTree, MeasuredChainChunksSetTheTreesTimeOnANode) {
  const std::string table =
      "nccl_tree: {channels: 24, handoffs: [{chunk: 64KiB, time: 30us}, {chunk: 512KiB, time: 150us}]}";
  const auto tree = [](const hw::Topology& t, std::vector<hw::Rank> group, Protocol p = Protocol::kSimple) {
    return all_reduce_64mib(t, "tree", std::move(group), Granularity::kFlow, p);
  };
  // The table's segment: per byte 120 us over 448 KiB, fixed part what is left of 30 us at 64 KiB.
  const double per_byte = 120e-6 / (448 * KiB), fixed = 30e-6 - per_byte * 64 * KiB;
  const double share = 64 * MiB / 24, chunk = 512 * KiB, full = std::floor(share / chunk);
  const double rest = share - full * chunk;
  const int stages = 2 * 7;  // a chain through 8 GPUs, up and back down
  const double expected =
      8.4e-6 + (full + stages - 1) * (fixed + per_byte * chunk) + (fixed + per_byte * rest);
  EXPECT_EQ(full, 5);
  EXPECT_NEAR(expected, 2766.97e-6, 0.01e-6);  // the sum in the comment above
  const auto measured = switch8(table), plain = switch8("");
  EXPECT_NEAR(tree(measured, all(measured)), expected, 0.05e-6);
  EXPECT_GT(tree(measured, all(measured)), 2 * tree(plain, all(plain)));
  EXPECT_DOUBLE_EQ(tree(measured, all(measured), Protocol::kLL128),
                   tree(plain, all(plain), Protocol::kLL128));
  const std::vector<hw::Rank> half{0, 1, 2, 3};
  EXPECT_DOUBLE_EQ(tree(measured, half), tree(plain, half));
  const auto two = switch8(table, 2), two_plain = switch8("", 2);
  EXPECT_DOUBLE_EQ(tree(two, all(two)), tree(two_plain, all(two_plain)));
}

// The same two nodes, 64 MiB, LL128 tree with the network's LL128 table {96,000 B: 60 us, 576,000 B: 150 us}
// (per byte 90 us / 480,000 B = 1.875e-10 s, fixed 60 - 18 = 42 us) and NCCL's 16 channels (LL128 keeps them
// from 16 x 640 x 8 B): 4 MiB per channel. NCCL's LL128 tree chunk starts at 576,000 B and halves while a
// channel carries fewer than nsteps x 64 / ppn = 2.8 x 8 = 22.4 of them (nsteps = 1 + log2 2 + 0.1 x 8): 7,
// 14, then 29 chunks of 144,000 B, which stays. Each tree is charged 29 chunks and 15 more for the fill of
// its 16 stages at 42 + 27 = 69 us, 1,848 us fixed and 1,188 us copy, and the last 18,304 B (under the
// table's first point, all fixed) 60 us: 1,908 us fixed, 1,188 us copy. strata's 16 trees of 4 MiB (30 chunks
// of 139,810 B) then move 45 chunks' bytes x 128/120 in 1,188 us, 5.65 GB/s: 11.3 GB/s per NIC direction
// (under 25) and 181 GB/s per port direction (under 240), so T = 14 us (NCCL's LL128 tree base latency) +
// 1,908 + 1,188 = 3,110 us. Simple keeps the model without an LL128 table, and the other way round.
TEST(NcclTree, MeasuredNetworkLl128ChunksSetTheLl128TreesTimeAcrossWholeNodes) {
  const std::string ll128 =
      "nccl_tree_ll128: {channels: 16, handoffs: [{chunk: 96000, time: 60us}, {chunk: 576000, time: 150us}]}";
  const auto two_nodes = [](const std::string& nics) {
    return test::uniform_switch(2, 8, 240, 25, -1, "nvswitch2", "", nics);
  };
  const auto t = two_nodes(ll128), plain = two_nodes("");
  const auto tree = [](const hw::Topology& topo, Protocol p) {
    return all_reduce_64mib(topo, "tree", all(topo), Granularity::kFlow, p);
  };
  EXPECT_NEAR(tree(t, Protocol::kLL128), 3110e-6, 0.05e-6);
  EXPECT_DOUBLE_EQ(tree(t, Protocol::kSimple), tree(plain, Protocol::kSimple));
  const auto simple_only = two_nodes(
      "nccl_tree: {channels: 16, handoffs: [{chunk: 64KiB, time: 30us}, {chunk: 512KiB, time: 150us}]}");
  EXPECT_DOUBLE_EQ(tree(simple_only, Protocol::kLL128), tree(plain, Protocol::kLL128));
}

// NVLS-Tree on two nodes of 8 H100-like GPUs (nvswitch3, 240 GB/s ports, 8 NICs of 25 GB/s), 64 MiB: the
// chunk is 128 KiB (2 nodes, not below 16 channels x 8 heads x 128 KiB = 16 MiB), each head's tree carries
// 64 MiB / 16 = 4 MiB over 8 channels: 512 KiB, 4 chunks per channel, and on 2 nodes a tree has depth 1:
// 4 + 1 = 5 handoffs of 128 KiB. Table {64 KiB: 100 us, 512 KiB: 800 us} is all per byte (100 us - 64 KiB x
// 700 us / 448 KiB = 0 fixed): 5 x 200 us = 1,000 us of copy. A tree bundle carries 5 chunks of 1 MiB (its
// head's 8 channels side by side) at 5 MiB / 1,000 us = 5.2 GB/s, two per NIC direction (10.5 GB/s, under
// 25), so every tree takes 1,000 us. The ports carry the message and the NVLS fill, (64 MiB + 2 x 16 channels
// x 8 heads x 128 KiB) x 9/8 / 0.85 = 133,230,833 B: 555.13 us at 240 GB/s, plus NVLS's 25 us hop and the
// trees' fixed time (0 here): shorter. NVLS-Tree has no base latency: T = 1,000 us. Without the table the
// trees' 5 MiB (with their fill) go at the NIC's share, 12.5 GB/s, in 419.4 us, and the ports bind: 555.13 us
// + 25 us + the trees' two NET hops of NCCL's 20.9 us = 621.93 us.
TEST(NcclTree, MeasuredNetworkChunksSetNvlsTreesNetworkPart) {
  const auto nvls_tree = [](const std::string& nics) {
    const auto t = test::uniform_switch(2, 8, 240, 25, -1, "nvswitch3", "", nics);
    return all_reduce_64mib(t, "nvls-tree", all(t));
  };
  EXPECT_NEAR(nvls_tree("nccl_tree: {channels: 16, handoffs: [{chunk: 64KiB, time: 100us}, {chunk: 512KiB, "
                        "time: 800us}]}"),
              1000e-6, 0.05e-6);
  EXPECT_NEAR(nvls_tree(""), 621.93e-6, 0.05e-6);
}

}  // namespace strata::sim
