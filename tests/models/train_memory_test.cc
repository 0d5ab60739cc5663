// Training memory per parameter, derived by hand (ZeRO, Rajbhandari et al. SC'20, §3.1: mixed-precision
// Adam keeps 2 B f16 weights + 2 B f16 gradients + 12 B optimizer state = 4 B f32 master weights + 4 B
// momentum + 4 B variance, i.e. 16 B per parameter). Issue 10, defect 8: the master weights were missing
// (12 B).
#include <gtest/gtest.h>

#include "models/simulate/memory.h"
#include "models/train/training.h"

namespace strata::models {
namespace {

struct Bytes {
  double params = 0, optimizer_state = 0, gradients = 0;
  double total() const { return params + optimizer_state + gradients; }
};

// One linear layer y = x W with W of N = 64 x 128 parameters, trained with `opt` at element type `dt`.
Bytes per_parameter(DType dt, Optimizer opt) {
  Graph g("linear");
  const auto x = g.add_input("x", {{4, 64}, dt});
  const auto w = g.add_param("w", {{64, 128}, dt});
  g.mark_output(g.add("matmul", {x, w}));
  const auto tg = derive_training_graph(g, {.optimizer = opt});
  const auto m = memory_profile(tg.graph);
  const double n = 64 * 128;
  Bytes b{m.params / n, m.optimizer_state / n, 0};
  for (auto d : tg.param_grads) b.gradients += tg.graph.type(d).bytes() / n;
  // Every byte of model state is live while the update runs.
  EXPECT_GE(m.peak(), (m.params + m.optimizer_state + b.gradients * n));
  return b;
}

TEST(TrainingMemory, AdamMixedPrecisionIs16BytesPerParameter) {
  for (DType dt : {DType::kF16, DType::kBF16}) {
    const auto b = per_parameter(dt, Optimizer::kAdam);
    EXPECT_EQ(b.params, 2);
    EXPECT_EQ(b.optimizer_state, 4 + 4 + 4);  // master weights, momentum, variance
    EXPECT_EQ(b.gradients, 2);
    EXPECT_EQ(b.total(), 16);
  }
}

TEST(TrainingMemory, AdamF32HasNoMasterCopy) {
  const auto b = per_parameter(DType::kF32, Optimizer::kAdam);
  EXPECT_EQ(b.params, 4);
  EXPECT_EQ(b.optimizer_state, 8);
  EXPECT_EQ(b.gradients, 4);
  EXPECT_EQ(b.total(), 16);
}

TEST(TrainingMemory, SgdKeepsOnlyTheMasterCopyInMixedPrecision) {
  const auto mixed = per_parameter(DType::kF16, Optimizer::kSgd);
  EXPECT_EQ(mixed.params, 2);
  EXPECT_EQ(mixed.optimizer_state, 4);
  EXPECT_EQ(mixed.gradients, 2);
  const auto f32 = per_parameter(DType::kF32, Optimizer::kSgd);
  EXPECT_EQ(f32.params, 4);
  EXPECT_EQ(f32.optimizer_state, 0);
  EXPECT_EQ(f32.gradients, 4);
}

}  // namespace
}  // namespace strata::models
