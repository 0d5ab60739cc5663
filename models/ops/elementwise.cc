// Element-wise family: binary arithmetic with numpy broadcasting, scalar multiplication, and unary
// activations (each unary entry also declares its gradient op "<name>_grad"(x, dy) = dy * f'(x)).
#include <cmath>
#include <numbers>

#include "models/ops/activations.h"
#include "models/ops/common.h"
#include "models/ops/parallel_dims.h"
#include "models/ops/rule_helpers.h"
#include "models/train/grad_context.h"

namespace strata::models::ops {
namespace {

// ---- binary ----
std::vector<TensorType> binary_shape(std::span<const TensorType> in, const Attrs&) {
  if (in[0].dtype != in[1].dtype)
    shape_fail(
        fmt::format("element types differ: {} vs {}", dtype_name(in[0].dtype), dtype_name(in[1].dtype)));
  return {TensorType{broadcast_shapes(in[0].shape, in[1].shape), in[0].dtype}};
}
double one_per_out(std::span<const TensorType>, std::span<const TensorType> out, const Attrs&) {
  return out_numel(out);
}

struct Add {
  template <class T>
  static T op(T a, T b) {
    return a + b;
  }
};
struct Sub {
  template <class T>
  static T op(T a, T b) {
    return a - b;
  }
};
struct Mul {
  template <class T>
  static T op(T a, T b) {
    return a * b;
  }
};

template <class Op>
struct Binary {
  template <class T>
  static void kernel(const KernelCall<T>& c) {
    const T* a = c.in[0].data;
    const T* b = c.in[1].data;
    T* o = c.out[0].data;
    for_each_broadcast(
        *c.out[0].shape, *c.in[0].shape, *c.in[1].shape,
        [&](std::int64_t i, std::int64_t ia, std::int64_t ib) { o[i] = Op::op(a[ia], b[ib]); });
  }
};
template <class T>
void add_kernel(const KernelCall<T>& c) {
  Binary<Add>::kernel(c);
}
template <class T>
void sub_kernel(const KernelCall<T>& c) {
  Binary<Sub>::kernel(c);
}
template <class T>
void mul_kernel(const KernelCall<T>& c) {
  Binary<Mul>::kernel(c);
}

void add_grad(GradContext& c) {
  if (c.need(0)) c.set_dx(0, c.dout());
  if (c.need(1)) c.set_dx(1, c.dout());
}
void sub_grad(GradContext& c) {
  if (c.need(0)) c.set_dx(0, c.dout());
  if (c.need(1)) c.set_dx(1, c.emit("scalar_mul", {c.dout(), c.scalar(-1.0)}));
}
void mul_grad(GradContext& c) {
  if (c.need(0)) c.set_dx(0, c.emit("ewmul", {c.dout(), c.x(1)}));
  if (c.need(1)) c.set_dx(1, c.emit("ewmul", {c.dout(), c.x(0)}));
}

// ---- scalar multiplication: x * s with s a 0-D tensor ----
std::vector<TensorType> smul_shape(std::span<const TensorType> in, const Attrs&) {
  if (in[1].rank() != 0)
    shape_fail(fmt::format("scalar operand must be 0-D, got {}", shape_str(in[1].shape)));
  return {in[0]};
}
template <class T>
void smul_kernel(const KernelCall<T>& c) {
  const T s = c.in[1][0];
  for (std::int64_t i = 0; i < c.out[0].numel; ++i) c.out[0][i] = c.in[0][i] * s;
}
void smul_grad(GradContext& c) {
  if (c.need(0)) c.set_dx(0, c.emit("scalar_mul", {c.dout(), c.x(1)}));
  if (c.need(1)) {
    const auto prod = c.emit("ewmul", {c.dout(), c.x(0)});
    Ints all;
    for (int i = 0; i < c.type(prod).rank(); ++i) all.push_back(i);
    c.set_dx(1, c.emit("reduce_sum", {prod}, {{"axes", all}, {"keepdims", std::int64_t{0}}}));
  }
}

// ---- unary activations ----
std::vector<TensorType> same_shape(std::span<const TensorType> in, const Attrs&) {
  return {in[0]};
}
std::vector<TensorType> grad_shape(std::span<const TensorType> in, const Attrs&) {
  if (in[0].shape != in[1].shape)
    shape_fail(fmt::format("x {} and dy {} differ", shape_str(in[0].shape), shape_str(in[1].shape)));
  return {in[0]};
}

template <class F>
struct Unary {
  template <class T>
  static void fwd(const KernelCall<T>& c) {
    for (std::int64_t i = 0; i < c.out[0].numel; ++i) c.out[0][i] = apply_f<F>(c.in[0][i]);
  }
  template <class T>
  static void bwd(const KernelCall<T>& c) {
    for (std::int64_t i = 0; i < c.out[0].numel; ++i) c.out[0][i] = c.in[1][i] * apply_df<F>(c.in[0][i]);
  }
  static double flops(std::span<const TensorType>, std::span<const TensorType> out, const Attrs&) {
    return F::kFlops * out_numel(out);
  }
  static double bwd_flops(std::span<const TensorType>, std::span<const TensorType> out, const Attrs&) {
    return (F::kFlops + 1) * out_numel(out);
  }
};

// Declares a unary activation and its gradient operator in one go.
template <class F>
void add_unary(OpRegistry& r, std::string_view name, std::string_view grad_name, std::string_view symbol,
               std::string_view summary, std::string_view onnx, GradFn grad, SplitAxisFn split_axis = nullptr,
               RuleForm rule = {}) {
  r.add({.name = name,
         .symbol = symbol,
         .summary = summary,
         .kind = OpKind::kElementwise,
         .elementwise = true,
         .split_axis = split_axis,
         .rule = std::move(rule),
         .shape = same_shape,
         .flops = &Unary<F>::flops,
         .kernel = {&Unary<F>::template fwd<double>, &Unary<F>::template fwd<ModP>},
         .grad = grad,
         .onnx_op = onnx,
         .parallel_dims = elementwise_parallel_dims});
  r.add({.name = grad_name,
         .symbol = grad_name,
         .summary = "gradient of the activation: dy * f'(x)",
         .kind = OpKind::kElementwise,
         .min_inputs = 2,
         .max_inputs = 2,
         .elementwise = true,
         .backward = true,
         .shape = grad_shape,
         .flops = &Unary<F>::bwd_flops,
         .kernel = {&Unary<F>::template bwd<double>, &Unary<F>::template bwd<ModP>}});
}

template <const char* GradName>
void unary_grad(GradContext& c) {
  if (c.need(0)) c.set_dx(0, c.emit(GradName, {c.x(0), c.dout()}));
}
constexpr char kReluGrad[] = "relu_grad", kSigmoidGrad[] = "sigmoid_grad", kTanhGrad[] = "tanh_grad",
               kGeluGrad[] = "gelu_grad", kSiluGrad[] = "silu_grad", kRsqrtGrad[] = "rsqrt_grad";

// Rule forms (TASO's ewadd, ewmul, smul, relu): TASO's element-wise symbols take operands of one shape (no
// broadcasting); smul multiplies a tensor by a 0-D scalar.
std::optional<Attrs> same_shape_pair_rule(const RuleInstance& r) {
  if (r.inputs.size() != 2 || r.inputs[0] != r.inputs[1]) return std::nullopt;
  return Attrs{};
}
std::optional<Ints> same_shape_pair_params(std::span<const TensorType> in, const Attrs&, std::size_t) {
  if (in.size() != 2 || in[0].shape != in[1].shape) return std::nullopt;
  return Ints{};
}
RuleForm same_shape_pair_rule_form() {
  return {.to_attrs = same_shape_pair_rule,
          .from_node = same_shape_pair_params,
          .operand_shape = rule_other_or_wanted,
          .shape_follows = {0, 1}};
}

std::optional<Attrs> smul_rule(const RuleInstance& r) {
  if (r.inputs.size() != 2 || !r.inputs[1].empty() || r.inputs[0].empty()) return std::nullopt;
  return Attrs{};
}
std::optional<Attrs> relu_rule(const RuleInstance& r) {
  if (r.inputs.size() != 1 || r.inputs[0].empty()) return std::nullopt;
  return Attrs{};
}
// The rule form of an element-wise activation of one tensor (relu's, with the operator's own axioms).
RuleForm unary_rule_form(std::vector<RuleAxiom> axioms = {}) {
  return {.to_attrs = relu_rule,
          .from_node = rule_no_params,
          .operand_shape = rule_wanted,
          .shape_follows = {0},
          .axioms = std::move(axioms)};
}

}  // namespace

void register_elementwise_ops(OpRegistry& r) {
  r.add({.name = "ewadd",
         .symbol = "ewadd",
         .summary = "element-wise a + b (numpy broadcasting)",
         .min_inputs = 2,
         .max_inputs = 2,
         .commutative = true,
         .associative = true,
         .elementwise = true,
         .linear_in = {0, 1},
         .split_axis = split_axis_same_shape,
         .rule = same_shape_pair_rule_form(),
         .shape = binary_shape,
         .flops = one_per_out,
         .kernel = STRATA_KERNELS(add_kernel),
         .grad = add_grad,
         .onnx_op = "Add",
         .parallel_dims = elementwise_parallel_dims});
  r.add({.name = "ewsub",
         .symbol = "ewsub",
         .summary = "element-wise a - b (numpy broadcasting)",
         .min_inputs = 2,
         .max_inputs = 2,
         .elementwise = true,
         .linear_in = {0, 1},
         .shape = binary_shape,
         .flops = one_per_out,
         .kernel = STRATA_KERNELS(sub_kernel),
         .grad = sub_grad,
         .onnx_op = "Sub",
         .parallel_dims = elementwise_parallel_dims});
  r.add({.name = "ewmul",
         .symbol = "ewmul",
         .summary = "element-wise a * b (numpy broadcasting)",
         .min_inputs = 2,
         .max_inputs = 2,
         .commutative = true,
         .associative = true,
         .elementwise = true,
         .linear_in = {0, 1},
         .split_axis = split_axis_same_shape,
         .rule = same_shape_pair_rule_form(),
         .shape = binary_shape,
         .flops = one_per_out,
         .kernel = STRATA_KERNELS(mul_kernel),
         .grad = mul_grad,
         .onnx_op = "Mul",
         .parallel_dims = elementwise_parallel_dims});
  r.add({.name = "scalar_mul",
         .symbol = "smul",
         .summary = "x * s for a 0-D tensor s",
         .min_inputs = 2,
         .max_inputs = 2,
         .elementwise = true,
         .linear_in = {0, 1},
         .split_axis = split_axis_same_shape,
         .rule = {.to_attrs = smul_rule,
                  .from_node = rule_no_params,
                  .operand_shape = rule_wanted,
                  .shape_follows = {0}},
         .shape = smul_shape,
         .flops = one_per_out,
         .kernel = STRATA_KERNELS(smul_kernel),
         .grad = smul_grad,
         .onnx_op = "Mul",
         .parallel_dims = elementwise_parallel_dims});
  add_unary<Relu>(r, "relu", kReluGrad, "relu", "max(x, 0)", "Relu", unary_grad<kReluGrad>,
                  split_axis_same_shape, unary_rule_form());
  add_unary<Sigmoid>(
      r, "sigmoid", kSigmoidGrad, "sigmoid", "1 / (1 + exp(-x))", "Sigmoid", unary_grad<kSigmoidGrad>,
      split_axis_same_shape,
      unary_rule_form(
          {{"sigmoid_concat", "ax x y", "sigmoid(concat(ax,x,y)) == concat(ax,sigmoid(x),sigmoid(y))",
            "element-wise: σ([x|y]_a) = [σ x | σ y]_a"},
           {"sigmoid_transpose", "x", "sigmoid(transpose(x)) == transpose(sigmoid(x))",
            "element-wise: σ(xᵀ) = (σ x)ᵀ"}}));
  add_unary<Tanh>(
      r, "tanh", kTanhGrad, "tanh", "tanh(x)", "Tanh", unary_grad<kTanhGrad>, split_axis_same_shape,
      unary_rule_form({{"tanh_concat", "ax x y", "tanh(concat(ax,x,y)) == concat(ax,tanh(x),tanh(y))",
                        "element-wise: tanh([x|y]_a) = [tanh x | tanh y]_a"},
                       {"tanh_transpose", "x", "tanh(transpose(x)) == transpose(tanh(x))",
                        "element-wise: tanh(xᵀ) = (tanh x)ᵀ"}}));
  add_unary<Gelu>(r, "gelu", kGeluGrad, "gelu", "x * Phi(x) (exact erf form)", "Gelu", unary_grad<kGeluGrad>);
  add_unary<Silu>(r, "silu", kSiluGrad, "silu", "x * sigmoid(x) (swish)", "", unary_grad<kSiluGrad>);
  add_unary<Rsqrt>(r, "rsqrt", kRsqrtGrad, "rsqrt", "1 / sqrt(x)", "", unary_grad<kRsqrtGrad>);
}

}  // namespace strata::models::ops
