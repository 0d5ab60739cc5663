// The `strata` command line is assembled from command groups, one file each (cli_<group>.cc). A group adds
// its subcommands to the app with callbacks that do the work; options live in state owned by the callbacks.
// Callbacks report bad input by throwing ConfigError or std::invalid_argument, which main() prints as
// "strata: error: ..." with exit status 2.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "hw/topology.h"

namespace strata::cli {

void add_hw_commands(CLI::App& app);   // strata hw show|list
void add_sim_commands(CLI::App& app);  // strata sim collective|algorithms
// strata sim step, strata parallelize (search/parallel); after add_sim_commands
void add_parallel_commands(CLI::App& app);
void add_run_command(CLI::App& app);        // strata run <experiment.yaml>
void add_model_commands(CLI::App& app);     // strata model list|show|sim|export (models/)
void add_synth_command(CLI::App& app);      // strata synth (placements + reduction programs, search/reduce)
void add_subst_commands(CLI::App& app);     // strata subst verify|coverage|show|axioms (search/subst)
void add_optimize_commands(CLI::App& app);  // strata subst generate (after add_subst_commands)
void add_validate_commands(CLI::App& app);  // strata validate cluster|calibrate|collectives|synth (validate/)

}  // namespace strata::cli
