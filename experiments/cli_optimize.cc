// strata subst generate: automatic generation of candidate substitutions (search/subst/generator.h,
// docs/subst.md). Registered as a subcommand of the `subst` group, which cli_subst.cc creates.
// strata optimize: cost-based graph optimization with substitution rules (search/subst/optimizer.h).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ranges>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "experiments/cli.h"
#include "experiments/cli_optimize_eqsat.h"
#include "experiments/cli_options.h"
#include "experiments/optimize_report.h"
#include "hw/config_error.h"
#include "hw/system_loader.h"
#include "models/cost/cost_model.h"
#include "models/cost/cost_params.h"
#include "models/onnx/onnx.h"
#include "models/zoo/model_ref.h"
#include "models/zoo/zoo.h"
#include "search/subst/generator.h"
#include "search/subst/optimizer.h"
#include "search/subst/output_check.h"
#include "search/subst/rule.h"
#include "search/subst/weight_folding.h"
#include "search/subst/xfers.h"
#include "util/atomic_file.h"
#include "util/parse.h"
#include "util/path.h"

namespace strata::cli {
namespace {

namespace ss = search::subst;

struct GenerateCli {
  std::string ops = "taso";
  int max_ops = 3;
  int max_outputs = 2;
  std::uint64_t seed = 1;
  double tolerance = 1e-5;
  bool keep_unrelated = false;
  std::string output;
};

void run_generate(const GenerateCli& o) {
  util::check_output_path(o.output);  // refused before the enumeration runs, not after
  ss::GeneratorOptions go;
  go.ops = ss::parse_operator_set(o.ops);
  go.max_ops = o.max_ops;
  go.max_outputs = o.max_outputs;
  go.seed = o.seed;
  go.tolerance = o.tolerance;
  go.prune_unrelated = !o.keep_unrelated;
  go.progress = [](std::string_view line) { fmt::print(stderr, "{}\n", line); };
  const auto res = ss::generate_rules(go);
  ss::save_rules(o.output, res.rules);
  const auto& s = res.stats;
  fmt::print("operator instances: {}\n", go.ops.size());
  fmt::print("graphs enumerated:  {}\n", s.graphs);
  fmt::print("operator evaluations: {}\n", s.evaluations);
  fmt::print("fingerprints:       {}\n", s.fingerprints);
  fmt::print("candidate pairs:    {}\n", s.candidates);
  fmt::print("after common sub/supergraph: {}\n", s.after_common_subgraph);
  fmt::print("after exact duplicates:      {}\n", s.after_duplicates);
  fmt::print("after input renaming:        {}\n", s.after_renaming);
  fmt::print("after unrelated equations:   {}\n", s.after_unrelated);
  fmt::print("float rejected:     {}\n", s.float_rejected);
  fmt::print("rules written:      {} -> {}\n", res.rules.size(), o.output);
  fmt::print("time {:.2f} s, peak RSS {:.1f} MiB\n", s.seconds, static_cast<double>(s.peak_rss_kib) / 1024.0);
}

struct OptimizeCli {
  std::string model, hw, rules, output, cost_params;
  double alpha = 1.05;
  int budget = 1000;
  double min_gain_percent = 100 * ss::kDefaultMinGain;
  std::int64_t batch = 0, seq = 0;
  std::uint64_t seed = 1;
  bool check = true;
  std::string xfers = "all", listing;
  EqsatCli eqsat;  // --optimizer and the eqsat options (cli_optimize_eqsat.h)
};

void run_optimize(const OptimizeCli& o) {
  for (const auto& path : {o.output, o.listing})  // a bad output path is refused before the search runs
    if (!path.empty()) util::check_output_path(path);
  auto setup = experiments::prepare_optimize({o.model, o.hw, o.rules, o.cost_params, o.xfers, o.alpha,
                                              o.budget, o.batch, o.seq, o.min_gain_percent});
  const auto& topo = setup.topo;
  const auto& g = setup.graph;
  const auto& rules = setup.rules;
  const auto& cost = setup.cost;
  auto& opt = setup.options;
  opt.progress = [](std::string_view line) { fmt::print(stderr, "{}\n", line); };
  fmt::print("model {}: {} nodes; {} rules; device {}\n", g.name(), g.nodes().size(), rules.size(),
             topo.gpu().name);
  if (o.eqsat.optimizer != "backtrack") {
    run_eqsat_optimize(o.eqsat, g, rules, cost, opt, o.output, o.check, o.seed);
    return;
  }
  const auto res = ss::optimize(g, rules, cost, opt);
  fmt::print("predicted time before: {:.4f} ms\n", res.cost_before * 1e3);
  fmt::print("predicted time after:  {:.4f} ms ({:.2f}x), {} -> {} nodes\n", res.cost_after * 1e3,
             res.cost_after > 0 ? res.cost_before / res.cost_after : 0.0, g.nodes().size(),
             res.graph.nodes().size());
  if (res.declined_cost)
    fmt::print("{}\n", ss::declined_note(res.cost_before, res.declined_cost, opt.min_gain));
  fmt::print("search: {} graphs explored, {} generated, {:.2f} s\n", res.explored, res.generated,
             res.seconds);
  fmt::print("substitutions applied ({}):\n", res.applied.size());
  for (const auto& a : res.applied) fmt::print("  rule {} at {}\n", a.rule, fmt::join(a.nodes, ", "));
  if (!o.output.empty()) {
    experiments::export_optimized(res.graph, o.output);
    fmt::print("wrote {} (weight-only nodes folded into parameters)\n", o.output);
  }
  if (!o.listing.empty()) {
    util::write_file_atomically(o.listing, ss::graph_listing(res.graph));
    fmt::print("wrote {}\n", o.listing);
  }
  if (o.check) {
    const auto c = ss::check_same_function(g, res.graph, {.seed = o.seed});
    fmt::print("check (reference executor, random inputs seed {}): {}\n", o.seed, c.verdict());
    if (!c.pass())
      throw std::runtime_error("check failed: the optimized graph computes a different function");
  }
}

}  // namespace

void add_optimize_commands(CLI::App& app) {
  auto* subst = app.get_subcommand("subst");  // created by add_subst_commands
  auto o = std::make_shared<GenerateCli>();
  auto* g = subst->add_subcommand(
      "generate",
      "enumerate graphs of up to N operators, pair equal fingerprints, confirm in double "
      "precision, prune, write rules (progress on stderr)");
  g->add_option(
       "--ops", o->ops,
       "operator set: taso, or a comma-separated list (ewadd,ewmul,smul,matmul,transpose,"
       "transpose_layout,relu,conv2d,conv2d_relu,poolavg,poolmax,concat,split,enlarge,constants, or a "
       "parameterless symbol of another operator with a rule form: sigmoid, tanh)")
      ->capture_default_str();
  add_int_option(*g, "--max-ops", o->max_ops, {1, 4}, "largest graph size in operators");
  add_int_option(*g, "--max-outputs", o->max_outputs, {1, 8}, "largest number of mapped outputs of a rule");
  add_int_option(*g, "--seed", o->seed, kSeedRange, "seed of the random inputs");
  add_real_option(*g, "--tolerance", o->tolerance, 0, 1,
                  "relative tolerance of the floating-point confirmation");
  g->add_flag(
      "--keep-unrelated", o->keep_unrelated,
      "keep multi-output rules whose outputs share no operator, e.g. over disjoint inputs (conjunctions of "
      "smaller rules; TASO keeps them)");
  g->add_option("-o,--output", o->output, "rule file to write (strata rule format)")->required();
  g->callback([o] { run_generate(*o); });

  auto p = std::make_shared<OptimizeCli>();
  auto* opt = app.add_subcommand(
      "optimize",
      "Cost-based backtracking search over substitution rules (TASO): predicted time before "
      "and after, the substitutions applied, ONNX output, equality check by the reference "
      "executor");
  opt->add_option("--model", p->model, "zoo model name, transformer:key=value,..., model YAML or .onnx file")
      ->required();
  opt->add_option("--hw", p->hw, "system YAML; its GPU prices the operators")->required();
  add_cost_params_option(*opt, p->cost_params);
  opt->add_option(
      "--rules", p->rules,
      "rule file (strata or TASO format); default: configs/subst/taso_shipped_verified.rules, the 129 of "
      "TASO's 133 shipped rules that `strata subst verify` proves");
  add_real_option(*opt, "--alpha", p->alpha, 1.0, 10.0, "relaxation: keep graphs cheaper than alpha * best");
  add_int_option(*opt, "--budget", p->budget, {1, 100000000}, "graphs taken from the priority queue");
  add_min_gain_option(*opt, p->min_gain_percent);
  add_int_option(*opt, "--batch", p->batch, {0, kMaxModelDim}, "batch size (zoo models; 0: model default)",
                 false);
  add_int_option(*opt, "--seq", p->seq, {0, kMaxModelDim},
                 "sequence length (zoo sequence models; 0: model default)", false);
  add_int_option(*opt, "--seed", p->seed, kSeedRange, "seed of the random inputs of the equality check");
  opt->add_flag("!--no-check", p->check, "skip the reference-executor equality check");
  opt->add_option("-o,--output", p->output, "write the optimized graph as ONNX");
  opt->add_option("--listing", p->listing, "write a readable listing of the optimized graph (backtrack)");
  opt->add_option(
         "--xfers", p->xfers,
         "hand-written transformations used besides the rules: all, none, or a comma-separated list of "
         "fuse_conv_batchnorm, fuse_conv_relu, merge_convs, merge_gconv, matmul_operand_layout "
         "(search/subst/xfers.h)")
      ->capture_default_str();
  add_eqsat_options(*opt, p->eqsat);
  opt->callback([p] { run_optimize(*p); });
}

}  // namespace strata::cli
