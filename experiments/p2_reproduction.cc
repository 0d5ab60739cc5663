// The `p2-reproduction` experiment kind: P2's evaluation grid (Xie et al., "Synthesizing Optimal Parallelism
// Placement and Reduction Strategies on Hierarchical Systems for Deep Learning", MLSys 2022, section 4) run
// on strata's placement enumeration, program synthesis and simulator, reported beside the paper's headline
// numbers. parse: the systems and the grid; run: every case of the grid; report: CSV, summary.md, figures.
#include <algorithm>
#include <chrono>
#include <iostream>
#include <map>
#include <set>
#include <span>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "experiments/experiment.h"
#include "experiments/p2_paper_cases.h"
#include "experiments/side_by_side.h"
#include "experiments/sweep_report.h"
#include "hw/units.h"
#include "search/reduce/evaluate.h"
#include "search/reduce/placement.h"

namespace strata::experiments {
namespace {

namespace rd = search::reduce;
using Clock = std::chrono::steady_clock;

// The headline quantities a `paper:` table may publish (side_by_side.h; the paper's numbers are declared in
// the experiment file, configs/experiments/repro/p2.yaml).
constexpr std::string_view kHeadlineMetrics[] = {"max_spread",
                                                 "paper_case_allreduce_spread",
                                                 "paper_case_best_spread",
                                                 "improved_percent",
                                                 "mean_speedup",
                                                 "max_speedup",
                                                 "cross_node_mean_speedup",
                                                 "cases",
                                                 "programs_one_level",
                                                 "programs_two_levels"};
// A case counts as improved when the best program is at least 0.5% faster (i.e. the speedup prints as
// >= 1.01x at two decimals, as in the paper's tables); smaller differences are simulator rounding, not wins.
constexpr double kImprovedThreshold = 1.005;

struct SystemSpec {
  std::string label;
  int nodes = 1;
  hw::Topology topology;
  std::vector<std::vector<int>> three_axis;
  std::vector<std::string> three_axis_algorithms;
};

struct Config {  // one (system, axes, reduction) of the grid
  std::size_t system;
  std::vector<int> axes, reduce;
  std::vector<std::string> algorithms;
};

struct P2Experiment {
  std::string name, description;
  std::optional<side_by_side::Paper> paper;  // published headline numbers
  p2::PaperCases paper_cases;                // published per-case measurements (Appendix A)
  double payload_per_node = 0;
  rd::SynthesisOptions synthesis;
  std::vector<SystemSpec> systems;
  std::vector<Config> configs;
};

struct CaseRow {
  std::size_t config;
  rd::PlacementEval eval;  // with every ranked program
};

struct P2Results {
  std::vector<CaseRow> cases;
  double total_wall = 0, synth_wall = 0, sim_wall = 0;
  std::size_t simulations = 0;
};

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

// How a reduction group sits on the nodes, by which the scale check sorts its cases (docs/reduce.md, "Scale
// check"): one GPU of each node; every GPU of each node; part of each node, its GPUs there joined by NVLink
// routes among themselves (directly or through an NVSwitch); or part of a node whose GPUs are not, so that
// some of the group's traffic inside the node crosses PCIe and the CPUs.
std::string group_shape(const hw::Topology& topo, std::span<const int> group) {
  std::map<int, std::vector<hw::Rank>> by_node;
  for (int d : group) by_node[topo.node_of(d)].push_back(d);
  bool one = true, whole = true, joined = true;
  for (const auto& [node, members] : by_node) {
    one = one && members.size() == 1;
    whole = whole && static_cast<int>(members.size()) == topo.gpus_per_node();
    // The members reachable from the first over NVLink routes between members.
    std::vector<bool> reached(members.size(), false);
    std::vector<std::size_t> frontier{0};
    reached[0] = true;
    while (!frontier.empty()) {
      const std::size_t i = frontier.back();
      frontier.pop_back();
      for (std::size_t j = 0; j < members.size(); ++j)
        if (!reached[j] && topo.route_transport(members[i], members[j]) == hw::Transport::kNvlink) {
          reached[j] = true;
          frontier.push_back(j);
        }
    }
    joined = joined && std::find(reached.begin(), reached.end(), false) == reached.end();
  }
  if (one) return "one GPU per node";
  if (whole) return "whole nodes";
  return joined ? "NVLink-joined part of each node" : "part of a node, not NVLink-joined";
}

std::string axes_text(const std::vector<int>& v) {
  return fmt::format("[{}]", fmt::join(v, " "));
}
SystemSpec parse_system(const ExperimentFile& file, const YamlReader& s,
                        const std::vector<std::string>& algorithms) {
  s.expect_map({"hw", "nodes", "label", "three_axis", "three_axis_algorithms"});
  const int nodes = static_cast<int>(s.at("nodes").as_positive_int());
  SystemSpec spec{s.at("label").as_string(), nodes, file.load_system(s.at("hw"), nodes), {}, algorithms};
  if (auto t = s.maybe("three_axis")) {
    t->expect_sequence();
    for (std::size_t k = 0; k < t->size(); ++k) {
      const auto row = t->at(k);
      row.expect_sequence();
      std::vector<int> axes;
      for (std::size_t a = 0; a < row.size(); ++a)
        axes.push_back(static_cast<int>(row.at(a).as_positive_int()));
      if (axes.size() != 3) throw row.error("expected three axis sizes");
      if (axes[0] * axes[1] * axes[2] != spec.topology.num_gpus())
        throw row.error(fmt::format("three-axis set {} does not multiply to the system's {} GPUs",
                                    axes_text(axes), spec.topology.num_gpus()));
      spec.three_axis.push_back(axes);
    }
  }
  if (auto t = s.maybe("three_axis_algorithms")) spec.three_axis_algorithms = read_algorithms(*t);
  return spec;
}

P2Experiment parse(const ExperimentFile& file) {
  file.expect_keys(
      {"systems", "algorithms", "payload_per_node", "max_size", "canonical", "paper", "paper_cases"});
  const YamlReader& root = file.root();
  P2Experiment x{file.name(), file.description(), std::nullopt, {}, 0, {}, {}, {}};
  if (auto c = root.maybe("paper_cases")) x.paper_cases = p2::read_paper_cases(file, *c);
  if (auto p = root.maybe("paper")) {
    x.paper = side_by_side::parse_paper(*p, {}, {});
    for (const auto& t : x.paper->tables)
      for (const auto& r : t.rows)
        for (const auto& [metric, value] : r.paper)
          if (std::find(std::begin(kHeadlineMetrics), std::end(kHeadlineMetrics), metric) ==
              std::end(kHeadlineMetrics))
            throw r.node.at(metric).error(
                fmt::format("this kind computes {}", fmt::format("{}", fmt::join(kHeadlineMetrics, ", "))));
  }
  const auto algorithms = read_algorithms(root.at("algorithms"));
  x.payload_per_node = root.at("payload_per_node").as_bytes();
  if (!(x.payload_per_node > 0)) throw root.at("payload_per_node").error("expected a positive size");
  if (auto m = root.maybe("max_size")) x.synthesis.max_size = static_cast<int>(m->as_positive_int());
  if (auto c = root.maybe("canonical")) {
    auto canon = rd::parse_canonicalization(c->as_string());
    if (!canon) throw c->error(fmt::format("expected one of {}", rd::kCanonicalizationNames));
    x.synthesis.canonicalization = *canon;
  }
  const YamlReader sys = root.at("systems");
  sys.expect_sequence();
  if (sys.size() == 0) throw sys.error("expected at least one system");
  for (std::size_t i = 0; i < sys.size(); ++i) x.systems.push_back(parse_system(file, sys.at(i), algorithms));

  // The grid (P2 section 4): one axis over all devices; every two-axis factorization reduced on axis 0 and on
  // axis 1; the three-axis sets reduced on axes 0 and 2.
  for (std::size_t s = 0; s < x.systems.size(); ++s) {
    const int n = x.systems[s].topology.num_gpus();
    x.configs.push_back({s, {n}, {0}, algorithms});
    for (int a = 2; a < n; ++a)
      if (n % a == 0)
        for (int r = 0; r < 2; ++r) x.configs.push_back({s, {a, n / a}, {r}, algorithms});
    for (const auto& t : x.systems[s].three_axis)
      x.configs.push_back({s, t, {0, 2}, x.systems[s].three_axis_algorithms});
  }
  return x;
}

P2Results run(const P2Experiment& x) {
  P2Results results;
  const auto start = Clock::now();
  for (std::size_t c = 0; c < x.configs.size(); ++c) {
    const auto& cfg = x.configs[c];
    const auto& sys = x.systems[cfg.system];
    rd::EvalConfig ec;
    ec.axes = cfg.axes;
    ec.reduce_axes = cfg.reduce;
    ec.bytes_per_device = x.payload_per_node * sys.nodes;
    ec.algorithms = cfg.algorithms;
    ec.synthesis = x.synthesis;
    ec.keep_all_programs = true;
    rd::EvalStats stats;
    auto evals = rd::evaluate(sys.topology, ec, &stats);
    results.synth_wall += stats.synthesis_seconds;
    results.sim_wall += stats.simulation_seconds;
    results.simulations += stats.simulations;
    std::cerr << fmt::format("[{}/{}] {} axes {} reduce {}: {} cases, {} simulations\n", c + 1,
                             x.configs.size(), sys.label, axes_text(cfg.axes), axes_text(cfg.reduce),
                             evals.size(), stats.simulations);
    for (auto& e : evals) results.cases.push_back({c, std::move(e)});
  }
  results.total_wall = std::chrono::duration<double>(Clock::now() - start).count();
  return results;
}

std::string programs_csv(const P2Experiment& x, const P2Results& results) {
  std::string csv = "system,axes,reduce,matrix,algorithm,rank,program,shape,seconds,speedup_vs_allreduce\n";
  for (const auto& row : results.cases) {
    const auto& cfg = x.configs[row.config];
    const auto& e = row.eval;
    for (std::size_t r = 0; r < e.ranked.size(); ++r)
      csv +=
          fmt::format("{},{},{},{},{},{},{},{},{:.6e},{:.4f}\n", x.systems[cfg.system].label,
                      csv_field(axes_text(cfg.axes)), csv_field(axes_text(cfg.reduce)),
                      csv_field(rd::format_matrix(e.matrix)), e.algorithm, r + 1, csv_field(e.ranked[r].text),
                      e.ranked[r].shape, e.ranked[r].seconds, e.baseline_seconds / e.ranked[r].seconds);
  }
  return csv;
}

std::string cases_csv(const P2Experiment& x, const P2Results& results) {
  std::string csv =
      "system,nodes,gpus,axes,reduce,matrix,algorithm,cross_node,synthesis_hierarchy,programs,allreduce_s,"
      "best_s,speedup,best_shape,best_program\n";
  for (const auto& row : results.cases) {
    const auto& cfg = x.configs[row.config];
    const auto& e = row.eval;
    const auto& s = x.systems[cfg.system];
    csv += fmt::format("{},{},{},{},{},{},{},{},{},{},{:.6e},{:.6e},{:.4f},{},{}\n", s.label, s.nodes,
                       s.topology.num_gpus(), csv_field(axes_text(cfg.axes)),
                       csv_field(axes_text(cfg.reduce)), csv_field(rd::format_matrix(e.matrix)), e.algorithm,
                       e.cross_node ? 1 : 0, csv_field(e.hierarchy), e.num_programs, e.baseline_seconds,
                       e.best.seconds, e.speedup(), e.best.shape, csv_field(e.best.text));
  }
  return csv;
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

std::vector<Spread> spreads_of(const P2Experiment& x, const P2Results& results) {
  std::vector<Spread> spreads;
  std::map<std::string, std::size_t> index;
  for (const auto& row : results.cases) {
    const auto& cfg = x.configs[row.config];
    const std::string key = fmt::format("{} {} r{} {}", x.systems[cfg.system].label, axes_text(cfg.axes),
                                        axes_text(cfg.reduce), row.eval.algorithm);
    auto [it, inserted] = index.try_emplace(key, spreads.size());
    if (inserted) spreads.push_back(Spread{key});
    auto& sp = spreads[it->second];
    ++sp.matrices;
    sp.ar_min = std::min(sp.ar_min, row.eval.baseline_seconds);
    sp.ar_max = std::max(sp.ar_max, row.eval.baseline_seconds);
    sp.best_min = std::min(sp.best_min, row.eval.best.seconds);
    sp.best_max = std::max(sp.best_max, row.eval.best.seconds);
  }
  return spreads;
}

std::string spread_csv(const std::vector<Spread>& spreads) {
  std::string csv =
      "configuration,matrices,allreduce_min_s,allreduce_max_s,allreduce_spread,best_min_s,best_max_s,best_"
      "spread\n";
  for (const auto& sp : spreads)
    csv += fmt::format("{},{},{:.6e},{:.6e},{:.3f},{:.6e},{:.6e},{:.3f}\n", csv_field(sp.label), sp.matrices,
                       sp.ar_min, sp.ar_max, sp.ar_spread(), sp.best_min, sp.best_max, sp.best_spread());
  return csv;
}

// The headline aggregates over all cases.
struct Headline {
  std::size_t improved = 0, cross = 0, cross_improved = 0;
  double sum_win = 0, sum_cross_win = 0, max_speedup = 0;
  const CaseRow* max_case = nullptr;
  std::map<std::string, int> winning_shapes;
};

Headline headline_of(const P2Results& results) {
  Headline h;
  for (const auto& row : results.cases) {
    const double sp = row.eval.speedup();
    const bool win = sp >= kImprovedThreshold;
    if (win) {
      ++h.improved;
      h.sum_win += sp;
      ++h.winning_shapes[row.eval.best.shape];
    }
    if (row.eval.cross_node) {
      ++h.cross;
      if (win) {
        ++h.cross_improved;
        h.sum_cross_win += sp;
      }
    }
    if (sp > h.max_speedup) {
      h.max_speedup = sp;
      h.max_case = &row;
    }
  }
  return h;
}

// strata's headline numbers (the quantities of kHeadlineMetrics) and the details they come from; the numbers
// go into `measured` under every published row, the details into the returned markdown.
std::string headline_table(const P2Experiment& x, const P2Results& results,
                           const std::vector<Spread>& spreads, side_by_side::Measured& measured) {
  const Headline h = headline_of(results);
  const Spread* max_spread = nullptr;
  for (const auto& sp : spreads)
    if (sp.matrices > 1 && (!max_spread || sp.ar_spread() > max_spread->ar_spread())) max_spread = &sp;
  const Spread* paper_case = nullptr;
  for (const auto& sp : spreads)
    if (sp.label.find("[4 16] r[0] tree") != std::string::npos && sp.label.rfind("A100", 0) == 0 &&
        sp.label.find("x4") != std::string::npos)
      paper_case = &sp;
  const std::size_t n = results.cases.size();
  const double frac = n == 0 ? 0 : static_cast<double>(h.improved) / static_cast<double>(n);
  const double mean_win = h.improved ? h.sum_win / static_cast<double>(h.improved) : 1.0;
  const double cross_mean = h.cross_improved ? h.sum_cross_win / static_cast<double>(h.cross_improved) : 1.0;
  std::map<std::string, double> values{{"improved_percent", frac * 100},
                                       {"mean_speedup", mean_win},
                                       {"cross_node_mean_speedup", cross_mean},
                                       {"cases", static_cast<double>(n)}};
  if (max_spread) values["max_spread"] = max_spread->ar_spread();
  if (paper_case) {
    values["paper_case_allreduce_spread"] = paper_case->ar_spread();
    values["paper_case_best_spread"] = paper_case->best_spread();
  }
  if (h.max_case) values["max_speedup"] = h.max_speedup;
  std::map<std::size_t, std::set<std::size_t>> counts_by_depth;
  for (const auto& row : results.cases) {
    const auto& hier = row.eval.hierarchy;
    counts_by_depth[static_cast<std::size_t>(std::count(hier.begin(), hier.end(), ','))].insert(
        row.eval.num_programs);
  }
  // One count per depth when the grid gives one (the published counts are per depth).
  if (counts_by_depth.count(1) && counts_by_depth[1].size() == 1)
    values["programs_one_level"] = static_cast<double>(*counts_by_depth[1].begin());
  if (counts_by_depth.count(2) && counts_by_depth[2].size() == 1)
    values["programs_two_levels"] = static_cast<double>(*counts_by_depth[2].begin());
  if (x.paper)
    for (const auto& t : x.paper->tables)
      for (const auto& r : t.rows)
        for (const auto& [metric, value] : values) measured.set(t.name, r.key, metric, value);

  std::string md =
      "## strata's headline numbers\n\n| quantity | strata (simulated) | where |\n|---|---|---|\n";
  md += fmt::format("| largest AllReduce spread across placements | {:.1f}x | {} |\n",
                    max_spread ? max_spread->ar_spread() : 0.0, max_spread ? max_spread->label : "-");
  if (paper_case)
    md += fmt::format(
        "| spread of the paper's case: AllReduce / best programs | {:.1f}x / {:.1f}x | A100x4 [4 16] reduce "
        "0 "
        "Tree |\n",
        paper_case->ar_spread(), paper_case->best_spread());
  md += fmt::format("| cases where a synthesized program beats AllReduce | {:.0f}% | {} of {} |\n",
                    frac * 100, h.improved, n);
  md += fmt::format("| mean speedup over the winning cases | {:.2f}x | |\n", mean_win);
  if (h.max_case) {
    const auto& cfg = x.configs[h.max_case->config];
    md += fmt::format("| max speedup | {:.2f}x | {} {} r{} {} {} |\n", h.max_speedup,
                      x.systems[cfg.system].label, axes_text(cfg.axes), axes_text(cfg.reduce),
                      rd::format_matrix(h.max_case->eval.matrix), h.max_case->eval.algorithm);
  }
  md += fmt::format(
      "| cross-node reductions: mean speedup of the winning cases | {:.2f}x | {} of {} cross-node cases "
      "improved "
      "|\n",
      cross_mean, h.cross_improved, h.cross);
  md += "| programs per synthesis hierarchy |";
  for (const auto& [depth, counts] : counts_by_depth)
    md += fmt::format(" {} non-root level(s): {};", depth, fmt::join(counts, "/"));
  md += " | |\n";
  md += fmt::format(
      "| synthesis + simulation time, whole grid | {:.2f} s | {:.3f} s synthesis, {:.2f} s simulation wall, "
      "{} "
      "simulations |\n\n",
      results.total_wall, results.synth_wall, results.sim_wall, results.simulations);
  md += "Winning program shapes (cases where a program beats AllReduce):\n\n| shape | cases |\n|---|---|\n";
  std::vector<std::pair<std::string, int>> shapes(h.winning_shapes.begin(), h.winning_shapes.end());
  std::stable_sort(shapes.begin(), shapes.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  for (const auto& [shape, count] : shapes) md += fmt::format("| {} | {} |\n", shape, count);
  return md;
}

// Breakdown by system, algorithm and whether the reduction crosses nodes.
std::string breakdown_table(const P2Experiment& x, const P2Results& results) {
  struct Bucket {
    std::size_t cases = 0, improved = 0;
    double sum = 0, max = 1;
  };
  std::map<std::string, Bucket> buckets;
  for (const auto& row : results.cases) {
    const auto& cfg = x.configs[row.config];
    auto& b = buckets[fmt::format("| {} | {} | {} |", x.systems[cfg.system].label, row.eval.algorithm,
                                  row.eval.cross_node ? "across nodes" : "inside a node")];
    ++b.cases;
    const double sp = row.eval.speedup();
    b.max = std::max(b.max, sp);
    if (sp >= kImprovedThreshold) {
      ++b.improved;
      b.sum += sp;
    }
  }
  std::string md =
      "\nBreakdown (improved = best program at least 0.5% faster than AllReduce):\n\n"
      "| system | algorithm | reduction | cases | improved | mean speedup of improved | max speedup "
      "|\n|---|---|---|---|---|---|---|\n";
  for (const auto& [k, b] : buckets)
    md += fmt::format(
        "{} {} | {} | {} | {:.2f}x |\n", k, b.cases, b.improved,
        b.improved ? fmt::format("{:.2f}x", b.sum / static_cast<double>(b.improved)) : std::string("-"),
        b.max);
  return md;
}

void report(const P2Experiment& x, const P2Results& results, ResultsDir& out, const RunOptions& options) {
  const auto spreads = spreads_of(x, results);
  out.write("cases.csv", cases_csv(x, results));
  out.write("programs.csv", programs_csv(x, results));
  out.write("spread.csv", spread_csv(spreads));

  std::string md = fmt::format("# {}\n\n{}\n\n", x.name, x.description);
  md += fmt::format(
      "Grid: {} systems, {} configurations, **{} cases** (matrix x reduction x NCCL algorithm). Payload {} "
      "per node per GPU (P2: 2^29 float32 x nodes). Programs synthesized with size bound {} "
      "and "
      "canonicalization `{}`; every program lowered to device groups and simulated on the strata simulator "
      "(flow-level network model with NCCL ring/tree collectives; tree only for AllReduce, as in NCCL).\n\n",
      x.systems.size(), x.configs.size(), results.cases.size(), units::format_bytes(x.payload_per_node),
      x.synthesis.max_size, rd::canonicalization_name(x.synthesis.canonicalization));
  side_by_side::Measured measured;
  md += headline_table(x, results, spreads, measured);
  if (x.paper)
    md += "\n## Beside the published numbers\n" + side_by_side::markdown(*x.paper, measured) + "\n";
  md += breakdown_table(x, results);
  if (!x.paper_cases.empty()) {
    std::vector<p2::SimulatedCase> simulated;
    for (const auto& row : results.cases) {
      const auto& cfg = x.configs[row.config];
      const auto& e = row.eval;
      const std::string system = x.systems[cfg.system].label, axes = axes_text(cfg.axes),
                        reduce = axes_text(cfg.reduce), matrix = rd::format_matrix(e.matrix);
      const auto& topo = x.systems[cfg.system].topology;
      const rd::Placement placement(rd::placement_hierarchy(topo, false).levels, cfg.axes, e.matrix);
      simulated.push_back({p2::case_key(system, axes, reduce, matrix, e.algorithm), system, e.algorithm,
                           e.cross_node, e.baseline_seconds, e.best.seconds, e.speedup(),
                           group_shape(topo, placement.groups(cfg.reduce).front())});
    }
    const auto comparison = p2::compare(x.paper_cases, simulated, kImprovedThreshold);
    out.write("cases_vs_paper.csv", comparison.csv);
    md += comparison.markdown;
  }
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
  (its intra-node steps ran below 270 GB/s). For the paper's Tree case synthesis speeds up both ends alike in the
  model: ReduceScatter-AllGather rings beat NCCL's tree chain inside a node, and across 4 nodes they beat NCCL's
  tree, whose interior nodes send 2S through their NIC where a ring sends 1.5S; so the spread stays about the
  same, while the paper saw it shrink to ~330x.
- **Which cases improve.** Ring, inside a node: a flat ring over an NVSwitch is already bandwidth-optimal, so no
  program beats it (the paper's small measured wins there are launch/XLA effects the model does not have). Ring,
  across nodes: NCCL's ring crosses every node boundary once per direction but sends 2(n-1)/n of the buffer through
  the NIC per group, while ReduceScatter inside the node first cuts the NIC share to 1/(GPUs of the group in that
  node) -- this is where strata finds its wins. Tree, across nodes: NCCL's tree is itself
  hierarchical (chain inside the node, binary trees between nodes). Over two nodes it sends the minimum through
  the NIC, and synthesized programs do not beat it in the model, whereas the paper measured small wins (1.02-1.07x,
  and 1.26-1.36x where the groups span two nodes with 16 GPUs each, which the model does not explain; the scale
  check above places the missing cost in the tree AllReduce itself: those groups' measured trees take 1.38-1.74x
  what the system's other cases scale to, their best programs 1.03-1.41x of strata's best non-AllReduce program
  on the same scale). Over four
  nodes NCCL's pair of trees (ncclGetDtree: 0 -> 2 -> {1, 3} and its mirror) makes two nodes interior in one tree,
  and their NICs carry 2S where a ring's carry 1.5S, so rings and ReduceScatter-AllGather programs beat the tree
  there, as the paper measured (1.38-1.60x for one GPU per node; strata 1.33x). Tree, inside a node: the
  chain-shaped tree is slower than rings, so ReduceScatter-AllGather wins.
- **Case by case** (the table above, from `paper_cases:`). The largest differences are three-axis Ring cases
  whose reduction groups are those of two-axis cases (e.g. A100x4 [16 2 2] r[0 2] [[1,16],[2,1],[2,1]]: 16 GPUs
  of each of 2 nodes, as in A100x2 [32]). The paper measured the same AllReduce time for both (4.74-4.82 s) but
  a best program of 1.03-1.11x for the three-axis case against 1.49-1.58x for the two-axis one; strata
  synthesizes the same ReduceScatter-AllReduce-AllGather program for both and predicts the same speedup, so
  that difference is not one the simulator can close.
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
      "- `cases_vs_paper.csv` (with `paper_cases:`): each case's measured (paper) and simulated speedup,\n"
      "  and its AllReduce scale (measured / simulated time over its group's median)\n"
      "- `spread.png`: placement spread per configuration; `speedup_hist.png`: speedup histogram\n";
  draw_figures(md, options, "p2_reproduction.py", {out.staging().string(), x.name});
  if (x.paper) side_by_side::write_outputs(*x.paper, measured, x.name, out, options, md);
  out.write("summary.md", md);
}

}  // namespace

ExperimentKind p2_reproduction_kind() {
  return make_kind(
      "p2-reproduction",
      "P2's placement x reduction-program grid, simulated and reported beside the paper's numbers", &parse,
      &run, &report);
}

}  // namespace strata::experiments
