#include "sim/simulator.h"

#include <algorithm>
#include <deque>
#include <map>
#include <stdexcept>

#include <fmt/format.h>

#include "sim/engine.h"
#include "sim/network_model.h"
#include "sim/route_classes.h"

namespace strata::sim {
namespace {

class Run final : public EventHandler, public FlowListener {
 public:
  Run(const hw::Topology& topo, const TaskGraph& graph, const SimOptions& options)
      : topo_(topo),
        graph_(graph),
        compute_(options.compute),
        routes_(topo, graph),
        network_(engine_, capacities(topo), shared(topo), *this),
        record_(options.record_timeline) {
    const std::size_t n = graph.size();
    pending_.assign(n, 0);
    // Successor lists in CSR form, split by what the successor waits for.
    offsets_.assign(n + 1, 0);
    for (const auto& e : graph.edges()) {
      ++offsets_[static_cast<std::size_t>(e.from) + 1];
      ++pending_[static_cast<std::size_t>(e.to)];
    }
    for (std::size_t i = 0; i < n; ++i) offsets_[i + 1] += offsets_[i];
    succ_.resize(graph.edges().size());
    std::vector<std::int32_t> fill(offsets_.begin(), offsets_.end() - 1);
    for (const auto& e : graph.edges())
      succ_[static_cast<std::size_t>(fill[static_cast<std::size_t>(e.from)]++)] = {e.to, e.kind};
    if (record_) timeline_.assign(n, TaskTiming{});
  }

  SimResult run() {
    for (TaskId t = 0; t < static_cast<TaskId>(graph_.size()); ++t)
      if (pending_[static_cast<std::size_t>(t)] == 0) start(t);
    engine_.run();
    if (completed_ != graph_.size())
      throw std::logic_error(
          fmt::format("task graph deadlocked: {} of {} tasks completed", completed_, graph_.size()));
    SimResult r;
    // The last task's completion: the engine may still hold stale events (flow completions superseded by a
    // later rate change are dropped only when they fire), which end later and mean nothing.
    r.makespan = last_done_;
    r.events = engine_.events_processed();
    r.rate_solves = network_.rate_solves();
    r.link_bytes = routes_.expand(network_.link_bytes());
    r.timeline = std::move(timeline_);
    return r;
  }

  // Compute and delay completions.
  void on_event(std::uint64_t tag) override {
    const auto t = static_cast<TaskId>(tag);
    const Task& task = graph_.task(t);
    if (task.kind == TaskKind::kCompute) {
      auto& queue = streams_[stream_key(task)];
      queue.pop_front();
      if (!queue.empty()) begin_compute(queue.front());
    }
    finish(t, true, true);
  }
  void on_flow_sent(FlowId, std::uint64_t user) override { finish(static_cast<TaskId>(user), true, false); }
  void on_flow_delivered(FlowId, std::uint64_t user) override {
    finish(static_cast<TaskId>(user), false, true);
  }

 private:
  static std::vector<double> capacities(const hw::Topology& topo) {
    std::vector<double> c;
    c.reserve(topo.links().size());
    for (const auto& l : topo.links()) c.push_back(l.bandwidth);
    return c;
  }
  static std::vector<char> shared(const hw::Topology& topo) {
    std::vector<char> s;
    s.reserve(topo.links().size());
    for (const auto& l : topo.links()) s.push_back(l.shared ? 1 : 0);
    return s;
  }
  static std::uint64_t stream_key(const Task& t) {
    return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(t.rank)) << 32) |
           static_cast<std::uint32_t>(t.stream);
  }

  void start(TaskId t) {
    const Task& task = graph_.task(t);
    if (record_) timeline_[static_cast<std::size_t>(t)].start = engine_.now();
    switch (task.kind) {
      case TaskKind::kCompute: {
        auto& queue = streams_[stream_key(task)];
        queue.push_back(t);
        if (queue.size() == 1) begin_compute(t);
        break;
      }
      case TaskKind::kTransfer:
        // One link per class of equivalent links: the same rates as the full routes (RouteClasses).
        network_.start_flow(routes_.links(task), task.bytes, task.seconds, static_cast<std::uint64_t>(t),
                            routes_.weights(task), task.max_rate);
        break;
      case TaskKind::kDelay:
        engine_.schedule(time_after(engine_.now(), task.seconds), *this, static_cast<std::uint64_t>(t));
        break;
    }
  }

  void begin_compute(TaskId t) {
    const Task& task = graph_.task(t);
    if (record_) timeline_[static_cast<std::size_t>(t)].start = engine_.now();
    if (task.seconds <= 0 && !compute_)
      throw std::invalid_argument(fmt::format(
          "compute task '{}' has no fixed duration and SimOptions::compute is not set",
          task.label >= 0 ? graph_.labels()[static_cast<std::size_t>(task.label)] : std::string("?")));
    const double seconds = task.seconds > 0 ? task.seconds : compute_->seconds(task.work, topo_.gpu());
    engine_.schedule(time_after(engine_.now(), seconds), *this, static_cast<std::uint64_t>(t));
  }

  void finish(TaskId t, bool sent, bool done) {
    if (record_) {
      auto& tm = timeline_[static_cast<std::size_t>(t)];
      if (sent) tm.sent = engine_.now();
      if (done) tm.done = engine_.now();
    }
    if (done) {
      ++completed_;
      last_done_ = engine_.now();
    }
    for (auto i = offsets_[static_cast<std::size_t>(t)]; i < offsets_[static_cast<std::size_t>(t) + 1]; ++i) {
      const auto& [succ, kind] = succ_[static_cast<std::size_t>(i)];
      const bool fires = (kind == DepKind::kSent) ? sent : done;
      if (fires && --pending_[static_cast<std::size_t>(succ)] == 0) start(succ);
    }
  }

  SimTime last_done_ = 0;
  const hw::Topology& topo_;
  const TaskGraph& graph_;
  const ComputeCost* compute_;
  RouteClasses routes_;
  Engine engine_;
  NetworkModel network_;
  bool record_;
  std::vector<std::int32_t> pending_;
  std::vector<std::int32_t> offsets_;
  std::vector<std::pair<TaskId, DepKind>> succ_;
  std::map<std::uint64_t, std::deque<TaskId>> streams_;
  std::vector<TaskTiming> timeline_;
  std::size_t completed_ = 0;
};

}  // namespace

SimResult simulate(const hw::Topology& topo, const TaskGraph& graph, const SimOptions& options) {
  Run run(topo, graph, options);
  return run.run();
}

std::vector<LinkUsage> SimResult::link_usage(const hw::Topology& topo) const {
  std::vector<LinkUsage> out;
  const double span = seconds();
  for (std::size_t i = 0; i < link_bytes.size(); ++i) {
    if (link_bytes[i] <= 0) continue;
    const double cap = topo.links()[i].bandwidth;
    out.push_back({static_cast<hw::LinkId>(i), link_bytes[i], span > 0 ? link_bytes[i] / (cap * span) : 0.0});
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const LinkUsage& a, const LinkUsage& b) { return a.utilization > b.utilization; });
  return out;
}

}  // namespace strata::sim
