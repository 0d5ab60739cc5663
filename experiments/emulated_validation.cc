// The `emulated-validation` experiment kind (configs/experiments/validate_emulated.yaml): brings up an
// emulated cluster (validate/cluster.h), calibrates its links on exchange microbenchmarks, measures a grid of
// collectives and of P2 synthesis cases on it, compares each with the simulator, and takes the cluster down
// again whatever happens. Needs root (network namespaces); docs/validate.md.
//   calibration.csv  link class, fitted latency and bandwidth, the samples
//   collectives.csv  op, size, measured (median, min, max), simulated, error
//   synth.csv        case, candidate, predicted and measured times
//   synth_cases.csv  per case: candidates, top-1/5/10, Spearman, regret, error
//   summary.md, predicted_vs_measured.png (y = x line), topk.png
#include <cmath>
#include <iostream>

#include <fmt/format.h>

#include "experiments/experiment.h"
#include "hw/system_loader.h"
#include "hw/units.h"
#include "util/error.h"
#include "util/parse.h"
#include "validate/calibrate.h"
#include "validate/cluster.h"
#include "validate/collectives.h"
#include "validate/synth_check.h"

namespace strata::experiments {
namespace {

namespace v = validate;

struct CollectiveEntry {
  sim::CollectiveOp op;
  std::string sizes_text;
  std::vector<std::int64_t> sizes;
};

struct SynthEntry {
  std::string label;
  v::SynthCheckRequest request;
};

struct Config {
  std::string name, description;
  v::ClusterSpec cluster;
  int warmup = 1, iterations = 5;
  double tolerance = 0.02;
  std::vector<CollectiveEntry> collectives;
  std::vector<SynthEntry> synth;
};

struct CollectiveResult {
  CollectiveEntry entry;
  std::vector<v::CollectiveCheck> rows;
};
struct SynthResult {
  SynthEntry entry;
  v::SynthCheck check;
};
struct Results {
  v::Calibration calibration;
  std::string library;
  std::vector<CollectiveResult> collectives;
  std::vector<SynthResult> synth;
};

std::vector<int> int_list(const YamlReader& node, int lo, int hi) {
  node.expect_sequence();
  std::vector<int> out;
  for (std::size_t i = 0; i < node.size(); ++i) out.push_back(node.at(i).as_int32_in(lo, hi));
  if (out.empty()) throw node.error("expected at least one value");
  return out;
}

Config parse(const ExperimentFile& file) {
  file.expect_keys({"cluster", "warmup", "iterations", "tolerance", "collectives", "synth"});
  const YamlReader& root = file.root();
  Config c;
  c.name = file.name();
  c.description = file.description();
  const YamlReader cl = root.at("cluster");
  cl.expect_map(
      {"name", "nodes", "ranks_per_node", "nics_per_node", "inter_bandwidth", "inter_latency", "subnet"});
  if (auto n = cl.maybe("name")) c.cluster.name = n->as_string();
  c.cluster.nodes = cl.at("nodes").as_int32_in(1, 16);
  c.cluster.ranks_per_node = cl.at("ranks_per_node").as_int32_in(1, 8);
  if (auto k = cl.maybe("nics_per_node")) c.cluster.nics_per_node = k->as_int32_in(1, 8);
  c.cluster.inter_bandwidth = cl.at("inter_bandwidth").as_bandwidth();
  if (auto l = cl.maybe("inter_latency")) c.cluster.inter_latency = l->as_duration();
  if (auto n = cl.maybe("subnet")) c.cluster.subnet = n->as_string();
  try {
    v::check_spec(c.cluster);
  } catch (const util::InputError& e) {
    throw cl.error(e.what());
  }
  c.cluster.dir = v::default_state_dir(c.cluster.name);
  if (auto w = root.maybe("warmup")) c.warmup = w->as_int32_in(0, 100);
  if (auto i = root.maybe("iterations")) c.iterations = i->as_int32_in(1, 1000);
  if (auto t = root.maybe("tolerance")) {
    c.tolerance = t->as_double();
    if (c.tolerance < 0 || c.tolerance > 1) throw t->error("expected a share in 0..1");
  }
  const int ranks = c.cluster.ranks();
  if (auto list = root.maybe("collectives")) {
    list->expect_sequence();
    for (std::size_t i = 0; i < list->size(); ++i) {
      const auto item = list->at(i);
      item.expect_map({"op", "sizes"});
      CollectiveEntry e;
      const auto op = sim::parse_op(item.at("op").as_string());
      if (!op) throw item.at("op").error(fmt::format("expected one of {}", sim::kOpNames));
      e.op = *op;
      e.sizes_text = item.at("sizes").as_string();
      try {
        for (auto b : util::parse_size_range(e.sizes_text, "sizes"))
          e.sizes.push_back(static_cast<std::int64_t>(b));
      } catch (const util::InputError& err) {
        throw item.at("sizes").error(err.what());
      }
      c.collectives.push_back(std::move(e));
    }
  }
  if (auto list = root.maybe("synth")) {
    list->expect_sequence();
    for (std::size_t i = 0; i < list->size(); ++i) {
      const auto item = list->at(i);
      item.expect_map({"axes", "reduce", "bytes", "top", "sample", "seed", "max_size"});
      SynthEntry e;
      e.request.axes = int_list(item.at("axes"), 1, ranks);
      int product = 1;
      for (int a : e.request.axes) product *= a;
      if (product != ranks)
        throw item.at("axes").error(
            fmt::format("the axis sizes multiply to {}, the cluster has {} ranks", product, ranks));
      e.request.reduce_axes = int_list(item.at("reduce"), 0, static_cast<int>(e.request.axes.size()) - 1);
      e.request.bytes = item.at("bytes").as_bytes();
      if (auto t = item.maybe("top")) e.request.top = t->as_int32_in(0, 1000);
      if (auto s = item.maybe("sample")) e.request.sample = s->as_int32_in(0, 1000);
      if (auto s = item.maybe("seed"))
        e.request.seed = static_cast<std::uint64_t>(s->as_int_in(0, INT64_MAX));
      if (auto m = item.maybe("max_size")) e.request.max_size = m->as_int32_in(1, 8);
      e.request.warmup = c.warmup;
      e.request.iterations = c.iterations;
      e.request.tolerance = c.tolerance;
      e.label = fmt::format("axes {} reduce {} {}", fmt::join(e.request.axes, "x"),
                            fmt::join(e.request.reduce_axes, "+"), units::format_bytes(e.request.bytes));
      c.synth.push_back(std::move(e));
    }
  }
  if (c.collectives.empty() && c.synth.empty())
    throw root.error("expected at least one of collectives, synth");
  return c;
}

// Takes the cluster down when the run ends, however it ends.
struct ClusterGuard {
  const v::ClusterSpec& spec;
  ~ClusterGuard() { v::cluster_down(spec.name, spec.dir); }
};

Results run(const Config& c) {
  Results r;
  std::cerr << fmt::format("[cluster] {} nodes x {} ranks, ports at {}\n", c.cluster.nodes,
                           c.cluster.ranks_per_node, v::format_rate(c.cluster.inter_bandwidth));
  v::cluster_up(c.cluster);
  const ClusterGuard guard{c.cluster};
  std::cerr << "[calibrate] exchange microbenchmarks per link class\n";
  // Calibration gets at least 10 timed exchanges per size: every prediction rests on it.
  r.calibration = v::calibrate(c.cluster, c.warmup, std::max(c.iterations, 10));
  v::write_calibrated_system(c.cluster, r.calibration);
  const hw::Topology topo = hw::load_system(c.cluster.system_file().string());
  const std::size_t total = c.collectives.size() + c.synth.size();
  std::size_t done = 0;
  for (const auto& e : c.collectives) {
    std::cerr << fmt::format("[{}/{}] {} {}\n", ++done, total, sim::op_name(e.op), e.sizes_text);
    v::CollectiveCheckRequest req;
    req.op = e.op;
    req.sizes = e.sizes;
    req.warmup = c.warmup;
    req.iterations = c.iterations;
    r.collectives.push_back({e, v::check_collectives(c.cluster, topo, req)});
  }
  for (const auto& e : c.synth) {
    std::cerr << fmt::format("[{}/{}] synth {}\n", ++done, total, e.label);
    r.synth.push_back({e, v::check_synth(c.cluster, topo, e.request)});
  }
  return r;
}

std::string calibration_section(const Config& c, const Results& r, std::string& csv) {
  csv = "link_class,latency_us,bandwidth_MBps,sample_bytes,sample_median_us\n";
  std::string md =
      "## Calibration (exchange microbenchmarks; never collective times)\n\n"
      "| link class | latency (us, one way) | bandwidth (MB/s per direction) | configured "
      "|\n|---|---|---|---|\n";
  const auto add = [&](const char* name, const std::optional<v::LinkCalibration>& m,
                       const v::LinkFigures& conf) {
    if (!m) return;
    md += fmt::format("| {} | {:.1f} | {:.2f} | {:.2f} MB/s |\n", name, m->figures.latency * 1e6,
                      m->figures.bandwidth / 1e6, conf.bandwidth / 1e6);
    for (const auto& s : m->samples)
      csv += fmt::format("{},{:.3f},{:.4f},{:.0f},{:.3f}\n", name, m->figures.latency * 1e6,
                         m->figures.bandwidth / 1e6, s.bytes, s.seconds * 1e6);
  };
  add("shared-memory", r.calibration.intra, v::configured_intra());
  add("network", r.calibration.inter, v::configured_inter(c.cluster));
  return md;
}

// The P2 synthesis cases: one table row per case, synth.csv (every candidate) and synth_cases.csv.
std::string synth_section(const Config& c, const Results& r, ResultsDir& out) {
  std::string md;
  std::string synth_csv =
      "case,predicted_rank,placement,shape,predicted_ms,measured_median_ms,measured_min_ms,"
      "measured_max_ms,error_percent\n";
  std::string cases_csv =
      "case,candidates_total,candidates_measured,top1,top5,top10,spearman,regret,top1_min,top5_min,top10_min,"
      "spearman_min,regret_min,mean_abs_error_percent,median_spread_percent\n";
  md += fmt::format(
      "\n## P2 synthesis\n\nTop-k: a measured-fastest candidate (within {:.1f}% of the best) among the "
      "simulator's k fastest. Each statistic on the measured medians, and in brackets on each candidate's "
      "fastest "
      "run (interference only slows a run down, so the fastest run is the least disturbed one).\n\n"
      "| case | measured / all | top-1 | top-5 | top-10 | Spearman | regret | mean abs error | median spread "
      "|\n"
      "|---|---|---|---|---|---|---|---|---|\n",
      100 * c.tolerance);
  const auto hit = [](bool h) { return h ? "hit" : "miss"; };
  int hits[3] = {0, 0, 0}, hits_min[3] = {0, 0, 0}, measured = 0;
  for (const auto& sr : r.synth) {
    const auto& s = sr.check.stats;
    const auto& n = sr.check.stats_min;
    hits[0] += s.top1;
    hits[1] += s.top5;
    hits[2] += s.top10;
    hits_min[0] += n.top1;
    hits_min[1] += n.top5;
    hits_min[2] += n.top10;
    measured += s.candidates;
    md += fmt::format(
        "| {} | {} / {} | {} ({}) | {} ({}) | {} ({}) | {:.3f} ({:.3f}) | {:.3f} ({:.3f}) | {:.1f}% | "
        "{:.1f}% |\n",
        sr.entry.label, s.candidates, sr.check.total_candidates, hit(s.top1), hit(n.top1), hit(s.top5),
        hit(n.top5), hit(s.top10), hit(n.top10), s.spearman, n.spearman, s.regret, n.regret,
        100 * s.error.mean_abs, 100 * s.median_spread);
    cases_csv +=
        fmt::format("\"{}\",{},{},{},{},{},{:.4f},{:.4f},{},{},{},{:.4f},{:.4f},{:.3f},{:.3f}\n",
                    sr.entry.label, sr.check.total_candidates, s.candidates, int(s.top1), int(s.top5),
                    int(s.top10), s.spearman, s.regret, int(n.top1), int(n.top5), int(n.top10), n.spearman,
                    n.regret, 100 * s.error.mean_abs, 100 * s.median_spread);
    for (std::size_t i = 0; i < sr.check.measured.size(); ++i) {
      const auto& m = sr.check.measured[i];
      synth_csv +=
          fmt::format("\"{}\",{},\"{}\",{},{:.6f},{:.6f},{:.6f},{:.6f},{:.3f}\n", sr.entry.label, i + 1,
                      m.placement, m.shape, m.predicted * 1e3, m.measured.median * 1e3, m.measured.min * 1e3,
                      m.measured.max * 1e3, 100 * (m.predicted / m.measured.median - 1));
    }
  }
  if (!r.synth.empty()) {
    const auto n = r.synth.size();
    md += fmt::format(
        "\nOver {} cases ({} placement x program candidates measured): top-1 {}/{} ({}/{}), top-5 {}/{} "
        "({}/{}), "
        "top-10 {}/{} ({}/{}).\n",
        n, measured, hits[0], n, hits_min[0], n, hits[1], n, hits_min[1], n, hits[2], n, hits_min[2], n);
  }
  out.write("synth.csv", synth_csv);
  out.write("synth_cases.csv", cases_csv);
  return md;
}

void report(const Config& c, const Results& r, ResultsDir& out, const RunOptions& options) {
  std::string md = fmt::format(
      "# {}\n\n{}\n\nEmulated cluster: {} nodes x {} MPI ranks, ports shaped to {}; {} timed "
      "iterations per point after {} warm-up (median; spread = (max - min) / median).\n\n",
      c.name, c.description, c.cluster.nodes, c.cluster.ranks_per_node,
      v::format_rate(c.cluster.inter_bandwidth), c.iterations, c.warmup);
  std::string cal_csv;
  md += calibration_section(c, r, cal_csv);
  out.write("calibration.csv", cal_csv);

  std::string coll_csv =
      "op,ranks,size_bytes,measured_median_us,measured_min_us,measured_max_us,simulated_us,error_percent\n";
  md +=
      "\n## Collectives (Open MPI, forced schedules, vs algorithm openmpi)\n\n"
      "| op | sizes | mean abs error | mean abs error >= 1 MiB | max abs error | median spread "
      "|\n|---|---|---|---|---|---|\n";
  for (const auto& cr : r.collectives) {
    double sum = 0, sum_large = 0, worst = 0;
    int large = 0;
    std::vector<double> spreads;
    for (const auto& row : cr.rows) {
      const double e = std::fabs(row.error());
      sum += e;
      worst = std::max(worst, e);
      if (row.bytes >= (1 << 20)) {
        sum_large += e;
        ++large;
      }
      spreads.push_back(row.measured.relative_spread());
      coll_csv += fmt::format("{},{},{},{:.3f},{:.3f},{:.3f},{:.3f},{:.3f}\n", sim::op_name(cr.entry.op),
                              c.cluster.ranks(), row.bytes, row.measured.median * 1e6, row.measured.min * 1e6,
                              row.measured.max * 1e6, row.simulated * 1e6, 100 * row.error());
    }
    const double n = static_cast<double>(std::max<std::size_t>(cr.rows.size(), 1));
    md += fmt::format("| {} | {} | {:.1f}% | {} | {:.1f}% | {:.1f}% |\n", sim::op_name(cr.entry.op),
                      cr.entry.sizes_text, 100 * sum / n,
                      large ? fmt::format("{:.1f}%", 100 * sum_large / large) : "-", 100 * worst,
                      100 * v::spread_of(spreads).median);
  }
  out.write("collectives.csv", coll_csv);

  md += synth_section(c, r, out);
  md +=
      "\nFiles: `calibration.csv`, `collectives.csv`, `synth.csv` (every measured candidate), "
      "`synth_cases.csv`, "
      "`predicted_vs_measured.png`, `topk.png`.\n";
  draw_figures(md, options, "emulated_validation.py", {out.staging().string(), c.name});
  out.write("summary.md", md);
}

}  // namespace

ExperimentKind emulated_validation_kind() {
  return make_kind<Config, Results>(
      "emulated-validation",
      "collectives and P2 programs measured on an emulated cluster (root) against the simulator", parse, run,
      report);
}

}  // namespace strata::experiments
