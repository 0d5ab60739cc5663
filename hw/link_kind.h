// Link kinds: the wires of a machine, each full duplex with a per-direction bandwidth.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace strata::hw {

// Coarse transport class; NCCL's latency tables and protocol choices are indexed by it.
enum class Transport { kNvlink, kPcie, kNet, kHost };
std::string_view transport_name(Transport t);

struct LinkKind {
  std::string name;         // catalogue key, e.g. "nvlink4", "ib-ndr", "pcie5"
  std::string description;  // e.g. "NVLink 4 (one link)"
  Transport transport;
  double bandwidth;   // line rate per direction, bytes/s (for NVLink: one link; multiply by links used)
  double efficiency;  // fraction of line rate a well-tuned collective library sustains (protocol overhead)
  double latency;  // one-hop physical latency, seconds (wire + switch/PHY; software overheads are elsewhere)
  // NCCL's own rating of one such link in its topology search (bytes/s per direction), which its tuner's
  // bandwidths are built from: NVLink by GPU generation (src/graph/topo.h), PCIe by generation and width
  // (12 GB/s per Gen3 x16, doubling per generation: src/graph/topo.cc), a NIC's port speed. Links NCCL does
  // not rate (shared memory, emulated ports): the effective bandwidth.
  double nccl_rating = 0;

  [[nodiscard]] double effective_bandwidth() const { return bandwidth * efficiency; }
};

std::span<const LinkKind> link_catalog();
const LinkKind* find_link_kind(std::string_view name);

}  // namespace strata::hw
