// One training step of a transformer under an LLM strategy, simulated on a cluster: the strategy's checks,
// its placement on the machine hierarchy (which axis on which level, P2's parallelism matrices from
// search/reduce), per-GPU kernels from the models/ cost model (models/zoo/transformer_layer.h), the
// communication of every axis and the pipeline schedule lowered to a step graph (step_graph.h), memory
// (llm_memory.h), MFU and a breakdown. docs/parallel.md.
#pragma once
#include <optional>
#include <string>

#include "hw/topology.h"
#include "models/cost/cost_model.h"
#include "models/zoo/transformer_layer.h"
#include "models/zoo/transformer_spec.h"
#include "search/parallel/llm_memory.h"
#include "search/parallel/step_graph.h"
#include "search/parallel/strategy.h"
#include "search/reduce/placement.h"

namespace strata::search::parallel {

// Axis order of an LLM placement's parallelism matrix (rows): pipeline, data, context, tensor. Within a level
// the last axis varies fastest, so Megatron-LM's rank order (tp fastest, then cp, dp, pp) is the matrix that
// fills each level from the innermost with tp first (megatron_placement).
inline constexpr int kAxisPp = 0, kAxisDp = 1, kAxisCp = 2, kAxisTp = 3;

// Empty when the strategy can run the model on the topology; otherwise every reason, one per line (GPU count,
// divisibility of heads / kv heads / ffn / layers / sequence / batch / experts, schedule rules, ranges).
std::string strategy_problems(const models::zoo::TransformerSpec& spec, const LlmStrategy& st,
                              const hw::Topology& topo);

// Megatron-LM's placement: tp on the innermost level first, then cp, dp, pp, each taking what is left.
reduce::Matrix megatron_placement(const hw::Topology& topo, const LlmStrategy& st);

// Model FLOPs of one step (Narayanan et al. SC'21 convention, no recomputation counted): forward
// 2 x tokens x (matmul parameters per token) + 4 B s^2 h L (attention scores and values, counted in full)
// + 2 B s h V (logits), times 3 for forward + backward. MoE counts the active experts.
double model_flops_per_step(const models::zoo::TransformerSpec& spec, std::int64_t global_batch);

struct LlmStepOptions {
  std::optional<reduce::Matrix> placement;  // nullopt: megatron_placement
  bool record_timeline = false;             // keep the timeline (traces); also simulates layer by layer
  bool simulate_when_oom = true;            // false: report an out-of-memory plan without simulating it
  CommTiming comm_timing = CommTiming::kSimulated;  // kAllFlows: tests of the isolation shortcut
  AloneTimes* alone = nullptr;  // a memo of communication times alone shared across steps (nullptr: own)
};

struct LlmStepResult {
  LlmStrategy strategy;
  reduce::Matrix placement;
  std::string placement_text;
  double step_seconds = 0;
  double model_flops = 0;  // per step
  double mfu = 0;          // model FLOPs / (step x GPUs x peak for the dtype)
  double tokens_per_second = 0;
  MemoryBreakdown memory;  // the stage with the peak
  double capacity = 0;     // GPU memory, bytes
  bool fits = false;
  bool simulated = false;
  StepBreakdown breakdown;
  std::array<bool, kNumCommClasses> isolated{};
  std::size_t tasks = 0;
  StepGraph graph;  // with record_timeline
  sim::SimResult sim;
};

// Per-GPU costs the step needs, computed once per (micro-batch, tp, cp, ep, sp) and shared by candidates.
struct LlmCosts {
  models::zoo::LayerCost layer;
  models::zoo::EdgeCost edge;
};
LlmCosts llm_costs(const models::zoo::TransformerSpec& spec, const LlmStrategy& st,
                   const models::CostModel& cost);

// Throws std::invalid_argument with strategy_problems when the strategy cannot run.
LlmStepResult simulate_llm_step(const models::zoo::TransformerSpec& spec, const LlmStrategy& st,
                                const hw::Topology& topo, const models::CostModel& cost,
                                const LlmStepOptions& options = {});
LlmStepResult simulate_llm_step(const models::zoo::TransformerSpec& spec, const LlmStrategy& st,
                                const hw::Topology& topo, const models::CostModel& cost,
                                const LlmCosts& costs, const LlmStepOptions& options = {});

// The step with every communication at its time alone and no contention between anything
// (CommTiming::kAlone): a lower bound on simulate_llm_step's step, as contention only slows communication,
// and far cheaper (no flows, representative instances only). The search prunes with it.
double uncontended_step_seconds(const models::zoo::TransformerSpec& spec, const LlmStrategy& st,
                                const hw::Topology& topo, const models::CostModel& cost,
                                const LlmCosts& costs, const reduce::Matrix& placement, AloneTimes& alone);

// The step's description (exposed for tests and the search's lower bound). `representative_only`: every
// communication keeps only the representative's instance (enough for times of operations alone).
StepDescription describe_llm_step(const models::zoo::TransformerSpec& spec, const LlmStrategy& st,
                                  const hw::Topology& topo, const models::CostModel& cost,
                                  const LlmCosts& costs, const reduce::Placement& placement,
                                  bool representative_only);

// Gradient bucket size in bytes: strategy.bucket_bytes, or when 0 Megatron-core's default of
// max(40M, 1M x dp) parameters at 2 bytes.
double bucket_bytes(const LlmStrategy& st);

}  // namespace strata::search::parallel
