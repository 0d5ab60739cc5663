// search/subst speed (docs/subst.md): reading TASO's 820-rule file, canonical forms and coverage, and Z3
// verification of provable rules (the part of a verification run that is not spent in timeouts).
#include <benchmark/benchmark.h>

#include <string>

#include "search/subst/axioms.h"
#include "search/subst/coverage.h"
#include "search/subst/rule.h"
#include "search/subst/verifier.h"

namespace {

namespace ss = strata::search::subst;

std::string data(const std::string& name) {
  return STRATA_SOURCE_DIR "/tests/subst/data/taso-rules/" + name;
}

void BM_LoadTaso820(benchmark::State& state) {
  for (auto _ : state)
    benchmark::DoNotOptimize(ss::load_rules(data("taso_sosp19ae_820_equations.txt")).size());
}
BENCHMARK(BM_LoadTaso820)->Unit(benchmark::kMillisecond);

void BM_Coverage619Vs820(benchmark::State& state) {
  const auto a = ss::load_rules(data("taso_master_619_equations.txt"));
  const auto b = ss::load_rules(data("taso_sosp19ae_820_equations.txt"));
  for (auto _ : state) benchmark::DoNotOptimize(ss::compare_rule_sets(a, b).a_in_b);
}
BENCHMARK(BM_Coverage619Vs820)->Unit(benchmark::kMillisecond);

// The 129 provable shipped rules; arg = worker threads.
void BM_VerifyProvableShipped(benchmark::State& state) {
  auto rules = ss::load_rules(data("taso_shipped_133_equations.txt"), ss::RuleFileFormat::taso,
                              ss::TasoShapes::unknown);
  for (int i : {131, 130, 100, 99}) rules.erase(rules.begin() + i);
  const auto axioms = ss::taso_axioms();
  ss::VerifyOptions o;
  o.jobs = static_cast<int>(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(ss::verify_rules(rules, axioms, o).size());
  state.counters["rules/s"] =
      benchmark::Counter(static_cast<double>(rules.size() * state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_VerifyProvableShipped)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
