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
  // With a 0-byte exchange among the sizes its time is a itself, and every t - a is S / B: the slope
  // sum(S^2) / sum(S (t - a)) = sum(S^2) / (sum(S^2) / B) = B. Sizes out of order on purpose.
  const auto samples = on_the_line({1 << 20, 0, 65536, 4 << 20, 262144});
  const auto f = fit_link(samples, 65536);
  EXPECT_NEAR(f.latency, kA, 1e-15);
  EXPECT_NEAR(f.bandwidth, kB, kB * 1e-12);
}

TEST(LinkFit, SmallestSizeSetsTheLatency) {
  // Calibration's sizes start at 8 B (validate/calibrate.cc): the latency is t(8) = a + 8 / B, and the slope
  // through (S, t - t(8)) = (S, (S - 8) / B) is B sum(S^2) / (sum(S^2) - 8 sum(S)) over the fitted sizes.
  const std::vector<double> fitted{65536, 262144, 1 << 20, 2 << 20, 4 << 20};
  std::vector<double> sizes{8};
  sizes.insert(sizes.end(), fitted.begin(), fitted.end());
  const auto f = fit_link(on_the_line(sizes), 65536);
  EXPECT_NEAR(f.latency, kA + 8 / kB, 1e-15);
  double ss = 0, s1 = 0;
  for (double s : fitted) {
    ss += s * s;
    s1 += s;
  }
  const double expected = kB * ss / (ss - 8 * s1);
  EXPECT_NEAR(f.bandwidth, expected, expected * 1e-12);
  EXPECT_NEAR(f.bandwidth, kB, kB * 1e-5);  // the 8-byte offset is negligible
}

TEST(LinkFit, SizesBelowTheMinimumDoNotEnterTheSlope) {
  // A 1 KiB sample 1 ms off the line (a congested small exchange): below min_bytes it changes nothing, so B
  // is exact; fitted with it (min_bytes 0) it adds 1024 x 1 ms to sum(S (t - a)) and lowers the bandwidth to
  // sum(S^2) / (sum(S^2) / B + 1024e-3).
  auto samples = on_the_line({0, 1 << 20, 4 << 20});
  samples.push_back({1024, kA + 1024 / kB + 1e-3});
  const auto filtered = fit_link(samples, 65536);
  EXPECT_NEAR(filtered.bandwidth, kB, kB * 1e-12);
  EXPECT_NEAR(filtered.latency, kA, 1e-15);
  const double ss = 1024.0 * 1024 + double(1 << 20) * (1 << 20) + double(4 << 20) * (4 << 20);
  const double expected = ss / (ss / kB + 1024e-3);
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
