// strata sim step | strata parallelize: one simulated training step of a transformer under an LLM strategy,
// and the search over strategies (search/parallel, docs/parallel.md).
#include <functional>
#include <iostream>
#include <memory>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "experiments/cli.h"
#include "experiments/cli_options.h"
#include "experiments/cli_parallel.h"
#include "experiments/parallel_report.h"
#include "experiments/system_report.h"
#include "hw/config_error.h"
#include "hw/system_loader.h"
#include "hw/units.h"
#include "models/zoo/model_ref.h"
#include "search/parallel/llm_search.h"
#include "sim/trace.h"
#include "util/atomic_file.h"

namespace strata::cli {
namespace {

namespace par = search::parallel;

struct StepOptions {
  std::string model, hw, recompute = "none", dtype = "bf16", format = "text", trace, schedule, placement;
  int nodes = 0, tp = 1, pp = 1, dp = 1, cp = 1, ep = 1, micro_batch = 1, virtual_stages = 1, zero = 0;
  std::int64_t global_batch = 0, seq = 0;
  bool sequence_parallel = false, no_overlap = false;
  double bucket_mb = 0;
};

std::string format_seconds(double s) {
  return s >= 1 ? fmt::format("{:.3f} s", s) : fmt::format("{:.3f} ms", s * 1e3);
}

void print_result_text(const par::LlmStepResult& r) {
  const auto& m = r.memory;
  std::cout << fmt::format("strategy    {}\nplacement   {} (rows pp, dp, cp, tp; columns: machine levels)\n",
                           r.strategy.describe(), r.placement_text);
  std::cout << fmt::format(
      "memory      {} of {} per GPU on stage {} ({}): weights {}, gradients {}, optimizer {}, activations "
      "{}, "
      "comm buffers {}, reserve {}\n",
      units::format_bytes(m.total()), units::format_bytes(r.capacity), m.stage,
      r.fits ? "fits" : "OUT OF MEMORY", units::format_bytes(m.weights), units::format_bytes(m.gradients),
      units::format_bytes(m.optimizer), units::format_bytes(m.activations),
      units::format_bytes(m.comm_buffers), units::format_bytes(m.reserve));
  if (!r.simulated) return;
  const auto& b = r.breakdown;
  std::cout << fmt::format("step        {}   MFU {:.1f}%   {:.0f} tokens/s   {:.1f} TFLOP/s per GPU\n",
                           format_seconds(r.step_seconds), r.mfu * 100, r.tokens_per_second,
                           r.model_flops / r.step_seconds / r.strategy.gpus() / 1e12);
  std::cout << fmt::format(
      "breakdown   (stage {}) compute {}, recompute {}, exposed TP {}, CP {}, EP {}, pipeline bubble {}, "
      "exposed "
      "DP {}, optimizer {}\n",
      b.stage, format_seconds(b.compute), format_seconds(b.recompute), format_seconds(b.tp_comm),
      format_seconds(b.cp_comm), format_seconds(b.ep_comm), format_seconds(b.bubble),
      format_seconds(b.dp_exposed), format_seconds(b.optimizer));
  std::string iso;
  for (int c = 0; c < par::kNumCommClasses; ++c)
    if (r.isolated[static_cast<std::size_t>(c)])
      iso += (iso.empty() ? "" : ", ") + std::string(par::comm_class_name(par::CommClass(c)));
  std::cout << fmt::format("simulated   {} tasks; communication simulated alone (links of its own): {}\n",
                           r.tasks, iso.empty() ? "none" : iso);
}

void run_step_command(const StepOptions& o) {
  if (!o.trace.empty()) util::check_output_path(o.trace);
  if (o.format != "text" && o.format != "json")
    throw ConfigError(fmt::format("--format: expected text or json, got '{}'", o.format));
  experiments::StepQuery q;
  q.model = o.model, q.hw = o.hw, q.recompute = o.recompute, q.dtype = o.dtype, q.schedule = o.schedule;
  q.placement = o.placement, q.nodes = o.nodes, q.tp = o.tp, q.pp = o.pp, q.dp = o.dp, q.cp = o.cp;
  q.ep = o.ep, q.micro_batch = o.micro_batch, q.virtual_stages = o.virtual_stages, q.zero = o.zero;
  q.global_batch = o.global_batch, q.seq = o.seq, q.sequence_parallel = o.sequence_parallel;
  q.no_overlap = o.no_overlap, q.bucket_mb = o.bucket_mb, q.record_timeline = !o.trace.empty();
  const auto report = experiments::simulate_step(q);
  const auto& topo = report.topo;
  const auto& spec = report.spec;
  const auto& r = report.result;
  if (o.format == "json") {
    std::cout << experiments::step_json(report).dump(2) << "\n";
  } else {
    std::cout << fmt::format("model       {} ({}) on {} x {} ({} GPUs, {})\n", spec.name,
                             models::zoo::format_transformer_spec(spec), topo.nodes(), topo.gpus_per_node(),
                             topo.num_gpus(), topo.gpu().name);
    print_result_text(r);
  }
  if (o.trace.empty()) return;
  experiments::write_step_trace(report, o.trace);
  if (o.format == "text")
    std::cout << fmt::format("trace       {} (open in https://ui.perfetto.dev)\n", o.trace);
}

void add_strategy_options(CLI::App& cmd, StepOptions& o) {
  add_int_option(cmd, "--tp", o.tp, {1, 1 << 16}, "Tensor-parallel size");
  add_int_option(cmd, "--pp", o.pp, {1, 1 << 16}, "Pipeline stages");
  add_int_option(cmd, "--dp", o.dp, {1, 1 << 20}, "Data-parallel size");
  add_int_option(cmd, "--cp", o.cp, {1, 1 << 16}, "Context-parallel size");
  add_int_option(cmd, "--ep", o.ep, {1, 1 << 16}, "Expert-parallel size (MoE models; divides --dp)");
  add_int_option(cmd, "--micro-batch", o.micro_batch, {1, 1 << 16}, "Sequences per micro-batch");
  add_int_option(cmd, "--virtual-stages", o.virtual_stages, {1, 1 << 10},
                 "Model chunks per GPU (> 1 selects the interleaved 1F1B schedule)");
  cmd.add_option("--schedule", o.schedule,
                 "Pipeline schedule: gpipe, 1f1b, interleaved (default: 1f1b, or "
                 "interleaved with --virtual-stages > 1)");
  cmd.add_option("--recompute", o.recompute, "Activation recomputation: none, selective, full")
      ->capture_default_str();
  cmd.add_flag("--sequence-parallel", o.sequence_parallel,
               "Sequence parallelism (norms on seq/tp; all-reduce -> reduce-scatter + all-gather)");
  add_int_option(cmd, "--zero", o.zero, {0, 3},
                 "ZeRO stage: 0 plain DP, 1 optimizer state, 2 + gradients, 3 + "
                 "parameters (FSDP)");
  add_real_option(cmd, "--bucket-mb", o.bucket_mb, 0, 1e6,
                  "Gradient bucket in MB (10^6 B); 0 = Megatron-core's max(40M, 1M x dp) parameters");
  cmd.add_flag("--no-overlap", o.no_overlap,
               "Reduce gradients after the backward pass instead of overlapping it");
  cmd.add_option(
      "--placement", o.placement,
      "Axis placement as a JSON matrix, rows pp, dp, cp, tp, columns machine levels outermost first "
      "(default: Megatron's order, tp innermost)");
}

struct SearchCliOptions {
  std::string model, hw, search = "exhaustive", format = "text", dtype = "bf16";
  int nodes = 0, top = 10;
  std::int64_t global_batch = 0, seq = 0;
  bool megatron_placement_only = false;
  McmcCliOptions mcmc;
};

void print_search_text(const par::LlmSearchResult& s) {
  const auto& c = s.counts;
  std::cout << fmt::format(
      "searched    {} strategies in {:.2f} s: {} invalid for the model, {} out of memory; {} plans (ZeRO "
      "variants x placements): {} pruned by the lower bounds ({} of them after a run without contention), "
      "{} simulated\n",
      c.enumerated, s.seconds, c.invalid, c.out_of_memory, c.plans, c.pruned, c.uncontended - c.simulated,
      c.simulated);
  std::cout << fmt::format("{:>4} {:>11} {:>6} {:>10} {:>10} {:>5}  {}\n", "rank", "step", "MFU", "tokens/s",
                           "memory", "fits", "strategy / placement");
  int rank = 1;
  auto row = [](const std::string& name, const par::LlmStepResult& r) {
    if (!r.simulated) {  // out of memory: reported, not simulated
      std::cout << fmt::format("{:>4} {:>11} {:>6} {:>10} {:>10} {:>5}  {} / {}\n", name, "-", "-", "-",
                               units::format_bytes(r.memory.total()), "no", r.strategy.describe(),
                               r.placement_text);
      return;
    }
    std::cout << fmt::format("{:>4} {:>11} {:>5.1f}% {:>10.0f} {:>10} {:>5}  {} / {}\n", name,
                             format_seconds(r.step_seconds), r.mfu * 100, r.tokens_per_second,
                             units::format_bytes(r.memory.total()), r.fits ? "yes" : "no",
                             r.strategy.describe(), r.placement_text);
  };
  for (const auto& r : s.top) row(std::to_string(rank++), r);
  if (s.expert)
    row("exp", *s.expert);
  else
    std::cout << "  exp  (no Megatron-style expert plan divides the model, batch and GPUs)\n";
  if (s.data_parallel)
    row("dp", *s.data_parallel);
  else
    std::cout << "   dp  (pure data parallelism does not fit in memory)\n";
}

void run_search_command(const SearchCliOptions& o) {
  if (o.format != "text" && o.format != "json")
    throw ConfigError(fmt::format("--format: expected text or json, got '{}'", o.format));
  if (experiments::parse_search_kind(o.search) == experiments::SearchKind::kMcmc) {
    run_mcmc_search(o.model, experiments::load_cluster(o.hw, o.nodes), o.global_batch, o.seq, o.mcmc,
                    o.format);
    return;
  }
  const experiments::SearchQuery q{o.model, o.hw,           o.dtype, o.nodes,
                                   o.top,   o.global_batch, o.seq,   o.megatron_placement_only};
  std::function<void(std::size_t, double)> progress;
  if (o.format == "text")
    progress = [](std::size_t n, double best) {
      std::cerr << fmt::format("\r  simulated {} plans, best step {}   ", n, format_seconds(best))
                << std::flush;
    };
  const auto report = experiments::search_strategies(q, progress);
  if (o.format == "text") std::cerr << "\n";
  if (o.format == "json") {
    std::cout << experiments::search_json(report).dump(2) << "\n";
    return;
  }
  std::cout << fmt::format("model       {} on {} x {} ({} GPUs, {}), global batch {}\n", report.spec.name,
                           report.topo.nodes(), report.topo.gpus_per_node(), report.topo.num_gpus(),
                           report.topo.gpu().name, o.global_batch);
  print_search_text(report.result);
}

}  // namespace

void add_parallel_commands(CLI::App& app) {
  auto* sim_cmd = app.get_subcommand("sim");
  auto o = std::make_shared<StepOptions>();
  auto* step = sim_cmd->add_subcommand(
      "step",
      "Simulate one training step of a transformer under a parallel strategy: step time, MFU, tokens/s, "
      "per-GPU peak memory and whether it fits, and a breakdown");
  step->add_option("--model", o->model, kModelHelp)->required();
  step->add_option("--hw", o->hw, "System YAML file")->required();
  add_int_option(*step, "--nodes", o->nodes, {1, hw::limits::kMaxNodes},
                 "Number of nodes (overrides the file)", false);
  add_int_option(*step, "--global-batch", o->global_batch, {1, std::int64_t{1} << 30},
                 "Sequences per optimizer step", false)
      ->required();
  add_int_option(*step, "--seq", o->seq, {1, kMaxModelDim}, "Sequence length (default: the model's)", false);
  add_strategy_options(*step, *o);
  step->add_option("--dtype", o->dtype, "Compute type: bf16, fp16, fp8")->capture_default_str();
  step->add_option("--format", o->format, "Output: text or json")->capture_default_str();
  step->add_option("--trace", o->trace, "Write a Chrome/Perfetto trace of the step to this JSON file");
  step->callback([o] { run_step_command(*o); });

  auto so = std::make_shared<SearchCliOptions>();
  auto* par_cmd = app.add_subcommand(
      "parallelize", "Search parallelization strategies for a model on a cluster and print the ranked plans");
  par_cmd->add_option("--model", so->model, kModelHelp)->required();
  par_cmd->add_option("--hw", so->hw, "System YAML file")->required();
  add_int_option(*par_cmd, "--nodes", so->nodes, {1, hw::limits::kMaxNodes},
                 "Number of nodes (overrides the file)", false);
  add_int_option(*par_cmd, "--global-batch", so->global_batch, {1, std::int64_t{1} << 30},
                 "Sequences (samples for non-transformer models) per optimizer step", false)
      ->required();
  add_int_option(*par_cmd, "--seq", so->seq, {1, kMaxModelDim}, "Sequence length (default: the model's)",
                 false);
  par_cmd
      ->add_option("--search", so->search,
                   "exhaustive: every LLM strategy (transformers); mcmc: FlexFlow-style per-operator plans "
                   "(any model)")
      ->capture_default_str();
  add_int_option(*par_cmd, "--top", so->top, {1, 1000}, "Plans to print");
  par_cmd->add_option("--dtype", so->dtype, "Compute type: bf16, fp16, fp8")->capture_default_str();
  par_cmd->add_flag(
      "--megatron-placement", so->megatron_placement_only,
      "Only Megatron's axis order (tp innermost); default: also every other placement of the best "
      "strategies");
  add_int_option(*par_cmd, "--proposals", so->mcmc.proposals, {0, std::int64_t{1} << 40},
                 "mcmc: proposals per chain (0 with --time-limit: until the time is spent)");
  add_int_option(*par_cmd, "--seed", so->mcmc.seed, kSeedRange, "mcmc: random seed (same seed, same result)");
  add_real_option(
      *par_cmd, "--time-limit", so->mcmc.seconds, 0, 86400,
      "mcmc: wall-clock seconds per chain, 0 = none (results then depend on the machine's speed)");
  par_cmd->add_option("--format", so->format, "Output: text or json")->capture_default_str();
  par_cmd->callback([so] { run_search_command(*so); });
}

}  // namespace strata::cli
