// Sweeps and what-if studies over any experiment kind (docs/experiments.md, "Sweeps and what-if studies").
// An experiment file with a `sweep:` section (experiments/sweep_spec.h) runs its kind once per point, each on
// the file with the point's values written in; kinds do not know they are swept.
//
// Result store: a point's results live in <output>/.store/<experiment>/<key>/, where key hashes the point's
// effective experiment YAML, the contents of every file its parse step read (hardware files after the point's
// changes) and strata's version. A stored point is complete or absent (written through ResultsDir: staging
// folder, then rename), so a re-run, an extended axis or an interrupted run (SIGINT keeps finished points)
// computes only what is missing, and a changed field reruns only the points whose effective inputs changed.
// Points are independent and named by key, ready to be shared out between processes.
//
// Outputs in <output>/<experiment>/ (one ResultsDir): sweep.csv (tidy: a row per point x kind CSV row x
// numeric column, swept columns first), sweep.json (the whole configuration, the points and their keys,
// strata's version), summary.md (the key table), sweep.png (experiments/plots/sweep.py) and points/<i>/ (the
// point's own files and its effective/ configuration).
#pragma once

#include <cstddef>
#include <string>

#include "experiments/experiment.h"

namespace strata::experiments {

struct SweepOutcome {
  std::string folder;  // the results folder written
  std::size_t points = 0, computed = 0, reused = 0;
};

bool has_sweep(const ExperimentFile& file);

// Validates the sweep and every point (each point's file goes through the kind's parse step). `text` is the
// file's text when it is not on disk (the fuzz target). Throws ConfigError.
void check_sweep(const ExperimentFile& file, std::string_view text = {});

// Runs the missing points and writes the outputs. `kind` replaces the registered kind of the file's `kind:`
// (tests count its invocations); null: the registered one.
SweepOutcome run_sweep(const ExperimentFile& file, const RunOptions& options,
                       const ExperimentKind* kind = nullptr);

// `strata run --dry-run`: the points, their keys and which are already in the store; runs nothing.
std::string sweep_dry_run(const ExperimentFile& file, const RunOptions& options);
// The same for the experiment file at `path` (checked first), which need not be a sweep: a file without a
// `sweep:` section gets one line saying it is one run of its kind. What `strata run --dry-run` prints.
std::string dry_run(const std::string& path, const RunOptions& options);

}  // namespace strata::experiments
