// strata validate nccl-tests: a measured nccl-tests table (the text all_reduce_perf and its siblings print)
// beside what strata predicts for the same ranks and sizes, with the error of the bus bandwidth per size and
// its mean by size band, the figure issue 13's accuracy goal is stated in (validate/nccl_tests_log.h; the
// same report for many logs: the `nccl-tests-comparison` experiment kind).
#include <filesystem>
#include <iostream>

#include <fmt/format.h>

#include "experiments/cli.h"
#include "experiments/cli_options.h"
#include "experiments/experiment.h"
#include "experiments/nccl_tests_report.h"
#include "hw/system_loader.h"
#include "sim/collective_runner.h"
#include "util/error.h"
#include "util/file.h"

namespace strata::cli {
namespace {

struct NcclTestsOptions {
  std::string hw, log, op, algo = "auto", place = "out", output;
  int nodes = 0;
  bool no_plots = false;
};

void write_results(const NcclTestsOptions& o, const experiments::NcclTestsCheck& check) {
  experiments::ResultsDir out(o.output);
  const std::string label = std::filesystem::path(o.log).filename().string();
  out.write("comparison.csv", std::string(experiments::kNcclTestsCsvHeader) +
                                  experiments::nccl_tests_csv_rows(label, check.comparison));
  out.write("curves.csv", std::string(experiments::kNcclTestsCurvesHeader) +
                              experiments::nccl_tests_curve_rows(label, o.algo, check.comparison));
  std::string md = fmt::format("# nccl-tests against strata\n\n{}\n\n```text\n{}```\n\n", check.header,
                               experiments::nccl_tests_table(check.comparison));
  md +=
      "Files: `comparison.csv` (every size), `curves.csv` and `busbw.png` (measured and simulated bus "
      "bandwidth against size).\n";
  experiments::draw_figures(md, experiments::RunOptions{"", !o.no_plots}, "collective_sweep.py",
                            {out.staged("curves.csv").string(), out.staged("busbw.png").string(), label,
                             "measured (nccl-tests) and strata's bus bandwidth"});
  out.write("summary.md", md);
  std::cout << "written: " << out.commit().string() << "\n";
}

void run_nccl_tests(const NcclTestsOptions& o) {
  if (o.place != "out" && o.place != "in")
    throw util::InputError(fmt::format("--place '{}': expected out or in", o.place));
  if (const auto why = sim::unknown_algorithm_reason(o.algo); !why.empty())
    throw util::InputError("--algo: " + why);
  const auto log =
      validate::parse_nccl_tests_log(util::read_file<util::InputError>(o.log, "an nccl-tests log"), o.log);
  const sim::CollectiveOp op = validate::nccl_tests_collective(log, o.op, o.log, "--op");
  std::cerr << fmt::format("simulating {} sizes of {}\n", log.rows.size(), sim::op_name(op));
  const hw::Topology topo = hw::load_system(
      o.hw, {validate::nccl_tests_nodes(log, o.nodes > 0 ? std::optional(o.nodes) : std::nullopt)});
  const auto check = experiments::check_nccl_tests(log, o.log, op, topo, o.place == "in", o.algo);
  std::cout << "# strata validate nccl-tests: " << check.header << "\n"
            << experiments::nccl_tests_table(check.comparison);
  if (!o.output.empty()) write_results(o, check);
}

}  // namespace

void add_validate_nccl_tests_command(CLI::App& validate) {
  auto o = std::make_shared<NcclTestsOptions>();
  auto* cmd = validate.add_subcommand(
      "nccl-tests",
      "Compare a measured nccl-tests table (the text all_reduce_perf and the other *_perf programs print)\n"
      "with strata's prediction for the same ranks (hosts as nodes, devices as GPUs) and sizes: bus\n"
      "bandwidth per size, its error, and the mean |error| below 1 MiB, from 1 to 64 MiB and from 64 MiB\n"
      "(docs/validate.md §5.1). Nothing is fitted; optionally writes CSV, summary.md and a figure. Many "
      "logs\n"
      "at once: the nccl-tests-comparison experiment kind");
  cmd->add_option("--hw", o->hw, "System YAML of the nodes the log ran on")->required();
  cmd->add_option(
         "--log", o->log,
         "nccl-tests output (stdout of e.g. mpirun ... all_reduce_perf -b 8 -e 8G), or its JSON report (-J)")
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
