// Delta simulation against full re-simulation, MCMC against brute force, determinism, memory feasibility.
#include <algorithm>
#include <random>

#include <gtest/gtest.h>
#include <tbb/global_control.h>

#include "models/cost/cost_model.h"
#include "models/zoo/zoo.h"
#include "search/parallel/op_search.h"
#include "search/parallel/op_sim.h"
#include "tests/parallel/op_test_util.h"

namespace strata::search::parallel {
namespace {

using models::DType;
using models::Graph;
using testing::mlp;
using testing::pcie_system;

struct Prepared {
  PlanSpace space;
  ShardCosts costs;
  OpLowering lowering;
  Prepared(const Graph& g, const hw::Topology& topo, const models::CostModel& cm)
      : space(g, topo.num_gpus()), costs(space, cm), lowering(space, costs, {}) {}
};

// Random proposals, accepted or rolled back at random: after each, the delta-simulated time equals a full
// re-simulation of the same tasks and a simulator built from scratch for the plan; a rollback restores the
// previous time exactly.
void check_delta(const Graph& g, const hw::Topology& topo, int proposals, std::uint64_t seed,
                 int checkpoint) {
  const models::CostModel cm(topo.gpu());
  const Prepared p(g, topo, cm);
  OpSimulator s(p.lowering, topo, data_parallel_plan(p.space), checkpoint);
  std::mt19937_64 rng(seed);
  std::size_t replayed = 0, total = 0;
  for (int k = 0; k < proposals; ++k) {
    const int i = static_cast<int>(rng() % static_cast<std::uint64_t>(p.space.size()));
    const int c = static_cast<int>(rng() % p.space.configs(i).size());
    const auto before = s.makespan();
    const auto delta = s.propose(i, c);
    replayed += s.last_replayed();
    total += s.task_count();
    {
      OpSimulator fresh(p.lowering, topo, s.plan(), checkpoint);
      ASSERT_EQ(delta, fresh.makespan()) << "proposal " << k << " node " << i << " config " << c;
      ASSERT_EQ(s.memory(), fresh.memory()) << "proposal " << k;
    }
    if (rng() % 2) {
      s.commit();
    } else {
      s.rollback();
      ASSERT_EQ(s.makespan(), before) << "rollback " << k;
    }
    // Occasionally from time zero (which also resets the delta state: most steps chain deltas).
    if (k % 16 == 15) {
      ASSERT_EQ(s.simulate_full(), s.makespan()) << "after proposal " << k;
    }
  }
  // The point of delta simulation: fewer tasks re-run than a full simulation would.
  EXPECT_LT(replayed, total);
}

TEST(OpDelta, EqualsFullResimulationOnAnMlp) {
  check_delta(mlp(64, 256, 256, 128, true), pcie_system(4), 400, 1, 4);
  check_delta(mlp(128, 512, 512, 256, true), pcie_system(4), 400, 2, 32);
}

TEST(OpDelta, EqualsFullResimulationOnSqueezeNet) {
  const auto topo = hw::load_system("configs/hw/dgx-a100.yaml");
  const auto g = models::zoo::build_model("squeezenet", {.batch = 32, .dtype = DType::kF16});
  check_delta(g, topo, 150, 7, 32);
}

TEST(OpDelta, EqualsFullResimulationOnBert) {
  const auto topo = pcie_system(4);
  const auto g = models::zoo::build_bert({.batch = 8, .seq_len = 64, .dtype = DType::kF16}, 2, 256, 4, 1024);
  check_delta(g, topo, 150, 3, 16);
}

// An unrolled LSTM language model uses each layer's weights at every step (tied weights): proposals change
// who synchronises them and which copies are kept, so tied partners are re-lowered too.
TEST(OpDelta, EqualsFullResimulationOnTiedWeights) {
  const auto topo = pcie_system(4);
  const auto g = models::zoo::build_model("rnnlm", {.batch = 8, .seq_len = 3, .dtype = DType::kF16});
  check_delta(g, topo, 150, 5, 16);
}

// Under data parallelism every user of a tied weight lays it out alike, so the weight is kept (and
// all-reduced) once: each GPU holds every parameter with its gradient and Adam's two fp32 moments
// (4 + 4 + 8 bytes in fp32), and one more step adds activations only, not another copy of the weights.
TEST(OpLowering, TiedWeightsAreKeptOnceUnderDataParallelism) {
  const auto topo = pcie_system(4);
  const models::CostModel cm(topo.gpu());
  auto peak = [&](std::int64_t steps) {
    const auto g = models::zoo::build_model("rnnlm", {.batch = 4, .seq_len = steps});
    const Prepared p(g, topo, cm);
    return static_cast<double>(OpSimulator(p.lowering, topo, data_parallel_plan(p.space)).peak_memory());
  };
  const double params = static_cast<double>(models::zoo::build_model("rnnlm", {.seq_len = 2}).param_count());
  const double two = peak(2), three = peak(3);
  EXPECT_GE(two, 16 * params);
  EXPECT_LT(two, 16 * params * 1.05);
  EXPECT_LT(three - two, 0.05 * 16 * params);
}

// Brute force over every plan of a 4-node MLP on 2 GPUs (5 x 4 x 5 x 4 = 400 plans): MCMC from DP and the
// expert plan finds the optimum.
TEST(OpMcmc, FindsTheExhaustiveOptimum) {
  const auto topo = pcie_system(2);
  const models::CostModel cm(topo.gpu());
  const Graph g = mlp(256, 1024, 2048, 1024, true);
  const Prepared p(g, topo, cm);
  ASSERT_EQ(p.space.size(), 4);
  OpPlan plan{{0, 0, 0, 0}};
  double best = 1e30;
  int plans = 0;
  for (int a = 0; a < static_cast<int>(p.space.configs(0).size()); ++a)
    for (int b = 0; b < static_cast<int>(p.space.configs(1).size()); ++b)
      for (int c = 0; c < static_cast<int>(p.space.configs(2).size()); ++c)
        for (int d = 0; d < static_cast<int>(p.space.configs(3).size()); ++d) {
          plan.choice = {a, b, c, d};
          OpSimulator s(p.lowering, topo, plan);
          ++plans;
          if (s.fits()) best = std::min(best, s.seconds());
        }
  EXPECT_EQ(plans, 400);
  McmcOptions o;
  o.proposals = 3000;
  o.full_simulation = false;
  const auto r = run_mcmc(p.lowering, topo, o);
  EXPECT_TRUE(r.found);
  EXPECT_DOUBLE_EQ(r.best.fast_seconds, best);
  EXPECT_LE(r.best.fast_seconds, r.data_parallel.fast_seconds);
  EXPECT_LE(r.best.fast_seconds, r.expert.fast_seconds);
}

// FlexFlow's stopping rule: with stall_min, each chain stops at max(stall_min, twice its last improvement).
TEST(OpMcmc, StallRuleStopsChains) {
  const auto topo = pcie_system(2);
  const models::CostModel cm(topo.gpu());
  const Graph g = mlp(256, 1024, 2048, 1024, true);
  const Prepared p(g, topo, cm);
  McmcOptions o;
  o.proposals = 100000;
  o.stall_min = 500;
  o.full_simulation = false;
  const auto r = run_mcmc(p.lowering, topo, o);
  std::vector<std::int64_t> last(static_cast<std::size_t>(r.chains), 0);
  for (const auto& h : r.history) last[static_cast<std::size_t>(h.chain)] = h.proposals;
  std::int64_t expected = 0;
  for (auto l : last) expected += std::max<std::int64_t>(500, 2 * l);
  EXPECT_EQ(r.proposals, expected);
  EXPECT_LT(r.proposals, 2 * 100000);
}

// Same seed, same result, whatever the number of TBB threads (4 chains in parallel or one after another).
TEST(OpMcmc, DeterministicAcrossThreadCounts) {
  const auto topo = pcie_system(4);
  const models::CostModel cm(topo.gpu());
  const Graph g = mlp(128, 512, 512, 256, true);
  const Prepared p(g, topo, cm);
  McmcOptions o;
  o.proposals = 500;
  o.chains_per_start = 2;
  o.full_simulation = false;
  o.seed = 42;
  McmcResult one, many;
  {
    tbb::global_control c(tbb::global_control::max_allowed_parallelism, 1);
    one = run_mcmc(p.lowering, topo, o);
  }
  {
    tbb::global_control c(tbb::global_control::max_allowed_parallelism, 4);
    many = run_mcmc(p.lowering, topo, o);
  }
  EXPECT_EQ(one.best.plan, many.best.plan);
  EXPECT_EQ(one.best.fast_seconds, many.best.fast_seconds);
  EXPECT_EQ(one.accepted, many.accepted);
  ASSERT_EQ(one.history.size(), many.history.size());
  for (std::size_t k = 0; k < one.history.size(); ++k) {
    EXPECT_EQ(one.history[k].proposals, many.history[k].proposals);
    EXPECT_EQ(one.history[k].best_seconds, many.history[k].best_seconds);
  }
  o.seed = 43;
  const auto other = run_mcmc(p.lowering, topo, o);
  EXPECT_NE(other.accepted, one.accepted);  // a different stream (overwhelmingly likely to differ)
}

// Delta simulation (which also stops a proposal's simulation once it is past the rejection threshold) makes
// exactly the decisions a chain re-simulating every proposal from time zero makes.
TEST(OpMcmc, DeltaChainEqualsFullResimulationChain) {
  const auto topo = hw::load_system("configs/hw/dgx-a100.yaml");
  const models::CostModel cm(topo.gpu());
  const auto g = models::zoo::build_bert({.batch = 8, .seq_len = 64, .dtype = DType::kF16}, 2, 256, 4, 1024);
  const Prepared p(g, topo, cm);
  McmcOptions o;
  o.proposals = 600;
  o.full_simulation = false;
  const auto delta = run_mcmc(p.lowering, topo, o);
  o.delta = false;
  const auto full = run_mcmc(p.lowering, topo, o);
  EXPECT_EQ(delta.best.plan, full.best.plan);
  EXPECT_EQ(delta.accepted, full.accepted);
  ASSERT_EQ(delta.history.size(), full.history.size());
  for (std::size_t k = 0; k < delta.history.size(); ++k) {
    EXPECT_EQ(delta.history[k].proposals, full.history[k].proposals);
    EXPECT_EQ(delta.history[k].best_seconds, full.history[k].best_seconds);
  }
  EXPECT_GT(delta.accepted, 0);
}

// A 2^16 x 2^16 fp32 weight is 16 GiB; with its gradient and Adam moments 64 GiB on every GPU that holds it
// whole, plus the activations: data parallelism does not fit a 40 GB A100. Splitting its columns fits.
TEST(OpMcmc, OutOfMemoryPlansAreNeverReported) {
  const auto topo = pcie_system(4);
  const models::CostModel cm(topo.gpu());
  Graph g;
  const auto x = g.add_input("x", {{512, 1 << 16}, DType::kF32});
  const auto w = g.add_param("w", {{1 << 16, 1 << 16}, DType::kF32});
  g.mark_output(g.add("relu", {g.add("matmul", {x, w}, {}, "big")}));
  const Prepared p(g, topo, cm);
  const auto dp = data_parallel_plan(p.space);
  OpSimulator s(p.lowering, topo, dp);
  const double weight = 4.0 * (1 << 16) * (1 << 16);
  // x is a data input (no transfer); outputs: matmul and relu, 512/4 x 2^16 fp32 each.
  const double expect = 4 * weight + 2 * 4.0 * 128 * (1 << 16);
  EXPECT_EQ(static_cast<double>(s.peak_memory()), expect);
  EXPECT_FALSE(s.fits());
  McmcOptions o;
  o.proposals = 400;
  o.full_simulation = false;
  const auto r = run_mcmc(p.lowering, topo, o);
  EXPECT_FALSE(r.data_parallel.fits);
  ASSERT_TRUE(r.found);
  EXPECT_TRUE(r.best.fits);
  EXPECT_LE(static_cast<double>(r.best.peak_memory_bytes), topo.gpu().hbm_capacity);
  for (const auto& h : r.history)
    if (h.proposals > 0) {
      EXPECT_GT(h.best_seconds, 0);
    }
}

TEST(OpMcmc, BadOptionsNameTheField) {
  const auto topo = pcie_system(2);
  const models::CostModel cm(topo.gpu());
  const Graph g = mlp(8, 8, 8, 8);
  const Prepared p(g, topo, cm);
  const auto message = [&](McmcOptions o) {
    try {
      (void)run_mcmc(p.lowering, topo, o);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  McmcOptions o;
  o.proposals = -1;
  EXPECT_NE(message(o).find("proposals: expected a count >= 0, got -1"), std::string::npos) << message(o);
  o = {};
  o.proposals = 0;
  EXPECT_NE(message(o).find("a proposal or time budget"), std::string::npos);
  o = {};
  o.beta = -2;
  EXPECT_NE(message(o).find("beta"), std::string::npos);
  o = {};
  o.chains_per_start = 0;
  EXPECT_NE(message(o).find("chains_per_start: expected 1..4096, got 0"), std::string::npos);
}

}  // namespace
}  // namespace strata::search::parallel
