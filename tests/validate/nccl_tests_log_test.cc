// nccl-tests' text output read back (validate/nccl_tests_log.h) and compared with the simulator. The logs
// below follow nccl-tests' printf formats (github.com/NVIDIA/nccl-tests a0b82b2, src/util.cu; the old
// layout of its 2.0 releases has no root column and says "error"); their times are made up for the test.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include <fmt/format.h>

#include "hw/system_loader.h"
#include "sim/collective_runner.h"
#include "util/error.h"
#include "validate/nccl_tests_log.h"

namespace strata::validate {
namespace {

const char* const kRanks =
    "#  Rank  0 Group  0 Pid  41000 on      nodeA device  2 [0000:1a:00] NVIDIA H100 80GB HBM3\n"
    "#  Rank  1 Group  0 Pid  41001 on      nodeA device  3 [0000:1b:00] NVIDIA H100 80GB HBM3\n"
    "#  Rank  2 Group  0 Pid  52000 on      nodeB device  2 [0000:1a:00] NVIDIA H100 80GB HBM3\n"
    "#  Rank  3 Group  0 Pid  52001 on      nodeB device  3 [0000:1b:00] NVIDIA H100 80GB HBM3\n";

const char* const kHeader =
    "#                                                              out-of-place                       "
    "in-place\n"
    "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw  "
    " "
    "busbw  #wrong\n"
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  "
    "(GB/s)\n";

// A row in nccl-tests' current layout with the given times (algbw and busbw are not read).
std::string row(std::int64_t bytes, double out_us, double in_us) {
  return fmt::format(
      "{:>12}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7.2f}  {:>6.2f}  {:>6.2f}  {:>6}  {:>7.2f}  {:>6.2f}  "
      "{:>6.2f}  {:>6}\n",
      bytes, bytes / 4, "float", "sum", -1, out_us, 1.0, 1.0, 0, in_us, 1.0, 1.0, 0);
}

std::string current_log(const std::string& rows) {
  return std::string(
             "# nccl-tests version 2.13.9 nccl-headers=22105 nccl-library=22105\n"
             "# Collective test starting: all_reduce_perf\n"
             "# nThread 1 nGpus 1 minBytes 524288 maxBytes 1073741824 step: 8(factor) warmup iters: 5 "
             "iters: 20 agg iters: 1 validation: 1 graph: 0\n#\n# Using devices\n") +
         kRanks + "10.0.0.1:41000:41000 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n#\n" + kHeader +
         rows + "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 1.0\n#\n";
}

// The message parse_nccl_tests_log throws for `text` read as `file`, or "no error".
std::string parse_error(const std::string& text, const char* file) {
  try {
    parse_nccl_tests_log(text, file);
  } catch (const util::InputError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST(NcclTestsLog, ReadsRanksProgramVersionAndBothTimesOfEveryRow) {
  const auto log =
      parse_nccl_tests_log(current_log(row(524288, 30.5, 31.25) + row(4194304, 60, 61.5)), "a.txt");
  EXPECT_EQ(log.program, "all_reduce_perf");
  EXPECT_EQ(log.nccl, "2.21.5");
  ASSERT_EQ(log.ranks.size(), 4u);
  EXPECT_EQ(log.ranks[2].host, "nodeB");
  EXPECT_EQ(log.ranks[3].device, 3);
  EXPECT_EQ(log.ranks[1].rank, 1);
  ASSERT_EQ(log.rows.size(), 2u);
  EXPECT_EQ(log.rows[1].bytes, 4194304);
  EXPECT_DOUBLE_EQ(log.rows[0].out_of_place_us, 30.5);
  EXPECT_DOUBLE_EQ(log.rows[1].in_place_us, 61.5);
  EXPECT_EQ(log.rows[0].line, 15);  // after 5 header lines, 4 ranks, NCCL's line, "#" and 3 header lines
  EXPECT_EQ(nccl_tests_op(log.program), sim::CollectiveOp::kAllReduce);
  EXPECT_EQ(nccl_tests_op("/opt/nccl-tests/build/reduce_scatter_perf"), sim::CollectiveOp::kReduceScatter);
  EXPECT_EQ(nccl_tests_op("sendrecv_perf"), sim::CollectiveOp::kSendRecv);
  EXPECT_EQ(nccl_tests_op("hypercube_perf"), std::nullopt);
}

// nccl-tests 2.0 had neither the root column nor "#wrong" ("error"); -I adds four per-iteration columns
// after each result. The header says where the times are.
TEST(NcclTestsLog, FindsTheTimesByTheHeadersColumnNames) {
  const std::string old_layout =
      "#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  "
      "error\n"
      "     1048576        262144   float     sum    40.10   26.15   45.76  5e-07    41.20   25.45   44.54  "
      "5e-07\n";
  auto log = parse_nccl_tests_log(old_layout, "old.txt");
  ASSERT_EQ(log.rows.size(), 1u);
  EXPECT_DOUBLE_EQ(log.rows[0].out_of_place_us, 40.10);
  EXPECT_DOUBLE_EQ(log.rows[0].in_place_us, 41.20);
  EXPECT_TRUE(log.ranks.empty());
  EXPECT_TRUE(log.program.empty());
  const std::string per_iteration =
      "# size count type redop root time algbw busbw #wrong i_min i_max i_p99 i_cv% time algbw busbw #wrong "
      "i_min i_max i_p99 i_cv%\n"
      "  1048576 262144 float sum -1 40.10 26.15 45.76 0 39.0 42.0 41.9 1.5 41.20 25.45 44.54 0 40.0 43.0 "
      "42.9 1.2\n";
  log = parse_nccl_tests_log(per_iteration, "iter.txt");
  EXPECT_DOUBLE_EQ(log.rows[0].out_of_place_us, 40.10);
  EXPECT_DOUBLE_EQ(log.rows[0].in_place_us, 41.20);
  // Without a header the current layout is assumed.
  log = parse_nccl_tests_log(row(2048, 12.5, 13.0), "bare.txt");
  EXPECT_DOUBLE_EQ(log.rows[0].out_of_place_us, 12.5);
  EXPECT_DOUBLE_EQ(log.rows[0].in_place_us, 13.0);
}

// nccl-tests' JSON report (-J; src/util.cu: the top-level object, config.devices from jsonRankInfo, results
// from writeBenchmarkLine*), with made-up times; "out_of_place" is null where only in-place ran (trace
// replay).
TEST(NcclTestsLog, ReadsNcclTestsJsonReport) {
  const std::string json = R"({"version": 1, "start_time": "2026-11-29 07:00:00",
    "args": ["/opt/nccl-tests/build/all_gather_perf", "-b", "1M", "-e", "4M"], "env": [], "nccl_version": 22304,
    "config": {"nthreads": 1, "ngpus": 1, "devices": [
      {"rank": 0, "group": 0, "pid": 10, "hostname": "hostA", "device": 0, "device_hex": "0000:18:00", "device_info": "H100"},
      {"rank": 1, "group": 0, "pid": 11, "hostname": "hostB", "device": 5, "device_hex": "0000:9a:00", "device_info": "H100"}]},
    "results": [
      {"size": 1048576, "count": 131072, "type": "float", "redop": "none", "root": "    -1",
       "out_of_place": {"time": 55.25, "alg_bw": 18.98, "bus_bw": 9.49, "nwrong": 0},
       "in_place": {"time": 54.5, "alg_bw": 19.24, "bus_bw": 9.62, "nwrong": 0}, "actual_iterations": 20},
      {"size": 4194304, "count": 524288, "type": "float", "redop": "none", "root": "    -1",
       "out_of_place": null, "in_place": {"cpu_time": 120.0, "alg_bw": 34.95, "bus_bw": 17.48, "nwrong": null}}]})";
  const auto log = parse_nccl_tests_log("\n  " + json, "r.json");
  EXPECT_EQ(log.program, "all_gather_perf");
  EXPECT_EQ(nccl_tests_op(log.program), sim::CollectiveOp::kAllGather);
  EXPECT_EQ(log.nccl, "2.23.4");
  ASSERT_EQ(log.ranks.size(), 2u);
  EXPECT_EQ(log.ranks[1].host, "hostB");
  EXPECT_EQ(log.ranks[1].device, 5);
  ASSERT_EQ(log.rows.size(), 2u);
  EXPECT_EQ(log.rows[1].bytes, 4194304);
  EXPECT_EQ(log.rows[1].line, 2);
  EXPECT_DOUBLE_EQ(log.rows[0].out_of_place_us, 55.25);
  EXPECT_DOUBLE_EQ(log.rows[0].in_place_us, 54.5);
  EXPECT_TRUE(std::isnan(log.rows[1].out_of_place_us));
  EXPECT_DOUBLE_EQ(log.rows[1].in_place_us, 120.0);
  const auto error_of = [](const std::string& text) { return parse_error(text, "bad.json"); };
  std::string e = error_of("{\"results\": [");
  EXPECT_NE(e.find("bad.json: not nccl-tests' JSON report"), std::string::npos) << e;
  e = error_of(R"({"results": [{"size": 1024, "in_place": {"time": 1}}, {"count": 5}]})");
  EXPECT_NE(e.find("bad.json: results[1]: expected an object with the size in bytes"), std::string::npos)
      << e;
  e = error_of(R"({"results": [{"size": 1024, "out_of_place": null, "in_place": null}]})");
  EXPECT_NE(e.find("bad.json: results[0]: expected an out_of_place or in_place time"), std::string::npos)
      << e;
  e = error_of(R"({"config": {"devices": [{"rank": 0}]}, "results": []})");
  EXPECT_NE(e.find("bad.json: config.devices[0]: expected an object with an integer rank"), std::string::npos)
      << e;
  e = error_of(R"({"results": []})");
  EXPECT_NE(e.find("bad.json: results: expected at least one result"), std::string::npos) << e;
}

TEST(NcclTestsLog, BadLogsNameTheFileAndLine) {
  const auto error_of = [](const std::string& text) { return parse_error(text, "bad.txt"); };
  std::string e =
      error_of(std::string(kHeader) + "     1048576        262144     float     sum      -1    40.10\n");
  EXPECT_NE(e.find("bad.txt:4: expected an nccl-tests row of at least 10 columns"), std::string::npos) << e;
  e = error_of(std::string(kHeader) + row(1024, 1, 1) + kHeader + row(2048, 2, 2));
  EXPECT_NE(e.find("bad.txt:6: a second nccl-tests result header (the first at line 2)"), std::string::npos)
      << e;
  e = error_of(std::string(kHeader));
  EXPECT_NE(e.find("bad.txt: no nccl-tests rows"), std::string::npos) << e;
  e = error_of(std::string(kHeader) + "1024 256 float sum -1 fast 1 1 0 slow 1 1 0\n");
  EXPECT_NE(e.find("bad.txt:4: expected a time in microseconds in column 6, got 'fast'"), std::string::npos)
      << e;
}

TEST(NcclTestsLog, HostsAreNodesInTheOrderTheyAppearAndDevicesTheirGpus) {
  const auto topo = hw::load_system(std::string(STRATA_SOURCE_DIR) + "/configs/hw/dgx-h100.yaml", {2});
  const auto log = parse_nccl_tests_log(current_log(row(1024, 1, 1)), "a.txt");
  EXPECT_EQ(gpus_of_ranks(topo, log.ranks), (std::vector<hw::Rank>{2, 3, 10, 11}));
  std::vector<NcclTestsRank> ranks = log.ranks;
  ranks[1].device = 8;
  EXPECT_THROW(gpus_of_ranks(topo, ranks), util::InputError);  // the node has 8 GPUs
  ranks = log.ranks;
  ranks[1].device = 2;
  EXPECT_THROW(gpus_of_ranks(topo, ranks), util::InputError);  // device 2 of nodeA twice
  ranks = log.ranks;
  ranks[3].host = "nodeC";
  EXPECT_THROW(gpus_of_ranks(topo, ranks), util::InputError);  // 3 hosts on 2 nodes
}

// Measured times set to the simulated ones x 1.25 (512 KiB), x 0.8 (4 MiB), x 1.1 (128 MiB) and x 1.3 (1
// GiB), simulated here on GPUs 2, 3, 10, 11 (hand-picked, not read from the log): busbw errors +25%, -20%,
// +10%, +30%. Mean |error| per band: below 1 MiB 25%; 1 - 64 MiB 20% (mean -20%); from 64 MiB (10 + 30) / 2 =
// 20%, worst +30%. Measured busbw is nccl-tests' 2(n - 1)/n x size / time, n = 4.
TEST(NcclTestsLog, ComparisonCountsTheBusbwErrorPerSizeBand) {
  const auto topo = hw::load_system(std::string(STRATA_SOURCE_DIR) + "/configs/hw/dgx-h100.yaml", {2});
  const std::vector<std::pair<std::int64_t, double>> sizes{
      {512 * 1024, 1.25}, {4 << 20, 0.8}, {128 << 20, 1.1}, {1 << 30, 1.3}};
  std::string rows;
  std::vector<double> simulated;
  for (const auto& [bytes, factor] : sizes) {
    sim::CollectiveRequest req;
    req.spec.group = {2, 3, 10, 11};
    req.spec.bytes = static_cast<double>(bytes);
    req.algorithm = "ring";
    simulated.push_back(sim::run_collective(topo, req).seconds);
    rows += row(bytes, simulated.back() * factor * 1e6, 1);
  }
  const auto log = parse_nccl_tests_log(current_log(rows), "a.txt");
  const auto c = compare_nccl_tests(topo, sim::CollectiveOp::kAllReduce, gpus_of_ranks(topo, log.ranks),
                                    log.rows, false, "ring");
  ASSERT_EQ(c.points.size(), 4u);
  // The log prints times to 0.01 us: errors agree to that rounding.
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    EXPECT_NEAR(c.points[i].busbw_error(), sizes[i].second - 1, 0.01e-6 / simulated[i]);
    EXPECT_NEAR(c.points[i].simulated_s, simulated[i], 1e-12);
  }
  EXPECT_NEAR(c.points[3].measured_busbw, 1.5 * (1 << 30) / c.points[3].measured_s, 1e-3);
  ASSERT_EQ(c.bands.size(), 3u);
  EXPECT_EQ(c.bands[0].points, 1);
  EXPECT_NEAR(c.bands[0].mean_abs, 0.25, 1e-4);
  EXPECT_NEAR(c.bands[1].mean, -0.20, 1e-4);
  EXPECT_EQ(c.bands[2].points, 2);
  EXPECT_NEAR(c.bands[2].mean_abs, 0.20, 1e-4);
  EXPECT_NEAR(c.bands[2].worst, 0.30, 1e-4);
  // In-place times (all 1 us here) are compared instead with in_place.
  const auto in =
      compare_nccl_tests(topo, sim::CollectiveOp::kAllReduce, {2, 3, 10, 11}, log.rows, true, "ring");
  EXPECT_NEAR(in.points[0].measured_s, 1e-6, 1e-15);
}

}  // namespace strata::validate
