// Measured nccl-tests tables beside the simulator (`strata validate nccl-tests`): the text that nccl-tests'
// *_perf programs print (github.com/NVIDIA/nccl-tests, src/util.cu: writeDeviceReport, writeResultHeader,
// writeBenchmarkLine*), read back, and each size simulated on the ranks that ran it.
//
//   # nccl-tests version 2.13.9 nccl-headers=22105 nccl-library=22105
//   # Collective test starting: all_reduce_perf
//   #  Rank  0 Group  0 Pid  41234 on     node1 device  0 [0000:18:00] NVIDIA H100 80GB HBM3
//   #       size         count      type   redop    root     time   algbw   busbw  #wrong     time ...
//       1048576        262144     float     sum      -1    45.10   23.25   43.59       0    44.80 ...
//
// Columns are found by the header's names, so releases without the root column, with "error" for "#wrong",
// with per-iteration columns (-I) or timestamps read alike; without a header the current layout is assumed.
// The JSON report that nccl-tests writes with -J (a text starting with '{') is read too.
// Nothing here is fitted: the measured times are compared with what the simulator predicts.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hw/topology.h"
#include "sim/collective.h"

namespace strata::validate {

struct NcclTestsRank {
  int rank = 0;
  std::string host;
  int device = 0;
};

struct NcclTestsRow {
  std::int64_t bytes = 0;
  double out_of_place_us = NAN, in_place_us = NAN;  // NaN where the log has no such column
  int line = 0;                                     // 1-based, in the log
};

struct NcclTestsLog {
  std::string program;  // "all_reduce_perf" ("# Collective test starting: ..."); empty when not printed
  std::string nccl;     // NCCL's version, "2.21.5" (nccl-library=22105); empty when not printed
  std::vector<NcclTestsRank> ranks;  // "#  Rank r ... on HOST device D", in the order printed
  std::vector<NcclTestsRow> rows;
};

// Reads one nccl-tests run. Lines that are neither nccl-tests' comments nor its rows (mpirun's or NCCL's own
// output) are skipped; a row that starts with a size but lacks a column, a second result header (two runs
// in one file) or a log without rows throws util::InputError naming `file`, the line and what was expected.
// A JSON report: `line` is a row's place in "results", and errors name the field ("results[3]").
NcclTestsLog parse_nccl_tests_log(std::string_view text, std::string_view file);

// The collective an nccl-tests program runs (all_reduce_perf -> allreduce, ...); nullopt for others.
std::optional<sim::CollectiveOp> nccl_tests_op(std::string_view program);

// The collective `log` ran: its program's, or `op` (a name as --op takes it) where it names none. Throws
// util::InputError naming `option` (e.g. "--op"; empty where the caller's location names the field) and
// `log_name` for an unknown name, a name that is not the program's collective, or neither.
sim::CollectiveOp nccl_tests_collective(const NcclTestsLog& log, std::string_view op,
                                        std::string_view log_name, std::string_view option);
// The hosts of the ranks, in the order they first appear.
std::vector<std::string> nccl_tests_hosts(std::span<const NcclTestsRank> ranks);
// The nodes to simulate `log` on: `given`, else as many as its hosts, else nullopt (the system file's).
std::optional<int> nccl_tests_nodes(const NcclTestsLog& log, std::optional<int> given);
// The GPUs of `topo` the ranks ran on, in rank order: hosts are nodes in the order they first appear, a
// rank's device its GPU within the node. Throws util::InputError when a device is not on the node, a GPU
// appears twice, or there are more hosts than `topo` has nodes. No ranks: every GPU of `topo` (a pasted
// table).
std::vector<hw::Rank> gpus_of_ranks(const hw::Topology& topo, std::span<const NcclTestsRank> ranks);

// One size: measured and simulated, with nccl-tests' bus bandwidth of each (bytes/s) and the error of the
// simulated bus bandwidth against the measured one (simulated / measured - 1 = measured time / simulated
// time - 1: positive where strata predicts more bandwidth than was measured, as issue 13 counts it).
struct NcclTestsPoint {
  std::int64_t bytes = 0;
  double measured_s = 0, simulated_s = 0;
  double measured_busbw = 0, simulated_busbw = 0;
  std::string algorithm;
  sim::Protocol protocol = sim::Protocol::kSimple;
  double busbw_error() const { return measured_s / simulated_s - 1; }
};

// Mean |busbw error| over the points whose size lies in [min_bytes, max_bytes).
struct ErrorBand {
  std::string name;  // "< 1 MiB", "1 MiB - 64 MiB", ">= 64 MiB"
  double min_bytes = 0, max_bytes = INFINITY;
  int points = 0;
  double mean_abs = 0, mean = 0, worst = 0;  // worst: the largest |error|, with its sign
};

struct NcclTestsComparison {
  sim::CollectiveOp op = sim::CollectiveOp::kAllReduce;
  std::vector<hw::Rank> group;
  std::vector<NcclTestsPoint> points;  // sizes of at least 1 B with a measured time, in the log's order
  std::vector<ErrorBand> bands;        // the three bands above
};

// Simulates every row's size with `algorithm` ("auto": NCCL's choice, as nccl-tests runs NCCL's defaults)
// on `group`, against the out-of-place (or in-place) time.
NcclTestsComparison compare_nccl_tests(const hw::Topology& topo, sim::CollectiveOp op,
                                       std::vector<hw::Rank> group, std::span<const NcclTestsRow> rows,
                                       bool in_place, const std::string& algorithm);

}  // namespace strata::validate
