// Measuring in rounds (validate/cpu_replay.h least_disturbed, validate/cost_calibration.h measure_suite with
// MeasureOptions::rounds): every instance keeps the smallest of its rounds' medians and the spread of those
// medians, checked against hand-made rounds and a scripted device whose medians are chosen here.
#include <cstddef>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

#include "validate/cost_calibration.h"
#include "validate/cpu_replay.h"
#include "validate/replay_device.h"

namespace strata::validate {
namespace {

ProfiledOp op(const std::string& key, double median, int instances = 1) {
  ProfiledOp p;
  p.key = key;
  p.instances = instances;
  p.timing.median_seconds = median;
  p.timing.min_seconds = median * 0.9;
  p.timing.max_seconds = median * 1.2;
  return p;
}

CpuProfile round_of(std::vector<ProfiledOp> ops) {
  CpuProfile p;
  for (const auto& o : ops) p.db.add(o.key, o.timing.median_seconds);
  p.ops = std::move(ops);
  p.view_nodes = 2;
  return p;
}

TEST(MeasurementRounds, LeastDisturbedKeepsEachInstancesSmallestRoundMedian) {
  // conv: 10, 8, 12 us -> 8 us, slowest 12 / 8 - 1 = 0.5. add: 3, 3, 3 -> 3, spread 0. pool: 6, 9, 7 -> 6,
  // spread 9 / 6 - 1 = 0.5; its fastest round (the first) differs from conv's (the second).
  const std::vector<CpuProfile> rounds{
      round_of({op("conv", 10e-6, 4), op("add", 3e-6, 2), op("pool", 6e-6)}),
      round_of({op("conv", 8e-6, 4), op("add", 3e-6, 2), op("pool", 9e-6)}),
      round_of({op("conv", 12e-6, 4), op("add", 3e-6, 2), op("pool", 7e-6)}),
  };
  const auto p = least_disturbed(rounds);
  ASSERT_EQ(p.ops.size(), 3u);
  EXPECT_EQ(p.rounds, 3);
  EXPECT_EQ(p.view_nodes, 2);
  EXPECT_DOUBLE_EQ(p.ops[0].timing.median_seconds, 8e-6);
  EXPECT_DOUBLE_EQ(p.ops[0].timing.max_seconds, 8e-6 * 1.2);  // the whole timing of the kept round
  EXPECT_NEAR(p.ops[0].round_spread, 0.5, 1e-12);
  EXPECT_EQ(p.ops[0].instances, 4);
  EXPECT_DOUBLE_EQ(p.ops[1].timing.median_seconds, 3e-6);
  EXPECT_DOUBLE_EQ(p.ops[1].round_spread, 0);
  EXPECT_DOUBLE_EQ(p.ops[2].timing.median_seconds, 6e-6);
  EXPECT_NEAR(p.ops[2].round_spread, 0.5, 1e-12);
  // The database holds the kept medians.
  EXPECT_EQ(p.db.size(), 3u);
  EXPECT_DOUBLE_EQ(*p.db.find("conv"), 8e-6);
  EXPECT_DOUBLE_EQ(*p.db.find("pool"), 6e-6);
  // Combining already-combined profiles keeps the spread of every round: conv's 12 us round still counts.
  const std::vector<CpuProfile> nested{least_disturbed(std::span(rounds).first(1)),
                                       least_disturbed(std::span(rounds).subspan(1))};
  const auto again = least_disturbed(nested);
  EXPECT_EQ(again.rounds, 3);
  EXPECT_NEAR(again.ops[0].round_spread, 0.5, 1e-12);
  EXPECT_DOUBLE_EQ(again.ops[0].timing.median_seconds, 8e-6);
  // One round is returned as it is.
  const auto one = least_disturbed(std::span(rounds).first(1));
  EXPECT_DOUBLE_EQ(one.ops[0].timing.median_seconds, 10e-6);
  EXPECT_DOUBLE_EQ(one.ops[0].round_spread, 0);
}

TEST(MeasurementRounds, RoundsOfDifferentInstancesAreRefused) {
  EXPECT_THROW(least_disturbed({}), std::invalid_argument);
  const std::vector<CpuProfile> fewer{round_of({op("a", 1e-6), op("b", 1e-6)}), round_of({op("a", 1e-6)})};
  EXPECT_THROW(least_disturbed(fewer), std::invalid_argument);
  const std::vector<CpuProfile> other{round_of({op("a", 1e-6)}), round_of({op("b", 1e-6)})};
  EXPECT_THROW(least_disturbed(other), std::invalid_argument);
}

// A device whose time_node returns the next scripted median, counting its calls.
std::vector<double> g_script;
std::size_t g_calls = 0;
std::string nothing() {
  return "";
}
NodeTiming scripted_time(const models::Graph&, models::NodeId, const TimingOptions&) {
  NodeTiming t;
  t.median_seconds = g_script.at(g_calls++);
  t.backend.backend = CpuBackend::kOneDnn;
  return t;
}
const ReplayDevice kScripted{.name = "scripted",
                             .kernels = "scripted kernels",
                             .library = "scripted",
                             .where = "a script",
                             .system_file = "",
                             .unavailable = nothing,
                             .description = nothing,
                             .profile_device = nothing,
                             .replay = nullptr,
                             .time_node = scripted_time,
                             .time_graph = nullptr,
                             .profile = nullptr};

TEST(MeasurementRounds, MeasureSuiteKeepsEachBenchmarksSmallestRoundMedian) {
  auto suite = calibration_suite(true);
  suite.resize(2);
  // Round 1: probe and timed run per benchmark; rounds 2 and 3: the timed run only (the repetitions decided
  // by the probe are kept). Benchmark 0: 5, 3, 4 ms -> 3 ms, spread 5/3 - 1; benchmark 1: 2, 2, 6 ms -> 2 ms,
  // spread 2.
  g_script = {1e-3, 5e-3, 1e-3, 2e-3, /* round 2 */ 3e-3, 2e-3, /* round 3 */ 4e-3, 6e-3};
  g_calls = 0;
  MeasureOptions o;
  o.rounds = 3;
  std::vector<std::size_t> done, totals;
  o.progress = [&](std::size_t d, std::size_t t, const CalibrationPoint&) {
    done.push_back(d);
    totals.push_back(t);
  };
  const auto points = measure_suite(suite, o, kScripted);
  EXPECT_EQ(g_calls, g_script.size());
  ASSERT_EQ(points.size(), 2u);
  EXPECT_DOUBLE_EQ(points[0].measured, 3e-3);
  EXPECT_NEAR(points[0].round_spread, 5.0 / 3 - 1, 1e-12);
  EXPECT_DOUBLE_EQ(points[1].measured, 2e-3);
  EXPECT_NEAR(points[1].round_spread, 2.0, 1e-12);
  EXPECT_EQ(points[0].label, suite[0].label);
  EXPECT_EQ(done, (std::vector<std::size_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(totals, std::vector<std::size_t>(6, 6));

  o.rounds = 0;
  EXPECT_THROW(measure_suite(suite, o, kScripted), std::invalid_argument);
}

}  // namespace
}  // namespace strata::validate
