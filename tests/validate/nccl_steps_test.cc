// The microbenchmarks behind node.fabric.nccl_ring, nccl_nvls and node.nics.nccl_ring, nccl_tree
// (validate/nccl_steps.h): their runs, the fit, the channel count read from NCCL's log and the system file
// they write. Measuring needs NCCL on 2+ GPUs (tests/validate/cli_cuda_test.py runs ring-slices where there
// are; net-slices needs two hosts with GPUs, which no test machine has).
#include <gtest/gtest.h>

#include <stdexcept>

#include "hw/system_loader.h"
#include "sim/collective_runner.h"
#include "validate/measure_backend.h"
#include "validate/nccl_steps.h"

namespace strata::validate {

// 64 KiB slices on 8 ranks: NCCL_BUFFSIZE 256 KiB (8 steps of 32 KiB, 2 per slice), a loop of 8 chunks of
// 128 KiB = 1 MiB on the one channel, 2 x 15 handoffs per loop.
TEST(NcclSteps, EachSliceRunsWholeLoopsOnOneChannelWithABufferOfFourSlices) {
  const int loops[] = {2, 4, 8};
  const UnitRun run = ring_slice_run(8, 64 * 1024, loops, 1, 5);
  EXPECT_EQ(run.env, (std::vector<EnvVar>{{"NCCL_ALGO", "Ring"},
                                          {"NCCL_PROTO", "Simple"},
                                          {"NCCL_MIN_NCHANNELS", "1"},
                                          {"NCCL_MAX_NCHANNELS", "1"},
                                          {"NCCL_NVLS_ENABLE", "0"},
                                          {"NCCL_BUFFSIZE", "262144"}}));
  ASSERT_EQ(run.plan.cases.size(), 3u);
  EXPECT_EQ(run.plan.ranks, 8);
  EXPECT_EQ(run.plan.cases[0].steps[0].calls[0].bytes, 2 << 20);
  EXPECT_EQ(run.plan.cases[2].steps[0].calls[0].bytes, 8 << 20);
  EXPECT_EQ(run.plan.cases[1].steps[0].calls[0].group.size(), 8u);
  EXPECT_EQ(run.counts, (std::vector<double>{60, 120, 240}));
  EXPECT_THROW(ring_slice_run(8, 5000, loops, 1, 5), std::invalid_argument);  // not whole 4 KiB
  EXPECT_THROW(ring_slice_run(1, 65536, loops, 1, 5), std::invalid_argument);
  const int one[] = {4};
  EXPECT_THROW(ring_slice_run(8, 65536, one, 1, 5), std::invalid_argument);
  const int down[] = {4, 2};
  EXPECT_THROW(ring_slice_run(8, 65536, down, 1, 5), std::invalid_argument);
}

// LL128 steps of 144,000 B of payload on 8 ranks: NCCL_LL128_BUFFSIZE = 8 steps of 144,000 x 128/120 =
// 153,600 B = 1,228,800 B; a loop of 8 chunks of one step = 1,152,000 B on the one channel, 15 steps per
// loop.
TEST(NcclSteps, Ll128StepsRunWholeLoopsOnOneChannelWithABufferOfEightSteps) {
  const int loops[] = {2, 4, 8};
  const UnitRun run = ring_ll128_run(8, 144000, loops, 1, 5);
  EXPECT_EQ(run.env, (std::vector<EnvVar>{{"NCCL_ALGO", "Ring"},
                                          {"NCCL_PROTO", "LL128"},
                                          {"NCCL_MIN_NCHANNELS", "1"},
                                          {"NCCL_MAX_NCHANNELS", "1"},
                                          {"NCCL_NVLS_ENABLE", "0"},
                                          {"NCCL_LL128_BUFFSIZE", "1228800"}}));
  ASSERT_EQ(run.plan.cases.size(), 3u);
  EXPECT_EQ(run.plan.cases[0].steps[0].calls[0].bytes, 2 * 1152000);
  EXPECT_EQ(run.plan.cases[2].steps[0].calls[0].bytes, 8 * 1152000);
  EXPECT_EQ(run.counts, (std::vector<double>{30, 60, 120}));
  // NCCL's default step (576,000 B: a 4,915,200 B buffer) is the largest; payloads come in 9,600 B.
  EXPECT_EQ(ring_ll128_run(8, 576000, loops, 1, 5).env.back(), (EnvVar{"NCCL_LL128_BUFFSIZE", "4915200"}));
  EXPECT_THROW(ring_ll128_run(8, 585600, loops, 1, 5), std::invalid_argument);
  try {
    ring_ll128_run(8, 65536, loops, 1, 5);
    ADD_FAILURE() << "64 KiB is not whole 9,600 B";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "an LL128 step of 65536 B: expected a multiple of 9600 B up to 576000 B");
  }
  EXPECT_THROW(ring_ll128_run(1, 144000, loops, 1, 5), std::invalid_argument);
  // Between two hosts: 2 ranks, 3 steps per loop.
  EXPECT_EQ(ring_ll128_run(2, 144000, loops, 1, 5).counts, (std::vector<double>{6, 12, 24}));
}

// 32 KiB chunks on 8 GPUs (every GPU a head): a step is 8 x 32 KiB = 256 KiB, so 64 steps are 16 MiB. At
// 64 steps and more NCCL keeps the chunk (it would shrink it below 2 x 8 x chunk, 512 KiB, on one channel).
TEST(NcclSteps, NvlsStepsRunOneChannelAtAFixedChunk) {
  const int steps[] = {64, 128, 256};
  const UnitRun run = nvls_step_run(8, 32 * 1024, steps, 1, 5);
  EXPECT_EQ(run.env,
            (std::vector<EnvVar>{
                {"NCCL_ALGO", "NVLS"}, {"NCCL_NVLS_NCHANNELS", "1"}, {"NCCL_NVLS_CHUNKSIZE", "32768"}}));
  ASSERT_EQ(run.plan.cases.size(), 3u);
  EXPECT_EQ(run.plan.cases[0].steps[0].calls[0].bytes, 16 << 20);
  EXPECT_EQ(run.plan.cases[2].steps[0].calls[0].bytes, 64 << 20);
  EXPECT_EQ(run.counts, (std::vector<double>{64, 128, 256}));
  const int few[] = {8, 16};
  EXPECT_THROW(nvls_step_run(8, 32768, few, 1, 5), std::invalid_argument);
  EXPECT_THROW(nvls_step_run(8, 1 << 20, steps, 1, 5), std::invalid_argument);  // above a 512 KiB step
}

TEST(NcclSteps, FitRecoversTheTimePerHandoffAndTheFixedPart) {
  // t = 25 us + 7.5 us x handoffs, exactly, then with +-1% alternating noise.
  const std::vector<double> h{60, 120, 240, 480};
  std::vector<double> t;
  for (double x : h) t.push_back(25e-6 + 7.5e-6 * x);
  auto f = fit_units(h, t);
  EXPECT_NEAR(f.per_unit, 7.5e-6, 1e-15);
  EXPECT_NEAR(f.intercept, 25e-6, 1e-12);
  EXPECT_NEAR(f.worst_residual, 0, 1e-9);
  for (std::size_t i = 0; i < t.size(); ++i) t[i] *= i % 2 ? 1.01 : 0.99;
  f = fit_units(h, t);
  EXPECT_NEAR(f.per_unit, 7.5e-6, 0.02 * 7.5e-6);
  EXPECT_GT(f.worst_residual, 0.001);
  EXPECT_LT(f.worst_residual, 0.03);
  const std::vector<double> flat{1e-3, 1e-3, 1e-3, 1e-3};
  EXPECT_THROW(fit_units(h, flat), std::invalid_argument);
  const std::vector<double> same{60, 60};
  EXPECT_THROW(fit_units(same, std::vector<double>{1e-3, 2e-3}), std::invalid_argument);
}

// NCCL 2.21's INFO lines (as printed on a DGX A100: 24 channels); the transport lines "Channel 00/0 : 0[0]
// -> 1[1] via P2P/IPC/read" name a connection index, not a count, and must not be read as one.
TEST(NcclSteps, ChannelCountIsReadFromNcclsInfoLog) {
  const std::string v221 =
      "host:1:1 [0] NCCL INFO Channel 00/24 :    0   1   2   3   4   5   6   7\n"
      "host:1:1 [0] NCCL INFO Channel 23/24 :    0   1   2   3   4   5   6   7\n"
      "host:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read\n"
      "host:1:1 [0] NCCL INFO 24 coll channels, 24 collnet channels, 0 nvls channels, 32 p2p channels\n";
  EXPECT_EQ(nccl_channels_from_log(v221), 24);
  EXPECT_EQ(nccl_channels_from_log("x NCCL INFO Channel 15/16 :    0   1   2   3\n"
                                   "x NCCL INFO Channel 03/1 : 0[0] -> 1[1] via P2P/direct pointer/read\n"),
            16);
  EXPECT_EQ(nccl_channels_from_log("x NCCL INFO Channel 07/1 : 1[1] -> 0[0] via P2P/direct pointer\n"),
            std::nullopt);
  EXPECT_EQ(nccl_channels_from_log(""), std::nullopt);
}

// Between two hosts the ring has N = 2 ranks: a loop is 2 chunks of two 256 KiB slices (1 MiB), with 2 x 3
// handoffs per loop, every one over the network.
TEST(NcclSteps, NetSlicesRunTwoRanksWhoseEveryHandoffCrossesTheNetwork) {
  const int loops[] = {2, 4};
  const UnitRun run = ring_slice_run(2, 256 * 1024, loops, 0, 3);
  EXPECT_EQ(run.plan.ranks, 2);
  ASSERT_EQ(run.plan.cases.size(), 2u);
  EXPECT_EQ(run.plan.cases[0].steps[0].calls[0].bytes, 2 << 20);
  EXPECT_EQ(run.plan.cases[1].steps[0].calls[0].bytes, 4 << 20);
  EXPECT_EQ(run.counts, (std::vector<double>{12, 24}));
  EXPECT_THROW(ring_slice_run(1, 256 * 1024, loops, 0, 3), std::invalid_argument);
}

// The tree between two hosts: NCCL_BUFFSIZE 8 x 128 KiB = 1 MiB makes the tree's chunk one 128 KiB step, and
// the one channel carries the whole message, k chunks of it.
TEST(NcclSteps, NetChunksRunATreeOfTwoRanksOnOneChannel) {
  const int chunks[] = {16, 32, 64};
  const UnitRun run = tree_chunk_run(2, 128 * 1024, chunks, 0, 3);
  EXPECT_EQ(run.env, (std::vector<EnvVar>{{"NCCL_ALGO", "Tree"},
                                          {"NCCL_PROTO", "Simple"},
                                          {"NCCL_MIN_NCHANNELS", "1"},
                                          {"NCCL_MAX_NCHANNELS", "1"},
                                          {"NCCL_NVLS_ENABLE", "0"},
                                          {"NCCL_BUFFSIZE", "1048576"}}));
  EXPECT_EQ(run.plan.ranks, 2);
  ASSERT_EQ(run.plan.cases.size(), 3u);
  EXPECT_EQ(run.plan.cases[0].steps[0].calls[0].bytes, 2 << 20);
  EXPECT_EQ(run.plan.cases[2].steps[0].calls[0].bytes, 8 << 20);
  EXPECT_EQ(run.counts, (std::vector<double>{16, 32, 64}));
  const int few[] = {4, 16};
  EXPECT_THROW(tree_chunk_run(2, 128 * 1024, few, 0, 3), std::invalid_argument);
  EXPECT_THROW(tree_chunk_run(2, 8 << 20, chunks, 0, 3), std::invalid_argument);  // above a 4 MiB chunk
  EXPECT_THROW(tree_chunk_run(1, 128 * 1024, chunks, 0, 3), std::invalid_argument);
}

// The LL128 tree between two hosts: NCCL_LL128_BUFFSIZE = 8 chunks of 288,000 x 128/120 = 307,200 B makes
// the chunk carry 288,000 B, and NCCL keeps it from 2.1 x 64 = 134.4 chunks on (nsteps = 1 + log2 2 + 0.1 x
// one rank per node; computeCollChunkInfo), so 135 is the fewest; above 32 KiB and up to 128 KiB, 34.
TEST(NcclSteps, NetChunksLl128RunAnLl128TreeOfTwoRanksWithWholeChunks) {
  const int chunks[] = {135, 270, 540};
  const UnitRun run = tree_ll128_chunk_run(2, 288000, chunks, 0, 3);
  EXPECT_EQ(run.env, (std::vector<EnvVar>{{"NCCL_ALGO", "Tree"},
                                          {"NCCL_PROTO", "LL128"},
                                          {"NCCL_MIN_NCHANNELS", "1"},
                                          {"NCCL_MAX_NCHANNELS", "1"},
                                          {"NCCL_NVLS_ENABLE", "0"},
                                          {"NCCL_LL128_BUFFSIZE", "2457600"}}));
  ASSERT_EQ(run.plan.cases.size(), 3u);
  EXPECT_EQ(run.plan.cases[0].steps[0].calls[0].bytes, 135 * 288000);
  EXPECT_EQ(run.counts, (std::vector<double>{135, 270, 540}));
  const int short_run[] = {134, 270};
  EXPECT_THROW(tree_ll128_chunk_run(2, 288000, short_run, 0, 3), std::invalid_argument);
  const int mid[] = {34, 68};
  EXPECT_EQ(tree_ll128_chunk_run(2, 96000, mid, 0, 3).counts, (std::vector<double>{34, 68}));
  const int fewer[] = {33, 68};
  EXPECT_THROW(tree_ll128_chunk_run(2, 96000, fewer, 0, 3), std::invalid_argument);
  EXPECT_THROW(tree_ll128_chunk_run(2, 100000, chunks, 0, 3), std::invalid_argument);  // not whole 9,600 B
  EXPECT_THROW(tree_ll128_chunk_run(1, 288000, chunks, 0, 3), std::invalid_argument);
}

TEST(NcclSteps, WrittenSystemFileLoadsWithTheTable) {
  const std::string yaml = R"(name: t
gpu: a100-sxm4-80gb
node:
  gpus: 8
  fabric: {wiring: switch, switch: nvswitch2, link: nvlink3, links_per_gpu: 12}
  host: {cpus: 1, pcie: pcie4}
  nics: {count: 8, link: ib-hdr}
)";
  hw::NcclMeasured m;
  m.channels = 24;
  m.times = hw::SizeTimes({{32768, 7.25e-6}, {1048576, 61.5e-6}});
  std::string written = system_with_nccl_table(yaml, hw::NcclTableId::kRing, m);
  hw::Topology t = hw::load_system_from_string(written, "written.yaml");
  EXPECT_EQ(t.nccl_table(hw::NcclTableId::kRing).channels, 24);
  ASSERT_EQ(t.nccl_table(hw::NcclTableId::kRing).times.points().size(), 2u);
  EXPECT_DOUBLE_EQ(t.nccl_table(hw::NcclTableId::kRing).times.points()[0].bytes, 32768);
  EXPECT_NEAR(t.nccl_table(hw::NcclTableId::kRing).times.points()[1].seconds, 61.5e-6, 1e-12);
  EXPECT_EQ(t.num_gpus(), 8);
  // The NVLS table beside it, in the file just written.
  written = system_with_nccl_table(written, hw::NcclTableId::kNvls,
                                   hw::NcclMeasured{0, hw::SizeTimes({{16384, 9.5e-6}})});
  t = hw::load_system_from_string(written, "written.yaml");
  EXPECT_EQ(t.nccl_table(hw::NcclTableId::kRing).channels, 24);
  ASSERT_EQ(t.nccl_table(hw::NcclTableId::kNvls).times.points().size(), 1u);
  EXPECT_NEAR(t.nccl_table(hw::NcclTableId::kNvls).times.points()[0].seconds, 9.5e-6, 1e-12);
  // The network's table goes beside the NICs and leaves the node's alone.
  hw::NcclMeasured net;
  net.channels = 16;
  net.times = hw::SizeTimes({{32768, 12.5e-6}});
  written = system_with_nccl_table(written, hw::NcclTableId::kNetRing, net);
  t = hw::load_system_from_string(written, "written.yaml");
  EXPECT_EQ(t.nccl_table(hw::NcclTableId::kNetRing).channels, 16);
  ASSERT_EQ(t.nccl_table(hw::NcclTableId::kNetRing).times.points().size(), 1u);
  EXPECT_NEAR(t.nccl_table(hw::NcclTableId::kNetRing).times.points()[0].seconds, 12.5e-6, 1e-12);
  EXPECT_EQ(t.nccl_table(hw::NcclTableId::kRing).channels, 24);
  // The LL128 ring's tables, by step payload, beside the Simple ones.
  hw::NcclMeasured ll128;
  ll128.channels = 24;
  ll128.times = hw::SizeTimes({{144000, 8.5e-6}, {576000, 21e-6}});
  written = system_with_nccl_table(written, hw::NcclTableId::kRingLl128, ll128);
  written = system_with_nccl_table(written, hw::NcclTableId::kNetRingLl128, net);
  t = hw::load_system_from_string(written, "written.yaml");
  ASSERT_EQ(t.nccl_table(hw::NcclTableId::kRingLl128).times.points().size(), 2u);
  EXPECT_DOUBLE_EQ(t.nccl_table(hw::NcclTableId::kRingLl128).times.points()[1].bytes, 576000);
  EXPECT_NEAR(t.nccl_table(hw::NcclTableId::kRingLl128).times.points()[1].seconds, 21e-6, 1e-12);
  EXPECT_EQ(t.nccl_table(hw::NcclTableId::kNetRingLl128).channels, 16);
  EXPECT_EQ(t.nccl_table(hw::NcclTableId::kRing).times.points().size(), 2u);
  EXPECT_THROW(system_with_nccl_table("name: t\n", hw::NcclTableId::kRing, m), std::invalid_argument);
  // A network table needs the node's NICs to go beside.
  const std::string no_nics = yaml.substr(0, yaml.find("  nics:"));
  EXPECT_THROW(system_with_nccl_table(no_nics, hw::NcclTableId::kNetTree, net), std::invalid_argument);
}

namespace {

// Two nodes of one H100 each, one NDR NIC: what net-slices and net-chunks measure on, with `measured` as
// table `id` (one of node.nics), written as the commands write it.
hw::Topology one_gpu_pair_with(hw::NcclTableId id, const hw::NcclMeasured& measured) {
  const std::string pair = R"(name: pair
gpu: h100-sxm
nodes: 2
node:
  gpus: 1
  fabric: {wiring: none}
  host: {cpus: 1, pcie: pcie5}
  nics: {count: 1, link: ib-ndr}
network: {wiring: fat-tree}
)";
  return hw::load_system_from_string(system_with_nccl_table(pair, id, measured), "pair.yaml");
}

// The simulated time of each of `run`'s all-reduces over both ranks with `algorithm` and `protocol` (Simple
// unless given), on one channel.
std::vector<double> simulate_on_one_channel(const hw::Topology& topo, const UnitRun& run,
                                            const std::string& algorithm,
                                            sim::Protocol protocol = sim::Protocol::kSimple) {
  std::vector<double> simulated;
  for (const auto& c : run.plan.cases) {
    sim::CollectiveRequest req;
    req.spec.op = sim::CollectiveOp::kAllReduce;
    req.spec.group = {0, 1};
    req.spec.bytes = static_cast<double>(c.steps[0].calls[0].bytes);
    req.spec.protocol = protocol;
    req.spec.channels = 1;
    req.algorithm = algorithm;
    simulated.push_back(sim::run_collective(topo, req).seconds);
  }
  return simulated;
}

// The measuring end of a round trip: `run`'s cases timed as a + count x t, fitted as the commands fit them,
// into a table of one channel with a small point and the fitted time per unit at `unit`.
hw::NcclMeasured fitted_table(const UnitRun& run, double a, double t, double small_unit, double small_time,
                              double unit) {
  std::vector<double> medians;
  for (double c : run.counts) medians.push_back(a + c * t);
  const UnitFit fit = fit_units(run.counts, medians);
  EXPECT_NEAR(fit.per_unit, t, 1e-12);
  EXPECT_NEAR(fit.intercept, a, 1e-12);
  return {1, hw::SizeTimes({{small_unit, small_time}, {unit, fit.per_unit}})};
}
// Each further unit adds exactly t to the simulated time, whatever the simulator's own start-up cost.
void expect_each_unit_adds(const std::vector<double>& simulated, const UnitRun& run, double t) {
  ASSERT_EQ(simulated.size(), run.counts.size());
  for (std::size_t i = 1; i < simulated.size(); ++i)
    EXPECT_NEAR(simulated[i] - simulated[i - 1], (run.counts[i] - run.counts[i - 1]) * t, 1e-9) << i;
}

}  // namespace

// From measurement to model and back: net-slices' runs at 1 MiB slices (NCCL's full-loop slice at its
// default 4 MiB buffer, so the simulator's loop rules give the same 6 L handoffs) timed as a + 6 L t, fitted,
// written beside the NICs of two one-GPU nodes, and simulated on one channel: each further loop adds exactly
// 6 t, whatever the simulator's own start-up cost.
TEST(NcclSteps, NetSlicesTableGivesBackTheMeasuredTimePerLoop) {
  const int loops[] = {2, 4, 8};
  const UnitRun run = ring_slice_run(2, 1 << 20, loops, 0, 3);
  const double a = 25e-6, t = 100e-6;
  const hw::NcclMeasured net = fitted_table(run, a, t, 65536, 30e-6, 1 << 20);
  const auto simulated =
      simulate_on_one_channel(one_gpu_pair_with(hw::NcclTableId::kNetRing, net), run, "ring");
  // 1 MiB at 100 us per handoff is 10.5 GB/s, below the NDR NIC: the handoffs, not the link, set the pace.
  expect_each_unit_adds(simulated, run, t);
  EXPECT_GT(simulated[0], run.counts[0] * t);
}

// The same round trip for the tree: net-chunks' runs at NCCL's 512 KiB tree chunk timed as a + k t, fitted,
// written beside the NICs of two one-GPU nodes, and simulated on one channel. strata runs the channel as a
// mirrored pair of trees, each charged as NCCL's one channel moving the whole message: k chunks and one more
// for the fill of its two stages; each further chunk adds exactly t.
TEST(NcclSteps, NetChunksTableGivesBackTheMeasuredTimePerChunk) {
  const int chunks[] = {16, 32, 64};
  const UnitRun run = tree_chunk_run(2, 512 * 1024, chunks, 0, 3);
  const double a = 40e-6, t = 120e-6;
  const hw::NcclMeasured net = fitted_table(run, a, t, 65536, 30e-6, 512 * 1024);
  const std::string table = nccl_table_yaml(hw::NcclTableId::kNetTree, net);
  EXPECT_NE(table.find("chunk: 524288 B"), std::string::npos) << table;
  const hw::Topology topo = one_gpu_pair_with(hw::NcclTableId::kNetTree, net);
  EXPECT_EQ(topo.nccl_table(hw::NcclTableId::kNetTree).channels, 1);
  const auto simulated = simulate_on_one_channel(topo, run, "tree");
  // 512 KiB per 120 us is 4.4 GB/s a tree, two per NIC direction: under the NDR NIC, so the chunks set the
  // pace.
  expect_each_unit_adds(simulated, run, t);
  EXPECT_GT(simulated[0], (run.counts[0] + 1) * t);
}

// The round trip for LL128 between two hosts: net-ll128's runs at NCCL's 576,000 B step timed as a + 3 L t,
// fitted, written beside the NICs of two one-GPU nodes as node.nics.nccl_ring_ll128, and simulated on one
// channel with LL128: the simulator's loop rule gives the same 3 L steps, so each further loop adds 3 t.
TEST(NcclSteps, NetLl128TableGivesBackTheMeasuredTimePerLoop) {
  const int loops[] = {2, 4, 8};
  const UnitRun run = ring_ll128_run(2, 576000, loops, 0, 3);
  const double a = 20e-6, t = 100e-6;
  const hw::NcclMeasured net = fitted_table(run, a, t, 144000, 40e-6, 576000);
  const std::string table = nccl_table_yaml(hw::NcclTableId::kNetRingLl128, net);
  EXPECT_NE(table.find("step: 576000 B"), std::string::npos) << table;
  const hw::Topology topo = one_gpu_pair_with(hw::NcclTableId::kNetRingLl128, net);
  EXPECT_EQ(topo.nccl_table(hw::NcclTableId::kNetRingLl128).channels, 1);
  const auto simulated = simulate_on_one_channel(topo, run, "ring", sim::Protocol::kLL128);
  // 576,000 B per 100 us is 5.8 GB/s of payload (6.1 on the wire), under the NDR NIC: the steps set the pace.
  expect_each_unit_adds(simulated, run, t);
  EXPECT_GT(simulated[0], run.counts[0] * t);
  // The Simple ring over the same pair keeps the model without a table.
  EXPECT_TRUE(topo.nccl_table(hw::NcclTableId::kNetRing).empty());
}

// The LL128 tree's round trip: net-chunks-ll128's runs at NCCL's 576,000 B chunk timed as a + k t, fitted,
// written as node.nics.nccl_tree_ll128 beside two one-GPU nodes, and simulated on one channel with LL128.
// From 135 chunks on NCCL keeps the chunk (and so does the simulator's rule: ppn 1, 2 nodes); each further
// chunk adds exactly t.
TEST(NcclSteps, NetChunksLl128TableGivesBackTheMeasuredTimePerChunk) {
  const int chunks[] = {135, 270, 540};
  const UnitRun run = tree_ll128_chunk_run(2, 576000, chunks, 0, 3);
  const double a = 30e-6, t = 150e-6;
  const hw::NcclMeasured net = fitted_table(run, a, t, 96000, 40e-6, 576000);
  const hw::Topology topo = one_gpu_pair_with(hw::NcclTableId::kNetTreeLl128, net);
  EXPECT_EQ(topo.nccl_table(hw::NcclTableId::kNetTreeLl128).channels, 1);
  const auto simulated = simulate_on_one_channel(topo, run, "tree", sim::Protocol::kLL128);
  // 576,000 B per 150 us is 3.8 GB/s a tree, two per NIC direction: under the NDR NIC.
  expect_each_unit_adds(simulated, run, t);
  EXPECT_GT(simulated[0], (run.counts[0] + 1) * t);
}

TEST(NcclSteps, RanksGetTheirNcclSettingsThroughMpirun) {
  HostLaunch launch{8, "", 60, {{"NCCL_BUFFSIZE", "262144"}, {"NCCL_ALGO", "Ring"}}};
  const auto argv = host_mpirun_command(launch, "/w", "/p", "/r");
  const auto at = [&](const std::string& s) { return std::find(argv.begin(), argv.end(), s) - argv.begin(); };
  ASSERT_LT(at("NCCL_BUFFSIZE=262144"), static_cast<long>(argv.size()));
  EXPECT_EQ(argv[static_cast<std::size_t>(at("NCCL_BUFFSIZE=262144") - 1)], "-x");
  EXPECT_EQ(argv[static_cast<std::size_t>(at("NCCL_ALGO=Ring") - 1)], "-x");
  EXPECT_LT(at("NCCL_ALGO=Ring"), at("/w"));  // before the worker, so mpirun reads them
}

}  // namespace strata::validate
