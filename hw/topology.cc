#include "hw/topology.h"

#include <algorithm>
#include <bit>
#include <iterator>
#include <limits>
#include <map>
#include <mutex>
#include <numeric>
#include <queue>
#include <shared_mutex>
#include <stdexcept>
#include <tuple>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>

namespace strata::hw {

std::string_view vertex_kind_name(VertexKind k) {
  switch (k) {
    case VertexKind::kGpu:
      return "gpu";
    case VertexKind::kNvSwitch:
      return "nvswitch";
    case VertexKind::kPcieSwitch:
      return "pcie-switch";
    case VertexKind::kCpu:
      return "cpu";
    case VertexKind::kNic:
      return "nic";
    case VertexKind::kNetSwitch:
      return "net-switch";
  }
  return "?";
}

namespace {
constexpr std::pair<CpuVendor, std::string_view> kCpuVendors[] = {
    {CpuVendor::kIntel, "intel"}, {CpuVendor::kAmd, "amd"}, {CpuVendor::kOther, "other"}};
}  // namespace

std::string_view cpu_vendor_name(CpuVendor v) {
  for (const auto& [vendor, name] : kCpuVendors)
    if (vendor == v) return name;
  return "?";
}

std::optional<CpuVendor> parse_cpu_vendor(std::string_view name) {
  for (const auto& [vendor, vendor_name] : kCpuVendors)
    if (vendor_name == name) return vendor;
  return std::nullopt;
}

// One shortest-path tree over the network switches, grown from `root` reached at distance `root_dist`:
// per switch (by switch index) its distance and the link it is entered by (-1 for the root).
struct Topology::SwitchTree {
  std::vector<double> dist;
  std::vector<LinkId> via;
};

struct Topology::RouteCache {
  std::shared_mutex mutex;
  std::unordered_map<std::uint64_t, std::vector<LinkId>> routes;
  std::shared_mutex tree_mutex;
  // Keyed by root switch and the bit pattern of its distance (see network_path).
  std::map<std::pair<VertexId, std::uint64_t>, std::shared_ptr<const Topology::SwitchTree>> trees;
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

void Topology::set_gpu_vertex(Rank r, VertexId v) {
  gpu_vertex_[static_cast<std::size_t>(r)] = v;
}
void Topology::set_nic_of_gpu(Rank r, VertexId nic) {
  nic_of_gpu_[static_cast<std::size_t>(r)] = nic;
}

std::optional<VertexId> Topology::nic_of(Rank r) const {
  const VertexId v = nic_of_gpu_[static_cast<std::size_t>(r)];
  if (v < 0) return std::nullopt;
  return v;
}

int Topology::nics_per_node() const {
  if (!finalized_) throw std::logic_error("Topology::nics_per_node before finalize()");
  return nics_per_node_;
}

bool Topology::nvls_capable() const {
  if (!finalized_) throw std::logic_error("Topology::nvls_capable before finalize()");
  return nvls_capable_;
}

std::vector<int> Topology::coordinates(Rank r) const {
  std::vector<int> coords(levels_.size());
  for (std::size_t i = levels_.size(); i-- > 0;) {
    coords[i] = r % levels_[i].count;
    r /= levels_[i].count;
  }
  return coords;
}

bool Topology::has_nvlink(Rank r) const {
  for (LinkId l : out_links_[static_cast<std::size_t>(gpu_vertex(r))])
    if (links_[static_cast<std::size_t>(l)].transport == Transport::kNvlink) return true;
  return false;
}

std::optional<LinkId> Topology::direct_link(Rank a, Rank b) const {
  const VertexId va = gpu_vertex(a), vb = gpu_vertex(b);
  for (LinkId l : out_links_[static_cast<std::size_t>(va)])
    if (links_[static_cast<std::size_t>(l)].dst == vb) return l;
  return std::nullopt;
}

namespace {

// Disjoint sets over vertex ids (path halving, union by index so results never depend on order).
class DisjointSets {
 public:
  explicit DisjointSets(std::size_t n) : parent_(n) {
    for (std::size_t i = 0; i < n; ++i) parent_[i] = static_cast<VertexId>(i);
  }
  VertexId find(VertexId v) {
    while (parent_[static_cast<std::size_t>(v)] != v) {
      auto& p = parent_[static_cast<std::size_t>(v)];
      p = parent_[static_cast<std::size_t>(p)];
      v = p;
    }
    return v;
  }
  void unite(VertexId a, VertexId b) {
    a = find(a), b = find(b);
    if (a != b) parent_[static_cast<std::size_t>(std::max(a, b))] = std::min(a, b);
  }

 private:
  std::vector<VertexId> parent_;
};

bool forwards_inside_node(VertexKind k) {
  return k == VertexKind::kNvSwitch || k == VertexKind::kPcieSwitch || k == VertexKind::kCpu;
}
bool is_network(VertexKind k) {
  return k == VertexKind::kNic || k == VertexKind::kNetSwitch;
}

// Route cost of a link entered at distance d: latency + (1 MiB / bandwidth), prefers fast links, then short
// paths. One expression for every search, so that searches which must agree round alike.
double cost_after(double d, const Link& l) {
  constexpr double kRefBytes = 1024.0 * 1024.0;
  return d + l.latency + kRefBytes / l.bandwidth;
}

}  // namespace

void Topology::finalize() {
  for (Rank r = 0; r < num_gpus(); ++r)
    if (gpu_vertex(r) < 0) throw std::runtime_error(fmt::format("GPU {} has no vertex", r));
  // Reachability under the routing rules of shortest_path (GPUs and NICs never forward inside a node), in
  // time linear in the graph: intra-node switches/CPUs joined into components, the network likewise. Two
  // endpoints of a node reach each other when they are directly linked or touch a common component.
  const auto nv = vertices_.size();
  DisjointSets inside(nv), network(nv);
  for (const Link& l : links_) {
    const Vertex &a = vertices_[static_cast<std::size_t>(l.src)],
                 &b = vertices_[static_cast<std::size_t>(l.dst)];
    if (forwards_inside_node(a.kind) && forwards_inside_node(b.kind) && a.node == b.node)
      inside.unite(l.src, l.dst);
    if (is_network(a.kind) && is_network(b.kind)) network.unite(l.src, l.dst);
  }
  const auto touches = [&](VertexId v) {
    std::vector<VertexId> comps;
    for (LinkId l : out_links_[static_cast<std::size_t>(v)]) {
      const VertexId w = links_[static_cast<std::size_t>(l)].dst;
      if (forwards_inside_node(vertices_[static_cast<std::size_t>(w)].kind)) comps.push_back(inside.find(w));
    }
    std::sort(comps.begin(), comps.end());
    comps.erase(std::unique(comps.begin(), comps.end()), comps.end());
    return comps;
  };
  const auto reaches = [&](VertexId a, const std::vector<VertexId>& ca, VertexId b,
                           const std::vector<VertexId>& cb) {
    for (LinkId l : out_links_[static_cast<std::size_t>(a)])
      if (links_[static_cast<std::size_t>(l)].dst == b) return true;
    std::vector<VertexId> common;
    std::set_intersection(ca.begin(), ca.end(), cb.begin(), cb.end(), std::back_inserter(common));
    return !common.empty();
  };
  const auto unreachable = [&](Rank a, Rank b) {
    return std::runtime_error(fmt::format("GPU {} cannot reach GPU {} ({} -> {})", a, b,
                                          vertices_[static_cast<std::size_t>(gpu_vertex(a))].name,
                                          vertices_[static_cast<std::size_t>(gpu_vertex(b))].name));
  };
  for (int n = 0; n < nodes_; ++n) {
    std::vector<std::vector<VertexId>> comps;
    for (int i = 0; i < gpus_per_node_; ++i) comps.push_back(touches(gpu_vertex(n * gpus_per_node_ + i)));
    // Usual case: one component (the host, or the NVSwitch) touched by every GPU of the node.
    std::vector<VertexId> everywhere = comps.front();
    for (const auto& c : comps) {
      std::vector<VertexId> keep;
      std::set_intersection(everywhere.begin(), everywhere.end(), c.begin(), c.end(),
                            std::back_inserter(keep));
      everywhere = std::move(keep);
    }
    if (everywhere.empty())
      for (int i = 0; i < gpus_per_node_; ++i)
        for (int j = i + 1; j < gpus_per_node_; ++j) {
          const Rank a = n * gpus_per_node_ + i, b = n * gpus_per_node_ + j;
          if (!reaches(gpu_vertex(a), comps[static_cast<std::size_t>(i)], gpu_vertex(b),
                       comps[static_cast<std::size_t>(j)]))
            throw unreachable(a, b);
        }
    if (nodes_ == 1) continue;
    for (int i = 0; i < gpus_per_node_; ++i) {
      const Rank r = n * gpus_per_node_ + i;
      const VertexId nic = nic_of_gpu_[static_cast<std::size_t>(r)];
      const Rank other = (r + gpus_per_node_) % num_gpus();
      if (nic < 0 || !reaches(gpu_vertex(r), comps[static_cast<std::size_t>(i)], nic, touches(nic)) ||
          network.find(nic) != network.find(nic_of_gpu_[static_cast<std::size_t>(other)]))
        throw unreachable(r, other);
    }
  }
  nics_per_node_ = 0;
  nvls_capable_ = node_switched_;
  bool any_nvswitch = false;
  for (const auto& v : vertices_) {
    if (v.kind == VertexKind::kNic && v.node == 0) ++nics_per_node_;
    if (v.kind == VertexKind::kNvSwitch) {
      any_nvswitch = true;
      nvls_capable_ = nvls_capable_ && v.nvls;
    }
  }
  nvls_capable_ = nvls_capable_ && any_nvswitch;
  index_network();
  finalized_ = true;
}

void Topology::index_network() {
  const auto nv = vertices_.size();
  switch_index_.assign(nv, -1);
  nic_uplink_.assign(nv, -1);
  nic_downlink_.assign(nv, -1);
  num_switches_ = 0;
  for (std::size_t v = 0; v < nv; ++v)
    if (vertices_[v].kind == VertexKind::kNetSwitch) switch_index_[v] = num_switches_++;
  nics_are_network_leaves_ = true;
  const auto kind = [&](VertexId v) { return vertices_[static_cast<std::size_t>(v)].kind; };
  for (std::size_t i = 0; i < links_.size(); ++i) {
    const Link& l = links_[i];
    if (kind(l.src) != VertexKind::kNic && kind(l.dst) != VertexKind::kNic) continue;
    if (!is_network(kind(l.src)) || !is_network(kind(l.dst))) continue;  // a NIC's PCIe side
    if (kind(l.src) == VertexKind::kNic && kind(l.dst) == VertexKind::kNic) {
      nics_are_network_leaves_ = false;  // NIC-to-NIC cable: a NIC could forward
      continue;
    }
    auto& slot = kind(l.src) == VertexKind::kNic ? nic_uplink_[static_cast<std::size_t>(l.src)]
                                                 : nic_downlink_[static_cast<std::size_t>(l.dst)];
    if (slot >= 0) nics_are_network_leaves_ = false;  // multi-homed NIC: it could forward
    slot = static_cast<LinkId>(i);
  }
}

std::vector<LinkId> Topology::shortest_path(VertexId from, VertexId to, bool network_only,
                                            bool nvlink_only) const {
  // Dijkstra with cost = latency + (1 MiB / bandwidth) (cost_after). Among equally short ways into a vertex
  // the one entering by the smaller link id wins, so routes never depend on container or heap order.
  const auto n = vertices_.size();
  const VertexId from_node = vertices_[static_cast<std::size_t>(from)].node;
  // Per-thread scratch sized to the largest graph seen, reset only where this search wrote: a route costs
  // the part of the graph it explores (one node, or the network), not the whole cluster.
  struct Scratch {
    std::vector<double> dist;
    std::vector<LinkId> via;
    std::vector<VertexId> touched;
  };
  thread_local Scratch scratch;
  if (scratch.dist.size() < n) {
    scratch.dist.resize(n, std::numeric_limits<double>::infinity());
    scratch.via.resize(n, -1);
  }
  auto& dist = scratch.dist;
  auto& via = scratch.via;
  struct Reset {
    Scratch& s;
    ~Reset() {
      for (VertexId v : s.touched) {
        s.dist[static_cast<std::size_t>(v)] = std::numeric_limits<double>::infinity();
        s.via[static_cast<std::size_t>(v)] = -1;
      }
      s.touched.clear();
    }
  } reset{scratch};
  scratch.touched.push_back(from);
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
      const double nd = cost_after(d, lk);
      auto& cur = dist[static_cast<std::size_t>(lk.dst)];
      if (nd < cur || (nd == cur && via[static_cast<std::size_t>(lk.dst)] > l)) {
        if (cur == std::numeric_limits<double>::infinity()) scratch.touched.push_back(lk.dst);
        cur = nd;
        via[static_cast<std::size_t>(lk.dst)] = l;
        heap.emplace(nd, lk.dst);
      }
    }
  }
  std::vector<LinkId> path;
  if (from == to || via[static_cast<std::size_t>(to)] < 0) return path;
  path.reserve(8);
  for (VertexId v = to; v != from;) {
    const LinkId l = via[static_cast<std::size_t>(v)];
    path.push_back(l);
    v = links_[static_cast<std::size_t>(l)].src;
  }
  std::reverse(path.begin(), path.end());
  return path;
}

// Why network_path equals shortest_path(nic_a, nic_b, true) when every NIC is a network leaf (one link out
// to a switch, one in from a switch; otherwise it simply calls shortest_path):
//  - Popping nic_a leaves exactly one label: its switch s at d0 = cost_after(0, uplink), entered by the
//    uplink. Every later path from nic_a starts that way, so the rest of the search is a search from s
//    seeded with d0; the tree below is that search with the same floating-point sums, so its distances
//    and tie-breaks (smaller entering link id, which does not depend on pop order) are the same.
//  - Other NICs change nothing when popped: a leaf's only way out is back to its switch, at a cost
//    strictly above that switch's distance. So the tree is searched over switches alone.
//  - nic_b is entered only by its downlink from switch u, so its route is the tree's path to u plus the
//    downlink; every switch on that path is closer than nic_b, hence final when the old search stopped.
// One tree per (switch, d0) serves every NIC on that switch with that uplink cost, so a cluster's network
// routes cost a few searches over its switches instead of one search over all its NICs per GPU pair.
std::vector<LinkId> Topology::network_path(VertexId nic_a, VertexId nic_b) const {
  if (!finalized_ || !nics_are_network_leaves_) return shortest_path(nic_a, nic_b, true);
  const LinkId up = nic_uplink_[static_cast<std::size_t>(nic_a)];
  const LinkId down = nic_downlink_[static_cast<std::size_t>(nic_b)];
  if (nic_a == nic_b || up < 0 || down < 0) return {};
  const Link& up_link = links_[static_cast<std::size_t>(up)];
  const auto tree = switch_tree(up_link.dst, cost_after(0.0, up_link));
  const auto index = [&](VertexId v) {
    return static_cast<std::size_t>(switch_index_[static_cast<std::size_t>(v)]);
  };
  VertexId v = links_[static_cast<std::size_t>(down)].src;
  if (tree->dist[index(v)] == std::numeric_limits<double>::infinity()) return {};
  std::vector<LinkId> path{down};
  for (LinkId l = tree->via[index(v)]; l >= 0; l = tree->via[index(v)]) {
    path.push_back(l);
    v = links_[static_cast<std::size_t>(l)].src;
  }
  path.push_back(up);
  std::reverse(path.begin(), path.end());
  return path;
}

std::shared_ptr<const Topology::SwitchTree> Topology::switch_tree(VertexId root, double root_dist) const {
  const std::pair<VertexId, std::uint64_t> key{root, std::bit_cast<std::uint64_t>(root_dist)};
  {
    std::shared_lock lock(cache_->tree_mutex);
    if (auto it = cache_->trees.find(key); it != cache_->trees.end()) return it->second;
  }
  auto tree = std::make_shared<SwitchTree>();
  const auto ns = static_cast<std::size_t>(num_switches_);
  tree->dist.assign(ns, std::numeric_limits<double>::infinity());
  tree->via.assign(ns, -1);
  const auto index = [&](VertexId v) {
    return static_cast<std::size_t>(switch_index_[static_cast<std::size_t>(v)]);
  };
  using Item = std::tuple<double, VertexId>;
  std::priority_queue<Item, std::vector<Item>, std::greater<>> heap;
  tree->dist[index(root)] = root_dist;
  heap.emplace(root_dist, root);
  while (!heap.empty()) {
    const auto [d, v] = heap.top();
    heap.pop();
    if (d > tree->dist[index(v)]) continue;
    for (LinkId l : out_links_[static_cast<std::size_t>(v)]) {
      const Link& lk = links_[static_cast<std::size_t>(l)];
      if (vertices_[static_cast<std::size_t>(lk.dst)].kind != VertexKind::kNetSwitch) continue;
      const double nd = cost_after(d, lk);
      auto& cur = tree->dist[index(lk.dst)];
      auto& via = tree->via[index(lk.dst)];
      if (lk.dst != root && (nd < cur || (nd == cur && via > l))) {
        cur = nd;
        via = l;
        heap.emplace(nd, lk.dst);
      }
    }
  }
  std::unique_lock lock(cache_->tree_mutex);
  return cache_->trees.try_emplace(key, std::move(tree)).first->second;
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
  auto net = network_path(*nic_a, *nic_b);
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

std::vector<Rank> Topology::all_ranks() const {
  std::vector<Rank> all(static_cast<std::size_t>(num_gpus()));
  std::iota(all.begin(), all.end(), 0);
  return all;
}

Transport Topology::route_transport(Rank a, Rank b) const {
  return route_transport(route(a, b));
}

Transport Topology::route_transport(std::span<const LinkId> links) const {
  Transport t = Transport::kNvlink;
  for (LinkId l : links) {
    const Transport lt = link(l).transport;
    if (lt == Transport::kNet) return Transport::kNet;
    if (lt == Transport::kPcie || lt == Transport::kHost) t = Transport::kPcie;
  }
  return t;
}

double Topology::route_latency(Rank a, Rank b) const {
  return route_latency(route(a, b));
}

double Topology::route_latency(std::span<const LinkId> links) const {
  double s = 0;
  for (LinkId l : links) s += link(l).latency;
  return s;
}

double Topology::route_bandwidth(Rank a, Rank b) const {
  double bw = std::numeric_limits<double>::infinity();
  for (LinkId l : route(a, b)) bw = std::min(bw, link(l).bandwidth);
  return bw;
}

}  // namespace strata::hw
