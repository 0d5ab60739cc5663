// Microbenchmarks of this machine's CPU (issue 15; docs/replay.md §1): the figures the roofline cost model
// (models/cost/cost_model.h) reads from a device spec, measured instead of guessed, so that a system YAML
// with `gpu: {model: host-cpu, peak: ..., hbm_bandwidth: ..., launch_overhead: ...}` predicts CPU times.
//   - peak FLOP/s: large oneDNN matmuls in f32 (and bf16 where oneDNN has a non-reference implementation on
//     this CPU), the best over the sizes of each size's median;
//   - memory bandwidth: STREAM's copy and triad kernels (McCalpin, https://www.cs.virginia.edu/stream/, bytes
//     counted as STREAM counts them: copy 16 B, triad 24 B per element of double arrays) on arrays of at
//     least 4x the last-level caches (at most 1/8 of memory each), with OpenMP on oneDNN's thread count;
//   - per-kernel overhead: a oneDNN eltwise primitive on one element, executed and waited for, the analogue
//     of a GPU kernel launch.
// Every figure is a median over repetitions after warm-up runs. Compiled with oneDNN and OpenMP (CMake finds
// both); without them run_host_bench throws, as the CPU replay does.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

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
  std::string llc_source;         // both figures, as text
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

// STREAM triad from cache: the bandwidth at working sets (3 arrays) from 192 KiB up to twice the last-level
// cache, and from it the cache level the cost model reads (gpu.cache: a kernel whose bytes fit in `capacity`
// moves them at `bandwidth`, models/cost/cost_model.h). bandwidth = the best rate within the last-level
// cache, kept only when at least 1.5x the memory's (STREAM, above); capacity = the largest working set within
// the last-level cache that still runs at least at the geometric mean of the two rates: past it most of the
// data comes from memory. Small working sets repeat the kernel inside one timed run (~16 MiB of traffic per
// run).
struct CacheSample {
  std::int64_t working_set = 0;  // bytes (3 arrays)
  double bytes_per_second = 0;
};
struct CacheResult {
  std::vector<CacheSample> samples;
  double capacity = 0, bandwidth = 0;  // 0: no working set ran faster than memory
};

struct HostBench {
  CpuInfo cpu;
  std::string onednn;  // onednn_description()
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
// per-primitive overhead, hbm_capacity = physical memory; a comment header says what was measured, how, on
// which CPU with how many threads. Numbers carry 6 significant digits in a unit that keeps them >= 1.
std::string host_system_yaml(const HostBench& bench);

// The numbers as a human-readable table (what `strata validate host` prints).
std::string host_bench_report(const HostBench& bench);

}  // namespace strata::validate
