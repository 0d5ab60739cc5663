#include "sim/algorithms/algorithms.h"

#include <algorithm>

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
  return ctx.graph.add_transfer_on(ctx.bundle_route(hops), hops.front().first, hops.back().second,
                                   ctx.wire(payload_per_hop), latency, label, deps, lane);
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
