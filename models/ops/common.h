// Helpers shared by the operator families: shape checks that throw ShapeError, broadcasting, axis
// normalization, and the default byte count.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "models/ir/numeric.h"
#include "models/ir/op_def.h"

namespace strata::models::ops {

inline std::size_t u(std::int64_t i) {
  return static_cast<std::size_t>(i);
}

[[noreturn]] inline void shape_fail(const std::string& msg) {
  throw ShapeError(msg);
}

inline void expect_rank(const TensorType& t, int rank, std::string_view what) {
  if (t.rank() != rank)
    shape_fail(fmt::format("{} must have rank {}, got {}", what, rank, shape_str(t.shape)));
}
inline void expect_min_rank(const TensorType& t, int rank, std::string_view what) {
  if (t.rank() < rank)
    shape_fail(fmt::format("{} must have rank >= {}, got {}", what, rank, shape_str(t.shape)));
}
// SplitAxisFn of element-wise operators: the axis runs unchanged through every input of the output's shape
// (not through broadcast ones).
inline SplitAxisTrace split_axis_same_shape(std::span<const TensorType> in, const TensorType& out,
                                            const Attrs&, std::int64_t axis) {
  SplitAxisTrace t;
  for (std::size_t i = 0; i < in.size(); ++i)
    if (in[i].shape == out.shape) t.carried.emplace_back(static_cast<int>(i), axis);
  return t;
}

// SplitAxisFn part of windowed NCHW operators (convolution, pooling): spatial axis 2 or 3 runs through
// unchanged where the stride along it is 1 and the size is kept (SAME padding).
inline SplitAxisTrace spatial_split_axis(const TensorType& in, const TensorType& out, const Attrs& a,
                                         std::int64_t axis) {
  if ((axis != 2 && axis != 3) || in.rank() != 4 || out.rank() != 4) return {};
  const auto& strides = a.ints("strides");
  const auto i = static_cast<std::size_t>(axis);
  if (strides.size() != 2 || strides[i - 2] != 1 || in.shape[i] != out.shape[i]) return {};
  return {std::nullopt, {{0, axis}}};
}

// Axis in [-rank, rank) -> [0, rank).
inline int norm_axis(std::int64_t axis, int rank, std::string_view what = "axis") {
  if (axis < -rank || axis >= rank)
    shape_fail(fmt::format("{} {} out of range for rank {}", what, axis, rank));
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}
inline std::vector<int> norm_axes(const Ints& axes, int rank) {
  std::vector<int> out;
  for (auto a : axes) out.push_back(norm_axis(a, rank));
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end()) shape_fail("repeated axis");
  return out;
}
// Numpy broadcasting of two shapes.
inline Shape broadcast_shapes(const Shape& a, const Shape& b) {
  const std::size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (std::size_t i = 0; i < r; ++i) {
    const std::int64_t da = i + a.size() >= r ? a[i + a.size() - r] : 1;
    const std::int64_t db = i + b.size() >= r ? b[i + b.size() - r] : 1;
    if (da != db && da != 1 && db != 1)
      shape_fail(fmt::format("shapes {} and {} do not broadcast", shape_str(a), shape_str(b)));
    out[i] = da == 1 ? db : da;
  }
  return out;
}
// Strides to read `in` (broadcast) at positions of `out`: 0 along broadcast axes.
inline std::vector<std::int64_t> broadcast_strides(const Shape& in, const Shape& out) {
  std::vector<std::int64_t> s(out.size(), 0);
  const auto is = strides_of(in);
  const std::size_t off = out.size() - in.size();
  for (std::size_t i = 0; i < in.size(); ++i) s[i + off] = in[i] == 1 ? 0 : is[i];
  return s;
}

// Calls f(out_index, a_offset, b_offset) for every output element, in order.
template <class F>
void for_each_broadcast(const Shape& out, const Shape& a, const Shape& b, F&& f) {
  const std::int64_t n = numel(out);
  if (a == out && b == out) {
    for (std::int64_t i = 0; i < n; ++i) f(i, i, i);
    return;
  }
  const auto sa = broadcast_strides(a, out), sb = broadcast_strides(b, out);
  const int r = static_cast<int>(out.size());
  std::vector<std::int64_t> idx(out.size(), 0);
  std::int64_t oa = 0, ob = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    f(i, oa, ob);
    for (int d = r - 1; d >= 0; --d) {
      const auto k = static_cast<std::size_t>(d);
      if (++idx[k] < out[k]) {
        oa += sa[k];
        ob += sb[k];
        break;
      }
      oa -= sa[k] * (out[k] - 1);
      ob -= sb[k] * (out[k] - 1);
      idx[k] = 0;
    }
  }
}

inline double io_bytes(std::span<const TensorType> in, std::span<const TensorType> out) {
  double b = 0;
  for (const auto& t : in) b += t.bytes();
  for (const auto& t : out) b += t.bytes();
  return b;
}
inline double out_numel(std::span<const TensorType> out) {
  return static_cast<double>(out[0].numel());
}
inline double zero_count(std::span<const TensorType>, std::span<const TensorType>, const Attrs&) {
  return 0;
}

// Split of a shape around `axis`: outer (dims before), the axis, inner (dims after).
struct AxisSplit {
  std::int64_t outer = 1, dim = 1, inner = 1;
};
inline AxisSplit split_at(const Shape& s, int axis) {
  AxisSplit r;
  for (int i = 0; i < axis; ++i) r.outer *= s[u(i)];
  r.dim = s[u(axis)];
  for (std::size_t i = u(axis) + 1; i < s.size(); ++i) r.inner *= s[i];
  return r;
}

}  // namespace strata::models::ops
