// Short MCMC searches on zoo models and an ONNX import; the fast and the full simulator's rankings compared.
#include <algorithm>
#include <cstdio>
#include <random>

#include <gtest/gtest.h>

#include "hw/system_loader.h"
#include "models/cost/cost_model.h"
#include "models/onnx/onnx.h"
#include "models/zoo/zoo.h"
#include "search/parallel/op_search.h"
#include "search/parallel/op_sim.h"

namespace strata::search::parallel {
namespace {

using models::DType;

void check_search(const models::Graph& g, const hw::Topology& topo, std::int64_t proposals) {
  const models::CostModel cm(topo.gpu());
  McmcOptions o;
  o.proposals = proposals;
  o.seed = 5;
  const auto r = run_mcmc(g, topo, cm, o);
  std::printf("%s on %d GPUs: %d nodes (%d part costs scaled), %lld proposals (%lld accepted) in %.2f s\n",
              g.name().c_str(), r.gpus, r.nodes, r.scaled_costs, static_cast<long long>(r.proposals),
              static_cast<long long>(r.accepted), r.wall_seconds);
  for (const auto* p : {&r.data_parallel, &r.expert, &r.best})
    std::printf("  %-8s fast %.3f ms  full %.3f ms  peak %.2f GB  %s\n",
                p == &r.best     ? "best"
                : p == &r.expert ? "expert"
                                 : "dp",
                p->fast_seconds * 1e3, p->full_seconds * 1e3, static_cast<double>(p->peak_memory_bytes) / 1e9,
                p->fits ? "fits" : "OOM");
  // The first lines of the best plan's listing.
  std::string head = r.best.listing.substr(0, std::min<std::size_t>(r.best.listing.size(), 600));
  std::printf("%s...\n", head.c_str());
  ASSERT_TRUE(r.found);
  EXPECT_TRUE(r.best.fits);
  // Data parallelism is one of the finalists the event simulator ranks.
  if (r.data_parallel.fits) {
    EXPECT_LE(r.best.full_seconds, r.data_parallel.full_seconds);
  }
  EXPECT_GT(r.best.full_seconds, 0);
  EXPECT_EQ(r.best.listing, describe_plan(PlanSpace(g, topo.num_gpus()), r.best.plan));
}

TEST(OpZoo, SqueezeNetOn8A100) {
  check_search(models::zoo::build_model("squeezenet", {.batch = 64, .dtype = DType::kF16}),
               hw::load_system("configs/hw/dgx-a100.yaml"), 1500);
}

TEST(OpZoo, ResNet50On8A100) {
  check_search(models::zoo::build_model("resnet50", {.batch = 64, .dtype = DType::kF16}),
               hw::load_system("configs/hw/dgx-a100.yaml"), 500);
}

TEST(OpZoo, BertOn4PcieGpus) {
  check_search(models::zoo::build_bert({.batch = 16, .seq_len = 128, .dtype = DType::kF16}, 2, 768, 12, 3072),
               hw::load_system("configs/hw/pcie-4gpu.yaml"), 1500);
}

// BERT-base at batch 1: ~200 small gradient all-reduces, which the fast simulator serializes. Its best plan
// (6.14 ms fast) is slower than data parallelism on the event simulator (4.97 vs 4.72 ms); the finalists are
// ranked there, so data parallelism is reported (regression: the first version reported the fast simulator's
// choice).
TEST(OpZoo, BertBaseOn8A100) {
  check_search(models::zoo::build_model("bert-base", {.dtype = DType::kF16}),
               hw::load_system("configs/hw/dgx-a100.yaml"), 2000);
}

TEST(OpZoo, OnnxImportedNasRnnOn8A100) {
  const auto g = models::import_onnx("tests/fuzz/corpus/onnx_import/zoo_nasrnn.onnx");
  check_search(g, hw::load_system("configs/hw/dgx-a100.yaml"), 1000);
}

// Data parallelism of a 2-layer BERT on 4 PCIe GPUs communicates only through gradient all-reduces. The fast
// simulator runs them one after another on the ring's links; the event simulator lets them share bandwidth,
// so it can only be as fast or faster here (5.1 vs 6.0 ms). Regression: the full time was read from
// SimResult::makespan, the engine's last event, which here is a stale flow-completion event at 45 ms, long
// after the last task.
TEST(OpZoo, FullSimulationEndsWithTheLastTask) {
  const auto topo = hw::load_system("configs/hw/pcie-4gpu.yaml");
  const auto g =
      models::zoo::build_bert({.batch = 16, .seq_len = 128, .dtype = DType::kF16}, 2, 768, 12, 3072);
  const models::CostModel cm(topo.gpu());
  const PlanSpace space(g, topo.num_gpus());
  const ShardCosts costs(space, cm);
  const OpLowering low(space, costs, {});
  const auto dp = evaluate_plan(low, topo, data_parallel_plan(space), true);
  EXPECT_LE(dp.full_seconds, dp.fast_seconds);
}

// The two simulators on the same plans (op_sim.h): the fast one queues whole transfers and all-reduces on
// links, the event simulator shares link bandwidth max-min among concurrent flows. On plans that differ
// clearly (everything on one GPU vs data parallelism vs the expert plan) they agree on the order; over a
// random walk of plans, the rank correlation is printed.
TEST(OpZoo, FastAndFullSimulatorsRankPlansAlike) {
  const auto topo = hw::load_system("configs/hw/dgx-a100.yaml");
  const auto g = models::zoo::build_model("squeezenet", {.batch = 64, .dtype = DType::kF16});
  const models::CostModel cm(topo.gpu());
  const PlanSpace space(g, topo.num_gpus());
  const ShardCosts costs(space, cm);
  const OpLowering low(space, costs, {});
  OpPlan one_gpu{std::vector<int>(static_cast<std::size_t>(space.size()), 0)};
  for (int i = 0; i < space.size(); ++i) {
    const auto cs = space.configs(i);
    for (std::size_t c = 0; c < cs.size(); ++c)
      if (cs[c].parts() == 1 && cs[c].start == 0)
        one_gpu.choice[static_cast<std::size_t>(i)] = static_cast<int>(c);
  }
  const auto one = evaluate_plan(low, topo, one_gpu, true);
  const auto dp = evaluate_plan(low, topo, data_parallel_plan(space), true);
  EXPECT_LT(dp.fast_seconds, one.fast_seconds);
  EXPECT_LT(dp.full_seconds, one.full_seconds);

  // A random walk from data parallelism: 12 plans, each 3 random changes further.
  std::mt19937_64 rng(9);
  OpPlan p = data_parallel_plan(space);
  std::vector<std::pair<double, double>> times;
  for (int k = 0; k < 12; ++k) {
    for (int step = 0; step < 3; ++step) {
      const int i = static_cast<int>(rng() % static_cast<std::uint64_t>(space.size()));
      p.choice[static_cast<std::size_t>(i)] = static_cast<int>(rng() % space.configs(i).size());
    }
    const auto r = evaluate_plan(low, topo, p, true);
    times.emplace_back(r.fast_seconds, r.full_seconds);
  }
  int concordant = 0, discordant = 0;
  for (std::size_t a = 0; a < times.size(); ++a)
    for (std::size_t b = a + 1; b < times.size(); ++b) {
      const double s = (times[a].first - times[b].first) * (times[a].second - times[b].second);
      concordant += s > 0 ? 1 : 0;
      discordant += s < 0 ? 1 : 0;
    }
  const double tau =
      static_cast<double>(concordant - discordant) / static_cast<double>(concordant + discordant);
  std::printf("Kendall tau (fast vs full) over %zu random-walk plans: %.2f\n", times.size(), tau);
  for (const auto& [f, full] : times) std::printf("  fast %.3f ms  full %.3f ms\n", f * 1e3, full * 1e3);
  EXPECT_GT(tau, 0.5);
}

}  // namespace
}  // namespace strata::search::parallel
