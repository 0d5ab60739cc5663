// A value's storage in the CPU replay (validate/cpu_replay.h): f32 for f32 values (and for integer index
// values, which only the reference kernel reads), bf16 as 16-bit words for bf16 values, so that oneDNN's bf16
// kernels read and write the graph's own element type and nothing is converted around a timed kernel. bf16
// is the upper half of an IEEE f32 (1 sign, 8 exponent, 7 stored fraction bits; "BFloat16", Intel, 2018,
// https://www.intel.com/content/dam/develop/external/us/en/documents/bf16-hardware-numerics-definition-white-paper.pdf);
// rounding to it is to nearest, ties to even, as oneDNN's reorders round.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "models/ir/dtype.h"

namespace strata::validate {

std::uint16_t bf16_from_float(float x);    // nearest, ties to even; NaN stays NaN
std::uint16_t bf16_from_double(double x);  // one rounding (not double -> f32 -> bf16)
inline float float_from_bf16(std::uint16_t w) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(w) << 16);
}
// x rounded to bf16, as a float (exact).
inline float round_to_bf16(float x) {
  return float_from_bf16(bf16_from_float(x));
}

// The element type a value of type `t` is stored in: kBF16 for bf16, kF32 for everything else.
models::DType replay_storage_type(models::DType t);

class ReplayBuffer {
 public:
  ReplayBuffer() = default;
  // `n` zeros in `storage` (kF32 or kBF16).
  ReplayBuffer(models::DType storage, std::size_t n);
  // `values` in `storage`, rounded to bf16 when it is kBF16.
  ReplayBuffer(models::DType storage, std::span<const float> values);

  bool bf16() const { return bf16_; }
  std::size_t size() const { return bf16_ ? words_.size() : floats_.size(); }
  const void* data() const { return bf16_ ? static_cast<const void*>(words_.data()) : floats_.data(); }
  void* data() { return bf16_ ? static_cast<void*>(words_.data()) : floats_.data(); }
  float get(std::size_t i) const { return bf16_ ? float_from_bf16(words_[i]) : floats_[i]; }
  // Stores x rounded once to the storage type.
  void set(std::size_t i, double x) {
    if (bf16_)
      words_[i] = bf16_from_double(x);
    else
      floats_[i] = static_cast<float>(x);
  }
  // Every element as f32 (exact for bf16).
  std::vector<float> widened() const;

 private:
  bool bf16_ = false;
  std::vector<float> floats_;
  std::vector<std::uint16_t> words_;
};

}  // namespace strata::validate
