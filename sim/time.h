// Simulated time: exact integer picoseconds, so that event order never depends on floating-point rounding.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

namespace strata::sim {

using SimTime = std::int64_t;  // picoseconds
inline constexpr SimTime kPicosPerSecond = 1'000'000'000'000;
inline constexpr SimTime kNever = std::numeric_limits<SimTime>::max();

// Rounds up, so a positive duration never collapses to zero time.
inline SimTime seconds_to_time(double seconds) {
  return static_cast<SimTime>(std::ceil(seconds * static_cast<double>(kPicosPerSecond)));
}
inline double time_to_seconds(SimTime t) { return static_cast<double>(t) / static_cast<double>(kPicosPerSecond); }

}  // namespace strata::sim
