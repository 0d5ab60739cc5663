// The `llm-reproduction` experiment kind (configs/experiments/repro/megatron.yaml): published LLM training
// runs (model shape, TP x PP x DP, GPUs, global batch and the throughput they reached) simulated step by step
// by strata (search/parallel: simulate_llm_step) with the same shape and strategy, reported beside the
// published numbers (side_by_side.h). parse: every table and row checked and every system loaded; run: one
// simulated step per row; report: side_by_side.csv/png, steps.csv and summary.md.
#include <algorithm>
#include <iostream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "experiments/experiment.h"
#include "experiments/side_by_side.h"
#include "experiments/sweep_report.h"
#include "hw/units.h"
#include "models/zoo/model_ref.h"
#include "search/parallel/llm_step.h"
#include "util/timer.h"

namespace strata::experiments {
namespace {

namespace par = search::parallel;
namespace zoo = models::zoo;
namespace sbs = side_by_side;

// The fields a table and a row of `paper:` hold for this kind (besides side_by_side's own).
constexpr std::string_view kTableKeys[] = {
    "hw",   "seq",         "vocab",    "attention",      "recompute", "sequence_parallel",
    "zero", "micro_batch", "schedule", "virtual_stages", "flops",     "dtype"};
constexpr std::string_view kRowKeys[] = {"heads", "hidden", "layers", "tp",          "pp",
                                         "dp",    "gpus",   "batch",  "micro_batch", "virtual_stages"};
// The metrics this kind computes; a table may publish any of them.
constexpr std::string_view kMetrics[] = {"tflops_per_gpu", "percent_of_peak", "aggregate_pflops",
                                         "step_seconds"};

// How the published throughput counts FLOPs: `model` (no recomputation: Megatron's MFU) or `with-recompute`
// (Narayanan et al. SC'21, eq. 3: the forward pass of every layer counted twice under full recomputation).
enum class FlopCount : std::uint8_t { kModel, kWithRecompute };

struct RowPlan {
  std::string table, key;
  zoo::TransformerSpec spec;
  par::LlmStrategy strategy;
  hw::Topology topology;
  FlopCount flops = FlopCount::kModel;
};

struct Config {
  std::string name, description;
  sbs::Paper paper;
  std::vector<RowPlan> rows;
};

struct RowResult {
  par::LlmStepResult step;
  double counted_flops = 0;  // per step, in the table's convention
  double seconds = 0;        // wall time of the simulation
};

struct Results {
  std::vector<RowResult> rows;
  double seconds = 0;
};

// The FLOPs per step a published table counts for `spec` at `global_batch`. strata's model FLOPs are three
// forward passes (search/parallel model_flops_per_step; for GPT shapes 72·B·s·L·h²·(1 + s/(6h) +
// V/(12·h·L))); SC'21's eq. 3, 96·B·s·L·h²·(1 + s/(6h) + V/(16·h·L)), adds the forward pass of the layers
// once more (full recomputation) but not that of the logits (2·B·s·h·V).
double counted_flops(const zoo::TransformerSpec& spec, std::int64_t global_batch, FlopCount count) {
  const double model = par::model_flops_per_step(spec, global_batch);
  if (count == FlopCount::kModel) return model;
  const double logits_forward = 2.0 * static_cast<double>(global_batch) * static_cast<double>(spec.seq) *
                                static_cast<double>(spec.hidden) * static_cast<double>(spec.vocab);
  return model + (model / 3 - logits_forward);
}

struct TableDefaults {
  std::string hw_field;
  std::int64_t seq = 0, vocab = 0;
  zoo::AttentionImpl attention = zoo::AttentionImpl::kFlash;
  par::LlmStrategy strategy;  // recompute, sp (where tp > 1), zero, micro-batch, schedule, dtype
  bool sequence_parallel = false;
  FlopCount flops = FlopCount::kModel;
};

TableDefaults read_table_defaults(const sbs::Table& t) {
  const YamlReader& n = t.node;
  TableDefaults d;
  d.hw_field = n.at("hw").as_string();
  d.seq = n.at("seq").as_int_in(1, 1LL << 20);
  d.vocab = n.at("vocab").as_int_in(1, 1LL << 24);
  if (auto a = n.maybe("attention")) {
    const std::string v = a->as_string();
    if (v != "flash" && v != "naive") throw a->error(fmt::format("expected flash or naive, got '{}'", v));
    d.attention = v == "flash" ? zoo::AttentionImpl::kFlash : zoo::AttentionImpl::kNaive;
  }
  auto& s = d.strategy;
  if (auto r = n.maybe("recompute")) {
    const auto rc = par::parse_recompute(r->as_string());
    if (!rc) throw r->error(fmt::format("expected none, selective or full, got '{}'", r->as_string()));
    s.recompute = *rc;
  }
  if (auto f = n.maybe("sequence_parallel")) d.sequence_parallel = f->as_bool();
  if (auto f = n.maybe("zero")) s.zero = f->as_int32_in(0, 3);
  if (auto f = n.maybe("micro_batch")) s.micro_batch = f->as_int32_in(1, 1 << 16);
  if (auto f = n.maybe("virtual_stages")) s.virtual_stages = f->as_int32_in(1, 1024);
  s.schedule = s.virtual_stages > 1 ? par::PipelineSchedule::kInterleaved : par::PipelineSchedule::kOneFOneB;
  if (auto f = n.maybe("schedule")) {
    const auto sched = par::parse_schedule(f->as_string());
    if (!sched) throw f->error(fmt::format("expected gpipe, 1f1b or interleaved, got '{}'", f->as_string()));
    s.schedule = *sched;
  }
  if (auto f = n.maybe("dtype")) {
    const auto dt = hw::parse_dtype(f->as_string());
    if (!dt || (*dt != hw::DType::kBf16 && *dt != hw::DType::kFp16))
      throw f->error(fmt::format("expected bf16 or fp16, got '{}'", f->as_string()));
    s.dtype = *dt;
  }
  if (auto f = n.maybe("flops")) {
    const std::string v = f->as_string();
    if (v != "model" && v != "with-recompute")
      throw f->error(fmt::format("expected model or with-recompute, got '{}'", v));
    d.flops = v == "model" ? FlopCount::kModel : FlopCount::kWithRecompute;
  }
  for (const auto& m : t.metrics)
    if (std::find(std::begin(kMetrics), std::end(kMetrics), m.key) == std::end(kMetrics))
      throw n.at("metrics").error(
          fmt::format("unknown metric '{}' (this kind computes: {})", m.key, fmt::join(kMetrics, ", ")));
  return d;
}

RowPlan read_row(const ExperimentFile& file, const sbs::Table& t, const TableDefaults& d, const sbs::Row& r) {
  const YamlReader& n = r.node;
  const auto heads = n.at("heads").as_int_in(1, 1 << 20), hidden = n.at("hidden").as_int_in(1, 1 << 24);
  const auto layers = n.at("layers").as_int_in(1, 1 << 16);
  const std::string ref = fmt::format("transformer:layers={},hidden={},heads={},vocab={},seq={}", layers,
                                      hidden, heads, d.vocab, d.seq);
  zoo::TransformerSpec spec;
  try {
    spec = *zoo::training_transformer(zoo::resolve_model_ref(ref));
  } catch (const std::invalid_argument& e) {
    throw n.error(fmt::format("the row's model {}: {}", ref, e.what()));
  }
  spec.name = r.key;
  spec.attention = d.attention;
  par::LlmStrategy s = d.strategy;
  s.tp = n.at("tp").as_int32_in(1, 1 << 16);
  s.pp = n.at("pp").as_int32_in(1, 1 << 16);
  const int gpus = n.at("gpus").as_int32_in(1, 1 << 20);
  if (gpus % (s.tp * s.pp) != 0)
    throw n.at("gpus").error(fmt::format("expected a multiple of tp x pp = {}", s.tp * s.pp));
  s.dp = gpus / (s.tp * s.pp);
  if (auto f = n.maybe("dp"); f && f->as_int() != s.dp)
    throw f->error(fmt::format("gpus / (tp x pp) is {}, not {}", s.dp, f->as_int()));
  s.global_batch = n.at("batch").as_int_in(1, 1LL << 30);
  if (auto f = n.maybe("micro_batch")) s.micro_batch = f->as_int32_in(1, 1 << 16);
  if (auto f = n.maybe("virtual_stages")) {
    s.virtual_stages = f->as_int32_in(1, 1024);
    if (s.virtual_stages > 1) s.schedule = par::PipelineSchedule::kInterleaved;
  }
  s.sequence_parallel = d.sequence_parallel && s.tp > 1;
  if (s.dp == 1) s.zero = 0;
  const YamlReader hw = t.node.at("hw");
  const int per_node = file.load_system(hw).gpus_per_node();
  if (gpus % per_node != 0)
    throw n.at("gpus").error(
        fmt::format("expected a multiple of the {} GPUs of a node of {}", per_node, d.hw_field));
  RowPlan plan{t.name, r.key, std::move(spec), s, file.load_system(hw, gpus / per_node), d.flops};
  if (const auto why = par::strategy_problems(plan.spec, s, plan.topology); !why.empty())
    throw n.error(fmt::format("strata cannot run the published strategy {}: {}", s.describe(), why));
  return plan;
}

Config parse(const ExperimentFile& file) {
  file.expect_keys({"paper"});
  Config x{file.name(), file.description(), {}, {}};
  x.paper = sbs::parse_paper(file.root().at("paper"), kTableKeys, kRowKeys);
  for (const auto& t : x.paper.tables) {
    const TableDefaults d = read_table_defaults(t);
    for (const auto& r : t.rows) x.rows.push_back(read_row(file, t, d, r));
  }
  return x;
}

Results run(const Config& x) {
  util::Stopwatch total;
  Results results;
  for (std::size_t i = 0; i < x.rows.size(); ++i) {
    const auto& p = x.rows[i];
    util::Stopwatch clock;
    const models::CostModel cost(p.topology.gpu());
    RowResult r{par::simulate_llm_step(p.spec, p.strategy, p.topology, cost), 0, 0};
    r.counted_flops = counted_flops(p.spec, p.strategy.global_batch, p.flops);
    r.seconds = clock.seconds();
    std::cerr << fmt::format("[{}/{}] {} {}: {} GPUs, step {:.3f} s, {:.1f} TFLOP/s per GPU{} ({:.2f} s)\n",
                             i + 1, x.rows.size(), p.table, p.key, p.strategy.gpus(), r.step.step_seconds,
                             r.counted_flops / r.step.step_seconds / p.strategy.gpus() / 1e12,
                             r.step.fits ? "" : ", out of memory", r.seconds);
    results.rows.push_back(std::move(r));
  }
  results.seconds = total.seconds();
  return results;
}

sbs::Measured measured(const Config& x, const Results& results) {
  sbs::Measured m;
  for (std::size_t i = 0; i < x.rows.size(); ++i) {
    const auto& p = x.rows[i];
    const auto& r = results.rows[i];
    const double gpus = p.strategy.gpus();
    const double tflops = r.counted_flops / r.step.step_seconds / gpus / 1e12;
    m.set(p.table, p.key, "tflops_per_gpu", tflops);
    m.set(p.table, p.key, "percent_of_peak",
          100 * tflops * 1e12 / p.topology.gpu().peak_flops(p.strategy.dtype));
    m.set(p.table, p.key, "aggregate_pflops", tflops * gpus / 1e3);
    m.set(p.table, p.key, "step_seconds", r.step.step_seconds);
    std::string note = p.strategy.describe();
    if (!r.step.fits)
      note += fmt::format(", needs {} of {} per GPU", units::format_bytes(r.step.memory.total()),
                          units::format_bytes(r.step.capacity));
    m.note(p.table, p.key, note);
  }
  return m;
}

constexpr const char* kStepsHeader =
    "table,row,strategy,gpus,step_s,counted_flops,model_flops,peak_memory_bytes,capacity_bytes,fits,compute_"
    "s,"
    "recompute_s,tp_comm_s,bubble_s,dp_exposed_s,optimizer_s\n";

std::string steps_csv(const Config& x, const Results& results) {
  std::string csv = kStepsHeader;
  for (std::size_t i = 0; i < x.rows.size(); ++i) {
    const auto& p = x.rows[i];
    const auto& r = results.rows[i];
    const auto& b = r.step.breakdown;
    csv += fmt::format(
        "{},{},{},{},{:.9g},{:.6g},{:.6g},{:.0f},{:.0f},{},{:.9g},{:.9g},{:.9g},{:.9g},{:.9g},{:.9g}\n",
        csv_field(p.table), csv_field(p.key), csv_field(p.strategy.describe()), p.strategy.gpus(),
        r.step.step_seconds, r.counted_flops, r.step.model_flops, r.step.memory.total(), r.step.capacity,
        r.step.fits ? "true" : "false", b.compute, b.recompute, b.tp_comm, b.bubble, b.dp_exposed,
        b.optimizer);
  }
  return csv;
}

// Where strata's step goes, per row: the quantities the differences in the summary are argued from.
std::string breakdown_md(const Config& x, const Results& results) {
  std::string md =
      "\n## Where strata's simulated step goes\n\nShares of the step on the first pipeline stage "
      "(search/parallel/step_graph.h); `ideal` is counted FLOPs / (GPUs x dense peak), the step time at 100% "
      "of "
      "peak.\n\n| table | row | GPUs | step (s) | ideal (s) | compute | recompute | exposed TP | bubble | "
      "exposed DP "
      "| peak memory |\n|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (std::size_t i = 0; i < x.rows.size(); ++i) {
    const auto& p = x.rows[i];
    const auto& r = results.rows[i];
    const auto& b = r.step.breakdown;
    const double step = r.step.step_seconds;
    const double ideal =
        r.counted_flops / (p.strategy.gpus() * p.topology.gpu().peak_flops(p.strategy.dtype));
    auto pct = [&](double v) { return fmt::format("{:.1f}%", 100 * v / step); };
    md += fmt::format("| {} | {} | {} | {:.3f} | {:.3f} | {} | {} | {} | {} | {} | {} of {} |\n", p.table,
                      p.key, p.strategy.gpus(), step, ideal, pct(b.compute), pct(b.recompute), pct(b.tp_comm),
                      pct(b.bubble), pct(b.dp_exposed), units::format_bytes(r.step.memory.total()),
                      units::format_bytes(r.step.capacity));
  }
  return md;
}

void report(const Config& x, const Results& results, ResultsDir& out, const RunOptions& options) {
  const auto m = measured(x, results);
  std::string md = fmt::format(
      "# {}\n\n{}\n\nEach published row simulated by strata with the published model shape, TP x PP x DP, "
      "GPU "
      "count and global batch (`strata sim step`, search/parallel, docs/parallel.md); the run took {:.1f} s "
      "for {} rows. strata's throughput counts FLOPs as the published table does (its `flops:` field).\n",
      x.name, x.description, results.seconds, x.rows.size());
  md += sbs::markdown(x.paper, m);
  md += breakdown_md(x, results);
  out.write("steps.csv", steps_csv(x, results));
  md += "\n`steps.csv`: strata's step per row (strategy, step time, FLOPs, memory, breakdown).\n";
  sbs::write_outputs(x.paper, m, x.name, out, options, md);
  out.write("summary.md", md);
}

}  // namespace

ExperimentKind llm_reproduction_kind() {
  return make_kind(
      "llm-reproduction",
      "published LLM training runs (shape, TP x PP x DP, GPUs, batch) simulated by strata beside "
      "their published throughput",
      &parse, &run, &report);
}

}  // namespace strata::experiments
