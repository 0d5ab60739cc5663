// Equality saturation's runner (Tensat, Yang et al., MLSys 2021): rounds of e-matching every rule and
// applying the matches until saturation or a limit, then extraction. E-matching lives in eqsat_match.cc,
// extraction in eqsat_extract.cc.
#include "search/subst/eqsat.h"

#include <algorithm>

#include <fmt/format.h>
#include <tbb/parallel_for.h>

#include "search/subst/optimizer.h"
#include "util/timer.h"

namespace strata::search::subst {
namespace {

// Whether `target` is reachable from class `from` through the children of any e-node.
bool reaches(const EGraph& eg, ClassId from, const std::vector<ClassId>& targets, std::vector<char>& seen) {
  std::fill(seen.begin(), seen.end(), 0);
  std::vector<ClassId> stack{eg.find(from)};
  while (!stack.empty()) {
    const ClassId c = stack.back();
    stack.pop_back();
    if (std::find(targets.begin(), targets.end(), c) != targets.end()) return true;
    if (seen[static_cast<std::size_t>(c)]) continue;
    seen[static_cast<std::size_t>(c)] = 1;
    for (const ENode& n : eg.eclass(c).nodes)
      for (ClassId k : n.children) {
        const ClassId kc = eg.find(k);
        if (!seen[static_cast<std::size_t>(kc)]) stack.push_back(kc);
      }
  }
  return false;
}

// The saturation loop's state across iterations.
struct Saturation {
  const EqsatOptions& options;
  std::span<const Rule> rules;
  EGraph& eg;
  const util::Stopwatch& watch;  // since eqsat_optimize started
  std::vector<int> applications;
  std::vector<char> multi;
  StopReason stop = StopReason::kIterationLimit;
  bool stopped = false;

  // Whether a multi-root match's rhs would read one of its own roots (a cycle through the e-graph).
  bool cyclic(const EMatch& m, std::vector<char>& seen) const {
    seen.assign(eg.class_capacity(), 0);
    std::vector<ClassId> roots;
    for (ClassId root : m.roots) roots.push_back(eg.find(root));
    bool cyclic = false;
    for (ClassId b : m.bindings)
      if (b >= 0 && reaches(eg, b, roots, seen)) cyclic = true;
    return cyclic;
  }

  // Applies the matches in rule order, single-root rules first, then multi-root ones; stops at the node or
  // time limit.
  void apply(const std::vector<std::vector<EMatch>>& matches, EqsatIteration& it) {
    std::vector<char> seen;
    for (int phase = 0; phase < 2 && !stopped; ++phase) {  // single-root rules, then multi-root ones
      for (std::size_t r = 0; r < rules.size() && !stopped; ++r) {
        if (multi[r] != (phase == 1)) continue;
        for (const EMatch& m : matches[r]) {
          if (phase == 1 && cyclic(m, seen)) {
            ++it.multi_skipped_cycles;
            continue;
          }
          bool changed = false;
          if (!apply_ematch(eg, rules[r], m, changed) || !changed) continue;
          ++it.applied;
          if (phase == 1) ++it.multi_applied;
          ++applications[r];
          if (eg.num_nodes() > options.node_limit) {
            stop = StopReason::kNodeLimit;
            stopped = true;
            break;
          }
          if (watch.seconds() > options.time_limit_s) {
            stop = StopReason::kTimeLimit;
            stopped = true;
            break;
          }
        }
      }
    }
  }

  // One iteration: search (read-only, parallel over rules), then apply in rule order: deterministic.
  EqsatIteration iterate(int iter) {
    const util::Stopwatch t_iter;
    const bool with_multi = iter < options.multi_iterations;
    std::vector<std::vector<EMatch>> matches(rules.size());
    tbb::parallel_for(std::size_t{0}, rules.size(), [&](std::size_t r) {
      if (!multi[r] || with_multi) matches[r] = ematch(eg, rules[r]);
    });
    EqsatIteration it;
    apply(matches, it);
    eg.rebuild();
    it.nodes = eg.num_nodes();
    it.classes = eg.num_classes();
    it.seconds = t_iter.seconds();
    return it;
  }

  // Runs iterations until saturation or a limit; the iterations' statistics go to res.
  void run(EqsatResult& res) {
    for (int iter = 0; iter < options.max_iterations && !stopped; ++iter) {
      const EqsatIteration it = iterate(iter);
      res.iterations.push_back(it);
      if (options.progress)
        options.progress(
            fmt::format("eqsat: iteration {}: {} unions ({} multi-root, {} skipped as cyclic), {} e-nodes, "
                        "{} e-classes, {:.2f} s",
                        iter + 1, it.applied, it.multi_applied, it.multi_skipped_cycles, it.nodes, it.classes,
                        it.seconds));
      if (stopped) break;
      if (it.applied == 0) {
        stop = StopReason::kSaturated;
        break;
      }
      if (eg.num_nodes() > options.node_limit) {
        stop = StopReason::kNodeLimit;
        break;
      }
      if (watch.seconds() > options.time_limit_s) {
        stop = StopReason::kTimeLimit;
        break;
      }
    }
    res.stop = stop;
  }
};

}  // namespace

std::string_view stop_reason_name(StopReason r) {
  switch (r) {
    case StopReason::kSaturated:
      return "saturated";
    case StopReason::kIterationLimit:
      return "iteration limit";
    case StopReason::kNodeLimit:
      return "node limit";
    case StopReason::kTimeLimit:
      return "time limit";
  }
  return "?";
}

std::string_view extraction_name(Extraction e) {
  return e == Extraction::kIlp ? "ilp" : "greedy";
}

EqsatResult eqsat_optimize(const models::Graph& input, std::span<const Rule> rules,
                           const models::CostModel& cost, const EqsatOptions& options) {
  const util::Stopwatch watch;
  const models::Graph g0 = remove_dead_nodes(input);
  EqsatResult res;
  res.cost_before = graph_cost(g0, cost);
  GraphEGraph geg = egraph_from_graph(g0);
  EGraph& eg = geg.egraph;
  Saturation sat{
      options, rules, eg, watch, std::vector<int>(rules.size(), 0), std::vector<char>(rules.size(), 0)};
  for (std::size_t r = 0; r < rules.size(); ++r) sat.multi[r] = rules[r].outputs.size() > 1;
  sat.run(res);
  res.saturation_seconds = watch.seconds();
  res.nodes = eg.num_nodes();
  res.classes = eg.num_classes();
  for (std::size_t r = 0; r < rules.size(); ++r)
    if (sat.applications[r] > 0) res.rule_applications.emplace_back(rules[r].name, sat.applications[r]);
  const util::Stopwatch t_ex;
  const ExtractionResult ex = extract(eg, geg.roots, cost, options.extraction, options.ilp_time_limit_s);
  res.extraction = ex.used;
  res.extraction_note = ex.note;
  res.extraction_cost = ex.cost;
  res.graph = extracted_graph(geg, ex, g0);
  res.cost_after = graph_cost(res.graph, cost);
  if (!worth_rewriting(res.cost_before, res.cost_after, options.min_gain)) {
    // Never a worse graph (the extractor's estimate and graph_cost agree up to rounding), nor one that saves
    // less than the minimum gain.
    if (res.cost_after > res.cost_before) res.extraction_note += "; extracted graph not cheaper, input kept";
    if (res.cost_after < res.cost_before) res.declined_cost = res.cost_after;
    res.graph = g0;
    res.cost_after = res.cost_before;
  }
  res.extraction_seconds = t_ex.seconds();
  res.seconds = watch.seconds();
  return res;
}

}  // namespace strata::search::subst
