// Speed of `strata optimize` (docs/subst.md, docs/performance.md): the backtracking search on zoo models
// with the default rules (TASO's shipped 133 less the 4 unproved) and all hand-written transformations, on
// the A100 cost model, default alpha 1.05 and budget 1000. The target is <= 10 s per model on 2
// cores.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <string>

#include "hw/gpu_spec.h"
#include "models/zoo/zoo.h"
#include "search/subst/optimizer.h"
#include "search/subst/rule.h"
#include "search/subst/xfers.h"

namespace {

namespace ss = strata::search::subst;

// The default rule set of `strata optimize` (configs/subst/README.md).
std::vector<ss::Rule> default_rules() {
  return ss::load_rules(STRATA_SOURCE_DIR "/configs/subst/taso_shipped_verified.rules");
}

void BM_OptimizeZooModel(benchmark::State& state, const std::string& model) {
  const auto graph = strata::models::zoo::build_model(model, {});
  const auto rules = default_rules();
  const strata::models::CostModel cost(*strata::hw::find_gpu("a100-sxm4-80gb"));
  ss::OptimizerOptions o;
  o.xfers = ss::make_xfers();
  double speedup = 0;
  for (auto _ : state) {
    const auto r = ss::optimize(graph, rules, cost, o);
    speedup = r.cost_before / r.cost_after;
    benchmark::DoNotOptimize(r.cost_after);
  }
  state.counters["speedup"] = speedup;
}
BENCHMARK_CAPTURE(BM_OptimizeZooModel, bert_base, std::string("bert-base"))
    ->Unit(benchmark::kSecond)
    ->Iterations(1)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_OptimizeZooModel, resnext50, std::string("resnext50"))
    ->Unit(benchmark::kSecond)
    ->Iterations(1)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_OptimizeZooModel, squeezenet, std::string("squeezenet"))
    ->Unit(benchmark::kSecond)
    ->Iterations(1)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
