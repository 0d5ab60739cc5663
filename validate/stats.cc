#include "validate/stats.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>

namespace strata::validate {

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const auto n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}
namespace {

void check_sizes(std::span<const double> a, std::span<const double> b) {
  if (a.size() != b.size()) throw std::invalid_argument("predicted and measured differ in length");
}

std::vector<std::size_t> order_of(std::span<const double> v) {
  std::vector<std::size_t> idx(v.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) { return v[a] < v[b]; });
  return idx;
}

}  // namespace

std::vector<double> average_ranks(std::span<const double> values) {
  const auto idx = order_of(values);
  std::vector<double> ranks(values.size());
  for (std::size_t i = 0; i < idx.size();) {
    std::size_t j = i;
    while (j + 1 < idx.size() && values[idx[j + 1]] == values[idx[i]]) ++j;
    const double mean_rank = (static_cast<double>(i) + static_cast<double>(j)) / 2 + 1;
    for (std::size_t t = i; t <= j; ++t) ranks[idx[t]] = mean_rank;
    i = j + 1;
  }
  return ranks;
}

double spearman(std::span<const double> predicted, std::span<const double> measured) {
  check_sizes(predicted, measured);
  const std::size_t n = predicted.size();
  if (n < 2) return std::numeric_limits<double>::quiet_NaN();
  const auto a = average_ranks(predicted), b = average_ranks(measured);
  const double ma = std::accumulate(a.begin(), a.end(), 0.0) / static_cast<double>(n);
  const double mb = std::accumulate(b.begin(), b.end(), 0.0) / static_cast<double>(n);
  double sab = 0, saa = 0, sbb = 0;
  for (std::size_t i = 0; i < n; ++i) {
    sab += (a[i] - ma) * (b[i] - mb);
    saa += (a[i] - ma) * (a[i] - ma);
    sbb += (b[i] - mb) * (b[i] - mb);
  }
  if (saa == 0 || sbb == 0) return std::numeric_limits<double>::quiet_NaN();
  return sab / std::sqrt(saa * sbb);
}

bool top_k_hit(std::span<const double> predicted, std::span<const double> measured, int k, double tolerance) {
  check_sizes(predicted, measured);
  if (predicted.empty() || k < 1) return false;
  const auto idx = order_of(predicted);
  const double kth = predicted[idx[std::min<std::size_t>(static_cast<std::size_t>(k), idx.size()) - 1]];
  const double best = *std::min_element(measured.begin(), measured.end());
  for (std::size_t i = 0; i < predicted.size(); ++i)
    if (predicted[i] <= kth && measured[i] <= best * (1 + tolerance)) return true;
  return false;
}

double regret(std::span<const double> predicted, std::span<const double> measured) {
  check_sizes(predicted, measured);
  if (predicted.empty()) return 1;
  const double fastest = *std::min_element(predicted.begin(), predicted.end());
  const double best = *std::min_element(measured.begin(), measured.end());
  // Tied for predicted-fastest: the simulator's pick is any of them, so the expected regret of a random pick.
  double charged = 0;
  int tied = 0;
  for (std::size_t i = 0; i < predicted.size(); ++i)
    if (predicted[i] == fastest) {
      charged += measured[i];
      ++tied;
    }
  charged /= tied;
  return best > 0 ? charged / best : 1;
}

ErrorSummary error_summary(std::span<const double> predicted, std::span<const double> measured) {
  check_sizes(predicted, measured);
  ErrorSummary s;
  if (predicted.empty()) return s;
  std::vector<double> abs;
  for (std::size_t i = 0; i < predicted.size(); ++i) {
    const double e = predicted[i] / measured[i] - 1;
    s.mean += e;
    abs.push_back(std::fabs(e));
  }
  const double n = static_cast<double>(predicted.size());
  s.mean /= n;
  s.mean_abs = std::accumulate(abs.begin(), abs.end(), 0.0) / n;
  s.max_abs = *std::max_element(abs.begin(), abs.end());
  s.median_abs = median(abs);
  return s;
}

}  // namespace strata::validate
