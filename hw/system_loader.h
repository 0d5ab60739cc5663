// Loads a hardware system (configs/hw/*.yaml) into a Topology. The YAML schema is documented in
// docs/hardware.md; every error names file, line and field.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "hw/limits.h"
#include "hw/topology.h"

namespace strata::hw {

struct LoadOptions {
  std::optional<int> nodes;  // overrides the file's `nodes:` (the CLI's --nodes N), 1..limits::kMaxNodes
};

Topology load_system(const std::string& path, const LoadOptions& options = {});
Topology load_system_from_string(std::string_view yaml, const std::string& name,
                                 const LoadOptions& options = {});

}  // namespace strata::hw
