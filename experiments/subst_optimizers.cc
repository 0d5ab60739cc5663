// The `subst-optimizers` experiment kind (configs/experiments/subst_optimizers.yaml): models x {backtrack,
// eqsat} on the same rules and GPU cost model; results.csv, summary.md, speedup.png and time.png.
#include <algorithm>
#include <cmath>
#include <iostream>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "experiments/experiment.h"
#include "experiments/optimize_report.h"
#include "experiments/optimizer_compare.h"
#include "experiments/side_by_side.h"
#include "models/zoo/zoo.h"
#include "search/subst/rule.h"
#include "search/subst/xfers.h"

namespace strata::experiments {
namespace {

namespace ss = search::subst;
namespace sbs = side_by_side;

// The quantities a `paper:` table may publish (side_by_side.h). Per model (a row named after a model of
// `models:`): the two optimizers' predicted speedups over the input graph, their times, and equality
// saturation against backtracking (cost ratio, time ratio). Over every model (the row `all`): the best cost
// ratio and the geometric mean of the time ratios.
constexpr std::string_view kModelMetrics[] = {
    "backtrack_speedup", "eqsat_speedup",     "backtrack_gain_percent", "eqsat_gain_percent",
    "backtrack_seconds", "eqsat_seconds",     "eqsat_over_backtrack",   "time_ratio",
    "xfers_speedup",     "xfers_gain_percent"};  // xfers_*: backtracking with `backtrack.xfers`
constexpr std::string_view kAllMetrics[] = {"max_eqsat_over_backtrack", "geomean_time_ratio",
                                            "max_backtrack_speedup"};
constexpr std::string_view kAllRow = "all";

struct ModelSpec {
  std::string name;
  std::int64_t batch = 0, seq = 0;
};

struct SubstExperiment {
  std::string name, description;
  hw::GpuSpec gpu;
  std::string rules_path;
  std::vector<std::string> exclude;
  std::vector<ss::Rule> rules;
  std::vector<ModelSpec> models;
  ss::OptimizerOptions backtrack;
  std::vector<ss::GraphXfer> xfers;
  bool with_xfers = false;
  ss::EqsatOptions eqsat;
  std::uint64_t seed = 1;
  // Models whose results are run on the reference executor (double precision, single-threaded: minutes for
  // the 224x224 CNNs); all when absent.
  std::optional<std::vector<std::string>> check;
  std::optional<sbs::Paper> paper;  // published numbers to put beside the results
};

struct ModelRow {
  std::string model;
  OptimizerOutcome bt, eq, bx;  // bx: backtracking with hand-written transformations (when configured)
  OutputDifference dbt, deq, dbx;
};

struct SubstResults {
  std::vector<ModelRow> rows;
};

std::string csv_field(const std::string& s) {
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::vector<std::string> string_list(const YamlReader& node) {
  node.expect_sequence();
  std::vector<std::string> out;
  for (std::size_t i = 0; i < node.size(); ++i) out.push_back(node.at(i).as_string());
  return out;
}

std::vector<ModelSpec> parse_models(const YamlReader& ms) {
  ms.expect_sequence();
  std::vector<ModelSpec> specs;
  for (std::size_t i = 0; i < ms.size(); ++i) {
    const auto m = ms.at(i);
    m.expect_map({"name", "batch", "seq"});
    ModelSpec s;
    s.name = m.at("name").as_string();
    if (!models::zoo::find_model(s.name))
      throw m.at("name").error(
          fmt::format("unknown zoo model '{}' (known: {})", s.name, models::zoo::zoo_names()));
    if (auto b = m.maybe("batch")) s.batch = b->as_positive_int();
    if (auto q = m.maybe("seq")) s.seq = q->as_positive_int();
    specs.push_back(s);
  }
  if (specs.empty()) throw ms.error("expected at least one model");
  return specs;
}

void parse_backtrack(const YamlReader& b, SubstExperiment& x) {
  b.expect_map({"alpha", "budget", "xfers"});
  if (auto a = b.maybe("alpha")) {
    x.backtrack.alpha = a->as_double();
    if (!(x.backtrack.alpha >= 1.0)) throw a->error("expected alpha >= 1");
  }
  if (auto a = b.maybe("budget")) x.backtrack.budget = static_cast<int>(a->as_positive_int());
  if (auto a = b.maybe("xfers")) {
    // Hand-written transformations (search/subst/xfers.h), which eqsat does not have: run as an extra
    // backtracking row, so the rules-only comparison stays like for like.
    try {
      x.xfers = ss::make_xfers(string_list(*a));
    } catch (const std::invalid_argument& e) {
      throw a->error(e.what());
    }
    x.with_xfers = true;
  }
}

void parse_eqsat(const YamlReader& e, ss::EqsatOptions& eq) {
  e.expect_map(
      {"iterations", "node_limit", "time_limit", "multi_iterations", "extraction", "ilp_time_limit"});
  if (auto a = e.maybe("iterations")) eq.max_iterations = static_cast<int>(a->as_positive_int());
  if (auto a = e.maybe("node_limit")) eq.node_limit = static_cast<std::size_t>(a->as_positive_int());
  if (auto a = e.maybe("time_limit")) eq.time_limit_s = a->as_duration();
  if (auto a = e.maybe("multi_iterations")) {
    eq.multi_iterations = static_cast<int>(a->as_int());
    if (eq.multi_iterations < 0) throw a->error("expected a count >= 0");
  }
  if (auto a = e.maybe("extraction")) {
    // The names are the eqsat module's own (extraction_name), so they cannot drift from `strata optimize`.
    std::string names;
    bool found = false;
    for (const auto x : {ss::Extraction::kIlp, ss::Extraction::kGreedy}) {
      names += fmt::format("{}{}", names.empty() ? "" : " or ", ss::extraction_name(x));
      if (a->as_string() == ss::extraction_name(x)) {
        eq.extraction = x;
        found = true;
      }
    }
    if (!found) throw a->error(fmt::format("expected {}", names));
  }
  if (auto a = e.maybe("ilp_time_limit")) eq.ilp_time_limit_s = a->as_duration();
}

template <std::size_t N>
bool listed(const std::string_view (&names)[N], std::string_view name) {
  return std::find(std::begin(names), std::end(names), name) != std::end(names);
}

// `paper:`: rows name a zoo model or `all`; each metric is one this kind computes for that kind of row.
sbs::Paper parse_paper(const YamlReader& node) {
  sbs::Paper paper = sbs::parse_paper(node, {}, {});
  for (const auto& t : paper.tables)
    for (const auto& r : t.rows) {
      const bool all = r.key == kAllRow;
      if (!all && !models::zoo::find_model(r.key))
        throw r.node.at("key").error(
            fmt::format("expected a zoo model ({}) or '{}'", models::zoo::zoo_names(), kAllRow));
      for (const auto& [metric, value] : r.paper)
        if (all ? !listed(kAllMetrics, metric) : !listed(kModelMetrics, metric))
          throw r.node.at(metric).error(fmt::format("this kind computes {} for {}",
                                                    all ? fmt::format("{}", fmt::join(kAllMetrics, ", "))
                                                        : fmt::format("{}", fmt::join(kModelMetrics, ", ")),
                                                    all ? "the row 'all'" : "a model's row"));
    }
  return paper;
}

SubstExperiment parse(const ExperimentFile& file) {
  file.expect_keys(
      {"hw", "rules", "exclude_rules", "models", "min_gain", "backtrack", "eqsat", "seed", "check", "paper"});
  const YamlReader& root = file.root();
  SubstExperiment x;
  x.name = file.name();
  x.description = file.description();
  x.gpu = file.load_system(root.at("hw")).gpu();
  x.rules_path = file.resolve_path(root.at("rules"));
  if (auto e = root.maybe("exclude_rules")) x.exclude = string_list(*e);
  try {
    for (auto& r : ss::load_rules(x.rules_path, ss::RuleFileFormat::kAutomatic, ss::TasoShapes::kUnknown))
      if (std::find(x.exclude.begin(), x.exclude.end(), r.name) == x.exclude.end())
        x.rules.push_back(std::move(r));
  } catch (const ConfigError& e) {
    throw root.at("rules").error(fmt::format("in the rule file it names: {}", e.what()));
  }
  x.models = parse_models(root.at("models"));
  if (auto g = root.maybe("min_gain")) x.backtrack.min_gain = x.eqsat.min_gain = min_gain_fraction(*g);
  if (auto b = root.maybe("backtrack")) parse_backtrack(*b, x);
  if (auto e = root.maybe("eqsat")) parse_eqsat(*e, x.eqsat);
  if (auto s = root.maybe("seed")) {
    const auto seed = s->as_int();
    if (seed < 0) throw s->error("expected a seed >= 0");
    x.seed = static_cast<std::uint64_t>(seed);
  }
  if (auto c = root.maybe("check")) x.check = string_list(*c);
  if (auto p = root.maybe("paper")) {
    x.paper = parse_paper(*p);
    for (const auto& t : x.paper->tables)
      for (const auto& r : t.rows)
        for (const auto& [metric, value] : r.paper)
          if (metric.starts_with("xfers_") && !x.with_xfers)
            throw r.node.at(metric).error(
                "this metric is the search with hand-written transformations: list them "
                "under `backtrack.xfers`");
  }
  return x;
}

ModelRow run_model(const SubstExperiment& x, const ModelSpec& s, const models::CostModel& cost) {
  std::cerr << fmt::format("subst-optimizers: {}\n", s.name);
  const models::Graph g = models::zoo::build_model(s.name, {.batch = s.batch, .seq_len = s.seq});
  ModelRow row;
  row.model = s.name;
  const bool checked = !x.check || std::find(x.check->begin(), x.check->end(), s.name) != x.check->end();
  auto difference = [&](const models::Graph& out) {
    OutputDifference unchecked;
    unchecked.max_abs = unchecked.max_output = -1;
    return checked ? output_difference(g, out, x.seed) : unchecked;
  };
  const auto rb = ss::optimize(g, x.rules, cost, x.backtrack);
  row.bt = outcome_of(g, rb, x.backtrack);
  row.dbt = difference(rb.graph);
  const auto re = ss::eqsat_optimize(g, x.rules, cost, x.eqsat);
  row.eq = outcome_of(g, re);
  row.deq = difference(re.graph);
  if (x.with_xfers) {
    auto bxo = x.backtrack;
    bxo.xfers = x.xfers;
    const auto rx = ss::optimize(g, x.rules, cost, bxo);
    row.bx = outcome_of(g, rx, bxo);
    row.bx.optimizer = "backtrack+xfers";
    row.dbx = difference(rx.graph);
  }
  std::cerr << fmt::format(
      "  backtrack {:.4f} -> {:.4f} ms in {:.2f} s; eqsat {:.4f} -> {:.4f} ms in {:.2f} s\n",
      row.bt.cost_before * 1e3, row.bt.cost_after * 1e3, row.bt.seconds, row.eq.cost_before * 1e3,
      row.eq.cost_after * 1e3, row.eq.seconds);
  for (const auto& [o, d] : {std::pair{&row.bt, &row.dbt}, {&row.eq, &row.deq}, {&row.bx, &row.dbx}})
    if (checked && !o->optimizer.empty() && !d->pass())
      throw std::runtime_error(fmt::format(
          "{} on {}: the optimized graph computes a different function (max abs difference {:.3g}, "
          "max |output| {:.3g})",
          o->optimizer, s.name, d->max_abs, d->max_output));
  return row;
}

SubstResults run(const SubstExperiment& x) {
  const models::CostModel cost(x.gpu);
  SubstResults results;
  for (const auto& s : x.models) results.rows.push_back(run_model(x, s, cost));
  return results;
}

std::string results_csv(const SubstResults& results) {
  std::string csv =
      "model,nodes,optimizer,cost_before_ms,cost_after_ms,speedup,optimizer_seconds,nodes_after,search,stop,"
      "extraction,max_abs_diff,max_abs_output\n";  // -1: not checked
  for (const auto& r : results.rows)
    for (const auto& [o, d] : {std::pair{&r.bt, &r.dbt}, {&r.eq, &r.deq}, {&r.bx, &r.dbx}}) {
      if (o->optimizer.empty()) continue;
      csv += fmt::format("{},{},{},{:.6f},{:.6f},{:.4f},{:.3f},{},{},{},{},{:.3g},{:.3g}\n", r.model,
                         o->nodes_before, o->optimizer, o->cost_before * 1e3, o->cost_after * 1e3,
                         o->speedup(), o->seconds, o->nodes_after, csv_field(o->search), csv_field(o->stop),
                         csv_field(o->extraction), d->max_abs, d->max_output);
    }
  return csv;
}

std::string summary(const SubstExperiment& x, const SubstResults& results) {
  const auto& bt = x.backtrack;
  const auto& eq = x.eqsat;
  std::string md = fmt::format("# {}\n\n{}\n\n", x.name, x.description);
  md += fmt::format(
      "Device {} (cost model: roofline per operator, weight-only operators folded); rules: {} ({} rules "
      "after "
      "excluding {}). Backtracking: alpha {}, budget {}. Equality saturation: {} iterations, node limit {}, "
      "time "
      "limit {} s, multi-root rules in the first {} iterations, {} extraction (ILP limit {} s). Results "
      "checked "
      "equal to their input on the reference executor (seed {}): {}.\n\n",
      x.gpu.name, x.rules_path, x.rules.size(),
      x.exclude.empty() ? std::string("none") : fmt::format("{}", fmt::join(x.exclude, ", ")), bt.alpha,
      bt.budget, eq.max_iterations, eq.node_limit, eq.time_limit_s, eq.multi_iterations,
      ss::extraction_name(eq.extraction), eq.ilp_time_limit_s, x.seed,
      x.check ? (x.check->empty() ? std::string("none") : fmt::format("{}", fmt::join(*x.check, ", ")))
              : std::string("all models"));
  md +=
      "| model | nodes | before (ms) | backtrack after (ms) | speedup | time (s) | eqsat after (ms) | "
      "speedup | "
      "time (s) | e-graph | stop | extraction | eqsat <= backtrack, faster |\n";
  md += "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  std::string xmd;
  int reached = 0;
  for (const auto& r : results.rows) {
    const bool as_good = r.eq.cost_after <= r.bt.cost_after * (1 + 1e-9);
    const bool faster = r.eq.seconds < r.bt.seconds;
    reached += as_good && faster;
    md += fmt::format(
        "| {} | {} | {:.4f} | {:.4f} | {:.3f}x | {:.2f} | {:.4f} | {:.3f}x | {:.2f} | {} | {} | {} | {} |\n",
        r.model, r.bt.nodes_before, r.bt.cost_before * 1e3, r.bt.cost_after * 1e3, r.bt.speedup(),
        r.bt.seconds, r.eq.cost_after * 1e3, r.eq.speedup(), r.eq.seconds, r.eq.search, r.eq.stop,
        r.eq.extraction, as_good ? (faster ? "yes, yes" : "yes, no") : (faster ? "no, yes" : "no, no"));
    if (x.with_xfers)
      xmd += fmt::format("| {} | {:.4f} | {:.3f}x | {:.2f} |\n", r.model, r.bx.cost_after * 1e3,
                         r.bx.speedup(), r.bx.seconds);
  }
  md += fmt::format(
      "\nEquality saturation reached at least the backtracking cost in less time on {} of {} models.\n",
      reached, results.rows.size());
  if (x.with_xfers)
    md +=
        "\nFor context, the backtracking search with TASO-style hand-written transformations "
        "(search/subst/xfers.h) beside the same rules; equality saturation has no counterpart of them:\n\n"
        "| model | backtrack+xfers after (ms) | speedup | time (s) |\n|---|---|---|---|\n" +
        xmd;
  md +=
      "\n## Files\n\n- `results.csv`: one row per model and optimizer (costs, speedup, optimizer time, "
      "search "
      "statistics, stop reason, extraction, max output difference against the input)\n"
      "- `speedup.png`: predicted speedup per model and optimizer; `time.png`: optimizer time per model\n";
  return md;
}

// strata's numbers for the paper's rows: a model's row from that model's results, `all` over every model.
sbs::Measured measured(const sbs::Paper& paper, const SubstResults& results) {
  sbs::Measured m;
  double log_time_ratio = 0, max_ratio = 0, max_speedup = 0;
  for (const auto& r : results.rows) {
    log_time_ratio += std::log(r.bt.seconds / r.eq.seconds);
    max_ratio = std::max(max_ratio, r.bt.cost_after / r.eq.cost_after);
    max_speedup = std::max(max_speedup, r.bt.speedup());
  }
  for (const auto& t : paper.tables)
    for (const auto& row : t.rows) {
      if (row.key == kAllRow) {
        if (results.rows.empty()) continue;
        m.set(t.name, row.key, "max_eqsat_over_backtrack", max_ratio);
        m.set(t.name, row.key, "geomean_time_ratio",
              std::exp(log_time_ratio / static_cast<double>(results.rows.size())));
        m.set(t.name, row.key, "max_backtrack_speedup", max_speedup);
        m.note(t.name, row.key, fmt::format("over the {} models of this run", results.rows.size()));
        continue;
      }
      const auto it = std::find_if(results.rows.begin(), results.rows.end(),
                                   [&](const ModelRow& r) { return r.model == row.key; });
      if (it == results.rows.end()) {
        m.note(t.name, row.key, "not run (not in `models:`)");
        continue;
      }
      m.set(t.name, row.key, "backtrack_speedup", it->bt.speedup());
      m.set(t.name, row.key, "eqsat_speedup", it->eq.speedup());
      m.set(t.name, row.key, "backtrack_gain_percent", 100 * (it->bt.speedup() - 1));
      m.set(t.name, row.key, "eqsat_gain_percent", 100 * (it->eq.speedup() - 1));
      m.set(t.name, row.key, "backtrack_seconds", it->bt.seconds);
      m.set(t.name, row.key, "eqsat_seconds", it->eq.seconds);
      m.set(t.name, row.key, "eqsat_over_backtrack", it->bt.cost_after / it->eq.cost_after);
      m.set(t.name, row.key, "time_ratio", it->bt.seconds / it->eq.seconds);
      if (!it->bx.optimizer.empty()) {
        m.set(t.name, row.key, "xfers_speedup", it->bx.speedup());
        m.set(t.name, row.key, "xfers_gain_percent", 100 * (it->bx.speedup() - 1));
      }
    }
  return m;
}

void report(const SubstExperiment& x, const SubstResults& results, ResultsDir& out,
            const RunOptions& options) {
  out.write("results.csv", results_csv(results));
  std::string md = summary(x, results);
  draw_figures(md, options, "subst_optimizers.py", {out.staging().string(), x.name});
  if (x.paper) {
    const auto m = measured(*x.paper, results);
    md += "\n# Beside the published numbers\n" + sbs::markdown(*x.paper, m);
    sbs::write_outputs(*x.paper, m, x.name, out, options, md);
  }
  out.write("summary.md", md);
}

}  // namespace

ExperimentKind subst_optimizers_kind() {
  return make_kind(
      "subst-optimizers",
      "backtracking search against equality saturation on zoo models with the same rules and cost model",
      &parse, &run, &report);
}

}  // namespace strata::experiments
