// The two number systems every reference kernel is written once for: double (numerics, gradient checks,
// ONNX conformance) and ModP (exact fingerprints). Kernels are templates over T and use Num<T> for the few
// operations that differ: literals, index conversion, ordering and division by a count.
#pragma once

#include <cmath>
#include <cstdint>

#include "models/ir/modp.h"

namespace strata::models {

template <class T>
struct Num;

template <>
struct Num<double> {
  static double from_double(double x) { return x; }
  static double from_int(std::int64_t x) { return static_cast<double>(x); }
  static std::int64_t to_index(double x) { return static_cast<std::int64_t>(std::llround(x)); }
  static bool greater(double a, double b) { return a > b; }
  static double inv(double x) { return 1.0 / x; }
  // Non-polynomial scalar functions used inside composite kernels (softmax, norms).
  static double exp(double x) { return std::exp(x); }
  static double rsqrt(double x) { return 1.0 / std::sqrt(x); }
};

template <>
struct Num<ModP> {
  static ModP from_double(double x) { return ModP::from_double(x); }
  static ModP from_int(std::int64_t x) { return ModP::from_int(x); }
  static std::int64_t to_index(ModP x) { return x.centered(); }
  static bool greater(ModP a, ModP b) { return a.centered() > b.centered(); }
  static ModP inv(ModP x) { return x.inv(); }
  static ModP exp(ModP x) { return uninterpreted(0xE1, x); }
  static ModP rsqrt(ModP x) { return uninterpreted(0x5A, x); }
};

// An element-wise unary function in both number systems with its derivative: f/df over the reals, p/dp the
// field stand-ins (polynomial where the real function's structure allows, uninterpreted otherwise).
template <class F, class T>
T apply_f(T x) {
  if constexpr (std::is_same_v<T, double>)
    return F::f(x);
  else
    return F::p(x);
}
template <class F, class T>
T apply_df(T x) {
  if constexpr (std::is_same_v<T, double>)
    return F::df(x);
  else
    return F::dp(x);
}

}  // namespace strata::models
