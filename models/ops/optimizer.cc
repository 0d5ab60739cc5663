// Optimizer updates, the last step of a training graph: sgd (p - lr * g) and Adam (Kingma & Ba, with bias
// correction at step `step`). Adam keeps its moments as optimizer-state values; outputs replace them.
#include <cmath>

#include "models/ops/common.h"

namespace strata::models::ops {
namespace {

std::vector<TensorType> same_as_param(std::span<const TensorType> in, const Attrs&) {
  for (std::size_t i = 1; i < in.size(); ++i)
    if (in[i].shape != in[0].shape)
      shape_fail(fmt::format("input {} shape {} differs from the parameter's {}", i, shape_str(in[i].shape),
                             shape_str(in[0].shape)));
  return {in[0]};
}
double sgd_flops(std::span<const TensorType> in, std::span<const TensorType>, const Attrs&) {
  return 2.0 * static_cast<double>(in[0].numel());
}
template <class T>
void sgd_kernel(const KernelCall<T>& c) {
  const T lr = Num<T>::from_double(c.attrs.f("lr"));
  for (std::int64_t i = 0; i < c.out[0].numel; ++i) c.out[0][i] = c.in[0][i] - lr * c.in[1][i];
}
std::vector<TensorType> adam_shape(std::span<const TensorType> in, const Attrs&) {
  for (std::size_t i = 1; i < in.size(); ++i)
    if (in[i].shape != in[0].shape)
      shape_fail(fmt::format("input {} shape {} differs from the parameter's {}", i, shape_str(in[i].shape),
                             shape_str(in[0].shape)));
  return {in[0], in[2], in[3]};
}
double adam_flops(std::span<const TensorType> in, std::span<const TensorType>, const Attrs&) {
  return 12.0 * static_cast<double>(in[0].numel());
}
template <class T>
void adam_kernel(const KernelCall<T>& c) {  // (p, g, m, v) -> p', m', v'
  const double b1 = c.attrs.f("beta1"), b2 = c.attrs.f("beta2");
  const double step = static_cast<double>(c.attrs.i("step"));
  const T tb1 = Num<T>::from_double(b1), tb2 = Num<T>::from_double(b2);
  const T one = Num<T>::from_int(1);
  const T lr_c =
      Num<T>::from_double(c.attrs.f("lr") * std::sqrt(1 - std::pow(b2, step)) / (1 - std::pow(b1, step)));
  const T eps = Num<T>::from_double(c.attrs.f("epsilon"));
  for (std::int64_t i = 0; i < c.out[0].numel; ++i) {
    const T g = c.in[1][i];
    const T m = tb1 * c.in[2][i] + (one - tb1) * g;
    const T v = tb2 * c.in[3][i] + (one - tb2) * g * g;
    T step_size;
    if constexpr (std::is_same_v<T, double>)
      step_size = m / (std::sqrt(v) + eps);
    else
      step_size = m * Num<T>::rsqrt(v + eps);
    c.out[0][i] = c.in[0][i] - lr_c * step_size;
    c.out[1][i] = m;
    c.out[2][i] = v;
  }
}

}  // namespace

void register_optimizer_ops(OpRegistry& r) {
  r.add({.name = "sgd_update",
         .symbol = "sgd_update",
         .summary = "(param, grad) -> param - lr * grad",
         .kind = OpKind::kOptimizer,
         .min_inputs = 2,
         .max_inputs = 2,
         .attrs = {{"lr", AttrKind::kFloat, 0.01, "learning rate"}},
         .backward = true,
         .shape = same_as_param,
         .flops = sgd_flops,
         .kernel = STRATA_KERNELS(sgd_kernel)});
  r.add({.name = "adam_update",
         .symbol = "adam_update",
         .summary = "(param, grad, m, v) -> param', m', v' (Adam)",
         .kind = OpKind::kOptimizer,
         .min_inputs = 4,
         .max_inputs = 4,
         .attrs = {{"lr", AttrKind::kFloat, 1e-3, "learning rate"},
                   {"beta1", AttrKind::kFloat, 0.9, "first-moment decay"},
                   {"beta2", AttrKind::kFloat, 0.999, "second-moment decay"},
                   {"epsilon", AttrKind::kFloat, 1e-8, "denominator offset"},
                   {"step", AttrKind::kInt, std::int64_t{1}, "step number for bias correction"}},
         .backward = true,
         .shape = adam_shape,
         .flops = adam_flops,
         .kernel = STRATA_KERNELS(adam_kernel)});
}

}  // namespace strata::models::ops
