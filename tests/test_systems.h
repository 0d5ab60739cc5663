// Small hand-analysable systems for tests, written in the same YAML users write.
#pragma once

#include <string>

#include <fmt/format.h>

#include "hw/system_loader.h"

namespace strata::test {

// `gpus` GPUs per node on one switch whose ports carry exactly `port_gbps` GB/s per direction (efficiency 1,
// latency 0.2 us per hop); one NIC of `nic_gbps` GB/s per GPU; fat-tree network. `switch_kind` nvswitch3 or
// later reduces in the switch (NVLS).
inline hw::Topology uniform_switch(int nodes, int gpus, double port_gbps, double nic_gbps, int nics = -1,
                                   const char* switch_kind = "nvswitch2") {
  const std::string yaml = fmt::format(R"(
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
  host: {{cpus: 1, pcie_switches: 0, pcie: {{kind: pcie5, bandwidth: 50 GB/s, efficiency: 1.0}}}}
  nics: {{count: {}, link: {{kind: ib-ndr, bandwidth: {} GB/s, efficiency: 1.0, latency: 0.2 us}}}}
network: {{wiring: fat-tree}}
)",
                                       nodes, gpus, switch_kind, port_gbps, nics < 0 ? gpus : nics, nic_gbps);
  return hw::load_system_from_string(yaml, "uniform.yaml");
}

inline std::string preset(const std::string& name) { return std::string(STRATA_SOURCE_DIR) + "/configs/hw/" + name; }

}  // namespace strata::test
