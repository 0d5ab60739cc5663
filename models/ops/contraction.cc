// Contractions: matmul (2-D), batch_matmul (batched, broadcasting batch dimensions), conv2d (NCHW, OIHW
// weights, stride/padding/dilation/groups, optional bias, fused relu) with its two gradient operators, and
// enlarge (zero-pads a conv kernel to a larger size, centred) with its gradient.
#include <algorithm>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include "models/ops/activations.h"
#include "models/ops/common.h"
#include "models/ops/parallel_dims.h"
#include "models/ops/rule_helpers.h"
#include "models/train/grad_context.h"

namespace strata::models::ops {
namespace {

void check_activation(const Attrs& a) {
  const auto& act = a.s("activation");
  if (act != "none" && act != "relu")
    shape_fail(fmt::format("activation must be none or relu, got '{}'", act));
}
template <class T>
void apply_activation(const KernelCall<T>& c) {
  if (c.attrs.s("activation") == "relu")
    for (std::int64_t i = 0; i < c.out[0].numel; ++i) c.out[0][i] = apply_f<Relu>(c.out[0][i]);
}

// ---------------- matmul / batch_matmul ----------------
struct MatDims {
  std::int64_t m, k, n;
};
MatDims mat_dims(const TensorType& a, const TensorType& b, const Attrs& at) {
  const auto ra = a.shape.size(), rb = b.shape.size();
  const bool ta = at.i("trans_a") != 0, tb = at.i("trans_b") != 0;
  const std::int64_t m = ta ? a.shape[ra - 1] : a.shape[ra - 2], ka = ta ? a.shape[ra - 2] : a.shape[ra - 1];
  const std::int64_t kb = tb ? b.shape[rb - 1] : b.shape[rb - 2], n = tb ? b.shape[rb - 2] : b.shape[rb - 1];
  if (ka != kb)
    shape_fail(
        fmt::format("contraction dimensions differ: {} vs {} (trans_a={}, trans_b={})", ka, kb, ta, tb));
  return {m, ka, n};
}
Shape batch_of(const Shape& s) {
  return Shape(s.begin(), s.end() - 2);
}

std::vector<TensorType> matmul_shape(std::span<const TensorType> in, const Attrs& a) {
  expect_rank(in[0], 2, "a");
  expect_rank(in[1], 2, "b");
  check_activation(a);
  const auto d = mat_dims(in[0], in[1], a);
  return {TensorType{{d.m, d.n}, in[0].dtype}};
}
std::vector<TensorType> bmm_shape(std::span<const TensorType> in, const Attrs& a) {
  expect_min_rank(in[0], 2, "a");
  expect_min_rank(in[1], 2, "b");
  check_activation(a);
  const auto d = mat_dims(in[0], in[1], a);
  Shape out = broadcast_shapes(batch_of(in[0].shape), batch_of(in[1].shape));
  out.push_back(d.m);
  out.push_back(d.n);
  return {TensorType{out, in[0].dtype}};
}
double matmul_flops(std::span<const TensorType> in, std::span<const TensorType> out, const Attrs& a) {
  const auto d = mat_dims(in[0], in[1], a);
  return 2.0 * static_cast<double>(out[0].numel()) * static_cast<double>(d.k);
}

// Runs body(begin, end) over [0, n) rows, split across TBB workers when the kernel is big enough to pay for
// it. Each output element is still computed by one worker with its terms added in the same order, so the
// result is identical to the bit whatever the thread count (the reference executor's determinism).
template <class Body>
void for_rows(std::int64_t n, double flops, Body&& body) {
  constexpr double kParallelFlops = 4e6;  // below this a kernel is shorter than spreading it over workers
  if (flops < kParallelFlops || n < 2) {
    body(std::int64_t{0}, n);
    return;
  }
  tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, n),
                    [&](const tbb::blocked_range<std::int64_t>& r) { body(r.begin(), r.end()); });
}

template <class T>
void gemm(const T* a, const T* b, T* o, MatDims d, bool ta, bool tb) {
  const std::int64_t a_si = ta ? 1 : d.k, a_sk = ta ? d.m : 1;
  const std::int64_t b_sk = tb ? 1 : d.n, b_sj = tb ? d.k : 1;
  const double flops = 2.0 * static_cast<double>(d.m) * static_cast<double>(d.n) * static_cast<double>(d.k);
  if (tb && !ta) {  // rows of a against rows of b: contiguous dot products
    for_rows(d.m, flops, [&](std::int64_t i0, std::int64_t i1) {
      for (std::int64_t i = i0; i < i1; ++i)
        for (std::int64_t j = 0; j < d.n; ++j) {
          const T* arow = a + i * d.k;
          const T* brow = b + j * d.k;
          T acc{};
          for (std::int64_t k = 0; k < d.k; ++k) acc += arow[k] * brow[k];
          o[i * d.n + j] = acc;
        }
    });
    return;
  }
  for_rows(d.m, flops, [&](std::int64_t i0, std::int64_t i1) {
    for (std::int64_t i = i0; i < i1; ++i) {
      T* orow = o + i * d.n;
      for (std::int64_t j = 0; j < d.n; ++j) orow[j] = T{};
      for (std::int64_t k = 0; k < d.k; ++k) {
        const T av = a[i * a_si + k * a_sk];
        const T* brow = b + k * b_sk;
        if (b_sj == 1) {
          for (std::int64_t j = 0; j < d.n; ++j) orow[j] += av * brow[j];
        } else {
          for (std::int64_t j = 0; j < d.n; ++j) orow[j] += av * brow[j * b_sj];
        }
      }
    }
  });
}

template <class T>
void bmm_kernel(const KernelCall<T>& c) {
  const auto& sa = *c.in[0].shape;
  const auto& sb = *c.in[1].shape;
  const auto& so = *c.out[0].shape;
  const TensorType ta{sa}, tb{sb};
  const auto d = mat_dims(ta, tb, c.attrs);
  const bool tra = c.attrs.i("trans_a") != 0, trb = c.attrs.i("trans_b") != 0;
  const std::int64_t mk = d.m * d.k, kn = d.k * d.n, mn = d.m * d.n;
  for_each_broadcast(
      batch_of(so), batch_of(sa), batch_of(sb), [&](std::int64_t i, std::int64_t ia, std::int64_t ib) {
        gemm(c.in[0].data + ia * mk, c.in[1].data + ib * kn, c.out[0].data + i * mn, d, tra, trb);
      });
  apply_activation(c);
}

// y = op(a) @ op(b): da = dy @ op(b)^T and db = op(a)^T @ dy, expressed with the transpose flags.
void matmul_grad(GradContext& c) {
  ValueId dy = c.dout();
  if (c.fwd.attrs.s("activation") == "relu") dy = c.emit("relu_grad", {c.y(0), dy});
  const bool ta = c.fwd.attrs.i("trans_a") != 0, tb = c.fwd.attrs.i("trans_b") != 0;
  const std::string op(c.fwd.op->name);
  auto mm = [&](ValueId a, ValueId b, bool t1, bool t2) {
    return c.emit(op, {a, b}, {{"trans_a", std::int64_t{t1}}, {"trans_b", std::int64_t{t2}}});
  };
  if (c.need(0)) c.set_dx(0, ta ? mm(c.x(1), dy, tb, true) : mm(dy, c.x(1), false, !tb));
  if (c.need(1)) c.set_dx(1, tb ? mm(dy, c.x(0), true, ta) : mm(c.x(0), dy, !ta, false));
}

// ---------------- conv2d ----------------
struct ConvGeom {
  std::int64_t n, c, h, w, o, kh, kw, oh, ow, sh, sw, pt, pl, dh, dw, g;
};
ConvGeom conv_geom(const Shape& x, const Shape& wt, const Attrs& a) {
  const auto& st = a.ints("strides");
  const auto& p = a.ints("pads");
  const auto& dil = a.ints("dilations");
  if (st.size() != 2 || st[0] < 1 || st[1] < 1) shape_fail("strides must be two positive integers");
  if (p.size() != 4) shape_fail("pads must be [top, left, bottom, right]");
  if (dil.size() != 2 || dil[0] < 1 || dil[1] < 1) shape_fail("dilations must be two positive integers");
  ConvGeom gm{x[0], x[1],  x[2],  x[3], wt[0], wt[2],  wt[3],  0,
              0,    st[0], st[1], p[0], p[1],  dil[0], dil[1], a.i("groups")};
  if (gm.g < 1 || gm.c % gm.g != 0 || gm.o % gm.g != 0)
    shape_fail(
        fmt::format("groups {} must divide input channels {} and output channels {}", gm.g, gm.c, gm.o));
  if (wt[1] * gm.g != gm.c)
    shape_fail(fmt::format("weight has {} input channels per group, input has {} channels in {} groups",
                           wt[1], gm.c, gm.g));
  const std::int64_t eh = x[2] + p[0] + p[2] - gm.dh * (gm.kh - 1) - 1,
                     ew = x[3] + p[1] + p[3] - gm.dw * (gm.kw - 1) - 1;
  if (eh < 0 || ew < 0) shape_fail("kernel larger than the padded input");
  gm.oh = eh / gm.sh + 1;
  gm.ow = ew / gm.sw + 1;
  return gm;
}
std::vector<TensorType> conv_shape(std::span<const TensorType> in, const Attrs& a) {
  expect_rank(in[0], 4, "input (NCHW)");
  expect_rank(in[1], 4, "weight (OIHW)");
  check_activation(a);
  const auto g = conv_geom(in[0].shape, in[1].shape, a);
  if (in.size() == 3 && in[2].shape != Shape{g.o}) shape_fail(fmt::format("bias must have shape [{}]", g.o));
  return {TensorType{{g.n, g.o, g.oh, g.ow}, in[0].dtype}};
}
double conv_flops(std::span<const TensorType> in, std::span<const TensorType> out, const Attrs&) {
  const auto& w = in[1].shape;
  return 2.0 * static_cast<double>(out[0].numel()) * static_cast<double>(w[1] * w[2] * w[3]);
}

// Visits every (output, input, weight) index triple of a convolution: f(o_idx, x_idx, w_idx).
template <class F>
void conv_loop(const ConvGeom& g, F&& f) {
  const std::int64_t cg = g.c / g.g, og = g.o / g.g;
  for (std::int64_t n = 0; n < g.n; ++n)
    for (std::int64_t oc = 0; oc < g.o; ++oc) {
      const std::int64_t grp = oc / og;
      for (std::int64_t oy = 0; oy < g.oh; ++oy)
        for (std::int64_t ox = 0; ox < g.ow; ++ox) {
          const std::int64_t oi = ((n * g.o + oc) * g.oh + oy) * g.ow + ox;
          for (std::int64_t ic = 0; ic < cg; ++ic) {
            const std::int64_t cin = grp * cg + ic;
            for (std::int64_t ky = 0; ky < g.kh; ++ky) {
              const std::int64_t iy = oy * g.sh - g.pt + ky * g.dh;
              if (iy < 0 || iy >= g.h) continue;
              for (std::int64_t kx = 0; kx < g.kw; ++kx) {
                const std::int64_t ix = ox * g.sw - g.pl + kx * g.dw;
                if (ix < 0 || ix >= g.w) continue;
                f(oi, ((n * g.c + cin) * g.h + iy) * g.w + ix, ((oc * cg + ic) * g.kh + ky) * g.kw + kx);
              }
            }
          }
        }
    }
}

template <class T>
void conv_kernel(const KernelCall<T>& c) {
  const auto g = conv_geom(*c.in[0].shape, *c.in[1].shape, c.attrs);
  T* o = c.out[0].data;
  const T* x = c.in[0].data;
  const T* w = c.in[1].data;
  for (std::int64_t i = 0; i < c.out[0].numel; ++i) o[i] = T{};
  // conv_loop's sums, with the output pixels innermost (contiguous, bounds hoisted): each output element
  // still adds its terms in (ic, ky, kx) order, so results are the same to the bit, several times faster.
  const std::int64_t cg = g.c / g.g, og = g.o / g.g;
  const double flops = 2.0 * static_cast<double>(c.out[0].numel) * static_cast<double>(cg * g.kh * g.kw);
  // One output plane (image n, channel oc) per row of the parallel loop: planes are independent.
  for_rows(g.n * g.o, flops, [&](std::int64_t p0, std::int64_t p1) {
    for (std::int64_t plane = p0; plane < p1; ++plane) {
      const std::int64_t n = plane / g.o, oc = plane % g.o;
      T* out = o + (n * g.o + oc) * g.oh * g.ow;
      for (std::int64_t ic = 0; ic < cg; ++ic) {
        const T* xin = x + (n * g.c + (oc / og) * cg + ic) * g.h * g.w;
        for (std::int64_t ky = 0; ky < g.kh; ++ky)
          for (std::int64_t kx = 0; kx < g.kw; ++kx) {
            const T wv = w[((oc * cg + ic) * g.kh + ky) * g.kw + kx];
            const std::int64_t shift = kx * g.dw - g.pl;  // ix = ox * sw + shift must lie in [0, w)
            const std::int64_t lo = shift >= 0 ? 0 : (-shift + g.sw - 1) / g.sw;
            const std::int64_t last = g.w - 1 - shift;
            const std::int64_t hi = last < 0 ? 0 : std::min(g.ow, last / g.sw + 1);
            for (std::int64_t oy = 0; oy < g.oh; ++oy) {
              const std::int64_t iy = oy * g.sh - g.pt + ky * g.dh;
              if (iy < 0 || iy >= g.h) continue;
              const T* row = xin + iy * g.w;
              T* orow = out + oy * g.ow;
              for (std::int64_t ox = lo; ox < hi; ++ox) orow[ox] += row[ox * g.sw + shift] * wv;
            }
          }
      }
    }
  });
  if (c.in.size() == 3) {
    const std::int64_t hw = g.oh * g.ow;
    for (std::int64_t i = 0; i < c.out[0].numel; ++i) o[i] += c.in[2][(i / hw) % g.o];
  }
  apply_activation(c);
}

Attrs conv_core_attrs(const Attrs& a) {
  return {{"strides", a.ints("strides")},
          {"pads", a.ints("pads")},
          {"dilations", a.ints("dilations")},
          {"groups", a.i("groups")}};
}
std::vector<TensorType> conv_gi_shape(std::span<const TensorType> in, const Attrs& a) {
  const auto& xs = a.ints("input_shape");
  if (xs.size() != 4) shape_fail("input_shape must have 4 dimensions");
  const auto g = conv_geom(xs, in[1].shape, a);
  if (in[0].shape != Shape{g.n, g.o, g.oh, g.ow})
    shape_fail("dy does not match the convolution's output shape");
  return {TensorType{xs, in[0].dtype}};
}
template <class T>
void conv_gi_kernel(const KernelCall<T>& c) {  // in: dy, w
  const auto g = conv_geom(c.attrs.ints("input_shape"), *c.in[1].shape, c.attrs);
  T* dx = c.out[0].data;
  for (std::int64_t i = 0; i < c.out[0].numel; ++i) dx[i] = T{};
  conv_loop(g,
            [&](std::int64_t oi, std::int64_t xi, std::int64_t wi) { dx[xi] += c.in[0][oi] * c.in[1][wi]; });
}
std::vector<TensorType> conv_gw_shape(std::span<const TensorType> in, const Attrs& a) {
  const auto& ws = a.ints("weight_shape");
  if (ws.size() != 4) shape_fail("weight_shape must have 4 dimensions");
  const auto g = conv_geom(in[0].shape, ws, a);
  if (in[1].shape != Shape{g.n, g.o, g.oh, g.ow})
    shape_fail("dy does not match the convolution's output shape");
  return {TensorType{ws, in[0].dtype}};
}
template <class T>
void conv_gw_kernel(const KernelCall<T>& c) {  // in: x, dy
  const auto g = conv_geom(*c.in[0].shape, c.attrs.ints("weight_shape"), c.attrs);
  T* dw = c.out[0].data;
  for (std::int64_t i = 0; i < c.out[0].numel; ++i) dw[i] = T{};
  conv_loop(g,
            [&](std::int64_t oi, std::int64_t xi, std::int64_t wi) { dw[wi] += c.in[1][oi] * c.in[0][xi]; });
}
double conv_gi_flops(std::span<const TensorType> in, std::span<const TensorType>, const Attrs&) {
  const auto& w = in[1].shape;
  return 2.0 * static_cast<double>(in[0].numel()) * static_cast<double>(w[1] * w[2] * w[3]);
}
double conv_gw_flops(std::span<const TensorType> in, std::span<const TensorType> out, const Attrs&) {
  const auto& w = out[0].shape;
  return 2.0 * static_cast<double>(in[1].numel()) * static_cast<double>(w[1] * w[2] * w[3]);
}

void conv_grad(GradContext& c) {
  ValueId dy = c.dout();
  if (c.fwd.attrs.s("activation") == "relu") dy = c.emit("relu_grad", {c.y(0), dy});
  if (c.need(0)) {
    auto a = conv_core_attrs(c.fwd.attrs);
    a.set("input_shape", c.shape(c.x(0)));
    c.set_dx(0, c.emit("conv2d_grad_input", {dy, c.x(1)}, a));
  }
  if (c.need(1)) {
    auto a = conv_core_attrs(c.fwd.attrs);
    a.set("weight_shape", c.shape(c.x(1)));
    c.set_dx(1, c.emit("conv2d_grad_weight", {c.x(0), dy}, a));
  }
  if (c.fwd.inputs.size() == 3 && c.need(2))
    c.set_dx(2, c.emit("reduce_sum", {dy}, {{"axes", Ints{0, 2, 3}}, {"keepdims", std::int64_t{0}}}));
}

// ---------------- enlarge ----------------
std::vector<TensorType> enlarge_shape(std::span<const TensorType> in, const Attrs& a) {
  expect_rank(in[0], 4, "kernel (OIHW)");
  const auto& k = a.ints("kernel");
  if (k.size() != 2) shape_fail("kernel must be [height, width]");
  const auto& s = in[0].shape;
  if (k[0] < s[2] || k[1] < s[3] || (k[0] - s[2]) % 2 || (k[1] - s[3]) % 2)
    shape_fail(fmt::format("cannot centre a {}x{} kernel in {}x{}", s[2], s[3], k[0], k[1]));
  return {TensorType{{s[0], s[1], k[0], k[1]}, in[0].dtype}};
}
template <class T>
void enlarge_kernel(const KernelCall<T>& c) {
  const auto& s = *c.in[0].shape;
  const auto& o = *c.out[0].shape;
  const std::int64_t oy = (o[2] - s[2]) / 2, ox = (o[3] - s[3]) / 2;
  for (std::int64_t i = 0; i < c.out[0].numel; ++i) c.out[0][i] = T{};
  for (std::int64_t p = 0; p < s[0] * s[1]; ++p)
    for (std::int64_t y = 0; y < s[2]; ++y)
      for (std::int64_t x = 0; x < s[3]; ++x)
        c.out[0][(p * o[2] + y + oy) * o[3] + x + ox] = c.in[0][(p * s[2] + y) * s[3] + x];
}
// ---------------- merge_gconv ----------------
// TASO's merge_gconv (src/core/substitution.cc of jiazhihao/TASO@f11782c): the weight of a grouped
// convolution with `groups` groups rewritten for groups / count groups. Output channel o of old group g = o /
// (O / groups) keeps its weights in slot g % count of its merged group's input channels; the other slots are
// zero, so the merged (block-diagonal) convolution computes the same function with fewer, larger per-group
// GEMMs.
std::vector<TensorType> merge_gconv_shape(std::span<const TensorType> in, const Attrs& a) {
  expect_rank(in[0], 4, "kernel (OIHW)");
  const auto groups = a.i("groups"), count = a.i("count");
  const auto& s = in[0].shape;
  if (groups < 1 || count < 1 || groups % count != 0)
    shape_fail(fmt::format("count {} must divide groups {}", count, groups));
  if (s[0] % groups != 0)
    shape_fail(fmt::format("{} output channels are not divisible by {} groups", s[0], groups));
  return {TensorType{{s[0], s[1] * count, s[2], s[3]}, in[0].dtype}};
}
template <class T>
void merge_gconv_kernel(const KernelCall<T>& c) {
  const auto& s = *c.in[0].shape;
  const std::int64_t groups = c.attrs.i("groups"), count = c.attrs.i("count");
  const std::int64_t per_group = s[0] / groups, cg = s[1], hw = s[2] * s[3];
  for (std::int64_t i = 0; i < c.out[0].numel; ++i) c.out[0][i] = T{};
  for (std::int64_t o = 0; o < s[0]; ++o) {
    const std::int64_t slot = (o / per_group) % count;
    for (std::int64_t ci = 0; ci < cg; ++ci)
      for (std::int64_t k = 0; k < hw; ++k)
        c.out[0][(o * cg * count + slot * cg + ci) * hw + k] = c.in[0][(o * cg + ci) * hw + k];
  }
}
// Gradient of merge_gconv: each output channel's block of its own slot (the zeros have no source).
std::vector<TensorType> merge_gconv_grad_shape(std::span<const TensorType> in, const Attrs& a) {
  expect_rank(in[0], 4, "merged kernel gradient (OIHW)");
  const auto count = a.i("count");
  const auto& s = in[0].shape;
  if (count < 1 || s[1] % count != 0)
    shape_fail(fmt::format("count {} must divide {} input channels", count, s[1]));
  return {TensorType{{s[0], s[1] / count, s[2], s[3]}, in[0].dtype}};
}
template <class T>
void merge_gconv_grad_kernel(const KernelCall<T>& c) {
  const auto& s = *c.out[0].shape;
  const std::int64_t groups = c.attrs.i("groups"), count = c.attrs.i("count");
  const std::int64_t per_group = s[0] / groups, cg = s[1], hw = s[2] * s[3];
  for (std::int64_t o = 0; o < s[0]; ++o) {
    const std::int64_t slot = (o / per_group) % count;
    for (std::int64_t ci = 0; ci < cg; ++ci)
      for (std::int64_t k = 0; k < hw; ++k)
        c.out[0][(o * cg + ci) * hw + k] = c.in[0][(o * cg * count + slot * cg + ci) * hw + k];
  }
}
void merge_gconv_grad(GradContext& c) {
  if (!c.need(0)) return;
  c.set_dx(0, c.emit("merge_gconv_grad", {c.dout()},
                     {{"groups", c.fwd.attrs.i("groups")}, {"count", c.fwd.attrs.i("count")}}));
}

std::vector<TensorType> crop_shape(std::span<const TensorType> in, const Attrs& a) {
  expect_rank(in[0], 4, "kernel gradient (OIHW)");
  const auto& k = a.ints("kernel");
  if (k.size() != 2) shape_fail("kernel must be [height, width]");
  const auto& s = in[0].shape;
  if (k[0] > s[2] || k[1] > s[3] || (s[2] - k[0]) % 2 || (s[3] - k[1]) % 2)
    shape_fail(fmt::format("cannot crop {}x{} to a centred {}x{}", s[2], s[3], k[0], k[1]));
  return {TensorType{{s[0], s[1], k[0], k[1]}, in[0].dtype}};
}
template <class T>
void crop_kernel(const KernelCall<T>& c) {
  const auto& s = *c.in[0].shape;
  const auto& o = *c.out[0].shape;
  const std::int64_t oy = (s[2] - o[2]) / 2, ox = (s[3] - o[3]) / 2;
  for (std::int64_t p = 0; p < o[0] * o[1]; ++p)
    for (std::int64_t y = 0; y < o[2]; ++y)
      for (std::int64_t x = 0; x < o[3]; ++x)
        c.out[0][(p * o[2] + y) * o[3] + x] = c.in[0][(p * s[2] + y + oy) * s[3] + x + ox];
}
void enlarge_grad(GradContext& c) {
  if (!c.need(0)) return;
  const Shape s = c.shape(c.x(0));
  c.set_dx(0, c.emit("enlarge_grad", {c.dout()}, {{"kernel", Ints{s[2], s[3]}}}));
}

const std::vector<AttrSpec> kMatmulAttrs = {
    {"trans_a", AttrKind::kInt, std::int64_t{0}, "1: use a transposed (last two dims)"},
    {"trans_b", AttrKind::kInt, std::int64_t{0}, "1: use b transposed (last two dims)"},
    {"activation", AttrKind::kString, std::string("none"), "fused activation: none or relu"}};
const std::vector<AttrSpec> kConvCore = {
    {"strides", AttrKind::kInts, Ints{1, 1}, "[stride_h, stride_w]"},
    {"pads", AttrKind::kInts, Ints{0, 0, 0, 0}, "[top, left, bottom, right]"},
    {"dilations", AttrKind::kInts, Ints{1, 1}, "[dilation_h, dilation_w]"},
    {"groups", AttrKind::kInt, std::int64_t{1}, "channel groups (C for depth-wise)"}};
std::vector<AttrSpec> with(std::vector<AttrSpec> base, AttrSpec extra) {
  base.push_back(extra);
  return base;
}

// Output rows are op(a)'s rows, columns op(b)'s columns (transposed operands read the other axis).
SplitAxisTrace matmul_split_axis(std::span<const TensorType> in, const TensorType&, const Attrs& a,
                                 std::int64_t axis) {
  if (in.size() != 2 || in[0].rank() != 2 || in[1].rank() != 2) return {};
  if (axis == 0) return {std::nullopt, {{0, a.i("trans_a") != 0 ? 1 : 0}}};
  if (axis == 1) return {std::nullopt, {{1, a.i("trans_b") != 0 ? 0 : 1}}};
  return {};
}
// Batch from the input, output channels from the weight's first axis (any grouping); a spatial axis runs
// through unchanged where the convolution keeps its size at stride 1 (SAME padding).
SplitAxisTrace conv_split_axis(std::span<const TensorType> in, const TensorType& out, const Attrs& a,
                               std::int64_t axis) {
  if (in.size() < 2) return {};
  if (axis == 0) return {std::nullopt, {{0, 0}}};
  if (axis == 1) return {std::nullopt, {{1, 0}}};
  return spatial_split_axis(in[0], out, a, axis);
}
// An enlarged kernel keeps its output and input channels.
SplitAxisTrace enlarge_split_axis(std::span<const TensorType> in, const TensorType&, const Attrs&,
                                  std::int64_t axis) {
  if (in.empty() || (axis != 0 && axis != 1)) return {};
  return {std::nullopt, {{0, axis}}};
}

// Rule forms (TASO's matmul, conv2d and enlarge). TASO's matmul is the plain 2-D product; its conv2d has no
// bias or dilation, SAME or VALID padding, an optional fused relu, and derives its groups from the shapes.
std::optional<Attrs> matmul_rule(const RuleInstance& r) {
  const auto& in = r.inputs;
  if (in.size() != 2 || in[0].size() != 2 || in[1].size() != 2 || in[0][1] != in[1][0]) return std::nullopt;
  return Attrs{};
}
std::optional<Ints> matmul_params(std::span<const TensorType> in, const Attrs& a, std::size_t) {
  if (a.i("trans_a") || a.i("trans_b") || a.s("activation") != "none") return std::nullopt;
  if (in.size() != 2 || in[0].rank() != 2 || in[1].rank() != 2) return std::nullopt;
  return Ints{};
}
// A constant operand of a matmul is square on the contracted side.
std::optional<Shape> matmul_operand_shape(std::size_t arg, const Shape* other, const Shape*) {
  if (!other || other->size() != 2) return std::nullopt;
  const auto n = arg == 1 ? (*other)[1] : (*other)[0];
  return Shape{n, n};
}

std::optional<Attrs> conv_rule(const RuleInstance& r) {
  const auto& in = r.inputs;
  const auto& p = r.params;
  if (in.size() != 2 || in[0].size() != 4 || in[1].size() != 4 || p.size() != 4) return std::nullopt;
  const auto& x = in[0];
  const auto& w = in[1];
  if (w[1] <= 0 || x[1] % w[1] != 0 || w[0] % (x[1] / w[1]) != 0) return std::nullopt;
  auto pads = rule_pads(p[2], x[2], x[3], w[2], w[3], p[0], p[1]);
  if (!pads) return std::nullopt;
  if (p[3] != kRuleActiNone && p[3] != kRuleActiRelu) return std::nullopt;
  return Attrs{{"strides", Ints{p[0], p[1]}},
               {"pads", *pads},
               {"groups", x[1] / w[1]},
               {"activation", std::string(p[3] == kRuleActiRelu ? "relu" : "none")}};
}
std::optional<Ints> conv_params(std::span<const TensorType> in, const Attrs& a, std::size_t) {
  if (in.size() != 2 || in[0].rank() != 4 || in[1].rank() != 4 || a.ints("dilations") != Ints{1, 1})
    return std::nullopt;
  const auto& x = in[0].shape;
  const auto& w = in[1].shape;
  const auto& s = a.ints("strides");
  auto mode = rule_pad_mode(a.ints("pads"), x[2], x[3], w[2], w[3], s[0], s[1]);
  if (!mode) return std::nullopt;
  const auto& act = a.s("activation");
  if (act != "none" && act != "relu") return std::nullopt;
  return Ints{s[0], s[1], *mode, act == "relu" ? kRuleActiRelu : kRuleActiNone};
}
// A constant weight has one kernel per input channel of x (its leading dimension fixes an identity kernel).
std::optional<Shape> conv_operand_shape(std::size_t arg, const Shape* other, const Shape*) {
  if (arg != 1 || !other || other->size() != 4) return std::nullopt;
  return Shape{(*other)[1], (*other)[1], 1, 1};
}
// Grouped convolutions are left alone: TASO's axioms over convolutions (conv_channel_concat,
// concat_conv_out_channels, ...) hold for groups = 1 only (docs/subst.md), and the rules' conv2d derives its
// groups from the shapes, so a rewritten weight would silently change the grouping. (The rule form itself
// builds them: the generator and the verifier need conv2d with C_pool, a depth-wise convolution.)
bool conv_optimizers_may_use(const Attrs& a) {
  return a.i("groups") == 1;
}

std::optional<Attrs> enlarge_rule(const RuleInstance& r) {
  const auto& in = r.inputs;
  const auto& p = r.params;
  if (in.size() != 1 || in[0].size() != 4 || p.size() != 2 || in[0][2] > p[0] || in[0][3] > p[1] ||
      (p[0] - in[0][2]) % 2 || (p[1] - in[0][3]) % 2)
    return std::nullopt;
  return Attrs{{"kernel", Ints{p[0], p[1]}}};
}
std::optional<Ints> enlarge_params(std::span<const TensorType>, const Attrs& a, std::size_t) {
  const auto& k = a.ints("kernel");
  return Ints{k[0], k[1]};
}

// Parallelization traits (OpDef::parallel_dims). matmul a[M,K] @ b[K,N]: rows of a (sample), columns of b
// (parameter), the contracted K (reduction, unless an activation is fused).
std::vector<ParallelDim> matmul_parallel_dims(std::span<const TensorType> in, std::span<const TensorType> out,
                                              const Attrs& a) {
  const int ra = in[0].rank(), rb = in[1].rank(), ro = out[0].rank();
  const bool ta = a.i("trans_a") != 0, tb = a.i("trans_b") != 0;
  const auto d = mat_dims(in[0], in[1], a);
  std::vector<ParallelDim> dims;
  if (ro > 2) {  // batch_matmul: the leading batch axis where both operands carry it unbroadcast
    dims.push_back(aligned_dim(in, out[0], 0, "batch", ParallelDimKind::kSample));
  }
  dims.push_back({ro > 2 ? "rows" : "batch",
                  ro > 2 ? ParallelDimKind::kAttribute : ParallelDimKind::kSample,
                  d.m,
                  ro - 2,
                  {{0, ta ? ra - 1 : ra - 2}}});
  dims.push_back({"columns", ParallelDimKind::kParameter, d.n, ro - 1, {{1, tb ? rb - 2 : rb - 1}}});
  // With a fused activation the parts' partial sums cannot be summed afterwards: no reduction dimension.
  if (a.s("activation") == "none")
    dims.push_back({"inner",
                    ParallelDimKind::kReduction,
                    d.k,
                    -1,
                    {{0, ta ? ra - 2 : ra - 1}, {1, tb ? rb - 1 : rb - 2}}});
  return dims;
}

// conv2d x[N,C,H,W] * w[O,C/g,kh,kw] (+ bias[O]): batch, output rows (attribute; input rows follow
// proportionally, halo ignored), output channels (parameter) and input channels (reduction); the channel
// dimensions only without groups, the reduction only without bias and fused activation.
std::vector<ParallelDim> conv_parallel_dims(std::span<const TensorType> in, std::span<const TensorType> out,
                                            const Attrs& a) {
  std::vector<ParallelDim> dims{{"batch", ParallelDimKind::kSample, out[0].shape[0], 0, {{0, 0}}},
                                {"rows", ParallelDimKind::kAttribute, out[0].shape[2], 2, {{0, 2}}}};
  if (a.i("groups") == 1) {
    ParallelDim oc{"out_channels", ParallelDimKind::kParameter, out[0].shape[1], 1, {{1, 0}}};
    if (in.size() == 3) oc.input_axes.emplace_back(2, 0);
    dims.push_back(std::move(oc));
    // Partial sums over input channels add up only without a bias (each part would add it) and without a
    // fused activation.
    if (in.size() == 2 && a.s("activation") == "none")
      dims.push_back({"in_channels", ParallelDimKind::kReduction, in[0].shape[1], -1, {{0, 1}, {1, 1}}});
  }
  return dims;
}

}  // namespace

void register_contraction_ops(OpRegistry& r) {
  r.add({.name = "matmul",
         .symbol = "matmul",
         .summary = "2-D matrix product op(a) @ op(b)",
         .kind = OpKind::kContraction,
         .min_inputs = 2,
         .max_inputs = 2,
         .attrs = kMatmulAttrs,
         .associative = true,
         .linear_in = {0, 1},
         .split_axis = matmul_split_axis,
         .rule = {.to_attrs = matmul_rule, .from_node = matmul_params, .operand_shape = matmul_operand_shape},
         .shape = matmul_shape,
         .flops = matmul_flops,
         .kernel = STRATA_KERNELS(bmm_kernel),
         .grad = matmul_grad,
         .onnx_op = "MatMul",
         .parallel_dims = matmul_parallel_dims});
  r.add({.name = "batch_matmul",
         .symbol = "batch_matmul",
         .summary = "batched matrix product over the last two dims; batch dims broadcast",
         .kind = OpKind::kContraction,
         .min_inputs = 2,
         .max_inputs = 2,
         .attrs = kMatmulAttrs,
         .linear_in = {0, 1},
         .shape = bmm_shape,
         .flops = matmul_flops,
         .kernel = STRATA_KERNELS(bmm_kernel),
         .grad = matmul_grad,
         .onnx_op = "MatMul",
         .parallel_dims = matmul_parallel_dims});
  r.add({.name = "conv2d",
         .symbol = "conv2d",
         .summary = "2-D convolution, NCHW input, OIHW weight, optional bias [O], fused relu",
         .kind = OpKind::kContraction,
         .min_inputs = 2,
         .max_inputs = 3,
         .attrs = with(kConvCore, {"activation", AttrKind::kString, std::string("none"), "none or relu"}),
         .symbol_params = {{"sh", SymbolParamKind::kStride},
                           {"sw", SymbolParamKind::kStride},
                           {"pad", SymbolParamKind::kPadding},
                           {"acti", SymbolParamKind::kActivation}},
         .symbol_inputs = 2,  // TASO's conv2d has no bias
         .linear_in = {0, 1},
         .split_axis = conv_split_axis,
         .rule = {.to_attrs = conv_rule,
                  .from_node = conv_params,
                  .operand_shape = conv_operand_shape,
                  .optimizers_may_use = conv_optimizers_may_use},
         .shape = conv_shape,
         .flops = conv_flops,
         .kernel = STRATA_KERNELS(conv_kernel),
         .grad = conv_grad,
         .onnx_op = "Conv",
         .parallel_dims = conv_parallel_dims});
  r.add({.name = "conv2d_grad_input",
         .symbol = "conv2d_grad_input",
         .summary = "input gradient of conv2d (transposed convolution of dy with w)",
         .kind = OpKind::kContraction,
         .min_inputs = 2,
         .max_inputs = 2,
         .attrs = with(kConvCore, {"input_shape", AttrKind::kInts, std::nullopt, "forward input shape"}),
         .backward = true,
         .shape = conv_gi_shape,
         .flops = conv_gi_flops,
         .kernel = STRATA_KERNELS(conv_gi_kernel)});
  r.add({.name = "conv2d_grad_weight",
         .symbol = "conv2d_grad_weight",
         .summary = "weight gradient of conv2d (correlation of x with dy)",
         .kind = OpKind::kContraction,
         .min_inputs = 2,
         .max_inputs = 2,
         .attrs = with(kConvCore, {"weight_shape", AttrKind::kInts, std::nullopt, "forward weight shape"}),
         .backward = true,
         .shape = conv_gw_shape,
         .flops = conv_gw_flops,
         .kernel = STRATA_KERNELS(conv_gw_kernel)});
  r.add({.name = "enlarge",
         .symbol = "enlarge",
         .summary = "zero-pad a conv kernel (OIHW) to a larger centred size",
         .kind = OpKind::kDataMovement,
         .attrs = {{"kernel", AttrKind::kInts, std::nullopt, "[height, width]"}},
         .symbol_params = {{"kh", SymbolParamKind::kKernel}, {"kw", SymbolParamKind::kKernel}},
         .linear_in = {0},
         .split_axis = enlarge_split_axis,
         .rule = {.to_attrs = enlarge_rule, .from_node = enlarge_params},
         .shape = enlarge_shape,
         .flops = zero_count,
         .kernel = STRATA_KERNELS(enlarge_kernel),
         .grad = enlarge_grad});
  r.add(
      {.name = "merge_gconv",
       .symbol = "merge_gconv",
       .summary = "grouped-conv kernel (OIHW) rewritten for groups/count groups, block-diagonal with zeros",
       .kind = OpKind::kDataMovement,
       .attrs = {{"groups", AttrKind::kInt, std::nullopt, "groups of the convolution the kernel belongs to"},
                 {"count", AttrKind::kInt, std::nullopt, "how many groups are merged into one"}},
       .linear_in = {0},
       .shape = merge_gconv_shape,
       .flops = zero_count,
       .kernel = STRATA_KERNELS(merge_gconv_kernel),
       .grad = merge_gconv_grad});
  r.add({.name = "merge_gconv_grad",
         .symbol = "merge_gconv_grad",
         .summary = "gradient of merge_gconv: each output channel's own slot of the merged kernel gradient",
         .kind = OpKind::kDataMovement,
         .attrs = {{"groups", AttrKind::kInt, std::nullopt, "groups of the original convolution"},
                   {"count", AttrKind::kInt, std::nullopt, "how many groups were merged into one"}},
         .backward = true,
         .shape = merge_gconv_grad_shape,
         .flops = zero_count,
         .kernel = STRATA_KERNELS(merge_gconv_grad_kernel)});
  r.add({.name = "enlarge_grad",
         .symbol = "enlarge_grad",
         .summary = "centre crop of a kernel gradient",
         .kind = OpKind::kDataMovement,
         .attrs = {{"kernel", AttrKind::kInts, std::nullopt, "[height, width]"}},
         .backward = true,
         .shape = crop_shape,
         .flops = zero_count,
         .kernel = STRATA_KERNELS(crop_kernel)});
}

}  // namespace strata::models::ops
