// The bridge between rule operators (search/subst/operators.h, TASO's vocabulary with integer parameters) and
// the operator IR of models/ (models/ir/op_def.h): which IR operator and attributes an operator instance is
// on given input shapes, and back. The generator evaluates rule operators through it with the IR's kernels;
// the optimizer uses it to match rule terms against IR nodes and to emit replacement nodes.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "models/ir/attrs.h"
#include "models/ir/graph.h"
#include "search/subst/operators.h"

namespace strata::search::subst {

// An operator instance: a rule operator with literal parameters (split_0/split_1 share one IR split node).
struct OpInstance {
  Op op = Op::kEwadd;
  std::vector<std::int64_t> params;
  friend bool operator==(const OpInstance&, const OpInstance&) = default;
  friend auto operator<=>(const OpInstance&, const OpInstance&) = default;
};

struct IrOp {
  const models::OpDef* def = nullptr;  // the IR operator
  models::Attrs attrs;                 // complete for the IR op except defaults
  int output = 0;                      // which IR output the rule operator denotes (split_1: 1)
  [[nodiscard]] std::string_view name() const { return def->name; }
};

// The IR operator for `inst` on inputs of the given shapes, by the operator's rule form (OpDef::rule,
// models/ir/rule_form.h). `split_point` is the size of the first part for split_0/split_1 (TASO's most
// recent concatenation boundary). Constants are sized by `constant_shape` (RuleInstance::sizing; empty: no
// sizing). std::nullopt when the instance cannot apply to these shapes (e.g. SAME padding with an even
// kernel).
std::optional<IrOp> to_ir(const OpInstance& inst, std::span<const models::Shape> input_shapes,
                          std::int64_t split_point = 0, const models::Shape& constant_shape = {});

// An IR operator applied to operands of given shapes (element type f32): the OpDef, the completed
// attributes and the input and output types.
struct IrApplication {
  const models::OpDef* def = nullptr;
  models::Attrs attrs;
  std::vector<models::TensorType> inputs, outputs;
};
// `ir` on inputs of these shapes, or the diagnostic of its attribute check or shape rule
// (models::try_complete_attrs, models::try_infer_types): no exception for a combination that does not apply.
models::TryResult<IrApplication> apply_ir(const IrOp& ir, std::span<const models::Shape> input_shapes,
                                          std::string_view where);

// The rule operator an IR node denotes, or nullopt when it has none (an IR op without a rule form, or
// attributes the vocabulary cannot express: dilation, bias, transposed matmul operands, asymmetric
// padding...). Split nodes with two outputs map to split_0 (their first output) and split_1 is output 1.
std::optional<OpInstance> from_ir(const models::Graph& g, const models::Node& n);

// The shape tensor argument `arg` of `parent` must have, from the other argument's shape (nullptr: unknown)
// and the shape wanted for the result (nullptr: unknown), as the parent's rule form declares it
// (RuleForm::operand_shape); nullopt where they do not fix it. A rule's constants carry no shape of their
// own and are sized by it.
std::optional<models::Shape> operand_shape(Op parent, std::size_t arg, const models::Shape* other,
                                           const models::Shape* wanted);
// The sizing of a constant that is argument `arg` of `parent` whose other argument has shape `sibling`.
std::optional<models::Shape> constant_shape_in(Op parent, std::size_t arg, const models::Shape& sibling);

// Whether the optimizers may match or build an IR node with these attributes through rules, as the
// operator's rule form declares it (RuleForm::optimizers_may_use: conv2d excludes grouped convolutions).
bool rules_may_use(const models::OpDef& def, const models::Attrs& attrs);

// One producer of a value (or one e-node of an e-class), as TASO's split-point search sees it.
struct SplitTraceStep {
  const models::OpDef* op = nullptr;
  const models::Attrs* attrs = nullptr;
  std::vector<models::TensorType> inputs;
  models::TensorType output;
  std::vector<std::int64_t> children;  // ids of the inputs, in order
};
using SplitTraceProducers = std::function<std::vector<SplitTraceStep>(std::int64_t id)>;

// TASO's split point along `axis` of value (or e-class) `id`: its most recent concatenation boundary, traced
// back at most `depth` steps through the operators that carry the axis, as each operator declares it
// (OpDef::split_axis). Producers are tried in order and the first boundary found wins. Declared once for the
// backtracking optimizer (one producer per value) and equality saturation (the e-nodes of a class).
std::optional<std::int64_t> concat_boundary(std::int64_t id, std::int64_t axis, int depth,
                                            const SplitTraceProducers& producers);
// The same for value v of an IR graph (one producer per value).
std::optional<std::int64_t> concat_boundary(const models::Graph& g, models::ValueId v, std::int64_t axis,
                                            int depth);

// "conv2d(1,1,0,0)", "ewadd" etc.
std::string instance_name(const OpInstance& inst);

}  // namespace strata::search::subst
