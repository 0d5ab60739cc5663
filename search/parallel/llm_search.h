// Exhaustive search over LLM strategies: every tp x pp x dp x cp (x ep) that divides the model and the
// cluster, micro-batch size, recomputation, ZeRO stage, sequence parallelism, schedule and virtual stages,
// and every placement of the axes on the machine levels (P2's parallelism matrices). Candidates are pruned
// exactly: divisibility, then memory (never ranked when they do not fit), then three lower bounds on the step
// time against the k-th best simulated step, each tighter and dearer than the one before: the per-GPU compute
// with the pipeline's fill and drain (microseconds), the critical stage's chain with every communication at
// its time alone (a closed form over the step's description), and the whole step run without contention
// (uncontended_step_seconds: an event simulation without flows, milliseconds). Survivors are simulated in
// bound order, TBB-parallel in fixed batches, so the result does not depend on the thread count.
// docs/parallel.md.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "search/parallel/llm_step.h"

namespace strata::search::parallel {

struct LlmSearchSpace {
  std::vector<int> micro_batches = {1, 2, 4, 8};
  std::vector<Recompute> recompute = {Recompute::kNone, Recompute::kSelective, Recompute::kFull};
  std::vector<int> zero = {0, 1, 2, 3};
  std::vector<bool> sequence_parallel = {false, true};
  int max_virtual_stages = 8;  // interleaved schedule: v in 2..max that divides layers / pp
  bool context_parallel = true;
  bool all_placements = true;  // false: Megatron's placement only
  hw::DType dtype = hw::DType::kBf16;
};

struct LlmSearchOptions {
  std::int64_t global_batch = 0;
  int top = 10;
  LlmSearchSpace space;
  // Called as candidates are simulated: (simulated so far, best step so far).
  std::function<void(std::size_t, double)> progress;
};

struct LlmSearchCounts {
  std::size_t enumerated = 0;     // strategies (degrees x micro-batch x schedule x sequence parallelism)
  std::size_t invalid = 0;        // rejected by strategy_problems (divisibility, schedule rules)
  std::size_t out_of_memory = 0;  // strategies with no recomputation / ZeRO variant that fits
  std::size_t plans = 0;          // feasible plans ranked: strategy x kept ZeRO variant x placement
  std::size_t pruned = 0;         // plans whose lower bound >= the k-th best step
  std::size_t uncontended = 0;    // plans whose step was run without contention (the tightest bound)
  std::size_t simulated = 0;      // plans simulated by the branch and bound (baselines not counted)
};

struct LlmSearchResult {
  std::vector<LlmStepResult> top;  // fastest first (ties: strategy text, then placement)
  LlmSearchCounts counts;
  double seconds = 0;  // wall time of the search
  // Baselines, simulated the same way: the best pure data-parallel plan that fits (if any) and the
  // Megatron-style expert plan (megatron_expert_strategy).
  std::optional<LlmStepResult> data_parallel, expert;
};

// The plan an experienced Megatron-LM user starts from: tp = the largest divisor of the heads that fits in a
// node, sequence parallelism and selective recomputation on, the distributed optimizer (ZeRO-1), micro-batch
// 1, 1F1B, no context parallelism, and the fewest pipeline stages whose memory fits (nullopt: none fits).
std::optional<LlmStrategy> megatron_expert_strategy(const models::zoo::TransformerSpec& spec,
                                                    const hw::Topology& topo, const models::CostModel& cost,
                                                    std::int64_t global_batch, hw::DType dtype);

// Throws std::invalid_argument when the options are unusable (global batch < 1, top < 1, empty space lists).
LlmSearchResult search_llm(const models::zoo::TransformerSpec& spec, const hw::Topology& topo,
                           const models::CostModel& cost, const LlmSearchOptions& options);

}  // namespace strata::search::parallel
