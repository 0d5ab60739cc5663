// The cost model's efficiency parameters as a file (`--cost-params`), so that fitted values (`strata validate
// calibrate-cost`, docs/replay.md §3) replace the engineering priors of RooflineParams::defaults().
//
// JSON, every field checked:
//   {"format": "strata-cost-params", "version": 1,
//    "device": "host-cpu",                      // the GPU catalogue name the parameters were fitted on
//    "kinds": {"contraction": {"compute": {"max": 0.9, "half_seconds": 2e-6},
//                              "memory":  {"max": 0.8, "half_seconds": 1e-6}}, ...},
//    "ops":   {"conv2d": {...}, ...},           // per operator, wins over its kind
//    "fit":   {...}}                            // free-form provenance (what was measured, errors); not read
// Kinds not listed keep their defaults; `max` in (0, 16] (above 1 where kernels beat the device's nominal
// peak or bandwidth, e.g. a CPU's caches against its DRAM STREAM bandwidth), `half_seconds` in [0, 1].
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "models/cost/cost_model.h"

namespace strata::models {

struct CostParams {
  std::string device;  // fitted on this GPU catalogue entry (hw::GpuSpec::name)
  RooflineParams roofline;
  nlohmann::json fit;  // provenance, written back as read
};

// Throws ConfigError naming the file, the field path ("kinds.contraction.compute.max") and what was expected.
CostParams load_cost_params(const std::string& path);
CostParams parse_cost_params(std::string_view text, std::string_view source);
std::string cost_params_json(const CostParams& params);
void save_cost_params(const std::string& path, const CostParams& params);  // atomically

// The parameters a command uses: the defaults when `path` is empty, else the file's, which must have been
// fitted on `gpu` (parameters of one device are meaningless on another): ConfigError otherwise.
RooflineParams roofline_params_for(const std::string& path, std::string_view gpu);

}  // namespace strata::models
