#include "validate/host_bench.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "hw/units.h"
#include "util/error.h"
#include "util/parse.h"
#include "util/timer.h"
#include "validate/cpu_replay.h"
#include "validate/stats.h"

#if STRATA_HAVE_HOST_BENCH
#include <omp.h>

#include "validate/onednn_common.h"
#endif

namespace strata::validate {

namespace {

std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// The last-level caches from sysfs: the caches of the highest level, one per distinct shared_cpu_list (an
// L3 shared by 8 cores is listed under each of them), summed.
std::int64_t llc_from_sysfs() {
  namespace fs = std::filesystem;
  int top = 0;
  std::set<std::string> seen;
  std::int64_t total = 0;
  std::error_code ec;
  for (const auto& cpu : fs::directory_iterator("/sys/devices/system/cpu", ec)) {
    const auto name = cpu.path().filename().string();
    if (name.size() < 4 || name.rfind("cpu", 0) != 0 ||
        name.find_first_not_of("0123456789", 3) != std::string::npos)
      continue;
    for (const auto& idx : fs::directory_iterator(cpu.path() / "cache", ec)) {
      const auto level = util::try_parse_int(read_text(idx.path() / "level"), {0, 16});
      const auto type = read_text(idx.path() / "type");
      if (!level || type == "Instruction") continue;
      std::int64_t bytes = 0;
      try {
        bytes = static_cast<std::int64_t>(util::parse_size(read_text(idx.path() / "size"), "cache size"));
      } catch (const util::InputError&) {
        continue;
      }
      if (*level < top) continue;
      if (*level > top) {
        top = static_cast<int>(*level);
        seen.clear();
        total = 0;
      }
      if (seen.insert(read_text(idx.path() / "shared_cpu_list")).second) total += bytes;
    }
  }
  return total;
}

// One core's L2 from sysfs (cpu0's level-2 data or unified cache; 0 when not listed).
std::int64_t l2_from_sysfs() {
  std::error_code ec;
  for (const auto& idx : std::filesystem::directory_iterator("/sys/devices/system/cpu/cpu0/cache", ec)) {
    if (util::try_parse_int(read_text(idx.path() / "level"), {0, 16}) != 2 ||
        read_text(idx.path() / "type") == "Instruction")
      continue;
    try {
      return static_cast<std::int64_t>(util::parse_size(read_text(idx.path() / "size"), "cache size"));
    } catch (const util::InputError&) {
    }
  }
  return 0;
}

// A value in the unit of `units` (ascending factors) that keeps it >= 1, with 6 significant digits.
std::string with_unit(double value, std::initializer_list<std::pair<double, const char*>> units) {
  auto chosen = *units.begin();
  for (const auto& u : units)
    if (value >= u.first) chosen = u;
  return fmt::format("{:.6g} {}", value / chosen.first, chosen.second);
}
std::string flops_text(double f) {
  return with_unit(f, {{1e9, "GFLOPS"}, {1e12, "TFLOPS"}, {1e15, "PFLOPS"}});
}
std::string bandwidth_text(double b) {
  return with_unit(b, {{1.0, "B/s"}, {1e3, "KB/s"}, {1e6, "MB/s"}, {1e9, "GB/s"}, {1e12, "TB/s"}});
}
std::string duration_text(double s) {
  return with_unit(s, {{1e-12, "ps"}, {1e-9, "ns"}, {1e-6, "us"}, {1e-3, "ms"}, {1.0, "s"}});
}

}  // namespace

CpuInfo read_cpu_info() {
  CpuInfo c;
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    auto key = line.substr(0, colon);
    while (!key.empty() && (key.back() == ' ' || key.back() == '\t')) key.pop_back();
    const auto value = line.substr(std::min(line.size(), colon + 2));
    if (key == "model name" && c.model.empty()) c.model = value;
    if (key == "cpu MHz") {
      try {
        c.max_mhz = std::max(c.max_mhz, util::parse_real(value, 0, 1e6, "cpu MHz"));
      } catch (const util::InputError&) {
      }
    }
  }
  // Both sources, the larger kept: in a VM they can disagree (here sysfs listed the 32 MiB L3 of the vCPUs'
  // core complex, glibc's cpuid reading 320 MiB, the whole socket's), and STREAM wants arrays beyond all of
  // it.
  const std::int64_t sysfs = llc_from_sysfs();
  std::int64_t libc = 0;
#ifdef _SC_LEVEL3_CACHE_SIZE
  const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE), l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  libc = l3 > 0 ? l3 : std::max(l2, 0L);
#endif
  c.llc_bytes = std::max(sysfs, libc);
  c.llc_sysfs_bytes = sysfs;
  c.l2_bytes = l2_from_sysfs();
#ifdef _SC_LEVEL2_CACHE_SIZE
  if (c.l2_bytes == 0) c.l2_bytes = std::max(sysconf(_SC_LEVEL2_CACHE_SIZE), 0L);
#endif
  c.llc_source = fmt::format(
      "the larger of /sys/devices/system/cpu (highest level, instances summed: {}) and "
      "sysconf (L3: {})",
      sysfs > 0 ? units::format_bytes(static_cast<double>(sysfs)) : "none",
      libc > 0 ? units::format_bytes(static_cast<double>(libc)) : "none");
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0) c.memory_bytes = static_cast<std::int64_t>(pages) * page;
  return c;
}

std::vector<hw::CacheLevel> cache_levels(std::span<const CacheSample> samples,
                                         std::span<const std::int64_t> bounds,
                                         double memory_bytes_per_second) {
  struct Window {
    std::int64_t bound = 0;
    double best = 0;
  };
  std::vector<Window> windows;
  std::int64_t below = 0;
  for (const std::int64_t bound : bounds) {
    Window w{bound, 0};
    for (const auto& x : samples)
      if (x.working_set > below && x.working_set <= bound) w.best = std::max(w.best, x.bytes_per_second);
    if (w.best > 0) windows.push_back(w);
    below = std::max(below, bound);
  }
  std::vector<hw::CacheLevel> outer_first;
  double behind = memory_bytes_per_second;  // the bandwidth past the level being looked at
  for (auto w = windows.rbegin(); w != windows.rend(); ++w) {
    if (w->best < (outer_first.empty() ? 1.5 : 1.05) * behind) continue;
    const double threshold = std::sqrt(w->best * behind);
    double capacity = 0;
    for (std::size_t i = 0; i < samples.size(); ++i) {
      const auto& x = samples[i];
      if (x.working_set > w->bound || x.bytes_per_second < threshold) continue;
      double crossing = static_cast<double>(x.working_set);
      if (i + 1 < samples.size() && samples[i + 1].bytes_per_second < threshold) {
        const auto& next = samples[i + 1];
        const double f = (x.bytes_per_second - threshold) / (x.bytes_per_second - next.bytes_per_second);
        crossing = std::exp2(std::log2(crossing) +
                             f * (std::log2(static_cast<double>(next.working_set)) - std::log2(crossing)));
      }
      capacity = std::max(capacity, std::min(crossing, static_cast<double>(w->bound)));
    }
    if (capacity <= 0 || (!outer_first.empty() && capacity >= outer_first.back().capacity)) continue;
    outer_first.push_back({capacity, w->best});
    behind = w->best;
  }
  return {outer_first.rbegin(), outer_first.rend()};
}

int f32_lanes_of_isa(std::string_view isa) {
  // Register widths: AVX-512 512 bit, AVX/AVX2 256, SSE4.1 128 (Intel 64 and IA-32 Architectures Software
  // Developer's Manual, vol. 1, ch. 10-15); an f32 is 32 bit.
  if (isa.starts_with("avx512")) return 16;
  if (isa.starts_with("avx")) return 8;
  if (isa.starts_with("sse4")) return 4;
  return 0;
}

std::string host_system_yaml(const HostBench& b) {
  std::string h;
  h += "# This machine's CPU as one device, measured by `strata validate host` (validate/host_bench.h,\n";
  h += "# docs/replay.md §1). Profile entries are looked up under the GPU catalogue name host-cpu; the\n";
  h += "# roofline figures below replace the catalogue's guesses.\n";
  h += fmt::format("# CPU: {} ({} MHz in /proc/cpuinfo), {} OpenMP threads, {}\n",
                   b.cpu.model.empty() ? "unknown" : b.cpu.model, b.cpu.max_mhz, b.threads, b.onednn);
  h += fmt::format("# Medians of {} timed runs after {} warm-up runs{}.\n", b.options.repeat,
                   b.options.warmup, b.options.quick ? " (--quick: small GEMMs)" : "");
  auto gemm = [&](const char* dtype, const PeakResult& p) {
    if (!p.supported) return fmt::format("# peak {}: not measured ({})\n", dtype, p.why_not);
    std::string s =
        fmt::format("# peak {}: oneDNN matmul M = N = K, 2·M·N·K FLOP / median time, the best of", dtype);
    for (const auto& g : p.samples) s += fmt::format(" {}: {:.1f} GFLOP/s,", g.size, g.flops / 1e9);
    s.back() = ';';
    return s + fmt::format(" implementation {}\n", p.implementation);
  };
  h += gemm("fp32", b.f32);
  h += gemm("bf16", b.bf16);
  h += fmt::format(
      "# hbm_bandwidth: STREAM triad a = b + q·c (24 B per element; copy c = a, 16 B per element: {:.2f} "
      "GB/s)\n"
      "#   on 3 arrays of {} doubles ({} each, last-level cache {} from {})\n",
      b.stream.copy_bytes_per_second / 1e9, b.stream.elements,
      units::format_bytes(8.0 * static_cast<double>(b.stream.elements)),
      units::format_bytes(static_cast<double>(b.cpu.llc_bytes)), b.cpu.llc_source);
  h += fmt::format(
      "# launch_overhead: a oneDNN eltwise primitive on 1 element, executed and waited for ({})\n",
      b.overhead_implementation);
  h += fmt::format(
      "# cache: oneDNN f32 add (12 B per element) on working sets up to twice the last-level cache, its\n"
      "#   {} per call (on 16 elements) taken off; split at the OS's cache sizes{}; per level the best "
      "rate,\n"
      "#   capacity = where the curve crosses the geometric mean of it and the next level's (or\n"
      "#   hbm_bandwidth), interpolated and capped at the level's size (validate/host_bench.h):",
      duration_text(b.cache.call_seconds), [&] {
        std::string t;
        for (const auto bound : b.cache.bounds) t += " " + units::format_bytes(static_cast<double>(bound));
        return t;
      }());
  for (const auto& x : b.cache.samples)
    h += fmt::format(" {}: {:.1f}", units::format_bytes(static_cast<double>(x.working_set)),
                     x.bytes_per_second / 1e9);
  h += " GB/s\n";
  h += "# hbm_capacity: physical memory (sysconf); fp64 and the other dtypes stay the catalogue's.\n";
  if (b.vector.f32_lanes() > 0)
    h += fmt::format(
        "# gemm_tile: one vector register of f32 accumulators across output channels, no reduction padding\n"
        "#   (oneDNN's effective ISA {}: {} f32 lanes); grouped convolutions with fewer channels per group\n"
        "#   compute padding.\n",
        b.vector.isa, b.vector.f32_lanes());
  std::string peak = fmt::format("fp32: {}", flops_text(b.f32.flops));
  if (b.bf16.supported) peak += fmt::format(", bf16: {}", flops_text(b.bf16.flops));
  std::string gpu =
      fmt::format("gpu:\n  model: host-cpu\n  peak: {{{}}}\n  hbm_bandwidth: {}\n  launch_overhead: {}\n",
                  peak, bandwidth_text(b.stream.triad_bytes_per_second), duration_text(b.overhead_seconds));
  if (b.cpu.memory_bytes >= (1 << 20))
    gpu += fmt::format("  hbm_capacity: {} MiB\n", b.cpu.memory_bytes >> 20);
  if (b.vector.f32_lanes() > 0) gpu += fmt::format("  gemm_tile: {{n: {}, k: 1}}\n", b.vector.f32_lanes());
  if (!b.cache.levels.empty()) {
    gpu += "  cache:\n";
    for (const auto& level : b.cache.levels)
      gpu += fmt::format("    - {{capacity: {} KiB, bandwidth: {}}}\n",
                         static_cast<std::int64_t>(level.capacity) >> 10, bandwidth_text(level.bandwidth));
  }
  return h +
         "name: host-cpu-measured\n"
         "description: the host CPU as one device, figures measured by strata validate host\n" +
         gpu +
         "nodes: 1\n"
         "node:\n"
         "  gpus: 1\n"
         "  fabric: {wiring: none}\n"
         "  host: {cpus: 1, pcie: pcie4}\n"
         "  nics: {count: 1, link: roce-100g}\n"
         "network: {wiring: fat-tree}\n";
}

std::string host_bench_report(const HostBench& b) {
  std::string r =
      fmt::format("CPU: {} ({} MHz), {} threads; {}\n", b.cpu.model, b.cpu.max_mhz, b.threads, b.onednn);
  for (const auto& [dtype, p] : {std::pair{"f32", &b.f32}, std::pair{"bf16", &b.bf16}}) {
    if (!p->supported) {
      r += fmt::format("peak {:<5} not supported: {}\n", dtype, p->why_not);
      continue;
    }
    r += fmt::format("peak {:<5} {:>10.1f} GFLOP/s  ({})\n", dtype, p->flops / 1e9, p->implementation);
    for (const auto& g : p->samples)
      r += fmt::format("  matmul {:>5}^3  median {:>12}  {:>10.1f} GFLOP/s\n", g.size,
                       units::format_duration(g.median_seconds), g.flops / 1e9);
  }
  r += fmt::format("STREAM copy      {:>10.2f} GB/s  (median {}, 16 B x {} elements)\n",
                   b.stream.copy_bytes_per_second / 1e9, units::format_duration(b.stream.copy_median_seconds),
                   b.stream.elements);
  r += fmt::format("STREAM triad     {:>10.2f} GB/s  (median {}, 24 B x {} elements; last-level cache {})\n",
                   b.stream.triad_bytes_per_second / 1e9,
                   units::format_duration(b.stream.triad_median_seconds), b.stream.elements,
                   units::format_bytes(static_cast<double>(b.cpu.llc_bytes)));
  r += fmt::format("oneDNN add       {:>10}       per call (16 elements; taken off the rates below)\n",
                   units::format_duration(b.cache.call_seconds));
  for (const auto& x : b.cache.samples)
    r += fmt::format("  add working set {:>10}  {:>8.2f} GB/s\n",
                     units::format_bytes(static_cast<double>(x.working_set)), x.bytes_per_second / 1e9);
  for (const auto& level : b.cache.levels)
    r += fmt::format("cache level      {:>10.2f} GB/s  up to {} (cost model: gpu.cache)\n",
                     level.bandwidth / 1e9, units::format_bytes(level.capacity));
  if (b.cache.levels.empty()) r += "cache level      none faster than memory measured\n";
  r += fmt::format("kernel overhead  {:>10}       (oneDNN {} on 1 element)\n",
                   units::format_duration(b.overhead_seconds), b.overhead_implementation);
  if (b.vector.f32_lanes() > 0)
    r += fmt::format(
        "vector ISA       {:>10}       {} f32 lanes (cost model: gpu.gemm_tile {{n: {}, k: 1}})\n",
        b.vector.isa, b.vector.f32_lanes(), b.vector.f32_lanes());
  else
    r += fmt::format("vector ISA       {:>10}       not known: gpu.gemm_tile stays the catalogue's\n",
                     b.vector.isa.empty() ? "?" : b.vector.isa);
  return r;
}

#if STRATA_HAVE_HOST_BENCH

namespace {

using dnnl::memory;
using Dt = memory::data_type;

// The replay's engine and stream (validate/onednn_common.h): the overhead is that of a replayed node's run().
using detail::cpu_stream;
dnnl::engine& engine() {
  return detail::cpu_engine();
}

// oneDNN's effective ISA on this CPU by its dnnl_cpu_isa_t name (dnnl_types.h of oneDNN 2.6), "" for a value
// this build does not know.
std::string effective_isa_name() {
  switch (dnnl::get_effective_cpu_isa()) {
    case dnnl::cpu_isa::sse41:
      return "sse41";
    case dnnl::cpu_isa::avx:
      return "avx";
    case dnnl::cpu_isa::avx2:
      return "avx2";
    case dnnl::cpu_isa::avx2_vnni:
      return "avx2_vnni";
    case dnnl::cpu_isa::avx512_mic:
      return "avx512_mic";
    case dnnl::cpu_isa::avx512_mic_4ops:
      return "avx512_mic_4ops";
    case dnnl::cpu_isa::avx512_core:
      return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni:
      return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16:
      return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx:
      return "avx512_core_amx";
    default:
      return "";
  }
}

// Times `run` (warm-up first), returns the median seconds.
template <class F>
double median_time(int warmup, int repeat, F&& run) {
  for (int i = 0; i < warmup; ++i) run();
  std::vector<double> t;
  for (int i = 0; i < repeat; ++i) {
    util::Stopwatch w;
    run();
    t.push_back(w.seconds());
  }
  return median(std::move(t));
}

// Data in [-0.5, 0.5) (no denormals, no overflow), converted to `dt` by a oneDNN reorder.
memory filled(const memory::dims& dims, Dt dt, std::uint64_t salt, dnnl::stream& s) {
  const memory::desc f32(dims, Dt::f32, memory::format_tag::ab);
  memory src(f32, engine());
  auto* p = static_cast<float*>(src.get_data_handle());
  const std::size_t n = f32.get_size() / sizeof(float);
  for (std::size_t i = 0; i < n; ++i)
    p[i] = static_cast<float>(((i + salt) * 2654435761ULL) % 1000) / 1000.0f - 0.5f;
  if (dt == Dt::f32) return src;
  memory dst(memory::desc(dims, dt, memory::format_tag::ab), engine());
  dnnl::reorder(src, dst).execute(s, src, dst);
  s.wait();
  return dst;
}

PeakResult gemm_peak(Dt dt, const std::vector<std::int64_t>& sizes, const HostBenchOptions& o) {
  PeakResult r;
  dnnl::stream& s = cpu_stream();
  for (const auto n : sizes) {
    const memory::dims d{n, n};
    dnnl::matmul::primitive_desc pd;
    try {
      pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(memory::desc(d, dt, memory::format_tag::ab),
                                                           memory::desc(d, dt, memory::format_tag::ab),
                                                           memory::desc(d, Dt::f32, memory::format_tag::ab)),
                                        engine());
    } catch (const dnnl::error& e) {
      r.why_not = fmt::format("oneDNN has no matmul for it on this CPU ({})", e.what());
      return r;
    }
    r.implementation = pd.impl_info_str();
    if (r.implementation.find("ref") != std::string::npos) {
      r.why_not = fmt::format("oneDNN's only matmul for it on this CPU is its reference implementation ({})",
                              r.implementation);
      return r;
    }
    auto a = filled(d, dt, 1, s), b = filled(d, dt, 2, s);
    memory c(pd.dst_desc(), engine());
    dnnl::matmul mm(pd);
    const std::unordered_map<int, memory> args{{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}};
    const double t = median_time(o.warmup, o.repeat, [&] {
      mm.execute(s, args);
      s.wait();
    });
    const double flops = 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n) / t;
    r.samples.push_back({n, t, flops});
    r.flops = std::max(r.flops, flops);
  }
  r.supported = true;
  return r;
}

// STREAM's copy and triad (stream.c, McCalpin): arrays first touched by the threads that use them (static
// schedule, as the kernels), each kernel timed around its parallel loop.
StreamResult stream(std::int64_t n, int threads, const HostBenchOptions& o) {
  const std::unique_ptr<double[]> a(new double[static_cast<std::size_t>(n)]),
      b(new double[static_cast<std::size_t>(n)]), c(new double[static_cast<std::size_t>(n)]);
  double *pa = a.get(), *pb = b.get(), *pc = c.get();
#pragma omp parallel for num_threads(threads) schedule(static)
  for (std::int64_t j = 0; j < n; ++j) {
    pa[j] = 1.0;
    pb[j] = 2.0;
    pc[j] = 0.0;
  }
  const double q = 3.0;
  auto copy = [&] {
#pragma omp parallel for num_threads(threads) schedule(static)
    for (std::int64_t j = 0; j < n; ++j) pc[j] = pa[j];
  };
  auto triad = [&] {
#pragma omp parallel for num_threads(threads) schedule(static)
    for (std::int64_t j = 0; j < n; ++j) pa[j] = pb[j] + q * pc[j];
  };
  StreamResult r;
  r.elements = n;
  r.copy_median_seconds = median_time(o.warmup, o.repeat, copy);
  r.triad_median_seconds = median_time(o.warmup, o.repeat, triad);
  const double bytes = 8.0 * static_cast<double>(n);
  r.copy_bytes_per_second = 2 * bytes / r.copy_median_seconds;
  r.triad_bytes_per_second = 3 * bytes / r.triad_median_seconds;
  // Every element is now 2 + 3·1 = 5 (a after triad); a wrong loop would not give that.
  if (pa[0] != 5.0 || pa[n - 1] != 5.0) throw std::logic_error("STREAM triad computed a wrong result");
  return r;
}

// oneDNN's f32 binary add on working sets from 96 KiB to twice the last-level cache (doubling), each call
// repeated inside a timed run so that small sets still run ~1 ms; then the levels (host_bench.h,
// CacheResult).
CacheResult cache_curve(const CpuInfo& cpu, double memory_bytes_per_second, int threads,
                        const HostBenchOptions& o) {
  dnnl::stream& s = cpu_stream();
  // Per call: the median of `calls` back-to-back executions of an add on `n` elements.
  auto time_add = [&](std::int64_t n, int calls) {
    const memory::desc d({n}, Dt::f32, memory::format_tag::a);
    const dnnl::binary::primitive_desc pd(dnnl::binary::desc(dnnl::algorithm::binary_add, d, d, d), engine());
    memory a(d, engine()), b(d, engine()), c(d, engine());
    for (auto* m : {&a, &b, &c}) std::fill_n(static_cast<float*>(m->get_data_handle()), n, 0.25f);
    dnnl::binary add(pd);
    const std::unordered_map<int, memory> args{{DNNL_ARG_SRC_0, a}, {DNNL_ARG_SRC_1, b}, {DNNL_ARG_DST, c}};
    const double t = median_time(o.warmup, o.repeat, [&] {
      for (int i = 0; i < calls; ++i) add.execute(s, args);
      s.wait();
    });
    if (static_cast<float*>(c.get_data_handle())[n - 1] != 0.5f)
      throw std::logic_error("host bench: oneDNN's add computed a wrong result");
    return t / calls;
  };
  CacheResult r;
  r.call_seconds = time_add(16, 1000);
  const std::int64_t top = std::max<std::int64_t>(2 * cpu.llc_bytes, 8 << 20);
  for (std::int64_t set = 96 << 10; set <= top; set *= 2) {
    const int calls = static_cast<int>(std::max<std::int64_t>(1, (std::int64_t{16} << 20) / set));
    const double t = time_add(set / 12, calls) - r.call_seconds;
    if (t > 0) r.samples.push_back({set, static_cast<double>(set) / t});
  }
  // The last-level cache the cores can use: sysfs's where it lists one (glibc's cpuid figure can be a whole
  // socket's, of which a VM's vCPUs see one core complex's).
  const std::int64_t llc =
      std::max<std::int64_t>(cpu.llc_sysfs_bytes > 0 ? cpu.llc_sysfs_bytes : cpu.llc_bytes, 1 << 20);
  // Every core's L2 holds its own slice of the arrays (oneDNN splits the add statically).
  const std::int64_t l2 = cpu.l2_bytes * std::max(threads, 1);
  if (l2 > 0 && l2 < llc) r.bounds.push_back(l2);
  r.bounds.push_back(llc);
  r.levels = cache_levels(r.samples, r.bounds, memory_bytes_per_second);
  return r;
}

}  // namespace

bool host_bench_available() {
  return true;
}
std::string host_bench_missing() {
  return "";
}

HostBench run_host_bench(const HostBenchOptions& o) {
  if (o.warmup < 0 || o.repeat < 1 || o.threads < 0)
    throw std::invalid_argument(fmt::format(
        "host bench: warm-up {} must be >= 0, repetitions {} >= 1 and threads {} >= 0 (0: the runtime's)",
        o.warmup, o.repeat, o.threads));
  if (o.threads > 0) omp_set_num_threads(o.threads);
  HostBench b;
  b.options = o;
  b.cpu = read_cpu_info();
  b.onednn = onednn_description();
  b.vector.isa = effective_isa_name();
  const auto runtime = dnnl::version()->cpu_runtime;
  b.threads = runtime == DNNL_RUNTIME_SEQ ? 1 : omp_get_max_threads();
  const std::vector<std::int64_t> sizes =
      o.quick ? std::vector<std::int64_t>{512, 1024} : std::vector<std::int64_t>{1024, 2048, 3072};
  b.f32 = gemm_peak(Dt::f32, sizes, o);
  if (!b.f32.supported) throw std::runtime_error("host bench: no f32 matmul: " + b.f32.why_not);
  b.bf16 = gemm_peak(Dt::bf16, sizes, o);
  // STREAM's rule: each array at least 4x the last-level caches; 64 MiB at least where their size is unknown.
  std::int64_t bytes = std::max<std::int64_t>(4 * b.cpu.llc_bytes, 64 << 20);
  if (b.cpu.memory_bytes > 0) bytes = std::min(bytes, b.cpu.memory_bytes / 8);  // 3 arrays: 3/8 of memory
  b.stream = stream(bytes / 8, b.threads, o);
  b.cache = cache_curve(b.cpu, b.stream.triad_bytes_per_second, b.threads, o);

  dnnl::stream& s = cpu_stream();
  const memory::desc one({1}, Dt::f32, memory::format_tag::a);
  const dnnl::eltwise_forward::primitive_desc pd(
      dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::eltwise_relu, one,
                                  0.0f, 0.0f),
      engine());
  b.overhead_implementation = std::string("eltwise relu, ") + pd.impl_info_str();
  memory x(one, engine()), y(one, engine());
  dnnl::eltwise_forward relu(pd);
  const std::unordered_map<int, memory> args{{DNNL_ARG_SRC, x}, {DNNL_ARG_DST, y}};
  b.overhead_seconds = median_time(o.warmup * 100, o.repeat * 100, [&] {
    relu.execute(s, args);
    s.wait();
  });
  return b;
}

#else

bool host_bench_available() {
  return false;
}

std::string host_bench_missing() {
  if (!onednn_available()) return std::string(kOneDnnMissing);
  return "OpenMP was not found when strata was built (the STREAM benchmark runs on oneDNN's OpenMP threads; "
         "install the compiler's OpenMP runtime, e.g. libomp-dev for clang, and re-run CMake)";
}
HostBench run_host_bench(const HostBenchOptions&) {
  throw std::runtime_error(host_bench_missing());
}

#endif

}  // namespace strata::validate
