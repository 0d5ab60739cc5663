#include "sim/route_classes.h"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <tuple>

namespace strata::sim {
namespace {

std::uint64_t pair_key(const Task& t) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(t.rank)) << 32) |
         static_cast<std::uint32_t>(t.peer);
}

}  // namespace

RouteClasses::RouteClasses(const hw::Topology& topo, const TaskGraph& graph)
    : custom_routes_(static_cast<std::int32_t>(graph.num_custom_routes())) {
  // Every route the graph's transfers use: its custom routes, then the distinct topology routes.
  for (const auto& t : graph.tasks())
    if (t.kind == TaskKind::kTransfer && t.route < 0) plain_.push_back({pair_key(t), 0});
  std::sort(plain_.begin(), plain_.end());
  plain_.erase(std::unique(plain_.begin(), plain_.end(),
                           [](const auto& a, const auto& b) { return a.first == b.first; }),
               plain_.end());
  for (std::size_t i = 0; i < plain_.size(); ++i)
    plain_[i].second = custom_routes_ + static_cast<std::int32_t>(i);
  const std::size_t routes = static_cast<std::size_t>(custom_routes_) + plain_.size();
  auto route_links = [&](std::size_t r) -> std::span<const hw::LinkId> {
    if (r < static_cast<std::size_t>(custom_routes_))
      return graph.custom_route(static_cast<std::int32_t>(r)).links;
    const auto key = plain_[r - static_cast<std::size_t>(custom_routes_)].first;
    return topo.route(static_cast<hw::Rank>(key >> 32), static_cast<hw::Rank>(key & 0xffffffffULL));
  };
  auto route_weight = [&](std::size_t r, std::size_t k) {
    if (r >= static_cast<std::size_t>(custom_routes_)) return 1.0;
    const auto& w = graph.custom_route(static_cast<std::int32_t>(r)).weights;
    return w.empty() ? 1.0 : w[k];
  };
  // A link's signature: every (route, weight) crossing it, in route order, with its capacity and policy.
  const auto& topo_links = topo.links();
  std::vector<std::vector<std::pair<std::int32_t, double>>> uses(topo_links.size());
  for (std::size_t r = 0; r < routes; ++r) {
    const auto links = route_links(r);
    for (std::size_t k = 0; k < links.size(); ++k) {
      const auto l = static_cast<std::size_t>(links[k]);
      if (l >= uses.size()) throw std::logic_error("a route names a link the topology does not have");
      uses[l].push_back({static_cast<std::int32_t>(r), route_weight(r, k)});
    }
  }
  using Signature = std::tuple<double, bool, const std::vector<std::pair<std::int32_t, double>>*>;
  auto less = [](const Signature& a, const Signature& b) {
    if (std::get<0>(a) != std::get<0>(b)) return std::get<0>(a) < std::get<0>(b);
    if (std::get<1>(a) != std::get<1>(b)) return std::get<1>(a) < std::get<1>(b);
    return *std::get<2>(a) < *std::get<2>(b);
  };
  std::map<Signature, hw::LinkId, decltype(less)> classes(less);
  representative_.assign(topo_links.size(), -1);
  for (std::size_t l = 0; l < topo_links.size(); ++l) {
    if (uses[l].empty()) continue;
    const Signature sig{topo_links[l].bandwidth, topo_links[l].shared, &uses[l]};
    representative_[l] = classes.try_emplace(sig, static_cast<hw::LinkId>(l)).first->second;
  }
  // Each route keeps the first link of every class it crosses.
  offsets_.assign(1, 0);
  weighted_.assign(routes, 0);
  std::vector<std::size_t> seen(topo_links.size(), routes);  // route that last kept the class
  for (std::size_t r = 0; r < routes; ++r) {
    const auto links = route_links(r);
    const bool weighted = r < static_cast<std::size_t>(custom_routes_) &&
                          !graph.custom_route(static_cast<std::int32_t>(r)).weights.empty();
    weighted_[r] = weighted ? 1 : 0;
    for (std::size_t k = 0; k < links.size(); ++k) {
      const auto rep = representative_[static_cast<std::size_t>(links[k])];
      auto& last = seen[static_cast<std::size_t>(rep)];
      if (last == r) continue;
      last = r;
      links_.push_back(rep);
      weights_.push_back(route_weight(r, k));
    }
    offsets_.push_back(links_.size());
  }
}

std::int32_t RouteClasses::route_of(const Task& t) const {
  if (t.route >= 0) return t.route;
  const auto key = pair_key(t);
  const auto it =
      std::lower_bound(plain_.begin(), plain_.end(), std::pair<std::uint64_t, std::int32_t>{key, 0});
  if (it == plain_.end() || it->first != key) throw std::logic_error("RouteClasses: a transfer it never saw");
  return it->second;
}

std::span<const double> RouteClasses::weights(const Task& t) const {
  const auto r = route_of(t);
  if (!weighted_[static_cast<std::size_t>(r)]) return {};
  return span_of(r, weights_);
}

std::vector<double> RouteClasses::expand(std::span<const double> class_link_bytes) const {
  std::vector<double> out(representative_.size(), 0.0);
  for (std::size_t l = 0; l < out.size(); ++l)
    if (representative_[l] >= 0 && static_cast<std::size_t>(representative_[l]) < class_link_bytes.size())
      out[l] = class_link_bytes[static_cast<std::size_t>(representative_[l])];
  return out;
}

}  // namespace strata::sim
