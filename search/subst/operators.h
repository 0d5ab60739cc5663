// The operator symbols of substitution rules: TASO's verifier vocabulary (`operator_data` in verify/verify.py
// of jiazhihao/TASO@f11782c) and any other operator that declares a rule form. Each symbol is declared once,
// by the OpDef of the IR operator it denotes (models/ir/op_def.h: symbol, symbol_params with their kinds,
// symbol_inputs, symbol_outputs, split_axis and the rule form of models/ir/rule_form.h); this header gives
// them C++ handles (Op) and the verified domain of each parameter kind. Terms, the rule file format, the Z3
// encoding and the axiom table all read the table derived here.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "models/ir/op_def.h"

namespace strata::search::subst {

// A handle of a rule symbol: an index into all_ops(). TASO's symbols have names, in this order, for the code
// that reproduces TASO's own generator and axioms; operators declaring a rule form beyond them follow, in the
// operator table's order, and are reached by find_op.
enum class Op : std::uint8_t {
  kEwadd,      // element-wise a + b
  kEwmul,      // element-wise a * b
  kSmul,       // smul(a, s): tensor a times 0-D scalar s
  kMatmul,     // 2-D matrix product
  kTranspose,  // 2-D kTranspose
  kRelu,       // max(x, 0)
  kConv2d,     // conv2d(sh, sw, pad, acti, x, w): NCHW input, OIHW weight, groups = C(x) / w.dim1
  kPoolavg,    // poolavg(kh, kw, sh, sw, pad, x)
  kPoolmax,    // poolmax(kh, kw, sh, sw, pad, x)
  kConcat,     // concat(axis, a, b)
  kSplit0,     // split_0(axis, a): first half of a 2-way split at the most recent concat boundary along axis
  kSplit1,     // split_1(axis, a): second half
  kEnlarge,    // enlarge(kh, kw, w): zero-pad a conv kernel to kh x kw, centred
  kIconv,      // Iconv(kh, kw): identity convolution kernel
  kCpool,      // Cpool(kh, kw): depth-wise kernel turning conv2d into average pooling
  kImatmul,    // identity matrix
  kIewmul,     // all-ones tensor, identity of kEwmul
};
inline constexpr int kNumNamedOps = static_cast<int>(Op::kIewmul) + 1;

// What an integer parameter means (declared on the OpDef); each kind has the value domain over which the
// axioms were validated (TASO's verify.py and validate_axioms.py). Rules with parameters outside it are not
// verified.
using ParamKind = models::SymbolParamKind;

inline constexpr int kPadSame = static_cast<int>(models::kRulePadSame);  // TASO PaddingMode
inline constexpr int kPadValid = static_cast<int>(models::kRulePadValid);
inline constexpr int kActiNone = static_cast<int>(models::kRuleActiNone);  // TASO ActiMode
inline constexpr int kActiRelu = static_cast<int>(models::kRuleActiRelu);

using ParamSpec = models::SymbolParam;  // name, kind

struct OpInfo {
  Op op;
  std::string_view
      name;  // spelling in rule files (TASO's text spelling): the OpDef's symbol (split: split_<i>)
  std::span<const ParamSpec> params;
  int tensor_args;
  std::string_view ir_op;              // the IR operator (OpRegistry name) whose OpDef declares the symbol
  int ir_output = 0;                   // which of its outputs the symbol denotes
  const models::OpDef* def = nullptr;  // that OpDef: its rule form (def->rule) and split_axis
};

const OpInfo& op_info(Op op);
// The sizing TASO's generator gives a constant symbol (its OpDef's RuleForm::taso_generator_sizing); empty
// for other symbols.
inline const models::Shape& taso_generator_sizing(Op op) {
  return op_info(op).def->rule.taso_generator_sizing;
}
// The symbol denoting output `output` of an IR operator, if it has a rule form.
std::optional<Op> find_op(const models::OpDef& def, int output = 0);
// split_0 and split_1 are the two outputs of one split.
inline bool is_split(Op op) {
  return op == Op::kSplit0 || op == Op::kSplit1;
}
std::span<const OpInfo> all_ops();
std::optional<Op> find_op(std::string_view name);

std::string_view param_kind_name(ParamKind kind);
// The verified domain of a parameter kind, as a sorted list of allowed values.
std::span<const std::int64_t> param_domain(ParamKind kind);
bool in_domain(ParamKind kind, std::int64_t value);

}  // namespace strata::search::subst
