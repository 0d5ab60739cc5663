#include "experiments/synth_report.h"

#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "experiments/option_ranges.h"
#include "experiments/system_report.h"
#include "hw/config_error.h"
#include "util/parse.h"

namespace strata::experiments {

namespace rd = search::reduce;

std::vector<int> parse_axis_list(const std::string& text, util::IntRange range, const std::string& option,
                                 char sep) {
  std::vector<int> out;
  for (const auto v : util::parse_int_list(text, range, option, sep)) out.push_back(static_cast<int>(v));
  return out;
}

rd::SynthesisOptions synthesis_options(int max_size, const std::string& canonical) {
  rd::SynthesisOptions so;
  so.max_size = static_cast<int>(check_int(max_size, {1, 8}, "--max-size"));
  auto canon = rd::parse_canonicalization(canonical);
  if (!canon)
    throw ConfigError(
        fmt::format("--canonical: expected one of {}, got '{}'", rd::kCanonicalizationNames, canonical));
  so.canonicalization = *canon;
  return so;
}

SynthReport synthesize(const SynthQuery& q) {
  auto topo = load_cluster(q.hw, q.nodes);
  if (q.axes.empty()) throw ConfigError("--axes: required, e.g. --axes 4,16");
  rd::EvalConfig cfg;
  cfg.axes = parse_axis_list(q.axes, {1, kMaxAxis}, "--axes");
  cfg.synthesis = synthesis_options(q.max_size, q.canonical);
  cfg.reduce_axes =
      parse_axis_list(q.reduce, {0, static_cast<std::int64_t>(cfg.axes.size()) - 1}, "--reduce");
  cfg.bytes_per_device = static_cast<double>(util::parse_size(q.bytes, "--bytes"));
  if (q.algo == "both")
    cfg.algorithms = {"ring", "tree"};
  else if (sim::AlgorithmRegistry::instance().find(q.algo))
    cfg.algorithms = {q.algo};
  else
    throw ConfigError(fmt::format("--algo: expected both or one of: {}; got '{}'",
                                  sim::AlgorithmRegistry::instance().names(), q.algo));
  cfg.split_non_switched = q.split_levels;
  cfg.keep_all_programs = q.all;
  const auto top = check_int(q.top, {0, 1'000'000}, "--top");
  auto ph = rd::placement_hierarchy(topo, q.split_levels);
  rd::check_axes(ph.levels, cfg.axes, cfg.reduce_axes);
  rd::EvalStats stats;
  auto results = rd::evaluate(topo, cfg, &stats);
  // Fastest placement first (ties: matrix order, then algorithm order).
  std::stable_sort(
      results.begin(), results.end(),
      [](const rd::PlacementEval& a, const rd::PlacementEval& b) { return a.best.seconds < b.best.seconds; });
  const std::size_t shown =
      top > 0 ? std::min<std::size_t>(results.size(), static_cast<std::size_t>(top)) : results.size();
  return SynthReport{std::move(topo), std::move(ph), std::move(cfg), std::move(results), shown, stats};
}

JointReport synthesize_joint(const SynthQuery& q, const std::vector<std::string>& joint) {
  auto topo = load_cluster(q.hw, q.nodes);
  if (q.axes.empty()) throw ConfigError("--axes: required, e.g. --axes 4,16");
  auto axes = parse_axis_list(q.axes, {1, kMaxAxis}, "--axes");
  const auto so = synthesis_options(q.max_size, q.canonical);
  std::vector<rd::ReductionSpec> reductions;
  for (const auto& spec : joint) {
    const auto colon = spec.find(':');
    if (colon == std::string::npos)
      throw ConfigError(fmt::format("--joint: expected AXES:BYTES like 0:4GiB or 0+2:1GiB, got '{}'", spec));
    rd::ReductionSpec r;
    r.reduce_axes = parse_axis_list(spec.substr(0, colon), {0, static_cast<std::int64_t>(axes.size()) - 1},
                                    "--joint", '+');
    r.bytes_per_device = static_cast<double>(util::parse_size(spec.substr(colon + 1), "--joint"));
    r.label = spec;
    reductions.push_back(r);
  }
  const auto ph = rd::placement_hierarchy(topo, q.split_levels);
  for (const auto& r : reductions) rd::check_axes(ph.levels, axes, r.reduce_axes, "--joint");
  if (!sim::AlgorithmRegistry::instance().find(q.algo))
    throw ConfigError(fmt::format("--algo: unknown algorithm '{}' (expected one of: {})", q.algo,
                                  sim::AlgorithmRegistry::instance().names()));
  auto results = rd::evaluate_joint(topo, axes, reductions, q.algo, so, q.split_levels);
  return JointReport{std::move(topo), std::move(axes), std::move(reductions), std::move(results)};
}

nlohmann::json joint_json(const JointReport& report) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& j : report.results) {
    nlohmann::json rec{{"matrix", j.matrix},
                       {"algorithm", j.algorithm},
                       {"total_best_seconds", j.total_best_seconds},
                       {"total_allreduce_seconds", j.total_baseline_seconds}};
    for (std::size_t i = 0; i < j.parts.size(); ++i)
      rec["reductions"].push_back({{"reduction", report.reductions[i].label},
                                   {"allreduce_seconds", j.parts[i].baseline_seconds},
                                   {"best_program", j.parts[i].best.text},
                                   {"best_seconds", j.parts[i].best.seconds}});
    out.push_back(rec);
  }
  return out;
}

nlohmann::json synth_json(const SynthReport& report, bool all) {
  nlohmann::json out = nlohmann::json::array();
  for (std::size_t i = 0; i < report.shown; ++i) {
    const auto& e = report.results[i];
    const rd::Placement pl(report.hierarchy.levels, report.config.axes, e.matrix);
    nlohmann::json matrix = nlohmann::json::array();
    for (const auto& row : e.matrix) matrix.push_back(row);
    nlohmann::json rec{{"matrix", matrix},
                       {"algorithm", e.algorithm},
                       {"allreduce_seconds", e.baseline_seconds},
                       {"best_program", e.best.text},
                       {"best_seconds", e.best.seconds},
                       {"speedup", e.speedup()},
                       {"programs_synthesized", e.num_programs},
                       {"synthesis_hierarchy", e.hierarchy},
                       {"reduction_groups", pl.groups(report.config.reduce_axes)}};
    if (all) {
      rec["programs"] = nlohmann::json::array();
      for (const auto& p : e.ranked) rec["programs"].push_back({{"program", p.text}, {"seconds", p.seconds}});
    }
    out.push_back(rec);
  }
  return out;
}

}  // namespace strata::experiments
