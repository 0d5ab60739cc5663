// Normalizations and softmax: batchnorm (inference form: given running statistics), layernorm (over the
// trailing dims from `axis`), rmsnorm (over the last dim), softmax (optionally causal), and their gradients.
#include "models/ops/common.h"
#include "models/ops/parallel_dims.h"
#include "models/train/grad_context.h"

namespace strata::models::ops {
namespace {

template <class T>
T from_d(double v) {
  return Num<T>::from_double(v);
}

// ---------------- batchnorm: inputs x (N,C,...), scale, bias, mean, var (each [C]) ----------------
std::vector<TensorType> bn_shape(std::span<const TensorType> in, const Attrs&) {
  expect_min_rank(in[0], 2, "input");
  const Shape ch{in[0].shape[1]};
  for (std::size_t i = 1; i < 5; ++i)
    if (in[i].shape != ch)
      shape_fail(fmt::format("input {} must have shape [{}], got {}", i, ch[0], shape_str(in[i].shape)));
  return {in[0]};
}
double bn_flops(std::span<const TensorType> in, std::span<const TensorType>, const Attrs&) {
  return 2.0 * static_cast<double>(in[0].numel());  // folded to one multiply-add per element
}
template <class T>
void bn_kernel(const KernelCall<T>& c) {
  const auto& s = *c.in[0].shape;
  const std::int64_t ch = s[1], inner = numel(s) / (s[0] * ch);
  const T eps = from_d<T>(c.attrs.f("epsilon"));
  for (std::int64_t k = 0; k < ch; ++k) {
    const T mul = c.in[1][k] * Num<T>::rsqrt(c.in[4][k] + eps);
    const T add = c.in[2][k] - c.in[3][k] * mul;
    for (std::int64_t n = 0; n < s[0]; ++n) {
      const std::int64_t base = (n * ch + k) * inner;
      for (std::int64_t i = 0; i < inner; ++i) c.out[0][base + i] = c.in[0][base + i] * mul + add;
    }
  }
}
// batchnorm_grad(x, dy, scale, mean, var) -> dx, dscale, dbias
std::vector<TensorType> bn_grad_shape(std::span<const TensorType> in, const Attrs&) {
  if (in[0].shape != in[1].shape) shape_fail("x and dy differ");
  return {in[0], in[2], in[2]};
}
template <class T>
void bn_grad_kernel(const KernelCall<T>& c) {
  const auto& s = *c.in[0].shape;
  const std::int64_t ch = s[1], inner = numel(s) / (s[0] * ch);
  const T eps = from_d<T>(c.attrs.f("epsilon"));
  for (std::int64_t k = 0; k < ch; ++k) {
    const T r = Num<T>::rsqrt(c.in[4][k] + eps);
    const T mul = c.in[2][k] * r;
    T ds{}, db{};
    for (std::int64_t n = 0; n < s[0]; ++n) {
      const std::int64_t base = (n * ch + k) * inner;
      for (std::int64_t i = 0; i < inner; ++i) {
        const T dy = c.in[1][base + i];
        c.out[0][base + i] = dy * mul;
        ds += dy * (c.in[0][base + i] - c.in[3][k]) * r;
        db += dy;
      }
    }
    c.out[1][k] = ds;
    c.out[2][k] = db;
  }
}
void bn_grad(GradContext& c) {
  if (!c.need(0) && !c.need(1) && !c.need(2)) return;
  const auto g = c.emit_multi("batchnorm_grad", {c.x(0), c.dout(), c.x(1), c.x(3), c.x(4)},
                              {{"epsilon", c.fwd.attrs.f("epsilon")}});
  for (int i = 0; i < 3; ++i)
    if (c.need(i)) c.set_dx(i, g[static_cast<std::size_t>(i)]);
}

// ---------------- layernorm: x, gamma[, beta] over dims [axis, rank) ----------------
AxisSplit rows(const Shape& s, std::int64_t axis_attr) {
  const int axis = norm_axis(axis_attr, static_cast<int>(s.size()));
  AxisSplit r;
  // Checked: with a zero dimension elsewhere the other dimensions' product need not fit in int64.
  r.outer = numel(std::span<const std::int64_t>(s).first(u(axis)));
  r.inner = numel(std::span<const std::int64_t>(s).subspan(u(axis)));
  return r;
}
std::vector<TensorType> ln_shape(std::span<const TensorType> in, const Attrs& a) {
  expect_min_rank(in[0], 1, "input");
  const int axis = norm_axis(a.i("axis"), in[0].rank());
  const Shape norm(in[0].shape.begin() + axis, in[0].shape.end());
  for (std::size_t i = 1; i < in.size(); ++i)
    if (in[i].shape != norm)
      shape_fail(fmt::format("input {} must have the normalized shape {}, got {}", i, shape_str(norm),
                             shape_str(in[i].shape)));
  return {in[0]};
}
double norm_flops(std::span<const TensorType> in, std::span<const TensorType>, const Attrs&) {
  return 8.0 * static_cast<double>(in[0].numel());
}
template <class T>
struct RowStats {
  T mean, rstd;
};
template <class T>
RowStats<T> ln_stats(const T* x, std::int64_t n, T eps) {
  const T inv_n = Num<T>::inv(Num<T>::from_int(n));
  T sum{};
  for (std::int64_t i = 0; i < n; ++i) sum += x[i];
  const T mean = sum * inv_n;
  T var{};
  for (std::int64_t i = 0; i < n; ++i) var += (x[i] - mean) * (x[i] - mean);
  return {mean, Num<T>::rsqrt(var * inv_n + eps)};
}
template <class T>
void ln_kernel(const KernelCall<T>& c) {
  const auto r = rows(*c.in[0].shape, c.attrs.i("axis"));
  const T eps = from_d<T>(c.attrs.f("epsilon"));
  for (std::int64_t o = 0; o < r.outer; ++o) {
    const T* x = c.in[0].data + o * r.inner;
    T* y = c.out[0].data + o * r.inner;
    const auto st = ln_stats(x, r.inner, eps);
    for (std::int64_t i = 0; i < r.inner; ++i) {
      y[i] = (x[i] - st.mean) * st.rstd * c.in[1][i];
      if (c.in.size() == 3) y[i] += c.in[2][i];
    }
  }
}
// layernorm_grad(x, dy, gamma) -> dx, dgamma, dbeta
std::vector<TensorType> ln_grad_shape(std::span<const TensorType> in, const Attrs& a) {
  if (in[0].shape != in[1].shape) shape_fail("x and dy differ");
  ln_shape(std::vector<TensorType>{in[0], in[2]}, a);
  return {in[0], in[2], in[2]};
}
template <class T>
void ln_grad_kernel(const KernelCall<T>& c) {
  const auto r = rows(*c.in[0].shape, c.attrs.i("axis"));
  const T eps = from_d<T>(c.attrs.f("epsilon"));
  const T inv_n = Num<T>::inv(Num<T>::from_int(r.inner));
  for (std::int64_t i = 0; i < r.inner; ++i) c.out[1][i] = c.out[2][i] = T{};
  for (std::int64_t o = 0; o < r.outer; ++o) {
    const T* x = c.in[0].data + o * r.inner;
    const T* dy = c.in[1].data + o * r.inner;
    T* dx = c.out[0].data + o * r.inner;
    const auto st = ln_stats(x, r.inner, eps);
    T mg{}, mgx{};
    for (std::int64_t i = 0; i < r.inner; ++i) {
      const T xhat = (x[i] - st.mean) * st.rstd;
      const T g = dy[i] * c.in[2][i];
      mg += g;
      mgx += g * xhat;
      c.out[1][i] += dy[i] * xhat;
      c.out[2][i] += dy[i];
    }
    mg *= inv_n;
    mgx *= inv_n;
    for (std::int64_t i = 0; i < r.inner; ++i) {
      const T xhat = (x[i] - st.mean) * st.rstd;
      dx[i] = st.rstd * (dy[i] * c.in[2][i] - mg - xhat * mgx);
    }
  }
}
void ln_grad(GradContext& c) {
  const auto g = c.emit_multi("layernorm_grad", {c.x(0), c.dout(), c.x(1)},
                              {{"axis", c.fwd.attrs.i("axis")}, {"epsilon", c.fwd.attrs.f("epsilon")}});
  for (std::size_t i = 0; i < c.fwd.inputs.size(); ++i)
    if (c.need(static_cast<int>(i))) c.set_dx(static_cast<int>(i), g[i]);
}

// ---------------- rmsnorm: x, gamma over the last dim ----------------
std::vector<TensorType> rms_shape(std::span<const TensorType> in, const Attrs&) {
  expect_min_rank(in[0], 1, "input");
  if (in[1].shape != Shape{in[0].shape.back()})
    shape_fail(fmt::format("gamma must have shape [{}], got {}", in[0].shape.back(), shape_str(in[1].shape)));
  return {in[0]};
}
template <class T>
T rms_rstd(const T* x, std::int64_t n, T eps) {
  T ss{};
  for (std::int64_t i = 0; i < n; ++i) ss += x[i] * x[i];
  return Num<T>::rsqrt(ss * Num<T>::inv(Num<T>::from_int(n)) + eps);
}
template <class T>
void rms_kernel(const KernelCall<T>& c) {
  const std::int64_t n = c.in[0].shape->back(), outer = c.in[0].numel / std::max<std::int64_t>(n, 1);
  const T eps = from_d<T>(c.attrs.f("epsilon"));
  for (std::int64_t o = 0; o < outer; ++o) {
    const T* x = c.in[0].data + o * n;
    const T r = rms_rstd(x, n, eps);
    for (std::int64_t i = 0; i < n; ++i) c.out[0][o * n + i] = x[i] * r * c.in[1][i];
  }
}
std::vector<TensorType> rms_grad_shape(std::span<const TensorType> in, const Attrs& a) {
  if (in[0].shape != in[1].shape) shape_fail("x and dy differ");
  rms_shape(std::vector<TensorType>{in[0], in[2]}, a);
  return {in[0], in[2]};
}
template <class T>
void rms_grad_kernel(const KernelCall<T>& c) {  // (x, dy, gamma) -> dx, dgamma
  const std::int64_t n = c.in[0].shape->back(), outer = c.in[0].numel / std::max<std::int64_t>(n, 1);
  const T eps = from_d<T>(c.attrs.f("epsilon"));
  const T inv_n = Num<T>::inv(Num<T>::from_int(n));
  for (std::int64_t i = 0; i < n; ++i) c.out[1][i] = T{};
  for (std::int64_t o = 0; o < outer; ++o) {
    const T* x = c.in[0].data + o * n;
    const T* dy = c.in[1].data + o * n;
    const T r = rms_rstd(x, n, eps);
    T mgx{};
    for (std::int64_t i = 0; i < n; ++i) {
      mgx += dy[i] * c.in[2][i] * x[i];
      c.out[1][i] += dy[i] * x[i] * r;
    }
    mgx *= inv_n;
    for (std::int64_t i = 0; i < n; ++i) c.out[0][o * n + i] = r * (dy[i] * c.in[2][i] - x[i] * r * r * mgx);
  }
}
void rms_grad(GradContext& c) {
  const auto g =
      c.emit_multi("rmsnorm_grad", {c.x(0), c.dout(), c.x(1)}, {{"epsilon", c.fwd.attrs.f("epsilon")}});
  for (int i = 0; i < 2; ++i)
    if (c.need(i)) c.set_dx(i, g[static_cast<std::size_t>(i)]);
}

// ---------------- softmax ----------------
std::vector<TensorType> softmax_shape(std::span<const TensorType> in, const Attrs& a) {
  const int axis = norm_axis(a.i("axis"), in[0].rank());
  if (a.i("causal") && (in[0].rank() < 2 || axis != in[0].rank() - 1))
    shape_fail("causal softmax needs rank >= 2 and axis = last");
  return {in[0]};
}
double softmax_flops(std::span<const TensorType> in, std::span<const TensorType>, const Attrs&) {
  return 5.0 * static_cast<double>(in[0].numel());
}
template <class T>
void softmax_kernel(const KernelCall<T>& c) {
  const auto& s = *c.in[0].shape;
  const int axis = norm_axis(c.attrs.i("axis"), static_cast<int>(s.size()));
  const auto sp = split_at(s, axis);
  const bool causal = c.attrs.i("causal") != 0;
  const std::int64_t q_len = causal ? s[s.size() - 2] : 0, shift = causal ? sp.dim - q_len : 0;
  for (std::int64_t o = 0; o < sp.outer; ++o)
    for (std::int64_t in = 0; in < sp.inner; ++in) {
      const T* x = c.in[0].data + o * sp.dim * sp.inner + in;
      T* y = c.out[0].data + o * sp.dim * sp.inner + in;
      // Causal (last axis): query row q = o mod q_len may attend to keys k <= q + shift.
      const std::int64_t limit = causal ? (o % q_len) + shift : sp.dim - 1;
      T mx = x[0];
      if constexpr (std::is_same_v<T, double>)
        for (std::int64_t k = 1; k <= limit; ++k) mx = std::max(mx, x[k * sp.inner]);
      T sum{};
      for (std::int64_t k = 0; k < sp.dim; ++k) {
        T e{};
        if (k <= limit) {
          if constexpr (std::is_same_v<T, double>)
            e = std::exp(x[k * sp.inner] - mx);
          else
            e = Num<T>::exp(x[k * sp.inner]);
        }
        y[k * sp.inner] = e;
        sum += e;
      }
      const T inv = Num<T>::inv(sum);
      for (std::int64_t k = 0; k < sp.dim; ++k) y[k * sp.inner] = y[k * sp.inner] * inv;
    }
}
// softmax_grad(y, dy) = y * (dy - sum(dy * y)) along the axis
std::vector<TensorType> softmax_grad_shape(std::span<const TensorType> in, const Attrs& a) {
  if (in[0].shape != in[1].shape) shape_fail("y and dy differ");
  norm_axis(a.i("axis"), in[0].rank());
  return {in[0]};
}
template <class T>
void softmax_grad_kernel(const KernelCall<T>& c) {
  const auto sp =
      split_at(*c.in[0].shape, norm_axis(c.attrs.i("axis"), static_cast<int>(c.in[0].shape->size())));
  for (std::int64_t o = 0; o < sp.outer; ++o)
    for (std::int64_t in = 0; in < sp.inner; ++in) {
      const std::int64_t base = o * sp.dim * sp.inner + in;
      T dot{};
      for (std::int64_t k = 0; k < sp.dim; ++k)
        dot += c.in[0][base + k * sp.inner] * c.in[1][base + k * sp.inner];
      for (std::int64_t k = 0; k < sp.dim; ++k) {
        const std::int64_t i = base + k * sp.inner;
        c.out[0][i] = c.in[0][i] * (c.in[1][i] - dot);
      }
    }
}
void softmax_grad(GradContext& c) {
  if (c.need(0)) c.set_dx(0, c.emit("softmax_grad", {c.y(0), c.dout()}, {{"axis", c.fwd.attrs.i("axis")}}));
}

const AttrSpec kEps{"epsilon", AttrKind::kFloat, 1e-5, "added to the variance"};
const AttrSpec kLnAxis{"axis", AttrKind::kInt, std::int64_t{-1}, "first normalized dimension"};

// Parallelization traits (OpDef::parallel_dims): the axes a normalization or softmax does not reduce over;
// axis 0 is the batch.
std::vector<ParallelDim> axes_except(const TensorType& x, int first_reduced, int last_reduced) {
  static constexpr std::string_view kNames[] = {"batch", "axis1", "axis2", "axis3",
                                                "axis4", "axis5", "axis6", "axis7"};
  std::vector<ParallelDim> d;
  for (int a = 0; a < x.rank() && a < 8; ++a) {
    if (a >= first_reduced && a <= last_reduced) continue;
    d.push_back({kNames[a],
                 a == 0 ? ParallelDimKind::kSample : ParallelDimKind::kAttribute,
                 x.shape[static_cast<std::size_t>(a)],
                 a,
                 {{0, a}}});
  }
  return d;
}
// batchnorm (given statistics): the batch, and the channels, which split scale, bias, mean and var too.
std::vector<ParallelDim> bn_parallel_dims(std::span<const TensorType> in, std::span<const TensorType>,
                                          const Attrs&) {
  return {
      {"batch", ParallelDimKind::kSample, in[0].shape[0], 0, {{0, 0}}},
      {"channels", ParallelDimKind::kParameter, in[0].shape[1], 1, {{0, 1}, {1, 0}, {2, 0}, {3, 0}, {4, 0}}}};
}
std::vector<ParallelDim> ln_parallel_dims(std::span<const TensorType> in, std::span<const TensorType>,
                                          const Attrs& a) {
  return axes_except(in[0], norm_axis(a.i("axis"), in[0].rank()), in[0].rank() - 1);
}
std::vector<ParallelDim> rms_parallel_dims(std::span<const TensorType> in, std::span<const TensorType>,
                                           const Attrs&) {
  return axes_except(in[0], in[0].rank() - 1, in[0].rank() - 1);
}
std::vector<ParallelDim> softmax_parallel_dims(std::span<const TensorType> in, std::span<const TensorType>,
                                               const Attrs& a) {
  const int axis = norm_axis(a.i("axis"), in[0].rank());
  return axes_except(in[0], axis, axis);
}

}  // namespace

void register_normalization_ops(OpRegistry& r) {
  r.add({.name = "batchnorm",
         .symbol = "batchnorm",
         .summary = "batch normalization with given statistics: (x - mean) * scale / sqrt(var + eps) + bias",
         .kind = OpKind::kReduction,
         .min_inputs = 5,
         .max_inputs = 5,
         .attrs = {kEps},
         .shape = bn_shape,
         .flops = bn_flops,
         .kernel = STRATA_KERNELS(bn_kernel),
         .grad = bn_grad,
         .onnx_op = "BatchNormalization",
         .parallel_dims = bn_parallel_dims});
  r.add({.name = "batchnorm_grad",
         .symbol = "batchnorm_grad",
         .summary = "(x, dy, scale, mean, var) -> dx, dscale, dbias",
         .kind = OpKind::kReduction,
         .min_inputs = 5,
         .max_inputs = 5,
         .attrs = {kEps},
         .backward = true,
         .shape = bn_grad_shape,
         .flops = bn_flops,
         .kernel = STRATA_KERNELS(bn_grad_kernel)});
  r.add({.name = "layernorm",
         .symbol = "layernorm",
         .summary = "layer normalization over dims [axis, rank)",
         .kind = OpKind::kReduction,
         .min_inputs = 2,
         .max_inputs = 3,
         .attrs = {kLnAxis, kEps},
         .shape = ln_shape,
         .flops = norm_flops,
         .kernel = STRATA_KERNELS(ln_kernel),
         .grad = ln_grad,
         .onnx_op = "LayerNormalization",
         .parallel_dims = ln_parallel_dims});
  r.add({.name = "layernorm_grad",
         .symbol = "layernorm_grad",
         .summary = "(x, dy, gamma) -> dx, dgamma, dbeta",
         .kind = OpKind::kReduction,
         .min_inputs = 3,
         .max_inputs = 3,
         .attrs = {kLnAxis, kEps},
         .backward = true,
         .shape = ln_grad_shape,
         .flops = norm_flops,
         .kernel = STRATA_KERNELS(ln_grad_kernel)});
  r.add({.name = "rmsnorm",
         .symbol = "rmsnorm",
         .summary = "x / sqrt(mean(x^2) + eps) * gamma over the last dim",
         .kind = OpKind::kReduction,
         .min_inputs = 2,
         .max_inputs = 2,
         .attrs = {kEps},
         .shape = rms_shape,
         .flops = norm_flops,
         .kernel = STRATA_KERNELS(rms_kernel),
         .grad = rms_grad,
         .parallel_dims = rms_parallel_dims});
  r.add({.name = "rmsnorm_grad",
         .symbol = "rmsnorm_grad",
         .summary = "(x, dy, gamma) -> dx, dgamma",
         .kind = OpKind::kReduction,
         .min_inputs = 3,
         .max_inputs = 3,
         .attrs = {kEps},
         .backward = true,
         .shape = rms_grad_shape,
         .flops = norm_flops,
         .kernel = STRATA_KERNELS(rms_grad_kernel)});
  r.add({.name = "softmax",
         .symbol = "softmax",
         .summary = "softmax along an axis; causal=1 masks keys after the query",
         .kind = OpKind::kReduction,
         .attrs = {{"axis", AttrKind::kInt, std::int64_t{-1}, "softmax axis"},
                   {"causal", AttrKind::kInt, std::int64_t{0}, "1: causal mask over the last two dims"}},
         .shape = softmax_shape,
         .flops = softmax_flops,
         .kernel = STRATA_KERNELS(softmax_kernel),
         .grad = softmax_grad,
         .onnx_op = "Softmax",
         .parallel_dims = softmax_parallel_dims});
  r.add({.name = "softmax_grad",
         .symbol = "softmax_grad",
         .summary = "(y, dy) -> y * (dy - sum(dy * y))",
         .kind = OpKind::kReduction,
         .min_inputs = 2,
         .max_inputs = 2,
         .attrs = {{"axis", AttrKind::kInt, std::int64_t{-1}, "softmax axis"}},
         .backward = true,
         .shape = softmax_grad_shape,
         .flops = softmax_flops,
         .kernel = STRATA_KERNELS(softmax_grad_kernel)});
}

}  // namespace strata::models::ops
