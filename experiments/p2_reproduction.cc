#include "experiments/p2_reproduction.h"
#include "experiments/experiment.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <numeric>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "hw/system_loader.h"
#include "hw/units.h"
#include "search/reduce/evaluate.h"
#include "sim/trace.h"

namespace strata::experiments {
namespace {

namespace rd = search::reduce;
using Clock = std::chrono::steady_clock;

// The paper's headline numbers (docs/reference p2.md section 11.2).
constexpr double kPaperMaxSpread = 448.5;
constexpr double kPaperImprovedFraction = 0.69;
constexpr double kPaperMeanSpeedup = 1.27;
constexpr double kPaperMaxSpeedup = 2.04;
constexpr double kPaperCrossNodeMean = 1.28;
constexpr int kPaperCases = 200;
// A case counts as improved when the best program is at least 0.5% faster (i.e. the speedup prints as
// >= 1.01x at two decimals, as in the paper's tables); smaller differences are simulator rounding, not wins.
constexpr double kImprovedThreshold = 1.005;

struct SystemSpec {
  std::string label, hw;
  int nodes = 1;
  std::vector<std::vector<int>> three_axis;
  std::vector<std::string> three_axis_algorithms;
};

struct Config {  // one (system, axes, reduction) of the grid
  std::size_t system;
  std::vector<int> axes, reduce;
  std::vector<std::string> algorithms;
};

struct CaseRow {
  std::size_t config;
  rd::PlacementEval eval;
};

std::string resolve(const std::string& path, const std::string& experiment_file) {
  if (std::filesystem::exists(path)) return path;
  const auto beside = std::filesystem::path(experiment_file).parent_path() / path;
  if (std::filesystem::exists(beside)) return beside.string();
  return path;
}

std::vector<std::string> read_algorithms(const YamlReader& node) {
  node.expect_sequence();
  std::vector<std::string> out;
  for (std::size_t i = 0; i < node.size(); ++i) {
    const auto a = node.at(i);
    if (!sim::AlgorithmRegistry::instance().find(a.as_string()))
      throw a.error(fmt::format("expected one of: {}", sim::AlgorithmRegistry::instance().names()));
    out.push_back(a.as_string());
  }
  if (out.empty()) throw node.error("expected at least one algorithm");
  return out;
}

std::string axes_text(const std::vector<int>& v) {
  return fmt::format("[{}]", fmt::join(v, " "));
}
std::string csv_quote(const std::string& s) {
  return "\"" + s + "\"";
}

}  // namespace

std::string run_p2_reproduction(const YamlReader& root, const std::string& path, const RunOptions& options) {
  root.expect_map({"experiment", "description", "kind", "systems", "algorithms", "payload_per_node",
                   "max_size", "canonical"});
  const std::string name = root.at("experiment").as_string();
  if (name.empty() || name.find('/') != std::string::npos || name.find("..") != std::string::npos)
    throw root.at("experiment").error("expected a plain name (it becomes the results folder)");
  const std::string description = root.has("description") ? root.at("description").as_string() : "";
  const auto algorithms = read_algorithms(root.at("algorithms"));
  const double payload_per_node = root.at("payload_per_node").as_bytes();
  if (!(payload_per_node > 0)) throw root.at("payload_per_node").error("expected a positive size");
  rd::SynthesisOptions synthesis;
  if (auto m = root.maybe("max_size")) synthesis.max_size = static_cast<int>(m->as_positive_int());
  if (auto c = root.maybe("canonical")) {
    auto canon = rd::parse_canonicalization(c->as_string());
    if (!canon) throw c->error(fmt::format("expected one of {}", rd::kCanonicalizationNames));
    synthesis.canonicalization = *canon;
  }

  std::vector<SystemSpec> systems;
  const YamlReader sys = root.at("systems");
  sys.expect_sequence();
  for (std::size_t i = 0; i < sys.size(); ++i) {
    const auto s = sys.at(i);
    s.expect_map({"hw", "nodes", "label", "three_axis", "three_axis_algorithms"});
    SystemSpec spec;
    spec.hw = resolve(s.at("hw").as_string(), path);
    spec.nodes = static_cast<int>(s.at("nodes").as_positive_int());
    spec.label = s.at("label").as_string();
    if (auto t = s.maybe("three_axis")) {
      t->expect_sequence();
      for (std::size_t k = 0; k < t->size(); ++k) {
        const auto row = t->at(k);
        row.expect_sequence();
        std::vector<int> axes;
        for (std::size_t a = 0; a < row.size(); ++a)
          axes.push_back(static_cast<int>(row.at(a).as_positive_int()));
        if (axes.size() != 3) throw row.error("expected three axis sizes");
        spec.three_axis.push_back(axes);
      }
    }
    spec.three_axis_algorithms = algorithms;
    if (auto t = s.maybe("three_axis_algorithms")) spec.three_axis_algorithms = read_algorithms(*t);
    systems.push_back(spec);
  }

  // The grid (P2 section 4): one axis over all devices; every two-axis factorization reduced on axis 0 and on
  // axis 1; the three-axis sets reduced on axes 0 and 2.
  std::vector<hw::Topology> topos;
  std::vector<Config> configs;
  for (std::size_t s = 0; s < systems.size(); ++s) {
    topos.push_back(hw::load_system(systems[s].hw, hw::LoadOptions{systems[s].nodes}));
    const int n = topos.back().num_gpus();
    configs.push_back({s, {n}, {0}, algorithms});
    for (int a = 2; a < n; ++a)
      if (n % a == 0)
        for (int r = 0; r < 2; ++r) configs.push_back({s, {a, n / a}, {r}, algorithms});
    for (const auto& t : systems[s].three_axis) {
      if (t[0] * t[1] * t[2] != n)
        throw sys.at(s).error(fmt::format("three-axis set {} does not multiply to {} GPUs", axes_text(t), n));
      configs.push_back({s, t, {0, 2}, systems[s].three_axis_algorithms});
    }
  }

  const auto start = Clock::now();
  std::vector<CaseRow> cases;
  std::string programs_csv =
      "system,axes,reduce,matrix,algorithm,rank,program,shape,seconds,speedup_vs_allreduce\n";
  double synth_wall = 0, sim_wall = 0;
  std::size_t simulations = 0;
  for (std::size_t c = 0; c < configs.size(); ++c) {
    const auto& cfg = configs[c];
    const auto& sys_spec = systems[cfg.system];
    rd::EvalConfig ec;
    ec.axes = cfg.axes;
    ec.reduce_axes = cfg.reduce;
    ec.bytes_per_device = payload_per_node * sys_spec.nodes;
    ec.algorithms = cfg.algorithms;
    ec.synthesis = synthesis;
    ec.keep_all_programs = true;
    rd::EvalStats stats;
    auto evals = rd::evaluate(topos[cfg.system], ec, &stats);
    synth_wall += stats.synthesis_seconds;
    sim_wall += stats.simulation_seconds;
    simulations += stats.simulations;
    std::cerr << fmt::format("[{}/{}] {} axes {} reduce {}: {} cases, {} simulations\n", c + 1,
                             configs.size(), sys_spec.label, axes_text(cfg.axes), axes_text(cfg.reduce),
                             evals.size(), stats.simulations);
    for (auto& e : evals) {
      for (std::size_t r = 0; r < e.ranked.size(); ++r)
        programs_csv += fmt::format("{},{},{},{},{},{},{},{},{:.6e},{:.4f}\n", sys_spec.label,
                                    csv_quote(axes_text(cfg.axes)), csv_quote(axes_text(cfg.reduce)),
                                    csv_quote(rd::format_matrix(e.matrix)), e.algorithm, r + 1,
                                    csv_quote(e.ranked[r].text), e.ranked[r].shape, e.ranked[r].seconds,
                                    e.baseline_seconds / e.ranked[r].seconds);
      e.ranked.clear();
      cases.push_back({c, std::move(e)});
    }
  }
  const double total_wall = std::chrono::duration<double>(Clock::now() - start).count();

  // --- aggregate ---
  std::string cases_csv =
      "system,nodes,gpus,axes,reduce,matrix,algorithm,cross_node,synthesis_hierarchy,programs,allreduce_s,"
      "best_s,"
      "speedup,best_shape,best_program\n";
  std::size_t improved = 0, cross = 0, cross_improved = 0;
  double sum_win = 0, sum_cross_win = 0, max_speedup = 0;
  const CaseRow* max_case = nullptr;
  std::map<std::string, int> winning_shapes;
  std::map<std::string, std::set<std::size_t>> program_counts;  // synthesis hierarchy -> counts seen
  for (const auto& row : cases) {
    const auto& cfg = configs[row.config];
    const auto& e = row.eval;
    const auto& s = systems[cfg.system];
    const double sp = e.speedup();
    cases_csv += fmt::format("{},{},{},{},{},{},{},{},{},{},{:.6e},{:.6e},{:.4f},{},{}\n", s.label, s.nodes,
                             topos[cfg.system].num_gpus(), csv_quote(axes_text(cfg.axes)),
                             csv_quote(axes_text(cfg.reduce)), csv_quote(rd::format_matrix(e.matrix)),
                             e.algorithm, e.cross_node ? 1 : 0, csv_quote(e.hierarchy), e.num_programs,
                             e.baseline_seconds, e.best.seconds, sp, e.best.shape, csv_quote(e.best.text));
    const bool win = sp >= kImprovedThreshold;
    if (win) {
      ++improved;
      sum_win += sp;
      ++winning_shapes[e.best.shape];
    }
    if (e.cross_node) {
      ++cross;
      if (win) {
        ++cross_improved;
        sum_cross_win += sp;
      }
    }
    if (sp > max_speedup) {
      max_speedup = sp;
      max_case = &row;
    }
  }
  // Spread per configuration (system, axes, reduction, algorithm): AllReduce and best-program time across
  // matrices.
  struct Spread {
    std::string label;
    std::size_t matrices = 0;
    double ar_min = 1e300, ar_max = 0, best_min = 1e300, best_max = 0;
    double ar_spread() const { return ar_max / ar_min; }
    double best_spread() const { return best_max / best_min; }
  };
  std::vector<Spread> spreads;
  std::map<std::string, std::size_t> spread_index;
  for (const auto& row : cases) {
    const auto& cfg = configs[row.config];
    const std::string key = fmt::format("{} {} r{} {}", systems[cfg.system].label, axes_text(cfg.axes),
                                        axes_text(cfg.reduce), row.eval.algorithm);
    auto [it, inserted] = spread_index.try_emplace(key, spreads.size());
    if (inserted) spreads.push_back(Spread{key});
    auto& sp = spreads[it->second];
    ++sp.matrices;
    sp.ar_min = std::min(sp.ar_min, row.eval.baseline_seconds);
    sp.ar_max = std::max(sp.ar_max, row.eval.baseline_seconds);
    sp.best_min = std::min(sp.best_min, row.eval.best.seconds);
    sp.best_max = std::max(sp.best_max, row.eval.best.seconds);
  }
  std::string spread_csv =
      "configuration,matrices,allreduce_min_s,allreduce_max_s,allreduce_spread,best_min_s,best_max_s,best_"
      "spread\n";
  const Spread* max_spread = nullptr;
  for (const auto& sp : spreads) {
    spread_csv +=
        fmt::format("{},{},{:.6e},{:.6e},{:.3f},{:.6e},{:.6e},{:.3f}\n", csv_quote(sp.label), sp.matrices,
                    sp.ar_min, sp.ar_max, sp.ar_spread(), sp.best_min, sp.best_max, sp.best_spread());
    if (sp.matrices > 1 && (!max_spread || sp.ar_spread() > max_spread->ar_spread())) max_spread = &sp;
  }
  const Spread* paper_case = nullptr;
  for (const auto& sp : spreads)
    if (sp.label.find("[4 16] r[0] tree") != std::string::npos && sp.label.rfind("A100", 0) == 0 &&
        sp.label.find("x4") != std::string::npos)
      paper_case = &sp;
  // Breakdown by system, algorithm and whether the reduction crosses nodes.
  struct Bucket {
    std::size_t cases = 0, improved = 0;
    double sum = 0, max = 1;
  };
  std::map<std::string, Bucket> buckets;
  for (const auto& row : cases) {
    const auto& cfg = configs[row.config];
    auto& b = buckets[fmt::format("| {} | {} | {} |", systems[cfg.system].label, row.eval.algorithm,
                                  row.eval.cross_node ? "across nodes" : "inside a node")];
    ++b.cases;
    const double sp = row.eval.speedup();
    b.max = std::max(b.max, sp);
    if (sp >= kImprovedThreshold) {
      ++b.improved;
      b.sum += sp;
    }
  }
  std::map<std::string, std::set<std::size_t>> counts_by_depth;
  for (const auto& row : cases) {
    const auto& h = row.eval.hierarchy;
    const auto depth = static_cast<std::size_t>(std::count(h.begin(), h.end(), ','));
    counts_by_depth[fmt::format("{} non-root level(s)", depth)].insert(row.eval.num_programs);
  }

  const std::filesystem::path out_dir = std::filesystem::path(options.output_root) / name;
  std::filesystem::create_directories(out_dir);
  sim::write_file_atomically((out_dir / "cases.csv").string(), cases_csv);
  sim::write_file_atomically((out_dir / "programs.csv").string(), programs_csv);
  sim::write_file_atomically((out_dir / "spread.csv").string(), spread_csv);

  const double frac = cases.empty() ? 0 : static_cast<double>(improved) / static_cast<double>(cases.size());
  const double mean_win = improved ? sum_win / static_cast<double>(improved) : 1.0;
  const double cross_mean = cross_improved ? sum_cross_win / static_cast<double>(cross_improved) : 1.0;
  std::string md = fmt::format("# {}\n\n{}\n\n", name, description);
  md += fmt::format(
      "Grid: {} systems, {} configurations, **{} cases** (matrix x reduction x NCCL algorithm; the paper has "
      "{}). "
      "Payload {} per node per GPU (P2: 2^29 float32 x nodes). Programs synthesized with size bound {} and "
      "canonicalization `{}`; every program lowered to device groups and simulated on the strata simulator "
      "(flow-level network model with NCCL ring/tree collectives; tree only for AllReduce, as in NCCL).\n\n",
      systems.size(), configs.size(), cases.size(), kPaperCases, units::format_bytes(payload_per_node),
      synthesis.max_size, rd::canonicalization_name(synthesis.canonicalization));
  md +=
      "## Headline numbers beside the paper\n\n| quantity | paper (measured on GCP) | strata (simulated) "
      "|\n|---|---|---|\n";
  md += fmt::format(
      "| largest AllReduce spread across placements | {:.1f}x (A100x4, [4 16], reduce 0, Tree) | {:.1f}x "
      "({}) |\n",
      kPaperMaxSpread, max_spread ? max_spread->ar_spread() : 0.0, max_spread ? max_spread->label : "-");
  if (paper_case)
    md += fmt::format(
        "| spread of the paper's case (A100x4 [4 16] reduce 0 Tree): AllReduce / best programs | 448.5x / "
        "~330x | {:.1f}x / {:.1f}x |\n",
        paper_case->ar_spread(), paper_case->best_spread());
  md += fmt::format(
      "| cases where a synthesized program beats AllReduce | {:.0f}% (138/200) | {:.0f}% ({}/{}) |\n",
      kPaperImprovedFraction * 100, frac * 100, improved, cases.size());
  md += fmt::format("| mean speedup over the winning cases | {:.2f}x | {:.2f}x |\n", kPaperMeanSpeedup,
                    mean_win);
  if (max_case)
    md += fmt::format("| max speedup | {:.2f}x (V100x4, [8 2 2], Ring) | {:.2f}x ({} {} r{} {} {}) |\n",
                      kPaperMaxSpeedup, max_speedup, systems[configs[max_case->config].system].label,
                      axes_text(configs[max_case->config].axes), axes_text(configs[max_case->config].reduce),
                      rd::format_matrix(max_case->eval.matrix), max_case->eval.algorithm);
  md += fmt::format(
      "| cross-node reductions: mean speedup of the winning cases | {:.2f}x (144 cross-node cases) | {:.2f}x "
      "({}/{} cross-node cases improved) |\n",
      kPaperCrossNodeMean, cross_mean, cross_improved, cross);
  md += "| programs per synthesis hierarchy | 3 (one level), 47 (two levels) |";
  for (const auto& [k, v] : counts_by_depth) md += fmt::format(" {}: {};", k, fmt::join(v, "/"));
  md += " |\n";
  md += fmt::format(
      "| synthesis + simulation time, whole grid | up to 1.16 s synthesis and 3.1 s simulation per case | "
      "{:.2f} s total ({:.3f} s synthesis, {:.2f} s simulation wall, {} simulations) |\n\n",
      total_wall, synth_wall, sim_wall, simulations);
  md += "Winning program shapes (cases where a program beats AllReduce):\n\n| shape | cases |\n|---|---|\n";
  std::vector<std::pair<std::string, int>> shapes(winning_shapes.begin(), winning_shapes.end());
  std::stable_sort(shapes.begin(), shapes.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  for (const auto& [shape, n] : shapes) md += fmt::format("| {} | {} |\n", shape, n);
  md +=
      "\nBreakdown (improved = best program at least 0.5% faster than AllReduce):\n\n"
      "| system | algorithm | reduction | cases | improved | mean speedup of improved | max speedup "
      "|\n|---|---|---|---|---|---|---|\n";
  for (const auto& [k, b] : buckets)
    md += fmt::format(
        "{} {} | {} | {} | {:.2f}x |\n", k, b.cases, b.improved,
        b.improved ? fmt::format("{:.2f}x", b.sum / static_cast<double>(b.improved)) : std::string("-"),
        b.max);
  md += "\n## Why the numbers differ\n\n";
  md +=
      R"(- **Measured vs simulated.** The paper's headline numbers are *measurements* on Google Cloud (XLA -> NCCL); ours are
  predictions of strata's simulator with P2's four bandwidth constants (NVSwitch 270 GB/s, NVLink ring 135 GB/s, PCIe
  32 GB/s, NIC 8 GB/s). The paper itself notes that its measured times do not fit its stated payload (times of
  identically shaped groups do not grow from 2 to 4 nodes; intra-node times imply far less than 270 GB/s), so
  ratios that involve intra-node steps cannot match.
- **Spread.** In the model the largest AllReduce spread is a pure bandwidth ratio: a reduction group inside one
  NVSwitch node (270 GB/s per GPU) against one that puts every member on a different node, where all 16 groups of a
  node share its single 8 GB/s NIC: 270/8 x 16 = 540x for A100 nodes. The paper measured 448.5x for such a pair
  (its intra-node steps ran below 270 GB/s). Synthesis cannot shrink this gap in the model (the one-GPU-per-node
  placement has a one-level synthesis hierarchy, and a flat ring is already NIC-optimal there), while it speeds up
  the in-node Tree baseline (ReduceScatter-AllGather rings beat NCCL's in-node tree chain), so the gap widens; the
  paper saw it shrink to ~330x.
- **Which cases improve.** Ring, inside a node: a flat ring over an NVSwitch is already bandwidth-optimal, so no
  program beats it (the paper's small measured wins there are launch/XLA effects the model does not have). Ring,
  across nodes: NCCL's ring crosses every node boundary once per direction but sends 2(n-1)/n of the buffer through
  the NIC per group, while ReduceScatter inside the node first cuts the NIC share to 1/(GPUs of the group in that
  node) -- this is where strata finds its wins. Tree, across nodes: NCCL's tree is itself
  hierarchical (chain inside the node, one binary tree between nodes), so in the model it already sends the minimum
  through the NIC and synthesized programs rarely beat it, whereas the paper measured many Tree wins. Tree, inside a
  node: the chain-shaped tree is slower than rings, so ReduceScatter-AllGather wins.
- **Mean and max speedup.** strata's wins concentrate on cross-node Ring cases where the NIC share shrinks by a whole
  factor, so the mean over improved cases is higher than the paper's and the fraction of improved cases lower; the
  paper's max (2.04x, V100x4 [8 2 2] Ring) includes PCIe/shared-memory effects across the two CPU domains of a V100
  node that P2's own simulator also failed to predict.
- **Tree for other collectives.** NCCL implements Tree for AllReduce only; under NCCL_ALGO=Tree every other
  collective of a program runs as a ring (we do the same).
- **Program counts.** The literal rules give 93 programs on a two-level hierarchy, the paper reports 47; see
  docs/reduce.md ("Program counts"). The best program is a short one both counts share.
)";
  md +=
      "\n## Files\n\n- `cases.csv`: one row per case (best program, its time, the AllReduce time, speedup)\n"
      "- `programs.csv`: every synthesized program of every case with its predicted time and rank\n"
      "- `spread.csv`: per configuration, AllReduce and best-program time across placements\n"
      "- `spread.png`: placement spread per configuration; `speedup_hist.png`: speedup histogram\n";

  if (options.plots && !run_plot_script("p2_reproduction.py", {out_dir.string(), name}))
    md += "\n(The figures could not be drawn: /usr/bin/python3 with matplotlib is needed.)\n";
  sim::write_file_atomically((out_dir / "summary.md").string(), md);
  return out_dir.string();
}

}  // namespace strata::experiments
