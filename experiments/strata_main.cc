// The `strata` command line: the front door to every component. Each command group lives in its own
// cli_<group>.cc (see experiments/cli.h); main only assembles them and turns errors into exit codes.
#include <iostream>

#include <CLI/CLI.hpp>

#include "experiments/cli.h"
#include "hw/config_error.h"
#include "util/lsan_mpi.h"
#include "util/version.h"

// `mpirun strata run` (sharded sweeps) runs Open MPI in this process: its allocations are not strata's leaks
// (util/lsan_mpi.h).
extern "C" const char* __lsan_default_suppressions() {
  return strata::util::kMpiLeakSuppressions;
}

int main(int argc, char** argv) {
  using namespace strata;
  CLI::App app{"strata: simulator-first discovery of ML-system optimizations for hierarchical GPU systems"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string(util::kVersion));
  cli::add_hw_commands(app);
  cli::add_sim_commands(app);
  cli::add_parallel_commands(app);
  cli::add_run_command(app);
  cli::add_model_commands(app);
  cli::add_synth_command(app);
  cli::add_subst_commands(app);
  cli::add_optimize_commands(app);
  cli::add_validate_commands(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const ConfigError& e) {
    std::cerr << "strata: error: " << e.what() << "\n";
    return 2;
  } catch (const std::invalid_argument& e) {
    std::cerr << "strata: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "strata: internal error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
