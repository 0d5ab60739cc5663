// strata validate nccl-tests: a measured nccl-tests table (the text all_reduce_perf and its siblings print)
// beside what strata predicts for the same ranks and sizes, with the error of the bus bandwidth per size and
// its mean by size band, the figure issue 13's accuracy goal is stated in (validate/nccl_tests_log.h).
#include <algorithm>
#include <filesystem>
#include <iostream>

#include <fmt/format.h>

#include "experiments/cli.h"
#include "experiments/cli_options.h"
#include "experiments/experiment.h"
#include "hw/system_loader.h"
#include "hw/units.h"
#include "sim/collective_runner.h"
#include "util/error.h"
#include "util/file.h"
#include "validate/nccl_tests_log.h"

namespace strata::cli {
namespace {

struct NcclTestsOptions {
  std::string hw, log, op, algo = "auto", place = "out", output;
  int nodes = 0;
  bool no_plots = false;
};

std::string percent(double e) {
  return fmt::format("{:+.1f}%", 100 * e);
}

// The table on standard output and in summary.md: one row per size, then the bands.
std::string comparison_table(const validate::NcclTestsComparison& c) {
  std::string out = fmt::format("# {:>12}  {:>12} {:>9}  {:>12} {:>9}  {:<10} {:<6} {:>8}\n", "size (B)",
                                "measured us", "busbw", "strata us", "busbw", "algorithm", "proto", "error");
  for (const auto& p : c.points)
    out +=
        fmt::format("  {:>12}  {:>12.2f} {:>9.2f}  {:>12.2f} {:>9.2f}  {:<10} {:<6} {:>8}\n", p.bytes,
                    p.measured_s * 1e6, p.measured_busbw / 1e9, p.simulated_s * 1e6, p.simulated_busbw / 1e9,
                    p.algorithm, sim::protocol_name(p.protocol), percent(p.busbw_error()));
  out +=
      "# busbw in GB/s; error = strata's busbw / measured busbw - 1 (positive: strata predicts more "
      "bandwidth "
      "than was measured)\n";
  for (const auto& b : c.bands)
    out += b.points == 0 ? fmt::format("# {:<15} no sizes\n", b.name)
                         : fmt::format("# {:<15} mean |error| {:.1f}%, mean error {}, worst {} ({} sizes)\n",
                                       b.name, 100 * b.mean_abs, percent(b.mean), percent(b.worst), b.points);
  return out;
}

void write_results(const NcclTestsOptions& o, const std::string& header,
                   const validate::NcclTestsComparison& c) {
  experiments::ResultsDir out(o.output);
  std::string csv =
      "bytes,measured_time_us,measured_busbw_GBps,strata_time_us,strata_busbw_GBps,strata_algorithm,"
      "strata_protocol,busbw_error\n";
  // Long form for the busbw figure (experiments/plots/collective_sweep.py): one curve measured, one strata.
  std::string curves = "system,algorithm_requested,bytes,busbw_GBps\n";
  for (const auto& p : c.points) {
    csv += fmt::format("{},{:.3f},{:.3f},{:.3f},{:.3f},{},{},{:.5f}\n", p.bytes, p.measured_s * 1e6,
                       p.measured_busbw / 1e9, p.simulated_s * 1e6, p.simulated_busbw / 1e9, p.algorithm,
                       sim::protocol_name(p.protocol), p.busbw_error());
    curves += fmt::format("measured,nccl-tests,{},{:.3f}\n", p.bytes, p.measured_busbw / 1e9);
    curves += fmt::format("strata,{},{},{:.3f}\n", o.algo, p.bytes, p.simulated_busbw / 1e9);
  }
  out.write("comparison.csv", csv);
  out.write("curves.csv", curves);
  std::string md =
      fmt::format("# nccl-tests against strata\n\n{}\n\n```text\n{}```\n\n", header, comparison_table(c));
  md +=
      "Files: `comparison.csv` (every size), `curves.csv` and `busbw.png` (measured and simulated bus "
      "bandwidth "
      "against size).\n";
  experiments::draw_figures(
      md, experiments::RunOptions{"", !o.no_plots}, "collective_sweep.py",
      {out.staged("curves.csv").string(), out.staged("busbw.png").string(),
       std::filesystem::path(o.log).filename().string(), "measured (nccl-tests) and strata's bus bandwidth"});
  out.write("summary.md", md);
  std::cout << "written: " << out.commit().string() << "\n";
}

void run_nccl_tests(const NcclTestsOptions& o) {
  if (o.place != "out" && o.place != "in")
    throw util::InputError(fmt::format("--place '{}': expected out or in", o.place));
  if (!sim::is_tuner_choice(o.algo) && !sim::AlgorithmRegistry::instance().find(o.algo))
    throw util::InputError(fmt::format("--algo '{}': expected auto, best or one of: {}", o.algo,
                                       sim::AlgorithmRegistry::instance().names()));
  const auto log =
      validate::parse_nccl_tests_log(util::read_file<util::InputError>(o.log, "an nccl-tests log"), o.log);
  // The collective: the one the log names, or --op where it names none.
  std::optional<sim::CollectiveOp> op;
  if (!o.op.empty()) {
    op = sim::parse_op(o.op);
    if (!op) throw util::InputError(fmt::format("--op '{}': expected one of: {}", o.op, sim::kOpNames));
  }
  if (const auto named = validate::nccl_tests_op(log.program)) {
    if (op && *op != *named)
      throw util::InputError(fmt::format("--op {}: {} ran {} ('# Collective test starting: {}')", o.op, o.log,
                                         sim::op_name(*named), log.program));
    op = named;
  }
  if (!op)
    throw util::InputError(
        fmt::format("{} does not name a collective nccl-tests runs ({}); give --op", o.log,
                    log.program.empty() ? "no '# Collective test starting:' line" : log.program));
  // The system: as many nodes as the log has hosts, unless --nodes says otherwise.
  std::vector<std::string> hosts;
  for (const auto& r : log.ranks)
    if (std::find(hosts.begin(), hosts.end(), r.host) == hosts.end()) hosts.push_back(r.host);
  hw::LoadOptions load;
  if (o.nodes > 0)
    load.nodes = o.nodes;
  else if (!hosts.empty())
    load.nodes = static_cast<int>(hosts.size());
  const hw::Topology topo = hw::load_system(o.hw, load);
  std::vector<hw::Rank> group;
  if (log.ranks.empty()) {
    for (hw::Rank r = 0; r < topo.num_gpus(); ++r) group.push_back(r);
  } else {
    group = validate::gpus_of_ranks(topo, log.ranks);
  }
  const std::string header = fmt::format(
      "{} ({}{}), {} ranks{}, {} results; strata --algo {} on {} ({} node(s) x {} GPUs)", o.log,
      log.program.empty() ? std::string(sim::op_name(*op)) : log.program,
      log.nccl.empty() ? "" : ", NCCL " + log.nccl, group.size(),
      hosts.empty() ? " (the log names no ranks: every GPU of the system)"
                    : fmt::format(" on {} host(s)", hosts.size()),
      o.place == "in" ? "in-place" : "out-of-place", o.algo, topo.name(), topo.nodes(), topo.gpus_per_node());
  std::cerr << fmt::format("simulating {} sizes of {}\n", log.rows.size(), sim::op_name(*op));
  const auto c = validate::compare_nccl_tests(topo, *op, group, log.rows, o.place == "in", o.algo);
  if (c.points.empty())
    throw util::InputError(fmt::format("{}: no row has a size of at least 1 B and a {} time", o.log,
                                       o.place == "in" ? "in-place" : "out-of-place"));
  std::cout << "# strata validate nccl-tests: " << header << "\n" << comparison_table(c);
  if (!o.output.empty()) write_results(o, header, c);
}

}  // namespace

void add_validate_nccl_tests_command(CLI::App& validate) {
  auto o = std::make_shared<NcclTestsOptions>();
  auto* cmd = validate.add_subcommand(
      "nccl-tests",
      "Compare a measured nccl-tests table (the text all_reduce_perf and the other *_perf programs print)\n"
      "with strata's prediction for the same ranks (hosts as nodes, devices as GPUs) and sizes: bus\n"
      "bandwidth per size, its error, and the mean |error| below 1 MiB, from 1 to 64 MiB and from 64 MiB\n"
      "(docs/validate.md). Nothing is fitted; optionally writes CSV, summary.md and a figure");
  cmd->add_option("--hw", o->hw, "System YAML of the nodes the log ran on")->required();
  cmd->add_option("--log", o->log, "nccl-tests output (stdout of e.g. mpirun ... all_reduce_perf -b 8 -e 8G)")
      ->required();
  add_int_option(*cmd, "--nodes", o->nodes, {0, 1 << 20},
                 "Nodes of the system (0: as many as the log has hosts, else the file's)");
  cmd->add_option("--op", o->op,
                  fmt::format("Collective, where the log does not name its program: {}", sim::kOpNames));
  cmd->add_option("--algo", o->algo,
                  fmt::format("strata's algorithm: {}, or a registered one", sim::kTunerChoicesHelp))
      ->capture_default_str();
  cmd->add_option("--place", o->place, "Which measured time: out (out-of-place) or in (in-place)")
      ->capture_default_str();
  cmd->add_option(
      "--output", o->output,
      "Results folder to write (comparison.csv, curves.csv, summary.md, busbw.png), complete or absent");
  cmd->add_flag("--no-plots", o->no_plots, "Write no figure");
  cmd->callback([o] { run_nccl_tests(*o); });
}

}  // namespace strata::cli
