#include <gtest/gtest.h>

#include <vector>

#include "sim/engine.h"

namespace strata::sim {
namespace {
struct Recorder final : EventHandler {
  Engine* engine = nullptr;
  std::vector<std::pair<SimTime, std::uint64_t>> seen;
  void on_event(std::uint64_t tag) override {
    seen.emplace_back(engine->now(), tag);
    if (tag == 1) engine->schedule(engine->now(), *this, 100);  // same-time event scheduled during an event
  }
};
}  // namespace

TEST(Engine, TimeOrderThenInsertionOrder) {
  Engine e;
  Recorder r;
  r.engine = &e;
  e.schedule(50, r, 3);
  e.schedule(10, r, 1);
  e.schedule(10, r, 2);
  e.run();
  const std::vector<std::pair<SimTime, std::uint64_t>> expected{{10, 1}, {10, 2}, {10, 100}, {50, 3}};
  EXPECT_EQ(r.seen, expected);
  EXPECT_EQ(e.events_processed(), 4u);
  EXPECT_THROW(e.schedule(1, r, 0), std::logic_error);
}

TEST(Time, ConversionRoundsUp) {
  EXPECT_EQ(seconds_to_time(1e-6), 1'000'000);
  EXPECT_EQ(seconds_to_time(1.5e-12), 2);
  EXPECT_DOUBLE_EQ(time_to_seconds(kPicosPerSecond), 1.0);
}

}  // namespace strata::sim
