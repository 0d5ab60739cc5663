// The `collective-sweep` experiment kind (configs/experiments/quickstart.yaml): one collective swept over
// sizes on several systems and algorithms; collectives.csv, summary.md and busbw.png.
#include <iostream>

#include <fmt/format.h>

#include "experiments/collective_sweep.h"
#include "experiments/experiment.h"
#include "hw/units.h"
#include "sim/collective.h"
#include "util/error.h"

namespace strata::experiments {
namespace {

struct SweepSystem {
  std::string label;  // empty: "<topology name> x<nodes>"
  hw::Topology topology;
};

struct SweepExperiment {
  std::string name, description, sizes_text;
  SweepConfig base;
  std::vector<std::string> algorithms;  // "auto" or registered names
  std::vector<SweepSystem> systems;
};

struct SweepCurve {  // one (system, algorithm)
  std::string label, algorithm;
  int nodes = 0, gpus = 0;
  std::vector<SweepRow> rows;  // empty when not applicable
  std::string not_applicable;
};

struct SweepResults {
  std::vector<SweepCurve> curves;
};

SweepExperiment parse(const ExperimentFile& file) {
  file.expect_keys({"systems", "op", "sizes", "algorithms", "dtype"});
  const YamlReader& root = file.root();
  SweepExperiment x{file.name(), file.description(), "", {}, {"auto"}, {}};
  const YamlReader op_node = root.at("op");
  if (auto op = sim::parse_op(op_node.as_string()))
    x.base.op = *op;
  else
    throw op_node.error(
        fmt::format("unknown collective '{}' (expected one of: {})", op_node.as_string(), sim::kOpNames));
  const YamlReader sizes_node = root.at("sizes");
  x.sizes_text = sizes_node.as_string();
  try {
    x.base.sizes = parse_size_range(x.sizes_text, "sizes");
  } catch (const util::InputError& e) {
    // The message starts with the field name (util/parse.h); the YAML location names it already.
    std::string why = e.what();
    if (why.starts_with("sizes: ")) why.erase(0, 7);
    throw sizes_node.error(why);
  }
  if (auto d = root.maybe("dtype")) {
    auto t = hw::parse_dtype(d->as_string());
    if (!t) throw d->error("expected one of fp64, fp32, tf32, fp16, bf16, fp8");
    x.base.dtype = *t;
  }
  if (auto a = root.maybe("algorithms")) {
    a->expect_sequence();
    x.algorithms.clear();
    for (std::size_t i = 0; i < a->size(); ++i) {
      const auto item = a->at(i);
      const std::string algo = item.as_string();
      if (const auto why = sim::unknown_algorithm_reason(algo); !why.empty()) throw item.error(why);
      x.algorithms.push_back(algo);
    }
    if (x.algorithms.empty()) throw a->error("expected at least one algorithm");
  }
  const YamlReader sys = root.at("systems");
  sys.expect_sequence();
  if (sys.size() == 0) throw sys.error("expected at least one system");
  for (std::size_t i = 0; i < sys.size(); ++i) {
    const auto s = sys.at(i);
    s.expect_map({"hw", "nodes", "label"});
    std::optional<int> nodes;
    if (auto n = s.maybe("nodes")) nodes = static_cast<int>(n->as_positive_int());
    x.systems.push_back(
        {s.has("label") ? s.at("label").as_string() : "", file.load_system(s.at("hw"), nodes)});
  }
  return x;
}

SweepResults run(const SweepExperiment& x) {
  SweepResults results;
  const std::size_t total = x.systems.size() * x.algorithms.size();
  for (const auto& s : x.systems) {
    const hw::Topology& topo = s.topology;
    const std::string label = s.label.empty() ? fmt::format("{} x{}", topo.name(), topo.nodes()) : s.label;
    for (const auto& algo : x.algorithms) {
      SweepCurve curve{label, algo, topo.nodes(), topo.num_gpus(), {}, ""};
      std::cerr << fmt::format("[{}/{}] {} {} {}\n", results.curves.size() + 1, total, label,
                               sim::op_name(x.base.op), algo);
      SweepConfig cfg = x.base;
      cfg.algorithm = algo;
      try {
        curve.rows = run_sweep(topo, cfg);
      } catch (const std::invalid_argument& e) {
        curve.not_applicable = e.what();
      }
      results.curves.push_back(std::move(curve));
    }
  }
  return results;
}

void report(const SweepExperiment& x, const SweepResults& results, ResultsDir& out,
            const RunOptions& options) {
  std::string csv =
      "system,nodes,gpus,op,algorithm_requested,algorithm,protocol,bytes,time_us,algbw_GBps,busbw_GBps\n";
  std::string md = fmt::format(
      "# {}\n\n{}\n\nCollective: **{}**, sizes {}, dtype {}. Simulated by strata (flow-level "
      "network model, NCCL cost constants; see docs/fidelity.md).\n\n",
      x.name, x.description, sim::op_name(x.base.op), x.sizes_text, hw::dtype_name(x.base.dtype));
  md +=
      "| system | GPUs | algorithm | peak busbw (GB/s) | at size | busbw at largest size (GB/s) | time at "
      "smallest size (us) |\n";
  md += "|---|---|---|---|---|---|---|\n";
  for (const auto& c : results.curves) {
    if (c.rows.empty()) {
      md += fmt::format("| {} | {} | {} | not applicable: {} | | | |\n", c.label, c.gpus, c.algorithm,
                        c.not_applicable);
      continue;
    }
    const SweepRow* peak = &c.rows.front();
    for (const auto& r : c.rows) {
      if (r.busbw > peak->busbw) peak = &r;
      csv += fmt::format("{},{},{},{},{},{},{},{:.0f},{:.3f},{:.3f},{:.3f}\n", c.label, c.nodes, c.gpus,
                         sim::op_name(x.base.op), c.algorithm, r.algorithm, sim::protocol_name(r.protocol),
                         r.bytes, r.seconds * 1e6, r.algbw / 1e9, r.busbw / 1e9);
    }
    md += fmt::format("| {} | {} | {} | {:.1f} | {} | {:.1f} | {:.1f} |\n", c.label, c.gpus, c.algorithm,
                      peak->busbw / 1e9, units::format_bytes(peak->bytes), c.rows.back().busbw / 1e9,
                      c.rows.front().seconds * 1e6);
  }
  out.write("collectives.csv", csv);
  md += "\nFiles: `collectives.csv` (every size), `busbw.png` (bus bandwidth against size).\n";
  draw_figures(md, options, "collective_sweep.py",
               {out.staged("collectives.csv").string(), out.staged("busbw.png").string(), x.name});
  out.write("summary.md", md);
}

}  // namespace

ExperimentKind collective_sweep_kind() {
  return make_kind("collective-sweep", "one collective swept over sizes on several systems and algorithms",
                   &parse, &run, &report);
}

}  // namespace strata::experiments
