// strata subst generate: automatic generation of candidate substitutions (search/subst/generator.h,
// docs/subst.md). Registered as a subcommand of the `subst` group, which cli_subst.cc creates.
#include <cstdio>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "experiments/cli.h"
#include "search/subst/generator.h"
#include "search/subst/rule.h"

namespace strata::cli {
namespace {

namespace ss = search::subst;

struct GenerateCli {
  std::string ops = "taso";
  int max_ops = 3;
  std::uint64_t seed = 1;
  double tolerance = 1e-5;
  std::string output;
};

void run_generate(const GenerateCli& o) {
  ss::GeneratorOptions go;
  go.ops = ss::parse_operator_set(o.ops);
  go.max_ops = o.max_ops;
  go.seed = o.seed;
  go.tolerance = o.tolerance;
  go.progress = [](std::string_view line) { fmt::print(stderr, "{}\n", line); };
  const auto res = ss::generate_rules(go);
  ss::save_rules(o.output, res.rules);
  const auto& s = res.stats;
  fmt::print("operator instances: {}\n", go.ops.size());
  fmt::print("graphs enumerated:  {}\n", s.graphs);
  fmt::print("fingerprints:       {}\n", s.fingerprints);
  fmt::print("candidate pairs:    {}\n", s.candidates);
  fmt::print("float rejected:     {}\n", s.float_rejected);
  fmt::print("after duplicates:   {}\n", s.after_duplicates);
  fmt::print("after renaming:     {}\n", s.after_renaming);
  fmt::print("after common sub/supergraph: {} rules -> {}\n", s.after_common_subgraph, o.output);
  fmt::print("time {:.2f} s, peak RSS {:.1f} MiB\n", s.seconds, static_cast<double>(s.peak_rss_kib) / 1024.0);
}

}  // namespace

void add_optimize_commands(CLI::App& app) {
  auto* subst = app.get_subcommand("subst");  // created by add_subst_commands
  auto o = std::make_shared<GenerateCli>();
  auto* g = subst->add_subcommand("generate",
                                  "enumerate graphs of up to N operators, pair equal fingerprints, confirm in double "
                                  "precision, prune, write rules (progress on stderr)");
  g->add_option("--ops", o->ops, "operator set: taso, or a comma-separated list (ewadd,ewmul,smul,matmul,transpose,"
                                 "relu,conv2d,conv2d_relu,poolavg,poolmax,concat,split,enlarge,constants)")
      ->capture_default_str();
  g->add_option("--max-ops", o->max_ops, "largest graph size in operators (1..4)")->capture_default_str()->check(CLI::Range(1, 4));
  g->add_option("--seed", o->seed, "seed of the random inputs")->capture_default_str();
  g->add_option("--tolerance", o->tolerance, "relative tolerance of the floating-point confirmation")->capture_default_str();
  g->add_option("-o,--output", o->output, "rule file to write (strata rule format)")->required();
  g->callback([o] { run_generate(*o); });
}

}  // namespace strata::cli
