// Links that exactly the same flows cross, with the same weights, on links of the same capacity and sharing
// policy, impose identical max-min constraints. RouteClasses groups a task graph's links into such classes
// and gives every route one link per class, so the network model solves the same rates on far smaller
// problems: a flow bundle over all instances of a symmetric collective (search/parallel/comm.h) crosses
// hundreds of links that nothing else tells apart. Rates, times and bytes are unchanged; only duplicate
// constraints go.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "hw/topology.h"
#include "sim/task_graph.h"

namespace strata::sim {

class RouteClasses {
 public:
  RouteClasses(const hw::Topology& topo, const TaskGraph& graph);

  // Transfer task `t`'s route with one link per class (the class's lowest link id), and its weights (empty:
  // every link once).
  std::span<const hw::LinkId> links(const Task& t) const { return span_of(route_of(t), links_); }
  std::span<const double> weights(const Task& t) const;

  // Bytes per link of the whole topology from bytes counted on the classes' links only (every link of a class
  // carries what its representative carries).
  std::vector<double> expand(std::span<const double> class_link_bytes) const;

 private:
  std::int32_t route_of(const Task& t) const;
  template <class T>
  std::span<const T> span_of(std::int32_t route, const std::vector<T>& flat) const {
    const auto r = static_cast<std::size_t>(route);
    return {flat.data() + offsets_[r], flat.data() + offsets_[r + 1]};
  }

  std::int32_t custom_routes_ = 0;
  std::vector<std::pair<std::uint64_t, std::int32_t>> plain_;  // sorted (src << 32 | dst, route)
  std::vector<std::size_t> offsets_;                           // per route, into links_ / weights_
  std::vector<hw::LinkId> links_;
  std::vector<double> weights_;
  std::vector<char> weighted_;              // per route: whether weights_ means anything
  std::vector<hw::LinkId> representative_;  // per topology link: its class's link (-1: unused)
};

}  // namespace strata::sim
