// The per-GPU costs of a strategy come from models/ (one transformer layer's shard, costed kernel by kernel);
// kept apart from the step lowering, which only orders and overlaps them.
#include <stdexcept>

#include "search/parallel/llm_step.h"

namespace strata::search::parallel {

using models::zoo::TransformerSpec;

LlmCosts llm_costs(const TransformerSpec& spec, const LlmStrategy& st, const models::CostModel& cost) {
  models::zoo::LayerShard shard;
  shard.micro_batch = st.micro_batch;
  shard.seq = spec.seq / st.cp;
  shard.tp = st.tp;
  shard.cp = st.cp;
  shard.ep = st.ep;
  shard.sequence_parallel = st.sequence_parallel;
  return {models::zoo::layer_cost(spec, shard, st.dtype, cost),
          models::zoo::edge_cost(spec, shard, st.dtype, cost)};
}

LlmStepResult simulate_llm_step(const TransformerSpec& spec, const LlmStrategy& st, const hw::Topology& topo,
                                const models::CostModel& cost, const LlmStepOptions& options) {
  if (auto problems = strategy_problems(spec, st, topo); !problems.empty())
    throw std::invalid_argument(problems);
  return simulate_llm_step(spec, st, topo, cost, llm_costs(spec, st, cost), options);
}

}  // namespace strata::search::parallel
