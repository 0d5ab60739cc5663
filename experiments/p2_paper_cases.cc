#include "experiments/p2_paper_cases.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include <fmt/format.h>

#include "experiments/sweep_report.h"
#include "hw/config_error.h"
#include "util/error.h"
#include "util/file.h"
#include "util/parse.h"
#include "validate/stats.h"

namespace strata::experiments::p2 {
namespace {

constexpr std::string_view kColumns[] = {"system",    "axes",        "reduce",    "matrix",
                                         "algorithm", "allreduce_s", "optimal_s", "speedup"};

// The four outcomes of a case: a synthesized program improves it in the paper's measurement, in strata's
// simulation, in both, or in neither.
struct Outcomes {
  int both = 0, paper_only = 0, strata_only = 0, neither = 0;
  void add(bool paper, bool strata) {
    (paper ? (strata ? both : paper_only) : (strata ? strata_only : neither)) += 1;
  }
  int total() const { return both + paper_only + strata_only + neither; }
};

std::string outcome_row(std::string_view label, const Outcomes& o) {
  return fmt::format("| {} | {} | {} | {} | {} | {} | {:.0f}% |\n", label, o.total(), o.both, o.paper_only,
                     o.strata_only, o.neither, o.total() ? 100.0 * (o.both + o.neither) / o.total() : 0.0);
}

}  // namespace

std::string case_key(const std::string& system, const std::string& axes, const std::string& reduce,
                     const std::string& matrix, const std::string& algorithm) {
  return fmt::format("{} {} r{} {} {}", system, axes, reduce, matrix, algorithm);
}

PaperCases read_paper_cases(const ExperimentFile& file, const YamlReader& field) {
  const std::string path = file.resolve_path(field);
  const std::string text = util::read_file<ConfigError>(path, "P2's per-case measurements (CSV)");
  // Comment lines before the header.
  std::size_t start = 0, comment_lines = 0;
  while (start < text.size() && text[start] == '#') {
    const auto eol = text.find('\n', start);
    start = eol == std::string::npos ? text.size() : eol + 1;
    ++comment_lines;
  }
  const CsvTable table = parse_csv(std::string_view(text).substr(start), path);
  if (!std::equal(table.header.begin(), table.header.end(), std::begin(kColumns), std::end(kColumns)))
    throw ConfigError(
        fmt::format("{}:{}: expected the header {}", path, comment_lines + 1, fmt::join(kColumns, ",")));
  PaperCases cases;
  for (std::size_t i = 0; i < table.rows.size(); ++i) {
    const auto& row = table.rows[i];
    const std::size_t line = comment_lines + 2 + i;  // the header is line comment_lines + 1
    const auto number = [&](std::size_t column) {
      try {
        return util::parse_real(row[column], 1e-9, 1e9, kColumns[column]);
      } catch (const util::InputError& e) {
        throw ConfigError(fmt::format("{}:{}: {}", path, line, e.what()));
      }
    };
    const PaperCase c{number(5), number(6), number(7)};
    const std::string key = case_key(row[0], row[1], row[2], row[3], row[4]);
    if (!cases.emplace(key, c).second)
      throw ConfigError(fmt::format("{}:{}: case '{}' is listed twice", path, line, key));
  }
  if (cases.empty()) throw ConfigError(fmt::format("{}: expected at least one case", path));
  return cases;
}

Comparison compare(const PaperCases& paper, const std::vector<SimulatedCase>& cases, double improved) {
  struct Row {
    const SimulatedCase* simulated;
    const PaperCase* measured;
    std::string group;  // system and node span: the cases whose AllReduce ratios should agree
  };
  std::vector<Row> rows;
  std::map<std::string, std::vector<double>> ratios_by_group;
  for (const auto& c : cases) {
    const auto it = paper.find(c.key);
    if (it == paper.end()) continue;
    rows.push_back(
        {&c, &it->second, fmt::format("{} {}", c.system, c.cross_node ? "across nodes" : "inside a node")});
    ratios_by_group[rows.back().group].push_back(it->second.allreduce_s / c.allreduce_s);
  }
  std::map<std::string, double> median_ratio;
  for (const auto& [group, ratios] : ratios_by_group) median_ratio[group] = validate::median(ratios);

  Comparison out;
  out.csv =
      "case,cross_node,paper_allreduce_s,paper_optimal_s,paper_speedup,"
      "strata_allreduce_s,strata_best_s,strata_speedup,paper_improved,strata_improved,allreduce_scale,"
      "group_shape\n";
  Outcomes all;
  std::map<std::string, Outcomes> by_kind;
  struct Gap {
    double log_ratio;
    std::string line;
  };
  std::vector<Gap> gaps, off_scale;
  std::map<std::string, int> off_by_group;
  struct ShapeScales {
    int cases = 0, off = 0;
    double lowest = 0, highest = 0;
  };
  std::map<std::pair<std::string, std::string>, ShapeScales> by_shape;  // (group, shape)
  for (const Row& row : rows) {
    const SimulatedCase& c = *row.simulated;
    const PaperCase& p = *row.measured;
    const bool paper_win = p.speedup > 1.0, strata_win = c.speedup >= improved;
    const double scale = p.allreduce_s / c.allreduce_s / median_ratio.at(row.group);
    all.add(paper_win, strata_win);
    by_kind[fmt::format("{}, {}", c.algorithm, c.cross_node ? "across nodes" : "inside a node")].add(
        paper_win, strata_win);
    out.csv +=
        fmt::format("{},{},{},{},{},{:.6e},{:.6e},{:.4f},{},{},{:.4f},{}\n", csv_field(c.key),
                    c.cross_node ? 1 : 0, p.allreduce_s, p.optimal_s, p.speedup, c.allreduce_s, c.best_s,
                    c.speedup, paper_win ? 1 : 0, strata_win ? 1 : 0, scale, csv_field(c.group_shape));
    auto& shape = by_shape[{row.group, c.group_shape}];
    shape.lowest = shape.cases ? std::min(shape.lowest, scale) : scale;
    shape.highest = shape.cases ? std::max(shape.highest, scale) : scale;
    ++shape.cases;
    shape.off += std::abs(scale - 1) > kScaleTolerance ? 1 : 0;
    gaps.push_back({std::abs(std::log(c.speedup / p.speedup)),
                    fmt::format("| {} | {:.2f}x | {:.2f}x |\n", c.key, p.speedup, c.speedup)});
    if (std::abs(scale - 1) > kScaleTolerance) {
      ++off_by_group[row.group];
      off_scale.push_back(
          {std::abs(std::log(scale)), fmt::format("| {} | {:.2f} s | {:.3f} s | {:.2f} |\n", c.key,
                                                  p.allreduce_s, c.allreduce_s, scale)});
    }
  }
  std::string& md = out.markdown;
  md += "\n## Case by case beside the paper's measurements (Appendix A)\n\n";
  md += fmt::format(
      "{} of the grid's {} cases are in the paper's table ({} cases listed). A case is improved when its "
      "best "
      "program is faster than AllReduce: in the paper when the printed speedup is above 1.00, in strata by "
      "at least {:.1f}%. Every case with both columns is in `cases_vs_paper.csv`.\n\n",
      rows.size(), cases.size(), paper.size(), (improved - 1) * 100);
  md += "| cases | count | improved in both | paper only | strata only | neither | agree |\n";
  md += "|---|---|---|---|---|---|---|\n";
  md += outcome_row("all", all);
  for (const auto& [kind, o] : by_kind) md += outcome_row(kind, o);
  const auto by_size = [](const Gap& a, const Gap& b) { return a.log_ratio > b.log_ratio; };
  std::stable_sort(gaps.begin(), gaps.end(), by_size);
  md += "\nThe ten largest differences in speedup:\n\n| case | paper | strata |\n|---|---|---|\n";
  for (std::size_t i = 0; i < std::min<std::size_t>(10, gaps.size()); ++i) md += gaps[i].line;

  md += "\n### AllReduce times against the model's relative costs\n\n";
  md += fmt::format(
      "No absolute calibration is needed for this check: within one system and node span, the measured / "
      "simulated AllReduce time is the same for every case when the model charges each placement's "
      "AllReduce the right cost relative to the others. `allreduce_scale` in `cases_vs_paper.csv` is each "
      "case's ratio over its group's median; the cases more than {:.0f}% from it follow the table.\n\n",
      kScaleTolerance * 100);
  md += "| group | cases | median measured / simulated | off by more than " +
        fmt::format("{:.0f}%", kScaleTolerance * 100) + " |\n|---|---|---|---|\n";
  for (const auto& [group, ratios] : ratios_by_group)
    md += fmt::format("| {} | {} | {:.2f} | {} |\n", group, ratios.size(), median_ratio.at(group),
                      off_by_group[group]);
  md += fmt::format(
      "\nBy the shape of the reduction groups (`group_shape`): one GPU of each node; whole nodes; part of "
      "each "
      "node, its GPUs joined by NVLink among themselves; or part of a node whose GPUs are not all joined by "
      "NVLink, so that some of the group's traffic inside a node crosses PCIe and the CPUs.\n\n"
      "Cases of one shape that scale alike (a small highest / lowest) are charged consistently among "
      "themselves, whatever the group's median.\n\n"
      "| group | shape | cases | allreduce_scale | highest / lowest | off by more than {:.0f}% |\n"
      "|---|---|---|---|---|---|\n",
      kScaleTolerance * 100);
  for (const auto& [key, s] : by_shape)
    md += fmt::format("| {} | {} | {} | {:.2f}-{:.2f} | {:.2f} | {} |\n", key.first, key.second, s.cases,
                      s.lowest, s.highest, s.highest / s.lowest, s.off);
  std::stable_sort(off_scale.begin(), off_scale.end(), by_size);
  if (off_scale.empty()) return out;
  md += "\n| case | paper AllReduce | strata AllReduce | scale |\n|---|---|---|---|\n";
  for (const Gap& g : off_scale) md += g.line;
  return out;
}

}  // namespace strata::experiments::p2
