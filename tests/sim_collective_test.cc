#include <gtest/gtest.h>

#include <map>
#include <numeric>

#include <fmt/format.h>

#include "sim/algorithms/algorithms.h"
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

TEST(Collectives, NvlsOnPartOfANodeMatchesPublishedMeasurements) {
  // nccl-tests all_reduce_perf with NCCL_ALGO=NVLS on n GPUs of one 8 x H100 SXM node, 2-4 GiB
  // (github.com/NVIDIA/nccl/issues/1455): busbw about 420, 440, 460 and 480 GB/s on 5, 6, 7 and 8 GPUs.
  // The model's port rule gives algbw 0.85 x 370.8 x n/(n+1) GB/s (busbw 420.2, 450.4, 472.8, 490.4).
  const hw::Topology t = hw::load_system(test::preset("dgx-h100.yaml"));
  const double S = 4.0 * (1 << 30);
  const std::map<int, double> published = {{5, 420}, {6, 440}, {7, 460}, {8, 480}};
  for (const auto& [n, busbw] : published) {
    CollectiveRequest req;
    req.spec.group.resize(static_cast<std::size_t>(n));
    std::iota(req.spec.group.begin(), req.spec.group.end(), 0);
    req.spec.bytes = S;
    req.algorithm = "nvls";
    const auto r = run_collective(t, req);
    EXPECT_NEAR(r.algbw, 0.85 * 370.8e9 * n / (n + 1), 0.01 * r.algbw) << n;
    EXPECT_NEAR(r.busbw / 1e9, busbw, 0.04 * busbw) << n;
  }
}

TEST(Collectives, NvlsChunkStaircaseFollowsNccl221) {
  // NCCL v2.21.5-1 computeCollChunkInfo on one DGX H100: ops = 16 channels x 8 heads = 128; 128 KiB from
  // 64 x 128 x 128 KiB = 1 GiB, 64 KiB from 8 x 128 x 64 KiB = 64 MiB, 32 KiB from 2 x 128 x 32 KiB = 8 MiB,
  // 16 KiB below.
  const double KiB = 1024, MiB = KiB * KiB;
  EXPECT_EQ(algorithms::nvls_chunk_bytes(4 * MiB, 8), 16 * KiB);
  EXPECT_EQ(algorithms::nvls_chunk_bytes(8 * MiB - 1, 8), 16 * KiB);
  EXPECT_EQ(algorithms::nvls_chunk_bytes(8 * MiB, 8), 32 * KiB);
  EXPECT_EQ(algorithms::nvls_chunk_bytes(64 * MiB - 1, 8), 32 * KiB);
  EXPECT_EQ(algorithms::nvls_chunk_bytes(64 * MiB, 8), 64 * KiB);
  EXPECT_EQ(algorithms::nvls_chunk_bytes(1024 * MiB - 1, 8), 64 * KiB);
  EXPECT_EQ(algorithms::nvls_chunk_bytes(1024 * MiB, 8), 128 * KiB);
  // NVLS-Tree: 128 KiB on 2-3 nodes from 4 x 128 x 128 KiB = 64 MiB, 64 KiB from 128 x 64 KiB = 8 MiB,
  // 32 KiB below; from 4 nodes at most 64 KiB (NCCL_NVLSTREE_MAX_CHUNKSIZE).
  EXPECT_EQ(algorithms::nvls_tree_chunk_bytes(64 * MiB, 2, 8), 128 * KiB);
  EXPECT_EQ(algorithms::nvls_tree_chunk_bytes(64 * MiB - 1, 2, 8), 64 * KiB);
  EXPECT_EQ(algorithms::nvls_tree_chunk_bytes(8 * MiB, 2, 8), 64 * KiB);
  EXPECT_EQ(algorithms::nvls_tree_chunk_bytes(8 * MiB - 1, 2, 8), 32 * KiB);
  EXPECT_EQ(algorithms::nvls_tree_chunk_bytes(1024 * MiB, 4, 8), 64 * KiB);
}

TEST(Collectives, NvlsPipelineFillCostsTwoStepsPerChannel) {
  // One DGX H100, NVLS all-reduce: each channel's n steps through the three-stage pipeline take n + 2 step
  // times (computeCollSteps: n = (S/16) / (8 heads x chunk)). Time = 25 us NVLS NVLink hop (base 0) +
  // S (n+2)/n x 9/8 / 0.85 / port rate. 4 MiB: 16 KiB chunks, n = 2, twice the bytes; 128 MiB: 64 KiB
  // chunks, n = 16; 1 GiB: 128 KiB chunks, n = 64.
  const hw::Topology t = hw::load_system(test::preset("dgx-h100.yaml"));
  const double port = 0.85 * 370.8e9, MiB = 1 << 20;
  for (auto [S, steps] : {std::pair{4 * MiB, 2.0}, {128 * MiB, 16.0}, {1024 * MiB, 64.0}}) {
    const auto r = run(t, CollectiveOp::kAllReduce, S, "nvls");
    const double expected = 25 * kUs + S * (steps + 2) / steps * 9 / 8 / port;
    EXPECT_NEAR(r.seconds, expected, 1e-6 * expected) << S;
  }
}

// Nodes of `gpus` GPUs on an NVLS-capable switch (ports `port_gbps` per direction), one NIC of `nic_gbps` per
// GPU.
hw::Topology nvls_nodes(int nodes, int gpus, double port_gbps, double nic_gbps) {
  return test::uniform_switch(nodes, gpus, port_gbps, nic_gbps, -1, "nvswitch3");
}

TEST(Collectives, NvlsTreeIsBoundByTheSwitchPortOrByTheNicsTwoNodeTrees) {
  // 2 nodes x 4 GPUs, all-reduce of S = 1 GiB. Every port carries S (n+1)/n / 0.85 each way (NVLS); each
  // GPU heads S/n across nodes through two mirrored 2-node trees (S/(2n) each): per NIC direction S/(2n) per
  // tree, S/n in all, half of a ring's ~2 S/n. Trees are pipelined per channel (16 NVLS channels, half per
  // tree) in NCCL's 128 KiB chunks: per channel S/(2n)/8 = 16 MiB = 128 chunks through D = 2 stages. A NIC
  // direction carries one tree's up hop and the other's down hop: while the first chunk goes up, the down
  // hop has nothing yet, so that chunk crosses at the whole NIC (twice the pace), and the turn at the root
  // at the shared pace: (127 + 0.5 + 1)/128 chunk times (129/128 when the fill ran at the streaming pace).
  // Latencies (NCCL's NVLSTree): 25 us NVLink + 2 x 20.9 us network per depth.
  const double S = 1 << 30, n = 4;
  const double latency = (25 + 2 * 20.9) * kUs;
  {
    const auto t = nvls_nodes(2, 4, 100, 5);  // slow NICs: the trees bound it
    const auto r = run(t, CollectiveOp::kAllReduce, S, "nvls-tree");
    const double expected = S / n * (128.5 / 128) / 5e9 + 2 * 20.9 * kUs;
    EXPECT_NEAR(r.seconds, expected, 1e-3 * expected);
  }
  {
    // Fast NICs (PCIe 50 GB/s still carries only S/n): the ports bound it. Their NVLS pipeline adds a fill
    // and drain of two steps per channel: 16 channels x 2 x (4 heads x 128 KiB) = 16 MiB.
    const auto t = nvls_nodes(2, 4, 100, 400);
    const auto r = run(t, CollectiveOp::kAllReduce, S, "nvls-tree");
    const double expected = (S + 16.0 * (1 << 20)) * (n + 1) / n / 0.85 / 100e9 + latency;
    EXPECT_NEAR(r.seconds, expected, 1e-3 * expected);
  }
  // Where it applies: all-reduce over whole nodes of an NVLS-capable system, across nodes, Simple only.
  const auto t = nvls_nodes(2, 4, 100, 50);
  auto reason = [&](std::vector<hw::Rank> group, CollectiveOp op = CollectiveOp::kAllReduce,
                    Protocol p = Protocol::kSimple) {
    CollectiveSpec spec;
    spec.op = op;
    spec.group = std::move(group);
    spec.bytes = S;
    spec.protocol = p;
    return AlgorithmRegistry::instance().find("nvls-tree")->unsupported_reason(spec, t);
  };
  EXPECT_EQ(reason(all(t)), "");
  EXPECT_NE(reason({0, 1, 2, 3}), "");        // one node: nvls
  EXPECT_NE(reason({0, 1, 2, 4, 5, 6}), "");  // parts of nodes
  EXPECT_NE(reason(all(t), CollectiveOp::kAllGather), "");
  EXPECT_NE(reason(all(t), CollectiveOp::kAllReduce, Protocol::kLL128), "");
  const hw::Topology a100 = hw::load_system(test::preset("dgx-a100.yaml"), hw::LoadOptions{2});
  CollectiveSpec spec;
  spec.group = all(a100);
  spec.bytes = S;
  EXPECT_NE(AlgorithmRegistry::instance().find("nvls-tree")->unsupported_reason(spec, a100), "");
}

TEST(Collectives, NvlsTreeStopsAtNcclsPerChannelCeiling) {
  // NCCL >= 2.28 caps NVLS-Tree at perChMaxNVLSTreeBw per channel of its NVLS graph (Hopper: 57.7 GB/s on 2
  // nodes, 45.5 from 3) as nccl-tests busbw, i.e. algbw <= channels x 57.7 x ranks / (2 (ranks - 1)).
  // 2 DGX H100: the NVLS graph is one channel per GPU, 8 (18 NVLinks x 20.6 = 370.8 GB/s hold 9 x 40 but not
  // 9 x 45), so algbw <= 8 x 57.7 x 16/30 = 246.19 GB/s, below the switch ports' 370.8 x 0.85 x 8/9 = 280.2.
  // The ports then carry S plus the NVLS fill and drain (16 channels x 2 steps x 8 heads x 128 KiB = 32 MiB)
  // at that rate, after NCCL's NVLSTree latency (25 us + 2 x 20.9 us; base 0).
  const double S = 4.0 * (1 << 30);
  {
    const hw::Topology t = hw::load_system(test::preset("dgx-h100.yaml"), hw::LoadOptions{2});
    const double algbw = 8 * 57.7e9 * 16 / 30;
    const double expected = (S + 32.0 * (1 << 20)) / algbw + (25 + 2 * 20.9) * kUs;
    const auto r = run(t, CollectiveOp::kAllReduce, S, "nvls-tree");
    EXPECT_NEAR(r.seconds, expected, 1e-4 * expected);
  }
  {
    // 2 nodes x 4 GPUs on 1,000 GB/s ports: the ports would allow 1000 x 0.85 x 4/5 = 680 GB/s algbw, the
    // NICs (400 GB/s each, S/n per direction) 1,600; NCCL's graph is 4 channels at the top of Hopper's
    // speed ladder, so the ceiling is 4 x 57.7 x 8/14 = 131.89 GB/s. Fill and drain: 16 x 2 x 4 x 128 KiB.
    const auto t = nvls_nodes(2, 4, 1000, 400);
    const double algbw = 4 * 57.7e9 * 8 / 14;
    const double expected = (S + 16.0 * (1 << 20)) / algbw + (25 + 2 * 20.9) * kUs;
    const auto r = run(t, CollectiveOp::kAllReduce, S, "nvls-tree");
    EXPECT_NEAR(r.seconds, expected, 1e-4 * expected);
  }
}

TEST(Collectives, TunerPicksNvlsTreeForLargeAllReducesOnTwoDgxH100) {
  // NCCL's default on 2 DGX H100 at GiB sizes is NVLS-Tree; the 2-node trees halve the NIC traffic of a ring.
  const hw::Topology t = hw::load_system(test::preset("dgx-h100.yaml"), hw::LoadOptions{2});
  CollectiveRequest req;
  req.spec.group = all(t);
  req.spec.bytes = 4.0 * (1 << 30);
  const auto r = run_collective(t, req);
  EXPECT_EQ(r.algorithm, "nvls-tree");
  const auto ring = run(t, CollectiveOp::kAllReduce, req.spec.bytes, "ring");
  EXPECT_LT(r.seconds, ring.seconds);
}

TEST(Collectives, TreeBeatsRingForSmallMessagesOnManyNodes) {
  const hw::Topology t = hw::load_system(test::preset("dgx-h100.yaml"), hw::LoadOptions{16});
  const auto ring = run(t, CollectiveOp::kAllReduce, 1024, "ring", Protocol::kLL);
  const auto tree = run(t, CollectiveOp::kAllReduce, 1024, "tree", Protocol::kLL);
  EXPECT_LT(tree.seconds * 3, ring.seconds);
  // ...and the automatic choice picks the tree there.
  CollectiveRequest req;
  req.spec.group = all(t);
  req.spec.bytes = 1024;
  EXPECT_EQ(run_collective(t, req).algorithm, "tree");
}

TEST(Collectives, EveryAlgorithmRunsEveryOpItSupports) {
  const hw::Topology t = hw::load_system(test::preset("dgx-h100.yaml"), hw::LoadOptions{2});
  for (const auto* algo : AlgorithmRegistry::instance().all())
    for (auto op : {CollectiveOp::kAllReduce, CollectiveOp::kReduceScatter, CollectiveOp::kAllGather,
                    CollectiveOp::kReduce, CollectiveOp::kBroadcast, CollectiveOp::kAllToAll}) {
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
  // P2's A100 system, 2 nodes of 16 GPUs, one 8 GB/s NIC per node. The flat ring pushes 2(n-1)/n S = 1.94 S
  // through each NIC direction; the hierarchical schedule sends each GPU's S/L slice once across (all-reduce
  // of S/L over N = 2 nodes: 2(N-1)/N S/L per GPU), L = 16 GPUs sharing the NIC: S in total. Plus an
  // intra-node reduce-scatter and all-gather of (L-1)/L S each at the NVSwitch port bandwidth.
  const hw::Topology t = hw::load_system(test::preset("gcp-a100x16.yaml"), hw::LoadOptions{2});
  const double S = 1 << 30, nic = 8e9, port = t.route_bandwidth(0, 1);
  const auto ring = run(t, CollectiveOp::kAllReduce, S, "ring");
  const auto hier = run(t, CollectiveOp::kAllReduce, S, "hierarchical");
  EXPECT_NEAR(ring.seconds, 2.0 * 31 / 32 * S / nic, 0.01 * ring.seconds);
  EXPECT_NEAR(hier.seconds, S / nic + 2.0 * 15 / 16 * S / port, 0.01 * hier.seconds);
}

TEST(Collectives, FlowBundlesMatchStepByStepTransfersWhenHopsAreAlike) {
  // Where every hop of a ring runs at the same rate, the flow bundle (one flow per pipelined channel) and
  // the step-by-step expansion (one transfer per rank and step) are the same schedule. Chunk pipelines
  // (trees, chains) agree up to their fill and drain: step by step, hops on less loaded ports run ahead
  // while the bundle moves at the busiest port's pace throughout. That costs most on a one-node tree
  // all-reduce (4 hops per port, 64 chunks through 14 stages: ~20%); NCCL does not use trees there.
  struct Case {
    std::string system;
    CollectiveOp op;
    std::string algo;
    double tolerance;
  };
  const std::vector<Case> cases{{"dgx-a100.yaml", CollectiveOp::kAllReduce, "ring", 1e-3},
                                {"dgx-a100.yaml", CollectiveOp::kReduceScatter, "ring", 1e-3},
                                {"dgx-a100.yaml", CollectiveOp::kAllGather, "ring", 1e-3},
                                {"dgx1-v100.yaml", CollectiveOp::kAllReduce, "ring", 1e-3},
                                {"dgx-a100.yaml", CollectiveOp::kBroadcast, "ring", 0.03},
                                {"dgx-a100.yaml", CollectiveOp::kAllReduce, "tree", 0.25},
                                {"dgx-a100.yaml", CollectiveOp::kReduce, "tree", 0.03}};
  for (const auto& c : cases) {
    const hw::Topology t = hw::load_system(test::preset(c.system));
    CollectiveRequest req;
    req.spec.op = c.op;
    req.spec.group = all(t);
    req.spec.bytes = 64 << 20;
    req.algorithm = c.algo;
    req.auto_protocol = false;
    req.spec.granularity = Granularity::kStep;
    const auto step = run_collective(t, req);
    req.spec.granularity = Granularity::kFlow;
    const auto flow = run_collective(t, req);
    EXPECT_GE(flow.seconds, step.seconds * (1 - 1e-6));
    EXPECT_NEAR(flow.seconds, step.seconds, c.tolerance * step.seconds)
        << c.system << " " << op_name(c.op) << " " << c.algo;
    EXPECT_LT(flow.graph.size(), step.graph.size() / 4);
  }
}

TEST(Collectives, FlowBundlesAddLatencyWhereStepsHideItBehindTheSlowestHop) {
  // Multi-node rings mix fast NVLink hops and slower NIC hops. Step by step, fast hops run ahead and hide
  // their latency while the NIC hop is busy; the bundle moves all hops at the NIC's pace and adds the chain
  // latency the way NCCL's cost model does. The difference is bounded by that latency: 2(n-1) hop latencies.
  const hw::Topology t = hw::load_system(test::preset("dgx-h100.yaml"), hw::LoadOptions{2});
  CollectiveRequest req;
  req.spec.group = all(t);
  req.spec.bytes = 256 << 20;
  req.algorithm = "ring";
  req.auto_protocol = false;
  req.spec.granularity = Granularity::kStep;
  const auto step = run_collective(t, req);
  req.spec.granularity = Granularity::kFlow;
  const auto flow = run_collective(t, req);
  EXPECT_GE(flow.seconds, step.seconds);
  EXPECT_LT(flow.seconds - step.seconds, 2 * 15 * 14e-6);  // at most every step at NCCL's NET hop latency
}

TEST(Collectives, DirectlyWiredDgx1RingsUseEveryNvlink) {
  // DGX-1 (hybrid cube-mesh, 6 NVLink2 links of 20 GB/s per GPU): three undirected Hamiltonian cycles, each
  // run both ways, load every link exactly to its multiplicity, so the ring all-reduce reaches ~6 x 20 GB/s
  // bus bandwidth, as NCCL does on DGX-1.
  const hw::Topology t = hw::load_system(test::preset("dgx1-v100.yaml"));
  const auto r = run(t, CollectiveOp::kAllReduce, 1 << 30, "ring");
  EXPECT_NEAR(r.busbw, 120e9, 0.05 * 120e9);
}

TEST(Collectives, MultiNodeTreesUseEveryNic) {
  // One tree pair per NIC: the 8 NICs of a node carry the same traffic. Across 4 nodes NCCL's pair of trees
  // (0 -> 2 -> {1, 3} and its mirror 3 -> 1 -> {2, 0}) makes nodes 1 and 2 interior in one tree: per channel
  // they send half the data up and twice half down there, and half up in the other tree (2 S/C in all),
  // nodes 0 and 3 half down as a root and half up as a leaf (S/C). The interior nodes' NICs (47 GB/s
  // effective each) bound the bus bandwidth at (n-1)/n x 8 x 47 GB/s; the pipeline's fill through the
  // chains inside the nodes keeps it within 20% of that at 1 GiB.
  const hw::Topology t = hw::load_system(test::preset("dgx-h100.yaml"), hw::LoadOptions{4});
  const auto r = run(t, CollectiveOp::kAllReduce, 1 << 30, "tree");
  std::vector<std::vector<double>> nic_out(4);
  for (std::size_t l = 0; l < t.links().size(); ++l) {
    const auto& link = t.links()[l];
    const auto& src = t.vertices()[static_cast<std::size_t>(link.src)];
    if (src.kind == hw::VertexKind::kNic &&
        t.vertices()[static_cast<std::size_t>(link.dst)].kind == hw::VertexKind::kNetSwitch)
      nic_out[static_cast<std::size_t>(src.node)].push_back(r.sim.link_bytes[l]);
  }
  // A flow bundle's bytes include its pipeline fill ((K + D - 1)/K, the same for both trees of a pair).
  const double per_channel = (1 << 30) / 8.0, leaf_root = nic_out[0].at(0);
  EXPECT_GE(leaf_root, per_channel);
  EXPECT_LT(leaf_root, 1.2 * per_channel);
  for (std::size_t node = 0; node < 4; ++node) {
    ASSERT_EQ(nic_out[node].size(), 8u);
    const double expected = (node == 1 || node == 2 ? 2.0 : 1.0) * leaf_root;
    for (double b : nic_out[node]) EXPECT_NEAR(b, expected, 1e-6 * expected) << "node " << node;
  }
  const double bound = 31.0 / 32.0 * 8 * 47e9;
  EXPECT_LT(r.busbw, bound);
  EXPECT_GT(r.busbw, 0.8 * bound);
}

TEST(Collectives, ThousandGpuRingStaysSmall) {
  // 128 DGX-H100 nodes: the flow form is 8 bundles (one per channel), not 16.7 M step transfers. Time =
  // NCCL base latency + the slowest window of 2(n-1) = 2046 hop latencies (each ring crosses 128 NIC hops at
  // 14 us and 896 NVLink hops at 3.4 us: twice round minus the two cheapest hops) + 2(n-1)/n S over 8 NICs
  // of 47 GB/s.
  const hw::Topology t = hw::load_system(test::preset("dgx-h100.yaml"), hw::LoadOptions{128});
  const double S = 1 << 30;
  const auto r = run(t, CollectiveOp::kAllReduce, S, "ring");
  EXPECT_LT(r.graph.size(), 16u);
  const double latency = kRingBase + (2 * (128 * 14.0 + 896 * 3.4) - 2 * 3.4) * kUs;
  const double expected = latency + 2.0 * 1023 / 1024 * S / (8 * 47e9);
  EXPECT_NEAR(r.seconds, expected, 1e-3 * expected);
}

TEST(Collectives, DeterministicTimelines) {
  const hw::Topology t = hw::load_system(test::preset("dgx1-v100.yaml"), hw::LoadOptions{2});
  const auto a = run(t, CollectiveOp::kAllReduce, 1 << 26, "ring", Protocol::kSimple, true);
  const auto b = run(t, CollectiveOp::kAllReduce, 1 << 26, "ring", Protocol::kSimple, true);
  EXPECT_EQ(a.sim.makespan, b.sim.makespan);
  EXPECT_EQ(a.sim.events, b.sim.events);
  ASSERT_EQ(a.sim.timeline.size(), b.sim.timeline.size());
  for (std::size_t i = 0; i < a.sim.timeline.size(); ++i)
    EXPECT_EQ(a.sim.timeline[i].done, b.sim.timeline[i].done);
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
    EXPECT_NE(std::string(e.what()).find("tree implements allreduce, broadcast and reduce only"),
              std::string::npos);
  }
  spec.op = CollectiveOp::kAllReduce;
  EXPECT_THROW(add_collective(t, g, spec, "nvls"), std::invalid_argument);  // multi-node
  spec.group = {0, 0};
  EXPECT_THROW(add_collective(t, g, spec, "ring"), std::invalid_argument);
  // Issue 11: --channels 1000000 built a million rings. NCCL 2.x allows MAXCHANNELS = 32.
  spec.group = all(t);
  spec.channels = 33;
  try {
    add_collective(t, g, spec, "ring");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("33 channels: expected 0 (choose from the topology) to 32"),
              std::string::npos)
        << e.what();
  }
  spec.channels = -1;
  EXPECT_THROW(add_collective(t, g, spec, "ring"), std::invalid_argument);
  spec.channels = 32;
  EXPECT_NO_THROW(add_collective(t, g, spec, "ring"));
}

TEST(Collectives, BusBandwidthFactorsFollowNcclTests) {
  EXPECT_DOUBLE_EQ(busbw_factor(CollectiveOp::kAllReduce, 8), 14.0 / 8);
  EXPECT_DOUBLE_EQ(busbw_factor(CollectiveOp::kAllGather, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(busbw_factor(CollectiveOp::kBroadcast, 8), 1.0);
}

}  // namespace strata::sim
