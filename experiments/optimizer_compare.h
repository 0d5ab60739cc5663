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

namespace strata::experiments {

struct OutputDifference {
  double max_abs = 0;     // largest |a - b| over all outputs
  double max_output = 0;  // largest |a|, the scale of the comparison
  [[nodiscard]] bool equal() const { return max_abs <= 1e-6 * std::max(1.0, max_output); }
};
// Both graphs on the reference executor (double precision) with the same random inputs (by value name, seed);
// outputs compared in order. Throws std::runtime_error when an output changed size.
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
