#include "search/subst/operators.h"

#include <algorithm>
#include <array>
#include <deque>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace strata::search::subst {
namespace {

using enum models::SymbolParamKind;  // the enum itself: clang 14 rejects `using enum` of an alias

// The IR operator (and output) each named handle denotes. Everything else about a symbol — spelling,
// parameters and their kinds, tensor arity, rule form — is read from that operator's OpDef.
struct Source {
  Op op;
  std::string_view ir_op;
  int output = 0;
};
constexpr std::array<Source, kNumNamedOps> kNamedSources{{
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
  for (int i = 0; i < kNumNamedOps; ++i)
    if (static_cast<int>(kNamedSources[static_cast<std::size_t>(i)].op) != i) return false;
  return true;
}
static_assert(sources_in_enum_order(), "kNamedSources must list the operators in the order of enum Op");

struct Vocabulary {
  std::deque<std::string> names;  // storage for the per-output spellings (split_0, split_1); stable addresses
  std::vector<OpInfo> ops;
};

// One symbol per output of `def` (split: split_0, split_1), appended to v; a missing or inconsistent OpDef
// is a programming error.
void add_symbol(Vocabulary& v, const models::OpDef& def, int output) {
  auto fail = [&](std::string_view what) {
    return std::logic_error(fmt::format("OpDef '{}' as rule symbol: {}", def.name, what));
  };
  if (def.symbol.empty()) throw fail("no symbol");
  if (!def.rule.to_attrs || !def.rule.from_node) throw fail("no rule form (RuleForm::to_attrs, from_node)");
  if (output >= std::max(def.symbol_outputs, 1)) throw fail("symbol_outputs too small");
  if (v.ops.size() > std::numeric_limits<std::uint8_t>::max()) throw fail("more than 255 rule symbols");
  const std::string& name = v.names.emplace_back(
      def.symbol_outputs > 1 ? fmt::format("{}_{}", def.symbol, output) : std::string(def.symbol));
  int arity = def.symbol_inputs;
  if (arity < 0) {
    if (def.min_inputs != def.max_inputs) throw fail("variable arity: declare symbol_inputs");
    arity = def.min_inputs;
  }
  const auto op = static_cast<Op>(v.ops.size());
  v.ops.push_back(OpInfo{op, name, def.symbol_params, arity, def.name, output, &def});
}

// TASO's named symbols first (the enum's order), then every other operator that declares a rule form.
Vocabulary build_vocabulary() {
  Vocabulary v;
  const auto& registry = models::OpRegistry::instance();
  for (const Source& src : kNamedSources) add_symbol(v, registry.get(src.ir_op), src.output);
  for (const models::OpDef& def : registry.all()) {
    if (!def.rule.to_attrs) continue;
    const bool named = std::any_of(kNamedSources.begin(), kNamedSources.end(),
                                   [&](const Source& s) { return s.ir_op == def.name; });
    if (named) continue;
    for (int o = 0; o < std::max(def.symbol_outputs, 1); ++o) add_symbol(v, def, o);
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

std::optional<Op> find_op(const models::OpDef& def, int output) {
  for (const auto& info : vocabulary().ops)
    if (info.def == &def && info.ir_output == output) return info.op;
  return std::nullopt;
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
