// Weight-only work and its one cost semantics. A node all of whose inputs are parameters, constants or other
// weight-only values (a concatenation of two weight matrices, an enlarged kernel, a folded batch norm scale)
// computes the same tensor at every step. The optimizers cost it nothing (graph_cost: folded once before
// inference, as TASO does); the graph they write must then hold it folded as well, or `strata model sim`
// runs it every step and prices a different graph than `optimize` predicted (issue 10 defect 6).
#pragma once

#include <vector>

#include "models/ir/graph.h"

namespace strata::search::subst {

// By value id: 1 for parameters, constants and values computed from them alone.
std::vector<char> weight_only_values(const models::Graph& g);

// g with its weight-only nodes replaced by source values: each weight-only value that a per-step node (or a
// graph output) reads becomes a parameter of the same name and type (a constant when only constants feed
// it), carrying its data when every source it is computed from has data (computed on the reference
// executor) and none otherwise, like the other parameters of a model without weights. Parameters and
// constants read only by folded nodes are dropped; inputs are kept. Per-step nodes keep their names and
// order, so every cost model prices the result as graph_cost prices g.
models::Graph fold_weight_only(const models::Graph& g);

}  // namespace strata::search::subst
