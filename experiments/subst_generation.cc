// The `subst-generation` experiment kind (configs/experiments/repro/taso_generator.yaml): strata's
// substitution generator (search/subst/generator.h, `strata subst generate`) run on one or more operator
// sets, and the rules it writes proved by strata's Z3 verifier (search/subst/verifier.h, `strata subst
// verify`); the counts and times after each stage in rules.csv and summary.md, beside a paper's published
// numbers when the file has a `paper:` section (side_by_side.h; rows named after the runs' labels).
#include <algorithm>
#include <iostream>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "experiments/experiment.h"
#include "experiments/side_by_side.h"
#include "experiments/sweep_report.h"
#include "search/subst/axioms.h"
#include "search/subst/generator.h"
#include "search/subst/verifier.h"
#include "util/timer.h"

namespace strata::experiments {
namespace {

namespace ss = search::subst;
namespace sbs = side_by_side;

// The quantities a `paper:` row may publish for a run (its `key` names the run's label).
constexpr std::string_view kMetrics[] = {
    "rules",  "graphs",         "candidates",          "pruning_factor", "generation_seconds",
    "proved", "proved_percent", "verification_seconds"};

struct Run {
  std::string label, ops_text;
  ss::GeneratorOptions options;
};

struct Config {
  std::string name, description;
  std::vector<Run> runs;
  bool verify = true;
  ss::VerifyOptions verify_options;
  std::optional<sbs::Paper> paper;
};

struct RunResult {
  ss::GeneratorStats stats;
  std::size_t rules = 0;
  std::map<ss::VerifyStatus, std::size_t> verdicts;
  double verification_seconds = 0;
};

struct Results {
  std::vector<RunResult> runs;
};

Run read_run(const YamlReader& node) {
  node.expect_map({"label", "ops", "max_ops", "max_outputs", "keep_unrelated", "seed"});
  Run run{node.at("label").as_string(), node.at("ops").as_string(), {}};
  if (run.label.empty() || run.label == "all")
    throw node.at("label").error("expected a label other than '' or 'all'");
  try {
    run.options.ops = ss::parse_operator_set(run.ops_text);
  } catch (const std::invalid_argument& e) {
    throw node.at("ops").error(e.what());
  }
  if (auto f = node.maybe("max_ops")) run.options.max_ops = f->as_int32_in(1, 4);
  if (auto f = node.maybe("max_outputs")) run.options.max_outputs = f->as_int32_in(1, 4);
  if (auto f = node.maybe("keep_unrelated")) run.options.prune_unrelated = !f->as_bool();
  if (auto f = node.maybe("seed")) run.options.seed = static_cast<std::uint64_t>(f->as_int_in(0, 1LL << 62));
  return run;
}

Config parse(const ExperimentFile& file) {
  file.expect_keys({"runs", "verify", "timeout", "jobs", "paper"});
  const YamlReader& root = file.root();
  Config x{file.name(), file.description(), {}, true, {}, std::nullopt};
  const auto runs = root.at("runs");
  runs.expect_sequence();
  if (runs.size() == 0) throw runs.error("expected at least one generator run");
  for (std::size_t i = 0; i < runs.size(); ++i) {
    Run run = read_run(runs.at(i));
    for (const auto& other : x.runs)
      if (other.label == run.label)
        throw runs.at(i).at("label").error(fmt::format("label '{}' is used twice", run.label));
    x.runs.push_back(std::move(run));
  }
  if (auto f = root.maybe("verify")) x.verify = f->as_bool();
  if (auto f = root.maybe("timeout")) {
    const double s = f->as_duration();
    if (s < 1e-3 || s > 3600) throw f->error("expected 1 ms to 1 hour per equation");
    x.verify_options.timeout_ms = static_cast<unsigned>(s * 1e3);
  }
  if (auto f = root.maybe("jobs")) x.verify_options.jobs = f->as_int32_in(0, 1024);
  if (auto p = root.maybe("paper")) {
    x.paper = sbs::parse_paper(*p, {}, {});
    for (const auto& t : x.paper->tables)
      for (const auto& r : t.rows) {
        if (std::none_of(x.runs.begin(), x.runs.end(), [&](const Run& run) { return run.label == r.key; }))
          throw r.node.at("key").error(fmt::format("expected the label of a run of `runs:`"));
        for (const auto& [metric, value] : r.paper)
          if (std::find(std::begin(kMetrics), std::end(kMetrics), metric) == std::end(kMetrics))
            throw r.node.at(metric).error(
                fmt::format("this kind computes {}", fmt::format("{}", fmt::join(kMetrics, ", "))));
      }
  }
  return x;
}

Results run(const Config& x) {
  Results results;
  const auto axioms = ss::verification_axioms();
  for (const auto& r : x.runs) {
    std::cerr << fmt::format("subst-generation: {} (ops {}, up to {} operators)\n", r.label, r.ops_text,
                             r.options.max_ops);
    auto options = r.options;
    options.progress = [](std::string_view line) { std::cerr << "  " << line << "\n"; };
    const auto g = ss::generate_rules(options);
    RunResult out{g.stats, g.rules.size(), {}, 0};
    if (x.verify) {
      const util::Stopwatch clock;
      for (const auto& v : ss::verify_rules(g.rules, axioms, x.verify_options)) ++out.verdicts[v.status];
      out.verification_seconds = clock.seconds();
      std::cerr << fmt::format("  verified: {} of {} proved in {:.1f} s\n",
                               out.verdicts[ss::VerifyStatus::kProved], out.rules, out.verification_seconds);
    }
    results.runs.push_back(std::move(out));
  }
  return results;
}

std::map<std::string, double> metrics_of(const Config& x, const RunResult& r) {
  const auto& s = r.stats;
  std::map<std::string, double> m{{"rules", static_cast<double>(r.rules)},
                                  {"graphs", static_cast<double>(s.graphs)},
                                  {"candidates", static_cast<double>(s.candidates)},
                                  {"generation_seconds", s.seconds}};
  if (r.rules > 0) m["pruning_factor"] = static_cast<double>(s.candidates) / static_cast<double>(r.rules);
  if (x.verify) {
    const auto proved =
        r.verdicts.count(ss::VerifyStatus::kProved) ? r.verdicts.at(ss::VerifyStatus::kProved) : 0;
    m["proved"] = static_cast<double>(proved);
    if (r.rules > 0) m["proved_percent"] = 100.0 * static_cast<double>(proved) / static_cast<double>(r.rules);
    m["verification_seconds"] = r.verification_seconds;
  }
  return m;
}

void report(const Config& x, const Results& results, ResultsDir& out, const RunOptions& options) {
  std::string csv =
      "label,ops,max_ops,graphs,evaluations,fingerprints,candidates,after_common_subgraph,after_duplicates,"
      "after_renaming,after_unrelated,float_rejected,rules,generation_s,peak_rss_kib,proved,false,not_proved,"
      "invalid,verification_s\n";
  std::string md = fmt::format(
      "# {}\n\n{}\n\nstrata's generator (`strata subst generate`, docs/subst.md) and, {}, its verifier on "
      "every "
      "rule written (`strata subst verify`, timeout {} ms per equation, {} threads).\n\n| run | ops | up to "
      "| graphs "
      "| candidates | after pruning | rules | generation (s) | proved | false | not proved | verification "
      "(s) "
      "|\n|---|---|---|---|---|---|---|---|---|---|---|---|\n",
      x.name, x.description, x.verify ? "then" : "not", x.verify_options.timeout_ms,
      x.verify_options.jobs > 0 ? fmt::format("{}", x.verify_options.jobs) : std::string("all"));
  for (std::size_t i = 0; i < x.runs.size(); ++i) {
    const auto& run = x.runs[i];
    const auto& r = results.runs[i];
    const auto& s = r.stats;
    auto count = [&](ss::VerifyStatus v) { return r.verdicts.count(v) ? r.verdicts.at(v) : 0; };
    csv += fmt::format(
        "{},{},{},{},{},{},{},{},{},{},{},{},{},{:.3f},{},{},{},{},{},{:.3f}\n", csv_field(run.label),
        csv_field(run.ops_text), run.options.max_ops, s.graphs, s.evaluations, s.fingerprints, s.candidates,
        s.after_common_subgraph, s.after_duplicates, s.after_renaming, s.after_unrelated, s.float_rejected,
        r.rules, s.seconds, s.peak_rss_kib, count(ss::VerifyStatus::kProved), count(ss::VerifyStatus::kFalse),
        count(ss::VerifyStatus::kNotProved), count(ss::VerifyStatus::kInvalid), r.verification_seconds);
    md += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {:.1f} | {} | {} | {} | {:.1f} |\n", run.label,
                      run.ops_text, run.options.max_ops, s.graphs, s.candidates, s.after_renaming, r.rules,
                      s.seconds, count(ss::VerifyStatus::kProved), count(ss::VerifyStatus::kFalse),
                      count(ss::VerifyStatus::kNotProved), r.verification_seconds);
  }
  out.write("rules.csv", csv);
  md += "\n`rules.csv`: the counts after every stage of the generator and the verifier's verdicts per run.\n";
  if (x.paper) {
    sbs::Measured m;
    for (const auto& t : x.paper->tables)
      for (const auto& row : t.rows)
        for (std::size_t i = 0; i < x.runs.size(); ++i)
          if (x.runs[i].label == row.key)
            for (const auto& [metric, value] : metrics_of(x, results.runs[i]))
              m.set(t.name, row.key, metric, value);
    md += "\n# Beside the published numbers\n" + sbs::markdown(*x.paper, m);
    sbs::write_outputs(*x.paper, m, x.name, out, options, md);
  }
  out.write("summary.md", md);
}

}  // namespace

ExperimentKind subst_generation_kind() {
  return make_kind(
      "subst-generation",
      "substitution rules generated from operator sets and proved by the verifier, with counts and "
      "times per stage",
      &parse, &run, &report);
}

}  // namespace strata::experiments
