// strata synth: P2-style placement enumeration and reduction-program synthesis, evaluated on the simulator
// (search/reduce, docs/reduce.md).
#include <algorithm>
#include <iostream>
#include <memory>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "experiments/cli.h"
#include "experiments/cli_options.h"
#include "experiments/synth_report.h"
#include "experiments/system_report.h"
#include "hw/config_error.h"
#include "hw/system_loader.h"
#include "hw/units.h"
#include "search/reduce/evaluate.h"
#include "util/parse.h"

namespace strata::cli {
namespace {

namespace rd = search::reduce;

struct SynthOptions {
  std::string hw, axes, reduce = "0", bytes = "4GiB", algo = "ring", format = "table", canonical = "none";
  std::vector<std::string> joint;
  int nodes = 0, top = 10, max_size = 5;
  bool all = false, split_levels = false, lowered = false;
};

std::string ms(double s) {
  return fmt::format("{:.3f}", s * 1e3);
}

// The reduction group of device 0 and how many nodes it spans: a short human form of the placement.
std::string reduction_group_summary(const hw::Topology& topo, const rd::Placement& p,
                                    std::span<const int> reduce) {
  const auto groups = p.groups(reduce);
  const auto& g = groups.front();
  std::vector<int> nodes;
  for (int d : g)
    if (std::find(nodes.begin(), nodes.end(), topo.node_of(d)) == nodes.end())
      nodes.push_back(topo.node_of(d));
  std::vector<std::string> names;
  for (std::size_t i = 0; i < g.size() && i < 4; ++i) names.push_back(rd::device_name(topo.levels(), g[i]));
  if (g.size() > 4) names.push_back("...");
  return fmt::format("{{{}}} {} GPUs / {} node{}", fmt::join(names, ","), g.size(), nodes.size(),
                     nodes.size() > 1 ? "s" : "");
}

// --joint, --format table: placements ranked by the total, and each reduction's own best placement.
void print_joint_table(const SynthOptions& o, const experiments::JointReport& report) {
  const auto& topo = report.topo;
  const auto& axes = report.axes;
  const auto& reductions = report.reductions;
  const auto& joint = report.results;
  std::cout << fmt::format(
      "# joint placement on {} ({} GPUs), axes [{}], algorithm {}: placements ranked by the sum of "
      "each reduction's best program\n",
      topo.name(), topo.num_gpus(), fmt::join(axes, ","), o.algo);
  std::cout << fmt::format("{:>4}  {:<24} {:>12} {:>14}", "rank", "matrix", "total (ms)", "AllReduce (ms)");
  for (const auto& r : reductions) std::cout << fmt::format("  {:>22}", "best " + r.label + " (ms)");
  std::cout << "\n";
  for (std::size_t i = 0; i < joint.size() && (o.top == 0 || static_cast<int>(i) < o.top); ++i) {
    const auto& j = joint[i];
    std::cout << fmt::format("{:>4}  {:<24} {:>12} {:>14}", i + 1, rd::format_matrix(j.matrix),
                             ms(j.total_best_seconds), ms(j.total_baseline_seconds));
    for (const auto& p : j.parts) std::cout << fmt::format("  {:>22}", ms(p.best.seconds));
    std::cout << "\n";
  }
  for (std::size_t r = 0; r < reductions.size(); ++r) {
    auto best_alone = std::min_element(joint.begin(), joint.end(), [&](const auto& a, const auto& b) {
      return a.parts[r].best.seconds < b.parts[r].best.seconds;
    });
    std::cout << fmt::format(
        "# best placement for {} alone: {} (joint total {} ms, {:.2f}x the joint optimum)\n",
        reductions[r].label, rd::format_matrix(best_alone->matrix), ms(best_alone->total_best_seconds),
        best_alone->total_best_seconds / joint.front().total_best_seconds);
  }
}

// --format table: ranked placements, their groups, and optionally lowered and all programs.
void print_synth_table(const SynthOptions& o, const hw::Topology& topo, const rd::PlacementHierarchy& ph,
                       const rd::EvalConfig& cfg, const std::vector<rd::PlacementEval>& results,
                       std::size_t shown, const rd::EvalStats& stats) {
  std::cout << fmt::format(
      "# strata synth: {} ({} GPUs, levels{}), axes [{}], reduce axes [{}], {} per GPU, NCCL {}\n",
      topo.name(), topo.num_gpus(),
      [&] {
        std::string s;
        for (const auto& l : ph.levels) s += fmt::format(" {}x{}", l.name, l.count);
        return s;
      }(),
      fmt::join(cfg.axes, ","), fmt::join(cfg.reduce_axes, ","), units::format_bytes(cfg.bytes_per_device),
      o.algo);
  std::cout << fmt::format(
      "# {} placements x {} algorithm(s); {} distinct synthesis hierarchies; {} simulations "
      "(synthesis {:.3f} s, simulation {:.3f} s wall)\n",
      results.size() / cfg.algorithms.size(), cfg.algorithms.size(), stats.distinct_hierarchies,
      stats.simulations, stats.synthesis_seconds, stats.simulation_seconds);
  std::cout << fmt::format("{:>4}  {:<20} {:<5} {:<36} {:>5} {:>14} {:>12} {:>8}  {}\n", "rank", "matrix",
                           "algo", "reduction group of GPU 0", "progs", "AllReduce (ms)", "best (ms)",
                           "speedup", "best program");
  for (std::size_t i = 0; i < shown; ++i) {
    const auto& e = results[i];
    const rd::Placement pl(ph.levels, cfg.axes, e.matrix);
    std::cout << fmt::format("{:>4}  {:<20} {:<5} {:<36} {:>5} {:>14} {:>12} {:>7.2f}x  {}\n", i + 1,
                             rd::format_matrix(e.matrix), e.algorithm,
                             reduction_group_summary(topo, pl, cfg.reduce_axes), e.num_programs,
                             ms(e.baseline_seconds), ms(e.best.seconds), e.speedup(), e.best.text);
  }
  double lo = results.front().baseline_seconds, hi = lo;
  for (const auto& e : results) {
    lo = std::min(lo, e.baseline_seconds);
    hi = std::max(hi, e.baseline_seconds);
  }
  std::cout << fmt::format("# AllReduce spread across placements: {:.1f}x; best-program spread: {:.1f}x\n",
                           hi / lo, results.back().best.seconds / results.front().best.seconds);
  std::cout << "\n# placements (groups of GPUs per axis):\n";
  std::vector<rd::Matrix> described;
  for (std::size_t i = 0; i < shown; ++i) {
    if (std::find(described.begin(), described.end(), results[i].matrix) != described.end()) continue;
    described.push_back(results[i].matrix);
    std::cout << rd::Placement(ph.levels, cfg.axes, results[i].matrix).describe();
  }
  if (o.lowered) {
    std::cout << "\n# best programs lowered to device groups:\n";
    for (std::size_t i = 0; i < shown; ++i) {
      const auto& e = results[i];
      const rd::Placement pl(ph.levels, cfg.axes, e.matrix);
      const auto h = rd::synthesis_hierarchy(pl, cfg.reduce_axes, ph.hw_level, [&] {
        std::vector<std::string> n;
        for (const auto& l : topo.levels()) n.push_back(l.name);
        return n;
      }());
      const auto lowered = rd::lower(rd::parse_program(e.best.text, h), h,
                                     rd::ReductionLayout(pl, cfg.reduce_axes), cfg.bytes_per_device);
      std::cout << fmt::format("{} {} {}\n{}", rd::format_matrix(e.matrix), e.algorithm, e.best.text,
                               rd::to_string(lowered, topo.levels()));
    }
  }
  if (o.all) {
    for (std::size_t i = 0; i < shown; ++i) {
      const auto& e = results[i];
      std::cout << fmt::format("\n# all {} programs for {} ({}), synthesis hierarchy {}:\n", e.ranked.size(),
                               rd::format_matrix(e.matrix), e.algorithm, e.hierarchy);
      for (std::size_t r = 0; r < e.ranked.size(); ++r)
        std::cout << fmt::format("{:>4}  {:>12} ms  {:>6.2f}x  {}\n", r + 1, ms(e.ranked[r].seconds),
                                 e.baseline_seconds / e.ranked[r].seconds, e.ranked[r].text);
    }
  }
}

void run_synth(const SynthOptions& o) {
  if (o.format != "table" && o.format != "json")
    throw ConfigError(fmt::format("--format: expected table or json, got '{}'", o.format));
  const experiments::SynthQuery q{o.hw,    o.axes, o.reduce,   o.bytes, o.algo,        o.canonical,
                                  o.nodes, o.top,  o.max_size, o.all,   o.split_levels};
  if (!o.joint.empty()) {
    const auto report = experiments::synthesize_joint(q, o.joint);
    if (o.format == "json")
      std::cout << experiments::joint_json(report).dump(2) << "\n";
    else
      print_joint_table(o, report);
    return;
  }
  const auto report = experiments::synthesize(q);
  if (o.format == "json")
    std::cout << experiments::synth_json(report, o.all).dump(2) << "\n";
  else
    print_synth_table(o, report.topo, report.hierarchy, report.config, report.results, report.shown,
                      report.stats);
}

}  // namespace

void add_synth_command(CLI::App& app) {
  auto o = std::make_shared<SynthOptions>();
  auto* cmd = app.add_subcommand("synth",
                                 "Enumerate placements of parallelism axes and synthesize reduction programs "
                                 "(P2), ranked on the simulator");
  cmd->add_option("--hw", o->hw, "System YAML file, e.g. configs/hw/gcp-a100x16.yaml")->required();
  add_int_option(*cmd, "--nodes", o->nodes, {1, hw::limits::kMaxNodes},
                 "Number of nodes (overrides the file)", false);
  cmd->add_option("--axes", o->axes, "Parallelism axis sizes, multiplying to the GPU count, e.g. 4,16")
      ->required();
  cmd->add_option("--reduce", o->reduce,
                  "Reduction axes (indices into --axes), reduced together, e.g. 0 or 0,2")
      ->capture_default_str();
  cmd->add_option("--bytes", o->bytes,
                  "Buffer each GPU reduces, e.g. 4GiB or 1048576: " + std::string(util::kSizeRule))
      ->capture_default_str();
  cmd->add_option("--algo", o->algo,
                  "Algorithm forced on every collective it can run (others use the first eligible, ring): a "
                  "registered name (strata sim algorithms) or both (ring and tree)")
      ->capture_default_str();
  add_int_option(*cmd, "--top", o->top, {0, 1'000'000}, "Show the N fastest placement rows (0 = all)");
  cmd->add_option("--format", o->format, "Output: table or json")->capture_default_str();
  cmd->add_flag("--all", o->all, "Also list every synthesized program with its predicted time");
  cmd->add_flag("--lowered", o->lowered, "Print the best programs lowered to concrete GPU groups");
  add_int_option(*cmd, "--max-size", o->max_size, {1, 8}, "Program size bound (instructions)");
  cmd->add_option("--canonical", o->canonical,
                  std::string("Program canonicalization: ") + std::string(rd::kCanonicalizationNames) +
                      " (docs/reduce.md, 'Program counts')")
      ->capture_default_str();
  cmd->add_flag(
      "--split-levels", o->split_levels,
      "Split non-switched node levels (rings, cube-meshes) into prime sub-levels, so placements also choose "
      "which GPUs of a node form groups");
  cmd->add_option(
      "--joint", o->joint,
      "Joint placement for several reductions: AXES:BYTES, repeatable, e.g. --joint 0:4GiB --joint 1:256MiB "
      "(axes of one reduction joined by '+'); ranks placements by total time");
  cmd->callback([o] { run_synth(*o); });
}

}  // namespace strata::cli
