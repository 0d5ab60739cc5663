// hw::load_system from a YAML tree already read, and perhaps rewritten (a sweep point's hardware overrides
// and what-if scale factors: hw/yaml_patch.h, hw/what_if.h). Kept beside hw/system_loader.h so that the many
// users of that header do not depend on the YAML reader.
#pragma once

#include "hw/system_loader.h"
#include "hw/yaml_reader.h"

namespace strata::hw {

// Builds the system from `root` exactly as load_system(path) builds it from the file `root` was read from;
// errors name root.file() and the lines the nodes carry.
Topology load_system(const YamlReader& root, const LoadOptions& options = {});

}  // namespace strata::hw
