// Running the two substitution optimizers of search/subst (backtracking search and equality saturation) on
// one graph with the same rules and cost model, and checking their results against the input on the
// reference executor. Shared by `strata optimize --optimizer eqsat|both` and the `subst-optimizers`
// experiment kind.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "models/cost/cost_model.h"
#include "models/ir/graph.h"
#include "search/subst/eqsat.h"
#include "search/subst/optimizer.h"
#include "search/subst/output_check.h"

namespace strata::experiments {

// The optimizers' equality check (search/subst/output_check.h); {-1, -1}: not checked.
using OutputDifference = search::subst::OutputCheck;
OutputDifference output_difference(const models::Graph& a, const models::Graph& b, std::uint64_t seed);

// One optimizer's outcome in a common form, for side-by-side tables.
struct OptimizerOutcome {
  std::string optimizer;                   // "backtrack" or "eqsat"
  double cost_before = 0, cost_after = 0;  // seconds
  double seconds = 0;                      // optimizer wall time
  std::size_t nodes_before = 0, nodes_after = 0;
  std::string search;      // backtrack: graphs explored/generated; eqsat: e-graph size, iterations
  std::string stop;        // eqsat: stop reason; backtrack: "budget" or "queue empty"
  std::string extraction;  // eqsat: ilp/greedy (+ note)
  [[nodiscard]] double speedup() const { return cost_after > 0 ? cost_before / cost_after : 0.0; }
};
OptimizerOutcome outcome_of(const models::Graph& input, const search::subst::OptimizeResult& r,
                            const search::subst::OptimizerOptions& o);
OptimizerOutcome outcome_of(const models::Graph& input, const search::subst::EqsatResult& r);

}  // namespace strata::experiments
