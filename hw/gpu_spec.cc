#include "hw/gpu_spec.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "hw/units.h"

namespace strata::hw {

using units::kGB;

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::kFp64:
      return "fp64";
    case DType::kFp32:
      return "fp32";
    case DType::kTf32:
      return "tf32";
    case DType::kFp16:
      return "fp16";
    case DType::kBf16:
      return "bf16";
    case DType::kFp8:
      return "fp8";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view name) {
  for (DType t : kAllDTypes)
    if (dtype_name(t) == name) return t;
  if (name == "float") return DType::kFp32;
  if (name == "half") return DType::kFp16;
  if (name == "double") return DType::kFp64;
  return std::nullopt;
}

int dtype_bytes(DType t) {
  switch (t) {
    case DType::kFp64:
      return 8;
    case DType::kFp32:
    case DType::kTf32:
      return 4;
    case DType::kFp16:
    case DType::kBf16:
      return 2;
    case DType::kFp8:
      return 1;
  }
  return 4;
}

std::string_view arch_name(GpuArch a) {
  switch (a) {
    case GpuArch::kKepler:
      return "kepler";
    case GpuArch::kPascal:
      return "pascal";
    case GpuArch::kVolta:
      return "volta";
    case GpuArch::kAmpere:
      return "ampere";
    case GpuArch::kHopper:
      return "hopper";
    case GpuArch::kBlackwell:
      return "blackwell";
    case GpuArch::kHostCpu:
      return "host-cpu";
  }
  return "?";
}

double GpuSpec::peak_flops(DType t) const {
  switch (t) {
    case DType::kFp64:
      return peak_fp64;
    case DType::kFp32:
      return peak_fp32;
    case DType::kTf32:
      return peak_tf32 > 0 ? peak_tf32 : peak_fp32;
    case DType::kFp16:
      return peak_fp16 > 0 ? peak_fp16 : peak_fp32;
    case DType::kBf16:
      return peak_bf16 > 0 ? peak_bf16 : (peak_fp16 > 0 ? peak_fp16 : peak_fp32);
    case DType::kFp8:
      return peak_fp8 > 0 ? peak_fp8 : peak_flops(DType::kFp16);
  }
  return peak_fp32;
}

double GpuSpec::bandwidth_for(double bytes) const {
  // A measured cache curve does not step at a level's size: it falls over about a factor of 2 either side
  // (oneDNN's add on this project's VM, docs/replay.md §3: 93.9 GB/s at 6 MiB, 81.6 at 12 MiB, 49.2 at 24,
  // 30.3 at 48 MiB against 27.6 from DRAM), because replacement is not strict LRU and a working set just
  // under the size shares it with other lines. So the rate falls from a level's bandwidth at capacity / 2 to
  // the next level's (or memory's) at 2 capacity, log-linearly in the working set: at the capacity itself it
  // is the geometric mean of the two, which is where `strata validate host` places the capacity. The ramps of
  // neighbouring levels meet at most halfway (geometrically) between their capacities.
  constexpr double kRampFactor = 2.0;
  for (std::size_t i = 0; i < caches.size(); ++i) {
    const auto& level = caches[i];
    const double next = i + 1 < caches.size() ? caches[i + 1].bandwidth : hbm_bandwidth;
    double factor = kRampFactor;
    if (i + 1 < caches.size()) factor = std::min(factor, std::sqrt(caches[i + 1].capacity / level.capacity));
    if (i > 0) factor = std::min(factor, std::sqrt(level.capacity / caches[i - 1].capacity));
    const double lo = level.capacity / factor, hi = level.capacity * factor;
    if (bytes <= lo) return level.bandwidth;
    if (bytes < hi) {
      const double t = std::log(bytes / lo) / std::log(hi / lo);
      return std::exp((1 - t) * std::log(level.bandwidth) + t * std::log(next));
    }
  }
  return hbm_bandwidth;
}

namespace {
constexpr double T = 1e12;
// Kernel launch overhead: a few microseconds from host enqueue to kernel start on all these generations;
// 4 us (Volta/Ampere) and 3 us (Hopper/Blackwell) are starting values, not calibrated measurements.
// Throughput figures are dense (no 2:4 sparsity). Sources: NVIDIA V100/A100/H100/H200/B200 datasheets, as
// tabulated at https://glennklockwood.com/garden/processors/ (A100, H100, B200 pages); NVLink links per GPU
// (NVLink2 6, NVLink3 12, NVLink4 and NVLink5 18) from the same datasheets.
const std::array<GpuSpec, 10> kCatalog{{
    {"v100-sxm2", "NVIDIA V100 SXM2 32 GB", GpuArch::kVolta, 7.8 * T, 15.7 * T, 0, 125 * T, 0, 0, 900 * kGB,
     32 * kGB, 4e-6, 6, "nvlink2", "pcie3"},
    {"a100-sxm4-40gb", "NVIDIA A100 SXM4 40 GB", GpuArch::kAmpere, 9.7 * T, 19.5 * T, 156 * T, 312 * T,
     312 * T, 0, 1555 * kGB, 40 * kGB, 4e-6, 12, "nvlink3", "pcie4"},
    {"a100-sxm4-80gb", "NVIDIA A100 SXM4 80 GB", GpuArch::kAmpere, 9.7 * T, 19.5 * T, 156 * T, 312 * T,
     312 * T, 0, 2039 * kGB, 80 * kGB, 4e-6, 12, "nvlink3", "pcie4"},
    // A100 PCIe 40 GB: same SMs and HBM2 as the SXM4 40 GB part at 250 W; no NVLink without a bridge.
    {"a100-pcie-40gb", "NVIDIA A100 PCIe 40 GB", GpuArch::kAmpere, 9.7 * T, 19.5 * T, 156 * T, 312 * T,
     312 * T, 0, 1555 * kGB, 40 * kGB, 4e-6, 0, "", "pcie4"},
    {"h100-sxm", "NVIDIA H100 SXM5 80 GB", GpuArch::kHopper, 33.5 * T, 66.9 * T, 494.7 * T, 989.4 * T,
     989.4 * T, 1978.9 * T, 3350 * kGB, 80 * kGB, 3e-6, 18, "nvlink4", "pcie5"},
    {"h200-sxm", "NVIDIA H200 SXM 141 GB", GpuArch::kHopper, 33.5 * T, 66.9 * T, 494.7 * T, 989.4 * T,
     989.4 * T, 1978.9 * T, 4800 * kGB, 141 * kGB, 3e-6, 18, "nvlink4", "pcie5"},
    // B200 figures vary between NVIDIA documents (FP64 37 vs 40 TFLOPS); the lower end of each range is used.
    {"b200", "NVIDIA B200 (HGX, 1000 W) 180 GB usable", GpuArch::kBlackwell, 37 * T, 75 * T, 1100 * T,
     2250 * T, 2250 * T, 4500 * T, 8000 * kGB, 180 * kGB, 3e-6, 18, "nvlink5", "pcie6"},
    // The GPUs of FlexFlow's clusters (Jia et al., SysML 2019, arXiv 1807.05358, §8). P100 SXM2 (NVIDIA Tesla
    // P100 datasheet and Pascal architecture whitepaper WP-08019-001): FP64 5.3, FP32 10.6, FP16 21.2 TFLOP/s
    // at boost clock; HBM2 732 GB/s, 16 GB; 4 NVLink 1 links (20 GB/s per direction each); PCIe Gen3 x16 to
    // the host.
    {"p100-sxm2", "NVIDIA Tesla P100 SXM2 16 GB", GpuArch::kPascal, 5.3 * T, 10.6 * T, 0, 21.2 * T, 0, 0,
     732 * kGB, 16 * kGB, 4e-6, 4, "nvlink1", "pcie3"},
    // K80 (NVIDIA Tesla K80 datasheet): a board of two GK210 GPUs, each a device of its own; the
    // datasheet's board figures with GPU Boost (8.73 TFLOP/s FP32, 2.91 FP64, 480 GB/s GDDR5, 24 GB) halved
    // per GPU: 2496 cores x 2 FLOP x 875 MHz = 4.37 TFLOP/s FP32, 1.455 FP64, 240 GB/s, 12 GB. The boost
    // figure is used (not the 560 MHz base clock, 2.8 TFLOP/s) because it is the datasheet's peak, as for
    // every other entry. No FP16 arithmetic path (FP16 runs at the FP32 rate); no NVLink; each board's PCIe
    // Gen3 switch joins its two GPUs to the host.
    {"k80", "NVIDIA Tesla K80, one GK210 GPU of the dual-GPU board", GpuArch::kKepler, 1.455 * T, 4.365 * T,
     0, 0, 0, 0, 240 * kGB, 12 * kGB, 4e-6, 0, "", "pcie3"},
    // One x86 server core as the device of an emulated cluster (strata validate: one MPI rank per core). Two
    // 256-bit FMA units per core (Intel 64 and IA-32 Architectures Optimization Reference Manual) give 16
    // FP64 and 32 FP32 FLOP per cycle, at an assumed 2.5 GHz; ~10 GB/s is one core's typical STREAM
    // bandwidth; the 256-bit vectors hold 8 FP32 accumulators (GemmTile). The collectives validate
    // measures use none of these figures.
    // clang-format off
    {"host-cpu", "One host CPU core (an MPI rank of an emulated cluster)", GpuArch::kHostCpu, 40e9, 80e9, 0,
     0, 0, 0, 10 * kGB, 4 * kGB, 0, 0, "", "pcie4", {}, GemmTile{8, 1}},
    // clang-format on
}};
}  // namespace

std::span<const GpuSpec> gpu_catalog() {
  return kCatalog;
}

const GpuSpec* find_gpu(std::string_view name) {
  for (const auto& g : kCatalog)
    if (g.name == name) return &g;
  return nullptr;
}

}  // namespace strata::hw
