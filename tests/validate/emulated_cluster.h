// An emulated cluster as `strata validate cluster up` describes one (validate/cluster.cc): host-CPU "devices"
// (one MPI rank each), ranks of a node fully connected by shared memory, the node's port a tc-shaped veth
// (link kind tcp-veth) into one bridge (a fat tree's crossbar). Written in the YAML users write, with every
// figure chosen by the test so that times can be worked out by hand.
#pragma once

#include <string>

#include <fmt/format.h>

#include "hw/system_loader.h"

namespace strata::test {

struct EmulatedCluster {
  int nodes = 2;
  int ranks_per_node = 2;
  double shm_bandwidth = 40e9;  // bytes/s per direction between two ranks of a node
  double shm_latency = 2e-6;    // seconds, one hop rank to rank
  double net_bandwidth = 25e6;  // bytes/s per direction of a node's port (200 Mbit/s)
  double net_latency = 100e-6;  // seconds: the nics link's latency, NIC to NIC through the bridge
};

inline std::string emulated_cluster_yaml(const EmulatedCluster& c) {
  const std::string fabric =
      c.ranks_per_node > 1
          ? fmt::format(
                "{{wiring: fully-connected, link: {{kind: shm, bandwidth: {} MB/s, efficiency: 1, "
                "latency: {} us}}}}",
                c.shm_bandwidth / 1e6, c.shm_latency * 1e6)
          : std::string("{wiring: none}");
  return fmt::format(R"(
name: emulated
gpu: host-cpu
nodes: {}
node:
  gpus: {}
  fabric: {}
  host: {{cpus: 1, pcie: {{kind: pcie4, latency: 0 us}}}}
  nics: {{count: 1, link: {{kind: tcp-veth, bandwidth: {} MB/s, efficiency: 1, latency: {} us}}}}
network: {{wiring: fat-tree}}
)",
                     c.nodes, c.ranks_per_node, fabric, c.net_bandwidth / 1e6, c.net_latency * 1e6);
}

inline hw::Topology emulated_cluster(const EmulatedCluster& c = {}) {
  return hw::load_system_from_string(emulated_cluster_yaml(c), "emulated.yaml");
}

}  // namespace strata::test
