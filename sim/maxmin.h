// Max-min fair sharing (progressive filling), the solver behind the flow-level network model.
//
// Each variable (a flow) uses a set of constraints (link directions), each with a capacity. The solution
// gives every variable a rate such that no constraint is over capacity and no rate can grow without
// shrinking a rate that is already no larger: repeatedly find the constraint whose remaining capacity,
// split evenly over its still-unfixed variables, is smallest; fix those variables at that share; subtract.
//
// Worked example: links A (cap 10) and B (cap 4); flow x uses A, flow y uses A and B. B's share is 4 (one
// flow), A's is 5 (two flows): B is the bottleneck, y = 4; then A has 6 left for x alone, x = 6.
// With weights, a constraint's share is its remaining capacity over the summed weights of its unfixed users.
// The solver knows nothing of networks; it is unit-tested on hand-solvable systems.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace strata::sim {

class MaxMinSolver {
 public:
  // Solves a system: capacities[c] > 0; var_constraints[v] lists constraint indices of variable v (a
  // constraint may appear once per variable). Variables with no constraint get rate `unbounded_rate`.
  // Results are written to `rates` (resized). Deterministic: ties resolve by lowest constraint index.
  void solve(std::span<const double> capacities, std::span<const std::vector<std::int32_t>> var_constraints,
             std::vector<double>& rates, double unbounded_rate = 0.0);

  // Low-level form used by the network model: variables in CSR layout (offsets has nvars+1 entries).
  // `weights` is empty (every use counts once) or parallel to `constraints`: a variable with weight w on a
  // constraint consumes w x its rate there. A flow bundle (the n hops of a ring advancing in lock-step) is
  // one variable whose weight on a link is the number of its hops that cross it.
  void solve_csr(std::span<const double> capacities, std::span<const std::int32_t> offsets,
                 std::span<const std::int32_t> constraints, std::vector<double>& rates, double unbounded_rate,
                 std::span<const double> weights = {});

 private:
  // Scratch buffers reused across calls.
  std::vector<double> remaining_;
  std::vector<std::int32_t> active_count_;
  std::vector<double> active_weight_;
  std::vector<std::vector<std::int32_t>> users_;
  std::vector<char> fixed_;
  std::vector<std::int32_t> flat_offsets_, flat_constraints_;
};

}  // namespace strata::sim
