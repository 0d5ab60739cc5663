// search/parallel speed targets for LLM strategies (issue 12, docs/performance.md): one simulated GPT-3 175B
// step on 1024 H100 (TP8 PP8 DP16, interleaved 1F1B) in under 1 s, and the exhaustive strategy search for
// GPT-3 175B on 1024 H100 in under 10 s on 2 cores.
#include <benchmark/benchmark.h>

#include "hw/system_loader.h"
#include "models/zoo/transformer_spec.h"
#include "models/zoo/zoo.h"
#include "search/parallel/llm_search.h"

namespace {

namespace par = strata::search::parallel;
using strata::hw::Topology;

const Topology& cluster() {
  static const Topology topo =
      strata::hw::load_system(STRATA_SOURCE_DIR "/configs/hw/dgx-h100.yaml", strata::hw::LoadOptions{128});
  return topo;
}

strata::models::zoo::TransformerSpec gpt3() {
  return strata::models::zoo::load_transformer_spec(STRATA_SOURCE_DIR "/configs/models/gpt3-175b.yaml");
}

void BM_Gpt3StepOn1024Gpus(benchmark::State& state) {
  const auto spec = gpt3();
  const strata::models::CostModel cost(cluster().gpu());
  par::LlmStrategy st;
  st.tp = 8, st.pp = 8, st.dp = 16, st.global_batch = 1536;
  st.sequence_parallel = true, st.recompute = par::Recompute::kSelective, st.zero = 1;
  st.schedule = par::PipelineSchedule::kInterleaved, st.virtual_stages = static_cast<int>(state.range(0));
  const auto costs = par::llm_costs(spec, st, cost);  // per-GPU kernels, computed once like the search does
  for (auto _ : state) {
    const auto r = par::simulate_llm_step(spec, st, cluster(), cost, costs);
    benchmark::DoNotOptimize(r.step_seconds);
    state.counters["tasks"] = static_cast<double>(r.tasks);
  }
}
BENCHMARK(BM_Gpt3StepOn1024Gpus)->Arg(4)->Unit(benchmark::kMillisecond);

void BM_Gpt3ExhaustiveSearchOn1024Gpus(benchmark::State& state) {
  const auto spec = gpt3();
  const strata::models::CostModel cost(cluster().gpu());
  par::LlmSearchOptions o;
  o.global_batch = 1536;
  o.space.all_placements = state.range(0) != 0;
  o.top = static_cast<int>(state.range(1));
  for (auto _ : state) {
    const auto r = par::search_llm(spec, cluster(), cost, o);
    benchmark::DoNotOptimize(r.top.size());
    state.counters["plans"] = static_cast<double>(r.counts.enumerated);
    state.counters["simulated"] = static_cast<double>(r.counts.simulated);
  }
}
// Args: every placement of the best strategies (0/1), plans ranked exactly (top k).
BENCHMARK(BM_Gpt3ExhaustiveSearchOn1024Gpus)
    ->Args({1, 1})
    ->Args({0, 10})
    ->Args({1, 10})
    ->Unit(benchmark::kSecond)
    ->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
