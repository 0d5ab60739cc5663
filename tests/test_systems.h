// Small hand-analysable systems for tests, written in the same YAML users write.
#pragma once

#include <string>

#include <fmt/format.h>

#include "hw/system_loader.h"

namespace strata::test {

// `gpus` GPUs per node on one switch whose ports carry exactly `port_gbps` GB/s per direction (efficiency 1,
// latency 0.2 us per hop); one NIC of `nic_gbps` GB/s per GPU; fat-tree network. `switch_kind` nvswitch3 or
// later reduces in the switch (NVLS). `fabric_extra`, `nics_extra`: one more node.fabric or node.nics entry,
// e.g. "nccl_ring: {...}".
inline hw::Topology uniform_switch(int nodes, int gpus, double port_gbps, double nic_gbps, int nics = -1,
                                   const char* switch_kind = "nvswitch2",
                                   const std::string& fabric_extra = "", const std::string& nics_extra = "") {
  const std::string yaml =
      fmt::format(R"(
name: uniform
gpu: h100-sxm
nodes: {}
node:
  gpus: {}
  fabric:
    wiring: switch
    switch: {}
    link: {{kind: nvlink4, bandwidth: {} GB/s, efficiency: 1.0, latency: 0.2 us}}
    links_per_gpu: 1
{}
  host: {{cpus: 1, pcie_switches: 0, pcie: {{kind: pcie5, bandwidth: 50 GB/s, efficiency: 1.0}}}}
  nics: {{count: {}, link: {{kind: ib-ndr, bandwidth: {} GB/s, efficiency: 1.0, latency: 0.2 us}}{}}}
network: {{wiring: fat-tree}}
)",
                  nodes, gpus, switch_kind, port_gbps, fabric_extra.empty() ? "" : "    " + fabric_extra,
                  nics < 0 ? gpus : nics, nic_gbps, nics_extra.empty() ? "" : ", " + nics_extra);
  return hw::load_system_from_string(yaml, "uniform.yaml");
}

// 4 H100 wired `fully-connected` with `links_per_pair` NVLink4 links per pair (20.6 GB/s each per direction),
// PCIe Gen5 through one CPU, one NDR NIC.
inline hw::Topology fully_connected4(int links_per_pair) {
  const std::string yaml = fmt::format(R"(
name: fc4
gpu: h100-sxm
node:
  gpus: 4
  fabric: {{wiring: fully-connected, link: nvlink4, links_per_pair: {}}}
  host: {{cpus: 1, pcie_switches: 2, pcie: pcie5}}
  nics: {{count: 1, link: ib-ndr}}
network: {{wiring: fat-tree}}
)",
                                       links_per_pair);
  return hw::load_system_from_string(yaml, "fc4.yaml");
}

inline std::string preset(const std::string& name) {
  return std::string(STRATA_SOURCE_DIR) + "/configs/hw/" + name;
}

}  // namespace strata::test
