// TASO's split history, derived from the one declaration of each operator (OpDef::split_axis): a rule's
// split_0/split_1 splits at the most recent concatenation boundary along its axis (TASO SOSP'19 §3; TASO's
// generator keeps the same history per tensor). The rule evaluator (term_eval.cc, a tree per axis) and the
// generator's fingerprint metadata (fingerprint.cc, a compact tree per axis) keep different tree types and
// share this derivation; the optimizers' split point (ir_bridge.h: concat_boundary) reads the same traces.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "models/ir/op_def.h"

namespace strata::search::subst {

// The traces of the output axes [0, rank) of one operator application (empty traces where the operator
// declares none).
inline std::vector<models::SplitAxisTrace> split_axis_traces(const models::OpDef& def,
                                                             std::span<const models::TensorType> in,
                                                             const models::TensorType& out,
                                                             const models::Attrs& attrs, std::size_t rank) {
  std::vector<models::SplitAxisTrace> traces(rank);
  if (!def.split_axis) return traces;
  for (std::size_t d = 0; d < rank; ++d)
    traces[d] = def.split_axis(in, out, attrs, static_cast<std::int64_t>(d));
  return traces;
}

// The history of one output axis. `from(input, axis)` is an argument's history along an axis; `agree(a, b)`
// is their common history (empty when they differ); `join(first, boundary, second)` is the history of a
// concatenation whose first part is `boundary` long. Tree{} is "no boundary".
template <class Tree, class From, class Agree, class Join>
Tree axis_history(const models::SplitAxisTrace& trace, From&& from, Agree&& agree, Join&& join) {
  if (trace.boundary) {
    if (trace.carried.size() != 2) return Tree{};
    return join(from(trace.carried[0].first, trace.carried[0].second), *trace.boundary,
                from(trace.carried[1].first, trace.carried[1].second));
  }
  if (trace.carried.empty()) return Tree{};
  Tree t = from(trace.carried[0].first, trace.carried[0].second);
  for (std::size_t i = 1; i < trace.carried.size(); ++i)
    t = agree(t, from(trace.carried[i].first, trace.carried[i].second));
  return t;
}

}  // namespace strata::search::subst
