// 2-D pooling over NCHW tensors (max and average; padding, ceil mode, count_include_pad) and gradients.
#include "models/ops/common.h"
#include "models/ops/parallel_dims.h"
#include "models/ops/rule_helpers.h"
#include "models/train/grad_context.h"

namespace strata::models::ops {
namespace {

struct PoolGeom {
  std::int64_t nc, h, w, kh, kw, sh, sw, pt, pl, pb, pr, oh, ow;
  bool include_pad;
};
std::int64_t pool_out(std::int64_t in, std::int64_t k, std::int64_t s, std::int64_t p0, std::int64_t p1,
                      bool ceil) {
  std::int64_t span = 0;
  if (__builtin_add_overflow(in, p0, &span) || __builtin_add_overflow(span, p1, &span) ||
      __builtin_sub_overflow(span, k, &span))
    shape_fail("input size plus padding does not fit in 64 bits");
  if (span < 0) shape_fail("pooling window larger than the padded input");
  std::int64_t o = (ceil ? (span + s - 1) / s : span / s) + 1;
  if (ceil && (o - 1) * s >= in + p0) --o;  // the last window must start inside the input or its leading pad
  return o;
}
PoolGeom pool_geom(const Shape& x, const Attrs& a) {
  const auto& k = a.ints("kernel");
  const auto& s = a.ints("strides");
  const auto& p = a.ints("pads");
  if (k.size() != 2 || k[0] < 1 || k[1] < 1) shape_fail("kernel must be two positive integers");
  if (s.size() != 2 || s[0] < 1 || s[1] < 1) shape_fail("strides must be two positive integers");
  if (p.size() != 4) shape_fail("pads must be [top, left, bottom, right]");
  if (p[0] >= k[0] || p[2] >= k[0] || p[1] >= k[1] || p[3] >= k[1])
    shape_fail("padding must be smaller than the kernel");
  const bool ceil = a.i("ceil_mode") != 0;
  std::int64_t planes = 0;  // N x C; may overflow when H or W is 0 (numel 0)
  if (__builtin_mul_overflow(x[0], x[1], &planes)) shape_fail("batch x channels does not fit in 64 bits");
  PoolGeom g{
      planes, x[2], x[3], k[0], k[1], s[0], s[1],
      p[0],   p[1], p[2], p[3], 0,    0,    a.has("count_include_pad") && a.i("count_include_pad") != 0};
  g.oh = pool_out(x[2], k[0], s[0], p[0], p[2], ceil);
  g.ow = pool_out(x[3], k[1], s[1], p[1], p[3], ceil);
  return g;
}
std::vector<TensorType> pool_shape(std::span<const TensorType> in, const Attrs& a) {
  expect_rank(in[0], 4, "input (NCHW)");
  const auto g = pool_geom(in[0].shape, a);
  return {TensorType{{in[0].shape[0], in[0].shape[1], g.oh, g.ow}, in[0].dtype}};
}
double pool_flops(std::span<const TensorType>, std::span<const TensorType> out, const Attrs& a) {
  const auto& k = a.ints("kernel");
  return static_cast<double>(out[0].numel() * k[0] * k[1]);
}

// Visits the windows: f(plane, out_index, y0, y1, x0, x1, divisor_include_pad) with clipped bounds.
template <class F>
void windows(const PoolGeom& g, F&& f) {
  for (std::int64_t p = 0; p < g.nc; ++p)
    for (std::int64_t oy = 0; oy < g.oh; ++oy)
      for (std::int64_t ox = 0; ox < g.ow; ++ox) {
        const std::int64_t ys = oy * g.sh - g.pt, xs = ox * g.sw - g.pl;
        const std::int64_t ye = std::min(ys + g.kh, g.h + g.pb), xe = std::min(xs + g.kw, g.w + g.pr);
        const std::int64_t padded = (ye - ys) * (xe - xs);
        f(p, (p * g.oh + oy) * g.ow + ox, std::max<std::int64_t>(ys, 0), std::min(ye, g.h),
          std::max<std::int64_t>(xs, 0), std::min(xe, g.w), padded);
      }
}

template <class T>
void maxpool_kernel(const KernelCall<T>& c) {
  const auto g = pool_geom(*c.in[0].shape, c.attrs);
  windows(g, [&](std::int64_t p, std::int64_t oi, std::int64_t y0, std::int64_t y1, std::int64_t x0,
                 std::int64_t x1, std::int64_t) {
    const T* plane = c.in[0].data + p * g.h * g.w;
    T best = plane[y0 * g.w + x0];
    for (std::int64_t y = y0; y < y1; ++y)
      for (std::int64_t x = x0; x < x1; ++x)
        if (Num<T>::greater(plane[y * g.w + x], best)) best = plane[y * g.w + x];
    c.out[0][oi] = best;
  });
}
template <class T>
void avgpool_kernel(const KernelCall<T>& c) {
  const auto g = pool_geom(*c.in[0].shape, c.attrs);
  windows(g, [&](std::int64_t p, std::int64_t oi, std::int64_t y0, std::int64_t y1, std::int64_t x0,
                 std::int64_t x1, std::int64_t padded) {
    const T* plane = c.in[0].data + p * g.h * g.w;
    T sum{};
    for (std::int64_t y = y0; y < y1; ++y)
      for (std::int64_t x = x0; x < x1; ++x) sum += plane[y * g.w + x];
    const std::int64_t count = g.include_pad ? padded : (y1 - y0) * (x1 - x0);
    c.out[0][oi] = sum * Num<T>::inv(Num<T>::from_int(count));
  });
}

// Gradients: in = (x, dy) for max, (dy) for avg; attributes repeat the forward ones (+ input_shape for avg).
std::vector<TensorType> maxpool_grad_shape(std::span<const TensorType> in, const Attrs& a) {
  const auto fwd = pool_shape(in.subspan(0, 1), a);
  if (fwd[0].shape != in[1].shape) shape_fail("dy does not match the pooling output shape");
  return {in[0]};
}
template <class T>
void maxpool_grad_kernel(const KernelCall<T>& c) {
  const auto g = pool_geom(*c.in[0].shape, c.attrs);
  for (std::int64_t i = 0; i < c.out[0].numel; ++i) c.out[0][i] = T{};
  windows(g, [&](std::int64_t p, std::int64_t oi, std::int64_t y0, std::int64_t y1, std::int64_t x0,
                 std::int64_t x1, std::int64_t) {
    const T* plane = c.in[0].data + p * g.h * g.w;
    std::int64_t arg = y0 * g.w + x0;
    for (std::int64_t y = y0; y < y1; ++y)
      for (std::int64_t x = x0; x < x1; ++x)
        if (Num<T>::greater(plane[y * g.w + x], plane[arg])) arg = y * g.w + x;
    c.out[0][p * g.h * g.w + arg] += c.in[1][oi];
  });
}
std::vector<TensorType> avgpool_grad_shape(std::span<const TensorType> in, const Attrs& a) {
  const TensorType x{a.ints("input_shape"), in[0].dtype};
  expect_rank(x, 4, "input_shape");
  const auto fwd = pool_shape(std::span<const TensorType>(&x, 1), a);
  if (fwd[0].shape != in[0].shape) shape_fail("dy does not match the pooling output shape");
  return {x};
}
template <class T>
void avgpool_grad_kernel(const KernelCall<T>& c) {
  const auto g = pool_geom(*c.out[0].shape, c.attrs);
  for (std::int64_t i = 0; i < c.out[0].numel; ++i) c.out[0][i] = T{};
  windows(g, [&](std::int64_t p, std::int64_t oi, std::int64_t y0, std::int64_t y1, std::int64_t x0,
                 std::int64_t x1, std::int64_t padded) {
    const std::int64_t count = g.include_pad ? padded : (y1 - y0) * (x1 - x0);
    const T share = c.in[0][oi] * Num<T>::inv(Num<T>::from_int(count));
    T* plane = c.out[0].data + p * g.h * g.w;
    for (std::int64_t y = y0; y < y1; ++y)
      for (std::int64_t x = x0; x < x1; ++x) plane[y * g.w + x] += share;
  });
}

void maxpool_grad(GradContext& c) {
  if (c.need(0)) c.set_dx(0, c.emit("maxpool2d_grad", {c.x(0), c.dout()}, c.fwd.attrs));
}
void avgpool_grad(GradContext& c) {
  if (!c.need(0)) return;
  Attrs a = c.fwd.attrs;
  a.set("input_shape", c.shape(c.x(0)));
  c.set_dx(0, c.emit("avgpool2d_grad", {c.dout()}, a));
}

std::vector<AttrSpec> pool_attrs(bool avg, bool grad) {
  std::vector<AttrSpec> a = {{"kernel", AttrKind::kInts, std::nullopt, "[height, width]"},
                             {"strides", AttrKind::kInts, Ints{1, 1}, "[stride_h, stride_w]"},
                             {"pads", AttrKind::kInts, Ints{0, 0, 0, 0}, "[top, left, bottom, right]"},
                             {"ceil_mode", AttrKind::kInt, std::int64_t{0}, "1: round the output size up"}};
  if (avg)
    a.push_back({"count_include_pad", AttrKind::kInt, std::int64_t{0}, "1: padding counts in the divisor"});
  if (grad && avg) a.push_back({"input_shape", AttrKind::kInts, std::nullopt, "forward input shape"});
  return a;
}

// kernel, strides, SAME/VALID padding (TASO's poolavg/poolmax).
const std::vector<SymbolParam> kPoolSymbolParams{{"kh", SymbolParamKind::kKernel},
                                                 {"kw", SymbolParamKind::kKernel},
                                                 {"sh", SymbolParamKind::kStride},
                                                 {"sw", SymbolParamKind::kStride},
                                                 {"pad", SymbolParamKind::kPadding}};

// Pooling keeps batch and channels; spatial axes as for convolutions.
SplitAxisTrace pool_split_axis(std::span<const TensorType> in, const TensorType& out, const Attrs& a,
                               std::int64_t axis) {
  if (in.empty()) return {};
  if (axis == 0 || axis == 1) return {std::nullopt, {{0, axis}}};
  return spatial_split_axis(in[0], out, a, axis);
}

// Rule forms (TASO's poolmax and poolavg): kernel, strides, SAME or VALID padding. TASO's average pooling
// equals a convolution with C_pool, whose zero padding counts in the divisor.
template <bool kAvg>
std::optional<Attrs> pool_rule(const RuleInstance& r) {
  const auto& p = r.params;
  if (r.inputs.size() != 1 || r.inputs[0].size() != 4 || p.size() != 5) return std::nullopt;
  auto pads = rule_pads(p[4], r.inputs[0][2], r.inputs[0][3], p[0], p[1], p[2], p[3]);
  if (!pads) return std::nullopt;
  Attrs a{{"kernel", Ints{p[0], p[1]}}, {"strides", Ints{p[2], p[3]}}, {"pads", *pads}};
  if (kAvg) a.set("count_include_pad", std::int64_t{1});
  return a;
}
template <bool kAvg>
std::optional<Ints> pool_params(std::span<const TensorType> in, const Attrs& a, std::size_t) {
  if (in.size() != 1 || in[0].rank() != 4 || a.i("ceil_mode")) return std::nullopt;
  const auto& k = a.ints("kernel");
  const auto& s = a.ints("strides");
  const auto& x = in[0].shape;
  auto mode = rule_pad_mode(a.ints("pads"), x[2], x[3], k[0], k[1], s[0], s[1]);
  if (!mode) return std::nullopt;
  if (kAvg && a.i("count_include_pad") == 0 && a.ints("pads") != Ints{0, 0, 0, 0}) return std::nullopt;
  return Ints{k[0], k[1], s[0], s[1], *mode};
}

// Parallelization trait: batch, channels and output rows (input rows follow proportionally, halo ignored).
std::vector<ParallelDim> pool_parallel_dims(std::span<const TensorType>, std::span<const TensorType> out,
                                            const Attrs&) {
  return {{"batch", ParallelDimKind::kSample, out[0].shape[0], 0, {{0, 0}}},
          {"channels", ParallelDimKind::kAttribute, out[0].shape[1], 1, {{0, 1}}},
          {"rows", ParallelDimKind::kAttribute, out[0].shape[2], 2, {{0, 2}}}};
}

// Global pooling (one window over the whole image: ONNX's GlobalAveragePool, the CNNs' last pool) reduces
// each channel to one value; oneDNN and cuDNN run it at a rate per byte unlike the windowed stencil's (on the
// 2-core VM of docs/replay.md §4 the global pools streamed at ~24 GB/s while windowed ones were compute-like,
// and one curve for both priced them -12..-39%), so the cost model fits it apart.
std::string_view pool_cost_variant(std::span<const TensorType> in, const Attrs& a) {
  if (in.empty() || in[0].rank() != 4) return {};
  const auto& k = a.ints("kernel");
  const bool whole_image = k.size() == 2 && k[0] == in[0].shape[2] && k[1] == in[0].shape[3];
  return whole_image && a.ints("pads") == Ints{0, 0, 0, 0} ? "global" : "";
}

}  // namespace

void register_pooling_ops(OpRegistry& r) {
  r.add({.name = "maxpool2d",
         .symbol = "poolmax",
         .summary = "2-D max pooling (NCHW)",
         .kind = OpKind::kDataMovement,
         .attrs = pool_attrs(false, false),
         .symbol_params = kPoolSymbolParams,
         .split_axis = pool_split_axis,
         .rule = {.to_attrs = pool_rule<false>, .from_node = pool_params<false>},
         .shape = pool_shape,
         .flops = pool_flops,
         .cost_variant = pool_cost_variant,
         .cost_variants = {"global"},
         .kernel = STRATA_KERNELS(maxpool_kernel),
         .grad = maxpool_grad,
         .onnx_op = "MaxPool",
         .parallel_dims = pool_parallel_dims});
  r.add({.name = "avgpool2d",
         .symbol = "poolavg",
         .summary = "2-D average pooling (NCHW)",
         .kind = OpKind::kDataMovement,
         .attrs = pool_attrs(true, false),
         .symbol_params = kPoolSymbolParams,
         .linear_in = {0},
         .split_axis = pool_split_axis,
         .rule = {.to_attrs = pool_rule<true>, .from_node = pool_params<true>},
         .shape = pool_shape,
         .flops = pool_flops,
         .cost_variant = pool_cost_variant,
         .cost_variants = {"global"},
         .kernel = STRATA_KERNELS(avgpool_kernel),
         .grad = avgpool_grad,
         .onnx_op = "AveragePool",
         .parallel_dims = pool_parallel_dims});
  r.add({.name = "maxpool2d_grad",
         .symbol = "poolmax_grad",
         .summary = "gradient of max pooling (to the argmax)",
         .kind = OpKind::kDataMovement,
         .min_inputs = 2,
         .max_inputs = 2,
         .attrs = pool_attrs(false, true),
         .backward = true,
         .shape = maxpool_grad_shape,
         .flops = pool_flops,
         .kernel = STRATA_KERNELS(maxpool_grad_kernel)});
  r.add({.name = "avgpool2d_grad",
         .symbol = "poolavg_grad",
         .summary = "gradient of average pooling",
         .kind = OpKind::kDataMovement,
         .attrs = pool_attrs(true, true),
         .backward = true,
         .shape = avgpool_grad_shape,
         .flops = pool_flops,
         .kernel = STRATA_KERNELS(avgpool_grad_kernel)});
}

}  // namespace strata::models::ops
