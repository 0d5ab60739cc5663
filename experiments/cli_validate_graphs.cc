// strata validate graphs: the graph optimizers' candidates predicted by the cost model and replayed for real
// on this machine's CPU or GPU (--device) (validate/graph_check.h, docs/replay.md §2): measured vs
// predicted time, top-k, Spearman, regret, and the measured speedup of the optimizers' choices over the
// original graph.
#include <iostream>

#include <fmt/format.h>

#include "experiments/cli.h"
#include "experiments/cli_options.h"
#include "experiments/cli_validate_replay.h"
#include "experiments/optimize_report.h"
#include "hw/config_error.h"
#include "hw/system_loader.h"
#include "models/cost/cost_params.h"
#include "search/subst/xfers.h"
#include "util/atomic_file.h"
#include "util/path.h"
#include "validate/graph_check.h"

namespace strata::cli {
namespace {

namespace ss = search::subst;

struct GraphsOptions : ReplayModelOptions {
  std::string hw = "configs/validate/host-cpu.yaml", rules, output, cost_params;
  std::int64_t seed = 1;
  int sample = 5, path_steps = 16, repeat = 3, node_repeat = 10, warmup = 2, budget = 1000;
  double alpha = 1.05, tolerance = 1e-3;
  double min_gain_percent = 100 * ss::kDefaultMinGain;
};

std::string csv_field(const std::string& s) {
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

void print_report(const validate::GraphCheckReport& r, const std::string& output) {
  std::cout << fmt::format("{:<34} {:>6} {:>13} {:>13} {:>8} {:>8} {:>13}  {}\n", "candidate", "nodes",
                           "predicted ms", "whole ms", "spread", "error", "node sum ms",
                           "equivalent (max rel. error)");
  std::string csv =
      "candidate,nodes,predicted_ms,measured_ms,spread,error,node_sum_ms,equivalent,max_rel_error,runs_ms,"
      "node_sum_runs_ms,how\n";
  const auto ms_list = [](const std::vector<double>& v) {
    std::string out;
    for (double x : v) out += fmt::format("{}{:.4f}", out.empty() ? "" : " ", x * 1e3);
    return out;
  };
  for (const auto& row : r.rows) {
    const double err = row.measured() > 0 ? row.predicted / row.measured() - 1 : 0;
    std::cout << fmt::format("{:<34} {:>6} {:>13.4f} {:>13.4f} {:>7.1f}% {:>+7.0f}% {:>13.4f}  {} ({:.1e})\n",
                             row.name, row.nodes, row.predicted * 1e3, row.measured() * 1e3,
                             100 * row.spread(), 100 * err, row.node_sum() * 1e3,
                             row.equivalent ? "yes" : "NO: BUG, not ranked", row.max_rel_error);
    csv += fmt::format("{},{},{},{},{},{:.4f},{:.6f},{},{:.3g},{},{},{}\n", csv_field(row.name), row.nodes,
                       row.predicted * 1e3, row.measured() * 1e3, row.spread(), err, row.node_sum() * 1e3,
                       row.equivalent ? 1 : 0, row.max_rel_error, ms_list(row.measured_runs),
                       ms_list(row.node_sum_runs), csv_field(row.how));
  }
  std::cout << fmt::format(
      "ranked {} candidates by whole-graph time; noise (median spread of the repeats) {:.1f}%, the top-k "
      "tolerance\n"
      "top-1 {} (without the tolerance: {}), top-3 {}, top-5 {}; Spearman {:.3f}; regret {:.3f}; |error| "
      "mean {:.0f}%, median {:.0f}%, "
      "max {:.0f}% (mean signed {:+.0f}%)\n",
      r.ranked, 100 * r.noise, r.top1 ? "hit" : "miss", r.top1_exact ? "hit" : "miss",
      r.top3 ? "hit" : "miss", r.top5 ? "hit" : "miss", r.spearman, r.regret, 100 * r.errors.mean_abs,
      100 * r.errors.median_abs, 100 * r.errors.max_abs, 100 * r.errors.mean);
  for (auto [label, idx, speedup, slower] :
       {std::tuple{"backtrack", r.backtrack, r.backtrack_speedup, r.backtrack_slower},
        std::tuple{"eqsat", r.eqsat, r.eqsat_speedup, r.eqsat_slower}})
    std::cout << fmt::format(
        "{} choice ({}): measured speedup over the original {:.3f}x (sum of node medians {:.3f}x, predicted "
        "{:.3f}x){}\n",
        label, r.rows[idx].name, speedup,
        r.rows[idx].node_sum() > 0 ? r.rows[r.original].node_sum() / r.rows[idx].node_sum() : 0.0,
        r.rows[idx].predicted > 0 ? r.rows[r.original].predicted / r.rows[idx].predicted : 0.0,
        slower ? "; SLOWER than the original beyond the noise" : "");
  if (!output.empty()) {
    util::write_file_atomically(output, csv);
    std::cout << fmt::format("wrote {}\n", output);
  }
}

void run_graphs(const GraphsOptions& o) {
  if (!o.output.empty()) util::check_output_path(o.output);
  const auto topo = hw::load_system(util::find_data_file(o.hw).string());
  const auto& device = replay_device(o, "validate graphs");
  const auto g = build_replay_model(o);
  const auto rules =
      ss::load_rules(o.rules.empty() ? util::find_data_file(experiments::kDefaultRules).string() : o.rules,
                     ss::RuleFileFormat::kAutomatic, ss::TasoShapes::kUnknown);
  const models::CostModel cost(topo.gpu(), models::roofline_params_for(o.cost_params, topo.gpu().name));
  validate::CandidateOptions co;
  co.backtrack.alpha = o.alpha;
  co.backtrack.budget = o.budget;
  co.backtrack.min_gain = co.eqsat.min_gain = o.min_gain_percent / 100;
  co.backtrack.xfers = ss::make_xfers({});
  co.sample = o.sample;
  co.max_path_steps = o.path_steps;
  co.seed = static_cast<std::uint64_t>(o.seed);
  std::cerr << fmt::format("{} ({} nodes), {} rules, device {}; replayed on {}: {}\n", g.name(),
                           g.nodes().size(), rules.size(), topo.gpu().name, device.name,
                           device.description());
  const auto set = validate::optimizer_candidates(g, rules, cost, co);
  for (const auto& line : set.declined) std::cerr << line << "\n";
  validate::CandidateCheckOptions check;
  check.timing = {.warmup = o.warmup, .repeat = o.node_repeat, .seed = 0};
  check.repeat = o.repeat;
  check.tolerance = o.tolerance;
  check.device = &device;
  check.log = [](std::string_view line) { std::cerr << line << "\n"; };
  const auto report = validate::check_candidates(set, cost, check);
  std::cout << fmt::format(
      "model {}: {} candidates; predicted by the cost model on {} ({}), measured (weight-only nodes folded) "
      "as the whole graph's time (median of {} passes after 1 + {} untimed ones; ranked) and as the sum of "
      "node medians ({} warm-up + {} timed runs per distinct operator instance), {} repeats\n",
      g.name(), report.rows.size(), topo.gpu().name, o.dtype, o.node_repeat, o.warmup, o.warmup,
      o.node_repeat, o.repeat);
  print_report(report, o.output);
  if (report.ranked != static_cast<int>(report.rows.size()))
    throw std::runtime_error(
        "a candidate computes a different function than the original (a bug; see above)");
}

}  // namespace

void add_validate_graphs_command(CLI::App& validate) {
  auto o = std::make_shared<GraphsOptions>();
  auto* cmd = validate.add_subcommand(
      "graphs",
      "Replay the graph optimizers' candidates (original, backtracking path and result, eqsat result, a "
      "seeded\n"
      "sample of one-rewrite graphs) on the CPU (or the GPU: --device cuda) and compare measured with "
      "predicted "
      "times");
  add_replay_model_options(*cmd, *o);
  cmd->add_option("--hw", o->hw, "System YAML whose GPU entry prices the operators")->capture_default_str();
  add_cost_params_option(*cmd, o->cost_params);
  cmd->add_option("--rules", o->rules, "Rule file (default: configs/subst/taso_shipped_verified.rules)");
  add_real_option(*cmd, "--alpha", o->alpha, 1.0, 10.0, "Backtracking search: relaxation");
  add_int_option(*cmd, "--budget", o->budget, {1, 100000000}, "Backtracking search: graphs expanded");
  add_min_gain_option(*cmd, o->min_gain_percent);
  add_int_option(*cmd, "--sample", o->sample, {0, 100000}, "Graphs one rewrite away from the original");
  add_int_option(*cmd, "--path-steps", o->path_steps, {0, 100000},
                 "Intermediate graphs of the backtracking path measured, evenly spaced (0: all)");
  add_int_option(*cmd, "--seed", o->seed, kSeedRange, "Seed of the sample's draw");
  add_int_option(*cmd, "--repeat", o->repeat, {1, 1000}, "Measurements of every candidate (interleaved)");
  add_int_option(*cmd, "--node-repeat", o->node_repeat, {1, 100000},
                 "Timed passes of the whole graph, and timed runs per operator instance, in one measurement "
                 "(median kept)");
  add_int_option(*cmd, "--warmup", o->warmup, {0, 100000},
                 "Untimed passes / runs per operator instance before them");
  auto* tolerance =
      add_real_option(*cmd, "--tolerance", o->tolerance, 0, 1,
                      "Equivalence: largest max |difference| / max |output| of the replayed outputs (default "
                      "1e-3; with --dtype bf16, 1/32: a rewrite moves where bf16 rounds, each rounding up to "
                      "2^-8 relative)");
  cmd->add_option("-o,--output", o->output, "CSV of the candidate table");
  cmd->callback([o, tolerance] {
    if (o->dtype == "bf16" && tolerance->count() == 0) o->tolerance = 1.0 / 32;
    run_graphs(*o);
  });
}

}  // namespace strata::cli
