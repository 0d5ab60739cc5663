#include "validate/calibrate.h"

#include <fmt/format.h>

#include "hw/units.h"
#include "util/atomic_file.h"
#include "validate/measure.h"

namespace strata::validate {
namespace {

PlanCase exchange_case(const std::string& name, int a, int b, std::int64_t bytes) {
  PlanCase c;
  c.name = name;
  c.steps.push_back(PlanStep{{PlanCall{sim::CollectiveOp::kSendRecv, {a, b}, bytes}}});
  return c;
}

LinkCalibration fit_class(const PlanResult& r, const std::string& prefix,
                          const std::vector<std::int64_t>& sizes, const std::string& what) {
  LinkCalibration lc;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    for (const auto& cr : r.cases)
      if (cr.name == fmt::format("{} {}", prefix, sizes[i])) {
        const Spread s = spread_of(cr.seconds);
        lc.samples.push_back({static_cast<double>(sizes[i]), s.median});
        lc.worst_spread = std::max(lc.worst_spread, s.relative_spread());
      }
  }
  lc.figures = fit_link(lc.samples, kBandwidthFitMinBytes);
  lc.figures.source = fmt::format("measured by strata validate calibrate ({})", what);
  return lc;
}

}  // namespace

std::vector<std::int64_t> calibration_sizes() {
  return {8, 64 << 10, 256 << 10, 1 << 20, 2 << 20, 4 << 20, 8 << 20};
}

Calibration calibrate(const ClusterSpec& spec, int warmup, int iterations) {
  MeasurementPlan plan;
  plan.ranks = spec.ranks();
  plan.warmup = warmup;
  plan.iterations = iterations;
  const auto sizes = calibration_sizes();
  const bool intra = spec.ranks_per_node >= 2, inter = spec.nodes >= 2;
  for (auto bytes : sizes) {
    if (intra) plan.cases.push_back(exchange_case(fmt::format("intra {}", bytes), 0, 1, bytes));
    if (inter)
      plan.cases.push_back(exchange_case(fmt::format("inter {}", bytes), 0, spec.ranks_per_node, bytes));
  }
  Calibration c;
  if (plan.cases.empty()) return c;
  const PlanResult r = measure(spec, plan);
  if (intra) c.intra = fit_class(r, "intra", sizes, "MPI_Sendrecv between ranks 0 and 1 of node 0");
  if (inter)
    c.inter =
        fit_class(r, "inter", sizes,
                  fmt::format("MPI_Sendrecv between rank 0 and rank {} on node 1", spec.ranks_per_node));
  return c;
}

void write_calibrated_system(const ClusterSpec& spec, const Calibration& c) {
  const LinkFigures ci = configured_intra(), cn = configured_inter(spec);
  const LinkFigures intra = c.intra ? c.intra->figures : ci, inter = c.inter ? c.inter->figures : cn;
  std::string note =
      "Emulated cluster written by `strata validate cluster up`, links calibrated by `strata validate "
      "calibrate`\n"
      "(t = latency + S / bandwidth fitted to MPI_Sendrecv exchanges; collective times are never used).\n";
  const auto line = [&](const char* what, const LinkFigures& configured,
                        const std::optional<LinkCalibration>& m) {
    note += fmt::format("{}: configured {} and {}", what, format_rate(configured.bandwidth),
                        units::format_duration(configured.latency));
    if (m)
      note += fmt::format("; measured {} and {} one way (worst spread {:.1f}% over {} sizes)",
                          format_rate(m->figures.bandwidth), units::format_duration(m->figures.latency),
                          100 * m->worst_spread, m->samples.size());
    else
      note += "; not measured (the cluster has no such pair)";
    note += "\n";
  };
  line("shared memory", ci, c.intra);
  line("network port", cn, c.inter);
  util::write_file_atomically(spec.system_file(), cluster_system_yaml(spec, intra, inter, note));
}

}  // namespace strata::validate
