// Loads a hardware system (configs/hw/*.yaml) into a Topology. The YAML schema is documented in
// docs/hardware.md; every error names file, line and field.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "hw/topology.h"

namespace strata::hw {

// The largest cluster a system file or --nodes may describe (8,192 GPUs with 8 per node): well above the
// clusters strata's experiments study, and small enough that building routes stays interactive.
inline constexpr int kMaxNodes = 1024;

// The most GPUs one node may have: a DGX GH200 joins 256 GPUs in one NVLink domain, the largest shipped;
// beyond it building a node's routes stops being interactive.
inline constexpr int kMaxGpusPerNode = 256;

struct LoadOptions {
  std::optional<int> nodes;  // overrides the file's `nodes:` (the CLI's --nodes N), 1..kMaxNodes
};

Topology load_system(const std::string& path, const LoadOptions& options = {});
Topology load_system_from_string(std::string_view yaml, const std::string& name, const LoadOptions& options = {});

}  // namespace strata::hw
