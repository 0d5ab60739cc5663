// search/reduce speed targets (docs/performance.md): synthesis of the two- and three-level hierarchies, and
// the whole P2 reproduction grid (200 placement x algorithm cases: synthesis + lowering + simulation of every
// program), which the issue asks to finish in under 2 s on 2 cores.
#include <benchmark/benchmark.h>

#include <string>

#include "hw/system_loader.h"
#include "search/reduce/evaluate.h"

namespace {

namespace rd = strata::search::reduce;

void BM_SynthesizeTwoLevel(benchmark::State& state) {
  const rd::SynthesisHierarchy h({{"node", 4, 0}, {"gpu", 16, 1}});
  for (auto _ : state) benchmark::DoNotOptimize(rd::synthesize(h).programs.size());
}
BENCHMARK(BM_SynthesizeTwoLevel)->Unit(benchmark::kMillisecond);

void BM_SynthesizeThreeLevel(benchmark::State& state) {
  const rd::SynthesisHierarchy h({{"a", 2, 0}, {"b", 2, 1}, {"c", 2, 2}});
  for (auto _ : state) benchmark::DoNotOptimize(rd::synthesize(h).programs.size());
}
BENCHMARK(BM_SynthesizeThreeLevel)->Unit(benchmark::kMillisecond);

// The grid of configs/experiments/repro/p2.yaml (P2, Xie et al., MLSys 2022, section 4).
void BM_P2Grid(benchmark::State& state) {
  struct System {
    std::string hw;
    int nodes;
    std::vector<std::vector<int>> three_axis;
    bool three_axis_ring_only;
  };
  const std::string dir = STRATA_SOURCE_DIR "/configs/hw/";
  const std::vector<System> systems{
      {dir + "gcp-a100x16.yaml", 2, {}, false},
      {dir + "gcp-a100x16.yaml", 4, {{16, 2, 2}, {8, 2, 4}, {4, 2, 8}, {2, 2, 16}}, false},
      {dir + "gcp-v100x8.yaml", 2, {}, false},
      {dir + "gcp-v100x8.yaml", 4, {{2, 2, 8}, {8, 2, 2}}, true}};
  std::vector<strata::hw::Topology> topos;
  for (const auto& s : systems) topos.push_back(strata::hw::load_system(s.hw, {s.nodes}));
  std::size_t cases = 0;
  for (auto _ : state) {
    cases = 0;
    for (std::size_t i = 0; i < systems.size(); ++i) {
      const int n = topos[i].num_gpus();
      rd::EvalConfig c;
      c.bytes_per_device = 2.0 * 1024 * 1024 * 1024 * systems[i].nodes;
      c.algorithms = {"ring", "tree"};
      auto run = [&](std::vector<int> axes, std::vector<int> reduce) {
        c.axes = std::move(axes);
        c.reduce_axes = std::move(reduce);
        cases += rd::evaluate(topos[i], c).size();
      };
      run({n}, {0});
      for (int a = 2; a < n; ++a)
        if (n % a == 0) {
          run({a, n / a}, {0});
          run({a, n / a}, {1});
        }
      if (systems[i].three_axis_ring_only) c.algorithms = {"ring"};
      for (const auto& t : systems[i].three_axis) run(t, {0, 2});
    }
  }
  state.counters["cases"] = static_cast<double>(cases);
}
BENCHMARK(BM_P2Grid)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
