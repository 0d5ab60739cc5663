#include "validate/measure.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "search/reduce/evaluate.h"
#include "sim/algorithms/openmpi.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/path.h"
#include "util/subprocess.h"
#include "validate/measure_backend.h"

namespace strata::validate {
namespace fs = std::filesystem;

fs::path worker_path() {
  return worker_path(find_measure_backend("mpi"));
}

std::vector<std::string> mpirun_command(const ClusterSpec& spec, const fs::path& worker,
                                        const fs::path& plan_file, const fs::path& result_file,
                                        int timeout_seconds) {
  std::string hosts;
  for (int i = 0; i < spec.nodes; ++i)
    hosts += fmt::format("{}{}:{}", i ? "," : "", spec.node_name(i), spec.ranks_per_node);
  const std::string subnet = spec.subnet + ".0/24";
  std::vector<std::string> argv{"mpirun", "--map-by",        "slot",      "--bind-to",
                                "none",   "--oversubscribe", "--timeout", std::to_string(timeout_seconds)};
  if (geteuid() == 0) argv.push_back("--allow-run-as-root");
  const auto mca = [&](const std::string& k, const std::string& v) {
    argv.insert(argv.end(), {"--mca", k, v});
  };
  mca("plm_rsh_agent", spec.agent().string());
  mca("oob_tcp_if_include", subnet);
  // One port per node: every rank uses the cluster's subnet. Several: each rank is told its own port (an
  // application context per rank below), since a command-line MCA value would override it.
  if (spec.nics_per_node == 1) mca("btl_tcp_if_include", subnet);
  mca("btl", "self,vader,tcp");
  // Without "put": Open MPI's TCP put path moves a large message as one fragment, during which the rank does
  // not progress its receives, so an exchange (MPI_Sendrecv, every ring step) runs one direction after the
  // other (measured: 1 MiB each way took twice the one-way time). The send protocol pipelines 128 KiB
  // fragments both ways, as a full-duplex link allows.
  mca("btl_tcp_flags", "send,inplace,need-ack,need-csum");
  mca("mpi_yield_when_idle", "1");
  for (const auto& [k, v] : sim::algorithms::openmpi_forced_algorithms()) mca(k, v);
  const std::vector<std::string> program{worker.string(), plan_file.string(), result_file.string()};
  if (spec.nics_per_node == 1) {
    argv.insert(argv.end(), {"--np", std::to_string(spec.ranks()), "--host", hosts});
    argv.insert(argv.end(), program.begin(), program.end());
    return argv;
  }
  // Several ports: an application context per rank, with its node and its own port.
  for (int r = 0; r < spec.ranks(); ++r) {
    if (r > 0) argv.push_back(":");
    argv.insert(argv.end(),
                {"--np", "1", "--host",
                 fmt::format("{}:{}", spec.node_name(r / spec.ranks_per_node), spec.ranks_per_node), "-x",
                 fmt::format("OMPI_MCA_btl_tcp_if_include=eth{}", spec.nic_of_rank(r))});
    argv.insert(argv.end(), program.begin(), program.end());
  }
  return argv;
}

PlanResult measure(const ClusterSpec& spec, const MeasurementPlan& plan, int timeout_seconds) {
  check_plan(plan);
  if (plan.ranks != spec.ranks())
    throw std::invalid_argument(
        fmt::format("the plan is for {} ranks, the cluster has {}", plan.ranks, spec.ranks()));
  const std::string stem = fmt::format("plan-{}", getpid());
  const fs::path plan_file = spec.dir / (stem + ".json"), result_file = spec.dir / (stem + ".result.json");
  util::write_file_atomically(plan_file, plan_to_json(plan));
  struct Cleanup {
    fs::path a, b;
    ~Cleanup() {
      std::error_code ec;
      fs::remove(a, ec);
      fs::remove(b, ec);
    }
  } cleanup{plan_file, result_file};
  const auto argv = mpirun_command(spec, worker_path(), plan_file, result_file, timeout_seconds);
  const auto r = util::run_process(argv);
  std::ifstream in(result_file);
  if (!r.ok() || !in) {
    std::string output = r.err + r.out;
    if (output.size() > 4000) output = output.substr(output.size() - 4000);
    // Not strata's fault but the cluster's or Open MPI's: an error for the user (exit 2), with mpirun's
    // words.
    throw util::InputError(
        fmt::format("the measurement failed ({}):\n`{}`\n{}",
                    r.started ? fmt::format("mpirun exit status {}", r.exit_code) : r.error,
                    util::shell_quote(argv), output));
  }
  std::stringstream text;
  text << in.rdbuf();
  return result_from_json(text.str(), result_file.string());
}

double simulate_case(const hw::Topology& topo, const PlanCase& c, std::string_view algorithm) {
  search::reduce::LoweredProgram program;
  for (const auto& s : c.steps) {
    search::reduce::LoweredStep step;
    for (const auto& call : s.calls) {
      search::reduce::LoweredCall lc;
      lc.op = call.op;
      lc.group.assign(call.group.begin(), call.group.end());
      lc.bytes = static_cast<double>(call.bytes);
      step.calls.push_back(std::move(lc));
    }
    program.steps.push_back(std::move(step));
  }
  return search::reduce::simulate_lowered(topo, program, algorithm);
}

}  // namespace strata::validate
