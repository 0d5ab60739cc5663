// Reference executor and fingerprint speed (they run inside search loops), and zoo/training construction.
#include <benchmark/benchmark.h>

#include "models/exec/executor.h"
#include "models/train/training.h"
#include "models/zoo/zoo.h"

namespace {

using namespace strata::models;

// TASO-sized fingerprint: a 3-operator graph over 2x4x5x5 / 4x4x3x3 tensors, in the prime field.
void BM_FingerprintTasoGraph(benchmark::State& state) {
  Graph g;
  const auto x = g.add_input("i1", {{2, 4, 5, 5}});
  const auto w = g.add_input("w4", {{4, 4, 3, 3}});
  const Ints same{1, 1, 1, 1};
  const auto c = g.add("conv2d", {x, w}, {{"pads", same}});
  g.mark_output(g.add("relu", {g.add("ewadd", {c, x})}));
  for (auto _ : state) benchmark::DoNotOptimize(fingerprint(g));
}
BENCHMARK(BM_FingerprintTasoGraph);

// A two-layer decoder (hidden 256, 4 heads, sequence 64, vocabulary 512) in double precision.
void BM_ExecuteSmallDecoder(benchmark::State& state) {
  const auto c = zoo::parse_transformer_spec(
      "transformer:layers=2,hidden=256,heads=4,ffn=1024,vocab=512,seq=64,attention=naive");
  const auto g = zoo::build_transformer(c, {});
  for (auto _ : state) benchmark::DoNotOptimize(execute<double>(g));
  state.counters["GFLOP/s"] = benchmark::Counter(
      g.total_flops() * static_cast<double>(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_ExecuteSmallDecoder)->Unit(benchmark::kMillisecond);

void BM_BuildGpt3TrainingGraph(benchmark::State& state) {
  for (auto _ : state) {
    const auto g = zoo::build_model("gpt3-175b");
    benchmark::DoNotOptimize(derive_training_graph(g).graph.nodes().size());
  }
}
BENCHMARK(BM_BuildGpt3TrainingGraph)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
