#include "sim/task_graph.h"

#include <algorithm>
#include <stdexcept>

namespace strata::sim {

TaskId TaskGraph::push(Task t, std::span<const Dep> deps) {
  const auto id = static_cast<TaskId>(tasks_.size());
  tasks_.push_back(t);
  for (const Dep& d : deps) add_dep(id, d);
  return id;
}

void TaskGraph::add_dep(TaskId task, Dep dep) {
  if (dep.task < 0 || dep.task >= task) throw std::logic_error("a dependency must name an earlier task");
  edges_.push_back(Edge{dep.task, task, dep.kind});
}

namespace {

// A transfer keeps the lowest of its caps (max_rate 0: none yet).
void lower_cap(Task& t, double max_rate) {
  if (!(max_rate > 0)) throw std::logic_error("a transfer rate cap must be positive");
  t.max_rate = t.max_rate > 0 ? std::min(t.max_rate, max_rate) : max_rate;
}

}  // namespace

void TaskGraph::cap_transfers_after(TaskId after, double max_rate) {
  if (!(max_rate > 0)) throw std::logic_error("a transfer rate cap must be positive");
  for (auto i = static_cast<std::size_t>(after) + 1; i < tasks_.size(); ++i)
    if (tasks_[i].kind == TaskKind::kTransfer) lower_cap(tasks_[i], max_rate);
}

void TaskGraph::cap_transfer(TaskId transfer, double max_rate) {
  Task& t = tasks_.at(static_cast<std::size_t>(transfer));
  if (t.kind != TaskKind::kTransfer) throw std::logic_error("cap_transfer: not a transfer");
  lower_cap(t, max_rate);
}

TaskId TaskGraph::add_compute(hw::Rank gpu, int stream, const ComputeWork& work, std::int32_t label,
                              std::span<const Dep> deps) {
  return push(Task{.kind = TaskKind::kCompute, .rank = gpu, .stream = stream, .label = label, .work = work},
              deps);
}

TaskId TaskGraph::add_compute_fixed(hw::Rank gpu, int stream, double seconds, std::int32_t label,
                                    std::span<const Dep> deps) {
  return push(
      Task{.kind = TaskKind::kCompute, .rank = gpu, .stream = stream, .label = label, .seconds = seconds},
      deps);
}

TaskId TaskGraph::add_transfer(hw::Rank src, hw::Rank dst, double wire_bytes, double latency_seconds,
                               std::int32_t label, std::span<const Dep> deps, int lane) {
  return push(Task{.kind = TaskKind::kTransfer,
                   .rank = src,
                   .peer = dst,
                   .lane = lane,
                   .label = label,
                   .bytes = wire_bytes,
                   .seconds = latency_seconds},
              deps);
}

TaskId TaskGraph::add_transfer_on(CustomRoute route, hw::Rank src, hw::Rank dst, double wire_bytes,
                                  double latency_seconds, std::int32_t label, std::span<const Dep> deps,
                                  int lane) {
  return add_transfer_via(add_route(std::move(route)), src, dst, wire_bytes, latency_seconds, label, deps,
                          lane);
}

std::int32_t TaskGraph::add_route(CustomRoute route) {
  if (!route.weights.empty() && route.weights.size() != route.links.size())
    throw std::logic_error("custom route: weights must be parallel to links");
  routes_.push_back(std::move(route));
  return static_cast<std::int32_t>(routes_.size() - 1);
}

TaskId TaskGraph::add_transfer_via(std::int32_t route, hw::Rank src, hw::Rank dst, double wire_bytes,
                                   double latency_seconds, std::int32_t label, std::span<const Dep> deps,
                                   int lane) {
  if (route < 0 || static_cast<std::size_t>(route) >= routes_.size())
    throw std::logic_error("add_transfer_via: no such custom route");
  const TaskId id = add_transfer(src, dst, wire_bytes, latency_seconds, label, deps, lane);
  tasks_[static_cast<std::size_t>(id)].route = route;
  return id;
}

TaskId TaskGraph::add_delay(double seconds, std::int32_t label, std::span<const Dep> deps) {
  return push(Task{.kind = TaskKind::kDelay, .label = label, .seconds = seconds}, deps);
}

std::int32_t TaskGraph::intern(std::string_view label) {
  // Labels are few (one per algorithm phase), so a linear scan from the back is cheap and keeps order.
  for (std::size_t i = labels_.size(); i-- > 0;)
    if (labels_[i] == label) return static_cast<std::int32_t>(i);
  labels_.emplace_back(label);
  return static_cast<std::int32_t>(labels_.size() - 1);
}

}  // namespace strata::sim
