// strata validate profile: every distinct operator instance of a model timed on this machine's CPU with
// oneDNN kernels (validate/cpu_replay.h) or on its GPU with cuBLAS/cuDNN (--device cuda,
// validate/cuda_replay.h), written as a profile database for `strata model sim --profile` (docs/replay.md
// §1 and §5).
#include <iostream>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "experiments/cli.h"
#include "experiments/cli_options.h"
#include "experiments/cli_validate_replay.h"
#include "hw/config_error.h"
#include "hw/system_loader.h"
#include "hw/units.h"
#include "models/cost/cost_params.h"
#include "util/atomic_file.h"
#include "validate/cost_calibration.h"
#include "validate/cpu_replay.h"
#include "validate/stats.h"

namespace strata::cli {
namespace {

struct ProfileOptions : ReplayModelOptions {
  std::string output, hw, cost_params, errors_csv, profile_device;
  std::int64_t seed = 0;
  int repeat = 20, warmup = 3, rounds = 3;
};

// The cost model of `o.hw` (with `o.cost_params`) against the measured times: per operator and overall.
void report_cost_model_errors(const ProfileOptions& o, const models::Graph& g,
                              const validate::CpuProfile& p) {
  const auto topo = hw::load_system(o.hw);
  const models::CostModel cost(topo.gpu(), models::roofline_params_for(o.cost_params, topo.gpu().name));
  const auto rows = validate::compare_with_cost_model(g, p, cost);
  std::map<std::string, std::vector<const validate::OpError*>> by_op;
  std::vector<double> predicted, measured;
  double sum_predicted = 0, sum_measured = 0;
  for (const auto& r : rows) {
    by_op[r.op].push_back(&r);
    predicted.push_back(r.predicted);
    measured.push_back(r.measured);
    sum_predicted += r.predicted * r.instances;
    sum_measured += r.measured * r.instances;
  }
  std::cout << fmt::format(
      "\n# cost model of {} ({}) against the measurements, per distinct instance\n", o.hw,
      o.cost_params.empty() ? "built-in efficiencies" : "cost parameters " + o.cost_params);
  std::cout << fmt::format("{:<16} {:>8} {:>12} {:>12} {:>10} {:>10}\n", "operator", "distinct", "measured",
                           "predicted", "median|e|", "worst|e|");
  for (const auto& [op, group] : by_op) {
    std::vector<double> pr, me;
    double sp = 0, sm = 0;
    for (const auto* r : group) {
      pr.push_back(r->predicted);
      me.push_back(r->measured);
      sp += r->predicted * r->instances;
      sm += r->measured * r->instances;
    }
    const auto e = validate::error_summary(pr, me);
    std::cout << fmt::format("{:<16} {:>8} {:>12} {:>12} {:>9.1f}% {:>9.1f}%\n", op, group.size(),
                             units::format_duration(sm), units::format_duration(sp), 100 * e.median_abs,
                             100 * e.max_abs);
  }
  const auto all = validate::error_summary(predicted, measured);
  std::cout << fmt::format(
      "per-operator error over {} distinct instances: median {:.1f}%, mean {:.1f}% (signed {:+.1f}%), "
      "worst {:.1f}%\nwhole model (nodes in sequence): predicted {} vs measured {} ({:+.1f}%)\n",
      rows.size(), 100 * all.median_abs, 100 * all.mean_abs, 100 * all.mean, 100 * all.max_abs,
      units::format_duration(sum_predicted), units::format_duration(sum_measured),
      100 * (sum_predicted / sum_measured - 1));
  if (!o.errors_csv.empty()) {
    std::string csv = "op,node,instances,measured_us,predicted_us,error\n";
    for (const auto& r : rows)
      csv += fmt::format("{},\"{}\",{},{:.3f},{:.3f},{:.4f}\n", r.op, r.node, r.instances, r.measured * 1e6,
                         r.predicted * 1e6, r.error());
    util::write_file_atomically(o.errors_csv, csv);
    std::cout << fmt::format("wrote {}\n", o.errors_csv);
  }
}

// Per operator: instances, total measured time, and which backend ran them.
void print_profile(const ProfileOptions& o, const models::Graph& g, const validate::CpuProfile& p,
                   const validate::ReplayDevice& device, const std::string& device_name) {
  struct Row {
    int instances = 0, fast = 0, reference = 0;
    double seconds = 0;
    std::set<std::string> implementations;  // the library's, as it names them
  };
  std::map<std::string, Row> by_op;
  double total = 0;
  int distinct_fast = 0;
  const auto fast = [](const validate::NodeTiming& t) {
    return t.backend.backend != validate::CpuBackend::kReference;
  };
  for (const auto& op : p.ops) {
    auto& r = by_op[std::string(g.node(op.node).op->name)];
    r.instances += op.instances;
    (fast(op.timing) ? r.fast : r.reference) += op.instances;
    if (fast(op.timing)) {
      ++distinct_fast;
      r.implementations.insert(op.timing.backend.detail);
    }
    r.seconds += op.timing.median_seconds * op.instances;
    total += op.timing.median_seconds * op.instances;
  }
  std::cout << fmt::format(
      "# {}: {} distinct operator instances ({} on {}, {} on the reference kernel), "
      "{} views untimed\n",
      g.name(), p.ops.size(), distinct_fast, device.kernels, p.ops.size() - distinct_fast, p.view_nodes);
  const std::string lib(device.library);
  std::cout << fmt::format("{:<16} {:>9} {:>7} {:>9} {:>12} {:>7}  {}\n", "operator", "instances", lib,
                           "reference", "time", "share", lib + " implementations");
  for (const auto& [name, r] : by_op)
    std::cout << fmt::format("{:<16} {:>9} {:>7} {:>9} {:>12} {:>6.1f}%  {}\n", name, r.instances, r.fast,
                             r.reference, units::format_duration(r.seconds), 100 * r.seconds / total,
                             fmt::join(r.implementations, ", "));
  std::cout << fmt::format("sum of node medians: {} (nodes one after another)\n",
                           units::format_duration(total));
  if (p.rounds > 1 && !p.ops.empty()) {
    std::vector<double> spreads;
    const validate::ProfiledOp* widest = nullptr;
    for (const auto& op : p.ops) {
      spreads.push_back(op.round_spread);
      if (!widest || op.round_spread > widest->round_spread) widest = &op;
    }
    std::cout << fmt::format(
        "{} rounds, each instance's smallest round median kept; its slowest round was a median {:.1f}% "
        "slower (most: {:.1f}%, {} {})\n",
        p.rounds, 100 * validate::median(spreads), 100 * widest->round_spread, g.node(widest->node).op->name,
        g.node(widest->node).name);
  }
  for (const auto& op : p.ops)
    if (op.timing.backend.backend == validate::CpuBackend::kOneDnn &&
        op.timing.backend.detail.find("ref:") != std::string::npos)
      std::cout << fmt::format("oneDNN's reference implementation (slow): {} ({}): {}\n",
                               g.node(op.node).name, g.node(op.node).op->name, op.timing.backend.detail);
  for (const auto& op : p.ops)
    if (op.timing.backend.backend == validate::CpuBackend::kReference)
      std::cout << fmt::format("reference kernel: {} ({}): {}\n", g.node(op.node).name,
                               g.node(op.node).op->name, op.timing.backend.detail);
  const std::string hw = !device.system_file.empty()
                             ? std::string(device.system_file)
                             : fmt::format("SYSTEM.yaml (a system whose gpu is {})", device_name);
  std::cout << fmt::format(
      "wrote {} entries (device {}) to {}; use them with:\n  strata model sim {} --hw "
      "{} --dtype {}{}{} --profile {}\n",
      p.db.size(), device_name, o.output, o.model, hw, o.dtype,
      o.batch ? fmt::format(" --batch {}", o.batch) : "", o.seq ? fmt::format(" --seq {}", o.seq) : "",
      o.output);
}

void run_profile(const ProfileOptions& o) {
  util::check_output_path(o.output);
  if (!o.errors_csv.empty()) util::check_output_path(o.errors_csv);
  if (!o.hw.empty())  // bad system or parameter files are refused before the measurements
    (void)models::roofline_params_for(o.cost_params, hw::load_system(o.hw).gpu().name);
  const auto& device = replay_device(o, "validate profile");
  const auto g = build_replay_model(o);
  const std::string device_name = o.profile_device.empty() ? device.profile_device() : o.profile_device;
  std::cerr << fmt::format(
      "profiling {} ({} nodes) on {} ({}): {} warm-up + {} timed runs per operator instance, median, in {} "
      "round(s), the smallest round median kept\n",
      g.name(), g.nodes().size(), device.where, device.description(), o.warmup, o.repeat, o.rounds);
  std::vector<validate::CpuProfile> rounds;
  for (int round = 0; round < o.rounds; ++round) {
    rounds.push_back(device.profile(
        g, {.warmup = o.warmup, .repeat = o.repeat, .seed = static_cast<std::uint64_t>(o.seed)},
        device_name));
    if (o.rounds > 1) std::cerr << fmt::format("round {}/{} done\n", round + 1, o.rounds);
  }
  const auto p = validate::least_disturbed(rounds);
  p.db.save(o.output);
  print_profile(o, g, p, device, device_name);
  if (!o.hw.empty()) report_cost_model_errors(o, g, p);
}

}  // namespace

void add_validate_profile_command(CLI::App& validate) {
  auto o = std::make_shared<ProfileOptions>();
  auto* cmd = validate.add_subcommand(
      "profile",
      "Time every distinct operator instance of a model on this machine (f32, or bf16 on the CPU; oneDNN\n"
      "kernels on the CPU or cuBLAS/cuDNN on the GPU with --device cuda; the reference kernel where they\n"
      "have none) and write a profile database for `model sim --profile`");
  add_replay_model_options(*cmd, *o);
  add_int_option(*cmd, "--repeat", o->repeat, {1, 100000}, "Timed runs per operator instance (median kept)");
  add_int_option(*cmd, "--warmup", o->warmup, {0, 100000}, "Untimed runs before them");
  add_int_option(*cmd, "--rounds", o->rounds, {1, 100},
                 "Passes over all operator instances, one after another; each instance keeps its smallest "
                 "round median (a slow period of a shared machine disturbs one round, not all)");
  add_int_option(*cmd, "--seed", o->seed, kSeedRange, "Seed of the pseudo-random inputs and weights");
  cmd->add_option("-o,--output", o->output, "Profile database (JSON) to write")->required();
  cmd->add_option(
      "--profile-device", o->profile_device,
      "Device name of the entries (default: host-cpu on the CPU, the GPU's name from "
      "cudaGetDeviceProperties with --device cuda; give the hw catalogue's name, e.g. h100-sxm, for "
      "`model sim --hw` to find them)");
  auto* hw =
      cmd->add_option("--hw", o->hw,
                      "Also compare the cost model of this system (gpu: host-cpu) with the measured times "
                      "per operator");
  add_cost_params_option(*cmd, o->cost_params)->needs(hw);
  cmd->add_option("--errors-csv", o->errors_csv, "With --hw: every distinct instance, measured and predicted")
      ->needs(hw);
  cmd->callback([o] { run_profile(*o); });
}

}  // namespace strata::cli
