// What an operator's gradient rule (OpDef::grad) sees: the forward node, the gradients flowing into its
// outputs, and helpers to emit backward nodes. Rules set one gradient per input that needs it; broadcasting
// is undone by set_dx (summing over broadcast axes), and gradients of multiply-used values are summed by
// the derivation, so rules stay local.
#pragma once

#include <string_view>
#include <vector>

#include "models/ir/graph.h"

namespace strata::models {

struct GradContext {
  Graph& g;
  Node fwd;                 // a copy: emitting nodes may reallocate the graph's node list
  std::vector<ValueId> dy;  // per forward output; kNoValue where no gradient flows
  std::vector<bool> needs;  // per forward input: whether its gradient is wanted
  std::vector<ValueId> dx;  // per forward input, set by the rule

  ValueId x(int i) const { return fwd.inputs[static_cast<std::size_t>(i)]; }
  ValueId y(int i) const { return fwd.outputs[static_cast<std::size_t>(i)]; }
  ValueId dout(int i = 0) const { return dy[static_cast<std::size_t>(i)]; }
  bool need(int i) const { return needs[static_cast<std::size_t>(i)]; }
  // By value: emitting nodes may reallocate the graph's value list.
  TensorType type(ValueId v) const { return g.type(v); }
  Shape shape(ValueId v) const { return g.type(v).shape; }

  // Adds a backward node named after the forward node.
  std::vector<ValueId> emit_multi(std::string_view op, std::vector<ValueId> inputs, Attrs attrs = {});
  ValueId emit(std::string_view op, std::vector<ValueId> inputs, Attrs attrs = {});
  // A 0-D literal constant (dtype of the forward node's first output).
  ValueId scalar(double v);
  // Sums `v` over the axes along which it was broadcast to reach its shape from `target`.
  ValueId sum_to(ValueId v, Shape target);
  // Records the gradient of input i (reduced to the input's shape).
  void set_dx(int i, ValueId grad);
};

}  // namespace strata::models
