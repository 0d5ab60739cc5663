// The per-element arithmetic of strata's CUDA kernels (validate/cuda_kernels.cu), as functions both nvcc
// (device code) and the host compiler (tests/validate/cuda_plan_test.cc) compile: each kernel is a loop over
// these, so running them over every index on the host checks what the kernels compute on machines without a
// GPU. Only the launch geometry and the row normalisations' block reductions stay device-only.
#pragma once

#include <cmath>
#include <cstdint>

#include "validate/cuda_kernels.h"

#ifdef __CUDACC__
#define STRATA_HOST_DEVICE __host__ __device__
#else
#define STRATA_HOST_DEVICE
#endif

namespace strata::validate::cuda {

// The element offset of dense index `i` (row-major over the view's dims) under the view's strides.
STRATA_HOST_DEVICE inline std::int64_t offset_of(const StridedView& v, std::int64_t i) {
  std::int64_t off = 0;
  for (int d = v.rank - 1; d >= 0; --d) {
    const std::int64_t extent = v.dims[d];
    off += (i % extent) * v.strides[d];
    i /= extent;
  }
  return off;
}

STRATA_HOST_DEVICE inline float apply_unary(UnaryOp op, float x) {
  switch (op) {
    case UnaryOp::kRelu:
      return x > 0.0f ? x : 0.0f;
    case UnaryOp::kSigmoid:
      return 1.0f / (1.0f + expf(-x));
    case UnaryOp::kTanh:
      return tanhf(x);
    case UnaryOp::kGelu:  // exact erf form, as the reference (models/ops/activations.h)
      return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
    case UnaryOp::kSilu:
      return x / (1.0f + expf(-x));
    case UnaryOp::kRsqrt:
      return 1.0f / sqrtf(x);
  }
  return x;
}

STRATA_HOST_DEVICE inline float apply_binary(BinaryOp op, float x, float y) {
  return op == BinaryOp::kAdd ? x + y : op == BinaryOp::kSub ? x - y : x * y;
}

// Output element i of launch_binary.
STRATA_HOST_DEVICE inline void binary_at(BinaryOp op, const StridedView& a, const float* pa,
                                         const StridedView& b, const float* pb, const StridedView& out,
                                         float* py, std::int64_t i) {
  py[offset_of(out, i)] = apply_binary(op, pa[offset_of(a, i)], pb[offset_of(b, i)]);
}

// Element i of launch_copy.
STRATA_HOST_DEVICE inline void copy_at(const StridedView& src, const float* ps, const StridedView& dst,
                                       float* pd, std::int64_t i) {
  pd[offset_of(dst, i)] = ps[offset_of(src, i)];
}

// Output element j of launch_reduce (`count` reduced elements).
STRATA_HOST_DEVICE inline void reduce_at(const StridedView& kept, const StridedView& reduced, bool mean,
                                         const float* x, float* y, std::int64_t j, std::int64_t count) {
  const float* base = x + offset_of(kept, j);
  float sum = 0.0f;
  for (std::int64_t r = 0; r < count; ++r) sum += base[offset_of(reduced, r)];
  y[j] = mean ? sum / static_cast<float>(count) : sum;
}

// Element i of a normalised row, given the row's mean (0 for rmsnorm) and reciprocal standard deviation.
STRATA_HOST_DEVICE inline float normalise(float x, float mean, float rstd, const float* gamma,
                                          const float* beta, std::int64_t i) {
  return (x - mean) * rstd * gamma[i] + (beta ? beta[i] : 0.0f);
}

// Output element i (dense over [planes, oh, ow]) of launch_pool.
STRATA_HOST_DEVICE inline float pool_at(const PoolWindow& p, const float* x, std::int64_t i) {
  const std::int64_t ox = i % p.ow, oy = (i / p.ow) % p.oh, plane = i / (p.ow * p.oh);
  const std::int64_t ys = oy * p.sh - p.pt, xs = ox * p.sw - p.pl;
  const std::int64_t ye_pad = ys + p.kh < p.h + p.pb ? ys + p.kh : p.h + p.pb;
  const std::int64_t xe_pad = xs + p.kw < p.w + p.pr ? xs + p.kw : p.w + p.pr;
  const std::int64_t y0 = ys > 0 ? ys : 0, y1 = ye_pad < p.h ? ye_pad : p.h;
  const std::int64_t x0 = xs > 0 ? xs : 0, x1 = xe_pad < p.w ? xe_pad : p.w;
  const float* in = x + plane * p.h * p.w;
  if (!p.avg) {
    float best = in[y0 * p.w + x0];
    for (std::int64_t y = y0; y < y1; ++y)
      for (std::int64_t xx = x0; xx < x1; ++xx) best = in[y * p.w + xx] > best ? in[y * p.w + xx] : best;
    return best;
  }
  float sum = 0.0f;
  for (std::int64_t y = y0; y < y1; ++y)
    for (std::int64_t xx = x0; xx < x1; ++xx) sum += in[y * p.w + xx];
  const std::int64_t count = p.include_pad ? (ye_pad - ys) * (xe_pad - xs) : (y1 - y0) * (x1 - x0);
  return sum / static_cast<float>(count);
}

// The last key row `row` of launch_row_softmax sees (models/ops/normalization.cc softmax_kernel's `limit`,
// clipped to the row): n - 1 unless causal, else (row mod q_len) + shift; below 0 when it sees none.
STRATA_HOST_DEVICE inline std::int64_t softmax_last_key(const RowSoftmax& p, std::int64_t row) {
  if (!p.causal) return p.n - 1;
  const std::int64_t last = row % p.q_len + p.shift;
  return last < p.n - 1 ? last : p.n - 1;
}

// Element k of a softmax row given the row's max over its visible keys and the reciprocal of the sum of
// their exponentials: exp(x - max) / sum where visible, 0 elsewhere (NaN where no key is visible: 0 · inf).
STRATA_HOST_DEVICE inline float softmax_element(float x, float row_max, float inv_sum, bool visible) {
  return (visible ? expf(x - row_max) : 0.0f) * inv_sum;
}

// Output element i (dense over [rows, d]) of launch_gather_rows.
STRATA_HOST_DEVICE inline float gather_at(const float* index, const float* table, std::int64_t vocab,
                                          std::int64_t d, std::int64_t i) {
  const float f = index[i / d];
  std::int64_t row = static_cast<std::int64_t>(f < 0.0f ? f - 0.5f : f + 0.5f);  // nearest, as llround
  if (row < 0) row += vocab;
  return row >= 0 && row < vocab ? table[row * d + i % d] : NAN;
}

}  // namespace strata::validate::cuda
