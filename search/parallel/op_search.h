// MCMC search over per-operator parallel plans (FlexFlow: Jia, Zaharia, Aiken, SysML'19, arXiv 1807.05358,
// §6).
//
// Metropolis-Hastings over plans with target p(S) ∝ exp(-beta · cost(S) / cost0), cost = the iteration time
// the fast simulator predicts (op_sim.h; delta simulation per proposal), cost0 = the chain's start plan's.
// The proposal is symmetric: a node drawn uniformly among those with more than one configuration, and a new
// configuration drawn uniformly among its others (op_plan.h). Chains start from data parallelism and from the
// expert plan (op_plan.h); each is seeded from (seed, chain index) and chains run in parallel under TBB, so a
// proposal budget gives the same result for any thread count (a wall-clock budget does not: how far a chain
// gets then depends on the machine).
//
// Memory: a plan whose per-GPU peak (OpLowering::add_memory: weights, gradients, Adam state, saved
// activations) exceeds the GPU's HBM is infeasible. Chains may pass through infeasible plans (their cost is
// inflated by the overflow so chains leave them), but infeasible plans are never reported as best.
//
// For the CLI: `strata parallelize --search mcmc` calls run_mcmc(forward graph (models/zoo, models/onnx),
// topology (hw/system_loader.h), CostModel for topo.gpu(), options) and prints best / data_parallel / expert
// (times, peak memory, fits, listing) and the history. `strata sim step` with an op-level plan builds an
// OpPlanner, takes data_parallel_plan / expert_plan (op_plan.h) of its space, and calls evaluate_plan; for a
// trace, build an OpSimulator on the plan, run_full_step (op_sim.h) and sim::chrome_trace_json(topo,
// step.graph, step.result). docs/parallel.md, "Per-operator plans and MCMC".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hw/topology.h"
#include "models/cost/cost_model.h"
#include "models/ir/graph.h"
#include "search/parallel/op_lowering.h"
#include "search/parallel/op_plan.h"

namespace strata::search::parallel {

struct McmcOptions {
  std::uint64_t seed = 1;
  std::int64_t proposals = 20000;  // per chain (0 with seconds > 0: until the time is spent)
  double seconds = 0;              // wall-clock budget per chain; 0: none
  double beta = 100;               // a 1% slower plan is accepted with probability exp(-1)
  int chains_per_start = 1;        // chains from data parallelism and as many from the expert plan
  bool delta = true;               // false: re-simulate every proposal from time zero (reference / speedup)
  int checkpoint_every = 32;       // scheduler checkpoints (op_sim.h)
  bool adam = true;                // optimizer state in the memory estimate (OpLowering::Options)
  bool full_simulation = true;     // also time the reported plans on sim/'s event simulator
  // FlexFlow's stopping rule (§6), counted in proposals so that it stays deterministic: a chain also stops
  // once it has made at least `stall_min` proposals and twice as many as when its best plan last improved. 0:
  // off.
  std::int64_t stall_min = 0;
};

// The best feasible plan found so far improved.
struct McmcProgress {
  int chain = 0;
  std::int64_t proposals = 0;  // of that chain
  double wall_seconds = 0;     // since the chain started
  double best_seconds = 0;     // fast-simulated
};

struct PlanReport {
  OpPlan plan;
  double fast_seconds = 0;  // op_sim.h (a)
  double full_seconds = 0;  // op_sim.h (b); 0 when not requested
  std::int64_t peak_memory_bytes = 0;
  bool fits = true;
  std::string listing;  // describe_plan
};

struct McmcResult {
  // best: the feasible plan with the shortest fast-simulated time the chains saw; with full_simulation, the
  // fastest on sim/'s event simulator among every chain's best and the two start plans (so never slower than
  // a feasible data-parallel plan on either simulator's own terms).
  PlanReport best, data_parallel, expert;
  std::vector<McmcProgress> history;  // per chain, in chain order
  std::int64_t proposals = 0, accepted = 0;
  std::int64_t stopped_early = 0;  // rejected proposals whose simulation stopped at the rejection threshold
  double wall_seconds = 0;
  int chains = 0;
  int nodes = 0, gpus = 0;
  int scaled_costs = 0;  // ShardCosts::scaled_count
  bool found = false;    // false: no feasible plan was seen (best is then the least infeasible start)
};

McmcResult run_mcmc(const models::Graph& forward, const hw::Topology& topo, const models::CostModel& cost,
                    const McmcOptions& options = {});

// Everything a graph's plans need on one topology: the plan space, the parts' kernel times and the lowering.
// For evaluating given plans (`strata sim step` with an op-level plan: data_parallel_plan / expert_plan or a
// searched one) and for searching several times on the same graph. The graph, topology and cost model must
// outlive it.
class OpPlanner {
 public:
  OpPlanner(const models::Graph& forward, const hw::Topology& topo, const models::CostModel& cost,
            OpLowering::Options options = {});
  OpPlanner(const OpPlanner&) = delete;
  OpPlanner& operator=(const OpPlanner&) = delete;
  const PlanSpace& space() const { return space_; }
  const OpLowering& lowering() const { return lowering_; }
  const hw::Topology& topology() const { return topo_; }

 private:
  const hw::Topology& topo_;
  PlanSpace space_;
  ShardCosts costs_;
  OpLowering lowering_;
};

// The same on a prepared space (tests, benchmarks).
McmcResult run_mcmc(const OpLowering& lowering, const hw::Topology& topo, const McmcOptions& options);

// Times and memory of one plan (fast, and full when asked).
PlanReport evaluate_plan(const OpLowering& lowering, const hw::Topology& topo, const OpPlan& plan,
                         bool full_simulation);

}  // namespace strata::search::parallel
