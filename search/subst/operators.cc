#include "search/subst/operators.h"

#include <algorithm>
#include <array>

namespace strata::search::subst {
namespace {

using enum ParamKind;
constexpr std::array<ParamSpec, 0> kNoParams{};
constexpr std::array kConvParams{ParamSpec{"sh", stride}, ParamSpec{"sw", stride}, ParamSpec{"pad", padding},
                                 ParamSpec{"acti", activation}};
constexpr std::array kPoolParams{ParamSpec{"kh", kernel}, ParamSpec{"kw", kernel}, ParamSpec{"sh", stride},
                                 ParamSpec{"sw", stride}, ParamSpec{"pad", padding}};
constexpr std::array kAxisParam{ParamSpec{"axis", axis}};
constexpr std::array kKernelParams{ParamSpec{"kh", kernel}, ParamSpec{"kw", kernel}};

constexpr std::array<OpInfo, kNumOps> kOps{{
    {Op::ewadd, "ewadd", kNoParams, 2},
    {Op::ewmul, "ewmul", kNoParams, 2},
    {Op::smul, "smul", kNoParams, 2},
    {Op::matmul, "matmul", kNoParams, 2},
    {Op::transpose, "transpose", kNoParams, 1},
    {Op::relu, "relu", kNoParams, 1},
    {Op::conv2d, "conv2d", kConvParams, 2},
    {Op::poolavg, "poolavg", kPoolParams, 1},
    {Op::poolmax, "poolmax", kPoolParams, 1},
    {Op::concat, "concat", kAxisParam, 2},
    {Op::split_0, "split_0", kAxisParam, 1},
    {Op::split_1, "split_1", kAxisParam, 1},
    {Op::enlarge, "enlarge", kKernelParams, 1},
    {Op::Iconv, "Iconv", kKernelParams, 0},
    {Op::Cpool, "Cpool", kKernelParams, 0},
    {Op::Imatmul, "Imatmul", kNoParams, 0},
    {Op::Iewmul, "Iewmul", kNoParams, 0},
}};

constexpr bool table_in_enum_order() {
  for (int i = 0; i < kNumOps; ++i)
    if (static_cast<int>(kOps[static_cast<std::size_t>(i)].op) != i) return false;
  return true;
}
static_assert(table_in_enum_order(), "kOps must list the operators in the order of enum Op");

// Domains of TASO's verifier and axiom validation: strides {1,2}, SAME/VALID, none/relu, kernels D = {1,3},
// axes of tensors up to 4-D.
constexpr std::array<std::int64_t, 2> kStrides{1, 2};
constexpr std::array<std::int64_t, 2> kPaddings{kPadSame, kPadValid};
constexpr std::array<std::int64_t, 2> kActivations{kActiNone, kActiRelu};
constexpr std::array<std::int64_t, 2> kKernels{1, 3};
constexpr std::array<std::int64_t, 4> kAxes{0, 1, 2, 3};

}  // namespace

const OpInfo& op_info(Op op) {
  return kOps[static_cast<std::size_t>(op)];
}
std::span<const OpInfo> all_ops() {
  return kOps;
}

std::optional<Op> find_op(std::string_view name) {
  for (const auto& info : kOps)
    if (info.name == name) return info.op;
  return std::nullopt;
}

std::string_view param_kind_name(ParamKind kind) {
  switch (kind) {
    case stride:
      return "stride";
    case padding:
      return "padding";
    case activation:
      return "activation";
    case kernel:
      return "kernel";
    case axis:
      return "axis";
  }
  return "?";
}

std::span<const std::int64_t> param_domain(ParamKind kind) {
  switch (kind) {
    case stride:
      return kStrides;
    case padding:
      return kPaddings;
    case activation:
      return kActivations;
    case kernel:
      return kKernels;
    case axis:
      return kAxes;
  }
  return {};
}

bool in_domain(ParamKind kind, std::int64_t value) {
  const auto d = param_domain(kind);
  return std::binary_search(d.begin(), d.end(), value);
}

}  // namespace strata::search::subst
