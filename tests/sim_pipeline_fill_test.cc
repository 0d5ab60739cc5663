// The fill of tree and chain pipelines: LL and LL128 forward line by line inside a node, one pass of the
// channel's threads at a time (nccl::forward_unit), while a hop across the network and the hop after it move
// whole chunks (the network proxy sends a step only once it is whole). Expected values come from NCCL's
// thread and line constants and from the number of pipeline stages, derived by hand below.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>

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
// Simple forwards whole chunks: K chunks of P/K take (K + 6) (chain) or (K + 13) (tree) chunk times, so
// going from 1 to 2 to 4 chunks saves 3P and then 1.5P (chain), 6.5P and 3.25P (tree): a 2:1 ratio. LL and
// LL128 forward passes of lines (4 KiB, 38,400 B, both under a quarter of P here): the fill is 6 or 13
// units whatever K, so the time does not depend on the chunk count, in the flow and the step form alike.
TEST(PipelineFill, InsideANodeLowLatencyProtocolsFillInLinesNotChunks) {
  const hw::Topology t = hw::load_system(test::preset("dgx-h100.yaml"));
  for (const auto op : {CollectiveOp::kBroadcast, CollectiveOp::kAllReduce}) {
    const double bytes = op == CollectiveOp::kBroadcast ? 1 << 20 : 2 << 20;  // P = 1 MiB per ring or tree
    const double s1 = micros(t, op, Protocol::kSimple, 1, bytes),
                 s2 = micros(t, op, Protocol::kSimple, 2, bytes),
                 s4 = micros(t, op, Protocol::kSimple, 4, bytes);
    EXPECT_NEAR((s1 - s2) / (s2 - s4), 2.0, 1e-6) << op_name(op);
    for (const auto p : {Protocol::kLL, Protocol::kLL128}) {
      for (const auto g : {Granularity::kFlow, Granularity::kStep}) {
        const double one = micros(t, op, p, 1, bytes, g);
        EXPECT_NEAR(micros(t, op, p, 2, bytes, g), one, 1e-6 * one) << op_name(op) << protocol_name(p);
        EXPECT_NEAR(micros(t, op, p, 4, bytes, g), one, 1e-6 * one) << op_name(op) << protocol_name(p);
      }
    }
  }
}

// Two DGX H100, one channel (flow form). A stage adds what the previous hop must hand over before the next
// can start: a whole chunk where either hop crosses the network, a unit u otherwise. Broadcast: the chain
// 0..7 -> 8..15 has 15 hops, the 8th across the network: stages 8 and 9 wait for a whole chunk, twelve others
// for a unit: P + 2P/K + 12u under LL and LL128, against Simple's P + 14P/K. From K = 1 to K = 2 the time
// drops by P/r against 7P/r_Simple on the same bottleneck link (one channel: LL's ceiling, 39 GB/s, is above
// the NIC), so the rates differ by the wire bytes per payload byte (LL 2, LL128 128/120): LL's drop is 2/7 of
// Simple's, LL128's 1.0667/7. All-reduce tree: each tree runs up one node's chain of 8 (7 hops), across the
// network to the other node's head, and back down (16 hops, the 8th and 9th across the network): 3P/K + 12u
// against Simple's 15P/K; the tree's LL moves 3.8 wire bytes per payload byte (NCCL's rating, tuning.cc), its
// LL128 across nodes 128/120.
TEST(PipelineFill, AcrossNodesTheNetworkHopAndTheNextMoveWholeChunks) {
  const hw::Topology t = hw::load_system(test::preset("dgx-h100.yaml"), hw::LoadOptions{2});
  const auto drop = [&](CollectiveOp op, Protocol p) {
    const double bytes = op == CollectiveOp::kBroadcast ? 1 << 20 : 2 << 20;
    return micros(t, op, p, 1, bytes) - micros(t, op, p, 2, bytes);
  };
  const double chain = drop(CollectiveOp::kBroadcast, Protocol::kSimple);
  EXPECT_NEAR(drop(CollectiveOp::kBroadcast, Protocol::kLL) / chain, 2.0 / 7, 1e-4);
  EXPECT_NEAR(drop(CollectiveOp::kBroadcast, Protocol::kLL128) / chain, 128.0 / 120 / 7, 1e-4);
  const double tree = drop(CollectiveOp::kAllReduce, Protocol::kSimple);
  EXPECT_NEAR(drop(CollectiveOp::kAllReduce, Protocol::kLL) / tree, 3.8 * 1.5 / 7.5, 1e-4);
  EXPECT_NEAR(drop(CollectiveOp::kAllReduce, Protocol::kLL128) / tree, 128.0 / 120 * 1.5 / 7.5, 1e-4);
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
