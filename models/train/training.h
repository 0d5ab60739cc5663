// Training-step derivation: from a forward graph, the graph of one training step — the forward nodes, the
// backward nodes of every differentiable operator (reverse order; gradients of values used several times
// are summed), every parameter's gradient tensor marked with its parameter, and the optimizer update
// (through an f32 master copy for f16/bf16 parameters: mixed-precision training).
// The gradient of each forward output (dL/dy) enters as an input value named "<output>.grad", so any loss
// can be attached; the simulator schedules the whole step from this graph.
#pragma once

#include <string>
#include <vector>

#include "models/ir/graph.h"

namespace strata::models {

enum class Optimizer { kNone, kSgd, kAdam };

struct TrainOptions {
  Optimizer optimizer = Optimizer::kAdam;
  double lr = 1e-3;
  bool input_grads = false;  // also compute gradients of floating-point inputs (gradient checks)
  DType optimizer_state_dtype = DType::kF32;  // Adam moments (fp32, as in mixed-precision training)
};

struct TrainingGraph {
  Graph graph;
  std::vector<ValueId> params;        // trainable parameters
  std::vector<ValueId> param_grads;   // parallel to params (kNoValue: parameter does not affect the outputs)
  std::vector<ValueId> output_grads;  // the seeded dL/dy inputs, parallel to forward outputs
  std::vector<ValueId> inputs;        // with input_grads: the forward inputs ...
  std::vector<ValueId> input_grads;   // ... and their gradients (kNoValue where none)
  int num_forward_nodes = 0;          // nodes [0, n) are the forward pass
  int first_update_node = 0;          // nodes [first_update_node, end) are optimizer updates
  // Per node of `graph`: for a backward node, the forward node whose gradient rule emitted it (incl. the
  // accumulation of that rule's gradients into values used several times); -1 for forward nodes, optimizer
  // updates and the views that give parameter gradients their own names. Phase costs sum by it
  // (models/zoo/transformer_layer.h).
  std::vector<NodeId> backward_of;
};

// Throws GraphError when a node that needs a gradient has no gradient rule (naming the node and operator).
TrainingGraph derive_training_graph(const Graph& forward, const TrainOptions& options = {});

}  // namespace strata::models
