// The reference-executor comparison of experiments/optimizer_compare.h (used by `strata optimize --optimizer
// eqsat|both` and the subst-optimizers experiment).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "experiments/optimizer_compare.h"

namespace {

using namespace strata;

// out = x * c with a constant c of the given value.
models::Graph scaled(double c) {
  models::Graph g;
  const models::TensorType t{models::Shape{2, 3}, models::DType::kF32};
  const auto x = g.add_input("x", t);
  const auto k = g.add_constant("c", t, std::vector<double>(6, c));
  g.mark_output(g.add("ewmul", {x, k}));
  return g;
}

TEST(OptimizerCompare, EqualGraphsCompareEqual) {
  const auto d = experiments::output_difference(scaled(1.0), scaled(1.0), 1);
  EXPECT_EQ(d.max_abs, 0.0);
  EXPECT_TRUE(d.pass());
  EXPECT_FALSE(experiments::output_difference(scaled(1.0), scaled(1.5), 1).pass());
}

// Issue 10 defect 7: a rewritten graph that outputs NaN was accepted (std::max(d, NaN) keeps d).
TEST(OptimizerCompare, NanOutputIsNeverEqual) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const auto d = experiments::output_difference(scaled(1.0), scaled(nan), 1);
  EXPECT_FALSE(d.pass());
  EXPECT_TRUE(std::isinf(d.max_abs));
  EXPECT_FALSE(experiments::output_difference(scaled(nan), scaled(1.0), 1).pass());
}

}  // namespace
