// The statistics `strata validate` reports (validate/stats.h), on hand-made rankings whose answers are worked
// out in the comments: Spearman's rho from its textbook forms, top-k hits and regret by reading the rankings.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "validate/plan.h"
#include "validate/stats.h"

namespace strata::validate {
namespace {

using V = std::vector<double>;

TEST(Stats, RoundExtremesKeepTheSmallestAndTheSpread) {
  RoundExtremes none;
  EXPECT_DOUBLE_EQ(none.spread(), 0);  // no rounds: no spread
  RoundExtremes r;
  for (double s : {5e-3, 3e-3, 4e-3}) r.add(s);
  EXPECT_DOUBLE_EQ(r.smallest, 3e-3);
  EXPECT_DOUBLE_EQ(r.slowest, 5e-3);
  EXPECT_NEAR(r.spread(), 5.0 / 3 - 1, 1e-12);
}

TEST(Stats, MedianIsTheMiddleValueOrTheMeanOfTheTwoMiddleOnes) {
  EXPECT_EQ(median({5, 1, 3}), 3);        // sorted 1 3 5
  EXPECT_EQ(median({4, 1, 3, 10}), 3.5);  // sorted 1 3 4 10: (3 + 4) / 2
  EXPECT_EQ(median({7}), 7);
  EXPECT_EQ(median({}), 0);
}

TEST(Stats, AverageRanksShareTheMeanOfTiedPositions) {
  // 30 is 4th; the two 20s take positions 2 and 3, rank 2.5 each; 10 is 1st.
  EXPECT_EQ(average_ranks(V{30, 20, 10, 20}), (V{4, 2.5, 1, 2.5}));
  EXPECT_EQ(average_ranks(V{5, 5, 5}), (V{2, 2, 2}));  // positions 1..3, mean 2
  EXPECT_EQ(average_ranks(V{7}), (V{1}));
  EXPECT_TRUE(average_ranks(V{}).empty());
}

TEST(Stats, SpearmanIsOneForAgreeingAndMinusOneForReversedOrders) {
  const V predicted{1, 2, 3, 4, 5};
  EXPECT_DOUBLE_EQ(spearman(predicted, V{10, 20, 30, 40, 50}), 1.0);
  // Only the order counts: any increasing transform of the measured times keeps rho = 1.
  EXPECT_DOUBLE_EQ(spearman(predicted, V{1, 4, 9, 16, 1000}), 1.0);
  EXPECT_DOUBLE_EQ(spearman(predicted, V{50, 40, 30, 20, 10}), -1.0);
}

TEST(Stats, SpearmanWithoutTiesMatchesTheTextbookFormula) {
  // Measured ranks 2 1 4 3 5 against predicted 1 2 3 4 5: d = -1 1 -1 1 0, sum d^2 = 4;
  // rho = 1 - 6 sum d^2 / (n (n^2 - 1)) = 1 - 24 / 120 = 0.8.
  EXPECT_NEAR(spearman(V{1, 2, 3, 4, 5}, V{0.2, 0.1, 0.4, 0.3, 0.5}), 0.8, 1e-12);
}

TEST(Stats, SpearmanWithTiesIsPearsonOfAverageRanks) {
  // predicted 1 2 2 3 4  -> ranks x = 1 2.5 2.5 4 5
  // measured  2 1 3 4 4  -> ranks y = 2 1 3 4.5 4.5
  // Both mean 3. Deviations x' = -2 -.5 -.5 1 2, y' = -1 -2 0 1.5 1.5:
  // sum x'y' = 2 + 1 + 0 + 1.5 + 3 = 7.5, sum x'^2 = 9.5, sum y'^2 = 9.5, rho = 7.5 / 9.5 = 15/19.
  // The tie-corrected textbook form agrees: d = x - y = -1 1.5 -.5 -.5 .5, sum d^2 = 4,
  // rho = (sum x'^2 + sum y'^2 - sum d^2) / (2 sqrt(sum x'^2 sum y'^2)) = (19 - 4) / 19.
  EXPECT_NEAR(spearman(V{1, 2, 2, 3, 4}, V{2, 1, 3, 4, 4}), 15.0 / 19.0, 1e-12);
  // Symmetric in its arguments.
  EXPECT_NEAR(spearman(V{2, 1, 3, 4, 4}, V{1, 2, 2, 3, 4}), 15.0 / 19.0, 1e-12);
}

TEST(Stats, SpearmanIsNanWithoutSpread) {
  EXPECT_TRUE(std::isnan(spearman(V{}, V{})));
  EXPECT_TRUE(std::isnan(spearman(V{1}, V{2})));              // one candidate
  EXPECT_TRUE(std::isnan(spearman(V{3, 3, 3}, V{1, 2, 3})));  // the prediction cannot tell them apart
  EXPECT_TRUE(std::isnan(spearman(V{1, 2, 3}, V{7, 7, 7})));  // nor can the measurement
  EXPECT_THROW(spearman(V{1, 2}, V{1, 2, 3}), std::invalid_argument);
}

// Twelve candidates with distinct predictions 0..11 (candidate i is predicted i-th fastest, rank i+1); the
// measured-fastest one is the candidate predicted at `rank` (1-based); all others are measured slower.
V measured_best_at(int rank) {
  V m(12, 10.0);
  for (int i = 0; i < 12; ++i) m[static_cast<std::size_t>(i)] = 10.0 + i;  // otherwise in predicted order
  m[static_cast<std::size_t>(rank - 1)] = 1.0;
  return m;
}

TEST(Stats, TopKHitsWhenTheMeasuredBestIsAmongThePredictedFirstK) {
  V predicted(12);
  for (int i = 0; i < 12; ++i) predicted[static_cast<std::size_t>(11 - i)] = 100.0 - i;  // ascending
  for (int rank = 1; rank <= 12; ++rank) {
    const V measured = measured_best_at(rank);
    for (int k : {1, 5, 10})
      EXPECT_EQ(top_k_hit(predicted, measured, k), rank <= k) << "rank " << rank << " k " << k;
  }
  // k beyond the candidate count: the whole list is the top k.
  EXPECT_TRUE(top_k_hit(predicted, measured_best_at(12), 20));
}

TEST(Stats, TopKCountsEveryCandidateTiedWithTheKthPrediction) {
  // Predicted: two tied for first (indices 0 and 1). Measured best: index 1, which a stable order would put
  // second; the simulator cannot tell the two apart, so both are its top 1.
  EXPECT_TRUE(top_k_hit(V{1, 1, 2, 3}, V{5, 4, 6, 7}, 1));
  // Predicted 1 2 3 4 5 5 5 6: the 5th smallest is 5, shared by indices 4, 5, 6; the measured best is
  // index 6.
  const V predicted{1, 2, 3, 4, 5, 5, 5, 6};
  const V measured{9, 9, 9, 9, 9, 9, 1, 9};
  EXPECT_TRUE(top_k_hit(predicted, measured, 5));
  EXPECT_FALSE(top_k_hit(predicted, measured, 4));  // 4th smallest is 4: indices 0..3 only
  // Tied for measured best: one of them (index 0) predicted first.
  EXPECT_TRUE(top_k_hit(V{1, 2, 3}, V{2, 5, 2}, 1));
}

TEST(Stats, TopKToleranceCountsNearBestMeasurementsAsBest) {
  // The predicted-first candidate (index 0) measures 1.04, the measured best (index 3, predicted 4th) 1.00:
  // within 5% it counts as a hit, within 3% it does not.
  const V predicted{1, 2, 3, 4};
  const V measured{1.04, 1.2, 1.3, 1.00};
  EXPECT_TRUE(top_k_hit(predicted, measured, 1, 0.05));
  EXPECT_FALSE(top_k_hit(predicted, measured, 1, 0.03));
  EXPECT_FALSE(top_k_hit(predicted, measured, 1));
  EXPECT_TRUE(top_k_hit(predicted, measured, 4));
  EXPECT_THROW(top_k_hit(V{1, 2}, V{1}, 1), std::invalid_argument);
}

TEST(Stats, RegretIsThePickedMeasuredTimeOverTheMeasuredBest) {
  // Predicted fastest: index 1, measured 12; measured best 8: regret 12/8 = 1.5.
  EXPECT_DOUBLE_EQ(regret(V{3, 1, 2}, V{10, 12, 8}), 1.5);
  // Perfect pick.
  EXPECT_DOUBLE_EQ(regret(V{1, 2, 3}, V{4, 5, 6}), 1.0);
  // Indices 0 and 1 tied for predicted fastest, measured 10 and 15: the worse (15) is charged; best 5 -> 3.
  // Tied for predicted-fastest (10 and 15 measured): the mean 12.5 against the best 5.
  EXPECT_DOUBLE_EQ(regret(V{1, 1, 2}, V{10, 15, 5}), 2.5);
  EXPECT_DOUBLE_EQ(regret(V{1, 1, 2}, V{15, 10, 5}), 2.5);  // whichever order the tie comes in
  EXPECT_THROW(regret(V{1, 2}, V{1}), std::invalid_argument);
}

TEST(Stats, ErrorSummaryOfRelativeErrors) {
  // Errors p/m - 1: 0.1, -0.2, 0, 0.5. Mean 0.4/4 = 0.1; |e| 0.1 0.2 0 0.5: mean 0.2, max 0.5, median of
  // 0 0.1 0.2 0.5 = 0.15.
  const auto even = error_summary(V{1.1, 0.8, 1.0, 1.5}, V{1, 1, 1, 1});
  EXPECT_NEAR(even.mean, 0.1, 1e-12);
  EXPECT_NEAR(even.mean_abs, 0.2, 1e-12);
  EXPECT_NEAR(even.max_abs, 0.5, 1e-12);
  EXPECT_NEAR(even.median_abs, 0.15, 1e-12);
  // Errors 2/1 - 1 = 1, 3/4 - 1 = -0.25, 4/4 - 1 = 0: mean 0.25, mean |e| 1.25/3, max 1, median 0.25.
  const auto odd = error_summary(V{2, 3, 4}, V{1, 4, 4});
  EXPECT_NEAR(odd.mean, 0.25, 1e-12);
  EXPECT_NEAR(odd.mean_abs, 1.25 / 3, 1e-12);
  EXPECT_NEAR(odd.max_abs, 1.0, 1e-12);
  EXPECT_NEAR(odd.median_abs, 0.25, 1e-12);
  EXPECT_THROW(error_summary(V{1}, V{1, 2}), std::invalid_argument);
}

TEST(Stats, SpreadOfTimings) {
  // Sorted 1 2 3 10: median (2 + 3) / 2 = 2.5, relative spread (10 - 1) / 2.5 = 3.6.
  const auto s = spread_of(V{3, 10, 1, 2});
  EXPECT_DOUBLE_EQ(s.median, 2.5);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 10);
  EXPECT_DOUBLE_EQ(s.relative_spread(), 3.6);
  EXPECT_DOUBLE_EQ(spread_of(V{4, 1, 9}).median, 4);
}

}  // namespace
}  // namespace strata::validate
