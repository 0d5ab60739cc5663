#include "sim/algorithms/algorithms.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "sim/nccl_model.h"

namespace strata::sim::algorithms {

void register_builtin(AlgorithmRegistry& registry) {
  registry.add(make_ring());
  registry.add(make_tree());
  registry.add(make_direct());
  registry.add(make_hierarchical());
  registry.add(make_nvls());
  registry.add(make_nvls_tree());
  registry.add(make_openmpi());
}

TaskId begin_collective(BuildContext& ctx) {
  const double base = nccl::base_latency(ctx.family, ctx.spec.protocol);
  return ctx.graph.add_delay(base, ctx.label("launch"), ctx.after);
}

TaskId add_bundle(BuildContext& ctx, std::span<const std::pair<hw::Rank, hw::Rank>> hops,
                  double payload_per_hop, double latency, std::int32_t label, std::span<const Dep> deps,
                  int lane) {
  return add_bundle(ctx, ctx.bundle_route(hops), hops, payload_per_hop, latency, label, deps, lane);
}

TaskId add_bundle(BuildContext& ctx, const CustomRoute& route,
                  std::span<const std::pair<hw::Rank, hw::Rank>> hops, double payload_per_hop, double latency,
                  std::int32_t label, std::span<const Dep> deps, int lane) {
  return ctx.graph.add_transfer_on(route, hops.front().first, hops.back().second, ctx.wire(payload_per_hop),
                                   latency, label, deps, lane);
}

double pipeline_pieces(double chunk, int chunks, double fill_unit) {
  const double per_chunk = fill_unit > 0 && fill_unit < chunk ? std::ceil(chunk / fill_unit) : 1.0;
  return std::max(1.0, chunks * per_chunk);
}

void LinkShares::count(std::span<const std::pair<hw::Rank, hw::Rank>> hops) {
  for (const auto& [a, b] : hops) {
    const bool between_nodes = topo_.node_of(a) != topo_.node_of(b);
    for (hw::LinkId l : topo_.route(a, b)) {
      const auto i = static_cast<std::size_t>(l);
      if (count_[i]++ == 0) touched_.push_back(l);
      if (between_nodes) network_[i] = 1;
    }
  }
}

void LinkShares::add(std::span<const std::pair<hw::Rank, hw::Rank>> first,
                     std::span<const std::pair<hw::Rank, hw::Rank>> second, double pieces,
                     double network_pieces) {
  // Fold one phase's crossings into the loads: `fill` takes min(w, k) of each link's w, `carried` (the first
  // phase's pieces still in flight during the second) min(w, k - 1), k the pieces the link's hops forward.
  const auto fold = [&](Loads& fill, Loads* carried) {
    for (hw::LinkId l : touched_) {
      const auto i = static_cast<std::size_t>(l);
      const double w = count_[i];
      const double k = std::max(network_[i] ? network_pieces : pieces, 1.0);
      weight_[i] += w;
      fill[i] += std::min(w, k);
      if (carried && k > 1) (*carried)[i] += std::min(w, k - 1);
      count_[i] = 0;
      network_[i] = 0;
    }
    touched_.clear();
  };
  count(first);
  fold(first_fill_, &second_fill_);
  count(second);
  fold(second_fill_, nullptr);
}

double LinkShares::smallest_share(std::span<const hw::LinkId> links, const Loads& load) const {
  double share = std::numeric_limits<double>::infinity();
  for (hw::LinkId l : links) {
    const hw::Link& link = topo_.link(l);
    const double weight = link.shared ? std::max(load[static_cast<std::size_t>(l)], 1.0) : 1.0;
    share = std::min(share, link.bandwidth / weight);
  }
  return share;
}

double ring_window_latency(std::span<const double> lat, int steps) {
  const std::size_t n = lat.size();
  if (n == 0 || steps <= 0) return 0.0;
  double total = 0;
  for (double l : lat) total += l;
  const auto full = static_cast<std::size_t>(steps) / n, rest = static_cast<std::size_t>(steps) % n;
  // Sliding window of `rest` hops over the doubled ring.
  double window = 0, best = 0;
  for (std::size_t i = 0; i < rest; ++i) window += lat[i];
  best = window;
  for (std::size_t i = 1; i < n && rest > 0; ++i) {
    window += lat[(i + rest - 1) % n] - lat[i - 1];
    best = std::max(best, window);
  }
  return static_cast<double>(full) * total + best;
}

TaskId join(BuildContext& ctx, std::span<const Dep> deps) {
  return ctx.graph.add_delay(0.0, ctx.label("done"), deps);
}

}  // namespace strata::sim::algorithms
