// The operator table. Every operator is declared by exactly one OpDef entry (in models/ops/<family>.cc):
// its name, the symbolic name the Z3 verifier uses for it, arity, attributes with defaults, algebraic
// traits, the shape rule, FLOP and byte counts, the reference kernel in both number systems, and the
// gradient rule that training-graph derivation uses. The executor, cost model, ONNX bridge, training
// derivation and (issue 5) the substitution generator and verifier all read this table by name; nothing
// else switches over operator kinds.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "models/ir/attrs.h"
#include "models/ir/modp.h"
#include "models/ir/rule_form.h"
#include "models/ir/tensor_type.h"

namespace strata::models {

class Graph;
struct Node;
struct GradContext;

// Thrown by shape rules; Graph::add_node adds the node name and operator to the message.
class ShapeError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// How the cost model treats an operator (efficiency curves are per kind).
enum class OpKind : std::uint8_t {
  kContraction,   // matmul, conv: tensor-core bound when large
  kElementwise,   // memory bound streaming
  kReduction,     // reductions, normalizations, softmax
  kDataMovement,  // concat, split, data-moving transpose, pooling gathers
  kView,          // reshape, layout-only transpose: no kernel
  kConstant,      // constants materialized once (weights-side), no per-step kernel
  kOptimizer,     // optimizer updates
};
std::string_view op_kind_name(OpKind k);

struct AttrSpec {
  std::string_view name{};
  AttrKind kind;
  std::optional<AttrValue> default_value;  // nullopt: required
  std::string_view doc;
};

// An integer parameter of an operator's symbol in substitution rules and the Z3 verifier (TASO §3.1, TASO's
// rule-file spelling, docs/subst.md). Its kind fixes the value domain over which the verifier's axioms are
// validated (search/subst/operators.h); how a parameter relates to the node's attributes (e.g. pad 0 = SAME,
// from `pads` and the shapes) is the IR bridge's business (search/subst/ir_bridge.cc).
enum class SymbolParamKind : std::uint8_t { kStride, kPadding, kActivation, kKernel, kAxis };
struct SymbolParam {
  std::string_view name;
  SymbolParamKind kind;
};

// Rule trait: how an output axis of the operator relates to its inputs' axes, for TASO's split point (a
// rule's split_0/split_1 splits at the most recent concatenation boundary along its axis; docs/subst.md).
// `boundary`: the operator itself concatenates along this axis, its first part this long; `carried` then
// names the two parts' own axes (whose earlier boundaries nest inside). Otherwise `carried`: (input, axis)
// pairs whose index runs along the output axis unchanged, so an earlier boundary there is one here too (when
// several inputs carry it, their histories must agree). The optimizers' split point, the rule evaluator's
// split history and the generator's fingerprint metadata are all derived from this one declaration
// (search/subst/split_history.h).
struct SplitAxisTrace {
  std::optional<std::int64_t> boundary;
  std::vector<std::pair<int, std::int64_t>> carried;
};
using SplitAxisFn = SplitAxisTrace (*)(std::span<const TensorType> in, const TensorType& out,
                                       const Attrs& attrs, std::int64_t axis);

// Parallelization trait (FlexFlow's SOAP dimensions, Jia et al., SysML'19, arXiv 1807.05358, §3-4): the
// dimensions along which one execution of the operator can be divided into equal parts, each part computing a
// block of the output from blocks of the inputs. kSample: the batch; kAttribute: a dimension of a sample
// (sequence, image rows, heads), no weights split; kParameter: a dimension that splits the weights too
// (output channels, hidden units); kReduction: a contracted dimension (inner product length, input channels):
// every part holds a partial sum of the whole output block, and the parts' results must be summed
// (all-reduce). search/parallel (docs/parallel.md) reads only this; operators without the trait get the
// sample dimension when axis 0 of all their tensors agrees, else none (one part on one device).
enum class ParallelDimKind : std::uint8_t { kSample, kAttribute, kParameter, kReduction };
struct ParallelDim {
  std::string_view name;  // "batch", "rows", "out_channels", "in_features"
  ParallelDimKind kind = ParallelDimKind::kSample;
  std::int64_t extent = 1;  // the dimension's length; a degree must divide it
  int output_axis = -1;     // axis of every output it splits; -1 for kReduction (outputs are partial sums)
  // (input index, axis) pairs split along with it, proportionally (an input axis of length L split d ways
  // gives blocks of L/d; windowed operators' halos are ignored). Inputs not named are needed whole.
  std::vector<std::pair<int, int>> input_axes;
};
using ParallelDimsFn = std::vector<ParallelDim> (*)(std::span<const TensorType> in,
                                                    std::span<const TensorType> out, const Attrs& attrs);

// Read-only view of a tensor's elements plus its shape.
template <class T>
struct In {
  const T* data;
  const Shape* shape;
  std::int64_t numel;
  T operator[](std::int64_t i) const { return data[i]; }
};
template <class T>
struct Out {
  T* data;
  const Shape* shape;
  std::int64_t numel;
  T& operator[](std::int64_t i) const { return data[i]; }
};

// One kernel invocation: inputs, preallocated outputs (shapes from shape inference), the node's attributes.
template <class T>
struct KernelCall {
  std::span<const In<T>> in;
  std::span<const Out<T>> out;
  const Attrs& attrs;
};
template <class T>
using KernelFn = void (*)(const KernelCall<T>&);

struct Kernels {
  KernelFn<double> real = nullptr;
  KernelFn<ModP> modp = nullptr;
};
// Instantiates one kernel template for both number systems.
#define STRATA_KERNELS(fn)                   \
  ::strata::models::Kernels {                \
    &fn<double>, &fn<::strata::models::ModP> \
  }

using ShapeFn = std::vector<TensorType> (*)(std::span<const TensorType> in, const Attrs& attrs);
// FLOPs (a multiply-add counts 2) and HBM bytes of one execution, from the node's types and attributes.
using CountFn = double (*)(std::span<const TensorType> in, std::span<const TensorType> out,
                           const Attrs& attrs);
// Emits backward nodes for one forward node (see models/train/grad_context.h).
using GradFn = void (*)(GradContext& ctx);
// The cost model's kernel variant of one instance ("" for the operator's usual kernel; OpDef::cost_variant).
using CostVariantFn = std::string_view (*)(std::span<const TensorType> in, const Attrs& attrs);

struct OpDef {
  std::string_view name{};    // IR name, unique: "conv2d"
  std::string_view symbol{};  // uninterpreted-function name for the Z3 verifier and rule files: "conv2d"
  std::string_view summary{};
  OpKind kind = OpKind::kElementwise;
  int min_inputs = 1;
  int max_inputs = 1;  // -1: variadic
  std::vector<AttrSpec> attrs{};
  // The symbol's integer parameters, in order (TASO §3.1). Substitution rules (search/subst/operators.h)
  // derive their operator vocabulary from the operators that declare a rule form (`rule` below): symbol,
  // symbol_params, symbol_inputs, symbol_outputs, split_axis and the rule form. Other operators have a
  // symbol for the verifier but are not usable in rules.
  std::vector<SymbolParam> symbol_params{};
  int symbol_inputs =
      -1;  // tensor arguments of the symbol; -1: the operator's fixed arity (min = max inputs)
  int symbol_outputs = 1;  // > 1: one symbol per output, "<symbol>_<i>" (split: split_0, split_1)
  // Algebraic traits the substitution generator may exploit.
  bool commutative = false;
  bool associative = false;
  bool elementwise = false;
  std::vector<int> linear_in{};      // inputs in which the op is linear (others fixed)
  SplitAxisFn split_axis = nullptr;  // rule trait (above); nullptr: no split point is traced through it
  RuleForm rule{};                   // rule traits (models/ir/rule_form.h); empty: not usable in rules
  bool backward = false;             // a gradient or optimizer op (not differentiated again)
  ShapeFn shape = nullptr;
  CountFn flops = nullptr;
  CountFn bytes = nullptr;  // nullptr: sum of input and output bytes
  // Cost-model trait: instances that libraries run with a kernel of another nature (global pooling is a
  // per-channel reduction, windowed pooling a stencil) get an efficiency curve of their own, named
  // "<name>:<variant>" (models/cost/cost_model.h, cost_curve_name). `cost_variants` lists every name
  // `cost_variant` returns; cost-parameter files are checked against it. nullptr: one curve for all
  // instances.
  CostVariantFn cost_variant = nullptr;
  std::vector<std::string_view> cost_variants{};
  Kernels kernel{};
  GradFn grad = nullptr;  // nullptr: not differentiable (constants, backward ops, index inputs)
  // The ONNX operator that expresses it directly (""): the ONNX bridge maps attributes per op type.
  std::string_view onnx_op{};
  // Parallelization trait (ParallelDim above); nullptr: the default sample-or-nothing rule.
  ParallelDimsFn parallel_dims = nullptr;
};

class OpRegistry {
 public:
  static const OpRegistry& instance();
  const OpDef* find(std::string_view name) const;
  const OpDef& get(std::string_view name) const;  // throws std::invalid_argument listing known ops
  std::span<const OpDef> all() const { return ops_; }
  std::string names() const;  // comma-separated, table order

  void add(OpDef def);  // used by the family registration functions only

 private:
  std::vector<OpDef> ops_;
};

// Family registration (models/ops/*.cc); OpRegistry::instance() calls each once.
namespace ops {
void register_elementwise_ops(OpRegistry& r);
void register_contraction_ops(OpRegistry& r);
void register_attention_ops(OpRegistry& r);
void register_movement_ops(OpRegistry& r);
void register_pooling_ops(OpRegistry& r);
void register_normalization_ops(OpRegistry& r);
void register_reduction_ops(OpRegistry& r);
void register_embedding_ops(OpRegistry& r);
void register_constant_ops(OpRegistry& r);
void register_optimizer_ops(OpRegistry& r);
}  // namespace ops

}  // namespace strata::models
