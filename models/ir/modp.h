// Integers modulo the Mersenne prime p = 2^31 - 1: the exact arithmetic the reference executor uses for
// fingerprints and equivalence checks (TASO §2.1 evaluates candidate graphs over integers; a prime modulus
// makes every non-zero value invertible, so averages and normalizations stay exact, e.g. avg-pool equals a
// convolution with the constant 1/9 kernel, which TASO's wrap-around int32 model cannot express).
//
// Non-polynomial functions (exp, erf, rsqrt, relu, ...) have no counterpart in this field; each is modelled
// as a fixed pseudo-random function of the residue with its own salt: an "uninterpreted function" in the
// sense of the Z3 verifier, so only identities that hold for every function (relu commutes with concat,
// relu(conv) = fused conv+relu) survive, and no spurious algebraic coincidences appear.
#pragma once

#include <cmath>
#include <cstdint>

#include "util/hash.h"

namespace strata::models {

struct ModP {
  static constexpr std::uint32_t kP = 2147483647u;  // 2^31 - 1
  std::uint32_t v = 0;

  constexpr ModP() = default;
  static constexpr ModP raw(std::uint32_t r) {
    ModP m;
    m.v = r;
    return m;
  }
  static constexpr ModP from_int(std::int64_t x) {
    std::int64_t r = x % static_cast<std::int64_t>(kP);
    if (r < 0) r += kP;
    return raw(static_cast<std::uint32_t>(r));
  }
  // Exact for integers and dyadic rationals k/2^e (e <= 30); other reals are rounded to 24 fractional bits
  // first, so literals like 1e-5 map to a fixed residue deterministically.
  static ModP from_double(double x);

  static constexpr std::uint32_t reduce(std::uint64_t x) {
    x = (x & kP) + (x >> 31);
    x = (x & kP) + (x >> 31);
    return static_cast<std::uint32_t>(x >= kP ? x - kP : x);
  }
  friend constexpr ModP operator+(ModP a, ModP b) { return raw(reduce(std::uint64_t{a.v} + b.v)); }
  friend constexpr ModP operator-(ModP a, ModP b) { return raw(reduce(std::uint64_t{a.v} + kP - b.v)); }
  friend constexpr ModP operator*(ModP a, ModP b) { return raw(reduce(std::uint64_t{a.v} * b.v)); }
  constexpr ModP operator-() const { return raw(v == 0 ? 0 : kP - v); }
  ModP& operator+=(ModP b) { return *this = *this + b; }
  ModP& operator-=(ModP b) { return *this = *this - b; }
  ModP& operator*=(ModP b) { return *this = *this * b; }
  friend constexpr bool operator==(ModP a, ModP b) { return a.v == b.v; }

  constexpr ModP pow(std::uint64_t e) const {
    ModP r = raw(1), b = *this;
    while (e) {
      if (e & 1) r = r * b;
      b = b * b;
      e >>= 1;
    }
    return r;
  }
  // Multiplicative inverse (0 maps to 0, which keeps kernels total).
  constexpr ModP inv() const { return pow(kP - 2); }
  // Signed representative in (-p/2, p/2], used for index lookups and for ordering (max-pool).
  constexpr std::int64_t centered() const { return v > kP / 2 ? static_cast<std::int64_t>(v) - kP : v; }
};

// A fixed pseudo-random function of (salt, x): the "uninterpreted" stand-in for non-polynomial functions.
constexpr ModP uninterpreted(std::uint64_t salt, ModP x) {
  const std::uint64_t z = util::stafford_mix13(salt * util::kGoldenGamma + x.v + 0x632BE59BD9B4E019ull);
  return ModP::raw(ModP::reduce(z & 0x3FFFFFFFFFFFFFFFull));
}

inline ModP ModP::from_double(double x) {
  if (x == std::floor(x) && std::fabs(x) < 9e15) return from_int(static_cast<std::int64_t>(x));
  for (int e = 1; e <= 30; ++e) {
    const double s = std::ldexp(x, e);
    if (s == std::floor(s) && std::fabs(s) < 9e15)
      return from_int(static_cast<std::int64_t>(s)) * from_int(std::int64_t{1} << e).inv();
  }
  return from_int(static_cast<std::int64_t>(std::llround(std::ldexp(x, 24)))) *
         from_int(std::int64_t{1} << 24).inv();
}

}  // namespace strata::models
