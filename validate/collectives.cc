#include "validate/collectives.h"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>

#include "validate/measure.h"

namespace strata::validate {

std::vector<CollectiveCheck> check_collectives(const ClusterSpec& spec, const hw::Topology& topo,
                                               const CollectiveCheckRequest& request) {
  return check_collectives(spec.ranks(), topo, request, "openmpi",
                           [&](const MeasurementPlan& plan) { return measure(spec, plan); });
}

std::vector<CollectiveCheck> check_collectives(
    int ranks, const hw::Topology& topo, const CollectiveCheckRequest& request, std::string_view algorithm,
    const std::function<PlanResult(const MeasurementPlan&)>& measure) {
  std::vector<int> group = request.group;
  if (group.empty()) {
    group.resize(static_cast<std::size_t>(ranks));
    std::iota(group.begin(), group.end(), 0);
  }
  const int n = static_cast<int>(group.size());
  MeasurementPlan plan;
  plan.ranks = ranks;
  plan.warmup = request.warmup;
  plan.iterations = request.iterations;
  std::vector<CollectiveCheck> rows;
  for (auto size : request.sizes) {
    const std::int64_t bytes = round_bytes(request.op, n, size);
    PlanCase c;
    c.name = fmt::format("{} {}", sim::op_name(request.op), bytes);
    c.steps.push_back(PlanStep{{PlanCall{request.op, group, bytes}}});
    CollectiveCheck row;
    row.bytes = bytes;
    row.simulated = simulate_case(topo, c, algorithm);
    rows.push_back(row);
    plan.cases.push_back(std::move(c));
  }
  const PlanResult measured = measure(plan);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    rows[i].measured = spread_of(measured.cases.at(i).seconds);
    rows[i].ranks = spread_of(measured.cases.at(i).rank_median_seconds);
    rows[i].wrong = measured.cases.at(i).wrong;
  }
  return rows;
}

std::string collective_table(sim::CollectiveOp op, int group_size, std::span<const CollectiveCheck> rows) {
  const double factor = sim::busbw_factor(op, group_size);
  const bool rooted = op == sim::CollectiveOp::kReduce || op == sim::CollectiveOp::kBroadcast;
  // spread: (max - min) / median of the slowest rank's time over the timed runs; ranks: the same over the
  // ranks' own medians (a rank that leaves early sees a shorter call).
  const bool checked =
      std::any_of(rows.begin(), rows.end(), [](const CollectiveCheck& r) { return r.wrong >= 0; });
  const std::string head =
      "#{:>11} {:>11} {:>6} {:>6} {:>5}   {:>11} {:>7} {:>7} {:>7} {:>6}{}   {:>11} {:>7} {:>7}   {:>7}\n";
  std::string out = fmt::format(fmt::runtime(head), "size", "count", "type", "redop", "root", "time", "algbw",
                                "busbw", "spread", "ranks", checked ? fmt::format(" {:>6}", "#wrong") : "",
                                "time", "algbw", "busbw", "error");
  out += fmt::format(fmt::runtime(head), "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "(%)",
                     "(%)", checked ? fmt::format(" {:>6}", "") : "", "(us)", "(GB/s)", "(GB/s)", "(%)");
  out += fmt::format("#{:>42}   {:^{}}   {:^27}\n", "", "measured (median)", checked ? 49 : 42, "simulated");
  const bool reduces = op == sim::CollectiveOp::kAllReduce || op == sim::CollectiveOp::kReduceScatter ||
                       op == sim::CollectiveOp::kReduce;
  for (const auto& r : rows) {
    const double b = static_cast<double>(r.bytes);
    const double m = r.measured.median, s = r.simulated;
    const std::string wrong = !checked       ? ""
                              : r.wrong >= 0 ? fmt::format(" {:>6}", r.wrong)
                                             : fmt::format(" {:>6}", "N/A");
    out += fmt::format(
        " {:>11} {:>11} {:>6} {:>6} {:>5}   {:>11.1f} {:>7.4f} {:>7.4f} {:>7.1f} {:>6.1f}{}   {:>11.1f} "
        "{:>7.4f} "
        "{:>7.4f}   {:>+7.1f}\n",
        r.bytes, r.bytes / 4, "float", reduces ? "sum" : "none", rooted ? "0" : "-1", m * 1e6, b / m / 1e9,
        b / m / 1e9 * factor, 100 * r.measured.relative_spread(), 100 * r.ranks.relative_spread(), wrong,
        s * 1e6, b / s / 1e9, b / s / 1e9 * factor, 100 * r.error());
  }
  return out;
}

std::string collective_csv(sim::CollectiveOp op, int group_size, std::span<const CollectiveCheck> rows) {
  const double factor = sim::busbw_factor(op, group_size);
  std::string out =
      "op,ranks,size_bytes,measured_median_us,measured_min_us,measured_max_us,measured_busbw_GBps,"
      "simulated_us,simulated_busbw_GBps,error_percent,rank_spread_percent";
  // nccl-tests' #wrong, when the worker checked the results (the NCCL worker does; the MPI worker does not).
  const bool checked =
      std::any_of(rows.begin(), rows.end(), [](const CollectiveCheck& r) { return r.wrong >= 0; });
  out += checked ? ",wrong\n" : "\n";
  for (const auto& r : rows) {
    const double b = static_cast<double>(r.bytes);
    out += fmt::format("{},{},{},{:.3f},{:.3f},{:.3f},{:.6f},{:.3f},{:.6f},{:.3f},{:.3f}{}\n",
                       sim::op_name(op), group_size, r.bytes, r.measured.median * 1e6, r.measured.min * 1e6,
                       r.measured.max * 1e6, b / r.measured.median / 1e9 * factor, r.simulated * 1e6,
                       b / r.simulated / 1e9 * factor, 100 * r.error(), 100 * r.ranks.relative_spread(),
                       !checked ? "" : "," + (r.wrong >= 0 ? std::to_string(r.wrong) : std::string()));
  }
  return out;
}

}  // namespace strata::validate
