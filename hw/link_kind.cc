#include "hw/link_kind.h"

#include <array>

#include "hw/units.h"

namespace strata::hw {

std::string_view transport_name(Transport t) {
  switch (t) {
    case Transport::kNvlink:
      return "nvlink";
    case Transport::kPcie:
      return "pcie";
    case Transport::kNet:
      return "net";
    case Transport::kHost:
      return "host";
  }
  return "?";
}

namespace {
using units::kGB;
constexpr double kUs = 1e-6;

// Line rates: NVIDIA NVLink generations (25 GB/s per link per direction for NVLink 2-4, 50 for NVLink 5),
// PCIe x16 per direction after 128b/130b encoding, InfiniBand 4x port rates (Gb/s / 8), Ethernet port rates.
// Efficiencies: NVLink = NCCL's per-link effective bandwidth (src/graph/topo.h: SM70/SM80 20.0, SM90 20.6,
// SM100 40.1 GB/s) over the line rate; InfiniBand NDR = the ~47 GB/s per NIC NVIDIA maintainers quote
// (nccl-tests #290) over 50; PCIe = SimAI's effective 25.6/51.2 GB/s (Gen4/Gen5) over line rate;
// RoCE assumes the same transport overhead as IB. Latencies are physical one-hop estimates (NVLink/NVSwitch
// ~0.5 us GPU to GPU, PCIe ~0.5 us per hop, IB ~1 us NIC to NIC through a switch); the per-step software
// latency of collectives comes from NCCL's tables in sim/, not from here.
const std::array<LinkKind, 19> kLinks{{
    {"nvlink2", "NVLink 2 (V100), one link", Transport::kNvlink, 25 * kGB, 20.0 / 25.0, 0.5 * kUs, 20 * kGB},
    {"nvlink3", "NVLink 3 (A100), one link", Transport::kNvlink, 25 * kGB, 20.0 / 25.0, 0.5 * kUs, 20 * kGB},
    {"nvlink4", "NVLink 4 (H100/H200), one link", Transport::kNvlink, 25 * kGB, 20.6 / 25.0, 0.5 * kUs, 20.6 * kGB},
    {"nvlink5", "NVLink 5 (B200), one link", Transport::kNvlink, 50 * kGB, 40.1 / 50.0, 0.5 * kUs, 40.1 * kGB},
    // NVLink 1 (P100; Pascal architecture whitepaper WP-08019-001: 4 links of 20 GB/s per direction); the
    // efficiency of NVLink 2 is assumed (NCCL lists no separate SM60 figure in src/graph/topo.h).
    {"nvlink1", "NVLink 1 (P100), one link", Transport::kNvlink, 20 * kGB, 20.0 / 25.0, 0.5 * kUs, 18 * kGB},
    {"pcie3", "PCIe Gen3 x16", Transport::kPcie, 15.75 * kGB, 12.0 / 15.75, 0.5 * kUs, 12 * kGB},
    {"pcie4", "PCIe Gen4 x16", Transport::kPcie, 31.5 * kGB, 25.6 / 31.5, 0.5 * kUs, 24 * kGB},
    {"pcie5", "PCIe Gen5 x16", Transport::kPcie, 63 * kGB, 51.2 / 63.0, 0.5 * kUs, 48 * kGB},
    {"pcie6", "PCIe Gen6 x16", Transport::kPcie, 121 * kGB, 51.2 / 63.0, 0.5 * kUs, 96 * kGB},
    {"ib-edr", "InfiniBand EDR 4x (100 Gb/s)", Transport::kNet, 12.5 * kGB, 0.94, 1.0 * kUs, 12.5 * kGB},
    // FDR 4x: 14.0625 Gb/s per lane, the 56 Gb/s port rate (InfiniBand Trade Association roadmap); 64b/66b
    // encoding and transport overhead in the same 0.94 as the other IB rates.
    {"ib-fdr", "InfiniBand FDR 4x (56 Gb/s)", Transport::kNet, 7 * kGB, 0.94, 1.0 * kUs, 7 * kGB},
    {"ib-hdr", "InfiniBand HDR 4x (200 Gb/s)", Transport::kNet, 25 * kGB, 0.94, 1.0 * kUs, 25 * kGB},
    {"ib-ndr", "InfiniBand NDR 4x (400 Gb/s)", Transport::kNet, 50 * kGB, 0.94, 1.0 * kUs, 50 * kGB},
    {"ib-xdr", "InfiniBand XDR 4x (800 Gb/s)", Transport::kNet, 100 * kGB, 0.94, 1.0 * kUs, 100 * kGB},
    {"roce-100g", "Ethernet/RoCE 100 Gb/s", Transport::kNet, 12.5 * kGB, 0.94, 2.0 * kUs, 12.5 * kGB},
    {"roce-200g", "Ethernet/RoCE 200 Gb/s", Transport::kNet, 25 * kGB, 0.94, 2.0 * kUs, 25 * kGB},
    {"roce-400g", "Ethernet/RoCE 400 Gb/s", Transport::kNet, 50 * kGB, 0.94, 2.0 * kUs, 50 * kGB},
    // Host shared memory across the CPU interconnect (UPI-class); NCCL's topology search uses 40 GB/s for
    // Intel UPI and 16 GB/s for AMD, both already effective figures.
    {"shm", "Host shared memory across the CPU interconnect (UPI-class)", Transport::kHost, 40 * kGB, 1.0,
     1.0 * kUs, 40 * kGB},
    // An emulated node's port (strata validate): a veth pair shaped by tc, carrying TCP over IPv4 with a
    // 1500-byte MTU. tc counts every segment's Ethernet frame (1514 B without FCS) while TCP with timestamps
    // carries 1448 B of it (RFC 7323), so the payload rate is 1448/1514 of the shaped rate. The line rate is
    // whatever `validate cluster up` shapes; 1 Gb/s here, ~10 us one way through the kernel's stack.
    {"tcp-veth", "Emulated Ethernet: veth pair shaped by tc, TCP/IPv4, MTU 1500", Transport::kNet,
     0.125 * kGB, 1448.0 / 1514.0, 10.0 * kUs, 0.125 * kGB * 1448.0 / 1514.0},
}};
}  // namespace

std::span<const LinkKind> link_catalog() {
  return kLinks;
}

const LinkKind* find_link_kind(std::string_view name) {
  for (const auto& l : kLinks)
    if (l.name == name) return &l;
  return nullptr;
}

}  // namespace strata::hw
