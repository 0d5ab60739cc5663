#include "experiments/cli_optimize_eqsat.h"

#include <stdexcept>

#include <fmt/format.h>

#include "experiments/cli_options.h"

#include "experiments/optimize_report.h"
#include "experiments/optimizer_compare.h"
#include "models/onnx/onnx.h"
#include "search/subst/output_check.h"
#include "search/subst/weight_folding.h"

namespace strata::cli {
namespace {

namespace ss = search::subst;
namespace ex = experiments;

void print_eqsat(const ss::EqsatResult& r, double min_gain) {
  fmt::print(
      "equality saturation: {} iterations, stopped by {}; e-graph {} e-nodes, {} e-classes; {:.2f} s\n",
      r.iterations.size(), ss::stop_reason_name(r.stop), r.nodes, r.classes, r.saturation_seconds);
  for (std::size_t i = 0; i < r.iterations.size(); ++i) {
    const auto& it = r.iterations[i];
    fmt::print(
        "  iteration {}: {} unions ({} multi-root, {} multi-root matches skipped as cyclic), {} e-nodes, "
        "{:.2f} s\n",
        i + 1, it.applied, it.multi_applied, it.multi_skipped_cycles, it.nodes, it.seconds);
  }
  fmt::print("extraction: {}{} ({:.2f} s)\n", ss::extraction_name(r.extraction),
             r.extraction_note.empty() ? "" : ": " + r.extraction_note, r.extraction_seconds);
  fmt::print("predicted time before: {:.4f} ms\n", r.cost_before * 1e3);
  fmt::print("predicted time after:  {:.4f} ms ({:.2f}x), {} nodes\n", r.cost_after * 1e3,
             r.cost_after > 0 ? r.cost_before / r.cost_after : 0.0, r.graph.nodes().size());
  if (r.declined_cost) fmt::print("{}\n", ss::declined_note(r.cost_before, r.declined_cost, min_gain));
  fmt::print("rules that changed the e-graph ({}):", r.rule_applications.size());
  for (const auto& [name, n] : r.rule_applications) fmt::print(" {}x{}", name, n);
  fmt::print("\n");
}

}  // namespace

void add_eqsat_options(CLI::App& cmd, EqsatCli& o) {
  cmd.add_option("--optimizer", o.optimizer,
                 "backtrack (TASO's search), eqsat (equality saturation + extraction) or both (side by side)")
      ->capture_default_str()
      ->check(CLI::IsMember({"backtrack", "eqsat", "both"}));
  add_int_option(cmd, "--eqsat-iterations", o.options.max_iterations, {1, 1000}, "eqsat: iteration limit");
  add_int_option(cmd, "--eqsat-node-limit", o.options.node_limit, {1, 100000000}, "eqsat: e-node limit");
  add_real_option(cmd, "--eqsat-time-limit", o.options.time_limit_s, 0.001, 1e6,
                  "eqsat: saturation time limit, seconds");
  add_int_option(cmd, "--eqsat-multi-iterations", o.options.multi_iterations, {0, 1000},
                 "eqsat: apply multi-root rules in the first K iterations (Tensat's k_multi)");
  cmd.add_option("--extraction", o.extraction, "eqsat: ilp (Z3, shared nodes counted once) or greedy")
      ->capture_default_str()
      ->check(CLI::IsMember({"ilp", "greedy"}));
  add_real_option(cmd, "--ilp-time-limit", o.options.ilp_time_limit_s, 0.001, 1e6,
                  "eqsat: ILP time limit in seconds; greedy extraction is used past it");
}

void run_eqsat_optimize(const EqsatCli& o, const models::Graph& g, std::span<const ss::Rule> rules,
                        const models::CostModel& cost, const ss::OptimizerOptions& backtrack,
                        const std::string& output, bool check, std::uint64_t seed) {
  ss::EqsatOptions eo = o.options;
  eo.min_gain = backtrack.min_gain;  // one --min-gain for both optimizers
  eo.extraction = o.extraction == "greedy" ? ss::Extraction::kGreedy : ss::Extraction::kIlp;
  eo.progress = [](std::string_view line) { fmt::print(stderr, "{}\n", line); };
  const auto er = ss::eqsat_optimize(g, rules, cost, eo);
  print_eqsat(er, eo.min_gain);
  models::Graph best = er.graph;
  std::string best_name = "eqsat";
  if (o.optimizer == "both") {
    const auto br = ss::optimize(g, rules, cost, backtrack);
    if (br.declined_cost)
      fmt::print("backtrack: {}\n", ss::declined_note(br.cost_before, br.declined_cost, backtrack.min_gain));
    const auto b = ex::outcome_of(g, br, backtrack);
    const auto e = ex::outcome_of(g, er);
    fmt::print("\n{:<11} {:>12} {:>12} {:>8} {:>10} {:>7}  {}\n", "optimizer", "before (ms)", "after (ms)",
               "speedup", "time (s)", "nodes", "search / stop / extraction");
    for (const auto* x : {&b, &e})
      fmt::print("{:<11} {:>12.4f} {:>12.4f} {:>7.3f}x {:>10.2f} {:>7}  {}; {}{}\n", x->optimizer,
                 x->cost_before * 1e3, x->cost_after * 1e3, x->speedup(), x->seconds, x->nodes_after,
                 x->search, x->stop, x->extraction.empty() ? "" : "; " + x->extraction);
    if (!backtrack.xfers.empty())
      fmt::print(
          "note: the backtracking search also applied {} hand-written transformation kinds (--xfers) that "
          "eqsat does not have; --xfers none compares on the rules alone\n",
          backtrack.xfers.size());
    fmt::print("eqsat {} the backtracking cost ({:+.4f} ms) in {:.2f}x its time\n",
               e.cost_after <= b.cost_after * (1 + 1e-9) ? "reaches" : "does not reach",
               (e.cost_after - b.cost_after) * 1e3, b.seconds > 0 ? e.seconds / b.seconds : 0.0);
    if (check) {
      const auto d = ss::check_same_function(g, br.graph, {.seed = seed});
      fmt::print("check backtrack (reference executor, seed {}): {}\n", seed, d.verdict());
      if (!d.pass())
        throw std::runtime_error("check failed: the backtracking result computes a different function");
    }
    if (br.cost_after < er.cost_after) {
      best = br.graph;
      best_name = "backtrack";
    }
  }
  if (check) {
    const auto d = ss::check_same_function(g, er.graph, {.seed = seed});
    fmt::print("check eqsat (reference executor, seed {}): {}\n", seed, d.verdict());
    if (!d.pass()) throw std::runtime_error("check failed: the eqsat result computes a different function");
  }
  if (!output.empty()) {
    experiments::export_optimized(best, output);
    fmt::print("wrote {} ({} result, weight-only nodes folded into parameters)\n", output, best_name);
  }
}

}  // namespace strata::cli
