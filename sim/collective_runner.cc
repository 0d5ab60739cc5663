#include "sim/collective_runner.h"

#include <stdexcept>

#include <fmt/format.h>

#include "sim/nccl_model.h"

namespace strata::sim {

std::string unknown_algorithm_reason(std::string_view algorithm) {
  if (is_tuner_choice(algorithm) || AlgorithmRegistry::instance().find(algorithm)) return {};
  return fmt::format("unknown algorithm '{}' (expected auto, best or one of: {})", algorithm,
                     AlgorithmRegistry::instance().names());
}

CollectiveResult run_collective(const hw::Topology& topo, const CollectiveRequest& request) {
  CollectiveResult out;
  CollectiveSpec spec = request.spec;
  std::string algorithm = request.algorithm;
  if (is_tuner_choice(algorithm)) {
    // Every algorithm that can run the spec (auto: NCCL's; best: strata's own schedules too), at every
    // protocol it can use, ranked by NCCL's own tuner (auto, sim/nccl_tuner.h) or strata's estimate (best).
    auto estimates = nccl::estimate_all(
        topo, spec, {}, algorithm == "auto" ? nccl::Candidates::kNccl : nccl::Candidates::kAll);
    if (!request.auto_protocol)
      std::erase_if(estimates, [&](const auto& e) { return e.protocol != spec.protocol; });
    if (estimates.empty())
      throw std::invalid_argument(fmt::format("no algorithm can run {} on this group", op_name(spec.op)));
    algorithm = estimates.front().algorithm;
    spec.protocol = estimates.front().protocol;
  }
  add_collective(topo, out.graph, spec, algorithm);
  out.sim = simulate(topo, out.graph, SimOptions{nullptr, request.record_timeline});
  out.algorithm = algorithm;
  out.protocol = spec.protocol;
  out.seconds = out.sim.seconds();
  out.algbw = out.seconds > 0 ? spec.bytes / out.seconds : 0;
  out.busbw = out.algbw * busbw_factor(spec.op, static_cast<int>(spec.group.size()));
  return out;
}

}  // namespace strata::sim
