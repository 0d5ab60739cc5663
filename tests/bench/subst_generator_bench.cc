// Substitution generator speed (docs/subst.md "Generator", docs/performance.md): enumeration, fingerprinting,
// pruning and confirmation for 2 operators over TASO's full instance set and 3 operators over a subset and
// over the full set. Counters: graphs enumerated per second and rules written.
#include <benchmark/benchmark.h>

#include <string>

#include "search/subst/generator.h"

namespace {

namespace ss = strata::search::subst;

void run(benchmark::State& state, const std::string& ops, int max_ops) {
  ss::GeneratorOptions o;
  o.ops = ss::parse_operator_set(ops);
  o.max_ops = max_ops;
  ss::GeneratorResult r;
  for (auto _ : state) r = ss::generate_rules(o);
  state.counters["graphs/s"] = benchmark::Counter(static_cast<double>(r.stats.graphs * state.iterations()),
                                                  benchmark::Counter::kIsRate);
  state.counters["graphs"] = static_cast<double>(r.stats.graphs);
  state.counters["rules"] = static_cast<double>(r.rules.size());
  state.counters["peak_rss_MiB"] = static_cast<double>(r.stats.peak_rss_kib) / 1024.0;
}

void BM_GenerateTaso2(benchmark::State& state) {
  run(state, "taso", 2);
}
BENCHMARK(BM_GenerateTaso2)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_GenerateMatmulSubset3(benchmark::State& state) {
  run(state, "ewadd,ewmul,matmul,transpose,transpose_layout,concat,split,smul", 3);
}
BENCHMARK(BM_GenerateMatmulSubset3)->Unit(benchmark::kMillisecond)->UseRealTime();

// The target: <= 20 s and <= 1 GB on 2 cores.
void BM_GenerateTaso3(benchmark::State& state) {
  run(state, "taso", 3);
}
BENCHMARK(BM_GenerateTaso3)->Unit(benchmark::kSecond)->UseRealTime()->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
