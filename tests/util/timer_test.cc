#include "util/timer.h"

#include <thread>

#include <gtest/gtest.h>

namespace strata::util {
namespace {

TEST(Stopwatch, MeasuresASleepAndRestarts) {
  Stopwatch w;
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const double slept = w.seconds();
  EXPECT_GE(slept, 0.020);
  EXPECT_LT(slept, 5.0);  // generous: a loaded 2-core CI machine
  w.restart();
  EXPECT_LT(w.seconds(), slept);
}

}  // namespace
}  // namespace strata::util
