// Self-describing collective algorithms: a toy algorithm registered here (one file, one registration line)
// becomes selectable by the tuner and the CLI; the tuner against the simulator over a grid; tree
// broadcast/reduce and DGX-1 tree bandwidth bounds; one-rank collectives; nccl-tests' sendrecv.
#include <gtest/gtest.h>

#include <numeric>

#include "experiments/collective_sweep.h"
#include "sim/algorithms/algorithms.h"
#include "sim/collective_runner.h"
#include "sim/nccl_model.h"
#include "test_systems.h"

namespace strata::sim {
namespace {

// A toy all-gather for two ranks: each sends its half to the other. It claims an estimate of zero, so the
// tuner must pick it wherever it is eligible.
class Swap final : public CollectiveAlgorithm {
 public:
  std::string_view name() const override { return "toy-swap"; }
  std::string_view description() const override { return "test-only two-rank all-gather"; }
  nccl::Family family() const override { return nccl::Family::kRing; }
  std::string unsupported_reason(const CollectiveSpec& spec, const hw::Topology&) const override {
    if (spec.op != CollectiveOp::kAllGather || spec.group.size() != 2) return "two-rank all-gather only";
    return {};
  }
  double estimate(const nccl::EstimateInputs&) const override { return 0; }
  TaskId build(BuildContext& ctx) const override {
    const TaskId start = algorithms::begin_collective(ctx);
    const std::array deps{Dep{start}};
    const auto label = ctx.label("swap");
    const std::array done{
        Dep{ctx.graph.add_transfer(ctx.member(0), ctx.member(1), ctx.spec.bytes / 2, 0, label, deps)},
        Dep{ctx.graph.add_transfer(ctx.member(1), ctx.member(0), ctx.spec.bytes / 2, 0, label, deps)}};
    return algorithms::join(ctx, done);
  }
};
// The one registration line.
const bool kSwapRegistered = (AlgorithmRegistry::instance().add(std::make_unique<Swap>()), true);

std::vector<hw::Rank> range(int from, int count, int stride = 1) {
  std::vector<hw::Rank> g;
  for (int i = 0; i < count; ++i) g.push_back(from + i * stride);
  return g;
}

CollectiveResult run(const hw::Topology& t, CollectiveOp op, std::vector<hw::Rank> group, double bytes,
                     const std::string& algo, std::optional<Protocol> p = Protocol::kSimple) {
  CollectiveRequest req;
  req.spec.op = op;
  req.spec.group = std::move(group);
  req.spec.bytes = bytes;
  req.spec.protocol = p.value_or(Protocol::kSimple);
  req.algorithm = algo;
  req.auto_protocol = !p.has_value();
  return run_collective(t, req);
}

}  // namespace

TEST(Algorithms, TreeChunkIsNccl221s) {
  using sim::algorithms::tree_chunk_bytes;
  // NCCL v2.21.5-1 src/enqueue.cc computeCollChunkInfo: one step of the protocol's buffer. Simple: 4 MiB / 8,
  // whatever the size (NCCL <= 2.19 shrank it for small messages; 2.20 stopped). LL: a 64 KiB step, half
  // flags.
  for (double bytes : {64.0 * 1024, 4.0 * 1024 * 1024, 1e9}) {
    EXPECT_EQ(tree_chunk_bytes(bytes, sim::Protocol::kSimple, 8, 8), 512 * 1024.0);
    EXPECT_EQ(tree_chunk_bytes(bytes, sim::Protocol::kLL, 8, 8), 32 * 1024.0);
  }
  // LL128: 614,400 B step x 15/16 = 576,000 B. 8 nodes x 8: nsteps = 1 + 3 + 0.8 = 4.8. With 4 MiB per
  // channel, floor(4194304 / c) against 4.8 x 64 / 8 = 38.4: 7, 14, 29 are below it, so 576000 -> 288000 ->
  // 144000 -> 72000 (the first loop stops at 131072); then floor(4194304 / 72000) = 58 is not below 4.8 x 16
  // / 8 = 9.6.
  EXPECT_EQ(tree_chunk_bytes(4194304, sim::Protocol::kLL128, 8, 8), 72000.0);
  // 1 GB per channel: 1736 chunks, no halving.
  EXPECT_EQ(tree_chunk_bytes(1e9, sim::Protocol::kLL128, 8, 8), 576000.0);
  // 2 nodes x 8, 256 KiB: nsteps = 1 + 1 + 0.8 = 2.8; 0, 0, 1 < 22.4 -> 72000; then 3 < 5.6 -> 36000, and
  // 7 is not below 5.6.
  EXPECT_EQ(tree_chunk_bytes(262144, sim::Protocol::kLL128, 2, 8), 36000.0);
}

TEST(Algorithms, ARegisteredAlgorithmIsSelectableByTheTunerAndTheCli) {
  ASSERT_TRUE(kSwapRegistered);
  const hw::Topology t = hw::load_system(test::preset("dgx-a100.yaml"));
  // `best` ranks every registered algorithm by its own estimate (`auto` ranks NCCL's by NCCL's tuner, which
  // knows only NCCL's algorithms: sim/nccl_tuner.h).
  const auto r = run(t, CollectiveOp::kAllGather, {0, 1}, 1 << 20, "best", std::nullopt);
  EXPECT_EQ(r.algorithm, "toy-swap");
  // Two transfers of S/2 over one NVSwitch port each way (12 NVLink3 links).
  EXPECT_GT(r.seconds, (1 << 19) / t.route_bandwidth(0, 1));
  // Not eligible elsewhere: the tuner falls back to the built-in algorithms.
  EXPECT_NE(run(t, CollectiveOp::kAllGather, {0, 1, 2}, 1 << 20, "best", std::nullopt).algorithm, "toy-swap");
  // The CLI's sweep (strata sim collective --algo toy-swap) and its --algo validation (registry names).
  experiments::SweepConfig cfg;
  cfg.op = CollectiveOp::kAllGather;
  cfg.group = {0, 1};
  cfg.sizes = {1 << 20};
  cfg.algorithm = "toy-swap";
  const auto rows = experiments::run_sweep(t, cfg);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_NE(experiments::table_row(cfg, rows[0]).find("toy-swap"), std::string::npos);
  EXPECT_NE(AlgorithmRegistry::instance().names().find("toy-swap"), std::string::npos);
  CollectiveSpec pair;
  pair.op = CollectiveOp::kAllGather;
  pair.group = {0, 1};
  EXPECT_EQ(AlgorithmRegistry::instance().first_eligible(pair, t)->name(), "ring");  // registration order
}

TEST(Algorithms, AutoIsNcclsChoiceAndBestIsTheFastestOfAll) {
  // NCCL runs rings, trees and NVLS for an all-reduce, never strata's own direct or hierarchical schedules:
  // auto chooses among NCCL's, best among all. On one DGX A100 at 4 MiB direct is the fastest in the model.
  const hw::Topology t = hw::load_system(test::preset("dgx-a100.yaml"));
  const auto all8 = range(0, 8);
  const auto best = run(t, CollectiveOp::kAllReduce, all8, 4 << 20, "best", std::nullopt);
  const auto nccl = run(t, CollectiveOp::kAllReduce, all8, 4 << 20, "auto", std::nullopt);
  EXPECT_EQ(best.algorithm, "direct");
  EXPECT_TRUE(nccl.algorithm == "ring" || nccl.algorithm == "tree") << nccl.algorithm;
  EXPECT_LT(best.seconds, nccl.seconds);
  // All-to-all is grouped point-to-point sends in NCCL, which is the direct schedule.
  EXPECT_EQ(run(t, CollectiveOp::kAllToAll, all8, 4 << 20, "auto", std::nullopt).algorithm, "direct");
  const auto* hier = AlgorithmRegistry::instance().find("hierarchical");
  CollectiveSpec spec;
  spec.group = all8;
  spec.bytes = 1 << 20;
  EXPECT_NE(hier->nccl_unsupported_reason(spec, t), "");
}

TEST(Algorithms, TunerPicksNvlsOnlyForMoreThanTwoGpus) {
  // NCCL sets up NVLS only for more than two GPUs (v2.21.5-1 ncclNvlsInit), on a whole node or part of one.
  // NCCL's tuner (sim/nccl_tuner.h) rates NVLS on n GPUs of a DGX H100 (18 x 20.6 = 370.8 GB/s per GPU) at n
  // channels of the fastest speed s with (n + 1) s <= 370.8, times 5/6, and the ring at its 12 channels of
  // 30 GB/s times n / (2 (n - 1)): at 4 GiB NVLS wins from 5 GPUs on (5 x 60 x 5/6 = 250 against 360 x 5/8 =
  // 225 GB/s; 6: 6 x 50 -> 250 against 216; 8: 8 x 40 -> 266.7 against 205.7) and loses on 3 and 4 (4 x 60
  // x 5/6 = 200 against 360 x 4/6 = 240).
  const hw::Topology t = hw::load_system(test::preset("dgx-h100.yaml"));
  for (double bytes : {1024.0, 1048576.0, 1073741824.0})
    EXPECT_NE(run(t, CollectiveOp::kAllReduce, range(0, 2), bytes, "auto", std::nullopt).algorithm, "nvls");
  const double four_gib = 4.0 * (1 << 30);
  for (int n : {3, 4})
    EXPECT_EQ(run(t, CollectiveOp::kAllReduce, range(0, n), four_gib, "auto", std::nullopt).algorithm, "ring")
        << n;
  for (int n : {5, 6, 8})
    EXPECT_EQ(run(t, CollectiveOp::kAllReduce, range(0, n), four_gib, "auto", std::nullopt).algorithm, "nvls")
        << n;
  const auto* nvls = AlgorithmRegistry::instance().find("nvls");
  CollectiveSpec spec;
  spec.bytes = 1 << 30;
  spec.group = range(0, 2);
  EXPECT_NE(nvls->unsupported_reason(spec, t), "");
  spec.group = range(0, 3);
  EXPECT_EQ(nvls->unsupported_reason(spec, t), "");
}

TEST(Algorithms, MultiNodeTreeBroadcastAndReduceUseEveryNic) {
  // 2 DGX-H100 (8 NICs of ~48 GB/s per node). Each channel's tree leaves the root's node through its own
  // GPU's NIC, so broadcast moves S through 8 NICs: algbw -> 8 x NIC (the ring's chain does the same); it
  // was one NIC (45.65 GB/s) when every channel went through the root GPU.
  const hw::Topology t = hw::load_system(test::preset("dgx-h100.yaml"), hw::LoadOptions{2});
  const double nic = t.route_bandwidth(0, 8);  // GPU -> NIC -> network -> NIC -> GPU: the NIC's rate
  for (auto op : {CollectiveOp::kBroadcast, CollectiveOp::kReduce}) {
    const auto tree = run(t, op, range(0, 16), 1 << 30, "tree");
    const auto ring = run(t, op, range(0, 16), 1 << 30, "ring");
    EXPECT_GT(tree.algbw, 0.8 * 8 * nic) << op_name(op);
    EXPECT_LT(tree.algbw, 8 * nic * 1.01) << op_name(op);
    EXPECT_GT(tree.algbw, 0.8 * ring.algbw) << op_name(op);
  }
}

TEST(Algorithms, Dgx1TreeChainsFollowNvlink) {
  // DGX-1: 6 NVLink2 links of 20 GB/s per GPU. Every chain follows a Hamiltonian NVLink cycle, so the tree
  // all-reduce's bus bandwidth approaches the links' 120 GB/s (it was 18.7 GB/s with chains over PCIe/QPI):
  // each tree pair loads both directions of its path's links with S/C each, 12 trees over 3 cycles.
  const hw::Topology t = hw::load_system(test::preset("dgx1-v100.yaml"));
  const auto tree = run(t, CollectiveOp::kAllReduce, range(0, 8), 1 << 30, "tree");
  EXPECT_GT(tree.busbw, 0.75 * 120e9);
  EXPECT_LT(tree.busbw, 120e9 * 1.01);
}

TEST(Algorithms, TreeChainOverPartOfAnNvlinkRingSkipsTheRingsPcieHop) {
  // 8 GPUs on an NVLink ring (20 GB/s per direction), 4 on each of two PCIe switches (4 GB/s). GPUs 0-3 are
  // an NVLink path whose ring closes 3 -> 0 over PCIe. NCCL's ring must take that hop; its tree chain need
  // not (the tree graph's chain does not close), so it runs 0-1-2-3 on NVLink in both trees of a pair.
  const hw::Topology t = hw::load_system_from_string(R"(name: nvlink-ring8
gpu: v100-sxm2
node:
  gpus: 8
  fabric: {wiring: ring, link: {kind: nvlink2, bandwidth: 20 GB/s, efficiency: 1.0}}
  host: {cpus: 1, pcie_switches: 2, pcie: {kind: pcie3, bandwidth: 4 GB/s, efficiency: 1.0}}
)",
                                                     "nvlink-ring8.yaml");
  const double S = 1 << 30;
  // Tree: every chain link carries S up one way and S down the other, so the time is S / 20 GB/s plus the
  // pipeline fill; algbw approaches 20 GB/s (8 GB/s before, when the mirror trees' chains 0-3-2-1 took the
  // PCIe hop with half of S).
  const auto tree = run(t, CollectiveOp::kAllReduce, range(0, 4), S, "tree");
  EXPECT_GT(tree.algbw, 0.95 * 20e9);
  EXPECT_LT(tree.algbw, 20e9);
  // Ring: the PCIe hop carries 2(n-1)/n S, so busbw is at most 4 GB/s.
  const auto ring = run(t, CollectiveOp::kAllReduce, range(0, 4), S, "ring");
  EXPECT_LT(ring.busbw, 4e9 * 1.001);
  EXPECT_GT(ring.busbw, 0.95 * 4e9);
  // Over the whole node the ring closes on NVLink, every hop alike: the chains are unchanged.
  const auto whole = run(t, CollectiveOp::kAllReduce, range(0, 8), S, "tree");
  EXPECT_GT(whole.algbw, 0.95 * 20e9);
}

TEST(Algorithms, RingsUseEveryLinkOfFourGpusWithOneLinkPerPair) {
  // 4 H100, one NVLink4 link (25 GB/s x 20.6/25 = 20.6 GB/s per direction) per pair. A GPU has 3 links, but
  // 3 rings cannot load them evenly: each of K4's 3 undirected Hamiltonian cycles uses 4 of its 6 links. All
  // 3 cycles run both ways (6 rings at S/6) put 2 rings on every link direction, so every GPU sends at
  // 3 x 20.6 GB/s and the ring all-reduce approaches busbw 61.8 GB/s; before, 3 rings reached 30.9 GB/s.
  const hw::Topology t = test::fully_connected4(1);
  const double S = 8.0 * (1 << 30);
  const auto ring = run(t, CollectiveOp::kAllReduce, range(0, 4), S, "ring");
  EXPECT_NEAR(ring.busbw, 3 * 20.6e9, 0.01 * 3 * 20.6e9);
  // An explicit channel count is kept: 3 rings, and the busiest link carries two of them.
  CollectiveRequest req;
  req.spec.group = range(0, 4);
  req.spec.bytes = S;
  req.spec.channels = 3;
  req.algorithm = "ring";
  req.auto_protocol = false;
  const auto three = run_collective(t, req);
  EXPECT_NEAR(three.busbw, 1.5 * 20.6e9, 0.01 * 1.5 * 20.6e9);
}

TEST(Algorithms, OneRankCollectivesAreALocalCopy) {
  // nccl-tests on one GPU: busbw factor 0; NCCL copies the out-of-place buffer on the device, S read and S
  // written at HBM bandwidth, after the launch.
  const hw::Topology t = hw::load_system(test::preset("dgx-a100.yaml"));
  const double S = 1 << 30;
  const auto r = run(t, CollectiveOp::kAllReduce, {3}, S, "ring");
  EXPECT_NEAR(r.seconds, 8.4e-6 + 2 * S / t.gpu().hbm_bandwidth, 1e-9);
  EXPECT_EQ(r.busbw, 0);
  EXPECT_LT(r.algbw, t.gpu().hbm_bandwidth);
}

TEST(Algorithms, SendRecvOverTheWholeSystemIsARingOfSends) {
  // nccl-tests' sendrecv_perf: rank i sends S to i+1 and receives from i-1, all at once. Across 2 DGX-A100
  // nodes, GPU 7 -> 8 and 15 -> 0 cross the network (one NIC each way), the rest use NVSwitch ports.
  const hw::Topology t = hw::load_system(test::preset("dgx-a100.yaml"), hw::LoadOptions{2});
  const double S = 1 << 28;
  const auto r = run(t, CollectiveOp::kSendRecv, range(0, 16), S, "auto", std::nullopt);
  EXPECT_EQ(r.algorithm, "direct");
  const double slowest = std::min(t.route_bandwidth(7, 8), t.route_bandwidth(0, 1));
  EXPECT_GT(r.seconds, S / slowest);
  EXPECT_LT(r.seconds, S / slowest * 1.05 + 50e-6);
  EXPECT_NEAR(r.busbw, r.algbw, 1e-9 * r.algbw);  // factor 1
}

TEST(Algorithms, CollectiveTableColumnsStayAlignedAtLongTimes) {
  experiments::SweepConfig cfg;
  experiments::SweepRow fast{1024, 256, "ring", Protocol::kLL, 12.3456e-6, 1e9, 2e9};
  experiments::SweepRow slow{8589934592.0, 2147483648.0, "ring", Protocol::kSimple,
                             123456.7e-6,  7e10,         1.2e11};
  const std::string a = experiments::table_row(cfg, fast), b = experiments::table_row(cfg, slow);
  EXPECT_EQ(a.find("ring"), b.find("ring")) << a << b;
  // nccl-tests' precision: 2 decimals below 100 us, none at >= 10,000 us.
  EXPECT_NE(a.find("12.35"), std::string::npos) << a;
  EXPECT_NE(b.find(" 123457 "), std::string::npos) << b;
}

}  // namespace strata::sim

namespace strata::sim {

// NCCL's LL ceiling (llMaxBws, src/graph/tuning.cc): a bandwidth-bound ring LL all-reduce reaches that bus
// bandwidth and no more, whatever its links allow. One node by GPU generation, several nodes by host CPU
// (the presets' cpu_vendor: DGX A100 AMD, DGX H100 Intel). Latencies are tens of microseconds against
// 10-30 ms, so busbw is the ceiling to 1%.
TEST(Algorithms, RingLowLatencyProtocolStopsAtNcclsBandwidthCeiling) {
  struct Case {
    const char* preset;
    int nodes;
    double ceiling_gbps;
  };
  for (const Case& c :
       {Case{"dgx1-v100.yaml", 1, 39.0}, Case{"dgx-a100.yaml", 1, 87.7}, Case{"dgx-h100.yaml", 1, 141.0},
        Case{"dgx-a100.yaml", 2, 22.5}, Case{"dgx-a100.yaml", 4, 19.0}, Case{"dgx-h100.yaml", 2, 39.0},
        Case{"dgx-h100.yaml", 4, 20.4}}) {
    const hw::Topology t = hw::load_system(test::preset(c.preset), hw::LoadOptions{c.nodes});
    const auto r =
        run(t, CollectiveOp::kAllReduce, range(0, t.num_gpus()), 256.0 * (1 << 20), "ring", Protocol::kLL);
    EXPECT_LE(r.busbw, c.ceiling_gbps * 1e9) << c.preset << " x" << c.nodes;
    EXPECT_GT(r.busbw, 0.99 * c.ceiling_gbps * 1e9) << c.preset << " x" << c.nodes;
    // Simple has no such ceiling: on one DGX A100 it runs at the NVSwitch port's pace, far above.
    if (c.nodes == 1 && std::string(c.preset) == "dgx-a100.yaml") {
      EXPECT_GT(run(t, CollectiveOp::kAllReduce, range(0, 8), 256.0 * (1 << 20), "ring").busbw, 200e9);
    }
  }
  // The tree's LL has the same ceiling on bus bandwidth: its algorithm bandwidth is at most half of it (the
  // tuner's tree ratio), so nccl-tests' busbw = algbw x 2(n-1)/n stays under ceiling x (n-1)/n; the pipeline
  // fill of 32 KiB chunks (well under 5% here) keeps it a little lower.
  const hw::Topology a2 = hw::load_system(test::preset("dgx-a100.yaml"), hw::LoadOptions{2});
  const auto tree = run(a2, CollectiveOp::kAllReduce, range(0, 16), 256.0 * (1 << 20), "tree", Protocol::kLL);
  EXPECT_LE(tree.busbw, 22.5e9 * 15 / 16);
  EXPECT_GT(tree.busbw, 0.95 * 22.5e9 * 15 / 16);
}

// NCCL rates the tree's LL at 1/3.8 of its Simple bandwidth and its LL128 at 7/9 on one node and 120/128
// across nodes (tuning.cc). With 4,096 chunks per tree (the pipeline's fill, at most 17 chunks of the
// 2-node tree's, is under 0.5% of the time whatever its unit) and 8 GiB (fixed latencies under 0.2%), the
// times are in those ratios; LL's ceiling (141 GB/s on Hopper) does not bind at the ~85 GB/s busbw tree LL
// reaches on one DGX H100.
TEST(Algorithms, TreeLowLatencyProtocolsRunAtNcclsRatingOfThem) {
  const auto tree_time = [](const hw::Topology& t, Protocol p) {
    CollectiveRequest req;
    req.spec.op = CollectiveOp::kAllReduce;
    req.spec.group = range(0, t.num_gpus());
    req.spec.bytes = 8.0 * (1 << 30);
    req.spec.protocol = p;
    req.spec.pipeline_chunks = 4096;
    req.algorithm = "tree";
    return run_collective(t, req).seconds;
  };
  const hw::Topology one = hw::load_system(test::preset("dgx-h100.yaml"));
  const double simple = tree_time(one, Protocol::kSimple);
  EXPECT_NEAR(tree_time(one, Protocol::kLL) / simple, 3.8, 0.01 * 3.8);
  EXPECT_NEAR(tree_time(one, Protocol::kLL128) / simple, 9.0 / 7.0, 0.01 * 9.0 / 7.0);
  const hw::Topology two = hw::load_system(test::preset("dgx-h100.yaml"), hw::LoadOptions{2});
  EXPECT_NEAR(tree_time(two, Protocol::kLL128) / tree_time(two, Protocol::kSimple), 128.0 / 120.0,
              0.01 * 128.0 / 120.0);
}

// NCCL's channels per call (getChannnelThreadInfo): a channel is dropped while bytes < channels x threads x
// threshold. Simple: 512 threads x 64 B = 32 KiB per channel (256 x 64 B = 16 KiB for a ring without NVLink);
// LL128: 640 x 8 B = 5,120 B; tree LL 512 x 8 B = 4 KiB; ring LL 512 x 8 B x ranks.
TEST(Algorithms, NcclDropsChannelsForSmallMessages) {
  using nccl::Family;
  EXPECT_EQ(nccl::call_channels(24, 768 * 1024.0, Family::kRing, Protocol::kSimple, 8, true), 24);
  EXPECT_EQ(nccl::call_channels(24, 768 * 1024.0 - 1, Family::kRing, Protocol::kSimple, 8, true), 23);
  EXPECT_EQ(nccl::call_channels(24, 64 * 1024.0, Family::kRing, Protocol::kSimple, 8, true), 2);
  EXPECT_EQ(nccl::call_channels(24, 1024.0, Family::kRing, Protocol::kSimple, 8, true), 1);
  EXPECT_EQ(nccl::call_channels(24, 64 * 1024.0, Family::kRing, Protocol::kSimple, 8, false), 4);
  EXPECT_EQ(nccl::call_channels(24, 100 * 1024.0, Family::kRing, Protocol::kLL, 8, true), 3);
  EXPECT_EQ(nccl::call_channels(24, 100 * 1024.0, Family::kRing, Protocol::kLL, 16, true), 1);
  EXPECT_EQ(nccl::call_channels(24, 50000, Family::kRing, Protocol::kLL128, 8, true), 9);
  EXPECT_EQ(nccl::call_channels(24, 10000, Family::kTree, Protocol::kLL, 8, true), 2);
  EXPECT_EQ(nccl::call_channels(16, 1024.0, Family::kNvls, Protocol::kSimple, 8, true), 16);
  // In the simulator: across two DGX H100 (8 channels, one per NIC) a 96 KiB Simple ring keeps 3 channels,
  // so 3 NICs of each node carry it, and from 256 KiB all 8 do.
  const hw::Topology t = hw::load_system(test::preset("dgx-h100.yaml"), hw::LoadOptions{2});
  const auto nics_used = [&](double bytes) {
    const auto r = run(t, CollectiveOp::kAllReduce, range(0, 16), bytes, "ring");
    int used = 0;
    for (std::size_t l = 0; l < t.links().size(); ++l) {
      const auto& link = t.links()[l];
      if (t.vertices()[static_cast<std::size_t>(link.src)].kind == hw::VertexKind::kNic &&
          t.vertices()[static_cast<std::size_t>(link.src)].node == 0 &&
          t.vertices()[static_cast<std::size_t>(link.dst)].kind == hw::VertexKind::kNetSwitch &&
          r.sim.link_bytes[l] > 0)
        ++used;
    }
    return used;
  };
  EXPECT_EQ(nics_used(96 * 1024.0), 3);
  EXPECT_EQ(nics_used(256 * 1024.0), 8);
}

// NCCL's double binary tree (src/graph/trees.cc), against the three trees its comments draw: the first tree
// on 14 ranks, the mirror on 12 and the shift on 13.
TEST(Algorithms, TreesAcrossNodesAreNcclsDoubleBinaryTree) {
  const auto parents = [](int n, int which, std::initializer_list<std::pair<int, int>> child_parent) {
    const auto p = algorithms::nccl_tree_parents(n, which);
    int roots = 0;
    for (int x : p) roots += x < 0;
    EXPECT_EQ(roots, 1) << n << " " << which;
    for (const auto& [child, parent] : child_parent)
      EXPECT_EQ(p[static_cast<std::size_t>(child)], parent) << n << " " << which << " position " << child;
  };
  parents(14, 0,
          {{0, -1},
           {8, 0},
           {4, 8},
           {12, 8},
           {2, 4},
           {6, 4},
           {10, 12},
           {13, 12},
           {1, 2},
           {3, 2},
           {5, 6},
           {7, 6},
           {9, 10},
           {11, 10}});
  parents(
      12, 1,
      {{11, -1}, {3, 11}, {1, 3}, {7, 3}, {0, 1}, {2, 1}, {5, 7}, {9, 7}, {4, 5}, {6, 5}, {8, 9}, {10, 9}});
  parents(13, 1,
          {{1, -1},
           {9, 1},
           {5, 9},
           {0, 9},
           {3, 5},
           {7, 5},
           {11, 0},
           {2, 3},
           {4, 3},
           {6, 7},
           {8, 7},
           {10, 11},
           {12, 11}});
  // Two nodes: each tree is one edge, the second reversed.
  parents(2, 0, {{0, -1}, {1, 0}});
  parents(2, 1, {{1, -1}, {0, 1}});
}

// What the tree's shape does: four ranks, one per node, all behind one NIC each (P2's GCP A100 nodes). In
// NCCL's pair of trees over four nodes (0 -> 2 -> {1, 3} and 3 -> 1 -> {2, 0}), nodes 1 and 2 are interior
// in one tree, with a parent and two children, and a leaf in the other: their NIC sends half the data up
// and twice half down in one tree, and half up in the other, 2S in all, where the ring sends 2(n-1)/n S =
// 1.5 S. Both are NIC-bound at 8 GiB, so the tree takes 4/3 of the ring's time. (A heap-ordered pair of trees
// would send 1.5 S through every NIC and tie with the ring; P2's Appendix A measured the tree 1.38-1.60x
// slower than the ring in such cases.)
TEST(Algorithms, FourNodeTreeSendsTwiceTheDataThroughTheNicsOfItsInteriorNodes) {
  const hw::Topology t = hw::load_system(test::preset("gcp-a100x16.yaml"), hw::LoadOptions{4});
  const std::vector<hw::Rank> one_per_node{0, 16, 32, 48};
  const double bytes = 8.0 * (1 << 30);
  const auto ring = run(t, CollectiveOp::kAllReduce, one_per_node, bytes, "ring");
  const auto tree = run(t, CollectiveOp::kAllReduce, one_per_node, bytes, "tree");
  EXPECT_NEAR(tree.seconds / ring.seconds, 4.0 / 3.0, 0.02 * 4.0 / 3.0);
  // The NIC's 8 GB/s sets both: the ring's 1.5 S and the tree's 2 S (pipeline fill adds under 1%).
  EXPECT_NEAR(ring.seconds, 1.5 * bytes / 8e9, 0.01 * 1.5 * bytes / 8e9);
  EXPECT_NEAR(tree.seconds, 2.0 * bytes / 8e9, 0.02 * 2.0 * bytes / 8e9);
}

// strata's own estimate against the simulator: over every preset system on 1, 2 and 4 nodes, full / half-node
// / cross-node groups and sizes from 8 B to 8 GiB, `best`'s simulated time is within 10% of the fastest
// eligible (algorithm, protocol) pair's simulated time. (`auto` is NCCL's choice by NCCL's own model, which
// need not be the fastest in the simulator, or on the machine: sim_nccl_tuner_test.cc.)
TEST(Algorithms, BestPicksWithinTenPercentOfTheFastestSimulatedAlgorithm) {
  int checked = 0;
  std::string misses;
  for (const char* preset : {"dgx1-v100.yaml", "dgx-a100.yaml", "dgx-h100.yaml", "gcp-a100x16.yaml",
                             "gcp-v100x8.yaml", "pcie-4gpu.yaml"})
    for (int nodes : {1, 2, 4}) {
      const hw::Topology t = hw::load_system(test::preset(preset), hw::LoadOptions{nodes});
      const int per = t.gpus_per_node();
      std::vector<std::pair<std::string, std::vector<hw::Rank>>> groups{{"full", range(0, t.num_gpus())},
                                                                        {"half node", range(0, per / 2)}};
      if (nodes > 1) {
        std::vector<hw::Rank> cross;
        for (int n = 0; n < nodes; ++n)
          for (int i = 0; i < per / 2; ++i) cross.push_back(n * per + i);
        groups.emplace_back("half of each node", cross);
      }
      for (const auto& [gname, group] : groups)
        for (auto op : {CollectiveOp::kAllReduce, CollectiveOp::kBroadcast, CollectiveOp::kAllGather})
          for (double bytes : {8.0, 65536.0, 524288.0, 1048576.0, 16777216.0, 134217728.0, 8589934592.0}) {
            CollectiveSpec spec;
            spec.op = op;
            spec.group = group;
            spec.bytes = bytes;
            double best = 1e300;
            std::string best_name;
            for (const auto& e : nccl::estimate_all(t, spec, {}, nccl::Candidates::kAll)) {
              const auto r = run(t, op, group, bytes, e.algorithm, e.protocol);
              if (r.seconds < best) {
                best = r.seconds;
                best_name = fmt::format("{}/{}", e.algorithm, protocol_name(e.protocol));
              }
            }
            const auto a = run(t, op, group, bytes, "best", std::nullopt);
            ++checked;
            if (a.seconds > 1.10 * best)
              misses += fmt::format("{} x{} {} {} {} B: best {}/{} {:.2f} us, fastest {} {:.2f} us ({:.2f}x)\n",
                                    preset, nodes, gname, op_name(op), bytes, a.algorithm,
                                    protocol_name(a.protocol), a.seconds * 1e6, best_name, best * 1e6,
                                    a.seconds / best);
          }
    }
  EXPECT_GT(checked, 300);
  EXPECT_EQ(misses, "");
}

}  // namespace strata::sim
