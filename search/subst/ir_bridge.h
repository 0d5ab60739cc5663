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
  std::string_view name;  // IR operator name
  models::Attrs attrs;    // complete for the IR op except defaults
  int output = 0;         // which IR output the rule operator denotes (split_1: 1)
};

// The IR operator for `inst` on inputs of the given shapes. `split_point` is the size of the first part for
// split_0/split_1 (TASO's most recent concatenation boundary). Constants take the channel count from
// `constant_channels` (Iconv, Cpool), the size from `constant_shape` (Iewmul, Imatmul). std::nullopt when the
// instance cannot apply to these shapes (e.g. SAME padding with an even kernel).
std::optional<IrOp> to_ir(const OpInstance& inst, std::span<const models::Shape> input_shapes,
                          std::int64_t split_point = 0, const models::Shape& constant_shape = {});

// The rule operator an IR node denotes, or nullopt when it has none (an IR op outside TASO's vocabulary, or
// attributes the vocabulary cannot express: dilation, bias, transposed matmul operands, asymmetric
// padding...). Split nodes with two outputs map to split_0 (their first output) and split_1 is output 1.
std::optional<OpInstance> from_ir(const models::Graph& g, const models::Node& n);

// The shape of a constant (Iconv, Cpool, Imatmul, Iewmul) that is tensor argument `arg` of a `parent`
// operator whose other argument has shape `sibling` (a rule's constants carry no shape of their own): an
// Iconv/Cpool weight has one kernel per input channel, Imatmul is square on the contracted side, Iewmul takes
// the sibling's shape. nullopt where the constant cannot stand in that position.
std::optional<models::Shape> constant_shape_in(Op parent, std::size_t arg, const models::Shape& sibling);

// Whether the optimizers may match or build an IR node with these attributes through rules. Grouped
// convolutions are excluded: TASO's axioms over convolutions (conv_channel_concat, concat_conv_out_channels,
// ...) hold for groups = 1 only (docs/subst.md), and the rules' conv2d derives its groups from the shapes, so
// a rewritten weight would silently change the grouping. (to_ir itself builds them: the generator and the
// verifier need conv2d with C_pool, a depth-wise convolution.) Declared once for both optimizers.
bool rules_may_use(std::string_view ir_op, const models::Attrs& attrs);

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
