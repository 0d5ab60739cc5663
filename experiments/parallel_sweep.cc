// The run and report steps of the `parallel-sweep` experiment kind (parallel_sweep.h): at each node count,
// the exhaustive strategy search (search/parallel/llm_search.h) gives the `best` plan and the pure
// data-parallel baseline, megatron_expert_strategy the expert plan, and every explicit strategy is simulated
// as written; plans.csv, summary.md, step_time.png, memory.png, breakdown.png.
#include <algorithm>
#include <iostream>

#include <fmt/format.h>

#include "experiments/parallel_sweep.h"
#include "hw/units.h"
#include "util/timer.h"

namespace strata::experiments::parallel_sweep {
namespace {

namespace par = search::parallel;

struct Row {  // one (node count, family)
  int nodes = 0, gpus = 0;
  std::int64_t global_batch = 0;
  std::string family;
  std::string status;                        // "ok", "out of memory" or "not applicable: <reason>"
  std::optional<par::LlmStepResult> result;  // the family's plan when it has one (simulated when it fits)
  std::string note;                          // in place of the strategy when there is no plan
  bool ok() const { return status == "ok"; }
};

struct SearchInfo {  // the search at one node count
  int nodes = 0, gpus = 0;
  par::LlmSearchCounts counts;
  double seconds = 0;
};

struct Results {
  std::vector<Row> rows;
  std::vector<SearchInfo> searches;
  double seconds = 0;
};

std::string format_seconds(double s) {
  return s >= 1 ? fmt::format("{:.3f} s", s) : fmt::format("{:.3f} ms", s * 1e3);
}

Row plan_row(const Point& p, std::string family, par::LlmStepResult r) {
  Row row{p.nodes, p.topology.num_gpus(), p.global_batch, std::move(family), "", std::nullopt, ""};
  row.status = r.fits ? "ok" : "out of memory";
  row.result = std::move(r);
  return row;
}

Row missing_row(const Point& p, std::string family, std::string status, std::string note) {
  return Row{p.nodes,           p.topology.num_gpus(), p.global_batch, std::move(family),
             std::move(status), std::nullopt,          std::move(note)};
}

// Pure data parallelism when no such plan of the search space fits: the leanest one (smallest micro-batch,
// the most recomputation and the highest ZeRO stage of the space), reported with its memory as out of memory.
Row leanest_data_parallel(const Config& x, const Point& p, const models::CostModel& cost) {
  par::LlmStrategy s;
  s.dp = p.topology.num_gpus();
  s.global_batch = p.global_batch;
  s.dtype = x.dtype;
  s.micro_batch = *std::min_element(x.space.micro_batches.begin(), x.space.micro_batches.end());
  s.recompute = *std::max_element(x.space.recompute.begin(), x.space.recompute.end());
  s.zero = s.dp > 1 ? *std::max_element(x.space.zero.begin(), x.space.zero.end()) : 0;
  if (const auto why = par::strategy_problems(x.spec, s, p.topology); !why.empty())
    return missing_row(p, std::string(kDataParallel), "not applicable: " + one_line(why), "");
  par::LlmStepOptions so;
  so.simulate_when_oom = false;
  return plan_row(p, std::string(kDataParallel), par::simulate_llm_step(x.spec, s, p.topology, cost, so));
}

void log_row(const Row& r) {
  std::string what = r.status;
  if (r.ok())
    what = fmt::format("{}, MFU {:.1f}% ({})", format_seconds(r.result->step_seconds), r.result->mfu * 100,
                       r.result->strategy.describe());
  std::cerr << fmt::format("    {}: {}\n", r.family, what);
}

void run_point(const Config& x, const Point& p, std::size_t index, Results& results) {
  const auto& topo = p.topology;
  const models::CostModel cost(topo.gpu());
  std::cerr << fmt::format("[{}/{}] {} nodes ({} GPUs), global batch {}\n", index + 1, x.points.size(),
                           p.nodes, topo.num_gpus(), p.global_batch);
  std::optional<par::LlmSearchResult> search;
  if (x.needs_search()) {
    par::LlmSearchOptions so;
    so.global_batch = p.global_batch;
    so.top = 1;
    so.space = x.space;
    so.progress = [](std::size_t n, double best) {
      std::cerr << fmt::format("\r    searching: {} plans simulated, best step {}   ", n,
                               format_seconds(best))
                << std::flush;
    };
    search = par::search_llm(x.spec, topo, cost, so);
    std::cerr << fmt::format("\r    searched {} strategies in {:.1f} s{:20}\n", search->counts.enumerated,
                             search->seconds, "");
    results.searches.push_back({p.nodes, topo.num_gpus(), search->counts, search->seconds});
  }
  const std::size_t first = results.rows.size();
  for (const auto& family : x.builtin) {
    if (family == kBest) {
      if (!search->top.empty())
        results.rows.push_back(plan_row(p, family, search->top.front()));
      else if (search->counts.out_of_memory > 0)
        results.rows.push_back(missing_row(p, family, "out of memory",
                                           fmt::format("none of the {} strategies that divide the model fits",
                                                       search->counts.out_of_memory)));
      else
        results.rows.push_back(missing_row(
            p, family, "not applicable: no strategy of the search space divides the model, batch and GPUs",
            ""));
    } else if (family == kMegatron) {
      std::optional<par::LlmStepResult> expert;
      if (search) {
        expert = search->expert;
      } else if (auto st = par::megatron_expert_strategy(x.spec, topo, cost, p.global_batch, x.dtype)) {
        par::LlmStepOptions so;
        so.simulate_when_oom = false;  // out of memory: reported with its memory, not simulated
        expert = par::simulate_llm_step(x.spec, *st, topo, cost, so);
      }
      results.rows.push_back(expert
                                 ? plan_row(p, family, std::move(*expert))
                                 : missing_row(p, family,
                                               "not applicable: no Megatron-style expert plan (tp within a "
                                               "node, sp, selective recompute, ZeRO-1, micro-batch 1, any "
                                               "pipeline depth) divides the model, batch and GPUs",
                                               ""));
    } else if (family == kDataParallel) {
      results.rows.push_back(search->data_parallel ? plan_row(p, family, *search->data_parallel)
                                                   : leanest_data_parallel(x, p, cost));
    }
  }
  for (const auto& named : x.strategies) {
    std::string why;
    const auto st = strategy_at(x, named, p, why);
    if (!st) {
      results.rows.push_back(missing_row(p, named.name, "not applicable: " + why, ""));
      continue;
    }
    par::LlmStepOptions so;
    so.simulate_when_oom = false;  // plans that do not fit are reported, never ranked
    results.rows.push_back(plan_row(p, named.name, par::simulate_llm_step(x.spec, *st, topo, cost, so)));
  }
  for (std::size_t i = first; i < results.rows.size(); ++i) log_row(results.rows[i]);
}

Results run(const Config& x) {
  util::Stopwatch clock;
  Results results;
  for (std::size_t i = 0; i < x.points.size(); ++i) run_point(x, x.points[i], i, results);
  results.seconds = clock.seconds();
  return results;
}

// RFC 4180: a field with a comma, quote or line break is quoted, quotes doubled.
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

constexpr const char* kCsvHeader =
    "nodes,gpus,global_batch,family,status,strategy,placement,tp,pp,dp,cp,ep,micro_batch,step_s,mfu,"
    "tokens_per_s,tflops_per_gpu,peak_memory_bytes,capacity_bytes,fits,weights_bytes,gradients_bytes,"
    "optimizer_bytes,activations_bytes,comm_buffers_bytes,reserve_bytes,compute_s,recompute_s,tp_comm_s,"
    "cp_comm_s,ep_comm_s,bubble_s,dp_exposed_s,optimizer_s\n";

std::string csv_row(const Row& row) {
  std::string line = fmt::format("{},{},{},{},{},", row.nodes, row.gpus, row.global_batch,
                                 csv_field(row.family), csv_field(row.status));
  if (!row.result) return line + csv_field(row.note) + std::string(28, ',') + "\n";
  const auto& r = *row.result;
  const auto& st = r.strategy;
  const auto& m = r.memory;
  line += fmt::format("{},{},{},{},{},{},{},{},", csv_field(st.describe()), csv_field(r.placement_text),
                      st.tp, st.pp, st.dp, st.cp, st.ep, st.micro_batch);
  if (r.simulated)
    line += fmt::format("{:.9g},{:.6f},{:.1f},{:.3f},", r.step_seconds, r.mfu, r.tokens_per_second,
                        r.model_flops / r.step_seconds / st.gpus() / 1e12);
  else
    line += ",,,,";
  line += fmt::format("{:.0f},{:.0f},{},{:.0f},{:.0f},{:.0f},{:.0f},{:.0f},{:.0f}", m.total(), r.capacity,
                      r.fits ? "true" : "false", m.weights, m.gradients, m.optimizer, m.activations,
                      m.comm_buffers, m.reserve);
  if (!r.simulated) return line + std::string(8, ',') + "\n";
  const auto& b = r.breakdown;
  return line + fmt::format(",{:.9g},{:.9g},{:.9g},{:.9g},{:.9g},{:.9g},{:.9g},{:.9g}\n", b.compute,
                            b.recompute, b.tp_comm, b.cp_comm, b.ep_comm, b.bubble, b.dp_exposed,
                            b.optimizer);
}

std::string md_row(const Row& row) {
  if (!row.result)
    return fmt::format("| {} | {} | {} | {} | {} | | | | | |\n", row.nodes, row.gpus, row.family, row.status,
                       row.note);
  const auto& r = *row.result;
  const std::string memory = units::format_bytes(r.memory.total());
  if (!r.simulated)
    return fmt::format("| {} | {} | {} | {} | `{}` | | | | | {} |\n", row.nodes, row.gpus, row.family,
                       row.status, r.strategy.describe(), memory);
  return fmt::format("| {} | {} | {} | {} | `{}` | {} | {:.1f}% | {:.0f} | {:.1f} | {} |\n", row.nodes,
                     row.gpus, row.family, row.status, r.strategy.describe(), format_seconds(r.step_seconds),
                     r.mfu * 100, r.tokens_per_second,
                     r.model_flops / r.step_seconds / r.strategy.gpus() / 1e12, memory);
}

// Which family is fastest at each size, among the plans that fit (out-of-memory plans are never ranked).
std::string winners(const Config& x, const Results& results) {
  std::string md =
      "\n## Fastest family at each size\n\nOnly plans that fit in GPU memory are ranked.\n\n"
      "| nodes | GPUs | fastest | step | next fastest | its step | ratio |\n|---|---|---|---|---|---|---|\n";
  for (const auto& p : x.points) {
    std::vector<const Row*> rows;
    for (const auto& r : results.rows)
      if (r.nodes == p.nodes && r.ok()) rows.push_back(&r);
    std::stable_sort(rows.begin(), rows.end(), [](const Row* a, const Row* b) {
      return a->result->step_seconds < b->result->step_seconds;
    });
    md += fmt::format("| {} | {} |", p.nodes, p.topology.num_gpus());
    if (rows.empty()) {
      md += " no family fits | | | | |\n";
      continue;
    }
    const auto& w = *rows.front()->result;
    md += fmt::format(" {} | {} |", rows.front()->family, format_seconds(w.step_seconds));
    if (rows.size() > 1)
      md += fmt::format(" {} | {} | {:.2f}x |\n", rows[1]->family,
                        format_seconds(rows[1]->result->step_seconds),
                        rows[1]->result->step_seconds / w.step_seconds);
    else
      md += " | | |\n";
  }
  return md;
}

void report(const Config& x, const Results& results, ResultsDir& out, const RunOptions& options) {
  std::string csv = kCsvHeader;
  for (const auto& r : results.rows) csv += csv_row(r);
  out.write("plans.csv", csv);

  const auto& topo = x.points.front().topology;
  // One global batch for the whole sweep, or one per node count.
  std::string batches = std::to_string(x.points.front().global_batch);
  if (std::any_of(x.points.begin(), x.points.end(),
                  [&](const Point& p) { return p.global_batch != x.points.front().global_batch; })) {
    batches.clear();
    for (const auto& p : x.points)
      batches += fmt::format("{}{} at {} nodes", batches.empty() ? "" : ", ", p.global_batch, p.nodes);
  }
  std::string md = fmt::format(
      "# {}\n\n{}\n\nModel **{}** (`{}`), {:.1f} B parameters; system {} ({} GPUs per node, {} of memory "
      "each); global batch (sequences of {} tokens) {}; {}. Simulated by strata (search/parallel, "
      "docs/parallel.md); the run "
      "took {:.1f} s.\n\n",
      x.name, x.description, x.spec.name, models::zoo::format_transformer_spec(x.spec),
      models::zoo::transformer_params(x.spec).total / 1e9, topo.name(), topo.gpus_per_node(),
      units::format_bytes(topo.gpu().hbm_capacity), x.spec.seq, batches, hw::dtype_name(x.dtype),
      results.seconds);
  md += "Families: ";
  for (const auto& f : x.builtin) md += fmt::format("`{}`, ", f);
  for (const auto& s : x.strategies) md += fmt::format("`{}`, ", s.name);
  md.resize(md.size() - 2);
  md += " (docs/experiments.md, \"parallel-sweep\").\n\n";
  md +=
      "| nodes | GPUs | family | status | strategy | step | MFU | tokens/s | TFLOP/s per GPU | peak memory "
      "|\n"
      "|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& r : results.rows) md += md_row(r);
  md += winners(x, results);
  if (!results.searches.empty()) {
    md +=
        "\n## Strategy search\n\nStrategies: degrees x micro-batch x schedule x sequence parallelism; plans: "
        "the "
        "feasible ones with their kept ZeRO variants and placements, ranked by branch and bound "
        "(search/parallel/llm_search.h).\n\n| nodes | GPUs | strategies | invalid | out of memory | plans | "
        "pruned | run without contention | simulated | seconds "
        "|\n|---|---|---|---|---|---|---|---|---|---|\n";
    for (const auto& s : results.searches)
      md += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.1f} |\n", s.nodes, s.gpus,
                        s.counts.enumerated, s.counts.invalid, s.counts.out_of_memory, s.counts.plans,
                        s.counts.pruned, s.counts.uncontended, s.counts.simulated, s.seconds);
  }
  md +=
      "\nFiles: `plans.csv` (every row, memory and step breakdown), `step_time.png` (step time and MFU "
      "against GPUs), `memory.png` (peak memory per GPU against the GPU's capacity), `breakdown.png` (where "
      "each step's time goes).\n";
  draw_figures(md, options, "parallel_sweep.py",
               {out.staged("plans.csv").string(), out.staged("step_time.png").string(),
                out.staged("memory.png").string(), out.staged("breakdown.png").string(), x.name});
  out.write("summary.md", md);
}

}  // namespace
}  // namespace strata::experiments::parallel_sweep

namespace strata::experiments {

ExperimentKind parallel_sweep_kind() {
  namespace ps = parallel_sweep;
  return make_kind(
      "parallel-sweep",
      "parallelization strategy families (search, Megatron expert plan, data parallelism, explicit) "
      "against cluster size for one transformer",
      &ps::parse, &ps::run, &ps::report);
}

}  // namespace strata::experiments
