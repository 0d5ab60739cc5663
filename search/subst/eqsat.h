// Graph optimization by equality saturation (Tensat: Yang et al., MLSys 2021, arXiv 2101.01332; docs/subst.md
// "Equality saturation"): the input graph becomes an e-graph (search/subst/egraph.h); the rules' source
// graphs are matched as patterns over e-classes and their target graphs added and unioned with the matched
// roots, iteration after iteration until nothing changes or a limit is hit; then the cheapest acyclic graph
// under the same cost as the backtracking optimizer (graph_cost) is extracted, by ILP (Z3's optimizer,
// counting shared nodes once) or greedily bottom-up.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "models/cost/cost_model.h"
#include "models/ir/graph.h"
#include "search/subst/egraph.h"
#include "search/subst/min_gain.h"
#include "search/subst/rule.h"

namespace strata::search::subst {

enum class StopReason { kSaturated, kIterationLimit, kNodeLimit, kTimeLimit };
std::string_view stop_reason_name(StopReason r);

enum class Extraction { kGreedy, kIlp };
std::string_view extraction_name(Extraction e);

struct EqsatOptions {
  int max_iterations = 15;         // Tensat's experiments: 15
  std::size_t node_limit = 50000;  // e-nodes; Tensat: 50,000
  double time_limit_s = 10;        // saturation wall time
  // Multi-root rules (several lhs roots, e.g. two matmuls sharing an input) are applied in a separate step in
  // the first `multi_iterations` iterations only (Tensat's k_multi), with matches that would make a root its
  // own descendant skipped: they join every pair of root matches and grow the e-graph fastest.
  int multi_iterations = 2;
  Extraction extraction = Extraction::kIlp;
  double ilp_time_limit_s = 1;  // Z3 time; past it the best acyclic choice found (or greedy) is used
  // The input is returned unless the extracted graph saves at least this fraction of its predicted time
  // (search/subst/min_gain.h).
  double min_gain = kDefaultMinGain;
  std::function<void(std::string_view)> progress;
};

// One match of a rule: its lhs roots (one per equation) and the class bound to each rule input.
struct EMatch {
  std::vector<ClassId> roots;
  std::vector<ClassId> bindings;  // indexed like rule_variables(rule); -1 where the lhs does not bind it
  friend auto operator<=>(const EMatch&, const EMatch&) = default;
};

// The tensor variables of a rule: those of its lhs terms, then any only in its rhs terms, in order of first
// occurrence.
std::vector<std::string> rule_variables(const Rule& rule);

// All matches of `rule` in a rebuilt e-graph, in a fixed order (by roots, then bindings). Multi-root rules
// match each lhs on its own and join on the shared inputs; roots of one match are distinct classes.
std::vector<EMatch> ematch(const EGraph& eg, const Rule& rule);

// Adds the rule's target graph for `m` and unions each rhs with its lhs root (no rebuild). False when the
// target cannot be built on these shapes (shape inference, split point, constant sizes) or its types differ
// from the roots'; `changed` tells whether a union happened.
bool apply_ematch(EGraph& eg, const Rule& rule, const EMatch& m, bool& changed);

struct EqsatIteration {
  std::size_t nodes = 0, classes = 0;  // after the iteration's rebuild
  int applied = 0;                     // matches whose union changed the e-graph
  int multi_applied = 0;               // of those: multi-root
  int multi_skipped_cycles = 0;
  double seconds = 0;
};

struct ExtractionResult {
  std::vector<int> choice;  // per class id (canonical ids only): index into eclass(id).nodes, -1 unused
  double cost = 0;          // seconds, shared nodes counted once
  Extraction used = Extraction::kGreedy;
  std::string note;  // why ILP fell back to greedy, or how many cycle cuts it took
};

// Cheapest acyclic choice of one e-node per class reachable from `roots`. Per e-node cost: the cost model's
// time of its operator, 0 when the class is weight-only (folded) and for sources. Greedy: bottom-up
// fixed point on tree cost (shared subgraphs counted once per use). ILP: boolean selection variables, one
// cost term per operator instance (both outputs of a split share it), acyclicity by lazily added cycle cuts;
// falls back to greedy on timeout or when Z3 gives no model.
ExtractionResult extract(const EGraph& eg, std::span<const ClassId> roots, const models::CostModel& cost,
                         Extraction method, double ilp_time_limit_s);

// The graph of an extraction: sources of `like` (same names, kinds, data, order), extracted nodes in
// topological order (names of the input graph's nodes where the same operator instance is kept), outputs
// named as in `like`.
models::Graph extracted_graph(const GraphEGraph& geg, const ExtractionResult& ex, const models::Graph& like);

struct EqsatResult {
  models::Graph graph;
  double cost_before = 0, cost_after = 0;  // graph_cost, seconds
  StopReason stop = StopReason::kSaturated;
  std::vector<EqsatIteration> iterations;
  std::size_t nodes = 0, classes = 0;                          // final e-graph size
  std::vector<std::pair<std::string, int>> rule_applications;  // rule name -> unions that changed the e-graph
  Extraction extraction = Extraction::kGreedy;                 // the one whose result was used
  std::string extraction_note;
  double extraction_cost = 0;  // the extractor's own estimate (seconds)
  // Set when the extracted graph (predicted this many seconds) saved less than EqsatOptions::min_gain:
  // `graph` is then the input and cost_after == cost_before.
  std::optional<double> declined_cost;
  double saturation_seconds = 0, extraction_seconds = 0, seconds = 0;
};

EqsatResult eqsat_optimize(const models::Graph& input, std::span<const Rule> rules,
                           const models::CostModel& cost, const EqsatOptions& options = {});

}  // namespace strata::search::subst
