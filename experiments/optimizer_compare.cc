#include "experiments/optimizer_compare.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

#include "models/exec/executor.h"
#include "search/subst/rule.h"

namespace strata::experiments {
namespace {

namespace ss = search::subst;

}  // namespace

OutputDifference output_difference(const models::Graph& a, const models::Graph& b, std::uint64_t seed) {
  return ss::check_same_function(a, b, {.seed = seed});
}

OptimizerOutcome outcome_of(const models::Graph& input, const ss::OptimizeResult& r,
                            const ss::OptimizerOptions& o) {
  OptimizerOutcome out;
  out.optimizer = "backtrack";
  out.cost_before = r.cost_before;
  out.cost_after = r.cost_after;
  out.seconds = r.seconds;
  out.nodes_before = ss::remove_dead_nodes(input).nodes().size();
  out.nodes_after = r.graph.nodes().size();
  out.search = fmt::format("{} graphs explored, {} generated (alpha {}, budget {})", r.explored, r.generated,
                           o.alpha, o.budget);
  out.stop = r.explored >= o.budget ? "budget" : "queue empty";
  return out;
}

OptimizerOutcome outcome_of(const models::Graph& input, const ss::EqsatResult& r) {
  OptimizerOutcome out;
  out.optimizer = "eqsat";
  out.cost_before = r.cost_before;
  out.cost_after = r.cost_after;
  out.seconds = r.seconds;
  out.nodes_before = ss::remove_dead_nodes(input).nodes().size();
  out.nodes_after = r.graph.nodes().size();
  out.search =
      fmt::format("{} iterations, {} e-nodes, {} e-classes; saturation {:.2f} s, extraction {:.2f} s",
                  r.iterations.size(), r.nodes, r.classes, r.saturation_seconds, r.extraction_seconds);
  out.stop = std::string(ss::stop_reason_name(r.stop));
  out.extraction = std::string(ss::extraction_name(r.extraction));
  if (!r.extraction_note.empty()) out.extraction += " (" + r.extraction_note + ")";
  return out;
}

}  // namespace strata::experiments
