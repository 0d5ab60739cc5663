#include "hw/topology.h"

#include <algorithm>
#include <limits>
#include <mutex>
#include <queue>
#include <shared_mutex>
#include <stdexcept>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

namespace strata::hw {

std::string_view vertex_kind_name(VertexKind k) {
  switch (k) {
    case VertexKind::kGpu: return "gpu";
    case VertexKind::kNvSwitch: return "nvswitch";
    case VertexKind::kPcieSwitch: return "pcie-switch";
    case VertexKind::kCpu: return "cpu";
    case VertexKind::kNic: return "nic";
    case VertexKind::kNetSwitch: return "net-switch";
  }
  return "?";
}

struct Topology::RouteCache {
  std::shared_mutex mutex;
  std::unordered_map<std::uint64_t, std::vector<LinkId>> routes;
};

Topology::Topology(std::string name, GpuSpec gpu, int nodes, int gpus_per_node, std::vector<Level> levels)
    : name_(std::move(name)),
      gpu_(std::move(gpu)),
      nodes_(nodes),
      gpus_per_node_(gpus_per_node),
      levels_(std::move(levels)),
      gpu_vertex_(static_cast<std::size_t>(nodes * gpus_per_node), -1),
      nic_of_gpu_(static_cast<std::size_t>(nodes * gpus_per_node), -1),
      cache_(std::make_shared<RouteCache>()) {}

VertexId Topology::add_vertex(Vertex v) {
  vertices_.push_back(std::move(v));
  out_links_.emplace_back();
  return static_cast<VertexId>(vertices_.size() - 1);
}

LinkId Topology::add_duplex(VertexId a, VertexId b, const LinkKind& kind, double line_bandwidth,
                            double efficiency, double latency, int multiplicity, bool shared) {
  const double bw = line_bandwidth * efficiency * multiplicity;
  const auto id = static_cast<LinkId>(links_.size());
  links_.push_back(Link{a, b, kind.name, kind.transport, bw, latency, multiplicity, shared});
  links_.push_back(Link{b, a, kind.name, kind.transport, bw, latency, multiplicity, shared});
  out_links_[static_cast<std::size_t>(a)].push_back(id);
  out_links_[static_cast<std::size_t>(b)].push_back(id + 1);
  return id;
}

void Topology::set_gpu_vertex(Rank r, VertexId v) { gpu_vertex_[static_cast<std::size_t>(r)] = v; }
void Topology::set_nic_of_gpu(Rank r, VertexId nic) { nic_of_gpu_[static_cast<std::size_t>(r)] = nic; }

std::optional<VertexId> Topology::nic_of(Rank r) const {
  const VertexId v = nic_of_gpu_[static_cast<std::size_t>(r)];
  if (v < 0) return std::nullopt;
  return v;
}

int Topology::nics_per_node() const {
  int n = 0;
  for (const auto& v : vertices_)
    if (v.kind == VertexKind::kNic && v.node == 0) ++n;
  return n;
}

bool Topology::nvls_capable() const {
  bool any = false;
  for (const auto& v : vertices_) {
    if (v.kind != VertexKind::kNvSwitch) continue;
    if (!v.nvls) return false;
    any = true;
  }
  return any && node_switched_;
}

std::vector<int> Topology::coordinates(Rank r) const {
  std::vector<int> coords(levels_.size());
  for (std::size_t i = levels_.size(); i-- > 0;) {
    coords[i] = r % levels_[i].count;
    r /= levels_[i].count;
  }
  return coords;
}

std::optional<LinkId> Topology::direct_link(Rank a, Rank b) const {
  const VertexId va = gpu_vertex(a), vb = gpu_vertex(b);
  for (LinkId l : out_links_[static_cast<std::size_t>(va)])
    if (links_[static_cast<std::size_t>(l)].dst == vb) return l;
  return std::nullopt;
}

void Topology::finalize() {
  for (Rank r = 0; r < num_gpus(); ++r)
    if (gpu_vertex(r) < 0) throw std::runtime_error(fmt::format("GPU {} has no vertex", r));
  // Every GPU must reach every other. Checking one source per node plus every GPU of node 0 as a target
  // covers inter-node reachability; intra-node pairs are checked exhaustively.
  for (int n = 0; n < nodes_; ++n)
    for (int i = 0; i < gpus_per_node_; ++i)
      for (int j = 0; j < gpus_per_node_; ++j) {
        if (i == j) continue;
        const Rank a = n * gpus_per_node_ + i, b = n * gpus_per_node_ + j;
        if (compute_route(a, b).empty())
          throw std::runtime_error(fmt::format("GPU {} cannot reach GPU {} ({} -> {})", a, b,
                                               vertices_[gpu_vertex(a)].name, vertices_[gpu_vertex(b)].name));
      }
  for (int n = 1; n < nodes_; ++n)
    for (int i = 0; i < gpus_per_node_; ++i) {
      const Rank a = i, b = n * gpus_per_node_ + i;
      if (compute_route(a, b).empty())
        throw std::runtime_error(fmt::format("GPU {} cannot reach GPU {} ({} -> {})", a, b,
                                             vertices_[gpu_vertex(a)].name, vertices_[gpu_vertex(b)].name));
    }
}

std::vector<LinkId> Topology::shortest_path(VertexId from, VertexId to, bool network_only, bool nvlink_only) const {
  // Dijkstra with cost = latency + (1 MiB / bandwidth): prefers fast links, then short paths. Ties break on
  // the smaller vertex id so routes never depend on container order.
  constexpr double kRefBytes = 1024.0 * 1024.0;
  const auto n = vertices_.size();
  const VertexId from_node = vertices_[static_cast<std::size_t>(from)].node;
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
    const Vertex& vx = vertices_[static_cast<std::size_t>(v)];
    // GPUs never forward traffic; NICs forward only between PCIe and the network.
    if (v != from && vx.kind == VertexKind::kGpu) continue;
    if (!network_only && v != from && vx.kind == VertexKind::kNic) continue;
    for (LinkId l : out_links_[static_cast<std::size_t>(v)]) {
      const Link& lk = links_[static_cast<std::size_t>(l)];
      const Vertex& w = vertices_[static_cast<std::size_t>(lk.dst)];
      if (network_only && w.kind != VertexKind::kNic && w.kind != VertexKind::kNetSwitch) continue;
      if (!network_only && w.node != from_node) continue;
      if (nvlink_only && lk.transport != Transport::kNvlink) continue;
      const double nd = d + lk.latency + kRefBytes / lk.bandwidth;
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
  for (VertexId v = to; v != from;) {
    const LinkId l = via[static_cast<std::size_t>(v)];
    path.push_back(l);
    v = links_[static_cast<std::size_t>(l)].src;
  }
  std::reverse(path.begin(), path.end());
  return path;
}

std::vector<LinkId> Topology::compute_route(Rank a, Rank b) const {
  if (a == b) return {};
  if (node_of(a) == node_of(b)) {
    // Like NCCL's P2P transport: NVLink whenever the GPUs reach each other over NVLink alone (a direct link
    // or an NVSwitch), however thin; otherwise the fastest path over PCIe switches and CPUs.
    auto nvlink = shortest_path(gpu_vertex(a), gpu_vertex(b), false, true);
    if (!nvlink.empty()) return nvlink;
    return shortest_path(gpu_vertex(a), gpu_vertex(b), false);
  }
  const auto nic_a = nic_of(a), nic_b = nic_of(b);
  if (!nic_a || !nic_b) return {};
  auto out = shortest_path(gpu_vertex(a), *nic_a, false);
  auto net = shortest_path(*nic_a, *nic_b, true);
  auto in = shortest_path(*nic_b, gpu_vertex(b), false);
  if (out.empty() || net.empty() || in.empty()) return {};
  out.insert(out.end(), net.begin(), net.end());
  out.insert(out.end(), in.begin(), in.end());
  return out;
}

std::span<const LinkId> Topology::route(Rank a, Rank b) const {
  const std::uint64_t key = (static_cast<std::uint64_t>(a) << 32) | static_cast<std::uint32_t>(b);
  {
    std::shared_lock lock(cache_->mutex);
    if (auto it = cache_->routes.find(key); it != cache_->routes.end()) return it->second;
  }
  auto path = compute_route(a, b);
  std::unique_lock lock(cache_->mutex);
  auto [it, inserted] = cache_->routes.try_emplace(key, std::move(path));
  return it->second;
}

Transport Topology::route_transport(Rank a, Rank b) const {
  Transport t = Transport::kNvlink;
  for (LinkId l : route(a, b)) {
    const Transport lt = link(l).transport;
    if (lt == Transport::kNet) return Transport::kNet;
    if (lt == Transport::kPcie || lt == Transport::kHost) t = Transport::kPcie;
  }
  return t;
}

double Topology::route_latency(Rank a, Rank b) const {
  double s = 0;
  for (LinkId l : route(a, b)) s += link(l).latency;
  return s;
}

double Topology::route_bandwidth(Rank a, Rank b) const {
  double bw = std::numeric_limits<double>::infinity();
  for (LinkId l : route(a, b)) bw = std::min(bw, link(l).bandwidth);
  return bw;
}

}  // namespace strata::hw
