#include "search/parallel/strategy.h"

#include <gtest/gtest.h>

namespace strata::search::parallel {
namespace {

TEST(LlmStrategy, MicroBatchesAndGpusFollowTheDegrees) {
  LlmStrategy s;
  s.tp = 8, s.pp = 8, s.dp = 16, s.micro_batch = 1, s.global_batch = 1536;
  EXPECT_EQ(s.gpus(), 1024);
  EXPECT_EQ(s.micro_batches(), 96);  // 1536 / (16 x 1)
}

TEST(LlmStrategy, NamesRoundTrip) {
  for (auto s : {PipelineSchedule::kGpipe, PipelineSchedule::kOneFOneB, PipelineSchedule::kInterleaved})
    EXPECT_EQ(parse_schedule(schedule_name(s)), s);
  for (auto r : {Recompute::kNone, Recompute::kSelective, Recompute::kFull})
    EXPECT_EQ(parse_recompute(recompute_name(r)), r);
  EXPECT_FALSE(parse_schedule("2f2b"));
  EXPECT_FALSE(parse_recompute("partial"));
}

}  // namespace
}  // namespace strata::search::parallel
