// strata subst verify|coverage|show|axioms: substitution rules, their Z3 verification and rule-set coverage
// (search/subst, docs/subst.md).
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "experiments/cli.h"
#include "experiments/cli_options.h"
#include "hw/config_error.h"
#include "search/subst/axiom_validation.h"
#include "search/subst/axioms.h"
#include "search/subst/coverage.h"
#include "search/subst/rule.h"
#include "search/subst/verifier.h"
#include "util/atomic_file.h"
#include "util/timer.h"

namespace strata::cli {
namespace {

namespace ss = search::subst;

struct RuleFileOptions {
  std::string format = "auto";
  std::string taso_shapes = "table";
};

void add_rule_file_options(CLI::App* cmd, RuleFileOptions& o) {
  cmd->add_option("--format", o.format,
                  "rule file format: auto (TASO if lines start with INDEX<TAB>), strata, taso")
      ->check(CLI::IsMember({"auto", "strata", "taso"}))
      ->capture_default_str();
  cmd->add_option(
         "--taso-shapes", o.taso_shapes,
         "input shapes of TASO equation files: table (input_1..input_20 of TASO's generator) or unknown "
         "(ids are pattern variables, as in the shipped 133-rule file)")
      ->check(CLI::IsMember({"table", "unknown"}))
      ->capture_default_str();
}

std::vector<ss::Rule> load(const std::string& path, const RuleFileOptions& o) {
  const auto format = o.format == "strata" ? ss::RuleFileFormat::kStrata
                      : o.format == "taso" ? ss::RuleFileFormat::kTaso
                                           : ss::RuleFileFormat::kAutomatic;
  auto rules = ss::load_rules(
      path, format, o.taso_shapes == "unknown" ? ss::TasoShapes::kUnknown : ss::TasoShapes::kGeneratorTable);
  if (rules.empty())
    throw ConfigError(fmt::format("{}: no rules in the file (expected at least one rule)", path));
  return rules;
}

std::size_t equation_count(std::span<const ss::Rule> rules) {
  std::size_t n = 0;
  for (const auto& r : rules) n += r.outputs.size();
  return n;
}

struct VerifyCli {
  std::string path, json, output;
  RuleFileOptions file;
  unsigned timeout_ms = ss::VerifyOptions{}.timeout_ms;
  int jobs = 0;
  bool failures_only = false;
  bool no_shape_check = false, no_refute = false, no_z3 = false;
  ss::RefuteOptions refute;
  std::vector<std::string> z3;
};

void run_verify(const VerifyCli& o) {
  for (const auto& path : {o.output, o.json})  // a bad output path is refused before the proofs run
    if (!path.empty()) util::check_output_path(path);
  const auto rules = load(o.path, o.file);
  const auto axioms = ss::verification_axioms();
  ss::VerifyOptions vo;
  vo.timeout_ms = o.timeout_ms;
  vo.jobs = o.jobs;
  vo.check_shapes = !o.no_shape_check;
  vo.refute_by_evaluation = !o.no_refute;
  vo.run_z3 = !o.no_z3;
  vo.refute = o.refute;
  for (const auto& kv : o.z3) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0)
      throw ConfigError(fmt::format("--z3: expected NAME=VALUE (a Z3 solver parameter), got '{}'", kv));
    vo.z3_params.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
  }
  const bool tty = isatty(fileno(stderr)) != 0;
  std::map<ss::VerifyStatus, std::size_t> counts;
  const util::Stopwatch clock;
  auto progress = [&](std::size_t done, std::size_t total, std::size_t, const ss::RuleResult& r) {
    ++counts[r.status];
    const bool report = tty || done == total || done % std::max<std::size_t>(1, total / 10) == 0;
    if (!report) return;
    const double s = clock.seconds();
    std::cerr << fmt::format("{}verifying: {}/{} rules, {} proved, {} false, {} not proved, {:.1f} s{}",
                             tty ? "\r" : "", done, total, counts[ss::VerifyStatus::kProved],
                             counts[ss::VerifyStatus::kFalse],
                             done - counts[ss::VerifyStatus::kProved] - counts[ss::VerifyStatus::kFalse], s,
                             tty && done != total ? "" : "\n");
  };
  const auto results = ss::verify_rules(rules, axioms, vo, progress);
  const double wall = clock.seconds();

  std::cout << fmt::format("# {}: {} rules, {} equations; {} axioms + lemmas; timeout {} ms per equation\n",
                           o.path, rules.size(), equation_count(rules), axioms.size(), o.timeout_ms);
  std::cout << fmt::format("{:<10} {:>3} {:<10} {:>10}  {}\n", "rule", "out", "status", "time (ms)",
                           "reason");
  for (std::size_t i = 0; i < rules.size(); ++i) {
    const auto& r = results[i];
    if (o.failures_only && r.status == ss::VerifyStatus::kProved) continue;
    std::cout << fmt::format("{:<10} {:>3} {:<10} {:>10.1f}  {}\n", rules[i].name, rules[i].outputs.size(),
                             ss::to_string(r.status), r.seconds * 1e3, r.reason);
  }
  std::map<ss::VerifyStatus, std::size_t> c;
  for (const auto& r : results) ++c[r.status];
  std::cout << fmt::format(
      "# summary: {} rules: {} proved, {} false, {} not proved, {} invalid; {:.1f} s wall on {} "
      "thread(s)\n",
      rules.size(), c[ss::VerifyStatus::kProved], c[ss::VerifyStatus::kFalse],
      c[ss::VerifyStatus::kNotProved], c[ss::VerifyStatus::kInvalid], wall,
      o.jobs > 0 ? o.jobs : static_cast<int>(std::thread::hardware_concurrency()));
  if (!o.output.empty()) {
    std::vector<ss::Rule> proved;
    for (std::size_t i = 0; i < rules.size(); ++i)
      if (results[i].status == ss::VerifyStatus::kProved) proved.push_back(rules[i]);
    ss::save_rules(o.output, proved);
    std::cerr << fmt::format("wrote {} proved rules to {}\n", proved.size(), o.output);
  }
  if (!o.json.empty()) {
    nlohmann::json j;
    j["path"] = o.path;
    j["timeout_ms"] = o.timeout_ms;
    j["seconds"] = wall;
    for (std::size_t i = 0; i < rules.size(); ++i) {
      j["rules"].push_back({{"name", rules[i].name},
                            {"status", ss::to_string(results[i].status)},
                            {"reason", results[i].reason},
                            {"seconds", results[i].seconds}});
      j["status"].push_back(results[i].status == ss::VerifyStatus::kProved ? "proved" : "unknown");
    }
    util::write_file_atomically(o.json, j.dump(1) + "\n");
    std::cerr << fmt::format("wrote {}\n", o.json);
  }
  if (c[ss::VerifyStatus::kFalse] > 0) {
    std::cerr << fmt::format("error: {} rule(s) are false (evaluation found a counter-example)\n",
                             c[ss::VerifyStatus::kFalse]);
    throw CLI::RuntimeError(1);  // exit status 1 without a further message
  }
}

struct CoverageCli {
  std::string ours, theirs;
  RuleFileOptions ours_file, theirs_file;
  int examples = 5;
  bool no_orientation = false;
};

void run_coverage(const CoverageCli& o) {
  const auto a = load(o.ours, o.ours_file);
  const auto b = load(o.theirs, o.theirs_file);
  const auto rep = ss::compare_rule_sets(a, b, !o.no_orientation);
  std::cout << fmt::format(
      "# coverage modulo input renaming{}{}\n",
      rep.options.match_shapes ? " (shape-preserving)" : " (shapes ignored: some inputs have unknown shapes)",
      rep.options.modulo_orientation ? " and orientation" : "");
  std::cout << fmt::format("A = {}: {} rules ({} distinct), {} equations\n", o.ours, rep.a_rules,
                           rep.a_distinct, rep.a_equations);
  std::cout << fmt::format("B = {}: {} rules ({} distinct), {} equations\n", o.theirs, rep.b_rules,
                           rep.b_distinct, rep.b_equations);
  std::cout << fmt::format("in both:   {} rules of A occur in B, {} rules of B occur in A\n", rep.a_in_b,
                           rep.b_in_a);
  std::cout << fmt::format("only in A: {} rules\nonly in B: {} rules\n", rep.only_in_a.size(),
                           rep.only_in_b.size());
  std::cout << fmt::format("equations: {} of A's {} occur in B, {} of B's {} occur in A\n",
                           rep.a_equations_in_b, rep.a_equations, rep.b_equations_in_a, rep.b_equations);
  auto list = [&](std::string_view title, const std::vector<std::size_t>& idx,
                  std::span<const ss::Rule> rules) {
    if (idx.empty() || o.examples <= 0) return;
    std::cout << fmt::format("\n# examples only in {} ({} of {}):\n", title,
                             std::min<std::size_t>(idx.size(), o.examples), idx.size());
    for (std::size_t k = 0; k < idx.size() && static_cast<int>(k) < o.examples; ++k)
      std::cout << ss::format_rule(rules[idx[k]]);
  };
  list("A", rep.only_in_a, a);
  list("B", rep.only_in_b, b);
}

struct ShowCli {
  std::string path;
  RuleFileOptions file;
  bool summary_only = false;
};

void run_show(const ShowCli& o) {
  const auto rules = load(o.path, o.file);
  std::map<std::pair<int, int>, int> sizes;
  std::map<std::string, int> op_uses;
  std::size_t multi = 0;
  for (const auto& r : rules) {
    const int src = ss::source_op_count(r), dst = ss::target_op_count(r);
    ++sizes[{src, dst}];
    if (r.outputs.size() > 1) ++multi;
    if (!o.summary_only) {
      std::string inputs;
      for (const auto& in : r.inputs)
        inputs += fmt::format("{}{}: {}", inputs.empty() ? "" : ", ", in.name, ss::shape_to_string(in.shape));
      std::cout << fmt::format("rule {}  ({} → {} operators, {} output{})  [{}]\n  inputs: {}\n", r.name, src,
                               dst, r.outputs.size(), r.outputs.size() > 1 ? "s" : "", r.origin, inputs);
      for (std::size_t i = 0; i < r.outputs.size(); ++i)
        std::cout << fmt::format(
            "  source{}: {}\n  target{}: {}\n", r.outputs.size() > 1 ? fmt::format("[{}]", i) : "",
            ss::to_string(r.outputs[i].lhs), r.outputs.size() > 1 ? fmt::format("[{}]", i) : "",
            ss::to_string(r.outputs[i].rhs));
    }
  }
  std::cout << fmt::format("# {}: {} rules, {} equations, {} multi-output rules\n", o.path, rules.size(),
                           equation_count(rules), multi);
  std::vector<std::pair<std::pair<int, int>, int>> by_count(sizes.begin(), sizes.end());
  std::stable_sort(by_count.begin(), by_count.end(),
                   [](const auto& x, const auto& y) { return x.second > y.second; });
  std::string hist;
  for (const auto& [k, n] : by_count)
    hist += fmt::format("{}({},{}) {}", hist.empty() ? "" : ", ", k.first, k.second, n);
  std::cout << fmt::format("# (source ops, target ops): {}\n", hist);
}

struct AxiomsCli {
  bool validate = false;
  ss::AxiomValidationOptions options;
};

void run_axioms(const AxiomsCli& o) {
  const auto axioms = ss::verification_axioms();
  if (!o.validate) {
    int i = 0;
    for (const auto& ax : axioms)
      std::cout << fmt::format("{:>2} {:<6} {}\n   {}\n", ++i,
                               ax.kind == ss::AxiomKind::kLemma ? "lemma" : "axiom", ss::format_axiom(ax),
                               ax.note);
    return;
  }
  std::cerr << fmt::format("validating {} axioms and lemmas on dims 1..{} ...\n", axioms.size(),
                           o.options.max_dim);
  const util::Stopwatch clock;
  const auto results = ss::validate_axioms(axioms, o.options);
  const double wall = clock.seconds();
  std::cout << fmt::format("{:>2} {:<26} {:>7} {:>9} {:>8} {:<10} {}\n", "#", "axiom", "params", "instances",
                           "failures", "status", "counter-example");
  std::size_t failed = 0;
  for (std::size_t i = 0; i < axioms.size(); ++i) {
    const auto& r = results[i];
    const std::string status = r.valid()          ? (r.exhaustive ? "valid" : "valid*")
                               : r.instances == 0 ? "untested"
                                                  : "FAILED";
    if (!r.valid()) ++failed;
    std::cout << fmt::format(
        "{:>2} {:<26} {:>3}/{:<3} {:>9} {:>8} {:<10} {}\n", i + 1, r.name, r.typed_assignments, r.assignments,
        r.instances, r.failures, status,
        r.counter_example ? ss::format_counter_example(*r.counter_example, axioms[i]) : "");
  }
  std::cout << fmt::format(
      "# {} of {} axioms/lemmas validated, {} failed or untested; dims 1..{}, <= {} instances per parameter "
      "assignment (* = sampled, cap hit); {:.1f} s\n",
      axioms.size() - failed, axioms.size(), failed, o.options.max_dim, o.options.max_instances, wall);
  if (failed > 0) throw CLI::RuntimeError(1);  // exit status 1 without a further message
}

}  // namespace

void add_subst_commands(CLI::App& app) {
  auto* subst = app.add_subcommand("subst",
                                   "Substitution rules: generation, Z3 verification against operator axioms, "
                                   "coverage, listing (docs/subst.md)");
  subst->require_subcommand(1);

  auto verify = std::make_shared<VerifyCli>();
  auto* v = subst->add_subcommand("verify",
                                  "Type-check and refute rules by evaluation, then prove the rest from "
                                  "TASO's operator axioms with Z3 (per-equation "
                                  "timeout)");
  v->footer(
      "Status per rule: proved (Z3: entailed by the axioms); false (evaluation on random inputs found a "
      "counter-example); not-proved (Z3 timed out, gave up, or the axioms do not entail it: the rule may "
      "still "
      "be true); invalid (ill-typed, or a parameter outside the axioms' verified domain).\n"
      "Exit status: 0 when no rule is false (some may be not proved or invalid); 1 when at least one rule is "
      "false; 2 for an unusable rule file (unreadable, malformed or empty); command-line errors exit with "
      "CLI11's non-zero codes.");
  v->add_option("rules", verify->path, "rule file (strata format or TASO equation file)")
      ->required()
      ->check(CLI::ExistingFile);
  add_int_option(*v, "--timeout-ms", verify->timeout_ms, {1, 3600000},
                 "Z3 timeout per equation in milliseconds (TASO's artifact: 10000)");
  add_int_option(*v, "--jobs", verify->jobs, {0, 1024}, "worker threads (0 = all hardware threads)");
  v->add_option("--z3", verify->z3,
                "extra Z3 solver parameter NAME=VALUE (repeatable), e.g. --z3 mbqi=false");
  v->add_flag("--no-shape-check", verify->no_shape_check,
              "do not type-check rules on their declared input shapes before Z3");
  v->add_flag("--no-refute", verify->no_refute,
              "do not evaluate rules on random inputs before Z3 (every rule then costs a Z3 query)");
  add_int_option(
      *v, "--refute-small-shapes", verify->refute.small_shape_instances, {0, 1000000},
      "also search small shapes (dims 1..3) for counter-examples, up to N well-typed instances per "
      "equation; finds rules that hold only for their declared convolution grouping (0 = off)");
  v->add_flag("--no-z3", verify->no_z3,
              "only the evaluation checks: rules they do not reject are reported not-proved (fast triage)");
  v->add_flag("--failures-only", verify->failures_only, "list only rules that were not proved");
  v->add_option("--json", verify->json, "also write per-rule outcomes to this JSON file");
  v->add_option("-o,--output", verify->output, "write the proved rules to this file (strata rule format)");
  add_rule_file_options(v, verify->file);
  v->callback([verify] { run_verify(*verify); });

  auto cov = std::make_shared<CoverageCli>();
  auto* c =
      subst->add_subcommand("coverage", "Compare two rule sets modulo input renaming (and orientation)");
  c->add_option("ours", cov->ours, "rule set A")->required()->check(CLI::ExistingFile);
  c->add_option("theirs", cov->theirs, "rule set B")->required()->check(CLI::ExistingFile);
  add_int_option(*c, "--examples", cov->examples, {0, 1000000}, "rules to list from each difference");
  c->add_flag("--no-orientation", cov->no_orientation, "treat A == B and B == A as different rules");
  add_rule_file_options(c, cov->ours_file);
  c->callback([cov] {
    cov->theirs_file = cov->ours_file;
    run_coverage(*cov);
  });

  auto show = std::make_shared<ShowCli>();
  auto* s = subst->add_subcommand("show", "List the rules of a file with their inputs, sizes and a summary");
  s->add_option("rules", show->path, "rule file")->required()->check(CLI::ExistingFile);
  s->add_flag("--summary", show->summary_only, "print only the summary");
  add_rule_file_options(s, show->file);
  s->callback([show] { run_show(*show); });

  auto axioms_cli = std::make_shared<AxiomsCli>();
  auto* a = subst->add_subcommand(
      "axioms",
      "List the operator axioms and lemmas the verifier uses; --validate checks them against the executor");
  a->add_flag(
      "--validate", axioms_cli->validate,
      "evaluate every axiom on all parameter assignments and small shapes with the reference executor "
      "(prime field and double precision); exit status 1 when one fails");
  add_int_option(*a, "--max-dim", axioms_cli->options.max_dim, {1, 6},
                 "largest tensor dimension tried (all dims in 1..N)");
  add_int_option(*a, "--max-instances", axioms_cli->options.max_instances, {1, 100000000},
                 "well-typed instances evaluated per parameter assignment (shapes in seeded random order)");
  add_int_option(*a, "--max-trials", axioms_cli->options.max_shape_trials, {1, 100000000},
                 "shape combinations type-checked per parameter assignment");
  add_int_option(*a, "--seed", axioms_cli->options.seed, kSeedRange,
                 "seed of the shape order and the random inputs");
  add_int_option(*a, "--jobs", axioms_cli->options.jobs, {0, 1024},
                 "worker threads (0 = all hardware threads)");
  a->callback([axioms_cli] { run_axioms(*axioms_cli); });
}

}  // namespace strata::cli
