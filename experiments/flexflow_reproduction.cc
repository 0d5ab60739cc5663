// The `flexflow-reproduction` experiment kind (configs/experiments/repro/flexflow.yaml): FlexFlow's question
// (Jia, Zaharia, Aiken, "Beyond Data and Model Parallelism for Deep Neural Networks", SysML 2019,
// arXiv 1807.05358) asked of strata's per-operator search. For every (cluster, GPU count, model) the MCMC
// search of `strata parallelize --search mcmc` (search/parallel/op_search.h) runs with a seeded proposal
// budget; its best plan, data parallelism and the expert plan are timed on the event simulator, and the
// speedups of the best plan over the two baselines are reported (results.csv, summary.md, speedup.png) and
// put beside the paper's text-level numbers (side_by_side.h).
#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "experiments/experiment.h"
#include "experiments/side_by_side.h"
#include "models/cost/cost_model.h"
#include "models/zoo/zoo.h"
#include "search/parallel/op_search.h"

namespace strata::experiments {
namespace {

namespace par = search::parallel;
namespace sbs = side_by_side;

// What a `paper:` row may publish. speedup_vs_baselines: over the faster of data parallelism and the expert
// plan; time_reduction_vs_dp_percent: 100 (1 - best / data parallel).
constexpr std::string_view kMetrics[] = {"speedup_vs_dp", "speedup_vs_expert", "speedup_vs_baselines",
                                         "time_reduction_vs_dp_percent"};
// How a row folds the results it selects into one number.
constexpr std::string_view kStats[] = {"min", "max", "geomean"};

struct ModelSpec {
  std::string name;
  std::int64_t batch_per_gpu = 64, seq = 0;  // seq 0: the model's default
};

struct Setup {  // one cluster at one GPU count
  std::string cluster;
  int gpus = 0;
  hw::Topology topo;
};

// A paper row's selection: its models, on `cluster` (all when empty) at `gpus` (each cluster's largest GPU
// count of the run when 0), folded with `stat`.
struct RowSelection {
  std::vector<std::string> models;
  std::string cluster, stat;
  int gpus = 0;
};

struct FlexFlowExperiment {
  std::string name, description;
  std::vector<Setup> setups;
  std::vector<ModelSpec> models;
  models::DType dtype = models::DType::kF32;
  par::McmcOptions search;
  std::optional<sbs::Paper> paper;
  std::map<std::string, RowSelection> selections;  // by "table/row"
};

struct Point {
  std::string cluster, model;
  int gpus = 0, nodes = 0;
  std::int64_t batch = 0;
  std::size_t operators = 0;
  par::McmcResult r;
  static double step(const par::PlanReport& p) {
    return p.full_seconds > 0 ? p.full_seconds : p.fast_seconds;
  }
  double metric(std::string_view m) const {
    const double best = step(r.best), dp = step(r.data_parallel), ex = step(r.expert);
    if (m == "speedup_vs_dp") return dp / best;
    if (m == "speedup_vs_expert") return ex / best;
    if (m == "speedup_vs_baselines") return std::min(dp, ex) / best;
    return 100 * (1 - best / dp);  // time_reduction_vs_dp_percent
  }
};

struct FlexFlowResults {
  std::vector<Point> points;
};

std::vector<ModelSpec> parse_models(const YamlReader& ms) {
  ms.expect_sequence();
  std::vector<ModelSpec> specs;
  for (std::size_t i = 0; i < ms.size(); ++i) {
    const auto m = ms.at(i);
    m.expect_map({"name", "batch_per_gpu", "seq"});
    ModelSpec s;
    s.name = m.at("name").as_string();
    const auto* entry = models::zoo::find_model(s.name);
    if (!entry)
      throw m.at("name").error(
          fmt::format("unknown zoo model '{}' (known: {})", s.name, models::zoo::zoo_names()));
    if (auto b = m.maybe("batch_per_gpu")) s.batch_per_gpu = b->as_int_in(1, 1 << 20);
    if (auto q = m.maybe("seq")) {
      if (entry->default_seq == 0) throw q->error(fmt::format("model '{}' has no sequence length", s.name));
      s.seq = q->as_int_in(1, 1 << 16);
    }
    specs.push_back(s);
  }
  if (specs.empty()) throw ms.error("expected at least one model");
  return specs;
}

// `clusters:` x `gpus:`: each cluster's hardware file loaded with gpus / (its GPUs per node) nodes.
std::vector<Setup> parse_setups(const ExperimentFile& file, const YamlReader& clusters,
                                const YamlReader& gpus) {
  gpus.expect_sequence();
  clusters.expect_sequence();
  if (gpus.size() == 0) throw gpus.error("expected at least one GPU count");
  if (clusters.size() == 0) throw clusters.error("expected at least one cluster");
  std::vector<Setup> setups;
  for (std::size_t c = 0; c < clusters.size(); ++c) {
    const auto cl = clusters.at(c);
    cl.expect_map({"name", "hw"});
    const std::string name = cl.at("name").as_string();
    const int per_node = file.load_system(cl.at("hw")).gpus_per_node();
    for (std::size_t g = 0; g < gpus.size(); ++g) {
      const int n = gpus.at(g).as_int32_in(1, 1 << 16);
      if (n % per_node != 0)
        throw gpus.at(g).error(
            fmt::format("expected a multiple of cluster '{}''s {} GPUs per node (whole nodes), got {}", name,
                        per_node, n));
      setups.push_back({name, n, file.load_system(cl.at("hw"), n / per_node)});
    }
  }
  return setups;
}

void parse_search(const YamlReader& s, par::McmcOptions& o) {
  s.expect_map({"proposals", "chains_per_start", "seed", "beta"});
  o.proposals = s.at("proposals").as_int_in(0, 1LL << 40);
  if (auto c = s.maybe("chains_per_start")) o.chains_per_start = c->as_int32_in(1, 64);
  if (auto v = s.maybe("seed")) o.seed = static_cast<std::uint64_t>(v->as_int_in(0, INT64_MAX));
  if (auto b = s.maybe("beta")) {
    o.beta = b->as_double();
    if (!(o.beta > 0 && o.beta < 1e9)) throw b->error("expected a positive beta");
  }
  o.full_simulation = true;
}

template <std::size_t N>
bool listed(const std::string_view (&names)[N], std::string_view name) {
  return std::find(std::begin(names), std::end(names), name) != std::end(names);
}

RowSelection parse_selection(const sbs::Row& r, const FlexFlowExperiment& x) {
  RowSelection s;
  const auto ms = r.node.at("models");
  ms.expect_sequence();
  for (std::size_t i = 0; i < ms.size(); ++i) {
    s.models.push_back(ms.at(i).as_string());
    if (!models::zoo::find_model(s.models.back()))
      throw ms.at(i).error(
          fmt::format("unknown zoo model '{}' (known: {})", s.models.back(), models::zoo::zoo_names()));
  }
  if (s.models.empty()) throw ms.error("expected at least one model");
  if (auto c = r.node.maybe("cluster")) {
    s.cluster = c->as_string();
    if (std::none_of(x.setups.begin(), x.setups.end(),
                     [&](const Setup& u) { return u.cluster == s.cluster; }))
      throw c->error(fmt::format("expected a cluster named under `clusters:`, got '{}'", s.cluster));
  }
  if (auto g = r.node.maybe("gpus")) s.gpus = g->as_int32_in(1, 1 << 16);
  if (auto st = r.node.maybe("stat")) {
    s.stat = st->as_string();
    if (!listed(kStats, s.stat)) throw st->error(fmt::format("expected {}", fmt::join(kStats, ", ")));
  }
  for (const auto& [metric, value] : r.paper)
    if (!listed(kMetrics, metric))
      throw r.node.at(metric).error(fmt::format("this kind computes {}", fmt::join(kMetrics, ", ")));
  return s;
}

FlexFlowExperiment parse(const ExperimentFile& file) {
  file.expect_keys({"clusters", "gpus", "models", "dtype", "search", "paper"});
  const YamlReader& root = file.root();
  FlexFlowExperiment x;
  x.name = file.name();
  x.description = file.description();
  x.setups = parse_setups(file, root.at("clusters"), root.at("gpus"));
  x.models = parse_models(root.at("models"));
  if (auto d = root.maybe("dtype")) {
    const auto t = models::parse_dtype(d->as_string());
    if (!t || (*t != models::DType::kF32 && *t != models::DType::kF16 && *t != models::DType::kBF16))
      throw d->error(fmt::format("expected fp32, fp16 or bf16, got '{}'", d->as_string()));
    x.dtype = *t;
  }
  parse_search(root.at("search"), x.search);
  if (auto p = root.maybe("paper")) {
    constexpr std::string_view row_keys[] = {"models", "cluster", "gpus", "stat"};
    x.paper = sbs::parse_paper(*p, {}, row_keys);
    for (const auto& t : x.paper->tables)
      for (const auto& r : t.rows) x.selections[t.name + "/" + r.key] = parse_selection(r, x);
  }
  return x;
}

FlexFlowResults run(const FlexFlowExperiment& x) {
  FlexFlowResults out;
  for (const auto& s : x.setups) {
    const models::CostModel cost(s.topo.gpu());
    for (const auto& m : x.models) {
      Point p{s.cluster, m.name, s.gpus, s.topo.nodes(), m.batch_per_gpu * s.gpus, 0, {}};
      const auto g = models::zoo::build_model(m.name, {.batch = p.batch, .seq_len = m.seq, .dtype = x.dtype});
      p.operators = g.nodes().size();
      std::cerr << fmt::format("flexflow-reproduction: {} on {} x {} (batch {}, {} operators)\n", m.name,
                               s.gpus, s.cluster, p.batch, p.operators);
      p.r = par::run_mcmc(g, s.topo, cost, x.search);
      std::cerr << fmt::format("  best {:.3f} ms, data parallel {:.3f} ms, expert {:.3f} ms ({:.1f} s)\n",
                               Point::step(p.r.best) * 1e3, Point::step(p.r.data_parallel) * 1e3,
                               Point::step(p.r.expert) * 1e3, p.r.wall_seconds);
      out.points.push_back(std::move(p));
    }
  }
  return out;
}

// No wall-clock column: the file is the same for the same inputs and seed.
std::string results_csv(const FlexFlowResults& res) {
  std::string csv =
      "cluster,gpus,nodes,model,global_batch,operators,proposals,accepted,found,best_ms,data_parallel_ms,"
      "expert_ms,best_fast_ms,data_parallel_fast_ms,expert_fast_ms,best_fits,data_parallel_fits,expert_fits,"
      "speedup_vs_dp,speedup_vs_expert,speedup_vs_baselines\n";
  for (const auto& p : res.points) {
    const auto& r = p.r;
    csv += fmt::format(
        "{},{},{},{},{},{},{},{},{},{:.6f},{:.6f},{:.6f},{:.6f},{:.6f},{:.6f},{},{},{},{:.6f},{:.6f},{:.6f}"
        "\n",
        p.cluster, p.gpus, p.nodes, p.model, p.batch, p.operators, r.proposals, r.accepted, r.found ? 1 : 0,
        Point::step(r.best) * 1e3, Point::step(r.data_parallel) * 1e3, Point::step(r.expert) * 1e3,
        r.best.fast_seconds * 1e3, r.data_parallel.fast_seconds * 1e3, r.expert.fast_seconds * 1e3,
        r.best.fits ? 1 : 0, r.data_parallel.fits ? 1 : 0, r.expert.fits ? 1 : 0, p.metric("speedup_vs_dp"),
        p.metric("speedup_vs_expert"), p.metric("speedup_vs_baselines"));
  }
  return csv;
}

// The paper row's number: its selection's points folded with its stat (the only point needs none).
sbs::Measured measured(const FlexFlowExperiment& x, const FlexFlowResults& res) {
  sbs::Measured m;
  for (const auto& t : x.paper->tables)
    for (const auto& row : t.rows) {
      const auto& sel = x.selections.at(t.name + "/" + row.key);
      std::map<std::string, int> largest;  // per cluster: the largest GPU count of the run
      for (const auto& s : x.setups) largest[s.cluster] = std::max(largest[s.cluster], s.gpus);
      std::vector<const Point*> pts;
      for (const auto& p : res.points)
        if (std::find(sel.models.begin(), sel.models.end(), p.model) != sel.models.end() &&
            (sel.cluster.empty() || p.cluster == sel.cluster) &&
            p.gpus == (sel.gpus > 0 ? sel.gpus : largest[p.cluster]))
          pts.push_back(&p);
      if (pts.empty()) {
        m.note(t.name, row.key, "not run (its models, cluster or GPU count are not in this run)");
        continue;
      }
      std::string runs;
      for (const auto* p : pts)
        runs += fmt::format("{}{} on {} {}", runs.empty() ? "" : ", ", p->model, p->gpus, p->cluster);
      if (pts.size() > 1 && sel.stat.empty()) {
        m.note(t.name, row.key,
               fmt::format("{} runs match ({}) and the row names no `stat`", pts.size(), runs));
        continue;
      }
      for (const auto& [metric, value] : row.paper) {
        std::vector<double> v;
        for (const auto* p : pts) v.push_back(p->metric(metric));
        double folded = v.front();
        if (sel.stat == "min") folded = *std::min_element(v.begin(), v.end());
        if (sel.stat == "max") folded = *std::max_element(v.begin(), v.end());
        if (sel.stat == "geomean") {
          double l = 0;
          for (double d : v) l += std::log(d);
          folded = std::exp(l / static_cast<double>(v.size()));
        }
        m.set(t.name, row.key, metric, folded);
      }
      m.note(t.name, row.key, (sel.stat.empty() ? "" : sel.stat + " over ") + runs);
    }
  return m;
}

std::string summary(const FlexFlowExperiment& x, const FlexFlowResults& res) {
  std::string md = fmt::format("# {}\n\n{}\n\n", x.name, x.description);
  md += fmt::format(
      "MCMC: {} proposals per chain, {} chain(s) from data parallelism and as many from the expert plan, "
      "seed {}, beta {}; elements {}. Step times are the event simulator's (sim/), per training "
      "iteration.\n\n",
      x.search.proposals, x.search.chains_per_start, x.search.seed, x.search.beta,
      models::dtype_name(x.dtype));
  md +=
      "| cluster | GPUs | model | global batch | operators | best (ms) | data parallel (ms) | expert (ms) | "
      "best / DP speedup | best / expert speedup | fits (best, DP, expert) |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& p : res.points)
    md += fmt::format(
        "| {} | {} | {} | {} | {} | {:.3f} | {:.3f} | {:.3f} | {:.2f}x | {:.2f}x | {}, {}, {} |\n", p.cluster,
        p.gpus, p.model, p.batch, p.operators, Point::step(p.r.best) * 1e3,
        Point::step(p.r.data_parallel) * 1e3, Point::step(p.r.expert) * 1e3, p.metric("speedup_vs_dp"),
        p.metric("speedup_vs_expert"), p.r.best.fits ? "yes" : "no", p.r.data_parallel.fits ? "yes" : "no",
        p.r.expert.fits ? "yes" : "no");
  md +=
      "\nThe best plan is the fastest on the event simulator among every chain's best and the two start "
      "plans "
      "(docs/parallel.md, \"Two simulators\"), so it is never slower than a data-parallel plan that fits.\n\n"
      "## Files\n\n- `results.csv`: one row per cluster, GPU count and model (step times on both simulators, "
      "memory feasibility, speedups)\n- `speedup.png`: best / data parallel and best / expert per model, one "
      "panel per cluster and GPU count\n";
  return md;
}

void report(const FlexFlowExperiment& x, const FlexFlowResults& res, ResultsDir& out,
            const RunOptions& options) {
  out.write("results.csv", results_csv(res));
  std::string md = summary(x, res);
  draw_figures(md, options, "flexflow_reproduction.py",
               {out.staged("results.csv").string(), out.staged("speedup.png").string(), x.name});
  if (x.paper) {
    const auto m = measured(x, res);
    md += "\n# Beside the published numbers\n" + sbs::markdown(*x.paper, m);
    sbs::write_outputs(*x.paper, m, x.name, out, options, md);
  }
  out.write("summary.md", md);
}

}  // namespace

ExperimentKind flexflow_reproduction_kind() {
  return make_kind(
      "flexflow-reproduction",
      "FlexFlow's question: MCMC per-operator plans against data parallelism and the expert plan, "
      "per cluster, GPU count and model",
      &parse, &run, &report);
}

}  // namespace strata::experiments
