// Simulated time: exact integer picoseconds, so that event order never depends on floating-point rounding.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <stdexcept>

namespace strata::sim {

using SimTime = std::int64_t;  // picoseconds
inline constexpr SimTime kPicosPerSecond = 1'000'000'000'000;
inline constexpr SimTime kNever = std::numeric_limits<SimTime>::max();
// The longest duration the simulator represents: int64 picoseconds, about 106 days.
inline constexpr double kMaxSimSeconds = static_cast<double>(kNever) / static_cast<double>(kPicosPerSecond);

// Thrown when a duration or a point in simulated time does not fit the picosecond clock (huge sizes, tiny
// bandwidths, huge latencies); a std::invalid_argument, so the CLI reports it as an input error.
inline std::invalid_argument time_out_of_range(double seconds) {
  char text[160];
  std::snprintf(text, sizeof text,
                "simulated duration of %.6g s is outside the simulator's range (0 to %.6g s at picosecond "
                "resolution); check sizes, bandwidths and latencies",
                seconds, kMaxSimSeconds);
  return std::invalid_argument(text);
}

// Rounds up, so a positive duration never collapses to zero time. Negative, NaN, infinite or too-large
// durations throw time_out_of_range (a double -> int64 conversion out of range is undefined behaviour).
inline SimTime seconds_to_time(double seconds) {
  const double ps = std::ceil(seconds * static_cast<double>(kPicosPerSecond));
  // 2^63 is exactly representable; every double below it converts without overflow.
  if (!(ps >= 0.0 && ps < 9223372036854775808.0)) throw time_out_of_range(seconds);
  return static_cast<SimTime>(ps);
}
inline double time_to_seconds(SimTime t) {
  return static_cast<double>(t) / static_cast<double>(kPicosPerSecond);
}

// now + d, throwing time_out_of_range instead of overflowing.
inline SimTime checked_add(SimTime now, SimTime d) {
  if (d > kNever - now) throw time_out_of_range(time_to_seconds(now) + time_to_seconds(d));
  return now + d;
}
inline SimTime time_after(SimTime now, double seconds) {
  return checked_add(now, seconds_to_time(seconds));
}

}  // namespace strata::sim
