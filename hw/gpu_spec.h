// Per-GPU-model device specifications: the numbers the roofline compute model and NCCL-style tuning need.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace strata::hw {

enum class DType { kFp64, kFp32, kTf32, kFp16, kBf16, kFp8 };
inline constexpr DType kAllDTypes[] = {DType::kFp64, DType::kFp32, DType::kTf32,
                                       DType::kFp16, DType::kBf16, DType::kFp8};
std::string_view dtype_name(DType t);
std::optional<DType> parse_dtype(std::string_view name);
// Bytes per element (fp8 = 1, fp16/bf16 = 2, fp32/tf32 = 4, fp64 = 8).
int dtype_bytes(DType t);

// GPU generation; NCCL's tuning constants are indexed by it.
// kHostCpu: a CPU core standing in for a device (one MPI rank of an emulated cluster, strata validate).
enum class GpuArch { kKepler, kPascal, kVolta, kAmpere, kHopper, kBlackwell, kHostCpu };
std::string_view arch_name(GpuArch a);

// One cache level of a device (GpuSpec::caches).
struct CacheLevel {
  // bytes: the working set at which the rate is halfway (geometrically) between `bandwidth` and the next
  // level's; it is `bandwidth` up to capacity / 2 and the next level's from 2 capacity
  // (GpuSpec::bandwidth_for)
  double capacity = 0;
  double bandwidth = 0;  // bytes/s
  bool operator==(const CacheLevel&) const = default;
};

// The smallest tile a device's GEMM-like kernels compute whole, in output channels (n) and reduction depth
// (k): a grouped convolution runs one implicit GEMM per group, and a group narrower than the tile computes
// the padding (models::grouped_conv_tile_utilization). GPUs: the smallest CTA tiles of cuDNN/CUTLASS
// implicit-GEMM kernels, about 32 x 16. CPUs: one vector register of f32 accumulators across output
// channels (16 with AVX-512, 8 with AVX2), with no padding of the reduction (k = 1): it is a loop of
// broadcast-FMAs, one input channel at a time.
struct GemmTile {
  int n = 32;
  int k = 16;
  bool operator==(const GemmTile&) const = default;
};

struct GpuSpec {
  std::string name;         // catalogue key, e.g. "h100-sxm"
  std::string description;  // e.g. "NVIDIA H100 SXM5 80 GB"
  GpuArch arch;
  // Peak dense throughput per dtype in FLOP/s; 0 where the GPU has no such path (e.g. TF32 on V100).
  double peak_fp64 = 0, peak_fp32 = 0, peak_tf32 = 0, peak_fp16 = 0, peak_bf16 = 0, peak_fp8 = 0;
  double hbm_bandwidth = 0;    // bytes/s
  double hbm_capacity = 0;     // bytes
  double launch_overhead = 0;  // seconds per kernel launch
  int nvlink_links = 0;        // NVLink links per GPU
  std::string nvlink_kind;     // link-kind name of its NVLink generation ("" if none)
  std::string host_link_kind;  // link-kind name of its PCIe host interface
  // Caches in front of that memory, for devices whose kernels run from cache (a CPU's L2 and last-level
  // cache: `strata validate host` measures them), smallest first: each larger and no faster than the one
  // before. A kernel moves its bytes at the bandwidth of the smallest level they fit in, at hbm_bandwidth
  // when they fit in none, falling smoothly across each level's capacity (bandwidth_for;
  // models/cost/cost_model.h). Empty: not modelled (the GPU catalogue entries).
  std::vector<CacheLevel> caches = {};
  GemmTile gemm_tile = {};  // YAML gpu.gemm_tile: {n, k}; `strata validate host` writes the CPU's

  // The bandwidth a kernel moving `bytes` gets: the smallest cache level holding them, else hbm_bandwidth;
  // within a factor of 2 of a level's capacity, between its bandwidth and the next's (log-linear in bytes).
  [[nodiscard]] double bandwidth_for(double bytes) const;

  // Peak for a dtype; falls back to the next-wider dtype the hardware runs when the dtype has no fast path
  // (e.g. TF32 requested on V100 runs at FP32 rate), so a cost is always defined.
  [[nodiscard]] double peak_flops(DType t) const;
};

// The built-in catalogue (V100, A100 40/80 GB, H100 SXM, H200, B200, and host-cpu for emulated clusters).
std::span<const GpuSpec> gpu_catalog();
const GpuSpec* find_gpu(std::string_view name);

}  // namespace strata::hw
