// Ranges of the integer options the command line and the Python API share, declared once, and the check
// that gives a value from Python the same message as the command line's parser (util::parse_int).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "hw/limits.h"
#include "util/parse.h"

namespace strata::experiments {

// The largest batch size, sequence length or symbolic ONNX dimension accepted (2^20).
inline constexpr std::int64_t kMaxModelDim = std::int64_t{1} << 20;
inline constexpr util::IntRange kNodesRange{1, hw::limits::kMaxNodes};        // --nodes
inline constexpr util::IntRange kDegreeRange{1, 1 << 16};                     // --tp, --pp, --cp, --ep, ...
inline constexpr util::IntRange kDataParallelRange{1, 1 << 20};               // --dp
inline constexpr util::IntRange kGlobalBatchRange{1, std::int64_t{1} << 30};  // --global-batch
inline constexpr util::IntRange kZeroRange{0, 3};                             // --zero

// `value` if it lies in `range`; otherwise util::InputError "<option>: expected an integer in A..B, got 'V'".
inline std::int64_t check_int(std::int64_t value, util::IntRange range, std::string_view option) {
  return util::parse_int(std::to_string(value), range, option);
}

}  // namespace strata::experiments
