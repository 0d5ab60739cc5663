// hw's pieces for emulated clusters (link kind tcp-veth, GPU catalogue entry host-cpu, bit-rate units) and
// the system file `strata validate cluster up` / `calibrate` write (validate::cluster_system_yaml): what the
// simulator reads from it must be the link figures that were configured or measured.
#include <gtest/gtest.h>

#include <string>

#include "hw/gpu_spec.h"
#include "hw/link_kind.h"
#include "hw/system_loader.h"
#include "hw/units.h"
#include "tests/validate/emulated_cluster.h"
#include "validate/cluster.h"

namespace strata::validate {
namespace {

TEST(EmulatedClusterHw, TcpVethCarriesTcpPayloadOfEthernetFrames) {
  const hw::LinkKind* k = hw::find_link_kind("tcp-veth");
  ASSERT_NE(k, nullptr);
  // A 1500-byte MTU frame is 1514 bytes on the wire as tc counts it (14 B Ethernet header, no FCS); TCP over
  // IPv4 with timestamps carries 1500 - 20 (IP) - 20 (TCP) - 12 (timestamp option, RFC 7323) = 1448 B of it.
  EXPECT_DOUBLE_EQ(k->efficiency, (1500.0 - 20 - 20 - 12) / (1500 + 14));
  EXPECT_DOUBLE_EQ(k->bandwidth, 1e9 / 8);  // 1 Gbit/s nominal
  EXPECT_EQ(k->transport, hw::Transport::kNet);
}

TEST(EmulatedClusterHw, BitRateUnits) {
  // 1 Gbit/s = 1e9 bits/s = 1.25e8 bytes/s; 200 Mbit/s = 2.5e7; 100 Mbps = 1.25e7.
  EXPECT_DOUBLE_EQ(*units::parse_bandwidth("1Gbit/s"), 125e6);
  EXPECT_DOUBLE_EQ(*units::parse_bandwidth("200Mbit/s"), 25e6);
  EXPECT_DOUBLE_EQ(*units::parse_bandwidth("100Mbps"), 12.5e6);
  EXPECT_DOUBLE_EQ(*units::parse_bandwidth("2.5 Gbit/s"), 312.5e6);
  EXPECT_DOUBLE_EQ(*units::parse_bandwidth("10 Gbps"), 1.25e9);
  EXPECT_FALSE(units::parse_bandwidth("100 Mbit"));
  EXPECT_FALSE(units::parse_bandwidth("0 Mbit/s"));
}

// Regression (found by these tests, fixed in validate/ and hw/; hw/units.h kBandwidthUnits, the unit list bad
// YAML bandwidths are answered with, hw/yaml_reader.cc): it still reads "B/s, ..., Gb/s, Tb/s" while
// parse_bandwidth also accepts Gbps, Mbit/s, Gbit/s and Mbps (hw/units.cc kBandwidth), so the error message
// does not list units that work. Expected: every accepted unit listed.
TEST(EmulatedClusterHw, ErrorMessagesListEveryAcceptedBitRateUnit) {
  for (const char* unit : {"Mb/s", "Gb/s", "Gbps", "Mbit/s", "Gbit/s", "Mbps"}) {
    ASSERT_TRUE(units::parse_bandwidth(std::string("1 ") + unit)) << unit;
    EXPECT_NE(std::string(units::kBandwidthUnits).find(unit), std::string::npos) << unit;
  }
}

TEST(EmulatedClusterHw, HostCpuIsInTheCatalogue) {
  const hw::GpuSpec* g = hw::find_gpu("host-cpu");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(hw::arch_name(g->arch), "host-cpu");
}

TEST(EmulatedClusterHw, EmulatedClusterYamlLoadsWithTheChosenFigures) {
  test::EmulatedCluster c;  // 2 nodes x 2 ranks; shm 40 GB/s, 2 us; port 25 MB/s, nics latency 100 us
  const auto t = test::emulated_cluster(c);
  EXPECT_EQ(t.nodes(), 2);
  EXPECT_EQ(t.gpus_per_node(), 2);
  EXPECT_EQ(t.num_gpus(), 4);
  EXPECT_EQ(t.gpu().name, "host-cpu");
  // Inside a node: the one shared-memory wire.
  EXPECT_EQ(t.route(0, 1).size(), 1u);
  EXPECT_NEAR(t.route_latency(0, 1), c.shm_latency, 1e-15);
  EXPECT_NEAR(t.route_bandwidth(0, 1), c.shm_bandwidth, 1e-3);
  // Between nodes: rank -> CPU -> NIC -> bridge -> NIC -> CPU -> rank. A nics link's latency is NIC to NIC
  // through the switch, half on each side (docs/hardware.md: an ib-ndr route of 1 us NIC-to-NIC and four
  // 0.5 us PCIe hops totals 3 us); PCIe adds 0 here, so the route's latency is the nics latency itself.
  for (auto [a, b] : {std::pair{0, 2}, std::pair{1, 3}, std::pair{3, 0}}) {
    EXPECT_EQ(t.route(a, b).size(), 6u);
    EXPECT_NEAR(t.route_latency(a, b), c.net_latency, 1e-15);
    EXPECT_NEAR(t.route_bandwidth(a, b), c.net_bandwidth, 1e-6);
    EXPECT_EQ(t.route_transport(a, b), hw::Transport::kNet);
  }
}

ClusterSpec two_by_two() {
  ClusterSpec spec;
  spec.name = "t";
  spec.nodes = 2;
  spec.ranks_per_node = 2;
  spec.inter_bandwidth = 25e6;  // 200 Mbit/s shaped
  spec.inter_latency = 100e-6;  // netem delay on each node's egress
  return spec;
}

TEST(EmulatedClusterHw, ConfiguredFiguresAreTheShapedRateAndDelay) {
  const ClusterSpec spec = two_by_two();
  const LinkFigures inter = configured_inter(spec);
  EXPECT_DOUBLE_EQ(inter.bandwidth, 25e6 * 1448 / 1514);
  EXPECT_DOUBLE_EQ(inter.latency, 100e-6);
}

// Regression (found by these tests, fixed in validate/ and hw/; validate/cluster.cc, cluster_system_yaml,
// "latency: inter.latency / 2"): the system file halves the node-to-node latency, and the loader halves the
// nics link's latency again on each side of the bridge (hw/system_loader.cc add_network: nl.latency / 2 per
// NIC-bridge wire), so a route between nodes carries half the configured or measured one-way latency. netem
// delays only each node's egress (cluster_up: shape(ns, "eth0", rate, latency), the host-side port gets delay
// 0), so one way between two nodes is inter.latency, and fit_link's latency is the one-way time of the
// smallest exchange. Expected route_latency(0, 2) = 100 us; the code gave 50 us.
TEST(EmulatedClusterHw, SystemFileRouteBetweenNodesHasTheOneWayLatency) {
  const ClusterSpec spec = two_by_two();
  const LinkFigures intra{3e9, 1.5e-6, "measured"}, inter{23.9e6, 180e-6, "measured"};
  const auto t = hw::load_system_from_string(cluster_system_yaml(spec, intra, inter, "test"), "t.yaml");
  EXPECT_NEAR(t.route_latency(0, 2), 180e-6, 1e-12);
  EXPECT_NEAR(t.route_latency(1, 3), 180e-6, 1e-12);
}

TEST(EmulatedClusterHw, SystemFileCarriesTheLinkBandwidths) {
  const ClusterSpec spec = two_by_two();
  const LinkFigures intra{40e9, 1e-6, "configured"}, inter{23.9e6, 180e-6, "measured"};
  const auto t = hw::load_system_from_string(cluster_system_yaml(spec, intra, inter, "two\nlines"), "t.yaml");
  EXPECT_EQ(t.num_gpus(), 4);
  EXPECT_NEAR(t.route_bandwidth(0, 2), 23.9e6, 23.9e6 * 1e-6);  // written with 6 significant digits
  EXPECT_NEAR(t.route_bandwidth(0, 1), 40e9, 40e9 * 1e-6);
  EXPECT_NEAR(t.route_latency(0, 1), 1e-6, 1e-12);
  // One rank per node: no fabric; the route between the nodes' only ranks still crosses the ports.
  ClusterSpec one = spec;
  one.ranks_per_node = 1;
  const auto t1 = hw::load_system_from_string(cluster_system_yaml(one, intra, inter, ""), "t1.yaml");
  EXPECT_EQ(t1.num_gpus(), 2);
  EXPECT_NEAR(t1.route_bandwidth(0, 1), 23.9e6, 23.9e6 * 1e-6);
}

// Regression (found by these tests, fixed in validate/ and hw/; validate/cluster.cc, cluster_system_yaml: the
// shm wire beside "pcie: {kind: pcie4, latency: 0 us}"): routes inside a node take the cheapest path by
// latency + 1 MiB / bandwidth (docs/hardware.md), and the path rank -> CPU -> rank over two zero-latency PCIe
// Gen4 hops (25.6 GB/s each: cost 2 x 41 us) beats a calibrated shared-memory wire slower than about 12.8
// GB/s (1 MiB / 3 GB/s = 350 us). Shared memory measured at a few GB/s, as vader typically gives, is then
// never used: ranks of a node talk at PCIe's 25.6 GB/s with 0 latency. Expected route_bandwidth(0, 1) = 3
// GB/s and latency 1.5 us (the measured figures); the code gave the PCIe path.
TEST(EmulatedClusterHw, SystemFileRanksOfANodeUseTheMeasuredSharedMemory) {
  const ClusterSpec spec = two_by_two();
  const LinkFigures intra{3e9, 1.5e-6, "measured"}, inter{23.9e6, 180e-6, "measured"};
  const auto t = hw::load_system_from_string(cluster_system_yaml(spec, intra, inter, "test"), "t.yaml");
  EXPECT_NEAR(t.route_bandwidth(0, 1), 3e9, 3e9 * 1e-6);
  EXPECT_NEAR(t.route_latency(0, 1), 1.5e-6, 1e-12);
}

}  // namespace
}  // namespace strata::validate
