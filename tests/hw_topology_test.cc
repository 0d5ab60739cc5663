#include <gtest/gtest.h>

#include <filesystem>

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
  EXPECT_EQ(count, 6);
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
  const Topology t = load_system_from_string(R"(
name: thin
gpu: h100-sxm
node:
  gpus: 4
  fabric: {wiring: fully-connected, link: nvlink4, links_per_pair: 1}
  host: {cpus: 1, pcie_switches: 2, pcie: pcie5}
  nics: {count: 1, link: ib-ndr}
network: {wiring: fat-tree}
)",
                                             "thin.yaml");
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
}

}  // namespace strata::hw
