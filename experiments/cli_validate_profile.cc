// strata validate profile: every distinct operator instance of a model timed on this machine's CPU with
// oneDNN kernels (validate/cpu_replay.h), written as a profile database for `strata model sim --profile`
// (docs/validate.md, "Part 2, first slice").
#include <cstdlib>
#include <iostream>
#include <map>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "experiments/cli.h"
#include "experiments/cli_options.h"
#include "experiments/cli_validate_replay.h"
#include "hw/config_error.h"
#include "hw/units.h"
#include "util/atomic_file.h"
#include "validate/cpu_replay.h"

namespace strata::cli {
namespace {

struct ProfileOptions : ReplayModelOptions {
  std::string output;
  std::int64_t seed = 0;
  int repeat = 20, warmup = 3;
};

std::string threads_note() {
  const char* omp = std::getenv("OMP_NUM_THREADS");
  return omp ? fmt::format("OMP_NUM_THREADS={}", omp)
             : fmt::format("all {} hardware threads; set OMP_NUM_THREADS to change",
                           std::thread::hardware_concurrency());
}

void run_profile(const ProfileOptions& o) {
  util::check_output_path(o.output);
  const auto g = build_replay_model(o, "validate profile", "cuBLAS/cuDNN kernels timed with CUDA events");
  std::cerr << fmt::format(
      "profiling {} ({} nodes) on the host CPU with {} ({}): {} warm-up + {} timed runs "
      "per operator instance, median\n",
      g.name(), g.nodes().size(), validate::onednn_description(), threads_note(), o.warmup, o.repeat);
  const auto p = validate::profile_on_cpu(
      g, {.warmup = o.warmup, .repeat = o.repeat, .seed = static_cast<std::uint64_t>(o.seed)});
  p.db.save(o.output);

  // Per operator: instances, total measured time, and which backend ran them.
  struct Row {
    int instances = 0, onednn = 0, reference = 0;
    double seconds = 0;
    std::set<std::string> implementations;  // oneDNN's, as it names them
  };
  std::map<std::string, Row> by_op;
  double total = 0;
  int distinct_onednn = 0;
  for (const auto& op : p.ops) {
    auto& r = by_op[std::string(g.node(op.node).op->name)];
    r.instances += op.instances;
    (op.timing.backend.backend == validate::CpuBackend::kOneDnn ? r.onednn : r.reference) += op.instances;
    if (op.timing.backend.backend == validate::CpuBackend::kOneDnn) {
      ++distinct_onednn;
      r.implementations.insert(op.timing.backend.detail);
    }
    r.seconds += op.timing.median_seconds * op.instances;
    total += op.timing.median_seconds * op.instances;
  }
  std::cout << fmt::format(
      "# {}: {} distinct operator instances ({} on oneDNN, {} on the reference kernel), "
      "{} views untimed\n",
      g.name(), p.ops.size(), distinct_onednn, p.ops.size() - distinct_onednn, p.view_nodes);
  std::cout << fmt::format("{:<16} {:>9} {:>7} {:>9} {:>12} {:>7}  {}\n", "operator", "instances", "oneDNN",
                           "reference", "time", "share", "oneDNN implementations");
  for (const auto& [name, r] : by_op)
    std::cout << fmt::format("{:<16} {:>9} {:>7} {:>9} {:>12} {:>6.1f}%  {}\n", name, r.instances, r.onednn,
                             r.reference, units::format_duration(r.seconds), 100 * r.seconds / total,
                             fmt::join(r.implementations, ", "));
  std::cout << fmt::format("sum of node medians: {} (nodes one after another)\n",
                           units::format_duration(total));
  for (const auto& op : p.ops)
    if (op.timing.backend.backend == validate::CpuBackend::kOneDnn &&
        op.timing.backend.detail.find("ref:") != std::string::npos)
      std::cout << fmt::format("oneDNN's reference implementation (slow): {} ({}): {}\n",
                               g.node(op.node).name, g.node(op.node).op->name, op.timing.backend.detail);
  for (const auto& op : p.ops)
    if (op.timing.backend.backend == validate::CpuBackend::kReference)
      std::cout << fmt::format("reference kernel: {} ({}): {}\n", g.node(op.node).name,
                               g.node(op.node).op->name, op.timing.backend.detail);
  std::cout << fmt::format(
      "wrote {} entries (device {}) to {}; use them with:\n  strata model sim {} --hw "
      "configs/validate/host-cpu.yaml --dtype f32{}{} --profile {}\n",
      p.db.size(), validate::kHostCpuDevice, o.output, o.model,
      o.batch ? fmt::format(" --batch {}", o.batch) : "", o.seq ? fmt::format(" --seq {}", o.seq) : "",
      o.output);
}

}  // namespace

void add_validate_profile_command(CLI::App& validate) {
  auto o = std::make_shared<ProfileOptions>();
  auto* cmd = validate.add_subcommand(
      "profile",
      "Time every distinct operator instance of a model on this machine (f32, oneDNN kernels on the CPU;\n"
      "the reference kernel where oneDNN has none) and write a profile database for `model sim --profile`");
  add_replay_model_options(*cmd, *o);
  add_int_option(*cmd, "--repeat", o->repeat, {1, 100000}, "Timed runs per operator instance (median kept)");
  add_int_option(*cmd, "--warmup", o->warmup, {0, 100000}, "Untimed runs before them");
  add_int_option(*cmd, "--seed", o->seed, kSeedRange, "Seed of the pseudo-random inputs and weights");
  cmd->add_option("-o,--output", o->output, "Profile database (JSON) to write")->required();
  cmd->callback([o] { run_profile(*o); });
}

}  // namespace strata::cli
