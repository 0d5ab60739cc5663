#include "sim/algorithms/algorithms.h"

#include "sim/nccl_model.h"

namespace strata::sim::algorithms {

void register_builtin(AlgorithmRegistry& registry) {
  registry.add(make_ring());
  registry.add(make_tree());
  registry.add(make_direct());
  registry.add(make_hierarchical());
  registry.add(make_nvls());
}

TaskId begin_collective(BuildContext& ctx) {
  const double base = nccl::base_latency(nccl::family_of(ctx.algorithm), ctx.spec.protocol);
  return ctx.graph.add_delay(base, ctx.label("launch"), ctx.after);
}

TaskId join(BuildContext& ctx, std::span<const Dep> deps) { return ctx.graph.add_delay(0.0, ctx.label("done"), deps); }

}  // namespace strata::sim::algorithms
