// The report of measured nccl-tests tables beside strata (validate/nccl_tests_log.h), written alike by
// `strata validate nccl-tests` and the `nccl-tests-comparison` experiment kind: the per-size table, the CSV
// rows and the curves of the busbw figure (experiments/plots/collective_sweep.py).
#pragma once

#include <string>
#include <string_view>

#include "hw/topology.h"
#include "validate/nccl_tests_log.h"

namespace strata::experiments {

// One log checked on a system: the comparison and a line that says what was compared with what.
struct NcclTestsCheck {
  validate::NcclTestsComparison comparison;
  std::string header;  // "h100x2.txt (all_reduce_perf, NCCL 2.21.5), 16 ranks on 2 host(s), ...; strata ..."
};
// Simulates the log's ranks (validate::gpus_of_ranks) on `topo` (loaded on validate::nccl_tests_nodes nodes)
// at every size with `algorithm`. Throws util::InputError when no row has a time to compare.
NcclTestsCheck check_nccl_tests(const validate::NcclTestsLog& log, std::string_view log_name,
                                sim::CollectiveOp op, const hw::Topology& topo, bool in_place,
                                const std::string& algorithm);

// One row per size (measured and strata's time and busbw, strata's algorithm and protocol, the error), then
// the mean |error| per band; comment lines start with '#'.
std::string nccl_tests_table(const validate::NcclTestsComparison& c);

// The CSV header and one row per size, the first column `label` (which log).
inline constexpr std::string_view kNcclTestsCsvHeader =
    "label,bytes,measured_time_us,measured_busbw_GBps,strata_time_us,strata_busbw_GBps,strata_algorithm,"
    "strata_protocol,busbw_error\n";
std::string nccl_tests_csv_rows(std::string_view label, const validate::NcclTestsComparison& c);

// The figure's long-form CSV (system, algorithm_requested, bytes, busbw_GBps): a "<label> measured" and a
// "<label> strata" curve.
inline constexpr std::string_view kNcclTestsCurvesHeader = "system,algorithm_requested,bytes,busbw_GBps\n";
std::string nccl_tests_curve_rows(std::string_view label, std::string_view algorithm,
                                  const validate::NcclTestsComparison& c);

}  // namespace strata::experiments
