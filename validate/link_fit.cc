#include "validate/link_fit.h"

#include <algorithm>
#include <stdexcept>

namespace strata::validate {

LinkFigures fit_link(std::span<const SizeTime> samples, double min_bytes) {
  if (samples.empty()) throw std::invalid_argument("fit_link: no samples");
  const auto smallest = std::min_element(
      samples.begin(), samples.end(), [](const SizeTime& a, const SizeTime& b) { return a.bytes < b.bytes; });
  LinkFigures f;
  f.latency = smallest->seconds;
  // Least squares in relative terms, as validation reports errors: minimise sum_i (1 - (latency + S_i x) /
  // t_i)^2 over x = 1 / bandwidth, so every size weighs the same whatever its time (a plain fit would be
  // decided by the largest size alone).
  double num = 0, den = 0;
  for (const auto& s : samples) {
    if (s.bytes < min_bytes) continue;
    if (!(s.seconds > 0)) throw std::invalid_argument("fit_link: a time is not positive");
    const double u = s.bytes / s.seconds;
    num += u * (1 - f.latency / s.seconds);
    den += u * u;
  }
  if (den == 0) throw std::invalid_argument("fit_link: no sample of at least the minimum size");
  if (num <= 0)
    throw std::invalid_argument("fit_link: times do not grow with size; the link cannot be fitted");
  f.bandwidth = den / num;
  return f;
}

}  // namespace strata::validate
