#include "sim/engine.h"

#include <algorithm>
#include <stdexcept>

namespace strata::sim {

void Engine::schedule(SimTime at, EventHandler& handler, std::uint64_t tag) {
  if (at < now_) throw std::logic_error("event scheduled in the past");
  heap_.push_back(Event{at, next_seq_++, &handler, tag});
  std::push_heap(heap_.begin(), heap_.end(), later);
}

bool Engine::step() {
  if (heap_.empty()) return false;
  std::pop_heap(heap_.begin(), heap_.end(), later);
  const Event e = heap_.back();
  heap_.pop_back();
  now_ = e.at;
  ++processed_;
  e.handler->on_event(e.tag);
  return true;
}

void Engine::run() {
  while (step()) {
  }
}

}  // namespace strata::sim
