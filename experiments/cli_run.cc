// strata run <experiment.yaml>
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "experiments/cli.h"
#include "experiments/experiment.h"
#include "experiments/sweep.h"
#include "experiments/sweep_mpi.h"
#include "util/interrupt.h"

namespace strata::cli {

void add_run_command(CLI::App& app) {
  struct Options {
    std::string file, output = "results";
    bool no_plots = false, check = false, dry_run = false;
  };
  auto o = std::make_shared<Options>();
  auto* run =
      app.add_subcommand("run", "Run a YAML-configured experiment; results go to results/<experiment>/");
  std::string kinds;
  for (const auto& k : experiments::experiment_kinds()) kinds += fmt::format("\n  {}: {}", k.name, k.summary);
  run->footer(
      "Experiment kinds (the file's `kind:`):" + kinds +
      "\nPaths inside the file (hw:, rules:) are relative to the file's own directory. The results set "
      "is written to a staging folder and moved into place when complete; Ctrl-C (exit status 130) or "
      "SIGTERM "
      "(143) removes it and leaves the previous results as they were. A file with a `sweep:` section runs "
      "the kind once per point (docs/experiments.md, \"Sweeps and what-if studies\"); finished points are "
      "kept in <output>/.store/ and a re-run computes only the missing ones. Under mpirun (mpirun -np N "
      "strata run sweep.yaml) the points are shared between the ranks and rank 0 writes the same "
      "outputs (docs/experiments.md, \"Sweeps on a cluster (MPI)\").");
  run->add_option("experiment", o->file, "Experiment YAML, e.g. configs/experiments/quickstart.yaml")
      ->required();
  run->add_option("--output", o->output, "Root folder for results")->capture_default_str();
  run->add_flag("--no-plots", o->no_plots, "Skip the matplotlib figures");
  run->add_flag(
      "--check", o->check,
      "Only validate the file and the files it names (hardware, rules); run nothing, write nothing");
  run->add_flag("--dry-run", o->dry_run,
                "List the points of a sweep, their store keys and which are already computed; run nothing");
  run->callback([o] {
    // Under mpirun the listing and the check are printed once, by rank 0.
    if ((o->dry_run || o->check) && experiments::mpi_launch().rank > 0) return;
    if (o->dry_run) {
      std::cout << experiments::dry_run(o->file, experiments::RunOptions{o->output, !o->no_plots});
      return;
    }
    if (o->check) {
      const auto file = experiments::check_experiment(o->file);
      std::cout << fmt::format("{}: valid {} experiment '{}'\n", o->file, file.kind(), file.name());
      return;
    }
    // Ctrl-C or SIGTERM: the unfinished set is removed, the previous results stay, exit status 130 / 143.
    util::handle_interrupts();
    const auto dir = experiments::run_experiment(o->file, experiments::RunOptions{o->output, !o->no_plots});
    if (!dir.empty()) std::cout << fmt::format("results written to {}/\n", dir);  // empty: an MPI rank > 0
  });
}

}  // namespace strata::cli
