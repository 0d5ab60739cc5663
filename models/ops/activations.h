// Scalar activation functions in both number systems (see models/ir/numeric.h): shared by the element-wise
// family and by the fused activations of matmul and conv2d, so a fused relu is the same function as relu.
#pragma once

#include <cmath>
#include <numbers>

#include "models/ir/numeric.h"

namespace strata::models::ops {

struct Relu {
  static double f(double x) { return x > 0 ? x : 0; }
  static double df(double x) { return x > 0 ? 1 : 0; }
  static ModP p(ModP x) { return uninterpreted(0x7E1, x); }
  static ModP dp(ModP x) { return uninterpreted(0x7E2, x); }
  static constexpr double kFlops = 1;
};
struct Sigmoid {
  static double f(double x) { return 1 / (1 + std::exp(-x)); }
  static double df(double x) {
    const double s = f(x);
    return s * (1 - s);
  }
  static ModP p(ModP x) { return uninterpreted(0x516, x); }
  static ModP dp(ModP x) {
    const ModP s = p(x);
    return s * (ModP::from_int(1) - s);
  }
  static constexpr double kFlops = 4;
};
struct Tanh {
  static double f(double x) { return std::tanh(x); }
  static double df(double x) {
    const double t = std::tanh(x);
    return 1 - t * t;
  }
  static ModP p(ModP x) { return uninterpreted(0x7A4, x); }
  static ModP dp(ModP x) {
    const ModP t = p(x);
    return ModP::from_int(1) - t * t;
  }
  static constexpr double kFlops = 4;
};
// gelu(x) = x * Phi(x) (exact, erf form); in the field Phi is uninterpreted, the product structure kept.
struct Gelu {
  static double phi_cdf(double x) { return 0.5 * (1 + std::erf(x / std::numbers::sqrt2)); }
  static double f(double x) { return x * phi_cdf(x); }
  static double df(double x) {
    return phi_cdf(x) + x * std::exp(-0.5 * x * x) / std::sqrt(2 * std::numbers::pi);
  }
  static ModP p(ModP x) { return x * uninterpreted(0x6E1, x); }
  static ModP dp(ModP x) { return uninterpreted(0x6E1, x) + x * uninterpreted(0x6E2, x); }
  static constexpr double kFlops = 8;
};
// silu(x) = x * sigmoid(x); the field version uses sigmoid's stand-in, so silu = x ⊙ sigmoid(x) holds there
// too.
struct Silu {
  static double f(double x) { return x * Sigmoid::f(x); }
  static double df(double x) {
    const double s = Sigmoid::f(x);
    return s + x * s * (1 - s);
  }
  static ModP p(ModP x) { return x * Sigmoid::p(x); }
  static ModP dp(ModP x) {
    const ModP s = Sigmoid::p(x);
    return s + x * s * (ModP::from_int(1) - s);
  }
  static constexpr double kFlops = 5;
};

// 1/sqrt(x) (normalizations written out as separate operators, ONNX LayerNormalization's InvStdDev).
struct Rsqrt {
  static double f(double x) { return 1 / std::sqrt(x); }
  static double df(double x) { return -0.5 / (x * std::sqrt(x)); }
  static ModP p(ModP x) { return Num<ModP>::rsqrt(x); }
  static ModP dp(ModP x) { return uninterpreted(0x5B, x); }
  static constexpr double kFlops = 2;
};

}  // namespace strata::models::ops
