// NCCL's own choice (sim/nccl_tuner.h): the graphs NCCL's search builds on the presets against NCCL's logs
// and our reading of its search, its tuner's times against times NCCL printed, and `--algo auto`'s picks
// against the choices NCCL logged and against its cost model worked by hand (NVIDIA/nccl v2.21.5-1
// src/graph/tuning.cc).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "hw/system_loader.h"
#include "sim/nccl_model.h"
#include "sim/nccl_tuner.h"
#include "test_systems.h"

namespace strata::sim::nccl {
namespace {

TunerModel model_of(const std::string& preset, int nodes = 1) {
  const hw::Topology t = hw::load_system(test::preset(preset), hw::LoadOptions{nodes});
  std::string why;
  const auto m = tuner_model(t, t.all_ranks(), &why);
  EXPECT_TRUE(m.has_value()) << why;
  return m.value_or(TunerModel{});
}

void expect_graph(const TopoGraph& g, int channels, double bw_intra, double bw_inter, const char* what) {
  EXPECT_EQ(g.channels, channels) << what;
  EXPECT_DOUBLE_EQ(g.bw_intra, bw_intra) << what;
  EXPECT_DOUBLE_EQ(g.bw_inter, bw_inter) << what;
}

std::string front(const hw::Topology& t, double bytes) {
  CollectiveSpec spec;
  spec.op = CollectiveOp::kAllReduce;
  spec.group = t.all_ranks();
  spec.bytes = bytes;
  const auto e = estimate_all(t, spec);
  return e.empty() ? "none" : e.front().algorithm + "/" + std::string(protocol_name(e.front().protocol));
}

}  // namespace

// NCCL printed its tuner's times on 3 nodes of 8 H100 (github.com/NVIDIA/nccl/issues/1453, NCCL_DEBUG=INFO:
// "16777216 Bytes -> Algo 5 proto 2 time 262.715210", "33554432 Bytes -> Algo 5 proto 2 time 472.430389";
// algorithm 5 is NVLS-Tree, protocol 2 Simple). Two sizes fix the bandwidth, 16 MiB / 209.715 us = 80 GB/s
// (channels x min(bwIntra, bwInter / 2) x 5/6 from 3 nodes, e.g. 8 x 12 x 5/6), and leave the latency to
// check: 25 us on NVLink plus 2 x log2(3 nodes) x 14 us on the network = 53 us, to NCCL's printed digits.
TEST(NcclTuner, ReproducesTheTimesNcclPrintedForNvlsTree) {
  TunerModel m;
  m.ranks = 24;
  m.nodes = 3;
  m.gpus_per_node = 8;
  m.compute_capability = 90;
  m.nvlink = true;
  m.ring = m.tree = {8, 24, 24};
  m.comm_channels = 16;
  m.nvls = {8, 40, 24};
  EXPECT_NEAR(*tuner_time(m, Family::kNvlsTree, Protocol::kSimple, CollectiveOp::kAllReduce, 16777216) * 1e6,
              262.715210, 1e-4);
  EXPECT_NEAR(*tuner_time(m, Family::kNvlsTree, Protocol::kSimple, CollectiveOp::kAllReduce, 33554432) * 1e6,
              472.430389, 1e-4);
  // NCCL runs NVLS and NVLS-Tree only with Simple, and NVLS not across nodes (without CollNet).
  EXPECT_TRUE(std::isinf(*tuner_time(m, Family::kNvlsTree, Protocol::kLL128, CollectiveOp::kAllReduce, 1e6)));
  EXPECT_TRUE(std::isinf(*tuner_time(m, Family::kNvls, Protocol::kSimple, CollectiveOp::kAllReduce, 1e6)));
  // Point-to-point operations are not the tuner's.
  EXPECT_FALSE(tuner_time(m, Family::kRing, Protocol::kSimple, CollectiveOp::kAllToAll, 1e6).has_value());
}

// The graphs NCCL's search leaves on the presets (speeds from its ladders, channels until they carry a GPU's
// bandwidth, then ncclTopoDupChannels), and the communicator's channels (twice the ring's), where NCCL's logs
// show them.
TEST(NcclTuner, GraphsOfThePresets) {
  // DGX A100: 12 NVLink3 x 20 GB/s = 240: 6 channels of 40 reach it; doubled to 12 of 20; 24 channels (an
  // HGX A100's log prints "Channel 23/24", github.com/NVIDIA/nccl-tests/issues/100). The tree takes the
  // ring's 12 channels at the fastest speed they fit, 20.
  TunerModel a100 = model_of("dgx-a100.yaml");
  expect_graph(a100.ring, 12, 20, 20, "A100 ring");
  expect_graph(a100.tree, 12, 20, 20, "A100 tree");
  EXPECT_EQ(a100.nvls.channels, 0);
  EXPECT_EQ(a100.comm_channels, 24);
  // DGX H100: 18 x 20.6 = 370.8: 6 x 60 = 360 is the most (7 x 50, 9 x 40, 12 x 30 are no more), doubled to
  // 12 x 30 (60 >= 50); NVLS: 8 heads at the fastest s with 9 s <= 370.8, 40.
  TunerModel h100 = model_of("dgx-h100.yaml");
  expect_graph(h100.ring, 12, 30, 30, "H100 ring");
  expect_graph(h100.tree, 12, 30, 30, "H100 tree");
  expect_graph(h100.nvls, 8, 40, 40, "H100 NVLS");
  // H800: 8 NVLink4 links, 164.8 GB/s: 4 x 40 = 160, doubled (4 channels, not more than 4) to 8 x 20: "16
  // coll channels" in an H800's log (github.com/NVIDIA/nccl/issues/892).
  std::ifstream in(test::preset("dgx-h100.yaml"));
  std::stringstream text;
  text << in.rdbuf();
  std::string yaml = text.str();
  yaml.replace(yaml.find("links_per_gpu: 18"), 17, "links_per_gpu: 8");
  const hw::Topology h800 = hw::load_system_from_string(yaml, "h800");
  const auto m800 = tuner_model(h800, h800.all_ranks());
  ASSERT_TRUE(m800.has_value());
  expect_graph(m800->ring, 8, 20, 20, "H800 ring");
  EXPECT_EQ(m800->comm_channels, 16);
  // Two DGX H100: a channel per NIC at the GPU-NIC path's 48 GB/s (NDR port 50, PCIe Gen5 x16 48; an H100
  // log prints "maxBw 48.0", github.com/NVIDIA/nccl/issues/1189); 8 x 48 = 384 reaches the GPU's 370.8, no
  // doubling below 50 GB/s; NVLS keeps 40 inside the node and raises the network to 48.
  TunerModel h100x2 = model_of("dgx-h100.yaml", 2);
  expect_graph(h100x2.ring, 8, 48, 48, "2 x H100 ring");
  expect_graph(h100x2.tree, 8, 48, 48, "2 x H100 tree");
  expect_graph(h100x2.nvls, 8, 40, 48, "2 x H100 NVLS");
  EXPECT_EQ(h100x2.comm_channels, 16);
  // Two DGX A100: HDR 25 and PCIe Gen4 24: 8 x 24; the tree's second pass raises its NVLink speed to 30
  // (8 x 30 = 240 fits, 8 x 48 does not).
  TunerModel a100x2 = model_of("dgx-a100.yaml", 2);
  expect_graph(a100x2.ring, 8, 24, 24, "2 x A100 ring");
  expect_graph(a100x2.tree, 8, 30, 24, "2 x A100 tree");
}

// GPUs wired to each other: NCCL's rings follow the direct NVLinks, each ring taking its speed off every
// directed link it crosses (V100's NVLink is rated 20 GB/s a link, P100's 18), at the first speed of the
// ladder 40, 30, 20, 18, 15, 12, 10, 9, ... where the rings reach the GPU's total, or where going further
// would halve the best.
TEST(NcclTuner, RingsFollowTheNvlinksOfGpusWiredToEachOther) {
  // DGX-1V: 6 links a GPU (120 GB/s). At 40 and 30 only the double links carry a ring, and they form one
  // Hamiltonian cycle (0-3-2-1-5-6-7-4), run both ways: 2 channels. At 20 the six links of every GPU carry
  // six rings, 6 x 20 = 120, done; no doubling below 25 GB/s; the communicator doubles them to 12.
  TunerModel dgx1 = model_of("dgx1-v100.yaml");
  expect_graph(dgx1.ring, 6, 20, 20, "DGX-1 ring");
  expect_graph(dgx1.tree, 6, 20, 20, "DGX-1 tree");
  EXPECT_EQ(dgx1.comm_channels, 12);
  // GPUs 0-3 of a DGX-1: links 0-1, 0-2, 1-3 single, 0-3, 1-2, 2-3 double; GPUs 2 and 3 have 100 GB/s to
  // the others. No ring of double links (40, 30); at 20 GPU 0's four link units carry 4 rings (80); 18 and
  // 15 give the same 4, 12 at most five (60), 10 at most eight (80, no more than 4 x 20), and 9 is under
  // 0.49 of 20.
  const hw::Topology t = hw::load_system(test::preset("dgx1-v100.yaml"));
  const auto quad = tuner_model(t, std::vector<hw::Rank>{0, 1, 2, 3});
  ASSERT_TRUE(quad.has_value());
  expect_graph(quad->ring, 4, 20, 20, "DGX-1 GPUs 0-3 ring");
  // Four V100 with two NVLinks between every pair: NCCL dumped 6 ring channels (github.com/NVIDIA/nccl/
  // issues/713, at the older ladder's 22 GB/s). At 40 each directed link holds one ring, and the complete
  // directed graph on 4 vertices has no 3 arc-disjoint Hamiltonian cycles (no Hamiltonian decomposition for
  // n = 4; Bermond & Faber 1976, Tillson 1980): 2 rings, 80 < 120; at 20 six, 120.
  const hw::Topology four = hw::load_system_from_string(R"(
name: four-v100
gpu: v100-sxm2
nodes: 1
node:
  gpus: 4
  fabric: {wiring: fully-connected, link: nvlink2, links_per_pair: 2}
  host: {cpus: 1, pcie_switches: 2, pcie: pcie3}
  nics: {count: 1, link: ib-edr}
network: {wiring: fat-tree}
)",
                                                        "four-v100");
  const auto m4 = tuner_model(four, four.all_ranks());
  ASSERT_TRUE(m4.has_value());
  expect_graph(m4->ring, 6, 20, 20, "4 x V100 ring");
  // FlexFlow's P100 node (4 GPUs, one NVLink 1 per pair, 18 GB/s): the same 2 rings at 18 (36 < 54), down
  // the ladder while above 0.49 of 18, to 9, where every link holds 2: 6 x 9 = 54.
  expect_graph(model_of("flexflow-p100.yaml").ring, 6, 9, 9, "P100 ring");
  // Several such nodes: the rings through their NICs are not reproduced (strata's estimate stays).
  const hw::Topology gcp = hw::load_system(test::preset("gcp-v100x8.yaml"), hw::LoadOptions{2});
  std::string why;
  EXPECT_FALSE(tuner_model(gcp, gcp.all_ranks(), &why).has_value());
  EXPECT_NE(why.find("NICs"), std::string::npos) << why;
}

// One DGX H100: NCCL logged ring/LL from 8 B to 1 MB and NVLS/Simple from 2 MB to 16 GB (NCCL_DEBUG_SUBSYS=
// TUNING on 8 H100, github.com/NVIDIA/nccl-tests/issues/309). By its model at 1 MiB: ring LL 15 us + 1 MiB at
// min(141, 360 x 0.5) x 8/14 = 80.6 GB/s, 28.0 us, against NVLS 25 us + 1 MiB at 266.7 GB/s, 28.9 us; at 2
// MiB 41.0 against 32.9.
TEST(NcclTuner, PicksWhatNcclLoggedOnOneDgxH100) {
  const hw::Topology t = hw::load_system(test::preset("dgx-h100.yaml"));
  for (double bytes : {8.0, 65536.0, 1048576.0}) EXPECT_EQ(front(t, bytes), "ring/ll") << bytes;
  for (double bytes : {2097152.0, 16777216.0, 1073741824.0, 17179869184.0})
    EXPECT_EQ(front(t, bytes), "nvls/simple") << bytes;
}

// Eight DGX H100 (64 GPUs), worked by hand from the graphs above. NVLS-Tree from 3 nodes: 8 x min(40, 48 / 2)
// x 5/6 = 160 GB/s after 25 + 2 x 3 x 14 = 109 us. Tree LL128: 8 x 48 x 0.92 = 353.3, capped at 8 x 36.0 =
// 288, x 120/128 = 270 capped at 8 x 29.0 = 232, x 0.5 = 116 GB/s, x 0.9 at 16 MiB (its size correction),
// after 14 + 2 (7 x 1.25 + 3 x 8.5) = 82.5 us. Ring Simple: 8 x 48 x 64/126 = 195.05 GB/s after (8.4 + 110 x
// 3.4 + 16 x 14) x 1.4 = 848.96 us. So NCCL runs NVLS-Tree from 8 MiB to 512 MiB and the ring from 1 GiB,
// where strata's estimate had picked the LL128 tree and ring at 16-128 MiB (docs/fidelity.md §6.8).
TEST(NcclTuner, EightDgxH100RunNvlsTreeUpToHalfAGigabyte) {
  const TunerModel m = model_of("dgx-h100.yaml", 8);
  const auto us = [&](Family f, Protocol p, double bytes) {
    return *tuner_time(m, f, p, CollectiveOp::kAllReduce, bytes) * 1e6;
  };
  // NCCL's figures (2.21 tuning.cc): 8 graph channels of 48 GB/s (NVLS 40 inside the node), 8 GPUs a node,
  // log2(8 nodes) = 3 network levels, Hopper's per-channel caps from 3 nodes: tree 36.0, tree LL128 29.0.
  const double channels = 8, net = 48, nvlink = 40, levels = 3, ranks = 64;
  const double nvls_tree_bw = channels * std::min(nvlink, net / 2) * 5 / 6;  // 160 GB/s
  const double nvls_tree_lat = 25 + 2 * levels * 14;                         // 109 us
  const double tree_ll128_bw =
      std::min(std::min(channels * net * 0.92, channels * 36.0) * 120 / 128, channels * 29.0) * 0.5;  // 116
  const double tree_ll128_lat = 14 + 2 * (7 * 1.25 + levels * 8.5);                    // 82.5 us
  const double ring_bw = channels * net * ranks / (2 * (ranks - 1));                   // 195.05 GB/s
  const double ring_lat = (8.4 + (2 * (ranks - 1) - 2 * 8) * 3.4 + 2 * 8 * 14) * 1.4;  // 848.96 us
  EXPECT_DOUBLE_EQ(nvls_tree_bw, 160);
  EXPECT_DOUBLE_EQ(tree_ll128_bw, 116);
  EXPECT_NEAR(us(Family::kNvlsTree, Protocol::kSimple, 16777216),
              nvls_tree_lat + 16777216 / (nvls_tree_bw * 1e3), 1e-6);
  // The tree's size correction at 16 MiB (log2(16 MiB / 64) = 18) is 0.9 for LL128.
  EXPECT_NEAR(us(Family::kTree, Protocol::kLL128, 16777216),
              tree_ll128_lat + 16777216 / (tree_ll128_bw * 0.9 * 1e3), 1e-6);
  EXPECT_NEAR(us(Family::kRing, Protocol::kSimple, 1073741824), ring_lat + 1073741824 / (ring_bw * 1e3),
              1e-6);
  const hw::Topology t = hw::load_system(test::preset("dgx-h100.yaml"), hw::LoadOptions{8});
  EXPECT_EQ(front(t, 4 << 20), "tree/ll128");
  for (double bytes : {8388608.0, 16777216.0, 67108864.0, 536870912.0})
    EXPECT_EQ(front(t, bytes), "nvls-tree/simple") << bytes;
  for (double bytes : {1073741824.0, 8589934592.0}) EXPECT_EQ(front(t, bytes), "ring/simple") << bytes;
}

// NVLS-Tree's kernel ceiling as NCCL 2.28+ rates it (src/graph/tuning.cc perChMaxNVLSTreeBws, Hopper {0,
// 57.7, 45.5} for 1 / 2 / 3+ nodes, Blackwell {0, 96.0, 80.0}) times the NVLS graph's channels: one per GPU
// on a DGX H100 (8), as nccl-tests busbw.
TEST(NcclTuner, NvlsTreeCeilingIsPerChannelTimesTheNvlsGraphsChannels) {
  EXPECT_NEAR(nvls_tree_busbw_ceiling(model_of("dgx-h100.yaml", 2)), 8 * 57.7, 1e-9);
  for (int nodes : {3, 4, 8})
    EXPECT_NEAR(nvls_tree_busbw_ceiling(model_of("dgx-h100.yaml", nodes)), 8 * 45.5, 1e-9);
  EXPECT_NEAR(nvls_tree_busbw_ceiling(model_of("dgx-b200.yaml", 2)), 8 * 96.0, 1e-9);
  EXPECT_NEAR(nvls_tree_busbw_ceiling(model_of("dgx-b200.yaml", 4)), 8 * 80.0, 1e-9);
  EXPECT_TRUE(std::isinf(nvls_tree_busbw_ceiling(model_of("dgx-h100.yaml", 1))));  // NVLS-Tree needs 2 nodes
  EXPECT_TRUE(std::isinf(nvls_tree_busbw_ceiling(model_of("dgx-a100.yaml", 2))));  // no NVLS before Hopper
}

}  // namespace strata::sim::nccl
