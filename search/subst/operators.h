// The operator symbols of substitution rules: TASO's verifier vocabulary (`operator_data` in verify/verify.py
// of jiazhihao/TASO@f11782c). Each symbol is declared once, by the OpDef of the IR operator it denotes
// (models/ir/op_def.h: symbol, symbol_params with their kinds, symbol_inputs, symbol_outputs); this header
// gives them C++ handles (Op) and the verified domain of each parameter kind. Terms, the rule file format,
// the Z3 encoding and the axiom table all read the table derived here.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "models/ir/op_def.h"

namespace strata::search::subst {

enum class Op : std::uint8_t {
  ewadd,      // element-wise a + b
  ewmul,      // element-wise a * b
  smul,       // smul(a, s): tensor a times 0-D scalar s
  matmul,     // 2-D matrix product
  transpose,  // 2-D transpose
  relu,       // max(x, 0)
  conv2d,     // conv2d(sh, sw, pad, acti, x, w): NCHW input, OIHW weight, groups = C(x) / w.dim1
  poolavg,    // poolavg(kh, kw, sh, sw, pad, x)
  poolmax,    // poolmax(kh, kw, sh, sw, pad, x)
  concat,     // concat(axis, a, b)
  split_0,    // split_0(axis, a): first half of a 2-way split at the most recent concat boundary along axis
  split_1,    // split_1(axis, a): second half
  enlarge,    // enlarge(kh, kw, w): zero-pad a conv kernel to kh x kw, centred
  Iconv,      // Iconv(kh, kw): identity convolution kernel
  Cpool,      // Cpool(kh, kw): depth-wise kernel turning conv2d into average pooling
  Imatmul,    // identity matrix
  Iewmul,     // all-ones tensor, identity of ewmul
};
inline constexpr int kNumOps = static_cast<int>(Op::Iewmul) + 1;

// What an integer parameter means (declared on the OpDef); each kind has the value domain over which the
// axioms were validated (TASO's verify.py and validate_axioms.py). Rules with parameters outside it are not
// verified.
using ParamKind = models::SymbolParamKind;

inline constexpr int kPadSame = 0, kPadValid = 1;   // TASO PaddingMode
inline constexpr int kActiNone = 0, kActiRelu = 2;  // TASO ActiMode

using ParamSpec = models::SymbolParam;  // name, kind

struct OpInfo {
  Op op;
  std::string_view
      name;  // spelling in rule files (TASO's text spelling): the OpDef's symbol (split: split_<i>)
  std::span<const ParamSpec> params;
  int tensor_args;
  std::string_view ir_op;  // the IR operator (OpRegistry name) whose OpDef declares the symbol
  int ir_output = 0;       // which of its outputs the symbol denotes
};

const OpInfo& op_info(Op op);
// split_0 and split_1 are the two outputs of one split.
inline bool is_split(Op op) {
  return op == Op::split_0 || op == Op::split_1;
}
std::span<const OpInfo> all_ops();
std::optional<Op> find_op(std::string_view name);

std::string_view param_kind_name(ParamKind kind);
// The verified domain of a parameter kind, as a sorted list of allowed values.
std::span<const std::int64_t> param_domain(ParamKind kind);
bool in_domain(ParamKind kind, std::int64_t value);

}  // namespace strata::search::subst
