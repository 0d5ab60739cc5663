// Optimizer updates, the last step of a training graph: sgd (p - lr * g) and Adam (Kingma & Ba, with bias
// correction at step `step`). Adam keeps its moments as optimizer-state values; outputs replace them.
// Mixed-precision training (f16/bf16 parameters) passes an f32 master copy of the parameter as the last
// input: the update is applied to the master copy, which is also returned (last output), and the parameter
// becomes the updated master copy rounded to its own type (Micikevicius et al., "Mixed Precision Training",
// ICLR 2018). Output k > 0 replaces input k + 1 in place; output 0 replaces input 0.
#include <cmath>

#include "models/ops/common.h"

namespace strata::models::ops {
namespace {

void check_param_shapes(std::span<const TensorType> in) {
  for (std::size_t i = 1; i < in.size(); ++i)
    if (in[i].shape != in[0].shape)
      shape_fail(fmt::format("input {} shape {} differs from the parameter's {}", i, shape_str(in[i].shape),
                             shape_str(in[0].shape)));
}
std::vector<TensorType> sgd_shape(std::span<const TensorType> in, const Attrs&) {
  check_param_shapes(in);
  if (in.size() == 3) return {in[0], in[2]};  // (param, master)
  return {in[0]};
}
double sgd_flops(std::span<const TensorType> in, std::span<const TensorType>, const Attrs&) {
  return 2.0 * static_cast<double>(in[0].numel());
}
template <class T>
void sgd_kernel(const KernelCall<T>& c) {
  const T lr = Num<T>::from_double(c.attrs.f("lr"));
  const bool master = c.in.size() == 3;
  const auto& base = master ? c.in[2] : c.in[0];
  for (std::int64_t i = 0; i < c.out[0].numel; ++i) {
    c.out[0][i] = base[i] - lr * c.in[1][i];
    if (master) c.out[1][i] = c.out[0][i];
  }
}
std::vector<TensorType> adam_shape(std::span<const TensorType> in, const Attrs&) {
  check_param_shapes(in);
  if (in.size() == 5) return {in[0], in[2], in[3], in[4]};  // (param, m, v, master)
  return {in[0], in[2], in[3]};
}
double adam_flops(std::span<const TensorType> in, std::span<const TensorType>, const Attrs&) {
  return 12.0 * static_cast<double>(in[0].numel());
}
template <class T>
void adam_kernel(const KernelCall<T>& c) {  // (p, g, m, v[, master]) -> p', m', v'[, master']
  const bool master = c.in.size() == 5;
  const auto& base = master ? c.in[4] : c.in[0];
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
    c.out[0][i] = base[i] - lr_c * step_size;
    c.out[1][i] = m;
    c.out[2][i] = v;
    if (master) c.out[3][i] = c.out[0][i];
  }
}

}  // namespace

void register_optimizer_ops(OpRegistry& r) {
  r.add({.name = "sgd_update",
         .symbol = "sgd_update",
         .summary = "(param, grad[, f32 master]) -> param - lr * grad[, master']",
         .kind = OpKind::kOptimizer,
         .min_inputs = 2,
         .max_inputs = 3,
         .attrs = {{"lr", AttrKind::kFloat, 0.01, "learning rate"}},
         .backward = true,
         .shape = sgd_shape,
         .flops = sgd_flops,
         .kernel = STRATA_KERNELS(sgd_kernel)});
  r.add({.name = "adam_update",
         .symbol = "adam_update",
         .summary = "(param, grad, m, v[, f32 master]) -> param', m', v'[, master'] (Adam)",
         .kind = OpKind::kOptimizer,
         .min_inputs = 4,
         .max_inputs = 5,
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
