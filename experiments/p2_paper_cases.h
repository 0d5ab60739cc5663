// P2's per-case measurements (Xie et al., MLSys 2022, Appendix A) beside strata's simulated cases: which
// cases a synthesized program improves in each, and where they disagree. The p2-reproduction kind reads the
// table (`paper_cases:` in its experiment file) and reports the comparison (cases_vs_paper.csv, summary.md).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "experiments/experiment.h"

namespace strata::experiments::p2 {

// One measured case: the AllReduce time, the best synthesized program's time (seconds) and the speedup the
// paper prints for it.
struct PaperCase {
  double allreduce_s = 0, optimal_s = 0, speedup = 0;
};

// Cases keyed by case_key(system, axes, reduce, matrix, algorithm), which also names a case for people
// ("A100x4 [4 16] r[0] [[4,1],[1,16]] tree").
using PaperCases = std::map<std::string, PaperCase>;
std::string case_key(const std::string& system, const std::string& axes, const std::string& reduce,
                     const std::string& matrix, const std::string& algorithm);

// Reads the CSV at the path `field` names (resolved from the experiment file): comment lines starting with
// '#', then the header system,axes,reduce,matrix,algorithm,allreduce_s,optimal_s,speedup and one row per
// case. Errors name the file, the row and the column.
PaperCases read_paper_cases(const ExperimentFile& file, const YamlReader& field);

// One of strata's cases, as the comparison needs it.
struct SimulatedCase {
  std::string key;     // case_key(...)
  std::string system;  // its system's label ("A100x2")
  std::string algorithm;
  bool cross_node = false;
  double allreduce_s = 0, best_s = 0, speedup = 0;
  std::string group_shape;  // how its reduction groups sit on the nodes (group_shape in p2_reproduction.cc)
};

struct Comparison {
  std::string csv;       // cases_vs_paper.csv
  std::string markdown;  // the summary's section
};
// `improved` is the kind's rule for a win (best program at least that much faster than AllReduce); the
// paper's tables print speedups to two decimals, so a printed speedup above 1 counts as a win there.
// The comparison also checks the AllReduce times themselves without any absolute calibration: within one
// system and node span (e.g. A100x2 across nodes) the measured / simulated ratio is the same for every case
// when the model's relative costs are right, whatever the NICs' true speed. Each case's ratio over its
// group's median is `allreduce_scale`; cases more than kScaleTolerance from 1 are listed, and the scales
// are broken down by the shape of the cases' reduction groups (SimulatedCase::group_shape).
inline constexpr double kScaleTolerance = 0.10;
Comparison compare(const PaperCases& paper, const std::vector<SimulatedCase>& cases, double improved);

}  // namespace strata::experiments::p2
