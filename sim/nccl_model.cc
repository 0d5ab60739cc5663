#include "sim/nccl_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

namespace strata::sim::nccl {
namespace {
constexpr double kUs = 1e-6;
constexpr int idx(Protocol p) { return p == Protocol::kLL ? 0 : (p == Protocol::kLL128 ? 1 : 2); }
// [family][LL, LL128, Simple], microseconds.
constexpr double kBase[3][3] = {{6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}, {0, 0, 0}};
// [transport NVLink, PCI, NET][family Tree, Ring, NVLS][LL, LL128, Simple], microseconds.
constexpr double kHop[3][3][3] = {
    {{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}, {0, 0, 25}},
    {{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}, {0, 0, 0}},
    {{5.0, 8.5, 14}, {2.7, 4.0, 14.0}, {0, 0, 18}},
};
int fam(Family f) { return f == Family::kTree ? 0 : (f == Family::kRing ? 1 : 2); }
int trans(hw::Transport t) {
  return t == hw::Transport::kNvlink ? 0 : (t == hw::Transport::kNet ? 2 : 1);
}
// llMaxBw: the LL protocol's aggregate cap, GB/s (single node by GPU generation; multi-node, Intel CPUs).
double ll_max_bw(const hw::Topology& topo, int nodes) {
  if (nodes > 1) return (nodes == 2 ? 39.0 : 20.4) * 1e9;
  switch (topo.gpu().arch) {
    case hw::GpuArch::kVolta: return 39.0e9;
    case hw::GpuArch::kAmpere: return 87.7e9;
    case hw::GpuArch::kHopper: return 141.0e9;
    case hw::GpuArch::kBlackwell: return 282.0e9;
  }
  return 39.0e9;
}
}  // namespace

double base_latency(Family f, Protocol p) { return kBase[fam(f)][idx(p)] * kUs; }
double hop_latency(hw::Transport t, Family f, Protocol p) { return kHop[trans(t)][fam(f)][idx(p)] * kUs; }

GroupBandwidth group_bandwidth(const hw::Topology& topo, std::span<const hw::Rank> group) {
  GroupBandwidth g;
  g.ranks = static_cast<int>(group.size());
  std::set<int> nodes;
  std::vector<int> per_node(static_cast<std::size_t>(topo.nodes()), 0);
  for (hw::Rank r : group) {
    nodes.insert(topo.node_of(r));
    g.ranks_per_node = std::max(g.ranks_per_node, ++per_node[static_cast<std::size_t>(topo.node_of(r))]);
  }
  g.nodes = static_cast<int>(nodes.size());
  // Scale-up: everything a GPU can push to its node peers over NVLink (switch port or direct links).
  const hw::VertexId v = topo.gpu_vertex(group.empty() ? 0 : group[0]);
  double nvlink = 0, pcie = 0;
  for (const auto& l : topo.links()) {
    if (l.src != v) continue;
    if (l.transport == hw::Transport::kNvlink) nvlink += l.bandwidth;
    if (l.transport == hw::Transport::kPcie) pcie = std::max(pcie, l.bandwidth);
  }
  g.nvlink = nvlink > 0;
  g.intra = nvlink > 0 ? nvlink : pcie;
  if (g.nodes > 1) {
    double nic_bw = 0;
    int nics = 0;
    for (const auto& l : topo.links()) {
      const auto& src = topo.vertices()[static_cast<std::size_t>(l.src)];
      const auto& dst = topo.vertices()[static_cast<std::size_t>(l.dst)];
      if (src.kind == hw::VertexKind::kNic && src.node == 0 && dst.kind == hw::VertexKind::kNetSwitch) {
        nic_bw += l.bandwidth;
        ++nics;
      }
    }
    // A node's group members can use only as many NICs as there are members on it.
    g.inter = nics > 0 ? nic_bw * std::min(1.0, static_cast<double>(g.ranks_per_node) / nics) : 0;
  }
  return g;
}

std::vector<Estimate> estimate_all(const hw::Topology& topo, const CollectiveSpec& spec) {
  const GroupBandwidth g = group_bandwidth(topo, spec.group);
  const hw::Transport intra_t = g.nvlink ? hw::Transport::kNvlink : hw::Transport::kPcie;
  std::vector<Estimate> out;
  for (const CollectiveAlgorithm* algo : AlgorithmRegistry::instance().all()) {
    const Family f = algo->family();
    for (Protocol p : {Protocol::kLL, Protocol::kLL128, Protocol::kSimple}) {
      if (p == Protocol::kLL128 && !g.nvlink) continue;  // NCCL enables LL128 on NVLink only
      CollectiveSpec trial = spec;
      trial.protocol = p;
      if (!algo->unsupported_reason(trial, topo).empty()) continue;
      const EstimateInputs in{topo,
                              trial,
                              g,
                              base_latency(f, p),
                              hop_latency(intra_t, f, p),
                              hop_latency(hw::Transport::kNet, f, p),
                              ll_max_bw(topo, g.nodes),
                              protocol_wire_factor(p)};
      out.push_back({std::string(algo->name()), p, algo->estimate(in)});
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const Estimate& a, const Estimate& b) { return a.seconds < b.seconds; });
  return out;
}

}  // namespace strata::sim::nccl
