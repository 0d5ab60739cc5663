#include "validate/replay_buffer.h"

#include <cmath>
#include <limits>

namespace strata::validate {

std::uint16_t bf16_from_float(float x) {
  const auto bits = std::bit_cast<std::uint32_t>(x);
  if (std::isnan(x)) return static_cast<std::uint16_t>((bits >> 16) | 0x40);  // quiet, sign kept
  // Nearest, ties to even: add 0x7fff plus the lowest kept bit, then truncate (overflows to inf correctly).
  const std::uint32_t rounded = bits + 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<std::uint16_t>(rounded >> 16);
}

std::uint16_t bf16_from_double(double x) {
  if (std::isnan(x)) return bf16_from_float(std::numeric_limits<float>::quiet_NaN());
  // Round to f32 with round-to-odd (toward zero, then set the last bit if inexact): 24 bits >= 8 + 2, so
  // rounding that to bf16 to nearest is the one correct rounding of x (Boldo & Melquiond, "Emulation of FMA
  // and correctly rounded sums: proved algorithms using rounding to odd", IEEE TC 2008).
  float f = static_cast<float>(x);
  if (static_cast<double>(f) == x || std::isinf(x)) return bf16_from_float(f);
  if (std::fabs(static_cast<double>(f)) > std::fabs(x)) f = std::nextafter(f, 0.0f);
  return bf16_from_float(std::bit_cast<float>(std::bit_cast<std::uint32_t>(f) | 1u));
}

models::DType replay_storage_type(models::DType t) {
  return t == models::DType::kBF16 ? models::DType::kBF16 : models::DType::kF32;
}

ReplayBuffer::ReplayBuffer(models::DType storage, std::size_t n) : bf16_(storage == models::DType::kBF16) {
  if (bf16_)
    words_.assign(n, 0);
  else
    floats_.assign(n, 0.0f);
}

ReplayBuffer::ReplayBuffer(models::DType storage, std::span<const float> values)
    : bf16_(storage == models::DType::kBF16) {
  if (!bf16_) {
    floats_.assign(values.begin(), values.end());
    return;
  }
  words_.reserve(values.size());
  for (float x : values) words_.push_back(bf16_from_float(x));
}

std::vector<float> ReplayBuffer::widened() const {
  if (!bf16_) return floats_;
  std::vector<float> out;
  out.reserve(words_.size());
  for (auto w : words_) out.push_back(float_from_bf16(w));
  return out;
}

}  // namespace strata::validate
