// search/subst speed (docs/subst.md): reading TASO's 820-rule file, canonical forms and coverage, Z3
// verification of provable rules (the part of a verification run that is not spent in timeouts), the
// evaluation checks before Z3, and axiom validation against the executor.
#include <benchmark/benchmark.h>

#include <string>

#include "search/subst/axiom_validation.h"
#include "search/subst/axioms.h"
#include "search/subst/coverage.h"
#include "search/subst/rule.h"
#include "search/subst/rule_check.h"
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
  auto rules = ss::load_rules(data("taso_shipped_133_equations.txt"), ss::RuleFileFormat::kTaso,
                              ss::TasoShapes::kUnknown);
  for (int i : {131, 130, 100, 99}) rules.erase(rules.begin() + i);
  const auto axioms = ss::taso_axioms();
  ss::VerifyOptions o;
  o.jobs = static_cast<int>(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(ss::verify_rules(rules, axioms, o).size());
  state.counters["rules/s"] =
      benchmark::Counter(static_cast<double>(rules.size() * state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_VerifyProvableShipped)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

// The evaluation checks that run before Z3 on every rule of the 820 file (shape check + refutation at the
// declared and four resized shape sets); 4 rules refuted.
void BM_ShapeCheckAndRefuteTaso820(benchmark::State& state) {
  const auto rules = ss::load_rules(data("taso_sosp19ae_820_equations.txt"));
  for (auto _ : state) {
    int refuted = 0;
    for (const auto& r : rules)
      refuted += !ss::rule_shape_error(r) && ss::refute_by_evaluation(r).has_value();
    benchmark::DoNotOptimize(refuted);
  }
  state.counters["rules/s"] =
      benchmark::Counter(static_cast<double>(rules.size() * state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_ShapeCheckAndRefuteTaso820)->Unit(benchmark::kMillisecond);

// Axiom validation against the executor with the CLI defaults (dims 1..3, <= 100 instances per parameter
// assignment); arg = worker threads.
void BM_ValidateTasoAxioms(benchmark::State& state) {
  const auto axioms = ss::taso_axioms();
  ss::AxiomValidationOptions o;
  o.jobs = static_cast<int>(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(ss::validate_axioms(axioms, o).size());
}
BENCHMARK(BM_ValidateTasoAxioms)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
