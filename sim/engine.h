// The discrete-event kernel: a clock and a queue of timed events. It knows nothing of GPUs or networks;
// models schedule events on it and are called back. Events at equal times run in the order they were
// scheduled (a sequence number breaks ties), so a run is fully deterministic.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/time.h"

namespace strata::sim {

// Implemented by models that receive events. `tag` is the model's own payload (e.g. a flow id).
class EventHandler {
 public:
  virtual void on_event(std::uint64_t tag) = 0;

 protected:
  ~EventHandler() = default;
};

class Engine {
 public:
  SimTime now() const { return now_; }
  // Schedules handler.on_event(tag) at absolute time `at` (>= now). The handler must outlive the run.
  void schedule(SimTime at, EventHandler& handler, std::uint64_t tag);
  // Processes events in time order until none are left.
  void run();
  // Processes one event; false when the queue is empty.
  bool step();
  std::uint64_t events_processed() const { return processed_; }
  bool empty() const { return heap_.empty(); }

 private:
  struct Event {
    SimTime at;
    std::uint64_t seq;
    EventHandler* handler;  // non-owning
    std::uint64_t tag;
  };
  static bool later(const Event& a, const Event& b) { return a.at != b.at ? a.at > b.at : a.seq > b.seq; }

  std::vector<Event> heap_;
  SimTime now_ = 0;
  std::uint64_t next_seq_ = 0;
  std::uint64_t processed_ = 0;
};

}  // namespace strata::sim
