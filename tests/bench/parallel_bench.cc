// Speed of the per-operator plan search (docs/parallel.md, "Per-operator plans and MCMC"; issue target:
// >= 100,000 MCMC proposals per minute on a 100-operator graph with delta simulation, 2 cores). The graph is
// a 4-layer BERT (hidden 256, 4 heads, sequence 64, batch 32, fp16) on 8 A100s (configs/hw/dgx-a100.yaml).
#include <random>

#include <benchmark/benchmark.h>

#include "hw/system_loader.h"
#include "models/cost/cost_model.h"
#include "models/zoo/zoo.h"
#include "search/parallel/op_search.h"
#include "search/parallel/op_sim.h"
#include "util/timer.h"

namespace {

using namespace strata;
using namespace strata::search::parallel;

struct Setup {
  hw::Topology topo = hw::load_system(std::string(STRATA_SOURCE_DIR) + "/configs/hw/dgx-a100.yaml");
  models::Graph graph =
      models::zoo::build_bert({.batch = 32, .seq_len = 64, .dtype = models::DType::kF16}, 4, 256, 4, 1024);
  models::CostModel cost{topo.gpu()};
  PlanSpace space{graph, topo.num_gpus()};
  ShardCosts costs{space, cost};
  OpLowering lowering{space, costs, {}};
};
const Setup& setup() {
  static const Setup s;
  return s;
}

// Whole searches: two chains (from data parallelism and from the expert plan) on the TBB pool.
void mcmc(benchmark::State& state, bool delta) {
  const auto& s = setup();
  McmcOptions o;
  o.proposals = state.range(0);
  o.delta = delta;
  o.full_simulation = false;
  std::int64_t proposals = 0, stopped = 0;
  strata::util::Stopwatch wall;
  for (auto _ : state) {
    const auto r = run_mcmc(s.lowering, s.topo, o);
    proposals += r.proposals;
    stopped += r.stopped_early;
    benchmark::DoNotOptimize(r.best.fast_seconds);
  }
  state.counters["nodes"] = s.space.size();
  state.counters["stopped_early"] = static_cast<double>(stopped) / static_cast<double>(proposals);
  // Per minute of wall-clock time (the counter's rate mode would print it "/s").
  state.counters["proposals_per_min"] = static_cast<double>(proposals) * 60 / wall.seconds();
}
void BM_OpMcmcDelta(benchmark::State& state) {
  mcmc(state, true);
}
void BM_OpMcmcFullResimulation(benchmark::State& state) {
  mcmc(state, false);
}
BENCHMARK(BM_OpMcmcDelta)->Arg(20000)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_OpMcmcFullResimulation)->Arg(2000)->Unit(benchmark::kMillisecond)->UseRealTime();

// One proposal evaluated and rolled back, on one core: delta simulation, full re-simulation of the re-lowered
// tasks, and re-lowering plus simulating the whole plan from scratch (what FlexFlow's released simulator does
// per proposal).
enum class Mode { kDelta, kFull, kRebuild };
void proposal(benchmark::State& state, Mode mode) {
  const auto& s = setup();
  OpSimulator sim(s.lowering, s.topo, data_parallel_plan(s.space));
  std::mt19937_64 rng(1);
  double replayed = 0;  // fraction of the tasks the proposal re-simulated
  const auto tasks = static_cast<double>(sim.task_count());  // every proposal is rolled back
  for (auto _ : state) {
    const int i = static_cast<int>(rng() % static_cast<std::uint64_t>(s.space.size()));
    const int c = static_cast<int>(rng() % s.space.configs(i).size());
    if (mode == Mode::kRebuild) {
      OpPlan p = sim.plan();
      p.choice[static_cast<std::size_t>(i)] = c;
      OpSimulator fresh(s.lowering, s.topo, p);
      benchmark::DoNotOptimize(fresh.makespan());
      continue;
    }
    benchmark::DoNotOptimize(sim.propose(i, c));
    replayed += static_cast<double>(sim.last_replayed()) / tasks;
    if (mode == Mode::kFull) benchmark::DoNotOptimize(sim.simulate_full());
    sim.rollback();
  }
  state.counters["tasks"] = tasks;
  if (mode != Mode::kRebuild) state.counters["replayed"] = replayed / static_cast<double>(state.iterations());
  state.SetItemsProcessed(state.iterations());
}
void BM_OpProposalDelta(benchmark::State& state) {
  proposal(state, Mode::kDelta);
}
void BM_OpProposalFullResimulation(benchmark::State& state) {
  proposal(state, Mode::kFull);
}
void BM_OpProposalRebuild(benchmark::State& state) {
  proposal(state, Mode::kRebuild);
}
BENCHMARK(BM_OpProposalDelta)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_OpProposalFullResimulation)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_OpProposalRebuild)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
