#include "search/subst/min_gain.h"

#include <fmt/format.h>

namespace strata::search::subst {

std::string declined_note(double cost_before, std::optional<double> declined_cost, double min_gain) {
  if (!declined_cost) return "";
  const double saving = cost_before > 0 ? 1 - *declined_cost / cost_before : 0;
  return fmt::format(
      "best graph found {:.4f} ms, {:.3f}% faster: below the minimum gain of {:g}% (--min-gain), "
      "the input graph is returned",
      *declined_cost * 1e3, 100 * saving, 100 * min_gain);
}

}  // namespace strata::search::subst
