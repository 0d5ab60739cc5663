#include <gtest/gtest.h>

#include "sim/maxmin.h"

namespace strata::sim {

TEST(MaxMin, WorkedExampleFromTheHeader) {
  // A (cap 10) used by x and y; B (cap 4) used by y. B binds y at 4; x takes the remaining 6 of A.
  MaxMinSolver s;
  std::vector<double> caps{10, 4}, rates;
  std::vector<std::vector<std::int32_t>> vars{{0}, {0, 1}};
  s.solve(caps, vars, rates);
  EXPECT_DOUBLE_EQ(rates[0], 6);
  EXPECT_DOUBLE_EQ(rates[1], 4);
}

TEST(MaxMin, EqualSharesOnOneLink) {
  MaxMinSolver s;
  std::vector<double> caps{12}, rates;
  std::vector<std::vector<std::int32_t>> vars{{0}, {0}, {0}};
  s.solve(caps, vars, rates);
  for (double r : rates) EXPECT_DOUBLE_EQ(r, 4);
}

TEST(MaxMin, ParkingLot) {
  // Classic parking lot: links L0, L1, L2 of capacity 1; a long flow crosses all three, one short flow per
  // link. Max-min gives every flow 1/2.
  MaxMinSolver s;
  std::vector<double> caps{1, 1, 1}, rates;
  std::vector<std::vector<std::int32_t>> vars{{0, 1, 2}, {0}, {1}, {2}};
  s.solve(caps, vars, rates);
  for (double r : rates) EXPECT_DOUBLE_EQ(r, 0.5);
}

TEST(MaxMin, UnconstrainedVariable) {
  MaxMinSolver s;
  std::vector<double> caps{5}, rates;
  std::vector<std::vector<std::int32_t>> vars{{}, {0}};
  s.solve(caps, vars, rates, 99.0);
  EXPECT_DOUBLE_EQ(rates[0], 99.0);
  EXPECT_DOUBLE_EQ(rates[1], 5.0);
}

TEST(MaxMin, MatchesBruteForceOnRandomSystems) {
  // Brute-force check of the max-min property: every variable has a saturated link on which its rate is
  // the largest (the bottleneck condition), and no link is over capacity.
  std::uint64_t seed = 12345;
  auto rnd = [&](int n) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<int>((seed >> 33) % static_cast<std::uint64_t>(n));
  };
  MaxMinSolver s;
  for (int trial = 0; trial < 200; ++trial) {
    const int nc = 1 + rnd(6), nv = 1 + rnd(8);
    std::vector<double> caps(static_cast<std::size_t>(nc)), rates;
    for (auto& c : caps) c = 1 + rnd(20);
    std::vector<std::vector<std::int32_t>> vars(static_cast<std::size_t>(nv));
    for (auto& v : vars) {
      for (int c = 0; c < nc; ++c)
        if (rnd(2)) v.push_back(c);
      if (v.empty()) v.push_back(rnd(nc));
    }
    s.solve(caps, vars, rates);
    std::vector<double> load(static_cast<std::size_t>(nc), 0);
    for (std::size_t v = 0; v < vars.size(); ++v)
      for (auto c : vars[v]) load[static_cast<std::size_t>(c)] += rates[v];
    for (int c = 0; c < nc; ++c)
      EXPECT_LE(load[static_cast<std::size_t>(c)], caps[static_cast<std::size_t>(c)] * (1 + 1e-9));
    for (std::size_t v = 0; v < vars.size(); ++v) {
      bool has_bottleneck = false;
      for (auto c : vars[v]) {
        const auto ci = static_cast<std::size_t>(c);
        if (load[ci] < caps[ci] * (1 - 1e-9)) continue;
        bool largest = true;
        for (std::size_t w = 0; w < vars.size(); ++w)
          for (auto c2 : vars[w])
            if (c2 == c && rates[w] > rates[v] * (1 + 1e-9)) largest = false;
        has_bottleneck |= largest;
      }
      EXPECT_TRUE(has_bottleneck) << "trial " << trial << " var " << v;
    }
  }
}

}  // namespace strata::sim

namespace strata::sim {

TEST(MaxMin, WeightedBundleCountsEachHop) {
  // Link 0 (cap 12) carries a bundle with two hops on it (weight 2) and a plain flow; link 1 (cap 100) only
  // the bundle. The share on link 0 is 12 / (2 + 1) = 4: the bundle runs at 4 per hop (8 on the link), the
  // plain flow at 4, exactly what three separate flows would get.
  MaxMinSolver s;
  const std::vector<double> caps{12, 100};
  const std::vector<std::int32_t> offsets{0, 2, 3}, constraints{0, 1, 0};
  const std::vector<double> weights{2, 1, 1};
  std::vector<double> rates;
  s.solve_csr(caps, offsets, constraints, rates, 0.0, weights);
  EXPECT_DOUBLE_EQ(rates[0], 4);
  EXPECT_DOUBLE_EQ(rates[1], 4);
  // Once the plain flow is bounded elsewhere, the bundle takes the rest: (12 - 2) / 2 = 5 per hop.
  const std::vector<double> caps2{12, 100, 2};
  const std::vector<std::int32_t> offsets2{0, 2, 4}, constraints2{0, 1, 0, 2};
  const std::vector<double> weights2{2, 1, 1, 1};
  s.solve_csr(caps2, offsets2, constraints2, rates, 0.0, weights2);
  EXPECT_DOUBLE_EQ(rates[1], 2);
  EXPECT_DOUBLE_EQ(rates[0], 5);
}

}  // namespace strata::sim
