// Kernel times of one part of a split operator, forward and backward, from the cost model on the part's own
// shapes: the node is rebuilt in a scratch graph on its input blocks (same operator and attributes), and its
// backward pass is that scratch graph's training derivation (models/train/training.h: the operator's own
// gradient rule), so a part's backward kernels are costed on the part's shapes too. Computed once per
// (node, degrees) for the whole plan space.
#pragma once

#include <vector>

#include "models/cost/cost_model.h"
#include "search/parallel/op_plan.h"

namespace strata::search::parallel {

struct PartCost {
  double forward = 0;   // seconds
  double backward = 0;  // seconds: input and weight gradients
  // The operator's shape rule rejected the part's input blocks (e.g. a window larger than a row block):
  // the whole node's times divided by the number of parts are used instead.
  bool scaled = false;
};

class ShardCosts {
 public:
  ShardCosts(const PlanSpace& space, const models::CostModel& cost);
  // Cost of one part of node i under its configuration `choice`.
  const PartCost& get(int i, int choice) const {
    return costs_[static_cast<std::size_t>(i)][static_cast<std::size_t>(
        index_[static_cast<std::size_t>(i)][static_cast<std::size_t>(choice)])];
  }
  int scaled_count() const { return scaled_; }

 private:
  std::vector<std::vector<PartCost>> costs_;  // per node, per distinct degree vector
  std::vector<std::vector<int>> index_;       // per node, per config: index into costs_
  int scaled_ = 0;
};

}  // namespace strata::search::parallel
