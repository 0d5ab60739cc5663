// A hardware system described in words: what `strata hw show` prints and the Python API's System.show()
// returns (hierarchy view, physical view, wires of node 0 and the network, sample routes).
#pragma once

#include <string>

#include "hw/topology.h"

namespace strata::experiments {

std::string describe_system(const hw::Topology& topo);

}  // namespace strata::experiments
