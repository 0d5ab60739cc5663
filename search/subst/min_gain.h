// The smallest predicted saving the graph optimizers act on (docs/subst.md, "Minimum predicted gain").
//
// The cost model prices every node on its own. What happens between kernels is not priced: a merged
// output's cache footprint, a layout change between producer and consumer, one pass's memory traffic against
// a node timed alone. Whole-graph timings of one graph also repeat only to about 1% on an idle machine
// (docs/replay.md §4, the noise column). A rewrite predicted to save a few hundredths of a percent of a
// graph's time is therefore one that neither the model nor a measurement can tell from a loss, yet it costs
// the user a changed graph. Both optimizers (optimize, eqsat_optimize) return their input unchanged unless
// the best graph they found is predicted to save at least `min_gain` of the input's predicted time.
//
// The default is a policy, not a fitted constant: half of that 1% timing resolution. 0 takes any strictly
// cheaper graph (TASO's behaviour).
#pragma once

#include <optional>
#include <string>

namespace strata::search::subst {

inline constexpr double kDefaultMinGain = 0.005;  // a fraction of the input graph's predicted time

// Whether a graph predicted at `after` seconds is returned instead of an input predicted at `before`: it is
// strictly cheaper and saves at least min_gain * before.
constexpr bool worth_rewriting(double before, double after, double min_gain) {
  return after < before && before - after >= min_gain * before;
}

// One line for reports when an optimizer declined its best graph ("best graph found 108.2 ms, 0.04% faster:
// below the minimum gain of 0.5%, the input graph is returned"); empty when `declined_cost` is unset.
std::string declined_note(double cost_before, std::optional<double> declined_cost, double min_gain);

}  // namespace strata::search::subst
