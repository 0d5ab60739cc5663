// Microbenchmarks of this machine's CPU (issue 15; docs/replay.md §1): the figures the roofline cost model
// (models/cost/cost_model.h) reads from a device spec, measured instead of guessed, so that a system YAML
// with `gpu: {model: host-cpu, peak: ..., hbm_bandwidth: ..., launch_overhead: ...}` predicts CPU times.
//   - peak FLOP/s: large oneDNN matmuls in f32 (and bf16 where oneDNN has a non-reference implementation on
//     this CPU), the best over the sizes of each size's median;
//   - memory bandwidth: STREAM's copy and triad kernels (McCalpin, https://www.cs.virginia.edu/stream/, bytes
//     counted as STREAM counts them: copy 16 B, triad 24 B per element of double arrays) on arrays of at
//     least 4x the last-level caches (at most 1/8 of memory each), with OpenMP on oneDNN's thread count;
//   - cache levels: oneDNN's binary add on working sets up to twice the last-level cache (CacheResult);
//   - per-kernel overhead: a oneDNN eltwise primitive on one element, executed and waited for, the analogue
//     of a GPU kernel launch.
// Every figure is a median over repetitions after warm-up runs. Compiled with oneDNN and OpenMP (CMake finds
// both); without them run_host_bench throws, as the CPU replay does.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hw/gpu_spec.h"

namespace strata::validate {

// Whether this build can run the benchmarks (oneDNN and OpenMP found); host_bench_missing() says why not
// ("" when available).
bool host_bench_available();
std::string host_bench_missing();

struct HostBenchOptions {
  int warmup = 2;      // untimed runs of each benchmark first
  int repeat = 10;     // timed runs per GEMM size and STREAM kernel; the overhead runs 100x as many
  bool quick = false;  // smaller GEMMs (512, 1024 instead of 1024, 2048, 3072): seconds, not tens
  // OpenMP threads for oneDNN and STREAM: 0 keeps the runtime's (OMP_NUM_THREADS, else every hardware
  // thread); N > 0 sets N for the rest of the process (omp_set_num_threads), oneDNN's later work included.
  int threads = 0;
};

// What the operating system says about the CPU (no oneDNN needed).
struct CpuInfo {
  std::string model;   // /proc/cpuinfo "model name" of the first CPU ("" when absent)
  double max_mhz = 0;  // the largest "cpu MHz" in /proc/cpuinfo (0 when absent)
  // The last-level caches: the larger of sysfs's (highest level, distinct instances summed) and glibc's
  // sysconf L3 (0: unknown).
  std::int64_t llc_bytes = 0;
  std::string llc_source;            // both figures, as text
  std::int64_t llc_sysfs_bytes = 0;  // sysfs's figure alone (0: not listed): the cache the cores can use
  std::int64_t l2_bytes = 0;      // one core's L2: sysfs's level-2 cache of cpu0, else sysconf (0: unknown)
  std::int64_t memory_bytes = 0;  // physical memory (sysconf)
};
CpuInfo read_cpu_info();

struct GemmSample {
  std::int64_t size = 0;  // M = N = K
  double median_seconds = 0;
  double flops = 0;  // 2·size³ / median_seconds
};

struct PeakResult {
  bool supported = false;
  std::string implementation;  // oneDNN's, e.g. "brg:avx512_core"
  std::string why_not;         // when !supported
  std::vector<GemmSample> samples;
  double flops = 0;  // the best sample's
};

struct StreamResult {
  std::int64_t elements = 0;  // per array (doubles)
  double copy_median_seconds = 0, triad_median_seconds = 0;
  double copy_bytes_per_second = 0;   // 16 B per element / median
  double triad_bytes_per_second = 0;  // 24 B per element / median
};

// The cache levels the cost model reads (gpu.cache: a kernel whose bytes fit in a level moves them at its
// bandwidth, models/cost/cost_model.h), measured with the kernel most memory-bound operators of a model run:
// oneDNN's f32 binary add (two sources and a destination, 12 B per element), on working sets doubling from
// 96 KiB to twice the last-level cache. Each sample's rate is working set / (median time per call − the
// add's time on 16 elements): the per-call cost is the cost model's launch overhead and fitted fixed cost,
// not the cache's. Small working sets repeat the call inside one timed run (~16 MiB of traffic per run).
struct CacheSample {
  std::int64_t working_set = 0;  // bytes (3 arrays)
  double bytes_per_second = 0;
};
struct CacheResult {
  std::vector<CacheSample> samples;
  double call_seconds = 0;             // the add on 16 elements, per call (subtracted above)
  std::vector<std::int64_t> bounds;    // the OS's cache sizes the curve was split at (cache_levels)
  std::vector<hw::CacheLevel> levels;  // smallest first; empty: none ran clearly faster than memory
};

// The levels in a cache curve. `bounds` (ascending) are the sizes the operating system reports: all cores'
// L2 together and the last-level cache. Each splits the curve into a window (above the bound before it, up
// to it); the window's best rate is its level's bandwidth. From the largest level down, a level is kept
// where it is clearly faster than what lies behind it (the outermost at least 1.5x memory, an inner one at
// least 1.05x the next kept level: a flat curve, e.g. a build whose loads are instrumented, models none).
// Its capacity is where the curve crosses the geometric mean of its bandwidth and the next one's: past it
// most of the data comes from further out. The crossing is interpolated (rate linear in log2 working set)
// between the largest working set up to the bound at or above that mean and the next, and capped at the
// bound: on a doubling grid a sample lying near the mean would otherwise move the capacity by 2x from one
// run to the next. A level whose capacity would not be below the next one's is dropped. Pure: tests give
// hand-made curves.
std::vector<hw::CacheLevel> cache_levels(std::span<const CacheSample> samples,
                                         std::span<const std::int64_t> bounds,
                                         double memory_bytes_per_second);

// f32 lanes per vector register of a oneDNN ISA name (dnnl_cpu_isa_t without its prefix): 16 (AVX-512), 8
// (AVX, AVX2), 4 (SSE4.1); 0 for a name it does not know.
int f32_lanes_of_isa(std::string_view isa);

// The vector width oneDNN's kernels use on this CPU: its effective ISA (dnnl::get_effective_cpu_isa). A
// direct or implicit-GEMM convolution keeps one register of f32 accumulators across output channels, so a
// grouped convolution with fewer channels per group than the lanes computes padding: the device's GEMM tile
// is {f32_lanes(), 1} (hw::GemmTile).
struct VectorIsa {
  std::string isa;  // e.g. "avx512_core_bf16"; "" when not known
  int f32_lanes() const { return f32_lanes_of_isa(isa); }
};

struct HostBench {
  CpuInfo cpu;
  std::string onednn;  // onednn_description()
  VectorIsa vector;    // oneDNN's effective ISA on this CPU
  int threads = 0;     // OpenMP threads oneDNN and STREAM use (OMP_NUM_THREADS when set)
  PeakResult f32, bf16;
  StreamResult stream;
  CacheResult cache;
  double overhead_seconds = 0;  // median per-primitive time on one element
  std::string overhead_implementation;
  HostBenchOptions options;
};

// Runs every benchmark; tens of seconds with default options on one thread (quick: a few). Throws
// std::runtime_error when !host_bench_available(), std::invalid_argument for warmup < 0, repeat < 1 or
// threads < 0.
HostBench run_host_bench(const HostBenchOptions& options = {});

// A system YAML (configs/validate/host-cpu.yaml's node, GPU model host-cpu) whose `gpu` figures are the
// measured ones: peak fp32 (and bf16 when supported), hbm_bandwidth = STREAM triad, launch_overhead = the
// per-primitive overhead, hbm_capacity = physical memory, gemm_tile = {vector f32 lanes, 1} when the ISA is
// known; a comment header says what was measured, how, on which CPU with how many threads. Numbers carry 6
// significant digits in a unit that keeps them >= 1.
std::string host_system_yaml(const HostBench& bench);

// The numbers as a human-readable table (what `strata validate host` prints).
std::string host_bench_report(const HostBench& bench);

}  // namespace strata::validate
