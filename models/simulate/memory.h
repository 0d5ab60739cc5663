// Peak memory of executing a graph in node order: parameters, constants, inputs and optimizer state live
// for the whole step; every other buffer from the node that produces it to its last consumer (graph
// outputs to the end). Views (reshape, layout-only transpose) and optimizer updates (in place) alias their
// input's buffer instead of allocating.
#pragma once

#include <vector>

#include "models/ir/graph.h"

namespace strata::models {

struct MemoryProfile {
  double params = 0, optimizer_state = 0, inputs = 0, constants = 0;  // persistent bytes
  double peak_transient = 0;  // activations + gradients + temporaries at the peak
  int peak_node = -1;         // node during which the peak occurs
  double peak() const { return params + optimizer_state + inputs + constants + peak_transient; }
  std::vector<double> live_after_node;  // transient bytes live while each node runs
};

MemoryProfile memory_profile(const Graph& g);

}  // namespace strata::models
