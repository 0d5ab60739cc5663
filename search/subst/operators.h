// The operator symbols of substitution rules: TASO's verifier vocabulary (docs/reference/taso.md §2.2, §3.1),
// each declared once with its integer parameters, their verified domains and its tensor arity. Terms, the
// rule file format, the Z3 encoding and the axiom table are all derived from this table.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

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

// What an integer parameter means; each kind has the value domain over which the axioms were validated
// (TASO's verify.py and validate_axioms.py). Rules with parameters outside it are not verified.
enum class ParamKind : std::uint8_t { stride, padding, activation, kernel, axis };

inline constexpr int kPadSame = 0, kPadValid = 1;   // TASO PaddingMode
inline constexpr int kActiNone = 0, kActiRelu = 2;  // TASO ActiMode

struct ParamSpec {
  std::string_view name;
  ParamKind kind;
};

struct OpInfo {
  Op op;
  std::string_view name;  // spelling in rule files (TASO's text spelling)
  std::span<const ParamSpec> params;
  int tensor_args;
};

const OpInfo& op_info(Op op);
std::span<const OpInfo> all_ops();
std::optional<Op> find_op(std::string_view name);

std::string_view param_kind_name(ParamKind kind);
// The verified domain of a parameter kind, as a sorted list of allowed values.
std::span<const std::int64_t> param_domain(ParamKind kind);
bool in_domain(ParamKind kind, std::int64_t value);

}  // namespace strata::search::subst
