// The two substitution optimizers side by side (docs/subst.md "Equality saturation", docs/performance.md):
// equality saturation (saturation + extraction) and the backtracking search on the same zoo model, rules
// (TASO's shipped 133 less the four unproved) and A100 cost model; counters give the predicted time after
// optimization, so a faster run that finds a worse graph is visible. Also the e-graph core alone.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "hw/gpu_spec.h"
#include "models/zoo/zoo.h"
#include "search/subst/egraph.h"
#include "search/subst/eqsat.h"
#include "search/subst/optimizer.h"
#include "search/subst/rule.h"

namespace {

namespace ss = strata::search::subst;

// The default rule set of `strata optimize` (configs/subst/README.md).
std::vector<ss::Rule> shipped_rules() {
  return ss::load_rules(STRATA_SOURCE_DIR "/configs/subst/taso_shipped_verified.rules");
}

const char* kModels[] = {"bert-base", "nasrnn", "nasnet-a"};

void BM_Eqsat(benchmark::State& state) {
  const auto g = strata::models::zoo::build_model(kModels[state.range(0)], {});
  const auto rules = shipped_rules();
  const strata::models::CostModel cost(*strata::hw::find_gpu("a100-sxm4-80gb"));
  ss::EqsatResult res;
  for (auto _ : state) res = ss::eqsat_optimize(g, rules, cost);
  state.SetLabel(kModels[state.range(0)]);
  state.counters["before_ms"] = res.cost_before * 1e3;
  state.counters["after_ms"] = res.cost_after * 1e3;
  state.counters["enodes"] = static_cast<double>(res.nodes);
  state.counters["extract_s"] = res.extraction_seconds;
}
BENCHMARK(BM_Eqsat)->DenseRange(0, 2)->Unit(benchmark::kMillisecond)->Iterations(1);

void BM_Backtrack(benchmark::State& state) {
  const auto g = strata::models::zoo::build_model(kModels[state.range(0)], {});
  const auto rules = shipped_rules();
  const strata::models::CostModel cost(*strata::hw::find_gpu("a100-sxm4-80gb"));
  ss::OptimizeResult res;
  for (auto _ : state) res = ss::optimize(g, rules, cost);
  state.SetLabel(kModels[state.range(0)]);
  state.counters["before_ms"] = res.cost_before * 1e3;
  state.counters["after_ms"] = res.cost_after * 1e3;
}
BENCHMARK(BM_Backtrack)->DenseRange(0, 2)->Unit(benchmark::kMillisecond)->Iterations(1);

// E-graph of BERT-base (360 nodes) built and rebuilt: hash-consing and signature interning.
void BM_EGraphFromGraph(benchmark::State& state) {
  const auto g = strata::models::zoo::build_model("bert-base", {});
  for (auto _ : state) benchmark::DoNotOptimize(ss::egraph_from_graph(g).egraph.num_nodes());
}
BENCHMARK(BM_EGraphFromGraph)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
