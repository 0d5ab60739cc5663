// Reductions over a set of axes (sum, mean), keepdims optional; empty axes = all axes.
#include "models/ops/common.h"
#include "models/train/grad_context.h"

namespace strata::models::ops {
namespace {

std::vector<bool> reduced_mask(const Shape& s, const Attrs& a) {
  std::vector<bool> m(s.size(), a.ints("axes").empty());
  for (int ax : norm_axes(a.ints("axes"), static_cast<int>(s.size()))) m[u(ax)] = true;
  return m;
}
std::vector<TensorType> reduce_shape(std::span<const TensorType> in, const Attrs& a) {
  const auto m = reduced_mask(in[0].shape, a);
  Shape out;
  for (std::size_t i = 0; i < m.size(); ++i) {
    if (!m[i])
      out.push_back(in[0].shape[i]);
    else if (a.i("keepdims"))
      out.push_back(1);
  }
  return {TensorType{out, in[0].dtype}};
}
double reduce_flops(std::span<const TensorType> in, std::span<const TensorType>, const Attrs&) {
  return static_cast<double>(in[0].numel());
}
template <class T, bool kMean>
void reduce_kernel(const KernelCall<T>& c) {
  const auto& s = *c.in[0].shape;
  const auto m = reduced_mask(s, c.attrs);
  Shape kept(s.size());  // output shape with keepdims
  for (std::size_t i = 0; i < s.size(); ++i) kept[i] = m[i] ? 1 : s[i];
  for (std::int64_t i = 0; i < c.out[0].numel; ++i) c.out[0][i] = T{};
  for_each_broadcast(s, kept, s,
                     [&](std::int64_t i, std::int64_t io, std::int64_t) { c.out[0][io] += c.in[0][i]; });
  if constexpr (kMean) {
    const T inv = Num<T>::inv(Num<T>::from_int(c.in[0].numel / std::max<std::int64_t>(c.out[0].numel, 1)));
    for (std::int64_t i = 0; i < c.out[0].numel; ++i) c.out[0][i] = c.out[0][i] * inv;
  }
}
template <class T>
void sum_kernel(const KernelCall<T>& c) {
  reduce_kernel<T, false>(c);
}
template <class T>
void mean_kernel(const KernelCall<T>& c) {
  reduce_kernel<T, true>(c);
}

template <bool kMean>
void reduce_grad(GradContext& c) {
  if (!c.need(0)) return;
  const Shape s = c.shape(c.x(0));
  const auto m = reduced_mask(s, c.fwd.attrs);
  Shape kept(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) kept[i] = m[i] ? 1 : s[i];
  ValueId g = c.emit("reshape", {c.dout()}, {{"shape", kept}});
  g = c.emit("expand", {g}, {{"shape", s}});
  if (kMean)
    g = c.emit("scalar_mul", {g, c.scalar(static_cast<double>(numel(kept)) / static_cast<double>(numel(s)))});
  c.set_dx(0, g);
}

const std::vector<AttrSpec> kReduceAttrs = {
    {"axes", AttrKind::kInts, Ints{}, "axes to reduce (empty: all)"},
    {"keepdims", AttrKind::kInt, std::int64_t{1}, "1: keep reduced dims as 1"}};

}  // namespace

void register_reduction_ops(OpRegistry& r) {
  r.add({.name = "reduce_sum",
         .symbol = "reduce_sum",
         .summary = "sum over axes",
         .kind = OpKind::kReduction,
         .attrs = kReduceAttrs,
         .linear_in = {0},
         .shape = reduce_shape,
         .flops = reduce_flops,
         .kernel = STRATA_KERNELS(sum_kernel),
         .grad = reduce_grad<false>,
         .onnx_op = "ReduceSum"});
  r.add({.name = "reduce_mean",
         .symbol = "reduce_mean",
         .summary = "mean over axes",
         .kind = OpKind::kReduction,
         .attrs = kReduceAttrs,
         .linear_in = {0},
         .shape = reduce_shape,
         .flops = reduce_flops,
         .kernel = STRATA_KERNELS(mean_kernel),
         .grad = reduce_grad<true>,
         .onnx_op = "ReduceMean"});
}

}  // namespace strata::models::ops
