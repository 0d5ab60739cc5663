// strata validate ring-slices: NCCL's ring on one node's GPUs, one channel, the Simple protocol, per slice
// size (validate/ring_slices.h): the time per slice handoff that node.fabric.nccl_ring gives the simulator
// (docs/fidelity.md §6.3), and NCCL's own channel count there. Writes the system file with the table.
#include <iostream>

#include <fmt/format.h>

#include "experiments/cli.h"
#include "experiments/cli_options.h"
#include "hw/system_loader.h"
#include "hw/units.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/file.h"
#include "util/parse.h"
#include "validate/ring_slices.h"

namespace strata::cli {
namespace {

struct RingSliceOptions {
  std::string hw, output, slices = "32KiB:2MiB:2", loops = "2,4,8,16";
  int np = 0, warmup = 2, iterations = 10;
};

void run_ring_slices(const RingSliceOptions& o) {
  util::check_output_path(o.output);
  const hw::Topology topo = hw::load_system(o.hw);
  if (o.np < 2 || o.np > topo.gpus_per_node())
    throw util::InputError(fmt::format("--np {}: expected 2 to {} ranks, the GPUs of one node of {}", o.np,
                                       topo.gpus_per_node(), o.hw));
  std::vector<double> slices;
  for (auto b : util::parse_size_range(o.slices, "--slices")) {
    if (b % 4096 != 0 || b > (std::uint64_t{64} << 20))
      throw util::InputError(fmt::format(
          "--slices: {} B is not a multiple of 4 KiB up to 64 MiB (NCCL_BUFFSIZE is 4 slices)", b));
    slices.push_back(static_cast<double>(b));
  }
  std::vector<int> loops;
  for (auto l : util::parse_int_list(o.loops, {1, 1024}, "--loops")) {
    if (!loops.empty() && l <= loops.back())
      throw util::InputError(fmt::format("--loops '{}': expected increasing loop counts", o.loops));
    loops.push_back(static_cast<int>(l));
  }
  if (loops.size() < 2) throw util::InputError("--loops: expected at least two loop counts");
  const auto& backend = validate::find_measure_backend("nccl");
  if (const auto why = backend.unavailable(); !why.empty())
    throw util::InputError("validate ring-slices runs NCCL on this machine's GPUs: " + why);
  const validate::HostLaunch launch{o.np, "", 900, {}};
  std::cerr << fmt::format(
      "measuring NCCL's ring on {} GPUs of this machine: one channel, Simple, {} slice sizes x {} loop "
      "counts, "
      "{} warm-up + {} timed runs each\n",
      o.np, slices.size(), loops.size(), o.warmup, o.iterations);
  const auto m = validate::measure_ring_slices(backend, launch, slices, loops, o.warmup, o.iterations,
                                               [](const std::string& what) { std::cerr << what << "\n"; });
  std::cout << fmt::format("# NCCL ring, one channel, Simple, {} ranks ({}); NCCL's own channels: {}\n", o.np,
                           m.library, m.measured.channels);
  std::cout << fmt::format("# {:>10} {:>8} {:>9} {:>12}  {:>12} {:>12} {:>9} {:>8}\n", "slice", "loops",
                           "handoffs", "median", "per handoff", "intercept", "residual", "spread");
  for (const auto& p : m.points)
    for (std::size_t i = 0; i < p.handoffs.size(); ++i)
      std::cout << fmt::format("  {:>10} {:>8} {:>9} {:>12}  {:>12} {:>12} {:>8.1f}% {:>7.1f}%\n",
                               units::format_bytes(p.slice_bytes), loops[i], p.handoffs[i],
                               units::format_duration(p.median_seconds[i]),
                               i == 0 ? units::format_duration(p.fit.per_handoff) : "",
                               i == 0 ? units::format_duration(p.fit.intercept) : "",
                               i == 0 ? 100 * p.fit.worst_residual : 0.0,
                               i == 0 ? 100 * p.worst_spread : 0.0);
  const std::string yaml = validate::system_with_nccl_ring(
      util::read_file<util::InputError>(o.hw, "a system YAML file"), m.measured);
  util::write_file_atomically(o.output, yaml);
  // The file must load as any system YAML does; a failure here is a bug in system_with_nccl_ring.
  const hw::Topology written = hw::load_system(o.output);
  std::cout << fmt::format("written: {} (node.fabric.nccl_ring: {} channels, {} slice sizes)\n", o.output,
                           written.nccl_ring().channels, written.nccl_ring().handoffs.points().size());
}

}  // namespace

void add_validate_ring_slices_command(CLI::App& validate) {
  auto o = std::make_shared<RingSliceOptions>();
  auto* cmd = validate.add_subcommand(
      "ring-slices",
      "Measure NCCL's ring on this machine's GPUs (one channel, Simple, NCCL_BUFFSIZE = 4 x slice): the "
      "time\n"
      "per slice handoff (slope of run time over handoffs) and NCCL's own channel count, written into a "
      "copy\n"
      "of --hw as node.fabric.nccl_ring for the simulator's rings (docs/fidelity.md §6.3). Needs the GPU\n"
      "build, strata-nccl-worker and 2+ GPUs");
  cmd->add_option("--hw", o->hw, "System YAML of this node (the copy gets the table)")->required();
  add_int_option(*cmd, "--np", o->np, {2, 1024}, "Ranks, one per GPU of this machine", false)->required();
  cmd->add_option("--slices", o->slices,
                  "Slice sizes MIN:MAX[:FACTOR], multiples of 4 KiB (NCCL's slices are 32 KiB to 1 MiB)")
      ->capture_default_str();
  cmd->add_option("--loops", o->loops, "Loop counts per slice size (N x 2 slices per loop), increasing")
      ->capture_default_str();
  add_int_option(*cmd, "--warmup", o->warmup, {0, 100}, "Untimed runs per size");
  add_int_option(*cmd, "--iterations", o->iterations, {1, 1000}, "Timed runs per size (median)");
  cmd->add_option("--output", o->output, "System YAML to write: --hw with node.fabric.nccl_ring")->required();
  cmd->callback([o] { run_ring_slices(*o); });
}

}  // namespace strata::cli
