// Hardware systems as the command line and the Python API load them, and described in words: what `strata hw
// show` prints and the Python API's System.show() returns (hierarchy view, physical view, wires of node 0 and
// the network, sample routes).
#pragma once

#include <string>

#include "hw/topology.h"

namespace strata::experiments {

// A system YAML with --nodes N (0: the file's `nodes:`), N checked as the command line checks it.
hw::Topology load_cluster(const std::string& path, int nodes = 0);

std::string describe_system(const hw::Topology& topo);

}  // namespace strata::experiments
