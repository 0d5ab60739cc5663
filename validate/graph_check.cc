#include "validate/graph_check.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <unordered_map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "models/exec/executor.h"
#include "search/subst/weight_folding.h"

namespace strata::validate {

namespace ss = search::subst;

namespace {

// Adds `c` unless a structurally equal graph is there already (then the names are joined); its index.
std::size_t add_candidate(std::vector<GraphCandidate>& out,
                          std::unordered_map<std::uint64_t, std::size_t>& seen, GraphCandidate c) {
  const auto h = ss::graph_hash(c.graph);
  if (auto it = seen.find(h); it != seen.end()) {
    out[it->second].name += " = " + c.name;
    return it->second;
  }
  seen.emplace(h, out.size());
  out.push_back(std::move(c));
  return out.size() - 1;
}

std::string describe(std::span<const ss::AppliedSubstitution> steps) {
  std::vector<std::string> parts;
  for (const auto& s : steps) parts.push_back(fmt::format("{}@{}", s.rule, fmt::join(s.nodes, "+")));
  return fmt::format("{}", fmt::join(parts, "; "));
}

// One rewrite of the original: a rule match or a hand-written transformation site.
struct Site {
  std::string how;
  std::size_t rule = 0;  // rules.size() + k: transformation site
  ss::Match match;
  std::function<std::optional<models::Graph>(const models::Graph&)> xfer;
};

std::vector<Site> rewrite_sites(const models::Graph& g, std::span<const ss::Rule> rules,
                                const models::CostModel& cost, const ss::OptimizerOptions& opt) {
  std::vector<Site> sites;
  const ss::MatchIndex index(g);
  for (std::size_t r = 0; r < rules.size(); ++r)
    for (auto& m : ss::find_matches(g, index, rules[r], r)) {
      std::vector<std::string> names;
      for (auto n : m.nodes) names.push_back(g.node(n).name);
      sites.push_back({fmt::format("{}@{}", rules[r].name, fmt::join(names, "+")), r, std::move(m), {}});
    }
  const auto costs = ss::node_costs(g, cost);
  for (const auto& xfer : opt.xfers)
    for (auto& s : xfer(g, costs, cost)) {
      std::vector<std::string> names;
      for (auto n : s.nodes) names.push_back(g.node(n).name);
      sites.push_back(
          {fmt::format("{}@{}", s.name, fmt::join(names, "+")), rules.size(), {}, std::move(s.apply)});
    }
  return sites;
}

// Pseudo-random sources by name (models::random_values, as both executors draw them), weights of rank >= 2
// scaled by 1/sqrt(fan-in).
models::Feeds<double> scaled_feeds(const models::Graph& g, std::uint64_t seed) {
  models::Feeds<double> feeds;
  for (std::size_t i = 0; i < g.values().size(); ++i) {
    const auto& v = g.values()[i];
    if (v.kind != models::ValueKind::kParam || v.data || v.type.rank() < 2) continue;
    auto w = models::random_values<double>(v.type.numel(), seed, v.name);
    const double scale = 1 / std::sqrt(static_cast<double>(v.type.numel() / v.type.shape[0]));
    for (auto& x : w) x *= scale;
    feeds.emplace(static_cast<models::ValueId>(i), std::move(w));
  }
  return feeds;
}

}  // namespace

CandidateSet optimizer_candidates(const models::Graph& input, std::span<const ss::Rule> rules,
                                  const models::CostModel& cost, const CandidateOptions& options) {
  const models::Graph g = ss::remove_dead_nodes(input);
  CandidateSet set;
  auto& out = set.candidates;
  std::unordered_map<std::uint64_t, std::size_t> seen;
  add_candidate(out, seen, {"original", "", g});

  auto bopt = options.backtrack;
  bopt.record_path = true;
  const auto br = ss::optimize(g, rules, cost, bopt);
  const auto steps = br.path_graphs.size();
  std::vector<std::size_t> kept;  // indices into path_graphs of the intermediate graphs measured
  const std::size_t intermediate = steps > 0 ? steps - 1 : 0;
  const auto max = static_cast<std::size_t>(std::max(options.max_path_steps, 0));
  if (max == 0 || intermediate <= max) {
    for (std::size_t i = 0; i < intermediate; ++i) kept.push_back(i);
  } else {
    for (std::size_t j = 1; j <= max; ++j) {
      const std::size_t step = (j * intermediate + max) / (max + 1);  // ⌈j·n/(max+1)⌉, 1-based, <= n
      if (kept.empty() || kept.back() != step - 1) kept.push_back(step - 1);
    }
  }
  for (std::size_t i : kept)
    add_candidate(out, seen,
                  {fmt::format("backtrack step {}/{}", i + 1, steps),
                   describe(std::span(br.applied).first(i + 1)), br.path_graphs[i]});
  set.backtrack = add_candidate(out, seen, {"backtrack", describe(br.applied), br.graph});
  if (br.declined_cost)
    set.declined.push_back("backtrack: " +
                           ss::declined_note(br.cost_before, br.declined_cost, bopt.min_gain));

  const auto er = ss::eqsat_optimize(g, rules, cost, options.eqsat);
  std::vector<std::string> unions;
  for (const auto& [rule, n] : er.rule_applications) unions.push_back(fmt::format("{}x{}", rule, n));
  set.eqsat = add_candidate(
      out, seen,
      {"eqsat",
       fmt::format("equality saturation ({}), {} extraction; unions: {}", ss::stop_reason_name(er.stop),
                   ss::extraction_name(er.extraction), fmt::join(unions, " ")),
       er.graph});
  if (er.declined_cost)
    set.declined.push_back("eqsat: " +
                           ss::declined_note(er.cost_before, er.declined_cost, options.eqsat.min_gain));

  auto sites = rewrite_sites(g, rules, cost, options.backtrack);
  std::mt19937_64 rng(options.seed);
  for (std::size_t i = sites.size(); i > 1; --i) std::swap(sites[i - 1], sites[rng() % i]);
  int taken = 0;
  for (std::size_t k = 0; k < sites.size() && taken < options.sample; ++k) {
    const auto& s = sites[k];
    auto next = s.xfer ? s.xfer(g) : ss::apply_match(g, rules[s.rule], s.match, fmt::format("v{}_", k));
    if (!next || seen.contains(ss::graph_hash(*next))) continue;
    ++taken;
    add_candidate(out, seen, {fmt::format("sample {}", taken), s.how, std::move(*next)});
  }
  return set;
}

EquivalenceCheck check_equivalent(const models::Graph& original, const models::Graph& candidate,
                                  double tolerance, std::uint64_t seed, const ReplayDevice& device) {
  EquivalenceCheck c;
  if (original.outputs().size() != candidate.outputs().size()) {
    c.failure =
        fmt::format("{} outputs, the original has {}", candidate.outputs().size(), original.outputs().size());
    return c;
  }
  models::ExecOptions eo;
  eo.seed = seed;
  const auto a = device.replay(original, scaled_feeds(original, seed), eo);
  const auto b = device.replay(candidate, scaled_feeds(candidate, seed), eo);
  for (std::size_t k = 0; k < original.outputs().size(); ++k) {
    const auto& x = a.values[static_cast<std::size_t>(original.outputs()[k])];
    const auto& y = b.values[static_cast<std::size_t>(candidate.outputs()[k])];
    const auto& name = original.value(original.outputs()[k]).name;
    if (x.size() != y.size()) {
      c.failure =
          fmt::format("output {} ({}): {} elements, the original has {}", k, name, y.size(), x.size());
      return c;
    }
    double scale = 0, worst = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      if (!std::isfinite(x[i]) || !std::isfinite(y[i])) {
        c.failure = fmt::format("output {} ({}) element {} is not finite ({} vs {})", k, name, i, y[i], x[i]);
        return c;
      }
      scale = std::max(scale, static_cast<double>(std::abs(x[i])));
      worst = std::max(worst, static_cast<double>(std::abs(x[i] - y[i])));
    }
    const double rel = worst / std::max(scale, 1e-30);
    c.max_rel_error = std::max(c.max_rel_error, rel);
    if (rel > tolerance) {
      c.failure =
          fmt::format("output {} ({}): max |difference| {:.3g} is {:.3g} of max |output| {:.3g} > {:.3g}", k,
                      name, worst, rel, scale, tolerance);
      return c;
    }
  }
  c.pass = true;
  return c;
}

double measure_graph_seconds(const models::Graph& g, const TimingOptions& timing,
                             const ReplayDevice& device) {
  const auto p = device.profile(ss::fold_weight_only(g), timing, device.name);
  double total = 0;
  for (const auto& op : p.ops) total += op.timing.median_seconds * op.instances;
  return total;
}

double measure_whole_graph_seconds(const models::Graph& g, const TimingOptions& timing,
                                   const ReplayDevice& device) {
  return device.time_graph(ss::fold_weight_only(g), timing).median_seconds;
}

double CandidateRow::measured() const {
  return median(measured_runs);
}

double CandidateRow::node_sum() const {
  return median(node_sum_runs);
}

double CandidateRow::spread() const {
  if (measured_runs.size() < 2) return 0;
  const auto [lo, hi] = std::minmax_element(measured_runs.begin(), measured_runs.end());
  const double m = measured();
  return m > 0 ? (*hi - *lo) / m : 0;
}

GraphCheckReport summarize_candidates(std::vector<CandidateRow> rows, std::size_t original,
                                      std::size_t backtrack, std::size_t eqsat) {
  GraphCheckReport r;
  r.rows = std::move(rows);
  r.original = original;
  r.backtrack = backtrack;
  r.eqsat = eqsat;
  std::vector<double> predicted, measured, spreads;
  for (const auto& row : r.rows) {
    if (!row.equivalent) continue;
    predicted.push_back(row.predicted);
    measured.push_back(row.measured());
    spreads.push_back(row.spread());
  }
  r.ranked = static_cast<int>(predicted.size());
  if (predicted.empty()) return r;
  r.noise = median(spreads);
  r.top1 = top_k_hit(predicted, measured, 1, r.noise);
  r.top1_exact = top_k_hit(predicted, measured, 1);
  r.top3 = top_k_hit(predicted, measured, 3, r.noise);
  r.top5 = top_k_hit(predicted, measured, 5, r.noise);
  r.spearman = spearman(predicted, measured);
  r.regret = regret(predicted, measured);
  r.errors = error_summary(predicted, measured);
  const auto& o = r.rows.at(original);
  auto speedup = [&](const CandidateRow& c) { return c.measured() > 0 ? o.measured() / c.measured() : 0.0; };
  auto slower = [&](const CandidateRow& c) {
    return c.measured() > 0 && o.measured() > 0 && c.measured() > o.measured() * (1 + r.noise);
  };
  r.backtrack_speedup = speedup(r.rows.at(backtrack));
  r.eqsat_speedup = speedup(r.rows.at(eqsat));
  r.backtrack_slower = slower(r.rows.at(backtrack));
  r.eqsat_slower = slower(r.rows.at(eqsat));
  return r;
}

}  // namespace strata::validate

namespace strata::validate {

GraphCheckReport check_candidates(const CandidateSet& set, const models::CostModel& cost,
                                  const CandidateCheckOptions& options) {
  const auto log = [&](const std::string& line) {
    if (options.log) options.log(line);
  };
  const auto& cands = set.candidates;
  std::vector<CandidateRow> rows;
  for (const auto& c : cands) {
    const auto check = check_equivalent(cands[0].graph, c.graph, options.tolerance, 0, *options.device);
    if (!check.pass) log(fmt::format("NOT EQUIVALENT: {} ({}): {}", c.name, c.how, check.failure));
    rows.push_back({c.name,
                    c.how,
                    c.graph.nodes().size(),
                    ss::graph_cost(c.graph, cost),
                    {},
                    {},
                    check.pass,
                    check.max_rel_error});
  }
  for (int round = 0; round < options.repeat; ++round)
    for (std::size_t i = 0; i < rows.size(); ++i) {
      auto& row = rows[i];
      if (!row.equivalent) continue;
      row.measured_runs.push_back(
          measure_whole_graph_seconds(cands[i].graph, options.timing, *options.device));
      row.node_sum_runs.push_back(measure_graph_seconds(cands[i].graph, options.timing, *options.device));
      log(fmt::format("round {}/{}: {} whole graph {:.4f} ms, sum of node medians {:.4f} ms", round + 1,
                      options.repeat, row.name, row.measured_runs.back() * 1e3,
                      row.node_sum_runs.back() * 1e3));
    }
  return summarize_candidates(std::move(rows), 0, set.backtrack, set.eqsat);
}

}  // namespace strata::validate
