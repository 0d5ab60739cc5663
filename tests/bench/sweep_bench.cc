// Experiment-platform speed target (issue 16, docs/performance.md "Sweeps"): a 1,000-point what-if sweep of
// collective simulations finishes in under a minute on 2 cores. The sweep is a Latin hypercube over the NIC
// and NVLink-fabric bandwidth factors of four DGX H100 nodes, written as an experiment file and run through
// the same entry point as `strata run --no-plots` (run_sweep: point expansion, store keys, the kind's parse,
// run and report per point, the tidy CSV/JSON/summary at the end).
#include <benchmark/benchmark.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include <unistd.h>

#include "experiments/experiment.h"
#include "experiments/sweep.h"

namespace {

namespace fs = std::filesystem;
using namespace strata;

// Every point: ring and tree all-reduce at 6 sizes from 1 MiB to 1 GiB on 4 DGX H100 nodes (32 GPUs), i.e.
// 12 collective simulations.
std::string experiment_text(int points) {
  return "experiment: whatif_bench\n"
         "description: what-if benchmark\n"
         "kind: collective-sweep\n"
         "op: allreduce\n"
         "sizes: 1MiB:1GiB:4\n"
         "dtype: fp32\n"
         "algorithms: [ring, tree]\n"
         "systems:\n"
         "  - hw: " STRATA_SOURCE_DIR
         "/configs/hw/dgx-h100.yaml\n"
         "    nodes: 4\n"
         "sweep:\n"
         "  mode: lhs\n"
         "  seed: 7\n"
         "  samples: " +
         std::to_string(points) +
         "\n"
         "  axes:\n"
         "    scale.nic_bandwidth: {min: 0.25, max: 8, log: true}\n"
         "    scale.fabric_bandwidth: {min: 0.5, max: 4, log: true}\n";
}

// A scratch folder holding the experiment file and its results, removed at the end.
struct Scratch {
  fs::path dir = fs::temp_directory_path() / ("strata_sweep_bench_" + std::to_string(::getpid()));
  explicit Scratch(int points) {
    fs::create_directories(dir);
    std::ofstream(dir / "whatif.yaml") << experiment_text(points);
  }
  ~Scratch() { fs::remove_all(dir); }
  experiments::RunOptions options() const { return {(dir / "results").string(), false}; }
};

// The sweep's progress lines (one per point when stderr is not a terminal) go nowhere while timing.
struct QuietStderr {
  std::ostringstream sink;
  std::streambuf* saved = std::cerr.rdbuf(sink.rdbuf());
  ~QuietStderr() { std::cerr.rdbuf(saved); }
};

// Every point computed: the store is emptied before each iteration.
void BM_WhatIfSweep(benchmark::State& state) {
  const Scratch scratch(static_cast<int>(state.range(0)));
  const auto file = experiments::ExperimentFile::load((scratch.dir / "whatif.yaml").string());
  std::size_t computed = 0;
  for (auto _ : state) {
    state.PauseTiming();
    fs::remove_all(scratch.dir / "results");
    state.ResumeTiming();
    const QuietStderr quiet;
    const auto outcome = experiments::run_sweep(file, scratch.options());
    computed += outcome.computed;
  }
  state.counters["points_per_s"] =
      benchmark::Counter(static_cast<double>(computed), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_WhatIfSweep)->Arg(1000)->Unit(benchmark::kSecond)->Iterations(2)->UseRealTime();

// The same sweep re-run with every point in the store (a resumed or extended sweep's overhead).
void BM_WhatIfSweepResume(benchmark::State& state) {
  const Scratch scratch(static_cast<int>(state.range(0)));
  const auto file = experiments::ExperimentFile::load((scratch.dir / "whatif.yaml").string());
  {
    const QuietStderr quiet;
    experiments::run_sweep(file, scratch.options());
  }
  std::size_t reused = 0;
  for (auto _ : state) {
    const QuietStderr quiet;
    reused += experiments::run_sweep(file, scratch.options()).reused;
  }
  state.counters["points_per_s"] =
      benchmark::Counter(static_cast<double>(reused), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_WhatIfSweepResume)->Arg(1000)->Unit(benchmark::kSecond)->Iterations(2)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
