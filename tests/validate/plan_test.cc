// Measurement plans (validate/plan.h): the JSON that travels between `strata` and the MPI worker, the checks
// that keep a plan runnable (ranks in range, disjoint groups, whole float32 elements per rank), and the
// nccl-tests-style size rounding.
#include <gtest/gtest.h>

#include <climits>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "validate/plan.h"

namespace strata::validate {
namespace {

using nlohmann::json;
using sim::CollectiveOp;

// A two-case plan written by hand: a single all-reduce, and a two-step program whose first step runs two
// reduce-scatters on disjoint halves concurrently.
MeasurementPlan sample_plan() {
  MeasurementPlan p;
  p.ranks = 4;
  p.warmup = 3;
  p.iterations = 7;
  p.cases.push_back(
      {"allreduce 1048576", {PlanStep{{PlanCall{CollectiveOp::kAllReduce, {0, 1, 2, 3}, 1 << 20}}}}});
  PlanCase program;
  program.name = "program a";
  program.steps.push_back(PlanStep{{PlanCall{CollectiveOp::kReduceScatter, {0, 1}, 4096},
                                    PlanCall{CollectiveOp::kReduceScatter, {3, 2}, 4096}}});
  program.steps.push_back(PlanStep{{PlanCall{CollectiveOp::kBroadcast, {2, 0}, 2048}}});
  p.cases.push_back(std::move(program));
  return p;
}

// The exception message of parsing `text` as a plan from "plan.json" (empty when it parses).
std::string parse_error(const std::string& text) {
  try {
    plan_from_json(text, "plan.json");
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

// sample_plan() as JSON with call `k` of step `s` of case `c` replaced; by default case 1 (program a), step
// 0, call 1, whose step-mate (call 0) runs on ranks {0, 1}.
std::string with_call(const json& call, int c = 1, int s = 0, int k = 1) {
  json j = json::parse(plan_to_json(sample_plan()));
  j["cases"][c]["steps"][s][k] = call;
  return j.dump();
}

TEST(Plan, JsonRoundTripKeepsEveryField) {
  const MeasurementPlan p = plan_from_json(plan_to_json(sample_plan()), "roundtrip");
  EXPECT_EQ(p.ranks, 4);
  EXPECT_EQ(p.warmup, 3);
  EXPECT_EQ(p.iterations, 7);
  ASSERT_EQ(p.cases.size(), 2u);
  EXPECT_EQ(p.cases[0].name, "allreduce 1048576");
  ASSERT_EQ(p.cases[0].steps.size(), 1u);
  ASSERT_EQ(p.cases[0].steps[0].calls.size(), 1u);
  EXPECT_EQ(p.cases[0].steps[0].calls[0].op, CollectiveOp::kAllReduce);
  EXPECT_EQ(p.cases[0].steps[0].calls[0].group, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(p.cases[0].steps[0].calls[0].bytes, 1 << 20);
  const auto& prog = p.cases[1];
  EXPECT_EQ(prog.name, "program a");
  ASSERT_EQ(prog.steps.size(), 2u);
  ASSERT_EQ(prog.steps[0].calls.size(), 2u);
  EXPECT_EQ(prog.steps[0].calls[1].op, CollectiveOp::kReduceScatter);
  EXPECT_EQ(prog.steps[0].calls[1].group, (std::vector<int>{3, 2}));  // order kept: the root comes first
  EXPECT_EQ(prog.steps[0].calls[1].bytes, 4096);
  ASSERT_EQ(prog.steps[1].calls.size(), 1u);
  EXPECT_EQ(prog.steps[1].calls[0].op, CollectiveOp::kBroadcast);
  EXPECT_EQ(prog.steps[1].calls[0].group, (std::vector<int>{2, 0}));
  EXPECT_EQ(prog.steps[1].calls[0].bytes, 2048);
}

TEST(Plan, ResultJsonRoundTrip) {
  PlanResult r;
  r.ranks = 2;
  r.library = "Open MPI v4.1.4";
  r.cases.push_back({"sendrecv 8", {1.5e-4, 1.25e-4}, {1.4e-4, 1.3e-4}});
  const PlanResult back = result_from_json(result_to_json(r), "result.json");
  EXPECT_EQ(back.ranks, 2);
  EXPECT_EQ(back.library, "Open MPI v4.1.4");
  ASSERT_EQ(back.cases.size(), 1u);
  EXPECT_EQ(back.cases[0].name, "sendrecv 8");
  EXPECT_EQ(back.cases[0].seconds, (std::vector<double>{1.5e-4, 1.25e-4}));
  EXPECT_EQ(back.cases[0].rank_median_seconds, (std::vector<double>{1.4e-4, 1.3e-4}));
}

TEST(Plan, UnknownOpNamesTheFieldAndTheChoices) {
  const auto e = parse_error(with_call({{"op", "allreduc"}, {"group", {2, 3}}, {"bytes", 64}}));
  EXPECT_NE(e.find("plan.json"), std::string::npos) << e;
  EXPECT_NE(e.find("cases[1].steps[0][1].op"), std::string::npos) << e;
  EXPECT_NE(e.find("allreduce, reducescatter"), std::string::npos) << e;
}

TEST(Plan, MissingAndMistypedFieldsAreNamed) {
  const auto missing = parse_error(with_call({{"op", "allreduce"}, {"group", {2, 3}}}));
  EXPECT_NE(missing.find("cases[1].steps[0][1]: missing field 'bytes'"), std::string::npos) << missing;
  const auto mistyped = parse_error(with_call({{"op", "allreduce"}, {"group", {2, 3}}, {"bytes", "64"}}));
  EXPECT_NE(mistyped.find("cases[1].steps[0][1].bytes: expected an integer"), std::string::npos) << mistyped;
  json j = json::parse(plan_to_json(sample_plan()));
  j.erase("warmup");
  const auto top = parse_error(j.dump());
  EXPECT_NE(top.find("plan: missing field 'warmup'"), std::string::npos) << top;
  const auto not_json = parse_error("{\"ranks\": 4,");
  EXPECT_NE(not_json.find("plan.json: not valid JSON"), std::string::npos) << not_json;
}

TEST(Plan, RankOutOfRangeNamesTheCallAndTheRange) {
  // ranks is 4: rank 4 is one past the last.
  const auto e = parse_error(with_call({{"op", "allreduce"}, {"group", {2, 4}}, {"bytes", 64}}));
  EXPECT_NE(e.find("plan.json"), std::string::npos) << e;
  EXPECT_NE(e.find("case 'program a' step 0 call 1"), std::string::npos) << e;
  EXPECT_NE(e.find("rank 4 outside 0..3"), std::string::npos) << e;
  const auto negative = parse_error(with_call({{"op", "allreduce"}, {"group", {-1, 2}}, {"bytes", 64}}));
  EXPECT_NE(negative.find("rank -1 outside 0..3"), std::string::npos) << negative;
  const auto empty = parse_error(with_call({{"op", "allreduce"}, {"group", json::array()}, {"bytes", 64}}));
  EXPECT_NE(empty.find("case 'program a' step 0 call 1: empty group"), std::string::npos) << empty;
}

TEST(Plan, RanksRepeatedWithinAStepAreRefused) {
  // Call 0 of that step is on {0, 1}; a second call on {1, 2} reuses rank 1 at the same time.
  const auto e = parse_error(with_call({{"op", "allreduce"}, {"group", {1, 2}}, {"bytes", 64}}));
  EXPECT_NE(e.find("case 'program a' step 0 call 1"), std::string::npos) << e;
  EXPECT_NE(e.find("rank 1"), std::string::npos) << e;
  // A rank twice in one group is refused as well (MPI_Comm_split cannot place a process twice).
  EXPECT_NE(parse_error(with_call({{"op", "allreduce"}, {"group", {2, 2}}, {"bytes", 64}})), "");
  // Reusing ranks in a later step is fine: steps run one after another (sample_plan's step 1 reuses 0 and 2).
  EXPECT_EQ(parse_error(plan_to_json(sample_plan())), "");
}

TEST(Plan, SplitCollectivesNeedWholeElementsPerRank) {
  // Reduce-scatter over 3 ranks: every rank gets bytes/3 of float32, so bytes must be a multiple of 4 x 3 =
  // 12; 4100 = 12 x 341 + 8 is not, 4104 = 12 x 342 is.
  const auto e =
      parse_error(with_call({{"op", "reducescatter"}, {"group", {0, 1, 2}}, {"bytes", 4100}}, 0, 0, 0));
  EXPECT_NE(e.find("case 'allreduce 1048576' step 0 call 0"), std::string::npos) << e;
  EXPECT_NE(e.find("4100 bytes is not a positive multiple of 12"), std::string::npos) << e;
  EXPECT_EQ(parse_error(with_call({{"op", "reducescatter"}, {"group", {0, 1, 2}}, {"bytes", 4104}}, 0, 0, 0)),
            "");
  // All-gather and all-to-all split the same way: over 2 ranks, multiples of 8.
  for (const char* op : {"allgather", "alltoall"}) {
    const auto split = parse_error(with_call({{"op", op}, {"group", {2, 3}}, {"bytes", 4100}}));
    EXPECT_NE(split.find("4100 bytes is not a positive multiple of 8"), std::string::npos)
        << op << ": " << split;
  }
  // Whole-vector collectives need whole elements only: 4100 = 4 x 1025 is fine for an all-reduce.
  EXPECT_EQ(parse_error(with_call({{"op", "allreduce"}, {"group", {2, 3}}, {"bytes", 4100}})), "");
  const auto zero = parse_error(with_call({{"op", "allreduce"}, {"group", {2, 3}}, {"bytes", 0}}));
  EXPECT_NE(zero.find("0 bytes is not a positive multiple of 4"), std::string::npos) << zero;
}

TEST(Plan, CheckPlanRefusesCountsBeyondMpisInt) {
  // MPI counts are int: 4 x 2^31 bytes is 2^31 float32 elements, one more than INT_MAX.
  MeasurementPlan p = sample_plan();
  p.cases[0].steps[0].calls[0].bytes = 4LL * (static_cast<long long>(INT_MAX) + 1);
  try {
    check_plan(p);
    ADD_FAILURE() << "accepted 2^31 elements";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("exceeds MPI's int element count"), std::string::npos) << e.what();
  }
  p.cases[0].steps[0].calls[0].bytes = 4LL * INT_MAX;  // exactly INT_MAX elements
  EXPECT_NO_THROW(check_plan(p));
  MeasurementPlan bad = sample_plan();
  bad.iterations = 0;
  EXPECT_THROW(check_plan(bad), std::invalid_argument);
  bad = sample_plan();
  bad.ranks = 0;
  EXPECT_THROW(check_plan(bad), std::invalid_argument);
}

TEST(Plan, RoundBytesLikeNcclTests) {
  EXPECT_EQ(byte_granularity(CollectiveOp::kAllReduce, 8), 4);
  EXPECT_EQ(byte_granularity(CollectiveOp::kBroadcast, 8), 4);
  EXPECT_EQ(byte_granularity(CollectiveOp::kSendRecv, 2), 4);
  EXPECT_EQ(byte_granularity(CollectiveOp::kReduceScatter, 3), 12);
  EXPECT_EQ(byte_granularity(CollectiveOp::kAllGather, 4), 16);
  EXPECT_EQ(byte_granularity(CollectiveOp::kAllToAll, 4), 16);
  EXPECT_EQ(round_bytes(CollectiveOp::kAllReduce, 8, 1023), 1020);        // floor(1023 / 4) x 4
  EXPECT_EQ(round_bytes(CollectiveOp::kReduceScatter, 3, 100), 96);       // floor(100 / 12) x 12
  EXPECT_EQ(round_bytes(CollectiveOp::kAllToAll, 4, 1000), 992);          // floor(1000 / 16) x 16
  EXPECT_EQ(round_bytes(CollectiveOp::kAllGather, 4, 1 << 20), 1 << 20);  // already whole
  EXPECT_EQ(round_bytes(CollectiveOp::kReduceScatter, 3, 5), 12);         // at least one granule
  EXPECT_EQ(round_bytes(CollectiveOp::kAllReduce, 2, 0), 4);
}

// Regression (found by these tests, fixed in validate/ and hw/; validate/plan.cc, field<T>:
// j.at(key).get<T>()): nlohmann::json converts a JSON number to the requested integer type without checking
// it: fractions are truncated (bytes 1048576.5 -> 1048576, group rank 1.9 -> 1, ranks 4.7 -> 4) and the plan
// is accepted; out-of-range numbers wrap or are undefined behaviour (bytes 1e30 -> reported as
// -9223372036854775808 bytes; rank 4294967296 -> rank 0, reported as "rank 0 is in two calls of one step").
// Expected: each refused with a message naming the field (cases[0].steps[0][0].bytes, ...group, plan.ranks)
// and "expected an integer".
TEST(Plan, NonIntegerAndOutOfRangeNumbersAreRefused) {
  const auto refused = [](const char* what, const std::string& text, const char* field) {
    const auto e = parse_error(text);
    EXPECT_NE(e.find(field), std::string::npos) << what << ": [" << e << "]";
  };
  json j = json::parse(plan_to_json(sample_plan()));
  j["cases"][0]["steps"][0][0]["bytes"] = 1048576.5;
  refused("fractional bytes", j.dump(), "cases[0].steps[0][0].bytes");
  j = json::parse(plan_to_json(sample_plan()));
  j["cases"][0]["steps"][0][0]["group"] = {0, 1.9, 2, 3};
  refused("fractional rank", j.dump(), "cases[0].steps[0][0].group");
  j = json::parse(plan_to_json(sample_plan()));
  j["ranks"] = 4.7;
  refused("fractional ranks", j.dump(), "plan.ranks");
  j = json::parse(plan_to_json(sample_plan()));
  j["cases"][0]["steps"][0][0]["bytes"] = 1e30;
  refused("huge bytes", j.dump(), "cases[0].steps[0][0].bytes");
  j = json::parse(plan_to_json(sample_plan()));
  j["cases"][0]["steps"][0][0]["group"] = {0, 1, 2, 4294967296LL};
  refused("rank beyond int", j.dump(), "cases[0].steps[0][0].group");
}

}  // namespace
}  // namespace strata::validate
