#include "sim/compute_model.h"

#include <algorithm>

namespace strata::sim {

double RooflineModel::duration(const ComputeWork& work, const hw::GpuSpec& gpu) const {
  const double compute = work.flops > 0 ? work.flops / gpu.peak_flops(work.dtype) : 0.0;
  const double memory = work.mem_bytes > 0 ? work.mem_bytes / gpu.hbm_bandwidth : 0.0;
  return gpu.launch_overhead + std::max(compute, memory);
}

}  // namespace strata::sim
