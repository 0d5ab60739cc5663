// YAML-configured experiments (`strata run <experiment.yaml>`). Results go to results/<experiment>/ as CSV,
// a markdown summary and PNG figures (drawn by experiments/plots/*.py with /usr/bin/python3 + matplotlib).
#pragma once

#include <string>
#include <vector>

namespace strata::experiments {

struct RunOptions {
  std::string output_root = "results";  // results/<experiment>/
  bool plots = true;
};

// Runs experiments/plots/<script> with /usr/bin/python3 (matplotlib) and the given arguments. On failure
// warns on stderr and returns false; the caller notes the missing figures in its summary.
bool run_plot_script(const std::string& script, const std::vector<std::string>& args);

// Runs the experiment; returns the folder it wrote. Throws ConfigError on a bad file.
std::string run_experiment(const std::string& path, const RunOptions& options = {});

}  // namespace strata::experiments
