// The exhaustive LLM search against brute force (every candidate simulated, no bound) and across thread
// counts.
#include <gtest/gtest.h>

#include <limits>

#include <tbb/global_control.h>

#include "search/parallel/llm_search.h"
#include "tests/test_systems.h"

namespace strata::search::parallel {
namespace {

models::zoo::TransformerSpec small_gpt() {
  return models::zoo::parse_transformer_spec(
      "transformer:layers=8,hidden=1024,heads=16,vocab=32000,seq=1024");
}

// 6.4 B parameters on 8 GPUs: plain data parallelism does not fit, so ZeRO stages and recomputation matter.
models::zoo::TransformerSpec tight_gpt() {
  return models::zoo::parse_transformer_spec(
      "transformer:layers=32,hidden=4096,heads=32,vocab=32000,seq=2048");
}

LlmSearchOptions small_options() {
  LlmSearchOptions o;
  o.global_batch = 16;
  o.top = 3;
  o.space.micro_batches = {1, 2};
  o.space.max_virtual_stages = 2;
  o.space.all_placements = false;
  return o;
}

class LlmSearchBruteForce : public ::testing::TestWithParam<bool> {};

TEST_P(LlmSearchBruteForce, BranchAndBoundFindsTheBruteForceOptimum) {
  const auto topo = test::uniform_switch(2, 4, 100, 25);
  const auto spec = GetParam() ? tight_gpt() : small_gpt();
  const models::CostModel cost(topo.gpu());
  const auto o = small_options();
  const auto r = search_llm(spec, topo, cost, o);
  ASSERT_FALSE(r.top.empty());
  EXPECT_GT(r.counts.pruned, 0u);  // the bound did prune
  // Brute force over the same space without any dominance rule: every strategy x ZeRO stage x recomputation
  // level that fits is simulated.
  double best = std::numeric_limits<double>::infinity();
  std::string best_plan;
  int simulated = 0;
  for (int tp : {1, 2, 4, 8})
    for (int pp : {1, 2, 4, 8})
      for (int cp : {1, 2, 4, 8}) {
        if (tp * pp * cp > 8) continue;
        const int dp = 8 / (tp * pp * cp);
        if (tp * pp * cp * dp != 8) continue;
        for (int mb : o.space.micro_batches)
          for (int v : {1, 2})
            for (bool sp : {false, true})
              for (int z : {0, 1, 2, 3}) {
                LlmStrategy s;
                s.tp = tp, s.pp = pp, s.cp = cp, s.dp = dp, s.micro_batch = mb, s.global_batch = 16;
                s.virtual_stages = v, s.sequence_parallel = sp, s.zero = z;
                s.schedule = v > 1 ? PipelineSchedule::kInterleaved : PipelineSchedule::kOneFOneB;
                if ((z > 0 && dp * cp == 1) || !strategy_problems(spec, s, topo).empty()) continue;
                const auto costs = llm_costs(spec, s, cost);
                for (Recompute rc : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
                  s.recompute = rc;
                  if (llm_memory(spec, s, costs.layer, costs.edge).total() > topo.gpu().hbm_capacity)
                    continue;
                  const double t = simulate_llm_step(spec, s, topo, cost, costs).step_seconds;
                  if (t < best) best_plan = s.describe();
                  best = std::min(best, t);
                  ++simulated;
                  break;
                }
              }
      }
  EXPECT_GT(simulated, 20);
  EXPECT_DOUBLE_EQ(r.top.front().step_seconds, best)
      << r.top.front().strategy.describe() << " vs " << best_plan;
  EXPECT_LT(r.counts.simulated, static_cast<std::size_t>(simulated));
}
INSTANTIATE_TEST_SUITE_P(SmallAndMemoryTight, LlmSearchBruteForce, ::testing::Bool());

TEST(LlmSearch, SameResultForAnyThreadCount) {
  const auto topo = test::uniform_switch(2, 4, 100, 25);
  const auto spec = small_gpt();
  const models::CostModel cost(topo.gpu());
  const auto o = small_options();
  LlmSearchResult one, two;
  {
    tbb::global_control c(tbb::global_control::max_allowed_parallelism, 1);
    one = search_llm(spec, topo, cost, o);
  }
  {
    tbb::global_control c(tbb::global_control::max_allowed_parallelism, 2);
    two = search_llm(spec, topo, cost, o);
  }
  ASSERT_EQ(one.top.size(), two.top.size());
  for (std::size_t i = 0; i < one.top.size(); ++i) {
    EXPECT_EQ(one.top[i].strategy.describe(), two.top[i].strategy.describe());
    EXPECT_EQ(one.top[i].step_seconds, two.top[i].step_seconds);
  }
  EXPECT_EQ(one.counts.simulated, two.counts.simulated);
}

}  // namespace
}  // namespace strata::search::parallel
