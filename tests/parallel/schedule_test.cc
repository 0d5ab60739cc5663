// Pipeline schedules: pass orders against Megatron-LM's rules and simulated bubbles against the closed forms
// of Narayanan et al. SC'21 (bubble fraction (p-1)/(m+p-1) for GPipe/1F1B, (p-1)/(v m + p-1) interleaved).
#include "search/parallel/schedule.h"

#include <gtest/gtest.h>

#include "search/parallel/step_graph.h"
#include "tests/test_systems.h"

namespace strata::search::parallel {
namespace {

TEST(Schedule, OneFOneBWarmsUpWithTheStagesBehind) {
  // p = 4, stage 1: 2 warm-up forwards, then alternate, then 2 cool-down backwards.
  const auto order = stage_order(PipelineSchedule::kOneFOneB, 4, 1, 5, 1);
  const std::vector<PipelineOp> expected = {{0, 0, false}, {1, 0, false}, {2, 0, false}, {0, 0, true},
                                            {3, 0, false}, {1, 0, true},  {4, 0, false}, {2, 0, true},
                                            {3, 0, true},  {4, 0, true}};
  EXPECT_EQ(order, expected);
  EXPECT_EQ(peak_in_flight(PipelineSchedule::kOneFOneB, 4, 0, 8, 1), 4);
  EXPECT_EQ(peak_in_flight(PipelineSchedule::kOneFOneB, 4, 3, 8, 1), 1);
  EXPECT_EQ(peak_in_flight(PipelineSchedule::kGpipe, 4, 3, 8, 1), 8);
}

TEST(Schedule, InterleavedVisitsChunksInGroupsOfP) {
  // p = 2, v = 2, m = 4: forwards go mb0 c0, mb1 c0, mb0 c1, mb1 c1, mb2 c0, ...
  const auto order = stage_order(PipelineSchedule::kInterleaved, 2, 0, 4, 2);
  ASSERT_EQ(order.size(), 16u);
  std::vector<PipelineOp> forwards;
  for (const auto& op : order)
    if (!op.backward) forwards.push_back(op);
  const std::vector<PipelineOp> expected = {{0, 0, false}, {1, 0, false}, {0, 1, false}, {1, 1, false},
                                            {2, 0, false}, {3, 0, false}, {2, 1, false}, {3, 1, false}};
  EXPECT_EQ(forwards, expected);
  // Megatron's warm-up on stage 0: 2 (p - 1) + (v - 1) p = 4, so 5 chunk passes in flight.
  EXPECT_EQ(peak_in_flight(PipelineSchedule::kInterleaved, 2, 0, 4, 2), 5);
  EXPECT_NE(schedule_problem(PipelineSchedule::kInterleaved, 4, 6, 2), "");  // m not a multiple of p
  EXPECT_NE(schedule_problem(PipelineSchedule::kOneFOneB, 4, 8, 2), "");
}

// p stages with a forward of f and a backward of b seconds per micro-batch (split evenly over v chunks) and
// free communication.
double synthetic_step(PipelineSchedule s, int p, int m, int v, double f, double b) {
  const auto topo = test::uniform_switch(1, p, 100, 100);
  StepDescription d;
  d.p = p, d.m = m, d.v = v, d.schedule = s;
  for (int i = 0; i < p; ++i) d.rep.push_back(i);
  d.fwd.resize(static_cast<std::size_t>(p * v));
  d.bwd.resize(static_cast<std::size_t>(p * v));
  auto compute = [](double seconds, const char* label) {
    Segment seg;
    seg.seconds = seconds;
    seg.label = label;
    return seg;
  };
  for (auto& pass : d.fwd) pass.segments = {compute(f / v, "fwd")};
  for (auto& pass : d.bwd) pass.segments = {compute(b / v, "bwd")};
  d.send_fwd.assign(static_cast<std::size_t>(p * v - 1), -1);
  d.send_bwd = d.send_fwd;
  d.stages.resize(static_cast<std::size_t>(p));
  const auto g = build_step_graph(topo, d);
  return sim::simulate(topo, g.graph).seconds();
}

TEST(Schedule, SimulatedBubbleMatchesTheClosedForms) {
  const double f = 1e-3, b = 2e-3;
  for (int p : {2, 4, 8})
    for (int m : {8, 16}) {
      const double ideal = m * (f + b);
      for (auto s : {PipelineSchedule::kGpipe, PipelineSchedule::kOneFOneB}) {
        const double step = synthetic_step(s, p, m, 1, f, b);
        EXPECT_NEAR((step - ideal) / step, double(p - 1) / (m + p - 1), 1e-6) << schedule_name(s) << p << m;
      }
      for (int v : {2, 4}) {
        const double step = synthetic_step(PipelineSchedule::kInterleaved, p, m, v, f, b);
        EXPECT_NEAR((step - ideal) / step, double(p - 1) / (v * m + p - 1), 1e-6)
            << "interleaved " << p << m << v;
      }
    }
}

}  // namespace
}  // namespace strata::search::parallel
