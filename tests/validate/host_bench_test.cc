// The host microbenchmarks (validate/host_bench.h): measured figures are positive and physically plausible
// (bounds derived here from /proc/cpuinfo, not from the code under test), and the system YAML written from
// them loads with hw::load_system giving back the measured numbers. The YAML test runs everywhere; the
// measuring ones skip only where the build has no oneDNN or OpenMP.
#include "validate/host_bench.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "hw/system_loader.h"

namespace strata::validate {
namespace {

std::string cpuinfo() {
  std::ifstream in("/proc/cpuinfo");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The largest "cpu MHz" in /proc/cpuinfo, or 0.
double cpuinfo_max_mhz() {
  std::istringstream in(cpuinfo());
  std::string line;
  double mhz = 0;
  while (std::getline(in, line))
    if (line.rfind("cpu MHz", 0) == 0) mhz = std::max(mhz, std::stod(line.substr(line.find(':') + 1)));
  return mhz;
}

// Loose physical bound on f32 FLOP/s: per thread two 512-bit FMA pipes (16 f32 lanes, 2 FLOP per FMA), at
// twice the clock /proc/cpuinfo reports (boost above the base clock), 6 GHz when it reports none.
double f32_bound(int threads) {
  const double mhz = cpuinfo_max_mhz();
  const double hz = mhz > 0 ? 2 * mhz * 1e6 : 6e9;
  return threads * 2.0 * 16 * 2 * hz;
}

std::filesystem::path write_temp(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / name;
  std::ofstream(path) << text;
  return path;
}

TEST(HostBench, MeasuredFiguresArePlausibleAndTheirYamlLoads) {
  if (!host_bench_available()) GTEST_SKIP() << host_bench_missing();
  // One thread: on a shared 2-core machine a second OpenMP thread waits for a descheduled core.
  const auto b = run_host_bench({.warmup = 1, .repeat = 3, .quick = true, .threads = 1});
  EXPECT_EQ(b.threads, 1);
  ASSERT_TRUE(b.f32.supported) << b.f32.why_not;
  EXPECT_EQ(b.f32.implementation.find("ref"), std::string::npos) << b.f32.implementation;
  ASSERT_EQ(b.f32.samples.size(), 2u);
  for (const auto& s : b.f32.samples) {
    EXPECT_NEAR(s.flops, 2.0 * std::pow(static_cast<double>(s.size), 3) / s.median_seconds, 1e-6 * s.flops);
    EXPECT_LE(s.flops, b.f32.flops);
  }
  // At least 1 GFLOP/s (a 2005 core does that without SIMD), below the physical bound.
  EXPECT_GT(b.f32.flops, 1e9);
  EXPECT_LT(b.f32.flops, f32_bound(b.threads)) << "cpu MHz " << cpuinfo_max_mhz();
  if (b.bf16.supported) {
    EXPECT_EQ(b.bf16.implementation.find("ref"), std::string::npos) << b.bf16.implementation;
    EXPECT_GT(b.bf16.flops, 1e9);
    EXPECT_LT(b.bf16.flops, 2 * f32_bound(b.threads));  // bf16 dot products: twice the lanes
  } else {
    EXPECT_FALSE(b.bf16.why_not.empty());
  }
  for (double bw : {b.stream.copy_bytes_per_second, b.stream.triad_bytes_per_second}) {
    EXPECT_GT(bw, 1e9);
    EXPECT_LT(bw, 1e12);
  }
  // STREAM's rule: each array at least 4x the last-level cache (which is at least the L3 glibc reports),
  // unless that is more than 1/8 of memory.
  const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  if (l3 > 0) {
    EXPECT_GE(b.cpu.llc_bytes, l3);
  }
  EXPECT_GE(8 * b.stream.elements, std::min(4 * b.cpu.llc_bytes, b.cpu.memory_bytes / 8) - 8);
  EXPECT_GT(b.overhead_seconds, 0);
  EXPECT_LT(b.overhead_seconds, 1e-3);
  // The cache curve: doubling working sets from 96 KiB to at least twice the last-level cache (a sample is
  // left out only where the call was not slower than the 16-element one); the levels, when found, are
  // within the curve, smallest first, each faster than the next and the outermost faster than memory.
  ASSERT_GE(b.cache.samples.size(), 2u);
  EXPECT_GE(b.cache.samples.front().working_set, 96 << 10);
  for (std::size_t i = 1; i < b.cache.samples.size(); ++i)
    EXPECT_GT(b.cache.samples[i].working_set, b.cache.samples[i - 1].working_set);
  EXPECT_GE(b.cache.samples.back().working_set, std::max<std::int64_t>(2 * b.cpu.llc_bytes, 8 << 20) / 2);
  EXPECT_GT(b.cache.call_seconds, 0);
  EXPECT_LT(b.cache.call_seconds, 1e-3);
  for (std::size_t i = 0; i < b.cache.levels.size(); ++i) {
    const auto& level = b.cache.levels[i];
    // Within the curve and the last-level cache sysfs (else glibc) lists.
    EXPECT_GE(level.capacity, static_cast<double>(b.cache.samples.front().working_set));
    EXPECT_LE(level.capacity, static_cast<double>(b.cache.bounds.back()));
    const double behind =
        i + 1 < b.cache.levels.size() ? b.cache.levels[i + 1].bandwidth : b.stream.triad_bytes_per_second;
    EXPECT_GT(level.bandwidth, behind);
    if (i + 1 < b.cache.levels.size()) {
      EXPECT_LT(level.capacity, b.cache.levels[i + 1].capacity);
    }
  }
  if (cpuinfo().find("model name") != std::string::npos) {
    EXPECT_FALSE(b.cpu.model.empty());
    EXPECT_NE(cpuinfo().find("model name\t: " + b.cpu.model), std::string::npos);
  }

  // The vector width: /proc/cpuinfo's flags say which registers the CPU has; oneDNN uses the widest unless
  // ONEDNN_MAX_CPU_ISA (DNNL_MAX_CPU_ISA) limits it.
  const auto flags = cpuinfo();
  if (!std::getenv("ONEDNN_MAX_CPU_ISA") && !std::getenv("DNNL_MAX_CPU_ISA")) {
    if (flags.find(" avx512f") != std::string::npos) {
      EXPECT_EQ(b.vector.f32_lanes(), 16) << b.vector.isa;
    } else if (flags.find(" avx2") != std::string::npos) {
      EXPECT_EQ(b.vector.f32_lanes(), 8) << b.vector.isa;
    }
  }

  const auto path = write_temp("strata_host_bench_measured.yaml", host_system_yaml(b));
  const auto topo = hw::load_system(path.string());
  std::filesystem::remove(path);
  EXPECT_EQ(topo.gpu().name, "host-cpu");
  EXPECT_NEAR(topo.gpu().peak_fp32, b.f32.flops, 1e-5 * b.f32.flops);
  EXPECT_NEAR(topo.gpu().hbm_bandwidth, b.stream.triad_bytes_per_second,
              1e-5 * b.stream.triad_bytes_per_second);
  EXPECT_NEAR(topo.gpu().launch_overhead, b.overhead_seconds, 1e-5 * b.overhead_seconds);
  if (b.vector.f32_lanes() > 0) {
    EXPECT_EQ(topo.gpu().gemm_tile, (hw::GemmTile{b.vector.f32_lanes(), 1}));
  }
}

// Register widths from the instruction set manuals: 512, 256 and 128 bit hold 16, 8 and 4 f32.
TEST(HostBench, F32LanesOfOneDnnIsaNames) {
  EXPECT_EQ(f32_lanes_of_isa("avx512_core"), 16);
  EXPECT_EQ(f32_lanes_of_isa("avx512_core_bf16"), 16);
  EXPECT_EQ(f32_lanes_of_isa("avx512_core_amx"), 16);
  EXPECT_EQ(f32_lanes_of_isa("avx2"), 8);
  EXPECT_EQ(f32_lanes_of_isa("avx2_vnni"), 8);
  EXPECT_EQ(f32_lanes_of_isa("avx"), 8);
  EXPECT_EQ(f32_lanes_of_isa("sse41"), 4);
  EXPECT_EQ(f32_lanes_of_isa(""), 0);
  EXPECT_EQ(f32_lanes_of_isa("sve_512"), 0);  // not an x86 name this build knows
}

TEST(HostBench, YamlRoundTripsThroughLoadSystem) {
  HostBench b;
  b.cpu.model = "Example CPU @ 2.00GHz";
  b.cpu.max_mhz = 2000;
  b.cpu.llc_bytes = 32 << 20;
  b.cpu.memory_bytes = std::int64_t{24} << 30;
  b.threads = 3;
  b.onednn = "oneDNN 9.9.9 (OpenMP threading)";
  b.vector = {"avx512_core"};
  b.f32 = {true, "brg:avx512_core", "", {{1024, 0.02, 107.3741824e9}}, 123.456789e9};
  b.bf16 = {true, "brg:avx512_core_bf16", "", {}, 1.23456789e12};
  b.stream = {16 << 20, 0.01, 0.015, 26.8435456e9, 26.8435456e9};
  b.overhead_seconds = 0.87654321e-6;
  b.cache.samples = {{196608, 100e9}, {393216, 88e9}};
  b.cache.call_seconds = 0.5e-6;
  b.cache.bounds = {1 << 20, 32 << 20};
  b.cache.levels = {{768 << 10, 100.1234567e9}, {3 << 20, 90.1234567e9}};
  const auto text = host_system_yaml(b);
  // The header names the CPU, the thread count and what was measured.
  EXPECT_NE(text.find("# CPU: Example CPU @ 2.00GHz"), std::string::npos) << text;
  EXPECT_NE(text.find("3 OpenMP threads"), std::string::npos) << text;
  EXPECT_NE(text.find("STREAM triad"), std::string::npos) << text;
  auto path = write_temp("strata_host_bench_roundtrip.yaml", text);
  auto topo = hw::load_system(path.string());
  const auto& g = topo.gpu();
  // Six significant digits: 123.457 GFLOPS, 1.23457 TFLOPS, 26.8435 GB/s, 876.543 ns.
  EXPECT_DOUBLE_EQ(g.peak_fp32, 123.457e9);
  EXPECT_DOUBLE_EQ(g.peak_bf16, 1.23457e12);
  EXPECT_DOUBLE_EQ(g.hbm_bandwidth, 26.8435e9);
  EXPECT_DOUBLE_EQ(g.launch_overhead, 876.543e-9);
  EXPECT_DOUBLE_EQ(g.hbm_capacity, 24.0 * (1 << 30));
  // Written in KiB, with 6 significant digits.
  ASSERT_EQ(g.caches.size(), 2u);
  EXPECT_EQ(g.caches[0], (hw::CacheLevel{768.0 * 1024, 100.123e9}));
  EXPECT_EQ(g.caches[1], (hw::CacheLevel{3.0 * (1 << 20), 90.1235e9}));
  // fp64 stays the catalogue's.
  EXPECT_DOUBLE_EQ(g.peak_fp64, hw::find_gpu("host-cpu")->peak_fp64);
  // One AVX-512 register of f32 accumulators, no reduction padding; said in the header.
  EXPECT_EQ(g.gemm_tile, (hw::GemmTile{16, 1}));
  EXPECT_NE(text.find("effective ISA avx512_core: 16 f32 lanes"), std::string::npos) << text;

  // bf16 not supported: left out, so the catalogue's (none: the fp32 rate) applies.
  b.cache = {};  // no cache level measured: none written, none modelled
  b.bf16 = {
      false, "ref:any", "oneDNN's only matmul for it on this CPU is its reference implementation", {}, 0};
  std::ofstream(path) << host_system_yaml(b);
  topo = hw::load_system(path.string());
  std::filesystem::remove(path);
  EXPECT_DOUBLE_EQ(topo.gpu().peak_bf16, hw::find_gpu("host-cpu")->peak_bf16);
  EXPECT_DOUBLE_EQ(topo.gpu().peak_flops(hw::DType::kBf16), 123.457e9);
  EXPECT_TRUE(topo.gpu().caches.empty());

  // An ISA this build does not know: no gemm_tile written, the catalogue's host-cpu tile applies.
  b.vector = {""};
  std::ofstream(path) << host_system_yaml(b);
  topo = hw::load_system(path.string());
  std::filesystem::remove(path);
  EXPECT_EQ(topo.gpu().gemm_tile, hw::find_gpu("host-cpu")->gemm_tile);
}

// cache_levels on curves made by hand. The curve of this machine's Zen 4 vCPUs with oneDNN's add (measured
// 2026-11-27, rounded): L2 (1 MiB per core) ~100 GB/s, L3 ~88 GB/s falling off past 6 MiB, memory 26 GB/s.
TEST(HostBench, CacheLevelsFromACurve) {
  const std::vector<CacheSample> zen4{{96 << 10, 97e9},  {192 << 10, 100e9}, {384 << 10, 99e9},
                                      {768 << 10, 99e9}, {1536 << 10, 88e9}, {3 << 20, 88e9},
                                      {6 << 20, 86e9},   {12 << 20, 72e9},   {24 << 20, 57e9},
                                      {48 << 20, 30e9},  {96 << 20, 27e9}};
  const std::vector<std::int64_t> bounds{1 << 20, 32 << 20};
  auto levels = cache_levels(zen4, bounds, 26e9);
  // L2: best 100 GB/s, threshold sqrt(100 * 88) = 93.81 GB/s, crossed between 768 KiB (99) and 1.5 MiB (88)
  // at 768 KiB * 2^((99 - 93.81) / 11) = 1065 KiB, capped at the 1 MiB bound. L3: best 88 GB/s (1.5 MiB..
  // 32 MiB), threshold sqrt(88 * 26) = 47.83 GB/s, crossed between 24 MiB (57) and 48 MiB (30) at
  // 24 MiB * 2^((57 - 47.83) / 27) = 30.368 MiB.
  ASSERT_EQ(levels.size(), 2u);
  EXPECT_EQ(levels[0], (hw::CacheLevel{1 << 20, 100e9}));
  EXPECT_NEAR(levels[1].capacity, 30.36799 * (1 << 20), 10);
  EXPECT_EQ(levels[1].bandwidth, 88e9);
  // The same curve with its 768 KiB sample just under the L2 threshold: the crossing moves a little (to
  // 384 KiB * 2^((99 - 93.81) / (99 - 93)) = 702 KiB), not to the previous sample (384 KiB).
  auto edge = zen4;
  edge[3].bytes_per_second = 93e9;
  levels = cache_levels(edge, bounds, 26e9);
  ASSERT_EQ(levels.size(), 2u);
  EXPECT_NEAR(levels[0].capacity, 384.0 * 1024 * std::exp2((99 - std::sqrt(100.0 * 88)) / 6), 1);

  // L2 no faster than the L3 behind it by 5%: one level, whose capacity is measured against memory.
  auto flat_l2 = zen4;
  for (auto& x : flat_l2)
    if (x.working_set <= (1 << 20)) x.bytes_per_second = 90e9;
  levels = cache_levels(flat_l2, bounds, 26e9);
  ASSERT_EQ(levels.size(), 1u);
  EXPECT_NEAR(levels[0].capacity, 30.36799 * (1 << 20), 10);
  EXPECT_EQ(levels[0].bandwidth, 88e9);

  // The last-level cache less than 1.5x memory: only the L2 is kept, measured against memory (threshold
  // sqrt(100 * 30) = 54.8 GB/s, crossed at 768 KiB * 2^((99 - 54.8) / 64) = 1240 KiB: the 1 MiB bound).
  auto slow_l3 = zen4;
  for (auto& x : slow_l3)
    if (x.working_set > (1 << 20)) x.bytes_per_second = std::min(x.bytes_per_second, 35e9);
  levels = cache_levels(slow_l3, bounds, 30e9);
  ASSERT_EQ(levels.size(), 1u);
  EXPECT_EQ(levels[0], (hw::CacheLevel{1 << 20, 100e9}));

  // A flat curve (nothing faster than memory) and no samples: none.
  std::vector<CacheSample> flat = zen4;
  for (auto& x : flat) x.bytes_per_second = 27e9;
  EXPECT_TRUE(cache_levels(flat, bounds, 26e9).empty());
  EXPECT_TRUE(cache_levels({}, bounds, 26e9).empty());
  // One bound (L2 size unknown): one level over the whole curve, its best rate; threshold sqrt(100 * 26) =
  // 50.99 GB/s, crossed at 24 MiB * 2^((57 - 50.99) / 27) = 28.004 MiB.
  levels = cache_levels(zen4, std::vector<std::int64_t>{32 << 20}, 26e9);
  ASSERT_EQ(levels.size(), 1u);
  EXPECT_NEAR(levels[0].capacity, 28.00374 * (1 << 20), 10);
  EXPECT_EQ(levels[0].bandwidth, 100e9);
}

TEST(HostBench, BadOptionsAreRefused) {
  if (!host_bench_available()) GTEST_SKIP() << host_bench_missing();
  EXPECT_THROW(run_host_bench({.warmup = -1}), std::invalid_argument);
  EXPECT_THROW(run_host_bench({.repeat = 0}), std::invalid_argument);
  EXPECT_THROW(run_host_bench({.threads = -2}), std::invalid_argument);
}

TEST(HostBench, WithoutTheLibrariesItSaysWhy) {
  if (host_bench_available()) GTEST_SKIP() << "built with oneDNN and OpenMP";
  EXPECT_FALSE(host_bench_missing().empty());
  try {
    run_host_bench();
    ADD_FAILURE() << "run_host_bench ran without oneDNN/OpenMP";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), host_bench_missing());
  }
}

}  // namespace
}  // namespace strata::validate
