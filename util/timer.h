// Wall-clock measurement for reports ("verified in 12.3 s") and time budgets: std::chrono::steady_clock,
// which never jumps when the system clock is adjusted.
#pragma once

#include <chrono>

namespace strata::util {

class Stopwatch {
 public:
  using Clock = std::chrono::steady_clock;

  Stopwatch() : start_(Clock::now()) {}
  void restart() { start_ = Clock::now(); }
  // Seconds since construction or the last restart().
  double seconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }
  Clock::time_point started() const { return start_; }

 private:
  Clock::time_point start_;
};

}  // namespace strata::util
