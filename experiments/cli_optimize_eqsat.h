// `strata optimize --optimizer eqsat|both`: the equality-saturation optimizer (search/subst/eqsat.h) from the
// command line, alone or side by side with the backtracking search on the same rules and cost model. The
// optimize command (cli_optimize.cc) registers these options and hands over when --optimizer is not
// "backtrack".
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include <CLI/CLI.hpp>

#include "models/cost/cost_model.h"
#include "models/ir/graph.h"
#include "search/subst/eqsat.h"
#include "search/subst/optimizer.h"

namespace strata::cli {

struct EqsatCli {
  std::string optimizer = "backtrack";  // backtrack | eqsat | both
  search::subst::EqsatOptions options;
  std::string extraction = "ilp";
};

void add_eqsat_options(CLI::App& optimize, EqsatCli& o);

// Runs eqsat (and, for "both", the backtracking search with `backtrack`), prints the results, writes the
// best graph to `output` (ONNX) when non-empty and checks it (and the other) against the input on the
// reference executor when `check`.
void run_eqsat_optimize(const EqsatCli& o, const models::Graph& g, std::span<const search::subst::Rule> rules,
                        const models::CostModel& cost, const search::subst::OptimizerOptions& backtrack,
                        const std::string& output, bool check, std::uint64_t seed);

}  // namespace strata::cli
