// The rule form of an operator: how it appears in substitution rules (TASO's verifier vocabulary, SOSP'19
// §3-4; symbol names and parameter order of `operator_data` in verify/verify.py of jiazhihao/TASO@f11782c).
// An operator that rules may use declares its rule form on its OpDef (models/ir/op_def.h) next to its
// symbol, symbol_params and split_axis; search/subst derives its operator vocabulary, the IR bridge, the
// constants' sizing and the shape context of rule terms from these entries and switches over no operator
// names (docs/subst.md, "How to add an operator").
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "models/ir/attrs.h"
#include "models/ir/tensor_type.h"

namespace strata::models {

// TASO's enumerations as rule parameters (TASO's PaddingMode and ActiMode).
inline constexpr std::int64_t kRulePadSame = 0, kRulePadValid = 1;
inline constexpr std::int64_t kRuleActiNone = 0, kRuleActiRelu = 2;

// One instance of the operator's symbol on operands of known shapes.
struct RuleInstance {
  std::span<const std::int64_t> params;  // the symbol's integer parameters, in symbol_params order
  std::span<const Shape> inputs;         // shapes of the symbol's tensor arguments
  // Operators with several symbol outputs (split): the length of the first part along the axis (TASO's
  // split point, the most recent concatenation boundary); 0 when unknown.
  std::int64_t split_point = 0;
  // Constants (no tensor arguments) carry no shape of their own: `sizing` is the shape the constant should
  // have, or a leading part of it that fixes the rest (an identity kernel reads the channel count only).
  const Shape* sizing = nullptr;
};

// The node attributes (defaults left out) of `inst`; nullopt when the symbol does not apply to these
// operand shapes (e.g. SAME padding with an even kernel, a split point outside the axis).
using RuleAttrsFn = std::optional<Attrs> (*)(const RuleInstance& inst);
// The symbol parameters a node with these input types, attributes and output count denotes; nullopt when
// the attributes fall outside what the symbol expresses (dilation, bias, transposed operands, asymmetric
// padding...).
using RuleParamsFn = std::optional<std::vector<std::int64_t>> (*)(std::span<const TensorType> in,
                                                                  const Attrs& attrs, std::size_t outputs);
// The shape tensor argument `arg` must have, from the other argument's shape (binary symbols; nullptr when
// unknown) and the shape wanted for the result (nullptr when unknown); nullopt when they do not fix it. A
// constant argument is sized by it: a rule's constants take their shape from where they are used.
using RuleOperandShapeFn = std::optional<Shape> (*)(std::size_t arg, const Shape* other, const Shape* wanted);
// Whether the optimizers may match or build a node with these attributes through rules.
using RuleAllowsFn = bool (*)(const Attrs& attrs);

// An axiom about the operator for the verifier (search/subst/axioms.h), written like TASO's axiom table: the
// quantified variables (space separated; identifiers in parameter positions are parameter variables) and
// "LHS == RHS" in rule-file term syntax. The verifier uses TASO's axioms plus those every operator declares.
struct RuleAxiom {
  std::string_view name;
  std::string_view variables;
  std::string_view equation;
  std::string_view note;  // what it says
};

struct RuleForm {
  RuleAttrsFn to_attrs = nullptr;  // nullptr: the operator is not part of the rule vocabulary
  RuleParamsFn from_node = nullptr;
  RuleOperandShapeFn operand_shape = nullptr;  // nullptr: no argument's shape follows from its context
  // Tensor arguments whose shape alone fixes the result's shape (relu: {0}, ewadd: {0, 1}): a term built of
  // such operators over constants has no shape of its own and takes it from its context.
  std::vector<int> shape_follows{};
  RuleAllowsFn optimizers_may_use = nullptr;  // nullptr: every node the symbol denotes
  // Constants: the sizing TASO's public generator gives them (src/generator/generator.cc: I_matmul 4x4,
  // I_ewmul 2x4x5x5, I_conv and C_pool with 4 channels).
  Shape taso_generator_sizing{};
  // Axioms of operators outside TASO's vocabulary (TASO's own are in search/subst/axioms.cc).
  std::vector<RuleAxiom> axioms{};
};

}  // namespace strata::models
