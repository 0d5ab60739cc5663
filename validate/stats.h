// How well predicted times rank and match measured ones: the statistics `strata validate` reports. Inputs are
// parallel arrays, one entry per candidate (a program, a placement x program, a collective size).
#pragma once

#include <algorithm>
#include <limits>
#include <span>
#include <vector>

namespace strata::validate {

// The median of `values` (the mean of the two middle ones for an even count); 0 for none.
double median(std::vector<double> values);

// One measurement taken in several rounds (validate/cpu_replay.h least_disturbed says why): the smallest
// round median is the one kept, and spread() = slowest / smallest - 1 says how far the rounds lay apart.
struct RoundExtremes {
  double smallest = std::numeric_limits<double>::infinity(), slowest = 0;
  void add(double seconds) {
    smallest = std::min(smallest, seconds);
    slowest = std::max(slowest, seconds);
  }
  double spread() const { return smallest > 0 && slowest > 0 ? slowest / smallest - 1 : 0; }
};

// Ranks 1..n of `values`, ascending; tied values share the mean of their ranks (as Spearman's rho needs).
std::vector<double> average_ranks(std::span<const double> values);

// Spearman's rank correlation of predicted and measured: Pearson's correlation of their average ranks. 1 when
// both orders agree; NaN when either side has no spread (fewer than 2 candidates or all equal).
double spearman(std::span<const double> predicted, std::span<const double> measured);

// Top-k accuracy of one ranking: 1 when a measured-fastest candidate is among the k candidates predicted
// fastest, else 0. Ties: the predicted top k includes every candidate whose predicted time equals the k-th
// smallest (the simulator cannot tell them apart), and any candidate measured within `tolerance` (relative)
// of the measured best counts as measured-fastest (differences below the measurement noise do not decide).
bool top_k_hit(std::span<const double> predicted, std::span<const double> measured, int k,
               double tolerance = 0);

// Regret of the prediction's choice: the measured time of the predicted-fastest candidate over the measured
// best (>= 1; 1 = the simulator picked the fastest). Candidates tied for predicted-fastest are all the
// simulator's pick: their mean measured time is charged (the expected regret of picking one at random).
double regret(std::span<const double> predicted, std::span<const double> measured);

struct ErrorSummary {
  double mean_abs = 0;  // mean of |predicted / measured - 1|
  double mean = 0;      // mean of predicted / measured - 1 (sign: + = predicted slower than measured)
  double max_abs = 0;
  double median_abs = 0;
};
ErrorSummary error_summary(std::span<const double> predicted, std::span<const double> measured);

}  // namespace strata::validate
