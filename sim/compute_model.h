// Compute cost: how long a kernel takes on a GPU. The simulator asks a ComputeCostModel, so measured
// profiles can replace the roofline estimate without touching the simulator (no strata component measures
// them yet).
#pragma once

#include <string_view>

#include "hw/gpu_spec.h"

namespace strata::sim {

struct ComputeWork {
  double flops = 0;      // floating-point operations
  double mem_bytes = 0;  // bytes moved to/from HBM
  hw::DType dtype = hw::DType::kFp16;
};

class ComputeCostModel {
 public:
  virtual ~ComputeCostModel() = default;
  virtual std::string_view name() const = 0;
  // Seconds for one kernel on `gpu`.
  virtual double duration(const ComputeWork& work, const hw::GpuSpec& gpu) const = 0;
};

// Roofline: launch overhead + max(flops / peak(dtype), bytes / HBM bandwidth). Optimistic by design
// (peak numbers); calibration from measured profiles tightens it.
class RooflineModel final : public ComputeCostModel {
 public:
  std::string_view name() const override { return "roofline"; }
  double duration(const ComputeWork& work, const hw::GpuSpec& gpu) const override;
};

}  // namespace strata::sim
