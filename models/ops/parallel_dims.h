// Helpers for the operators' parallelization trait (OpDef::parallel_dims, models/ir/op_def.h): which input
// axes run along an output axis, and the dimension lists shared by several operator families.
#pragma once

#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "models/ir/op_def.h"

namespace strata::models::ops {

// (input, axis) pairs whose axis runs along output axis `out_axis` under numpy broadcasting (right-aligned,
// same extent); broadcast inputs (extent 1 or missing axis) are needed whole.
inline std::vector<std::pair<int, int>> aligned_input_axes(std::span<const TensorType> in,
                                                           const TensorType& out, int out_axis) {
  std::vector<std::pair<int, int>> r;
  const int from_end = out.rank() - out_axis;
  for (std::size_t i = 0; i < in.size(); ++i) {
    const int a = in[i].rank() - from_end;
    if (a >= 0 && in[i].shape[static_cast<std::size_t>(a)] == out.shape[static_cast<std::size_t>(out_axis)])
      r.emplace_back(static_cast<int>(i), a);
  }
  return r;
}

// A dimension along output axis `axis` that every aligned input follows.
inline ParallelDim aligned_dim(std::span<const TensorType> in, const TensorType& out, int axis,
                               std::string_view name, ParallelDimKind kind) {
  return {name, kind, out.shape[static_cast<std::size_t>(axis)], axis, aligned_input_axes(in, out, axis)};
}

// Element-wise operators: the batch (axis 0) and the next axis (channels, sequence) as an attribute.
inline std::vector<ParallelDim> elementwise_parallel_dims(std::span<const TensorType> in,
                                                          std::span<const TensorType> out, const Attrs&) {
  std::vector<ParallelDim> d;
  if (out.empty() || out[0].rank() == 0) return d;
  d.push_back(aligned_dim(in, out[0], 0, "batch", ParallelDimKind::kSample));
  if (out[0].rank() >= 2) d.push_back(aligned_dim(in, out[0], 1, "axis1", ParallelDimKind::kAttribute));
  return d;
}

}  // namespace strata::models::ops
