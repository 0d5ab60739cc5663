// strata validate host: this machine's CPU measured by microbenchmarks (validate/host_bench.h: oneDNN matmul
// peak FLOP/s, STREAM copy/triad bandwidth, L2 and last-level cache, per-primitive overhead) and written as a
// system YAML whose GPU figures are the measured ones, for `strata model sim --hw FILE` (docs/replay.md §1).
#include <iostream>

#include <fmt/format.h>

#include "experiments/cli.h"
#include "experiments/cli_options.h"
#include "hw/config_error.h"
#include "hw/system_loader.h"
#include "hw/units.h"
#include "util/atomic_file.h"
#include "validate/cpu_replay.h"
#include "validate/host_bench.h"

namespace strata::cli {
namespace {

struct HostOptions {
  std::string output;
  int repeat = 10, warmup = 2, threads = 0;
  bool quick = false;
};

void run_host(const HostOptions& o) {
  util::check_output_path(o.output);
  if (!validate::host_bench_available())
    throw ConfigError("validate host: " + validate::host_bench_missing());
  std::cerr << fmt::format(
      "measuring the host CPU ({}): matmul peaks, STREAM copy/triad, per-kernel overhead; {} warm-up + {} "
      "timed runs each, median{}\n",
      o.threads > 0 ? fmt::format("--threads {}", o.threads) : validate::omp_threads_note(), o.warmup,
      o.repeat, o.quick ? " (--quick: small GEMMs)" : "");
  const auto bench = validate::run_host_bench(
      {.warmup = o.warmup, .repeat = o.repeat, .quick = o.quick, .threads = o.threads});
  std::cout << validate::host_bench_report(bench);
  util::write_file_atomically(o.output, validate::host_system_yaml(bench));
  // The file must load as any system YAML does; a failure here is a bug in host_system_yaml.
  const auto topo = hw::load_system(o.output);
  const auto& gpu = topo.gpu();
  std::cout << fmt::format(
      "wrote {} (gpu {}: fp32 {:.1f} GFLOP/s, bf16 {:.1f} GFLOP/s{}, memory {}, cache {}, launch {}); use it "
      "with:\n"
      "  strata model sim resnet50 --hw {} --dtype f32\n",
      o.output, gpu.name, gpu.peak_fp32 / 1e9, gpu.peak_flops(hw::DType::kBf16) / 1e9,
      bench.bf16.supported ? "" : " = fp32's, not supported", units::format_bandwidth(gpu.hbm_bandwidth),
      [&] {
        std::string levels;
        for (const auto& level : gpu.caches)
          levels += fmt::format("{}{} at {}", levels.empty() ? "" : ", ", units::format_bytes(level.capacity),
                                units::format_bandwidth(level.bandwidth));
        return levels.empty() ? std::string("none faster than memory") : levels;
      }(),
      units::format_duration(gpu.launch_overhead), o.output);
}

}  // namespace

void add_validate_host_command(CLI::App& validate) {
  auto o = std::make_shared<HostOptions>();
  auto* cmd = validate.add_subcommand(
      "host",
      "Measure this machine's CPU (oneDNN matmul peak FLOP/s in f32 and bf16, STREAM copy/triad bandwidth,\n"
      "L2 and last-level cache bandwidths (oneDNN add), per-kernel overhead) and write a system YAML whose\n"
      "host-cpu device has the measured figures");
  cmd->add_option("-o,--output", o->output, "System YAML to write")->required();
  add_int_option(*cmd, "--repeat", o->repeat, {1, 100000}, "Timed runs per benchmark (median kept)");
  add_int_option(*cmd, "--warmup", o->warmup, {0, 100000}, "Untimed runs before them");
  add_int_option(*cmd, "--threads", o->threads, {0, 4096},
                 "OpenMP threads (0: OMP_NUM_THREADS, else every hardware thread)");
  cmd->add_flag("--quick", o->quick, "Small GEMMs (512, 1024 instead of 1024..3072): seconds, less accurate");
  cmd->callback([o] { run_host(*o); });
}

}  // namespace strata::cli
