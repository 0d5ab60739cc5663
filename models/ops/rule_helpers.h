// Helpers shared by the operators' rule forms (models/ir/rule_form.h): TASO's padding modes for convolution
// and pooling, and the common cases of parameters and operand shapes.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "models/ir/attrs.h"
#include "models/ir/rule_form.h"

namespace strata::models::ops {

// SAME as in TensorFlow and TASO (output = ceil(in / stride), the extra row/column at the bottom/right),
// VALID = no padding.

inline std::optional<std::pair<std::int64_t, std::int64_t>> same_pads(std::int64_t in, std::int64_t k,
                                                                      std::int64_t s) {
  if (s <= 0 || k <= 0) return std::nullopt;
  const std::int64_t out = (in + s - 1) / s;
  const std::int64_t total = std::max<std::int64_t>((out - 1) * s + k - in, 0);
  return std::pair{total / 2, total - total / 2};
}

// IR pads [top, left, bottom, right] of a padding mode on an h x w input.
inline std::optional<Ints> rule_pads(std::int64_t pad_mode, std::int64_t h, std::int64_t w, std::int64_t kh,
                                     std::int64_t kw, std::int64_t sh, std::int64_t sw) {
  if (pad_mode == kRulePadValid) return Ints{0, 0, 0, 0};
  if (pad_mode != kRulePadSame) return std::nullopt;
  auto ph = same_pads(h, kh, sh), pw = same_pads(w, kw, sw);
  if (!ph || !pw) return std::nullopt;
  return Ints{ph->first, pw->first, ph->second, pw->second};
}

// The padding mode of IR pads, or nullopt when they are neither SAME nor VALID. 1x1 kernels: SAME and VALID
// coincide; SAME is preferred.
inline std::optional<std::int64_t> rule_pad_mode(const Ints& pads, std::int64_t h, std::int64_t w,
                                                 std::int64_t kh, std::int64_t kw, std::int64_t sh,
                                                 std::int64_t sw) {
  auto same = rule_pads(kRulePadSame, h, w, kh, kw, sh, sw);
  if (same && *same == pads) return kRulePadSame;
  if (pads == Ints{0, 0, 0, 0}) return kRulePadValid;
  return std::nullopt;
}

// RuleParamsFn of symbols without parameters.
inline std::optional<Ints> rule_no_params(std::span<const TensorType>, const Attrs&, std::size_t) {
  return Ints{};
}
// RuleOperandShapeFn of operators whose operands all have the result's shape.
inline std::optional<Shape> rule_other_or_wanted(std::size_t, const Shape* other, const Shape* wanted) {
  if (other) return *other;
  if (wanted) return *wanted;
  return std::nullopt;
}
// RuleOperandShapeFn of operators whose (first) operand has the result's shape.
inline std::optional<Shape> rule_wanted(std::size_t, const Shape*, const Shape* wanted) {
  if (wanted) return *wanted;
  return std::nullopt;
}

}  // namespace strata::models::ops
