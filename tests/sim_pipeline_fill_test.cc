// The fill of tree and chain pipelines: LL and LL128 forward line by line inside a node, one pass of the
// channel's threads at a time (nccl::forward_unit), while a hop across the network and the hop after it move
// whole chunks (the network proxy sends a step only once it is whole). Expected values come from NCCL's
// thread and line constants and from the number of pipeline stages, derived by hand below.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <limits>
#include <utility>
#include <vector>

#include "sim/algorithms/algorithms.h"
#include "sim/collective_runner.h"
#include "sim/nccl_model.h"
#include "test_systems.h"

namespace strata::sim {
namespace {

// One channel (one ring or one pair of trees) over all GPUs of `t`, with K chunks per ring or tree.
double micros(const hw::Topology& t, CollectiveOp op, Protocol p, int chunks, double bytes,
              Granularity g = Granularity::kFlow) {
  CollectiveRequest req;
  req.spec.op = op;
  for (int i = 0; i < t.num_gpus(); ++i) req.spec.group.push_back(i);
  req.spec.bytes = bytes;
  req.spec.protocol = p;
  req.spec.channels = 1;
  req.spec.pipeline_chunks = chunks;
  req.spec.granularity = g;
  req.algorithm = op == CollectiveOp::kBroadcast ? "ring" : "tree";
  req.auto_protocol = false;
  return run_collective(t, req).seconds * 1e6;
}

// NCCL v2.21.5-1 include/device.h: LL runs NCCL_LL_MAX_NTHREADS = 512 threads, each forwarding a 16 B line
// of 8 data bytes; LL128 runs NCCL_LL128_MAX_NTHREADS = 640 threads, 20 warps, each forwarding a slice of
// 32 threads x NCCL_LL128_SHMEM_ELEMS_PER_THREAD = 8 words of 8 B, 120 of every 128 B data.
TEST(PipelineFill, ForwardUnitIsOnePassOfNcclsThreads) {
  EXPECT_DOUBLE_EQ(nccl::forward_unit(Protocol::kLL), 512 * 8.0);
  EXPECT_DOUBLE_EQ(nccl::forward_unit(Protocol::kLL128), 20 * 32 * 8 * 8.0 * 120 / 128);
  EXPECT_EQ(nccl::forward_unit(Protocol::kSimple), std::numeric_limits<double>::infinity());
}

// One DGX H100, one channel: the broadcast chain has 7 hops, the all-reduce tree 7 hops up and 7 down.
// Simple forwards whole chunks: in the step form K chunks of P/K take (K + 6) (chain) or (K + 13) (tree)
// chunk times, so going from 1 to 2 to 4 chunks saves 3P and then 1.5P (chain), 6.5P and 3.25P (tree): a 2:1
// ratio. (The flow form's tree fills at each stage's share of the ports, which depends on K, so it keeps the
// ratio only for the chain, whose hops each have a port to themselves.) LL and LL128 forward passes of lines
// (4 KiB, 38,400 B, both under a quarter of P here): the fill is 6 or 13 units whatever K, so the time does
// not depend on the chunk count, in the flow and the step form alike.
TEST(PipelineFill, InsideANodeLowLatencyProtocolsFillInLinesNotChunks) {
  const hw::Topology t = hw::load_system(test::preset("dgx-h100.yaml"));
  for (const auto op : {CollectiveOp::kBroadcast, CollectiveOp::kAllReduce}) {
    const double bytes = op == CollectiveOp::kBroadcast ? 1 << 20 : 2 << 20;  // P = 1 MiB per ring or tree
    for (const auto g : {Granularity::kFlow, Granularity::kStep}) {
      if (op == CollectiveOp::kAllReduce && g == Granularity::kFlow) continue;
      const double s1 = micros(t, op, Protocol::kSimple, 1, bytes, g),
                   s2 = micros(t, op, Protocol::kSimple, 2, bytes, g),
                   s4 = micros(t, op, Protocol::kSimple, 4, bytes, g);
      EXPECT_NEAR((s1 - s2) / (s2 - s4), 2.0, 1e-5) << op_name(op);
    }
    for (const auto p : {Protocol::kLL, Protocol::kLL128}) {
      for (const auto g : {Granularity::kFlow, Granularity::kStep}) {
        const double one = micros(t, op, p, 1, bytes, g);
        EXPECT_NEAR(micros(t, op, p, 2, bytes, g), one, 1e-6 * one) << op_name(op) << protocol_name(p);
        EXPECT_NEAR(micros(t, op, p, 4, bytes, g), one, 1e-6 * one) << op_name(op) << protocol_name(p);
      }
    }
  }
}

// Two DGX H100, one channel: the broadcast chain 0..7 -> 8..15 has 15 hops, the 8th across the network, and
// each hop has its links to itself, so a stage moves at its own route's bandwidth b_i (NVLink b_nv for 14 of
// them, the network path b_net for one). Simple: K chunks of c = P/K through stages of c/b_i each take
// sum_i c/b_i + (K - 1) c/b_net (the slowest stage paces the rest), so from K = 1 to K = 2 the time drops by
// (P/2) x 14/b_nv, in the flow and the step form. (Until the fill ran at each stage's own pace, the flow form
// charged every stage at b_net: (P/2) x 14/b_net.) LL and LL128 forward units u inside a node, but the
// network hop and the one after it move whole chunks: the trip is 13 u/b_nv + c/b_net + c/b_nv, the K chunks
// less the first unit go at b_net, so the drop is (P/2)(1/b_net + 1/b_nv) in wire bytes (LL 2, LL128 128/120
// per payload byte).
TEST(PipelineFill, AcrossNodesTheNetworkHopAndTheNextMoveWholeChunks) {
  const hw::Topology t = hw::load_system(test::preset("dgx-h100.yaml"), hw::LoadOptions{2});
  const double P = 1 << 20, b_nv = t.route_bandwidth(0, 1), b_net = t.route_bandwidth(7, 8);
  ASSERT_LT(b_net, b_nv);
  const auto drop = [&](Protocol p, Granularity g) {
    return micros(t, CollectiveOp::kBroadcast, p, 1, P, g) - micros(t, CollectiveOp::kBroadcast, p, 2, P, g);
  };
  for (const auto g : {Granularity::kFlow, Granularity::kStep})
    EXPECT_NEAR(drop(Protocol::kSimple, g) * 1e-6, P / 2 * 14 / b_nv, 1e-3 * P / 2 * 14 / b_nv);
  const double lines = P / 2 * (1 / b_net + 1 / b_nv);
  EXPECT_NEAR(drop(Protocol::kLL, Granularity::kFlow) * 1e-6, 2 * lines, 1e-3 * 2 * lines);
  EXPECT_NEAR(drop(Protocol::kLL128, Granularity::kFlow) * 1e-6, 128.0 / 120 * lines, 1e-3 * lines);
}

// The shares a fill crosses a stage at (LinkShares), by hand on GPU 0's NVSwitch port of one DGX H100 (the
// first link of every route out of GPU 0, bandwidth b): a bundle whose first phase sends 0 -> 1 and 0 -> 2
// and whose second phase sends 0 -> 3 streams at b/3 (all three hops at once). While it fills with one
// piece, one transfer at a time: b in either phase. With three pieces: the first phase has both of its hops
// busy (b/2), the second its own hop and up to two pieces still in the first phase (b/3). A second bundle
// of one piece over the port adds one transfer to every load. pipeline_pieces counts units of a chunk where
// the protocol forwards less than a chunk.
TEST(PipelineFill, LinkSharesCountTheTransfersAFillingPipelineHasInFlight) {
  const hw::Topology t = hw::load_system(test::preset("dgx-h100.yaml"));
  const hw::LinkId l = t.route(0, 1).front();
  ASSERT_EQ(t.route(0, 2).front(), l);
  ASSERT_EQ(t.route(0, 3).front(), l);
  const double b = t.link(l).bandwidth;
  using Hops = std::vector<std::pair<hw::Rank, hw::Rank>>;
  const Hops twice{{0, 1}, {0, 2}}, once{{0, 3}};
  const std::array<hw::LinkId, 1> links{l};
  algorithms::LinkShares one(t), three(t), both(t);
  one.add(twice, once, 1, 1);
  three.add(twice, once, 3, 3);
  EXPECT_DOUBLE_EQ(one.pace(links), b / 3);
  EXPECT_DOUBLE_EQ(one.fill_pace(links, false), b);
  EXPECT_DOUBLE_EQ(one.fill_pace(links, true), b);
  EXPECT_DOUBLE_EQ(three.pace(links), b / 3);
  EXPECT_DOUBLE_EQ(three.fill_pace(links, false), b / 2);
  EXPECT_DOUBLE_EQ(three.fill_pace(links, true), b / 3);
  both.add(twice, once, 3, 3);
  both.add(once, {}, 1, 1);
  EXPECT_DOUBLE_EQ(both.pace(links), b / 4);
  EXPECT_DOUBLE_EQ(both.fill_pace(links, false), b / 3);
  EXPECT_DOUBLE_EQ(both.fill_pace(links, true), b / 3);
  // Across nodes the network moves whole chunks: a link that hops between nodes cross counts the bundle's
  // chunks, not its units. GPU 7 of two DGX H100 sends to 8 (first phase) and 9 (second) through its own NIC
  // (its shared network link): with 4 units but 1 chunk nothing of the first phase is still in flight on that
  // link during the second.
  const hw::Topology two = hw::load_system(test::preset("dgx-h100.yaml"), hw::LoadOptions{2});
  hw::LinkId nic = -1;
  for (hw::LinkId k : two.route(7, 8))
    if (two.link(k).transport == hw::Transport::kNet && two.link(k).shared &&
        std::ranges::count(two.route(7, 9), k) == 1)
      nic = k;
  ASSERT_GE(nic, 0);
  const std::array<hw::LinkId, 1> nic_links{nic};
  algorithms::LinkShares units(two), chunked(two);
  units.add(Hops{{7, 8}}, Hops{{7, 9}}, 4, 4);
  chunked.add(Hops{{7, 8}}, Hops{{7, 9}}, 4, 1);
  EXPECT_DOUBLE_EQ(units.fill_pace(nic_links, true), two.link(nic).bandwidth / 2);
  EXPECT_DOUBLE_EQ(chunked.fill_pace(nic_links, true), two.link(nic).bandwidth);
  EXPECT_DOUBLE_EQ(algorithms::pipeline_pieces(1 << 20, 2, 4096), 512);
  EXPECT_DOUBLE_EQ(algorithms::pipeline_pieces(1 << 20, 2, 1 << 20), 2);
}

// LL's ceiling (NCCL's llMaxBw, 141 GB/s bus bandwidth on one Hopper node) bounds how fast the channels
// stream, not the fill: with 16 chains on one DGX H100 the ceiling binds (16 x 141/16 x 2 wire bytes = 282
// GB/s through each GPU's NVSwitch port, below its 371), and a broadcast of S takes NCCL's launch latency,
// the chain's 7 hop latencies and S at 141 GB/s (a broadcast's bus bandwidth is its algorithm bandwidth), the
// fill's 6 units of 4 KiB per chain included in neither. From 4 MiB: at 1 MiB the fill (24 KiB against a
// chain's 64 KiB) would push the ports past their bandwidth, and they would bind instead.
TEST(PipelineFill, LlsCeilingBoundsStreamingNotTheFill) {
  const hw::Topology t = hw::load_system(test::preset("dgx-h100.yaml"));
  for (const double bytes : {4 << 20, 16 << 20}) {
    CollectiveRequest req;
    req.spec.op = CollectiveOp::kBroadcast;
    for (int i = 0; i < 8; ++i) req.spec.group.push_back(i);
    req.spec.bytes = bytes;
    req.spec.protocol = Protocol::kLL;
    req.spec.channels = 16;
    req.algorithm = "ring";
    req.auto_protocol = false;
    const double latency =
        nccl::base_latency(nccl::Family::kRing, Protocol::kLL) +
        7 * std::max(nccl::hop_latency(hw::Transport::kNvlink, nccl::Family::kRing, Protocol::kLL),
                     t.route_latency(0, 1));
    EXPECT_NEAR(run_collective(t, req).seconds, latency + bytes / 141e9, 1e-9) << bytes;
    // The step form caps only each chain's first hop, which feeds the rest: the last unit leaves it after
    // S at 141 GB/s, then crosses the 6 other hops at their links' pace, a 4 KiB unit in LL's 2 wire bytes
    // per byte through a port that 16 chains share: 6 x 8 KiB / (371 GB/s / 16) = 2.1 us more. (Capping
    // every transfer, as before, charged each of those units LL's share too: 6 x 4 KiB / (141 GB/s / 16) =
    // 2.8 us.)
    req.spec.granularity = Granularity::kStep;
    const double tail = 6 * 8192 / (t.route_bandwidth(0, 1) / 16);
    EXPECT_NEAR(run_collective(t, req).seconds, latency + bytes / 141e9 + tail, 1e-3 * tail) << bytes;
  }
}

// What NCCL runs (`auto`) across 2, 4 and 8 DGX A100 or DGX H100 never finishes a larger all-reduce sooner
// than a smaller one, from 1 KiB to 1 GiB: where NCCL hands over from one algorithm or protocol to another,
// the simulated times must meet. Until the fill above, the LL tree at 64-128 KiB took longer than the LL128
// tree at 256 KiB on every one of them.
TEST(PipelineFill, LargerAllReducesAcrossDgxNodesNeverFinishSooner) {
  for (const char* preset : {"dgx-a100.yaml", "dgx-h100.yaml"}) {
    for (const int nodes : {2, 4, 8}) {
      const hw::Topology t = hw::load_system(test::preset(preset), hw::LoadOptions{nodes});
      double before = 0;
      for (double bytes = 1024; bytes <= 1024.0 * 1024 * 1024; bytes *= 2) {
        CollectiveRequest req;
        req.spec.op = CollectiveOp::kAllReduce;
        for (int i = 0; i < t.num_gpus(); ++i) req.spec.group.push_back(i);
        req.spec.bytes = bytes;
        const double seconds = run_collective(t, req).seconds;
        EXPECT_GE(seconds, before) << preset << " x " << nodes << " at " << bytes << " B";
        before = seconds;
      }
    }
  }
}

}  // namespace
}  // namespace strata::sim
