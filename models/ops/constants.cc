// Constant tensors (arity 0). The four TASO constants the substitution generator needs (TASO §2.2):
// const_imm (matmul identity), const_iconv (conv identity kernel), const_one (element-wise-mul identity) and
// const_pool (average pooling as a depth-wise convolution: every entry 1/(kh*kw), which is exact in the
// prime field, so conv(x, C_pool) = avgpool(x) holds there as over the reals). `fill` is a general constant.
#include "models/ops/common.h"
#include "models/ops/rule_helpers.h"

namespace strata::models::ops {
namespace {

DType dtype_attr(const Attrs& a) {
  auto d = parse_dtype(a.s("dtype"));
  if (!d) shape_fail(fmt::format("unknown dtype '{}'", a.s("dtype")));
  return *d;
}
std::int64_t positive(const Attrs& a, std::string_view name) {
  const auto v = a.i(name);
  if (v < 1) shape_fail(fmt::format("{} must be positive, got {}", name, v));
  return v;
}
Ints kernel_attr(const Attrs& a) {
  const auto& k = a.ints("kernel");
  if (k.size() != 2 || k[0] < 1 || k[1] < 1) shape_fail("kernel must be two positive integers");
  return k;
}

std::vector<TensorType> imm_shape(std::span<const TensorType>, const Attrs& a) {
  const auto n = positive(a, "size");
  return {TensorType{{n, n}, dtype_attr(a)}};
}
template <class T>
void imm_kernel(const KernelCall<T>& c) {
  const auto n = (*c.out[0].shape)[0];
  for (std::int64_t i = 0; i < c.out[0].numel; ++i) c.out[0][i] = Num<T>::from_int(i / n == i % n ? 1 : 0);
}
std::vector<TensorType> iconv_shape(std::span<const TensorType>, const Attrs& a) {
  const auto ch = positive(a, "channels");
  const auto k = kernel_attr(a);
  if (k[0] % 2 == 0 || k[1] % 2 == 0) shape_fail("identity kernel needs odd sizes");
  return {TensorType{{ch, ch, k[0], k[1]}, dtype_attr(a)}};
}
template <class T>
void iconv_kernel(const KernelCall<T>& c) {
  const auto& s = *c.out[0].shape;
  for (std::int64_t i = 0; i < c.out[0].numel; ++i) {
    const std::int64_t x = i % s[3], y = (i / s[3]) % s[2], ic = (i / (s[3] * s[2])) % s[1],
                       oc = i / (s[3] * s[2] * s[1]);
    c.out[0][i] = Num<T>::from_int(oc == ic && y == s[2] / 2 && x == s[3] / 2 ? 1 : 0);
  }
}
std::vector<TensorType> pool_shape(std::span<const TensorType>, const Attrs& a) {
  const auto k = kernel_attr(a);
  return {TensorType{{positive(a, "channels"), 1, k[0], k[1]}, dtype_attr(a)}};
}
template <class T>
void pool_kernel(const KernelCall<T>& c) {
  const auto& s = *c.out[0].shape;
  const T v = Num<T>::inv(Num<T>::from_int(s[2] * s[3]));
  for (std::int64_t i = 0; i < c.out[0].numel; ++i) c.out[0][i] = v;
}
std::vector<TensorType> fill_shape(std::span<const TensorType>, const Attrs& a) {
  for (auto d : a.ints("shape"))
    if (d < 0) shape_fail("negative dimension");
  return {TensorType{a.ints("shape"), dtype_attr(a)}};
}
template <class T>
void one_kernel(const KernelCall<T>& c) {
  for (std::int64_t i = 0; i < c.out[0].numel; ++i) c.out[0][i] = Num<T>::from_int(1);
}
template <class T>
void fill_kernel(const KernelCall<T>& c) {
  const T v = Num<T>::from_double(c.attrs.f("value"));
  for (std::int64_t i = 0; i < c.out[0].numel; ++i) c.out[0][i] = v;
}
double fill_bytes(std::span<const TensorType>, std::span<const TensorType> out, const Attrs&) {
  return out[0].bytes();
}

const AttrSpec kDtype{"dtype", AttrKind::kString, std::string("f32"), "element type"};
const AttrSpec kKernel{"kernel", AttrKind::kInts, Ints{3, 3}, "[height, width]"};
const AttrSpec kChannels{"channels", AttrKind::kInt, std::nullopt, "channels"};

// Rule forms of TASO's constants (Imatmul, Iconv, Cpool, Iewmul): they have no shape of their own; the
// sizing (RuleInstance::sizing) is the shape wanted where the constant is used, or its leading dimension for
// the kernels (one kernel per channel).
std::optional<Attrs> imm_rule(const RuleInstance& r) {
  if (!r.sizing || r.sizing->size() != 2 || (*r.sizing)[0] != (*r.sizing)[1]) return std::nullopt;
  return Attrs{{"size", (*r.sizing)[0]}};
}
std::optional<Attrs> kernel_constant_rule(const RuleInstance& r) {
  if (!r.sizing || r.sizing->empty() || r.params.size() != 2) return std::nullopt;
  return Attrs{{"channels", (*r.sizing)[0]}, {"kernel", Ints{r.params[0], r.params[1]}}};
}
std::optional<Ints> kernel_constant_params(std::span<const TensorType>, const Attrs& a, std::size_t) {
  const auto& k = a.ints("kernel");
  return Ints{k[0], k[1]};
}
std::optional<Attrs> ones_rule(const RuleInstance& r) {
  if (!r.sizing || r.sizing->empty()) return std::nullopt;
  return Attrs{{"shape", *r.sizing}};
}

}  // namespace

void register_constant_ops(OpRegistry& r) {
  r.add({.name = "const_imm",
         .symbol = "Imatmul",
         .summary = "identity matrix I_m (x @ I_m = x)",
         .kind = OpKind::kConstant,
         .min_inputs = 0,
         .max_inputs = 0,
         .attrs = {{"size", AttrKind::kInt, std::nullopt, "rows = columns"}, kDtype},
         .rule = {.to_attrs = imm_rule, .from_node = rule_no_params, .taso_generator_sizing = {4, 4}},
         .shape = imm_shape,
         .flops = zero_count,
         .bytes = fill_bytes,
         .kernel = STRATA_KERNELS(imm_kernel)});
  r.add({.name = "const_iconv",
         .symbol = "Iconv",
         .summary = "identity conv kernel I_c (conv(x, I_c) = x, SAME)",
         .kind = OpKind::kConstant,
         .min_inputs = 0,
         .max_inputs = 0,
         .attrs = {kChannels, kKernel, kDtype},
         .symbol_params = {{"kh", SymbolParamKind::kKernel}, {"kw", SymbolParamKind::kKernel}},
         .rule = {.to_attrs = kernel_constant_rule,
                  .from_node = kernel_constant_params,
                  .taso_generator_sizing = {4}},
         .shape = iconv_shape,
         .flops = zero_count,
         .bytes = fill_bytes,
         .kernel = STRATA_KERNELS(iconv_kernel)});
  r.add({.name = "const_pool",
         .symbol = "Cpool",
         .summary =
             "depth-wise averaging kernel C_p [C,1,kh,kw] = 1/(kh*kw) (conv(x, C_p, groups=C) = avgpool(x))",
         .kind = OpKind::kConstant,
         .min_inputs = 0,
         .max_inputs = 0,
         .attrs = {kChannels, kKernel, kDtype},
         .symbol_params = {{"kh", SymbolParamKind::kKernel}, {"kw", SymbolParamKind::kKernel}},
         .rule = {.to_attrs = kernel_constant_rule,
                  .from_node = kernel_constant_params,
                  .taso_generator_sizing = {4}},
         .shape = pool_shape,
         .flops = zero_count,
         .bytes = fill_bytes,
         .kernel = STRATA_KERNELS(pool_kernel)});
  r.add({.name = "const_one",
         .symbol = "Iewmul",
         .summary = "all-ones tensor (x * 1 = x)",
         .kind = OpKind::kConstant,
         .min_inputs = 0,
         .max_inputs = 0,
         .attrs = {{"shape", AttrKind::kInts, std::nullopt, "shape"}, kDtype},
         .rule = {.to_attrs = ones_rule, .from_node = rule_no_params, .taso_generator_sizing = {2, 4, 5, 5}},
         .shape = fill_shape,
         .flops = zero_count,
         .bytes = fill_bytes,
         .kernel = STRATA_KERNELS(one_kernel)});
  r.add({.name = "fill",
         .symbol = "fill",
         .summary = "tensor filled with one value",
         .kind = OpKind::kConstant,
         .min_inputs = 0,
         .max_inputs = 0,
         .attrs = {{"shape", AttrKind::kInts, std::nullopt, "shape"},
                   {"value", AttrKind::kFloat, 0.0, "fill value"},
                   kDtype},
         .shape = fill_shape,
         .flops = zero_count,
         .bytes = fill_bytes,
         .kernel = STRATA_KERNELS(fill_kernel)});
}

}  // namespace strata::models::ops
