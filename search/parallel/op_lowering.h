// Lowering of (graph, per-operator plan) to the tasks of one training iteration (FlexFlow, SysML'19 §5.1):
// a forward and a backward kernel per part of every node; a transfer for every pair of producer and consumer
// parts whose blocks intersect and that sit on different GPUs (co-located parts only wait for each other);
// an all-reduce of the partial sums of nodes split along a reduction dimension; gradient transfers along the
// same intersections backwards (a producer part receives every consumer part's contribution and sums them);
// and an all-reduce of each parameter shard's gradient over the parts that hold a copy of it.
//
// A weight used by several nodes (tied: an unrolled RNN's per-layer weights, shared embeddings) is
// synchronised once per iteration where its users lay it out alike: its owner (the user of the smallest node
// index) all-reduces each shard after every user's backward kernels on that shard are done, and a user whose
// (GPU, shard) pairs equal the owner's keeps no copy and sends no all-reduce of its own (each GPU sums its
// users' gradients locally first, as frameworks accumulate a shared weight's gradient). A user laid out
// otherwise keeps and synchronises its own copy. A node's change therefore re-lowers the gradient all-reduces
// and memory of its tied partners too (tied_partners).
//
// Tasks are grouped in blocks per node (incoming transfers, kernels, reductions; the same backwards), so a
// change of one node's configuration re-lowers only its own blocks and its neighbours' transfer blocks.
// Every task has a key that orders it topologically (producers' blocks before consumers' in the forward
// pass, the reverse in the backward pass): the simulators break ties by it, so results never depend on how
// tasks happen to be stored.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "hw/topology.h"
#include "search/parallel/op_cost.h"
#include "search/parallel/op_plan.h"
#include "sim/collective.h"
#include "sim/time.h"

namespace strata::search::parallel {

enum class OpTaskKind : std::uint8_t { kCompute, kTransfer, kAllReduce };
// Per node: forward transfers in, forward kernels, partial-sum all-reduces, gradient transfers in,
// backward kernels, parameter-gradient all-reduces.
enum class OpBlock : std::uint8_t { kFwdIn, kFwd, kRed, kBwdIn, kBwd, kSync };
inline constexpr int kOpBlocks = 6;

struct TaskRef {
  std::int32_t node;  // planned-node index
  OpBlock block;
  std::int32_t local;  // index within the block (part, group or transfer code)
};

// Collective groups and their isolated costs, and GPU-to-GPU routes, cached (one instance per simulator,
// so parallel chains share nothing mutable).
class CommTables {
 public:
  explicit CommTables(const hw::Topology& topo);
  // Route links of a transfer as resource ids (GPUs are 0..G-1, link l is G + l) and its duration.
  const std::vector<std::int32_t>& route_resources(int src, int dst);
  sim::SimTime transfer_time(int src, int dst, double bytes) const;
  // Index of a group of ranks (in this order).
  int group(const std::vector<int>& ranks);
  const std::vector<int>& ranks(int group) const { return groups_[static_cast<std::size_t>(group)].ranks; }
  // Links of the group's ring (routes between consecutive members) as resource ids; non-blocking backplanes
  // (hw::Link::shared false) are left out of both, as they never limit a flow.
  const std::vector<std::int32_t>& group_resources(int group) const {
    return groups_[static_cast<std::size_t>(group)].links;
  }
  // An all-reduce of `bytes` over the group as `strata sim collective --algo auto` runs it alone on the
  // topology: the NCCL-style tuner's choice of algorithm and protocol (sim/nccl_model.h estimate_all),
  // simulated in isolation.
  struct Choice {
    std::string algorithm;
    sim::Protocol protocol;
    sim::SimTime time;
  };
  const Choice& allreduce(int group, double bytes);
  int resources() const { return gpus_ + static_cast<int>(topo_.links().size()); }
  const hw::Topology& topology() const { return topo_; }

 private:
  struct Group {
    std::vector<int> ranks;
    std::vector<std::int32_t> links;
  };
  const hw::Topology& topo_;
  int gpus_;
  std::vector<std::vector<std::int32_t>> routes_;  // per src x dst; filled on first use
  std::vector<char> route_known_;
  std::map<std::vector<int>, int> group_index_;
  std::deque<Group> groups_;  // a deque: simulators keep pointers to the link lists
  std::map<std::pair<int, double>, Choice> allreduce_;
};

struct LoweredTask {
  OpTaskKind kind = OpTaskKind::kCompute;
  std::int32_t local = 0;
  int gpu = -1;        // compute: GPU; transfer: source
  int peer = -1;       // transfer: destination
  int group = -1;      // all-reduce: CommTables group
  double bytes = 0;    // transfer / all-reduce payload
  double seconds = 0;  // compute
  std::vector<TaskRef> deps;
};

// The graph's edges between planned nodes, and memory parameters.
class OpLowering {
 public:
  struct Options {
    // Per parameter element, bytes of optimizer state kept on the GPUs holding its shard: Adam's two fp32
    // moments (8), plus an fp32 master copy for half-precision weights (4) (mixed precision, as
    // models/train/training.h derives it).
    bool adam = true;
  };
  OpLowering(const PlanSpace& space, const ShardCosts& costs, Options options);

  const PlanSpace& space() const { return *space_; }
  const ShardCosts& costs() const { return *costs_; }

  // Tasks of two blocks lowered together (kFwdIn with kFwd, kBwdIn with kBwd) or one (kRed, kSync), under
  // `plan`. `first` is kFwdIn, kRed, kBwdIn or kSync.
  void lower(int i, OpBlock first, const OpPlan& plan, CommTables& comm, std::vector<LoweredTask>& a,
             std::vector<LoweredTask>& b) const;
  // Planned neighbours: nodes whose incoming transfers change when node i changes configuration.
  const std::vector<int>& consumers(int i) const { return consumers_[static_cast<std::size_t>(i)]; }
  const std::vector<int>& producers(int i) const { return producers_[static_cast<std::size_t>(i)]; }
  // Other nodes that use one of node i's weights: their gradient all-reduces and memory depend on i's layout.
  const std::vector<int>& tied_partners(int i) const { return partners_[static_cast<std::size_t>(i)]; }

  // Bytes node i keeps on each GPU under `plan`: its parameter shards, their gradients and optimizer
  // state, its output blocks (saved for the backward pass) and the input blocks it received from other GPUs.
  // Added to `per_gpu` (size = GPUs) times `sign` (+1 / -1), in whole bytes so that adding and removing a
  // node's share is exact.
  void add_memory(int i, const OpPlan& plan, int sign, std::vector<std::int64_t>& per_gpu) const;

  // Topological key of a task: ties in the simulators are broken by it.
  std::uint64_t key(int node, OpBlock block, std::int32_t local) const;

 private:
  struct In {
    int input;     // input index of the consumer
    int producer;  // planned producer, -1 for sources (graph inputs, weights, constants) and constant ops
    int output;    // producer's output index
  };
  struct Out {
    int consumer, input, output;
  };
  void lower_forward(int i, const OpPlan& plan, CommTables& comm, std::vector<LoweredTask>& in,
                     std::vector<LoweredTask>& fwd) const;
  void lower_backward(int i, const OpPlan& plan, CommTables& comm, std::vector<LoweredTask>& in,
                      std::vector<LoweredTask>& bwd) const;
  void lower_reduction(int i, const OpPlan& plan, CommTables& comm, std::vector<LoweredTask>& red) const;
  void lower_sync(int i, const OpPlan& plan, CommTables& comm, std::vector<LoweredTask>& sync) const;
  // The task a consumer waits for to read producer part p's output: its kernel, or its group's all-reduce.
  TaskRef final_task(int p_node, const OpConfig& c, int part) const;
  // Parts of node i that hold the same output block (differ only in reduction indices): the group id of a
  // part, and the members of each group.
  int reduction_group(int i, const OpConfig& c, int part) const;
  // Tied weights: the weight behind node i's input j (-1: used by node i alone), and whether node i's copy
  // of it merges into its owner's synchronisation under `plan` (its (GPU, block) pairs equal the owner's).
  int tied_weight(int i, int j) const;
  bool merged_into_owner(int i, int j, const OpPlan& plan) const;

  const PlanSpace* space_;
  const ShardCosts* costs_;
  Options options_;
  std::vector<std::vector<In>> ins_;
  std::vector<std::vector<Out>> outs_;
  std::vector<std::vector<int>> consumers_, producers_;
  std::vector<std::vector<int>> param_inputs_;  // per node: inputs that are trainable weights
  // Tied weights: per weight its users (node, input), sorted, the first being the owner; per node the weight
  // of each input (-1: not tied); per node its tied partners.
  std::vector<std::vector<std::pair<int, int>>> tied_users_;
  std::vector<std::vector<int>> tied_of_input_;
  std::vector<std::vector<int>> partners_;
};

}  // namespace strata::search::parallel
