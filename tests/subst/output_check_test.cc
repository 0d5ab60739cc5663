// The optimizers' equality check (search/subst/output_check.h): hand-computed relative errors, and a rewrite
// whose output is NaN is rejected (issue 10 defect 7: std::max(d, NaN) returned d, so the CLI accepted it).
#include "search/subst/output_check.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "models/ir/graph.h"

namespace strata::search::subst {
namespace {

using models::Graph;
using models::TensorType;

TEST(OutputCheck, RelativeErrorIsScaledByTheLargestExpectedMagnitude) {
  const std::vector<std::vector<double>> expected{{1.0, -4.0}, {2.0}};
  const std::vector<std::vector<double>> close{{1.0, -4.0 + 2e-6}, {2.0}};
  // max |expected| = 4, max |diff| = 2e-6: relative error 5e-7.
  const auto c = compare_outputs(expected, close, 1e-6);
  EXPECT_TRUE(c.pass()) << c.verdict();
  EXPECT_NEAR(c.max_rel_error, 5e-7, 1e-15);
  EXPECT_DOUBLE_EQ(c.max_output, 4.0);
  EXPECT_EQ(c.verdict().rfind("pass", 0), 0u) << c.verdict();
  const std::vector<std::vector<double>> far{{1.0, -4.0}, {2.0 + 8e-6}};  // 8e-6 / 4 = 2e-6 > 1e-6
  const auto f = compare_outputs(expected, far, 1e-6);
  EXPECT_FALSE(f.pass());
  EXPECT_NEAR(f.max_rel_error, 2e-6, 1e-15);
  // Below magnitude 1 the error is absolute: 0.5e-6 off on outputs of size 1e-3.
  const auto small = compare_outputs(std::vector<std::vector<double>>{{1e-3}},
                                     std::vector<std::vector<double>>{{1e-3 + 0.5e-6}}, 1e-6);
  EXPECT_TRUE(small.pass());
  EXPECT_NEAR(small.max_rel_error, 0.5e-6, 1e-15);
}

TEST(OutputCheck, NonFiniteOutputsAndShapeChangesFail) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<std::vector<double>> expected{{1.0, 2.0}};
  const auto n = compare_outputs(expected, std::vector<std::vector<double>>{{1.0, nan}}, 1e-6);
  EXPECT_FALSE(n.pass());
  EXPECT_NE(n.failure.find("element 1 is nan"), std::string::npos) << n.failure;
  EXPECT_EQ(n.verdict().rfind("FAIL", 0), 0u) << n.verdict();
  const auto inf = compare_outputs(expected, std::vector<std::vector<double>>{{1.0, HUGE_VAL}}, 1e-6);
  EXPECT_FALSE(inf.pass());
  // A NaN in the reference cannot be checked against: fail closed.
  EXPECT_FALSE(
      compare_outputs(std::vector<std::vector<double>>{{nan}}, std::vector<std::vector<double>>{{nan}}, 1e-6)
          .pass());
  EXPECT_FALSE(compare_outputs(expected, std::vector<std::vector<double>>{{1.0}}, 1e-6).pass());
  EXPECT_FALSE(compare_outputs(expected, std::vector<std::vector<double>>{}, 1e-6).pass());
}

// y = relu(x) + b against a "rewrite" adding a constant NaN: the old check took std::max(diff, NaN) == diff
// and accepted it.
TEST(OutputCheck, RewriteThatOutputsNaNIsRejected) {
  auto build = [](bool poison) {
    Graph g("nan_check");
    const auto x = g.add_input("x", TensorType{{4, 8}});
    const auto b = g.add_param("b", TensorType{{4, 8}});
    auto y = g.add("ewadd", {g.add("relu", {x}), b}, {}, "y");
    if (poison) {
      std::vector<double> data(32, 0.0);
      data[5] = std::numeric_limits<double>::quiet_NaN();
      y = g.add("ewadd", {y, g.add_constant("zero_or_nan", TensorType{{4, 8}}, data)}, {}, "y2");
    }
    g.mark_output(y);
    return g;
  };
  const Graph a = build(false), b = build(true);
  EXPECT_TRUE(check_same_function(a, a).pass());
  const auto c = check_same_function(a, b, {.seed = 3});
  EXPECT_FALSE(c.pass()) << c.verdict();
  EXPECT_NE(c.failure.find("output 0 element 5"), std::string::npos) << c.failure;
}

// The check runs each graph holding only its live values (models/exec/executor.h): with twelve 96 x 96
// weights (884,736 bytes in double), the peak is the largest live set of either schedule, derived by hand.
TEST(OutputCheck, HoldsTheLargestLiveSetNotEveryWeight) {
  constexpr std::int64_t n = 96;
  constexpr int layers = 12;
  // reassociate: the last two weights are multiplied first, h10 (W11 W12), after the chain to h10.
  auto build = [&](bool reassociate) {
    Graph g("chain");
    auto h = g.add_input("x", TensorType{{1, n}});
    std::vector<models::ValueId> w;
    for (int i = 1; i <= layers; ++i) w.push_back(g.add_param("w" + std::to_string(i), TensorType{{n, n}}));
    const int direct = reassociate ? layers - 2 : layers;
    for (int i = 0; i < direct; ++i) h = g.add("matmul", {h, w[static_cast<std::size_t>(i)]});
    if (reassociate) h = g.add("matmul", {h, g.add("matmul", {w[layers - 2], w[layers - 1]})});
    g.mark_output(h);
    return g;
  };
  const Graph chain = build(false), reassociated = build(true);
  const auto same = check_same_function(chain, chain);
  EXPECT_TRUE(same.pass()) << same.verdict();
  // Each chain node holds h_{i-1}, W_i and h_i.
  EXPECT_EQ(same.peak_live_bytes, 8 * (n * n + 2 * n));
  EXPECT_NE(same.verdict().find("executor peak 0.1 MiB"), std::string::npos) << same.verdict();
  const auto c = check_same_function(chain, reassociated);
  EXPECT_TRUE(c.pass()) << c.verdict();
  // W11 W12 runs while h10 is live: h10, W11, W12 and their product.
  EXPECT_EQ(c.peak_live_bytes, 8 * (3 * n * n + n));
  EXPECT_LT(c.peak_live_bytes, 8 * layers * n * n / 3);
}

}  // namespace
}  // namespace strata::search::subst
