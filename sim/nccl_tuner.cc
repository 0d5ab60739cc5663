#include "sim/nccl_tuner.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <vector>

#include "sim/algorithms/algorithms.h"
#include "sim/nccl_model.h"

namespace strata::sim::nccl {
namespace {

constexpr double kGB = 1e9;
constexpr double kInf = std::numeric_limits<double>::infinity();

// --- NCCL's topology search (v2.21.5-1 src/graph/search.cc) ---

// The per-channel speeds the search tries, GB/s: inside a node and with a network, before and from Hopper.
constexpr std::array kSpeedIntra{40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0};
constexpr std::array kSpeedInter{48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0,
                                 7.0,  6.0,  5.0,  4.0,  3.0,  2.4,  1.2,  0.24, 0.12};
constexpr std::array kSm90SpeedIntra{60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0};
constexpr std::array kSm90SpeedInter{48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5,
                                     15.0, 12.0, 6.0,  3.0,  2.4,  1.2,  0.24, 0.12};
constexpr int kMaxRingChannels = 16;  // MAXCHANNELS / 2 (init.cc: ringGraph.maxChannels)

std::span<const double> speed_ladder(int cc, bool network) {
  if (cc >= 90)
    return network ? std::span<const double>(kSm90SpeedInter) : std::span<const double>(kSm90SpeedIntra);
  return network ? std::span<const double>(kSpeedInter) : std::span<const double>(kSpeedIntra);
}

// ncclTopoCompute's pass 1: from the fastest speed no path is slower than and `min_channels` of which fit the
// GPUs' total bandwidth, the most channels at each speed (channels_at), keeping a graph only when it carries
// more (channels x speed) than the best so far; done once the best reaches `total_bw`, and no slower speed
// is tried once it would be below 0.49 of the best's.
template <typename ChannelsAt>
TopoGraph search(std::span<const double> ladder, double max_bw, double total_bw, double start_total_bw,
                 int min_channels, ChannelsAt channels_at) {
  std::size_t i = 0;
  while (i + 1 < ladder.size() && (ladder[i] > max_bw || ladder[i] * min_channels > start_total_bw)) ++i;
  TopoGraph best;
  for (;; ++i) {
    const int c = channels_at(ladder[i]);
    if (c >= min_channels && c * ladder[i] > best.channels * best.bw_intra) best = {c, ladder[i], ladder[i]};
    if (best.channels > 0 && best.channels * best.bw_intra >= total_bw) break;
    if (i + 1 >= ladder.size()) break;
    if (best.channels > 0 && ladder[i + 1] / best.bw_inter <= 0.49) break;
  }
  return best;
}

// ncclTopoDupChannels: a fast graph's channels are doubled at half the speed, except on Hopper and later
// below 50 GB/s with more than 4 channels, and never beyond the graph's maximum.
TopoGraph dup_channels(TopoGraph g, int cc, int max_channels) {
  if (g.channels == 0 || g.bw_intra < 25.0) return g;
  if (cc > 80 && g.bw_intra < 50.0 && g.channels > 4) return g;
  const int dup = std::min(g.channels * 2, max_channels);
  const int factor = (dup + g.channels - 1) / g.channels;
  return {dup, g.bw_intra / factor, g.bw_inter / factor};
}

// A link's NCCL rating (GB/s), scaled like the link when a system file overrides its bandwidth.
double nccl_gbps(const hw::Link& l) {
  const hw::LinkKind* k = hw::find_link_kind(l.kind);
  if (!k || !(k->effective_bandwidth() > 0)) return l.bandwidth / kGB;
  return k->nccl_rating * (l.bandwidth / k->effective_bandwidth()) / kGB;
}

int compute_capability(hw::GpuArch a) {
  switch (a) {
    case hw::GpuArch::kVolta:
      return 70;
    case hw::GpuArch::kAmpere:
      return 80;
    case hw::GpuArch::kHopper:
      return 90;
    case hw::GpuArch::kBlackwell:
      return 100;
    default:
      return 60;  // Pascal and older: NCCL's Volta rows, no LL128
  }
}

// --- NCCL's tuner (v2.21.5-1 src/graph/tuning.cc) ---

// baseLat and hwLat [NVLink, PCI, NET], microseconds, [algorithm][LL, LL128, Simple].
constexpr double kBaseLat[4][3] = {{6.8, 14.0, 0}, {6.6, 14.0, 8.4}, {0, 0, 0}, {0, 0, 0}};
constexpr double kHwLat[3][4][3] = {
    {{.6, 1.25, 28}, {.6, 1.9, 3.4}, {0, 0, 25}, {0, 0, 25}},
    {{1.0, 1.9, 28}, {1.0, 2.5, 5.7}, {0, 0, 0}, {0, 0, 0}},
    {{5.0, 8.5, 28}, {2.7, 4.0, 14.0}, {0, 0, 18}, {0, 0, 14}},
};
// [Volta, Ampere, Hopper][1 node, 2 nodes, more], GB/s.
constexpr double kLlMaxBw[3][3] = {{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}};
constexpr double kPerChMaxRingLl128Bw[3][3] = {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}};
constexpr double kPerChMaxTreeLl128Bw[3][3] = {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}};
constexpr double kPerChMaxTreeBw[3][3] = {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}};
// Applied to the tree's bandwidth by message size (log2 of bytes / 64), [LL, LL128, Simple].
constexpr double kTreeCorrection[3][23] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9}};

int log2i(long long n) {
  int l = 0;
  while (n >>= 1) ++l;
  return l;
}

// Bandwidth (GB/s, as algorithm bandwidth) and latency (us) of one pair, ncclTopoTuneModel; bandwidth 0 where
// NCCL disables the pair.
std::pair<double, double> rating(const TunerModel& m, Family a, Protocol p, CollectiveOp op) {
  const bool allreduce = op == CollectiveOp::kAllReduce;
  const bool scatter_gather = op == CollectiveOp::kReduceScatter || op == CollectiveOp::kAllGather;
  if ((op == CollectiveOp::kBroadcast || op == CollectiveOp::kReduce) && a != Family::kRing) return {0, 0};
  if (scatter_gather && a != Family::kRing && a != Family::kNvls) return {0, 0};
  if ((a == Family::kNvls || a == Family::kNvlsTree) && p != Protocol::kSimple) return {0, 0};
  if (a == Family::kNvlsTree && m.nodes == 1) return {0, 0};
  if (a == Family::kNvls && m.nodes > 1) return {0, 0};  // NVLS across nodes needs CollNet, off by default
  if ((a == Family::kNvls || a == Family::kNvlsTree) && m.nvls.channels == 0) return {0, 0};
  // LL128 only with NVLink inside the node and on Volta, Ampere and Hopper (switch (minCompCap)); 2.21
  // predates Blackwell, which later releases enable too, and strata gives Blackwell Hopper's rules
  // throughout.
  if (p == Protocol::kLL128 &&
      (!m.nvlink || (m.compute_capability != 70 && m.compute_capability != 80 && m.compute_capability < 90)))
    return {0, 0};

  const int cc_index = m.compute_capability >= 90 ? 2 : (m.compute_capability >= 80 ? 1 : 0);
  const int node_index = m.nodes <= 2 ? m.nodes - 1 : 2;
  const int ll_row = m.nodes == 1 ? cc_index : (m.amd_host ? 1 : 0);
  const double ll_max = kLlMaxBw[ll_row][node_index];
  const TopoGraph& g = a == Family::kRing ? m.ring : (a == Family::kTree ? m.tree : m.nvls);
  const double ppn = static_cast<double>(m.ranks) / m.nodes;
  const int nsteps = allreduce ? 2 * (m.ranks - 1) : (scatter_gather ? m.ranks - 1 : m.ranks);
  const int inter_steps =
      allreduce ? (m.nodes > 1 ? 2 * m.nodes : 0) : (scatter_gather ? m.nodes - 1 : m.nodes);

  double bw = m.nodes <= 2 ? g.bw_intra : g.bw_inter;
  if (a == Family::kNvls) bw = std::min(g.bw_intra, g.bw_inter);
  if (a == Family::kNvlsTree) bw = std::min(g.bw_intra, m.nodes <= 2 ? g.bw_inter : g.bw_inter / 2);
  double bus = g.channels * bw;
  if (a == Family::kRing && p == Protocol::kLL) bus = std::min(ll_max, bus * .5);
  if (a == Family::kRing && p == Protocol::kLL128)
    bus = std::min(bus * (ppn < 2 ? 0.7 : 0.92), g.channels * kPerChMaxRingLl128Bw[cc_index][node_index]);
  if (a == Family::kTree) bus = std::min(bus * .92, g.channels * kPerChMaxTreeBw[cc_index][node_index]);
  if (a == Family::kTree && p == Protocol::kLL) bus = std::min(bus / 3.8, ll_max);
  if (a == Family::kTree && p == Protocol::kLL128)
    bus = std::min(bus * (m.nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0),
                   g.channels * kPerChMaxTreeLl128Bw[cc_index][node_index]);
  const double ratio = a == Family::kRing ? static_cast<double>(m.ranks) / nsteps
                                          : (a == Family::kNvls || a == Family::kNvlsTree ? 5.0 / 6.0 : .5);
  const double algbw = bus * ratio;

  // NVLink latencies where the graphs' hops inside a node are NVLink; PCI with one GPU per node (no hops).
  const int intra_hw = m.nvlink && m.gpus_per_node > 1 ? 0 : 1;
  const int fi = table_index(a), pi = table_index(p);
  double latency = kBaseLat[fi][pi];
  double intra_lat = kHwLat[intra_hw][fi][pi];
  const double inter_lat = kHwLat[2][fi][pi];  // graph latencyInter: 0 (no CollNet)
  const int ranks_per_node = m.ranks / m.nodes;
  switch (a) {
    case Family::kRing:
      if (op == CollectiveOp::kBroadcast || op == CollectiveOp::kReduce) {
        // One hop's latency where every channel follows the same ring (sameChannels, one switched node);
        // across nodes the channels' rings differ, and NCCL charges every step (Simple at the tree's rate).
        const int hw = m.nodes == 1 ? intra_hw : 2;
        const int chunk_family = table_index(p == Protocol::kSimple ? Family::kTree : Family::kRing);
        latency += m.nodes == 1 ? kHwLat[hw][fi][pi] : nsteps * kHwLat[hw][chunk_family][pi];
      } else {
        if (m.nodes > 1)
          intra_lat = std::max(intra_lat, (m.amd_host ? 2.0 : 1.0) * (p == Protocol::kSimple ? 3 : 1));
        latency += (nsteps - inter_steps) * intra_lat + inter_steps * inter_lat;
      }
      break;
    case Family::kTree:
      latency += 2 * ((ranks_per_node - 1) * intra_lat + log2i(m.nodes) * inter_lat);
      break;
    case Family::kNvls:
      latency = intra_lat + (m.nodes > 1 ? inter_lat : 0);
      break;
    case Family::kNvlsTree:
      latency += intra_lat + 2 * log2i(m.nodes) * inter_lat;
      break;
    case Family::kHostMpi:  // not NCCL's (tuner_time does not ask)
      break;
  }
  return {algbw, latency};
}

// The NVLS graph (Hopper and later, an NVLink SHARP switch, 3 GPUs or more): one head per GPU, each GPU's
// link charged the speed once per other head and twice for its own, (n + 1) x speed within `total`; across
// nodes pass 2 raises the network speed alone, a step at a time, while it is below twice the NVLink speed and
// the NIC (`net`) allows the next. No channels where no speed fits.
TopoGraph nvls_graph(int cc, int n, int nodes, double total, double net) {
  const auto ladder = speed_ladder(cc, nodes > 1);
  std::size_t i = 0;
  while (i < ladder.size() && (n + 1) * ladder[i] > total + 1e-9) ++i;
  if (i == ladder.size()) return {};
  TopoGraph g{n, ladder[i], ladder[i]};
  while (nodes > 1 && i > 0 && g.bw_inter < 2 * g.bw_intra && ladder[i - 1] <= net + 1e-9)
    g.bw_inter = ladder[--i];
  return g;
}

// --- Rings over direct NVLinks: one node whose GPUs are wired to each other (DGX-1's hybrid cube-mesh) ---

// NCCL's search first looks for rings over direct NVLinks only (search.cc ncclTopoCompute: typeIntra starts
// at PATH_NVL), and each channel takes its speed off every directed link it crosses (followPath): the
// channels at a speed are the most directed Hamiltonian cycles, repeats allowed, that the links' ratings
// hold. Up to 2.21 the search is depth-first with a time limit; this one is exhaustive within a budget of
// partial choices (it finds the most there is on 8 GPUs or fewer).
class DirectRings {
 public:
  DirectRings(const hw::Topology& topo, std::span<const hw::Rank> members)
      : n_(members.size()), rating_(n_ * n_, 0.0) {
    for (std::size_t a = 0; a < n_; ++a)
      for (std::size_t b = 0; b < n_; ++b)
        if (auto l = a == b ? std::nullopt : topo.direct_link(members[a], members[b]);
            l && topo.link(*l).transport == hw::Transport::kNvlink)
          rating_[a * n_ + b] = nccl_gbps(topo.link(*l));
    std::vector<std::vector<hw::Rank>> cycles;
    if (n_ == 2 && rating_[1] > 0 && rating_[2] > 0) cycles.push_back({members[0], members[1]});
    if (n_ >= 3) cycles = algorithms::hamiltonian_cycles(topo, members, 5040);
    const auto at = [&](hw::Rank r) {
      return static_cast<std::size_t>(std::find(members.begin(), members.end(), r) - members.begin());
    };
    for (const auto& c : cycles) {
      std::vector<std::size_t> arcs;
      for (std::size_t i = 0; i < c.size(); ++i) {
        const std::size_t arc = at(c[i]) * n_ + at(c[(i + 1) % c.size()]);
        if (!(rating_[arc] > 0)) break;  // a direct link that is not NVLink
        arcs.push_back(arc);
      }
      if (arcs.size() == c.size()) cycles_.push_back(std::move(arcs));
    }
  }
  bool empty() const { return cycles_.empty(); }
  // NCCL's maxBw: the fastest path between two members (a path through another GPU is no faster than its
  // links).
  double max_bw() const { return *std::max_element(rating_.begin(), rating_.end()); }
  // NCCL's totalBw: the most NVLink rating one member has to the others (ncclTopoTrimSystem drops the links
  // to GPUs outside the communicator).
  double total_bw() const {
    double most = 0;
    for (std::size_t a = 0; a < n_; ++a) most = std::max(most, out_of(rating_, a));
    return most;
  }
  // The most cycles, up to `limit`, that fit at `speed` GB/s each.
  int most(double speed, int limit) const {
    std::vector<int> room(rating_.size());
    for (std::size_t i = 0; i < room.size(); ++i)
      room[i] = static_cast<int>(std::floor(rating_[i] / speed + 1e-9));
    int best = 0;
    long budget = 1 << 20;
    // Every cycle leaves every member once: the fewest free arcs out of a member bound what more fits.
    const auto bound = [&] {
      int fewest = std::numeric_limits<int>::max();
      for (std::size_t a = 0; a < n_; ++a) fewest = std::min(fewest, out_of(room, a));
      return fewest;
    };
    const auto fits = [&](const std::vector<std::size_t>& arcs) {
      return std::all_of(arcs.begin(), arcs.end(), [&](std::size_t a) { return room[a] > 0; });
    };
    std::function<void(std::size_t, int)> pack = [&](std::size_t first, int count) {
      best = std::max(best, count);
      if (best >= limit || --budget < 0 || count + bound() <= best) return;
      for (std::size_t c = first; c < cycles_.size() && best < limit; ++c) {
        if (!fits(cycles_[c])) continue;
        for (std::size_t a : cycles_[c]) --room[a];
        pack(c, count + 1);
        for (std::size_t a : cycles_[c]) ++room[a];
      }
    };
    pack(0, 0);
    return std::min(best, limit);
  }

 private:
  // Row `a` of an n x n matrix summed: what member a has on its links out.
  template <typename T>
  T out_of(const std::vector<T>& matrix, std::size_t a) const {
    const auto row = matrix.begin() + static_cast<std::ptrdiff_t>(a * n_);
    return std::accumulate(row, row + static_cast<std::ptrdiff_t>(n_), T{});
  }
  std::size_t n_;
  std::vector<double> rating_;                    // n x n, NCCL's rating of the direct NVLink a -> b, GB/s
  std::vector<std::vector<std::size_t>> cycles_;  // as indices into rating_
};

}  // namespace

std::optional<TunerModel> tuner_model(const hw::Topology& topo, std::span<const hw::Rank> group,
                                      std::string* why) {
  const auto fail = [&](std::string reason) -> std::optional<TunerModel> {
    if (why) *why = std::move(reason);
    return std::nullopt;
  };
  if (group.size() < 2) return fail("one rank");
  std::map<int, std::vector<hw::Rank>> by_node;
  for (hw::Rank r : group) by_node[topo.node_of(r)].push_back(r);
  const int n = static_cast<int>(by_node.begin()->second.size());
  for (const auto& [node, members] : by_node)
    if (static_cast<int>(members.size()) != n) return fail("the group has different GPU counts on its nodes");
  // GPUs wired to each other by NVLink, not through a switch.
  const auto wired = [&](const std::vector<hw::Rank>& members) {
    for (std::size_t i = 0; i < members.size(); ++i)
      for (std::size_t j = i + 1; j < members.size(); ++j)
        if (auto l = topo.direct_link(members[i], members[j]);
            l && topo.link(*l).transport == hw::Transport::kNvlink)
          return true;
    return false;
  };
  const bool wired_to_each_other =
      std::any_of(by_node.begin(), by_node.end(), [&](const auto& node) { return wired(node.second); });
  if (wired_to_each_other && by_node.size() > 1)
    return fail(
        "several nodes of GPUs wired to each other by NVLink (NCCL's rings through their NICs are not "
        "reproduced)");

  TunerModel m;
  m.ranks = static_cast<int>(group.size());
  m.nodes = static_cast<int>(by_node.size());
  m.compute_capability = compute_capability(topo.gpu().arch);
  m.amd_host = topo.cpu_vendor() == hw::CpuVendor::kAmd;
  // A GPU's bandwidth into its node (NCCL's totalBw): its NVLink links, or else its PCIe link.
  const hw::VertexId gpu = topo.gpu_vertex(group[0]);
  double nvlink = 0, pcie = 0;
  for (const hw::Link& l : topo.links()) {
    if (l.src != gpu) continue;
    if (l.transport == hw::Transport::kNvlink) nvlink += nccl_gbps(l);
    if (l.transport == hw::Transport::kPcie) pcie = std::max(pcie, nccl_gbps(l));
  }
  m.nvlink = nvlink > 0;
  m.gpus_per_node = n;
  const double total = m.nvlink ? nvlink : pcie;
  if (!(total > 0)) return fail("no NVLink or PCIe link from the GPUs");
  const int cc = m.compute_capability;

  // Across nodes a channel leaves each node through a NIC: NCCL's rating of the NIC's links (port and PCIe).
  std::set<hw::VertexId> nics;
  double net = kInf;
  if (m.nodes > 1) {
    for (hw::Rank r : by_node.begin()->second)
      if (auto nic = topo.nic_of(r)) nics.insert(*nic);
    if (nics.empty()) return fail("no NIC");
    for (const hw::Link& l : topo.links())
      if (l.src == *nics.begin()) net = std::min(net, nccl_gbps(l));
  }
  if (m.nodes == 1) {
    // One node: the ring search inside it, then the tree with the ring's channels. On a switch every channel
    // takes its speed off the GPU's links (NCCL's maxBw and totalBw are the GPU's bandwidth); on GPUs wired
    // to each other the rings follow the direct NVLinks (DirectRings), and the tree's chains, rings less a
    // hop, fit where the rings do.
    std::optional<DirectRings> direct;
    if (wired_to_each_other) {
      direct.emplace(topo, group);
      if (direct->empty())
        return fail(
            "no ring over the group's direct NVLinks (NCCL then tries paths through other GPUs or PCIe; "
            "not reproduced)");
    }
    const double max_bw = direct ? direct->max_bw() : total, total_bw = direct ? direct->total_bw() : total;
    const auto rings_at = [&](double s, int limit) {
      return direct ? direct->most(s, limit)
                    : std::min(limit, static_cast<int>(std::floor(total / s + 1e-9)));
    };
    const auto ladder = speed_ladder(cc, false);
    m.ring = dup_channels(search(ladder, max_bw, total_bw, total_bw, 1,
                                 [&](double s) { return rings_at(s, kMaxRingChannels); }),
                          cc, kMaxRingChannels);
    const int tree_channels = m.ring.channels;
    m.tree = search(ladder, max_bw, total_bw, total_bw * n / (n - 1.0), tree_channels, [&](double s) {
      return rings_at(s, tree_channels) >= tree_channels ? tree_channels : 0;
    });
  } else {
    // Each GPU sends over NVLink for every channel but the one it hands to its NIC (no NVLink hop at all
    // with one GPU per node).
    const int nic_count = static_cast<int>(nics.size());
    const auto net_at = [&](double s) {
      const int by_net = nic_count * static_cast<int>(std::floor(net / s + 1e-9));
      if (n == 1) return std::min(kMaxRingChannels, by_net);
      const double intra_room = total * n / (n - 1.0);
      return std::min({kMaxRingChannels, by_net, static_cast<int>(std::floor(intra_room / s + 1e-9))});
    };
    m.ring = dup_channels(search(speed_ladder(cc, true), net, total, total, 1, net_at), cc, kMaxRingChannels);
    // The tree is searched with exactly the ring's channels at the same network speed; its second pass then
    // raises the speed inside the node alone, a step at a time, while below twice the network speed and the
    // GPUs' links carry it (search.cc: "increase bwIntra for trees"; the tuner reads it on 2 nodes).
    m.tree = m.ring;
    const auto ladder = speed_ladder(cc, true);
    std::size_t i = 0;
    while (i < ladder.size() && ladder[i] > m.tree.bw_intra + 1e-9) ++i;
    while (i > 0 && m.tree.bw_intra < 2 * m.tree.bw_inter &&
           (n == 1 || m.tree.channels * ladder[i - 1] <= total + 1e-9))
      m.tree.bw_intra = ladder[--i];
  }
  if (m.ring.channels == 0 || m.tree.channels == 0)
    return fail("no speed of NCCL's search fits the links (NCCL then falls back to one slow channel)");
  if (cc >= 90 && topo.nvls_capable() && m.nvlink && n > 2) m.nvls = nvls_graph(cc, n, m.nodes, total, net);
  // ncclTopoPostset doubles the ring's channels for the communicator (at most MAXCHANNELS, 32).
  m.comm_channels = std::min(32, 2 * m.ring.channels);
  return m;
}

double nvls_tree_busbw_ceiling(const TunerModel& m) {
  // [Hopper, Blackwell][1 node, 2 nodes, more] (v2.28.3-1; one node has no NVLS-Tree).
  constexpr double kPerChMaxNvlsTreeBw[2][3] = {{0.0, 57.7, 45.5}, {0.0, 96.0, 80.0}};
  if (m.nvls.channels == 0 || m.nodes < 2 || m.compute_capability < 90) return kInf;
  const int arch = m.compute_capability >= 100 ? 1 : 0;
  return m.nvls.channels * kPerChMaxNvlsTreeBw[arch][m.nodes == 2 ? 1 : 2];
}

std::optional<double> tuner_time(const TunerModel& m, Family f, Protocol p, CollectiveOp op, double bytes) {
  if (f == Family::kHostMpi || op == CollectiveOp::kSendRecv || op == CollectiveOp::kAllToAll)
    return std::nullopt;
  auto [bw, latency] = rating(m, f, p, op);
  if (!(bw > 0)) return kInf;
  const int log_size = log2i(static_cast<long long>(bytes) >> 6);
  if (f == Family::kTree && log_size < 23) bw *= kTreeCorrection[table_index(p)][log_size];
  if (f == Family::kRing && p == Protocol::kSimple && m.nodes > 1 && op == CollectiveOp::kAllReduce &&
      bytes / (static_cast<double>(m.comm_channels) * m.ranks) >= 64)
    latency *= m.compute_capability < 80 ? 1.9 : 1.4;  // NCCL's "plateau effect of ring"
  return (latency + bytes / (1000 * bw)) * 1e-6;
}

}  // namespace strata::sim::nccl
