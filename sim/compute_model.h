// Compute cost: how long a compute task takes on a GPU. A task graph carries each kernel's work
// description; the simulator asks the ComputeCost given in SimOptions for its duration, so the cost model
// (models' roofline with per-operator efficiencies and measured profiles, models/cost/cost_model.h) decides
// and the simulator stays independent of operators.
#pragma once

#include <cstdint>

#include "hw/gpu_spec.h"

namespace strata::sim {

struct ComputeWork {
  double flops = 0;      // floating-point operations
  double mem_bytes = 0;  // bytes moved to/from HBM
  hw::DType dtype = hw::DType::kFp16;
  // The cost model's own handle for the kernel (models::KernelCost: an operator node it registered);
  // -1: none.
  std::int32_t kernel = -1;
};

class ComputeCost {
 public:
  virtual ~ComputeCost() = default;
  // Seconds for one execution of `work` on `gpu`.
  virtual double seconds(const ComputeWork& work, const hw::GpuSpec& gpu) const = 0;
};

}  // namespace strata::sim
