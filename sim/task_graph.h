// A task graph: compute kernels on GPU streams, transfers between GPUs, and pure delays, joined by
// dependencies. Collective algorithms expand into transfers here; whole training steps are meant to be built
// the same way (models/ does for one GPU; the parallelization search is planned).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hw/topology.h"
#include "sim/compute_model.h"

namespace strata::sim {

using TaskId = std::int32_t;

enum class TaskKind : std::uint8_t { kCompute, kTransfer, kDelay };

// What a dependency waits for. For transfers: kSent = the bytes have left the source (its links are free),
// kDone = delivered at the destination. Compute and delay tasks are sent and done at the same moment.
enum class DepKind : std::uint8_t { kDone, kSent };

struct Dep {
  TaskId task;
  DepKind kind = DepKind::kDone;
};

// Links a transfer uses instead of the topology's route. `weights` is empty (each link once) or parallel to
// `links`: the number of a bundle's hops that cross each link (a ring's n hops advancing in lock-step are
// one bundle; its bytes are per hop).
struct CustomRoute {
  std::vector<hw::LinkId> links;
  std::vector<double> weights;
};

struct Task {
  TaskKind kind;
  std::int32_t rank = -1;   // compute: GPU; transfer: source GPU
  std::int32_t peer = -1;   // transfer: destination GPU
  std::int32_t stream = 0;  // compute: stream on the GPU
  std::int32_t lane = 0;    // transfer: channel, for trace display
  std::int32_t label = -1;  // index into TaskGraph::labels()
  std::int32_t route = -1;  // transfer: index into custom routes, or -1 for the topology's route
  double bytes = 0;         // transfer: bytes put on the wire
  double seconds = 0;       // compute: fixed duration if > 0; delay: duration; transfer: delivery latency
  double max_rate = 0;      // transfer: the most wire bytes/s the sender's kernel moves it at (0: links only)
  ComputeWork work{};       // compute: used when seconds == 0
};

class TaskGraph {
 public:
  TaskId add_compute(hw::Rank gpu, int stream, const ComputeWork& work, std::int32_t label,
                     std::span<const Dep> deps = {});
  TaskId add_compute_fixed(hw::Rank gpu, int stream, double seconds, std::int32_t label,
                           std::span<const Dep> deps = {});
  TaskId add_transfer(hw::Rank src, hw::Rank dst, double wire_bytes, double latency_seconds,
                      std::int32_t label, std::span<const Dep> deps = {}, int lane = 0);
  // A transfer along explicit links (e.g. GPU -> NVSwitch for in-switch reduction), or a flow bundle: a
  // route whose links carry `weights` x the bundle's bytes at weights x its rate (see CustomRoute).
  TaskId add_transfer_on(CustomRoute route, hw::Rank src, hw::Rank dst, double wire_bytes,
                         double latency_seconds, std::int32_t label, std::span<const Dep> deps = {},
                         int lane = 0);
  // A custom route stored once for many transfers (add_transfer_via): a flow bundle over all instances of a
  // symmetric collective has hundreds of links and is emitted thousands of times in a training step.
  std::int32_t add_route(CustomRoute route);
  TaskId add_transfer_via(std::int32_t route, hw::Rank src, hw::Rank dst, double wire_bytes,
                          double latency_seconds, std::int32_t label, std::span<const Dep> deps = {},
                          int lane = 0);
  std::size_t num_custom_routes() const { return routes_.size(); }
  TaskId add_delay(double seconds, std::int32_t label, std::span<const Dep> deps = {});
  void add_dep(TaskId task, Dep dep);
  // Caps the rate of every transfer added after `after` (wire bytes/s, > 0): a protocol's kernel that
  // cannot move data faster than that whatever the links allow (sim/nccl_model.h, protocol_ceiling).
  void cap_transfers_after(TaskId after, double max_rate);
  // Caps one transfer's rate likewise.
  void cap_transfer(TaskId transfer, double max_rate);

  // Interned label for trace names ("allreduce/ring step 3"); returns its index.
  std::int32_t intern(std::string_view label);

  std::span<const Task> tasks() const { return tasks_; }
  const Task& task(TaskId id) const { return tasks_[static_cast<std::size_t>(id)]; }
  std::size_t size() const { return tasks_.size(); }
  std::span<const std::string> labels() const { return labels_; }
  const CustomRoute& custom_route(std::int32_t i) const { return routes_[static_cast<std::size_t>(i)]; }

  struct Edge {
    TaskId from, to;
    DepKind kind;
  };
  std::span<const Edge> edges() const { return edges_; }

 private:
  TaskId push(Task t, std::span<const Dep> deps);

  std::vector<Task> tasks_;
  std::vector<Edge> edges_;
  std::vector<std::string> labels_;
  std::vector<CustomRoute> routes_;
};

}  // namespace strata::sim
