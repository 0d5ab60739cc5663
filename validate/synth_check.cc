#include "validate/synth_check.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include <fmt/format.h>

#include "search/reduce/evaluate.h"
#include "validate/measure.h"

namespace strata::validate {
namespace rd = search::reduce;

namespace {

PlanCase plan_case(const rd::LoweredProgram& lowered, const std::string& name) {
  PlanCase c;
  c.name = name;
  for (const auto& s : lowered.steps) {
    PlanStep step;
    for (const auto& call : s.calls) {
      PlanCall pc;
      pc.op = call.op;
      pc.group.assign(call.group.begin(), call.group.end());
      pc.bytes = round_bytes(call.op, static_cast<int>(call.group.size()), std::llround(call.bytes));
      step.calls.push_back(std::move(pc));
    }
    c.steps.push_back(std::move(step));
  }
  return c;
}

}  // namespace

RankingStats ranking_stats(const std::vector<SynthCandidate>& measured, double tolerance, bool use_min) {
  RankingStats s;
  std::vector<double> p, m, spreads;
  for (const auto& c : measured) {
    p.push_back(c.predicted);
    m.push_back(use_min ? c.measured.min : c.measured.median);
    spreads.push_back(c.measured.relative_spread());
  }
  s.candidates = static_cast<int>(measured.size());
  if (measured.empty()) return s;
  s.top1 = top_k_hit(p, m, 1, tolerance);
  s.top5 = top_k_hit(p, m, 5, tolerance);
  s.top10 = top_k_hit(p, m, 10, tolerance);
  s.spearman = spearman(p, m);
  s.regret = regret(p, m);
  s.error = error_summary(p, m);
  s.median_spread = spread_of(spreads).median;
  return s;
}

SynthCheck check_synth(const ClusterSpec& spec, const hw::Topology& topo, const SynthCheckRequest& request) {
  return check_synth(spec.ranks(), topo, request, "openmpi",
                     [&](const MeasurementPlan& plan) { return measure(spec, plan); });
}

SynthCheck check_synth(int ranks, const hw::Topology& topo, const SynthCheckRequest& request,
                       std::string_view algorithm,
                       const std::function<PlanResult(const MeasurementPlan&)>& measure) {
  rd::EvalConfig config;
  config.axes = request.axes;
  config.reduce_axes = request.reduce_axes;
  config.bytes_per_device = request.bytes;
  config.algorithms = {std::string(algorithm)};
  config.synthesis.max_size = request.max_size;
  config.keep_all_programs = true;
  config.keep_lowered = true;
  const auto evals = rd::evaluate(topo, config);

  struct Entry {
    SynthCandidate candidate;
    PlanCase plan;
  };
  std::vector<Entry> all;
  for (std::size_t p = 0; p < evals.size(); ++p)
    for (const auto& prog : evals[p].ranked) {
      Entry e;
      e.candidate.placement = rd::format_matrix(evals[p].matrix);
      e.candidate.program = prog.text;
      e.candidate.shape = prog.shape;
      e.plan = plan_case(prog.lowered, fmt::format("placement {} program {}", p, prog.index));
      // Predicted on exactly the work measured (sizes rounded to whole elements per rank).
      e.candidate.predicted = simulate_case(topo, e.plan, algorithm);
      all.push_back(std::move(e));
    }
  std::stable_sort(all.begin(), all.end(), [](const Entry& a, const Entry& b) {
    return a.candidate.predicted < b.candidate.predicted;
  });
  SynthCheck check;
  check.total_candidates = all.size();
  std::vector<std::size_t> chosen(all.size());
  std::iota(chosen.begin(), chosen.end(), 0);
  const auto limit = static_cast<std::size_t>(request.top + request.sample);
  if (all.size() > limit) {
    std::vector<std::size_t> rest(chosen.begin() + request.top, chosen.end());
    std::mt19937_64 rng(request.seed);
    std::shuffle(rest.begin(), rest.end(), rng);
    chosen.resize(static_cast<std::size_t>(request.top));
    chosen.insert(chosen.end(), rest.begin(), rest.begin() + request.sample);
    std::sort(chosen.begin(), chosen.end());
  }
  MeasurementPlan plan;
  plan.ranks = ranks;
  plan.warmup = request.warmup;
  plan.iterations = request.iterations;
  for (std::size_t i : chosen) plan.cases.push_back(all[i].plan);
  const PlanResult result = measure(plan);
  for (std::size_t k = 0; k < chosen.size(); ++k) {
    SynthCandidate c = all[chosen[k]].candidate;
    c.measured = spread_of(result.cases.at(k).seconds);
    c.wrong = result.cases.at(k).wrong;
    check.measured.push_back(std::move(c));
  }
  check.tolerance = request.tolerance;
  check.stats = ranking_stats(check.measured, request.tolerance);
  check.stats_min = ranking_stats(check.measured, request.tolerance, true);
  return check;
}

std::string synth_report(const SynthCheck& check) {
  std::vector<double> m;
  for (const auto& c : check.measured) m.push_back(c.measured.median);
  const auto measured_rank = average_ranks(m);
  std::string out = fmt::format("{:>4} {:>5}  {:<14} {:>11} {:>11} {:>7} {:>7}  {}\n", "pred", "meas",
                                "placement", "predicted", "measured", "spread", "error", "program");
  out += fmt::format("{:>4} {:>5}  {:<14} {:>11} {:>11} {:>7} {:>7}\n", "rank", "rank", "", "(ms)", "(ms)",
                     "(%)", "(%)");
  for (std::size_t i = 0; i < check.measured.size(); ++i) {
    const auto& c = check.measured[i];
    out += fmt::format("{:>4} {:>5g}  {:<14} {:>11.3f} {:>11.3f} {:>7.1f} {:>+7.1f}  {}\n", i + 1,
                       measured_rank[i], c.placement, c.predicted * 1e3, c.measured.median * 1e3,
                       100 * c.measured.relative_spread(), 100 * (c.predicted / c.measured.median - 1),
                       c.program);
  }
  const auto& s = check.stats;
  out += fmt::format(
      "# {} of {} placement x program candidates measured\n"
      "# top-1 {}, top-5 {}, top-10 {} (a measured-fastest candidate, within {:.1f}% of the measured best, "
      "among the "
      "simulator's k fastest)\n"
      "# Spearman {:.3f}; regret of the simulator's pick {:.3f}x; predicted time error: mean |e| {:.1f}%, "
      "mean {:+.1f}%, max |e| {:.1f}%\n"
      "# measurement noise: median spread (max - min) / median {:.1f}% over the timed iterations; on each "
      "candidate's fastest run instead of its median: top-1 {}, top-5 {}, top-10 {}, Spearman {:.3f}, regret "
      "{:.3f}x\n",
      check.measured.size(), check.total_candidates, s.top1 ? "hit" : "miss", s.top5 ? "hit" : "miss",
      s.top10 ? "hit" : "miss", 100 * check.tolerance, s.spearman, s.regret, 100 * s.error.mean_abs,
      100 * s.error.mean, 100 * s.error.max_abs, 100 * s.median_spread, check.stats_min.top1 ? "hit" : "miss",
      check.stats_min.top5 ? "hit" : "miss", check.stats_min.top10 ? "hit" : "miss", check.stats_min.spearman,
      check.stats_min.regret);
  return out;
}

std::string synth_csv(const SynthCheck& check) {
  std::string out =
      "predicted_rank,placement,shape,program,predicted_ms,measured_median_ms,measured_min_ms,"
      "measured_max_ms,error_percent\n";
  for (std::size_t i = 0; i < check.measured.size(); ++i) {
    const auto& c = check.measured[i];
    out += fmt::format("{},\"{}\",{},\"{}\",{:.6f},{:.6f},{:.6f},{:.6f},{:.3f}\n", i + 1, c.placement,
                       c.shape, c.program, c.predicted * 1e3, c.measured.median * 1e3, c.measured.min * 1e3,
                       c.measured.max * 1e3, 100 * (c.predicted / c.measured.median - 1));
  }
  return out;
}

}  // namespace strata::validate
