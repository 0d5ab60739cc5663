// Link calibration's fit (validate/link_fit.h) on synthetic exchange times t(S) = a + S / B.
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "validate/link_fit.h"

namespace strata::validate {
namespace {

constexpr double kA = 50e-6;  // 50 us one way
constexpr double kB = 25e6;   // 200 Mbit/s = 25 MB/s

std::vector<SizeTime> on_the_line(const std::vector<double>& sizes) {
  std::vector<SizeTime> out;
  for (double s : sizes) out.push_back({s, kA + s / kB});
  return out;
}

TEST(LinkFit, RecoversLatencyAndBandwidthOfAnExactLine) {
  // With a 0-byte exchange among the sizes its time is a itself, and every 1 - a / t is S / (B t): with
  // u = S / t, x = sum u (1 - a/t) / sum u^2 = (1/B) sum u^2 / sum u^2 = 1/B. Sizes out of order on purpose.
  const auto samples = on_the_line({1 << 20, 0, 65536, 4 << 20, 262144});
  const auto f = fit_link(samples, 65536);
  EXPECT_NEAR(f.latency, kA, 1e-15);
  EXPECT_NEAR(f.bandwidth, kB, kB * 1e-12);
}

TEST(LinkFit, SmallestSizeSetsTheLatency) {
  // Calibration's sizes start at 8 B (validate/calibrate.cc): the latency is t(8) = a + 8 / B, so
  // 1 - t(8) / t = (S - 8) / (B t), and with u = S / t the fit gives B sum u^2 / sum u (S - 8) / t.
  const std::vector<double> fitted{65536, 262144, 1 << 20, 2 << 20, 4 << 20};
  std::vector<double> sizes{8};
  sizes.insert(sizes.end(), fitted.begin(), fitted.end());
  const auto f = fit_link(on_the_line(sizes), 65536);
  EXPECT_NEAR(f.latency, kA + 8 / kB, 1e-15);
  double uu = 0, ud = 0;
  for (double s : fitted) {
    const double t = kA + s / kB, u = s / t;
    uu += u * u;
    ud += u * (s - 8) / t;
  }
  const double expected = kB * uu / ud;
  EXPECT_NEAR(f.bandwidth, expected, expected * 1e-12);
  EXPECT_NEAR(f.bandwidth, kB, kB * 8 / 65536);  // the 8-byte offset: at most 8 B of the smallest fitted size
}

TEST(LinkFit, SizesBelowTheMinimumDoNotEnterTheSlope) {
  // A 1 KiB sample 1 ms off the line (a congested small exchange): below min_bytes it changes nothing, so B
  // is exact; fitted with it (min_bytes 0) the exact samples contribute u^2 / B to the numerator and the
  // outlier u_o (1 - a / t_o) = u_o (1024 / B + 1 ms) / t_o, which lowers the bandwidth.
  auto samples = on_the_line({0, 1 << 20, 4 << 20});
  const double t_o = kA + 1024 / kB + 1e-3;
  samples.push_back({1024, t_o});
  const auto filtered = fit_link(samples, 65536);
  EXPECT_NEAR(filtered.bandwidth, kB, kB * 1e-12);
  EXPECT_NEAR(filtered.latency, kA, 1e-15);
  double num = 0, den = 0;
  for (double s : {double(1 << 20), double(4 << 20)}) {
    const double u = s / (kA + s / kB);
    num += u * u / kB;
    den += u * u;
  }
  const double u_o = 1024 / t_o;
  num += u_o * (1024 / kB + 1e-3) / t_o;
  den += u_o * u_o;
  const double expected = den / num;
  const auto unfiltered = fit_link(samples, 0);
  EXPECT_NEAR(unfiltered.bandwidth, expected, expected * 1e-12);
  EXPECT_LT(unfiltered.bandwidth, kB);
}

TEST(LinkFit, RefusesInputsThatDefineNoLink) {
  EXPECT_THROW(fit_link(std::vector<SizeTime>{}, 0), std::invalid_argument);
  // Nothing at or above the minimum size.
  EXPECT_THROW(fit_link(on_the_line({8, 1024}), 65536), std::invalid_argument);
  // Flat times: no bandwidth term.
  const std::vector<SizeTime> flat{{8, 1e-4}, {1 << 20, 1e-4}, {4 << 20, 1e-4}};
  EXPECT_THROW(fit_link(flat, 65536), std::invalid_argument);
  // Times falling with size: a negative slope.
  const std::vector<SizeTime> falling{{8, 1e-2}, {1 << 20, 5e-3}, {4 << 20, 1e-3}};
  EXPECT_THROW(fit_link(falling, 65536), std::invalid_argument);
}

}  // namespace
}  // namespace strata::validate
