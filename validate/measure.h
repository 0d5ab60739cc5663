// Running a measurement plan on an emulated cluster (mpirun + strata-mpi-worker) and simulating the same plan
// on the cluster's system file, so that measured and predicted times come from one description of the work.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "hw/topology.h"
#include "validate/cluster.h"
#include "validate/plan.h"

namespace strata::validate {

// The MPI worker program (validate/measure_backend.h's worker_path of backend mpi). Throws InputError when it
// was not built (no Open MPI at configure time).
std::filesystem::path worker_path();

// The mpirun command line that runs `plan_file` on the cluster: one rank per slot, nodes filled in order
// (MPI rank r on node r / ranks_per_node, as the system file numbers devices), daemons started through the
// cluster's agent, TCP only on the cluster's subnet, shared memory inside nodes, idle ranks yielding the CPU
// (mpi_yield_when_idle: on a 2-core machine busy-polling ranks starve the kernel's network processing), TCP
// messages sent as pipelined fragments (no put: measure.cc), and
// coll/tuned forced onto the schedules sim/algorithms/openmpi.cc models.
std::vector<std::string> mpirun_command(const ClusterSpec& spec, const std::filesystem::path& worker,
                                        const std::filesystem::path& plan_file,
                                        const std::filesystem::path& result_file, int timeout_seconds);

// Writes the plan into the cluster's state folder, runs it, reads the result and removes both files. Throws
// util::InputError with the command and mpirun's output when the run fails or times out.
PlanResult measure(const ClusterSpec& spec, const MeasurementPlan& plan, int timeout_seconds = 900);

// The simulated time of a case on `topo` with Open MPI's schedules (collective algorithm "openmpi") or the
// registered algorithm `algorithm` (validate/measure_backend.h's simulated_algorithm); MPI rank r is device r
// of the topology.
double simulate_case(const hw::Topology& topo, const PlanCase& c, std::string_view algorithm = "openmpi");

}  // namespace strata::validate
