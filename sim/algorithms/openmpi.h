// What `strata validate` tells Open MPI so that it runs the schedules sim/algorithms/openmpi.cc models: the
// one place both sides read.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace strata::sim::algorithms {

// Segment size of Open MPI's pipelined broadcast and reduce, bytes.
inline constexpr double kOpenMpiSegmentBytes = 128 * 1024;

// MCA parameters (name, value) that force coll/tuned onto the modelled algorithms for every collective.
std::vector<std::pair<std::string, std::string>> openmpi_forced_algorithms();

}  // namespace strata::sim::algorithms
