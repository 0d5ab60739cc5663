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
  double ss = 0, st = 0;
  for (const auto& s : samples) {
    if (s.bytes < min_bytes) continue;
    ss += s.bytes * s.bytes;
    st += s.bytes * (s.seconds - f.latency);
  }
  if (ss == 0) throw std::invalid_argument("fit_link: no sample of at least the minimum size");
  if (st <= 0)
    throw std::invalid_argument("fit_link: times do not grow with size; the link cannot be fitted");
  f.bandwidth = ss / st;
  return f;
}

}  // namespace strata::validate
