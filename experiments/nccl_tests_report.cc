#include "experiments/nccl_tests_report.h"

#include <fmt/format.h>

#include "experiments/sweep_report.h"
#include "util/error.h"

namespace strata::experiments {
namespace {

std::string percent(double e) {
  return fmt::format("{:+.1f}%", 100 * e);
}

}  // namespace

NcclTestsCheck check_nccl_tests(const validate::NcclTestsLog& log, std::string_view log_name,
                                sim::CollectiveOp op, const hw::Topology& topo, bool in_place,
                                const std::string& algorithm) {
  const auto hosts = validate::nccl_tests_hosts(log.ranks);
  const auto group = validate::gpus_of_ranks(topo, log.ranks);
  const char* place = in_place ? "in-place" : "out-of-place";
  NcclTestsCheck check;
  check.header = fmt::format("{} ({}{}), {} ranks{}, {} times; strata --algo {} on {} ({} node(s) x {} GPUs)",
                             log_name, log.program.empty() ? std::string(sim::op_name(op)) : log.program,
                             log.nccl.empty() ? "" : ", NCCL " + log.nccl, group.size(),
                             hosts.empty() ? " (the log names no ranks: every GPU of the system)"
                                           : fmt::format(" on {} host(s)", hosts.size()),
                             place, algorithm, topo.name(), topo.nodes(), topo.gpus_per_node());
  check.comparison = validate::compare_nccl_tests(topo, op, group, log.rows, in_place, algorithm);
  if (check.comparison.points.empty())
    throw util::InputError(
        fmt::format("{}: no row has a size of at least 1 B and an {} time", log_name, place));
  return check;
}

std::string nccl_tests_table(const validate::NcclTestsComparison& c) {
  std::string out = fmt::format("# {:>12}  {:>12} {:>9}  {:>12} {:>9}  {:<10} {:<6} {:>8}\n", "size (B)",
                                "measured us", "busbw", "strata us", "busbw", "algorithm", "proto", "error");
  for (const auto& p : c.points)
    out +=
        fmt::format("  {:>12}  {:>12.2f} {:>9.2f}  {:>12.2f} {:>9.2f}  {:<10} {:<6} {:>8}\n", p.bytes,
                    p.measured_s * 1e6, p.measured_busbw / 1e9, p.simulated_s * 1e6, p.simulated_busbw / 1e9,
                    p.algorithm, sim::protocol_name(p.protocol), percent(p.busbw_error()));
  out +=
      "# busbw in GB/s; error = strata's busbw / measured busbw - 1 (positive: strata predicts more "
      "bandwidth "
      "than was measured)\n";
  for (const auto& b : c.bands)
    out += b.points == 0 ? fmt::format("# {:<15} no sizes\n", b.name)
                         : fmt::format("# {:<15} mean |error| {:.1f}%, mean error {}, worst {} ({} sizes)\n",
                                       b.name, 100 * b.mean_abs, percent(b.mean), percent(b.worst), b.points);
  return out;
}

std::string nccl_tests_csv_rows(std::string_view label, const validate::NcclTestsComparison& c) {
  std::string csv;
  for (const auto& p : c.points)
    csv += fmt::format("{},{},{:.3f},{:.3f},{:.3f},{:.3f},{},{},{:.5f}\n", csv_field(label), p.bytes,
                       p.measured_s * 1e6, p.measured_busbw / 1e9, p.simulated_s * 1e6,
                       p.simulated_busbw / 1e9, p.algorithm, sim::protocol_name(p.protocol), p.busbw_error());
  return csv;
}

std::string nccl_tests_curve_rows(std::string_view label, std::string_view algorithm,
                                  const validate::NcclTestsComparison& c) {
  std::string csv;
  const std::string measured = csv_field(fmt::format("{} measured", label));
  const std::string strata = csv_field(fmt::format("{} strata", label));
  for (const auto& p : c.points) {
    csv += fmt::format("{},nccl-tests,{},{:.3f}\n", measured, p.bytes, p.measured_busbw / 1e9);
    csv += fmt::format("{},{},{},{:.3f}\n", strata, algorithm, p.bytes, p.simulated_busbw / 1e9);
  }
  return csv;
}

}  // namespace strata::experiments
