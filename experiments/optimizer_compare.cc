#include "experiments/optimizer_compare.h"
#include "experiments/experiment.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "hw/system_loader.h"
#include "models/exec/executor.h"
#include "models/zoo/zoo.h"
#include "search/subst/rule.h"
#include "search/subst/xfers.h"
#include "sim/trace.h"

namespace strata::experiments {
namespace {

namespace ss = search::subst;

std::string resolve(const std::string& path, const std::string& experiment_file) {
  if (std::filesystem::exists(path)) return path;
  const auto beside = std::filesystem::path(experiment_file).parent_path() / path;
  if (std::filesystem::exists(beside)) return beside.string();
  return path;
}

std::string csv_field(const std::string& s) {
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

struct ModelSpec {
  std::string name;
  std::int64_t batch = 0, seq = 0;
};

}  // namespace

OutputDifference output_difference(const models::Graph& a, const models::Graph& b, std::uint64_t seed) {
  return ss::check_same_function(a, b, {.seed = seed});
}

OptimizerOutcome outcome_of(const models::Graph& input, const ss::OptimizeResult& r,
                            const ss::OptimizerOptions& o) {
  OptimizerOutcome out;
  out.optimizer = "backtrack";
  out.cost_before = r.cost_before;
  out.cost_after = r.cost_after;
  out.seconds = r.seconds;
  out.nodes_before = ss::remove_dead_nodes(input).nodes().size();
  out.nodes_after = r.graph.nodes().size();
  out.search = fmt::format("{} graphs explored, {} generated (alpha {}, budget {})", r.explored, r.generated,
                           o.alpha, o.budget);
  out.stop = r.explored >= o.budget ? "budget" : "queue empty";
  return out;
}

OptimizerOutcome outcome_of(const models::Graph& input, const ss::EqsatResult& r) {
  OptimizerOutcome out;
  out.optimizer = "eqsat";
  out.cost_before = r.cost_before;
  out.cost_after = r.cost_after;
  out.seconds = r.seconds;
  out.nodes_before = ss::remove_dead_nodes(input).nodes().size();
  out.nodes_after = r.graph.nodes().size();
  out.search =
      fmt::format("{} iterations, {} e-nodes, {} e-classes; saturation {:.2f} s, extraction {:.2f} s",
                  r.iterations.size(), r.nodes, r.classes, r.saturation_seconds, r.extraction_seconds);
  out.stop = std::string(ss::stop_reason_name(r.stop));
  out.extraction = std::string(ss::extraction_name(r.extraction));
  if (!r.extraction_note.empty()) out.extraction += " (" + r.extraction_note + ")";
  return out;
}

std::string run_subst_optimizers(const YamlReader& root, const std::string& path, const RunOptions& options) {
  root.expect_map({"experiment", "description", "kind", "hw", "rules", "exclude_rules", "models", "backtrack",
                   "eqsat", "seed", "check"});
  const std::string name = root.at("experiment").as_string();
  if (name.empty() || name.find('/') != std::string::npos || name.find("..") != std::string::npos)
    throw root.at("experiment").error("expected a plain name (it becomes the results folder)");
  const std::string description = root.has("description") ? root.at("description").as_string() : "";
  const auto topo = hw::load_system(resolve(root.at("hw").as_string(), path));
  const std::string rules_path = resolve(root.at("rules").as_string(), path);
  std::vector<std::string> exclude;
  if (auto e = root.maybe("exclude_rules")) {
    e->expect_sequence();
    for (std::size_t i = 0; i < e->size(); ++i) exclude.push_back(e->at(i).as_string());
  }
  std::vector<ss::Rule> rules;
  for (auto& r : ss::load_rules(rules_path, ss::RuleFileFormat::automatic, ss::TasoShapes::unknown))
    if (std::find(exclude.begin(), exclude.end(), r.name) == exclude.end()) rules.push_back(std::move(r));

  std::vector<ModelSpec> specs;
  const YamlReader ms = root.at("models");
  ms.expect_sequence();
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

  ss::OptimizerOptions bt;
  std::vector<ss::GraphXfer> xfers;
  bool with_xfers = false;
  if (auto b = root.maybe("backtrack")) {
    b->expect_map({"alpha", "budget", "xfers"});
    if (auto a = b->maybe("alpha")) {
      bt.alpha = a->as_double();
      if (!(bt.alpha >= 1.0)) throw a->error("expected alpha >= 1");
    }
    if (auto a = b->maybe("budget")) bt.budget = static_cast<int>(a->as_positive_int());
    if (auto a = b->maybe("xfers")) {
      // Hand-written transformations (search/subst/xfers.h), which eqsat does not have: run as an extra
      // backtracking row, so the rules-only comparison stays like for like.
      a->expect_sequence();
      std::vector<std::string> names;
      for (std::size_t i = 0; i < a->size(); ++i) names.push_back(a->at(i).as_string());
      try {
        xfers = ss::make_xfers(names);
      } catch (const std::invalid_argument& e) {
        throw a->error(e.what());
      }
      with_xfers = true;
    }
  }
  ss::EqsatOptions eq;
  if (auto e = root.maybe("eqsat")) {
    e->expect_map(
        {"iterations", "node_limit", "time_limit", "multi_iterations", "extraction", "ilp_time_limit"});
    if (auto a = e->maybe("iterations")) eq.max_iterations = static_cast<int>(a->as_positive_int());
    if (auto a = e->maybe("node_limit")) eq.node_limit = static_cast<std::size_t>(a->as_positive_int());
    if (auto a = e->maybe("time_limit")) eq.time_limit_s = a->as_duration();
    if (auto a = e->maybe("multi_iterations")) {
      eq.multi_iterations = static_cast<int>(a->as_int());
      if (eq.multi_iterations < 0) throw a->error("expected a count >= 0");
    }
    if (auto a = e->maybe("extraction")) {
      if (a->as_string() == "ilp")
        eq.extraction = ss::Extraction::ilp;
      else if (a->as_string() == "greedy")
        eq.extraction = ss::Extraction::greedy;
      else
        throw a->error("expected ilp or greedy");
    }
    if (auto a = e->maybe("ilp_time_limit")) eq.ilp_time_limit_s = a->as_duration();
  }
  std::uint64_t seed = 1;
  if (auto s = root.maybe("seed")) seed = static_cast<std::uint64_t>(s->as_int());
  // Models whose results are run on the reference executor (double precision, single-threaded: minutes for
  // the 224x224 CNNs); all when absent.
  std::optional<std::vector<std::string>> check;
  if (auto c = root.maybe("check")) {
    c->expect_sequence();
    check.emplace();
    for (std::size_t i = 0; i < c->size(); ++i) check->push_back(c->at(i).as_string());
  }

  const models::CostModel cost(topo.gpu());
  std::string csv =
      "model,nodes,optimizer,cost_before_ms,cost_after_ms,speedup,optimizer_seconds,nodes_after,search,stop,"
      "extraction,max_abs_diff,max_abs_output\n";  // -1: not checked
  struct Row {
    std::string model;
    OptimizerOutcome bt, eq, bx;
    OutputDifference dbt, deq, dbx;
  };
  std::vector<Row> rows;
  for (const auto& s : specs) {
    std::cerr << fmt::format("subst-optimizers: {}\n", s.name);
    const models::Graph g = models::zoo::build_model(s.name, {.batch = s.batch, .seq_len = s.seq});
    Row row;
    row.model = s.name;
    const auto rb = ss::optimize(g, rules, cost, bt);
    row.bt = outcome_of(g, rb, bt);
    const bool checked = !check || std::find(check->begin(), check->end(), s.name) != check->end();
    auto difference = [&](const models::Graph& out) {
      OutputDifference unchecked;
      unchecked.max_abs = unchecked.max_output = -1;
      return checked ? output_difference(g, out, seed) : unchecked;
    };
    row.dbt = difference(rb.graph);
    const auto re = ss::eqsat_optimize(g, rules, cost, eq);
    row.eq = outcome_of(g, re);
    row.deq = difference(re.graph);
    if (with_xfers) {
      auto bxo = bt;
      bxo.xfers = xfers;
      const auto rx = ss::optimize(g, rules, cost, bxo);
      row.bx = outcome_of(g, rx, bxo);
      row.bx.optimizer = "backtrack+xfers";
      row.dbx = difference(rx.graph);
    }
    std::cerr << fmt::format(
        "  backtrack {:.4f} -> {:.4f} ms in {:.2f} s; eqsat {:.4f} -> {:.4f} ms in {:.2f} s\n",
        row.bt.cost_before * 1e3, row.bt.cost_after * 1e3, row.bt.seconds, row.eq.cost_before * 1e3,
        row.eq.cost_after * 1e3, row.eq.seconds);
    for (const auto* o : {&row.bt, &row.eq, &row.bx}) {
      if (o->optimizer.empty()) continue;
      const auto& d = o == &row.bt ? row.dbt : o == &row.eq ? row.deq : row.dbx;
      if (checked && !d.pass())
        throw std::runtime_error(
            fmt::format("{} on {}: the optimized graph computes a different function (max abs "
                        "difference {:.3g}, max |output| {:.3g})",
                        o->optimizer, s.name, d.max_abs, d.max_output));
      csv += fmt::format("{},{},{},{:.6f},{:.6f},{:.4f},{:.3f},{},{},{},{},{:.3g},{:.3g}\n", s.name,
                         o->nodes_before, o->optimizer, o->cost_before * 1e3, o->cost_after * 1e3,
                         o->speedup(), o->seconds, o->nodes_after, csv_field(o->search), csv_field(o->stop),
                         csv_field(o->extraction), d.max_abs, d.max_output);
    }
    rows.push_back(std::move(row));
  }

  const auto out_dir = std::filesystem::path(options.output_root) / name;
  std::filesystem::create_directories(out_dir);
  sim::write_file_atomically((out_dir / "results.csv").string(), csv);

  std::string md = fmt::format("# {}\n\n{}\n\n", name, description);
  md += fmt::format(
      "Device {} (cost model: roofline per operator, weight-only operators folded); rules: {} ({} rules "
      "after "
      "excluding {}). Backtracking: alpha {}, budget {}. Equality saturation: {} iterations, node limit {}, "
      "time "
      "limit {} s, multi-root rules in the first {} iterations, {} extraction (ILP limit {} s). Results "
      "checked equal "
      "to their input on the reference executor (seed {}): {}.\n\n",
      topo.gpu().name, rules_path, rules.size(),
      exclude.empty() ? std::string("none") : fmt::format("{}", fmt::join(exclude, ", ")), bt.alpha,
      bt.budget, eq.max_iterations, eq.node_limit, eq.time_limit_s, eq.multi_iterations,
      ss::extraction_name(eq.extraction), eq.ilp_time_limit_s, seed,
      check ? (check->empty() ? std::string("none") : fmt::format("{}", fmt::join(*check, ", ")))
            : std::string("all models"));
  md +=
      "| model | nodes | before (ms) | backtrack after (ms) | speedup | time (s) | eqsat after (ms) | "
      "speedup | "
      "time (s) | e-graph | stop | extraction | eqsat <= backtrack, faster |\n";
  md += "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  std::string xmd;
  int reached = 0;
  for (const auto& r : rows) {
    const bool as_good = r.eq.cost_after <= r.bt.cost_after * (1 + 1e-9);
    const bool faster = r.eq.seconds < r.bt.seconds;
    reached += as_good && faster;
    md += fmt::format(
        "| {} | {} | {:.4f} | {:.4f} | {:.3f}x | {:.2f} | {:.4f} | {:.3f}x | {:.2f} | {} | {} | {} | {} |\n",
        r.model, r.bt.nodes_before, r.bt.cost_before * 1e3, r.bt.cost_after * 1e3, r.bt.speedup(),
        r.bt.seconds, r.eq.cost_after * 1e3, r.eq.speedup(), r.eq.seconds, r.eq.search, r.eq.stop,
        r.eq.extraction, as_good ? (faster ? "yes, yes" : "yes, no") : (faster ? "no, yes" : "no, no"));
    if (with_xfers)
      xmd += fmt::format("| {} | {:.4f} | {:.3f}x | {:.2f} |\n", r.model, r.bx.cost_after * 1e3,
                         r.bx.speedup(), r.bx.seconds);
  }
  md += fmt::format(
      "\nEquality saturation reached at least the backtracking cost in less time on {} of {} models.\n",
      reached, rows.size());
  if (with_xfers)
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
  if (options.plots && !run_plot_script("subst_optimizers.py", {out_dir.string(), name}))
    md += "\n(The figures could not be drawn: /usr/bin/python3 with matplotlib is needed.)\n";
  sim::write_file_atomically((out_dir / "summary.md").string(), md);
  return out_dir.string();
}

}  // namespace strata::experiments
