// The libraries strata validate measures collectives and reduction programs with, declared once: each runs a
// measurement plan (validate/plan.h) in a worker program that mpirun starts on every rank, and is compared
// with the simulator's model of it.
//   mpi   Open MPI on the host CPUs, on an emulated cluster (`validate cluster up`; validate/measure.h), the
//         simulator running Open MPI's schedules (algorithm openmpi).
//   nccl  NCCL on GPUs, one rank per GPU, on this machine or on MPI hosts (strata-nccl-worker,
//         validate/nccl_worker.cc), built with the GPU backend; simulated with a registered NCCL algorithm.
#pragma once

#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "validate/plan.h"

namespace strata::validate {

struct MeasureBackend {
  std::string_view name;     // "mpi", "nccl"
  std::string_view summary;  // for --help
  std::string_view worker;   // the worker program's file name
  // The simulator's collective algorithm that models the library (what a measurement is compared with).
  std::string_view simulated_algorithm;
  bool emulated_cluster = false;  // runs on `validate cluster` namespaces (else on GPU hosts with mpirun)
  // "" when this build can run it here; otherwise why not (not built, no GPU: "no CUDA device (...)").
  std::string (*unavailable)() = nullptr;
};

// Every backend, in a fixed order.
std::span<const MeasureBackend> measure_backends();
// "mpi, nccl".
std::string measure_backend_names();
// The backend named `name`; throws util::InputError naming the choices.
const MeasureBackend& find_measure_backend(std::string_view name);

// The backend's worker program: beside the running program (installed bin/, or the build tree's
// experiments/), else the build tree's copy. Throws util::InputError when it was not built.
std::filesystem::path worker_path(const MeasureBackend& backend);

// Where a GPU backend's ranks run: `ranks` processes, on this machine when `hosts` is empty, else on mpirun's
// --host list ("node1:8,node2:8"), each rank on GPU (local rank mod the node's GPUs).
struct HostLaunch {
  int ranks = 1;
  std::string hosts;
  int timeout_seconds = 900;
  // Environment every rank gets (mpirun -x NAME=VALUE), e.g. NCCL's settings for a microbenchmark.
  std::vector<std::pair<std::string, std::string>> env;
};
// Why `backend` cannot run `launch`: not built, or (on this machine) no usable GPU; "" when it can. On other
// hosts only its being built can be checked here.
std::string unavailable_for(const MeasureBackend& backend, const HostLaunch& launch);
// Throws util::InputError "--backend B: <why>" where unavailable_for says why.
void require_backend(const MeasureBackend& backend, const HostLaunch& launch);
// mpirun -np R [--host H] --timeout T [--allow-run-as-root] [-x NAME=VALUE ...] WORKER PLAN RESULT
std::vector<std::string> host_mpirun_command(const HostLaunch& launch, const std::filesystem::path& worker,
                                             const std::filesystem::path& plan_file,
                                             const std::filesystem::path& result_file);
// Runs `plan` with `backend` as `launch` says (plan and result files in a temporary folder, removed after).
// Throws util::InputError when the backend cannot run here or the run fails (with mpirun's output).
PlanResult measure_on_hosts(const MeasureBackend& backend, const HostLaunch& launch,
                            const MeasurementPlan& plan);
// The same, with what the ranks printed (mpirun forwards every host's standard output and error), e.g.
// NCCL's INFO log.
struct HostRun {
  PlanResult result;
  std::string output;
};
HostRun run_on_hosts(const MeasureBackend& backend, const HostLaunch& launch, const MeasurementPlan& plan);

}  // namespace strata::validate
