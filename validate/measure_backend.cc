#include "validate/measure_backend.h"

#include <unistd.h>

#include <array>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "util/atomic_file.h"
#include "util/error.h"
#include "util/path.h"
#include "util/subprocess.h"
#include "validate/cuda_replay.h"

namespace strata::validate {
namespace fs = std::filesystem;

namespace {

std::string mpi_unavailable() {
#ifdef STRATA_WORKER_BUILD_PATH
  return {};
#else
  return "strata was built without Open MPI (install libopenmpi-dev and openmpi-bin, then configure and "
         "build "
         "again)";
#endif
}

std::string nccl_unavailable() {
  if (!cuda_built()) return std::string(kCudaNotBuilt);
#ifndef STRATA_NCCL_WORKER_BUILD_PATH
  return "strata-nccl-worker was not built: it needs Open MPI as well as CUDA (install libopenmpi-dev)";
#else
  return cuda_unavailable_reason();
#endif
}

// The registry: the one place that lists the backends.
constexpr std::array kBackends{
    MeasureBackend{"mpi", "Open MPI on an emulated cluster (validate cluster up)", "strata-mpi-worker",
                   "openmpi", true, mpi_unavailable},
    MeasureBackend{"nccl", "NCCL on GPUs, one rank per GPU under mpirun", "strata-nccl-worker", "ring", false,
                   nccl_unavailable},
};

std::string build_path(const MeasureBackend& b) {
  if (b.worker == "strata-mpi-worker") {
#ifdef STRATA_WORKER_BUILD_PATH
    return STRATA_WORKER_BUILD_PATH;
#endif
  } else if (b.worker == "strata-nccl-worker") {
#ifdef STRATA_NCCL_WORKER_BUILD_PATH
    return STRATA_NCCL_WORKER_BUILD_PATH;
#endif
  }
  return {};
}

}  // namespace

std::span<const MeasureBackend> measure_backends() {
  return kBackends;
}

std::string measure_backend_names() {
  std::string out;
  for (const auto& b : kBackends) out += fmt::format("{}{}", out.empty() ? "" : ", ", b.name);
  return out;
}

const MeasureBackend& find_measure_backend(std::string_view name) {
  for (const auto& b : kBackends)
    if (b.name == name) return b;
  throw util::InputError(fmt::format("--backend '{}': expected one of {}", name, measure_backend_names()));
}

fs::path worker_path(const MeasureBackend& backend) {
  const fs::path beside = util::executable_path().parent_path() / std::string(backend.worker);
  std::error_code ec;
  if (fs::exists(beside, ec)) return beside;
  if (const auto built = build_path(backend); !built.empty() && fs::exists(built, ec)) return built;
  const auto why = backend.unavailable();
  throw util::InputError(
      fmt::format("{} was not found beside strata{}", backend.worker, why.empty() ? "" : ": " + why));
}

std::vector<std::string> host_mpirun_command(const HostLaunch& launch, const fs::path& worker,
                                             const fs::path& plan_file, const fs::path& result_file) {
  std::vector<std::string> argv{"mpirun", "--np", std::to_string(launch.ranks), "--timeout",
                                std::to_string(launch.timeout_seconds)};
  if (!launch.hosts.empty()) argv.insert(argv.end(), {"--host", launch.hosts});
  if (geteuid() == 0) argv.push_back("--allow-run-as-root");
  for (const auto& [name, value] : launch.env) argv.insert(argv.end(), {"-x", name + "=" + value});
  argv.insert(argv.end(), {worker.string(), plan_file.string(), result_file.string()});
  return argv;
}

std::string unavailable_for(const MeasureBackend& backend, const HostLaunch& launch) {
  // On this machine the backend must be usable here; on other hosts only its being built can be checked.
  if (auto why = backend.unavailable(); !why.empty() && (launch.hosts.empty() || !cuda_built())) return why;
  return {};
}

void require_backend(const MeasureBackend& backend, const HostLaunch& launch) {
  if (const auto why = unavailable_for(backend, launch); !why.empty())
    throw util::InputError(fmt::format("--backend {}: {}", backend.name, why));
}

PlanResult measure_on_hosts(const MeasureBackend& backend, const HostLaunch& launch,
                            const MeasurementPlan& plan) {
  return run_on_hosts(backend, launch, plan).result;
}

HostRun run_on_hosts(const MeasureBackend& backend, const HostLaunch& launch, const MeasurementPlan& plan) {
  require_backend(backend, launch);
  check_plan(plan);
  if (plan.ranks != launch.ranks)
    throw std::invalid_argument(
        fmt::format("the plan is for {} ranks, the launch has {}", plan.ranks, launch.ranks));
  const fs::path worker = worker_path(backend);
  const util::ScopedTempDir dir(fmt::format("strata-{}", backend.name));
  const fs::path plan_file = dir.path() / "plan.json", result_file = dir.path() / "result.json";
  util::write_file_atomically(plan_file, plan_to_json(plan));
  const auto argv = host_mpirun_command(launch, worker, plan_file, result_file);
  const auto r = util::run_process(argv);
  std::ifstream in(result_file);
  if (!r.ok() || !in) {
    std::string output = r.err + r.out;
    if (output.size() > 4000) output = output.substr(output.size() - 4000);
    throw util::InputError(
        fmt::format("the {} measurement failed ({}):\n`{}`\n{}", backend.name,
                    r.started ? fmt::format("mpirun exit status {}", r.exit_code) : r.error,
                    util::shell_quote(argv), output));
  }
  std::stringstream text;
  text << in.rdbuf();
  return {result_from_json(text.str(), result_file.string()), r.out + r.err};
}

}  // namespace strata::validate
