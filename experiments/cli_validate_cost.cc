// strata validate calibrate-cost: the cost model's efficiency curves fitted on microbenchmarks timed on this
// machine's CPU or GPU (validate/cost_calibration.h, docs/replay.md §3), written for `--cost-params`.
#include <iostream>

#include <fmt/format.h>

#include "experiments/cli.h"
#include "experiments/cli_options.h"
#include "experiments/cli_validate_replay.h"
#include "hw/config_error.h"
#include "hw/system_loader.h"
#include "hw/units.h"
#include "util/atomic_file.h"
#include "util/path.h"
#include "validate/cost_calibration.h"

namespace strata::cli {
namespace {

struct CalibrateCostOptions {
  std::string hw, output, points_csv, device = "cpu";
  bool quick = false;
  int repeat = 20, warmup = 3, min_points = 4, rounds = 3;
  double target_seconds = 0.2;
  std::int64_t seed = 0;
};

std::string points_csv(const std::vector<validate::CalibrationPoint>& points, const hw::GpuSpec& gpu,
                       const models::RooflineParams& before, const models::RooflineParams& after) {
  std::string csv = "benchmark,op,measured_us,predicted_prior_us,predicted_fitted_us\n";
  for (const auto& p : points)
    csv += fmt::format("\"{}\",{},{:.3f},{:.3f},{:.3f}\n", p.label, p.curve, p.measured * 1e6,
                       validate::predicted_seconds(p, gpu, before) * 1e6,
                       validate::predicted_seconds(p, gpu, after) * 1e6);
  return csv;
}

void run_calibrate_cost(const CalibrateCostOptions& o) {
  util::check_output_path(o.output);
  if (!o.points_csv.empty()) util::check_output_path(o.points_csv);
  const auto& device = replay_device(o.device, "validate calibrate-cost");
  if (o.hw.empty() && device.system_file.empty())
    throw ConfigError(fmt::format(
        "validate calibrate-cost --device {}: give --hw, a system whose gpu is the GPU measured (e.g. "
        "configs/hw/dgx-h100.yaml): its peak FLOP/s and bandwidth are what the curves are fitted against",
        device.name));
  const std::string hw = o.hw.empty() ? util::find_data_file(device.system_file).string() : o.hw;
  const auto topo = hw::load_system(hw);
  const auto& gpu = topo.gpu();
  if (auto why = validate::pricing_mismatch(device, gpu, "--hw " + hw); !why.empty()) throw ConfigError(why);
  const auto suite = validate::calibration_suite(o.quick, device.large_kernels);
  const std::string where = device.description();
  std::cerr << fmt::format(
      "timing {} microbenchmarks in {} round(s) on {} with {}; device {} of {}: {} fp32, {}\n", suite.size(),
      o.rounds, device.where, where, gpu.name, hw, fmt::format("{:.1f} GFLOP/s", gpu.peak_fp32 / 1e9),
      units::format_bandwidth(gpu.hbm_bandwidth));
  validate::MeasureOptions mo;
  mo.timing = {.warmup = o.warmup, .repeat = o.repeat, .seed = static_cast<std::uint64_t>(o.seed)};
  mo.target_seconds = o.target_seconds;
  mo.rounds = o.rounds;
  mo.progress = [](std::size_t done, std::size_t total, const validate::CalibrationPoint& p) {
    std::cerr << fmt::format("[{:>3}/{}] {:<44} {}\n", done, total, p.label,
                             units::format_duration(p.measured));
  };
  const auto points = validate::measure_suite(suite, mo, device);
  auto result = validate::fit_cost_params(points, gpu, o.min_points);

  std::cout << fmt::format("{:<16} {:>6} {:>10} {:>10} {:>10}   {}\n", "fitted", "points", "prior", "fitted",
                           "worst", "compute max / half, memory max / half");
  for (const auto& f : result.fits)
    std::cout << fmt::format("{:<16} {:>6} {:>9.1f}% {:>9.1f}% {:>9.1f}%   {:.3f} / {}, {:.3f} / {}\n",
                             (f.is_kind ? "kind " : "") + f.name, f.points, 100 * f.median_abs_error_before,
                             100 * f.median_abs_error_after, 100 * f.max_abs_error_after,
                             f.fitted.compute.max, units::format_duration(f.fitted.compute.half_seconds),
                             f.fitted.memory.max, units::format_duration(f.fitted.memory.half_seconds));
  std::cout << "(median and worst |predicted/measured - 1| over each family's microbenchmarks)\n";

  result.params.fit.update({{"command", "strata validate calibrate-cost"},
                            {"system", hw},
                            {"quick", o.quick},
                            {"replay_device", std::string(device.name)},
                            {"kernels", where}});
  models::save_cost_params(o.output, result.params);
  if (!o.points_csv.empty())
    util::write_file_atomically(
        o.points_csv, points_csv(points, gpu, models::RooflineParams::defaults(), result.params.roofline));
  std::cout << fmt::format(
      "wrote {}; use it with --cost-params {} --hw {} (model sim, optimize, validate "
      "graphs, validate profile)\n",
      o.output, o.output, hw);
}

}  // namespace

void add_validate_calibrate_cost_command(CLI::App& validate) {
  auto o = std::make_shared<CalibrateCostOptions>();
  auto* cmd = validate.add_subcommand(
      "calibrate-cost",
      "Fit the cost model's efficiency curves (per operator and per operator kind) to microbenchmarks timed\n"
      "on this machine's CPU with oneDNN or its GPU with cuBLAS/cuDNN: synthetic shapes, never the models "
      "it\n"
      "is then checked on");
  add_replay_device_option(*cmd, o->device);
  cmd->add_option(
      "--hw", o->hw,
      "System YAML of the device being calibrated: --device cpu: gpu: host-cpu, its peak FLOP/s and "
      "bandwidth ideally measured by `strata validate host` (default configs/validate/host-cpu.yaml); "
      "--device cuda: a system whose gpu is the GPU measured (required)");
  cmd->add_flag("--quick", o->quick, "About a tenth of the microbenchmarks (tests, CI)");
  add_int_option(*cmd, "--repeat", o->repeat, {3, 100000},
                 "Most timed runs per microbenchmark (median kept)");
  add_int_option(*cmd, "--warmup", o->warmup, {0, 100000}, "Untimed runs before them");
  add_int_option(*cmd, "--rounds", o->rounds, {1, 100},
                 "Passes over the whole suite; each microbenchmark keeps its smallest round median (a slow "
                 "period of a shared machine disturbs one round, not all)");
  add_real_option(*cmd, "--target-seconds", o->target_seconds, 0.001, 60,
                  "Fewer repetitions (at least 3) for benchmarks slower than this per benchmark");
  add_int_option(*cmd, "--min-points", o->min_points, {2, 1000},
                 "Operators with fewer microbenchmarks use their kind's fitted curves");
  add_int_option(*cmd, "--seed", o->seed, kSeedRange, "Seed of the pseudo-random inputs");
  cmd->add_option("--points-csv", o->points_csv,
                  "Also write every microbenchmark: measured, predicted with the priors and with the fit");
  cmd->add_option("-o,--output", o->output, "Cost parameters (JSON) to write")->required();
  cmd->callback([o] { run_calibrate_cost(*o); });
}

}  // namespace strata::cli
