// Simulator speed targets (docs/performance.md): engine events per second on one core, and the wall time
// to simulate a 1 GiB ring all-reduce over 1024 GPUs (dgx-h100.yaml with 128 nodes).
#include <benchmark/benchmark.h>

#include <numeric>

#include "hw/system_loader.h"
#include "sim/collective_runner.h"
#include "sim/engine.h"

namespace {

using namespace strata;

struct Chain final : sim::EventHandler {
  sim::Engine* engine = nullptr;
  std::uint64_t remaining = 0;
  void on_event(std::uint64_t tag) override {
    if (remaining == 0) return;
    --remaining;
    engine->schedule(engine->now() + 1 + static_cast<sim::SimTime>(tag % 7), *this, tag * 31 + 1);
  }
};

// A queue holding `range(0)` pending events at all times, each event scheduling its successor.
void BM_EngineEvents(benchmark::State& state) {
  const auto pending = static_cast<std::uint64_t>(state.range(0));
  constexpr std::uint64_t kEvents = 1'000'000;
  for (auto _ : state) {
    sim::Engine engine;
    Chain chain;
    chain.engine = &engine;
    chain.remaining = kEvents;
    for (std::uint64_t i = 0; i < pending; ++i) engine.schedule(static_cast<sim::SimTime>(i), chain, i);
    engine.run();
    benchmark::DoNotOptimize(engine.events_processed());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * (kEvents + pending)));
}
BENCHMARK(BM_EngineEvents)->Arg(64)->Arg(4096)->Unit(benchmark::kMillisecond);

// Args: nodes, granularity (0 = flow bundles, the default; 1 = step-by-step transfers).
void BM_RingAllReduce(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  const hw::Topology topo =
      hw::load_system(std::string(STRATA_SOURCE_DIR) + "/configs/hw/dgx-h100.yaml", hw::LoadOptions{nodes});
  sim::CollectiveRequest req;
  req.spec.group.resize(static_cast<std::size_t>(topo.num_gpus()));
  std::iota(req.spec.group.begin(), req.spec.group.end(), 0);
  req.spec.bytes = 1 << 30;
  req.algorithm = "ring";
  req.auto_protocol = false;
  req.spec.granularity = state.range(1) == 0 ? sim::Granularity::kFlow : sim::Granularity::kStep;
  std::uint64_t events = 0;
  for (auto _ : state) {
    const auto r = sim::run_collective(topo, req);
    benchmark::DoNotOptimize(r.seconds);
    events += r.sim.events;
    state.counters["tasks"] = static_cast<double>(r.graph.size());
    state.counters["busbw_GBps"] = r.busbw / 1e9;
  }
  state.counters["events_per_s"] =
      benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_RingAllReduce)
    ->ArgNames({"nodes", "step"})
    ->Args({1, 0})
    ->Args({8, 0})
    ->Args({32, 0})
    ->Args({128, 0})
    ->Args({1, 1})
    ->Args({8, 1})
    ->Unit(benchmark::kMillisecond);

// Many concurrent flows: all-to-all over 64 GPUs (4032 flows sharing NVSwitch ports and NICs), the network
// model's worst case (every start and finish re-solves a large coupled component).
void BM_AllToAll64(benchmark::State& state) {
  const hw::Topology topo =
      hw::load_system(std::string(STRATA_SOURCE_DIR) + "/configs/hw/dgx-h100.yaml", hw::LoadOptions{8});
  sim::CollectiveRequest req;
  req.spec.op = sim::CollectiveOp::kAllToAll;
  req.spec.group.resize(static_cast<std::size_t>(topo.num_gpus()));
  std::iota(req.spec.group.begin(), req.spec.group.end(), 0);
  req.spec.bytes = 64 << 20;
  req.algorithm = "direct";
  req.auto_protocol = false;
  std::uint64_t events = 0;
  for (auto _ : state) {
    const auto r = sim::run_collective(topo, req);
    benchmark::DoNotOptimize(r.seconds);
    events += r.sim.events;
    state.counters["rate_solves"] = static_cast<double>(r.sim.rate_solves);
  }
  state.counters["events_per_s"] =
      benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_AllToAll64)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
