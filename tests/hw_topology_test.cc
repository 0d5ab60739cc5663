#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <queue>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "hw/system_loader.h"
#include "test_systems.h"

namespace strata::hw {

TEST(Presets, EveryPresetLoadsAndEveryGpuReachesEveryOther) {
  int count = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(STRATA_SOURCE_DIR) + "/configs/hw")) {
    if (entry.path().extension() != ".yaml") continue;
    ++count;
    for (int nodes : {1, 2}) {
      SCOPED_TRACE(entry.path().string());
      const Topology t = load_system(entry.path().string(), LoadOptions{nodes});
      EXPECT_EQ(t.nodes(), nodes);
      for (Rank a = 0; a < t.num_gpus(); ++a)
        for (Rank b = 0; b < t.num_gpus(); ++b)
          if (a != b) {
            EXPECT_FALSE(t.route(a, b).empty()) << a << "->" << b;
          }
    }
  }
  EXPECT_EQ(count, 10);
}

TEST(Presets, NvlinkIsSeenWhereTheNodeIsWiredWithIt) {
  // DGX A100 (NVSwitch) and DGX-1 (direct NVLink) GPUs have NVLink links; the PCIe workstation's do not.
  EXPECT_TRUE(load_system(test::preset("dgx-a100.yaml")).has_nvlink(3));
  EXPECT_TRUE(load_system(test::preset("dgx1-v100.yaml")).has_nvlink(5));
  EXPECT_FALSE(load_system(test::preset("pcie-4gpu.yaml")).has_nvlink(0));
}

TEST(Presets, DgxH100HasPublishedNumbers) {
  const Topology t = load_system(test::preset("dgx-h100.yaml"), LoadOptions{4});
  EXPECT_EQ(t.num_gpus(), 32);
  ASSERT_EQ(t.levels().size(), 2u);
  EXPECT_EQ(t.levels()[0].name, "node");
  EXPECT_EQ(t.levels()[0].count, 4);
  EXPECT_EQ(t.levels()[1].count, 8);
  EXPECT_EQ(t.nics_per_node(), 8);
  EXPECT_TRUE(t.nvls_capable());
  // 18 NVLink4 links x 20.6 GB/s effective (NCCL's SM90 per-link figure) = 370.8 GB/s to any peer.
  EXPECT_NEAR(t.route_bandwidth(0, 1), 370.8e9, 1e6);
  // Inter-node: through GPU 0's own NIC (NDR, 47 GB/s effective) to the peer's NIC.
  EXPECT_NEAR(t.route_bandwidth(0, 8), 47e9, 1e6);
  EXPECT_EQ(t.route_transport(0, 8), Transport::kNet);
  EXPECT_EQ(t.route_transport(0, 1), Transport::kNvlink);
  EXPECT_EQ(t.coordinates(13), (std::vector<int>{1, 5}));
}

TEST(Presets, DgxB200HasPublishedNumbers) {
  const Topology t = load_system(test::preset("dgx-b200.yaml"), LoadOptions{2});
  EXPECT_EQ(t.num_gpus(), 16);
  EXPECT_EQ(t.nics_per_node(), 8);
  EXPECT_TRUE(t.nvls_capable());  // NVLink switch chips since the third generation reduce in the switch
  // 18 NVLink5 links x 40.1 GB/s effective (NCCL's Blackwell per-link figure) = 721.8 GB/s to any peer, twice
  // H100's 370.8.
  EXPECT_NEAR(t.route_bandwidth(0, 1), 721.8e9, 1e6);
  // Inter-node: the same NDR NICs as DGX H100 (400 Gb/s at 94%: 47 GB/s).
  EXPECT_NEAR(t.route_bandwidth(0, 8), 47e9, 1e6);
  // 180 GB usable HBM3e at 8 TB/s; dense bf16 2,250 TFLOP/s (NVIDIA B200 datasheet, the lower end).
  EXPECT_NEAR(t.gpu().hbm_capacity, 180e9, 1);
  EXPECT_NEAR(t.gpu().hbm_bandwidth, 8000e9, 1);
  EXPECT_NEAR(t.gpu().peak_flops(DType::kBf16), 2250e12, 1);
}

TEST(Presets, DgxH200IsDgxH100WithTheH200sMemory) {
  const Topology h200 = load_system(test::preset("dgx-h200.yaml"), LoadOptions{2});
  const Topology h100 = load_system(test::preset("dgx-h100.yaml"), LoadOptions{2});
  EXPECT_EQ(h200.num_gpus(), 16);
  EXPECT_EQ(h200.nics_per_node(), 8);
  EXPECT_TRUE(h200.nvls_capable());
  EXPECT_EQ(h200.route_bandwidth(0, 1), h100.route_bandwidth(0, 1));  // same NVSwitch fabric
  EXPECT_EQ(h200.route_bandwidth(0, 8), h100.route_bandwidth(0, 8));  // same NDR NICs
  // NVIDIA DGX H200 datasheet: 141 GB HBM3e at 4.8 TB/s per GPU; the H100 SXM's dense bf16 989.4 TFLOP/s.
  EXPECT_NEAR(h200.gpu().hbm_capacity, 141e9, 1);
  EXPECT_NEAR(h200.gpu().hbm_bandwidth, 4800e9, 1);
  EXPECT_NEAR(h200.gpu().peak_flops(DType::kBf16), 989.4e12, 1);
}

// FlexFlow's clusters (arXiv 1807.05358, §8) with datasheet numbers written out here: Tesla P100 datasheet
// (10.6 / 21.2 TFLOP/s FP32 / FP16, 732 GB/s HBM2, 16 GB, 4 NVLink 1 links of 20 GB/s), Tesla K80 datasheet
// per board (8.73 TFLOP/s FP32 with boost, 480 GB/s, 24 GB) halved per GK210 GPU.
TEST(Presets, FlexFlowP100ClusterHasDatasheetNumbers) {
  const Topology t = load_system(test::preset("flexflow-p100.yaml"), LoadOptions{4});
  EXPECT_EQ(t.num_gpus(), 16);
  EXPECT_EQ(t.nics_per_node(), 1);
  EXPECT_EQ(t.gpu().name, "p100-sxm2");
  EXPECT_NEAR(t.gpu().peak_flops(DType::kFp32), 10.6e12, 1);
  EXPECT_NEAR(t.gpu().peak_flops(DType::kFp16), 21.2e12, 1);
  EXPECT_NEAR(t.gpu().hbm_bandwidth, 732e9, 1);
  EXPECT_NEAR(t.gpu().hbm_capacity, 16e9, 1);
  EXPECT_EQ(t.gpu().nvlink_links, 4);
  EXPECT_EQ(arch_name(t.gpu().arch), "pascal");  // GP100
  // One NVLink 1 link per pair: 20 GB/s at NVLink 2's efficiency 0.8 = 16 GB/s, to each of the 3 peers.
  for (Rank p = 1; p < 4; ++p) {
    EXPECT_EQ(t.route_transport(0, p), Transport::kNvlink);
    EXPECT_NEAR(t.route_bandwidth(0, p), 16e9, 1e3);
  }
  // Between nodes: EDR 100 Gb/s = 12.5 GB/s at 0.94.
  EXPECT_EQ(t.route_transport(0, 4), Transport::kNet);
  EXPECT_NEAR(t.route_bandwidth(0, 4), 11.75e9, 1e3);
}

TEST(Presets, FlexFlowK80ClusterHasDatasheetNumbers) {
  const Topology t = load_system(test::preset("flexflow-k80.yaml"), LoadOptions{2});
  EXPECT_EQ(t.num_gpus(), 8);
  EXPECT_EQ(t.gpu().name, "k80");
  EXPECT_EQ(arch_name(t.gpu().arch), "kepler");  // GK210
  EXPECT_NEAR(t.gpu().peak_flops(DType::kFp32), 8.73e12 / 2, 1);
  EXPECT_NEAR(t.gpu().peak_flops(DType::kFp16), 8.73e12 / 2, 1);  // no FP16 path: the FP32 rate
  EXPECT_NEAR(t.gpu().hbm_bandwidth, 480e9 / 2, 1);
  EXPECT_NEAR(t.gpu().hbm_capacity, 24e9 / 2, 1);
  EXPECT_EQ(t.gpu().nvlink_links, 0);
  // Two GPUs of a board: PCIe Gen3 x16 through the board's switch (12 GB/s effective, SimAI's ratio).
  EXPECT_EQ(t.route_transport(0, 1), Transport::kPcie);
  EXPECT_NEAR(t.route_bandwidth(0, 1), 12e9, 1e3);
  // Between nodes: FDR 56 Gb/s = 7 GB/s at 0.94.
  EXPECT_EQ(t.route_transport(0, 4), Transport::kNet);
  EXPECT_NEAR(t.route_bandwidth(0, 4), 6.58e9, 1e3);
}

TEST(Presets, Dgx1HybridCubeMeshGivesSixLinksPerGpu) {
  const Topology t = load_system(test::preset("dgx1-v100.yaml"));
  for (Rank g = 0; g < 8; ++g) {
    int links = 0;
    for (Rank p = 0; p < 8; ++p)
      if (auto l = t.direct_link(g, p)) links += t.link(*l).multiplicity;
    EXPECT_EQ(links, 6) << "GPU " << g;
  }
  EXPECT_FALSE(t.direct_link(0, 5));                     // cross-quad pair without NVLink
  EXPECT_EQ(t.route_transport(0, 5), Transport::kPcie);  // goes over PCIe/CPU
  EXPECT_NEAR(t.route_bandwidth(0, 3), 2 * 20e9, 1e3);   // doubled NVLink2 at 20 GB/s each
}

TEST(Presets, P2SystemsUseThePapersConstants) {
  const Topology a = load_system(test::preset("gcp-a100x16.yaml"), LoadOptions{2});
  EXPECT_NEAR(a.route_bandwidth(0, 1), 270e9, 1e3);  // 90% of 300 GB/s
  EXPECT_NEAR(a.route_bandwidth(0, 16), 8e9, 1e3);   // one NIC at 8 GB/s
  const Topology v = load_system(test::preset("gcp-v100x8.yaml"));
  EXPECT_NEAR(v.route_bandwidth(0, 1), 135e9, 1e3);  // 90% of 150 GB/s
}

TEST(Topology, RoutesAreDeterministicAndRailAffine) {
  const Topology t = load_system(test::preset("dgx-h100.yaml"), LoadOptions{2});
  const auto r1 = t.route(3, 11);
  const Topology t2 = load_system(test::preset("dgx-h100.yaml"), LoadOptions{2});
  const auto r2 = t2.route(3, 11);
  ASSERT_EQ(r1.size(), r2.size());
  for (std::size_t i = 0; i < r1.size(); ++i) EXPECT_EQ(r1[i], r2[i]);
  // GPU 3 leaves through n0.nic3 and GPU 11 (node 1, local 3) is entered through n1.nic3.
  bool out_nic = false, in_nic = false;
  for (LinkId l : r1) {
    if (t.vertices()[t.link(l).dst].name == "n0.nic3") out_nic = true;
    if (t.vertices()[t.link(l).src].name == "n1.nic3") in_nic = true;
  }
  EXPECT_TRUE(out_nic);
  EXPECT_TRUE(in_nic);
}

}  // namespace strata::hw

namespace strata::hw {

TEST(Routes, ThinNvlinkIsPreferredOverFasterPcie) {
  // One NVLink4 link (20.6 GB/s) per pair against PCIe Gen5 through the host (51.2 GB/s): NCCL's P2P
  // transport still uses NVLink, and so do strata's routes.
  const Topology t = test::fully_connected4(1);
  const auto r = t.route(0, 1);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(t.link(r[0]).transport, Transport::kNvlink);
  EXPECT_EQ(t.route_transport(0, 3), Transport::kNvlink);
}

}  // namespace strata::hw

namespace strata::hw {
namespace {

// A hand-built node: GPUs forward nothing, so GPU a reaches GPU b only over a direct link or through switches
// and CPUs. finalize() must find exactly the pairs that a route search finds.
Topology hand_built(int gpus, const std::vector<std::pair<int, int>>& gpu_links, bool with_cpu) {
  Topology t("hand", *find_gpu("h100-sxm"), 1, gpus, {{"node", 1}, {"gpu", gpus}});
  std::vector<VertexId> v;
  for (int g = 0; g < gpus; ++g) {
    v.push_back(t.add_vertex({VertexKind::kGpu, "n0.gpu" + std::to_string(g), 0, g}));
    t.set_gpu_vertex(g, v.back());
  }
  const LinkKind& nvlink = *find_link_kind("nvlink4");
  for (const auto& [a, b] : gpu_links) t.add_duplex(v[a], v[b], nvlink, nvlink.bandwidth, 1.0, 1e-6, 1);
  if (with_cpu) {
    const VertexId cpu = t.add_vertex({VertexKind::kCpu, "n0.cpu0", 0, 0});
    const LinkKind& pcie = *find_link_kind("pcie5");
    for (VertexId g : v) t.add_duplex(g, cpu, pcie, pcie.bandwidth, 1.0, 1e-6, 1);
  }
  return t;
}

std::string finalize_error(Topology& t) {
  try {
    t.finalize();
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "reachable";
}

}  // namespace

TEST(Topology, FinalizeFindsPairsThatNoRouteJoins) {
  auto none = hand_built(2, {}, false);
  EXPECT_EQ(finalize_error(none), "GPU 0 cannot reach GPU 1 (n0.gpu0 -> n0.gpu1)");
  // A chain 0-1-2 of direct links: GPU 1 does not forward, so 0 and 2 are not joined.
  auto chain = hand_built(3, {{0, 1}, {1, 2}}, false);
  EXPECT_EQ(finalize_error(chain), "GPU 0 cannot reach GPU 2 (n0.gpu0 -> n0.gpu2)");
  for (Rank a = 0; a < 3; ++a)
    for (Rank b = 0; b < 3; ++b)
      if (a != b) {
        EXPECT_EQ(chain.route(a, b).empty(), (a == 0 && b == 2) || (a == 2 && b == 0)) << a << b;
      }
  auto ring = hand_built(3, {{0, 1}, {1, 2}, {2, 0}}, false);
  EXPECT_EQ(finalize_error(ring), "reachable");
  auto host = hand_built(3, {{0, 1}}, true);
  EXPECT_EQ(finalize_error(host), "reachable");
  EXPECT_EQ(host.route(0, 2).size(), 2u);  // over the CPU
}

// Building, checking and routing a 32,768-GPU cluster must not cost time per GPU pair (a 1000-node
// `hw show` took 10 s when finalize() searched routes pairwise). Routes stay rail-affine at that scale.
TEST(Topology, LargeClustersBuildAndRoute) {
  const Topology t = load_system(test::preset("dgx-h100.yaml"), LoadOptions{4096});
  EXPECT_EQ(t.num_gpus(), 32768);
  EXPECT_EQ(t.nics_per_node(), 8);
  const Rank a = 5, b = 4095 * 8 + 5;
  const auto r = t.route(a, b);
  ASSERT_FALSE(r.empty());
  EXPECT_EQ(t.vertices()[t.link(r.front()).src].name, "n0.gpu5");
  EXPECT_EQ(t.vertices()[t.link(r.back()).dst].name, "n4095.gpu5");
  bool via_rail = false;
  for (LinkId l : r) via_rail = via_rail || t.vertices()[t.link(l).dst].name == "n0.nic5";
  EXPECT_TRUE(via_rail);
  // Every GPU to its counterpart on the next node (a ring's inter-node hops): leaves through its own NIC, the
  // rail switch and enters the peer's NIC; rail r to rail r never climbs to the spine (4 network links
  // would). Routing these took a network-wide search per pair (minutes here) before routes shared per-switch
  // trees.
  int wrong = 0;
  for (Rank g = 0; g < t.num_gpus(); ++g) {
    const Rank peer = (g + 8) % t.num_gpus();
    int net_hops = 0;
    bool out = false, in = false;
    for (LinkId l : t.route(g, peer)) {
      net_hops += t.link(l).transport == Transport::kNet;
      out = out || t.link(l).dst == *t.nic_of(g);
      in = in || t.link(l).src == *t.nic_of(peer);
    }
    wrong += !(out && in && net_hops == 2);
  }
  EXPECT_EQ(wrong, 0);
}

}  // namespace strata::hw

namespace strata::hw {
namespace {

// The network routing strata used before per-switch trees were cached (one Dijkstra per GPU pair over the
// whole network, NICs allowed to forward), kept as an oracle: same cost (latency + 1 MiB / bandwidth), ties
// to the smaller entering link id, the same forwarding rules and the same GPU -> NIC -> NIC -> GPU split.
std::vector<LinkId> reference_path(const Topology& t, const std::vector<std::vector<LinkId>>& out,
                                   VertexId from, VertexId to, bool network_only, bool nvlink_only) {
  const auto& vs = t.vertices();
  const auto n = vs.size();
  std::vector<double> dist(n, std::numeric_limits<double>::infinity());
  std::vector<LinkId> via(n, -1);
  using Item = std::tuple<double, VertexId>;
  std::priority_queue<Item, std::vector<Item>, std::greater<>> heap;
  dist[static_cast<std::size_t>(from)] = 0;
  heap.emplace(0.0, from);
  while (!heap.empty()) {
    auto [d, v] = heap.top();
    heap.pop();
    if (d > dist[static_cast<std::size_t>(v)]) continue;
    if (v == to) break;
    const Vertex& vx = vs[static_cast<std::size_t>(v)];
    if (v != from && vx.kind == VertexKind::kGpu) continue;
    if (!network_only && v != from && vx.kind == VertexKind::kNic) continue;
    for (LinkId l : out[static_cast<std::size_t>(v)]) {
      const Link& lk = t.link(l);
      const Vertex& w = vs[static_cast<std::size_t>(lk.dst)];
      if (network_only && w.kind != VertexKind::kNic && w.kind != VertexKind::kNetSwitch) continue;
      if (!network_only && w.node != vs[static_cast<std::size_t>(from)].node) continue;
      if (nvlink_only && lk.transport != Transport::kNvlink) continue;
      const double nd = d + lk.latency + 1024.0 * 1024.0 / lk.bandwidth;
      auto& cur = dist[static_cast<std::size_t>(lk.dst)];
      if (nd < cur || (nd == cur && via[static_cast<std::size_t>(lk.dst)] > l)) {
        cur = nd;
        via[static_cast<std::size_t>(lk.dst)] = l;
        heap.emplace(nd, lk.dst);
      }
    }
  }
  std::vector<LinkId> path;
  if (from == to || via[static_cast<std::size_t>(to)] < 0) return path;
  for (VertexId v = to; v != from; v = t.link(path.back()).src)
    path.push_back(via[static_cast<std::size_t>(v)]);
  std::reverse(path.begin(), path.end());
  return path;
}

std::vector<LinkId> reference_route(const Topology& t, const std::vector<std::vector<LinkId>>& out, Rank a,
                                    Rank b) {
  if (a == b) return {};
  const VertexId ga = t.gpu_vertex(a), gb = t.gpu_vertex(b);
  if (t.node_of(a) == t.node_of(b)) {
    auto nvlink = reference_path(t, out, ga, gb, false, true);
    return nvlink.empty() ? reference_path(t, out, ga, gb, false, false) : nvlink;
  }
  const auto nic_a = t.nic_of(a), nic_b = t.nic_of(b);
  if (!nic_a || !nic_b) return {};
  auto route = reference_path(t, out, ga, *nic_a, false, false);
  const auto net = reference_path(t, out, *nic_a, *nic_b, true, false);
  const auto in = reference_path(t, out, *nic_b, gb, false, false);
  if (route.empty() || net.empty() || in.empty()) return {};
  route.insert(route.end(), net.begin(), net.end());
  route.insert(route.end(), in.begin(), in.end());
  return route;
}

// Counts the pairs whose route differs from the oracle's (and reports the first few).
int routes_differing_from_reference(const Topology& t) {
  std::vector<std::vector<LinkId>> out(t.vertices().size());
  for (LinkId l = 0; l < static_cast<LinkId>(t.links().size()); ++l)
    out[static_cast<std::size_t>(t.link(l).src)].push_back(l);
  int differing = 0;
  for (Rank a = 0; a < t.num_gpus(); ++a)
    for (Rank b = 0; b < t.num_gpus(); ++b) {
      const auto got = t.route(a, b);
      const auto want = reference_route(t, out, a, b);
      if (std::vector<LinkId>(got.begin(), got.end()) != want && ++differing <= 3)
        ADD_FAILURE() << t.name() << ": route " << a << " -> " << b << " differs from the reference";
    }
  return differing;
}

// A three-level folded Clos (fat tree): `pods` pods of 2 leaf and 2 aggregation switches, 4 core switches,
// 2 nodes per pod with 2 GPUs and 2 NICs each (NIC i on leaf i of its pod). Many equal-cost paths, so the
// tie-breaking decides routes; latencies and one slow core link make sums round differently by order.
// With `dual_homed`, node 0's NIC 0 is also cabled to leaf 1 (a NIC that could forward).
Topology clos(int pods, bool dual_homed) {
  const int nodes = 2 * pods;
  Topology t("clos", *find_gpu("h100-sxm"), nodes, 2, {{"node", nodes}, {"gpu", 2}});
  const LinkKind& ib = *find_link_kind("ib-ndr");
  const LinkKind& pcie = *find_link_kind("pcie5");
  std::vector<VertexId> core;
  for (int c = 0; c < 4; ++c)
    core.push_back(t.add_vertex({VertexKind::kNetSwitch, fmt::format("core{}", c)}));
  std::vector<std::vector<VertexId>> leaf(static_cast<std::size_t>(pods));
  for (int p = 0; p < pods; ++p) {
    std::vector<VertexId> agg;
    for (int i = 0; i < 2; ++i) {
      agg.push_back(t.add_vertex({VertexKind::kNetSwitch, fmt::format("p{}.agg{}", p, i)}));
      leaf[static_cast<std::size_t>(p)].push_back(
          t.add_vertex({VertexKind::kNetSwitch, fmt::format("p{}.leaf{}", p, i)}));
    }
    for (int i = 1; i >= 0; --i)  // agg i -> cores 2i, 2i+1; core 3 of pod 0 on a slower link
      for (int c = 2 * i; c < 2 * i + 2; ++c)
        t.add_duplex(agg[static_cast<std::size_t>(i)], core[static_cast<std::size_t>(c)], ib, ib.bandwidth,
                     p == 0 && c == 3 ? 0.5 : 0.9, 0.7e-6, 1);
    for (int l = 0; l < 2; ++l)
      for (int i = 0; i < 2; ++i)
        t.add_duplex(leaf[static_cast<std::size_t>(p)][static_cast<std::size_t>(l)],
                     agg[static_cast<std::size_t>(i)], ib, ib.bandwidth, 0.9, 0.3e-6, 1);
  }
  for (int n = 0; n < nodes; ++n) {
    const VertexId sw = t.add_vertex({VertexKind::kPcieSwitch, fmt::format("n{}.pcie0", n), n, 0});
    for (int g = 0; g < 2; ++g) {
      const VertexId gpu = t.add_vertex({VertexKind::kGpu, fmt::format("n{}.gpu{}", n, g), n, g});
      const VertexId nic = t.add_vertex({VertexKind::kNic, fmt::format("n{}.nic{}", n, g), n, g});
      t.add_duplex(gpu, sw, pcie, pcie.bandwidth, 0.8, 1e-6, 1);
      t.add_duplex(nic, sw, pcie, pcie.bandwidth, 0.8, 1e-6, 1);
      t.add_duplex(nic, leaf[static_cast<std::size_t>(n / 2)][static_cast<std::size_t>(g)], ib, ib.bandwidth,
                   0.9, 0.3e-6, 1);
      if (dual_homed && n == 0 && g == 0) t.add_duplex(nic, leaf[0][1], ib, ib.bandwidth, 0.9, 0.3e-6, 1);
      t.set_gpu_vertex(n * 2 + g, gpu);
      t.set_nic_of_gpu(n * 2 + g, nic);
    }
  }
  t.finalize();
  return t;
}

}  // namespace

// Network routes come from cached per-switch trees (hw/topology.cc, network_path); they must be exactly the
// routes of the full per-pair search they replaced, for every GPU pair of every preset.
TEST(Routes, PresetRoutesEqualTheFullSearch) {
  int count = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(STRATA_SOURCE_DIR) + "/configs/hw")) {
    if (entry.path().extension() != ".yaml") continue;
    ++count;
    for (int nodes : {2, 3, 4}) {
      SCOPED_TRACE(entry.path().string() + " x " + std::to_string(nodes));
      EXPECT_EQ(routes_differing_from_reference(load_system(entry.path().string(), LoadOptions{nodes})), 0);
    }
  }
  EXPECT_EQ(count, 10);
}

TEST(Routes, FatTreeRoutesEqualTheFullSearch) {
  const Topology t = clos(3, false);
  EXPECT_EQ(routes_differing_from_reference(t), 0);
  // Node 0 GPU 0 to node 2 GPU 0 crosses leaf, aggregation, core, aggregation, leaf: 6 network links.
  int net_links = 0;
  for (LinkId l : t.route(0, 4)) net_links += t.link(l).transport == Transport::kNet;
  EXPECT_EQ(net_links, 6);
  // A NIC on two leaves could forward between them: routing falls back to the full search, same routes.
  EXPECT_EQ(routes_differing_from_reference(clos(3, true)), 0);
}

}  // namespace strata::hw
