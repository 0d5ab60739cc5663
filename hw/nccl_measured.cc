#include "hw/nccl_measured.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

namespace strata::hw {

SizeTimes::SizeTimes(std::vector<SizeTime> points) : points_(std::move(points)) {
  for (std::size_t i = 0; i < points_.size(); ++i) {
    const auto& p = points_[i];
    if (!(p.bytes >= 1) || !std::isfinite(p.bytes))
      throw std::invalid_argument(fmt::format("point {}: the size must be at least 1 B", i + 1));
    if (!(p.seconds > 0) || !std::isfinite(p.seconds))
      throw std::invalid_argument(fmt::format("point {}: the time must be positive", i + 1));
    if (i > 0 && !(p.bytes > points_[i - 1].bytes))
      throw std::invalid_argument(fmt::format("point {}: sizes must increase from point to point", i + 1));
  }
}

SizeTimes::Linear SizeTimes::linear_at(double bytes) const {
  if (points_.empty()) return {};
  if (bytes <= points_.front().bytes) return {points_.front().seconds, 0};
  const auto& last = points_.back();
  const Linear proportional{0, last.seconds / last.bytes};
  if (points_.size() == 1) return proportional;
  // The segment that holds `bytes`, or the last one when it lies beyond every point.
  const auto upper = std::upper_bound(points_.begin(), points_.end(), bytes,
                                      [](double b, const SizeTime& p) { return b < p.bytes; });
  const auto hi = upper == points_.end() ? points_.end() - 1 : upper;
  const auto lo = hi - 1;
  const double slope = (hi->seconds - lo->seconds) / (hi->bytes - lo->bytes);
  if (!(slope > 0)) {
    // A segment that does not rise (measurement noise) has nothing that grows with the size.
    if (bytes > last.bytes) return proportional;
    return {lo->seconds + slope * (bytes - lo->bytes), 0};
  }
  return {lo->seconds - slope * lo->bytes, slope};
}

SizeTimes::Split SizeTimes::split(double bytes, double count) const {
  const Linear l = linear_at(bytes);
  return {count * l.fixed, count * bytes * l.per_byte};
}

}  // namespace strata::hw
