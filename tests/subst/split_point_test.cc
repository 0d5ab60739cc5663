// TASO's split point (search/subst/ir_bridge.h: concat_boundary), declared once from the operators'
// split_axis traits. The backtracking optimizer and equality saturation each had their own copy and disagreed
// on a matmul with a transposed operand: the optimizer traced output axis 1 to the weight's axis 1 whatever
// trans_b said (a wrong split point), eqsat did not trace through it at all.
#include <optional>
#include <vector>

#include <gtest/gtest.h>

#include "models/ir/graph.h"
#include "search/subst/ir_bridge.h"

namespace strata::search::subst {
namespace {

using models::Graph;
using models::TensorType;
using models::ValueId;

std::optional<std::int64_t> boundary(const Graph& g, ValueId v, std::int64_t axis) {
  return concat_boundary(g, v, axis, 8);
}

models::Attrs axis(std::int64_t a) {
  return {{"axis", a}};
}

TEST(SplitPoint, MatmulCarriesRowsFromItsFirstAndColumnsFromItsSecondOperand) {
  Graph g;
  const auto x = g.add_input("x", TensorType{{2, 4}});
  // w = [a | b] along columns: a boundary after column 1.
  const auto w = g.add("concat", {g.add_param("a", TensorType{{4, 1}}), g.add_param("b", TensorType{{4, 2}})},
                       axis(1), "w");
  const auto y = g.add("matmul", {x, w}, {}, "y");  // [2, 3]: columns of w
  EXPECT_EQ(boundary(g, w, 1), 1);
  EXPECT_EQ(boundary(g, y, 1), 1);
  EXPECT_EQ(boundary(g, y, 0), std::nullopt);  // rows of x: no concatenation
  const auto r = g.add("relu", {y}, {}, "r");
  EXPECT_EQ(boundary(g, r, 1), 1);
}

TEST(SplitPoint, TransposedOperandIsReadAlongItsOtherAxis) {
  Graph g;
  const auto x = g.add_input("x", TensorType{{2, 3}});
  // w [4, 3] = [a | b] along columns; y = x @ w^T [2, 4]: y's columns are w's rows, which have no boundary.
  const auto w = g.add("concat", {g.add_param("a", TensorType{{4, 1}}), g.add_param("b", TensorType{{4, 2}})},
                       axis(1), "w");
  const auto y = g.add("matmul", {x, w}, {{"trans_b", std::int64_t{1}}}, "y");
  EXPECT_EQ(boundary(g, y, 1), std::nullopt);  // the optimizer's copy said 1
  // v [4, 3] = [c; d] along rows (1 + 3): z = x @ v^T [2, 4] has its boundary after column 1.
  const auto v = g.add("concat", {g.add_param("c", TensorType{{1, 3}}), g.add_param("d", TensorType{{3, 3}})},
                       axis(0), "v");
  const auto z = g.add("matmul", {x, v}, {{"trans_b", std::int64_t{1}}}, "z");
  EXPECT_EQ(boundary(g, z, 1), 1);  // both copies said none
}

TEST(SplitPoint, ConvolutionCarriesBatchAndOutputChannels) {
  Graph g;
  const auto x = g.add(
      "concat", {g.add_input("x0", TensorType{{1, 4, 5, 5}}), g.add_input("x1", TensorType{{2, 4, 5, 5}})},
      axis(0), "x");
  const auto w = g.add(
      "concat", {g.add_param("w0", TensorType{{3, 4, 3, 3}}), g.add_param("w1", TensorType{{5, 4, 3, 3}})},
      axis(0), "w");
  const auto y = g.add("conv2d", {x, w},
                       {{"strides", models::Ints{1, 1}},
                        {"pads", models::Ints{1, 1, 1, 1}},
                        {"dilations", models::Ints{1, 1}},
                        {"groups", std::int64_t{1}}},
                       "y");
  EXPECT_EQ(boundary(g, y, 0), 1);  // batch: x0 has 1 image
  EXPECT_EQ(boundary(g, y, 1), 3);  // output channels: w0 has 3 kernels
  EXPECT_EQ(boundary(g, y, 2), std::nullopt);
}

}  // namespace
}  // namespace strata::search::subst
