// The `p2-reproduction` experiment kind: P2's evaluation grid (Xie et al., MLSys 2022, section 4) run on
// strata's placement enumeration, program synthesis and simulator, reported beside the paper's headline
// numbers.
#pragma once

#include <string>

#include "experiments/experiment.h"
#include "hw/yaml_reader.h"

namespace strata::experiments {

// Runs the experiment described by `root` (already known to have kind p2-reproduction); returns the output
// folder. Throws ConfigError naming file, line and field on bad input.
std::string run_p2_reproduction(const YamlReader& root, const std::string& path, const RunOptions& options);

}  // namespace strata::experiments
