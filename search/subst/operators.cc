#include "search/subst/operators.h"

#include <algorithm>
#include <array>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace strata::search::subst {
namespace {

using enum models::SymbolParamKind;  // the enum itself: clang 14 rejects `using enum` of an alias

// The IR operator (and output) each handle denotes. Everything else about a symbol — spelling, parameters and
// their kinds, tensor arity — is read from that operator's OpDef.
struct Source {
  Op op;
  std::string_view ir_op;
  int output = 0;
};
constexpr std::array<Source, kNumOps> kSources{{
    {Op::kEwadd, "ewadd"},
    {Op::kEwmul, "ewmul"},
    {Op::kSmul, "scalar_mul"},
    {Op::kMatmul, "matmul"},
    {Op::kTranspose, "transpose"},
    {Op::kRelu, "relu"},
    {Op::kConv2d, "conv2d"},
    {Op::kPoolavg, "avgpool2d"},
    {Op::kPoolmax, "maxpool2d"},
    {Op::kConcat, "concat"},
    {Op::kSplit0, "split", 0},
    {Op::kSplit1, "split", 1},
    {Op::kEnlarge, "enlarge"},
    {Op::kIconv, "const_iconv"},
    {Op::kCpool, "const_pool"},
    {Op::kImatmul, "const_imm"},
    {Op::kIewmul, "const_one"},
}};

constexpr bool sources_in_enum_order() {
  for (int i = 0; i < kNumOps; ++i)
    if (static_cast<int>(kSources[static_cast<std::size_t>(i)].op) != i) return false;
  return true;
}
static_assert(sources_in_enum_order(), "kSources must list the operators in the order of enum Op");

struct Vocabulary {
  std::array<std::string, kNumOps> names;  // storage for the per-output spellings (split_0, split_1)
  std::vector<OpInfo> ops;
};

// Built once from the operator table; a missing or inconsistent OpDef is a programming error.
Vocabulary build_vocabulary() {
  Vocabulary v;
  v.ops.reserve(kNumOps);
  const auto& registry = models::OpRegistry::instance();
  for (std::size_t i = 0; i < kSources.size(); ++i) {
    const Source& src = kSources[i];
    const models::OpDef& def = registry.get(src.ir_op);
    auto fail = [&](std::string_view what) {
      return std::logic_error(fmt::format("OpDef '{}' as rule symbol: {}", def.name, what));
    };
    if (def.symbol.empty()) throw fail("no symbol");
    if (src.output >= std::max(def.symbol_outputs, 1)) throw fail("symbol_outputs too small");
    v.names[i] =
        def.symbol_outputs > 1 ? fmt::format("{}_{}", def.symbol, src.output) : std::string(def.symbol);
    int arity = def.symbol_inputs;
    if (arity < 0) {
      if (def.min_inputs != def.max_inputs) throw fail("variable arity: declare symbol_inputs");
      arity = def.min_inputs;
    }
    v.ops.push_back(OpInfo{src.op, v.names[i], def.symbol_params, arity, def.name, src.output});
  }
  for (std::size_t i = 0; i < v.ops.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (v.ops[i].name == v.ops[j].name)
        throw std::logic_error(fmt::format("rule symbol '{}' declared twice", v.ops[i].name));
  return v;
}

const Vocabulary& vocabulary() {
  static const Vocabulary v = build_vocabulary();
  return v;
}

// Domains of TASO's verifier and axiom validation: strides {1,2}, SAME/VALID, none/relu, kernels D = {1,3},
// axes of tensors up to 4-D.
constexpr std::array<std::int64_t, 2> kStrides{1, 2};
constexpr std::array<std::int64_t, 2> kPaddings{kPadSame, kPadValid};
constexpr std::array<std::int64_t, 2> kActivations{kActiNone, kActiRelu};
constexpr std::array<std::int64_t, 2> kKernels{1, 3};
constexpr std::array<std::int64_t, 4> kAxes{0, 1, 2, 3};

}  // namespace

const OpInfo& op_info(Op op) {
  return vocabulary().ops[static_cast<std::size_t>(op)];
}
std::span<const OpInfo> all_ops() {
  return vocabulary().ops;
}

std::optional<Op> find_op(std::string_view name) {
  for (const auto& info : vocabulary().ops)
    if (info.name == name) return info.op;
  return std::nullopt;
}

std::string_view param_kind_name(ParamKind kind) {
  switch (kind) {
    case kStride:
      return "stride";
    case kPadding:
      return "padding";
    case kActivation:
      return "activation";
    case kKernel:
      return "kernel";
    case kAxis:
      return "axis";
  }
  return "?";
}

std::span<const std::int64_t> param_domain(ParamKind kind) {
  switch (kind) {
    case kStride:
      return kStrides;
    case kPadding:
      return kPaddings;
    case kActivation:
      return kActivations;
    case kKernel:
      return kKernels;
    case kAxis:
      return kAxes;
  }
  return {};
}

bool in_domain(ParamKind kind, std::int64_t value) {
  const auto d = param_domain(kind);
  return std::binary_search(d.begin(), d.end(), value);
}

}  // namespace strata::search::subst
