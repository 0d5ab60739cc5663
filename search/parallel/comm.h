// Communication of a parallel training step, simulated with symmetry but without dropping contention.
//
// A step simulates one representative GPU per pipeline stage; every communication it performs is replicated
// over symmetric instances (the same collective on the TP group of every data-parallel replica, the DP
// reduction of every tensor-parallel rank, the pipeline send of every TP rank and replica). Two exact
// reductions keep large clusters fast:
//  - an *isolated* class of communication (no link used by two of its instances, and no link shared with any
//    other class; its operations never overlap each other on one instance) takes exactly the time it takes
//    alone on its links: that time is simulated once per distinct operation and reused as a fixed duration;
//  - any other operation runs as real flows in the step's network simulation, all instances at once: the
//    corresponding transfers of the instances' expansions are merged into one flow bundle whose route is the
//    union of theirs (sim::CustomRoute weights), so every link carries every instance's bytes. Symmetric
//    instances progress at one common rate; where the real system would let them drift apart this is the
//    rate of the slowest, which the docs (docs/parallel.md) call out.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "hw/topology.h"
#include "sim/collective.h"
#include "sim/task_graph.h"

namespace strata::search::parallel {

enum class CommClass : std::uint8_t { kTensor, kContext, kExpert, kPipeline, kData, kEmbedding };
inline constexpr int kNumCommClasses = 6;
std::string_view comm_class_name(CommClass c);

struct CommOp {
  CommClass cls = CommClass::kTensor;
  bool p2p = false;  // a point-to-point send: every instance is {source, destination}
  sim::CollectiveOp op = sim::CollectiveOp::kAllReduce;
  double bytes = 0;  // nccl-tests convention for collectives (sim::CollectiveSpec::bytes); p2p: the message
  std::vector<std::vector<hw::Rank>> instances;  // instance 0 belongs to the representative
  std::string label;
};

// Seconds instance 0 of `op` takes alone on the topology (the collective as `strata sim collective --algo
// auto` runs it; a send as one transfer).
double simulate_alone(const hw::Topology& topo, const CommOp& op);

// simulate_alone, memoized by what the time depends on (kind, bytes, instance 0); thread-safe, so one memo
// can serve every step graph of a search.
class AloneTimes {
 public:
  explicit AloneTimes(const hw::Topology& topo) : topo_(topo) {}
  double operator()(const CommOp& op);

 private:
  const hw::Topology& topo_;
  std::mutex mutex_;
  std::map<std::tuple<bool, int, double, std::vector<hw::Rank>>, double> memo_;
};

// How a step's communication is timed.
enum class CommTiming : std::uint8_t {
  kSimulated,  // isolated classes at their time alone, everything else as flows with contention (the default)
  kAllFlows,   // every operation as flows (the reference the isolation shortcut is tested against)
  // Every operation takes its time alone, with no contention at all: each is a delay after its explicit
  // dependencies. A lower bound on kSimulated (the search prunes with it): the step graph orders every
  // stream's work by explicit dependencies, so its times only grow with its tasks' durations, and sharing
  // links only makes communication slower than alone.
  kAlone,
};

class CommEmitter {
 public:
  // `alone`: a shared memo of times alone (nullptr: the emitter keeps its own).
  CommEmitter(const hw::Topology& topo, sim::TaskGraph& graph, AloneTimes* alone = nullptr)
      : topo_(topo),
        graph_(graph),
        own_alone_(alone ? nullptr : std::make_unique<AloneTimes>(topo)),
        alone_(alone ? alone : own_alone_.get()) {}

  // Declares an operation the step will emit (each distinct one once), for the isolation analysis.
  void declare(const CommOp& op);
  // Decides which classes are isolated; call after every declare() and before emit().
  void finalize(CommTiming timing = CommTiming::kSimulated);
  bool isolated(CommClass c) const { return isolated_[static_cast<std::size_t>(c)]; }

  // Adds `op` after `deps`; returns the task done when every instance is. Isolated classes: one fixed-length
  // task on `rep`'s stream `stream`; others: the merged flow expansion (CommTiming::kAlone: a delay).
  sim::TaskId emit(const CommOp& op, hw::Rank rep, int stream, std::span<const sim::Dep> deps);
  // Whether emit() gives `op` a fixed duration (its class is isolated, or it involves one GPU).
  bool fixed_duration(const CommOp& op) const {
    return timing_ == CommTiming::kAlone || isolated(op.cls) || (!op.p2p && op.instances.front().size() < 2);
  }
  // Seconds `op` takes alone on instance 0's links (memoized, also by the address of `op`: operations passed
  // to emit() and alone_seconds() must outlive the emitter, as a StepDescription's do).
  double alone_seconds(const CommOp& op) {
    // Per operation object first (a step emits each of its described operations thousands of times), then
    // the shared memo.
    auto [it, fresh] = alone_by_op_.try_emplace(&op, 0.0);
    if (fresh) it->second = (*alone_)(op);
    return it->second;
  }

 private:
  struct Expansion {  // a merged expansion, instantiated once per emission
    struct Item {
      sim::Task task;
      std::int32_t route = -1;     // index into routes
      std::vector<sim::Dep> deps;  // within the expansion
    };
    std::vector<Item> items;  // item 0: the start (a zero delay); deps added at emission
    std::vector<sim::CustomRoute> routes;
    std::vector<std::int32_t> graph_routes;  // routes stored in the graph at the first emission
    std::vector<std::string> labels;
    sim::TaskId done = 0;
  };
  using Key = std::tuple<int, bool, int, double, std::vector<std::vector<hw::Rank>>>;
  static Key key_of(const CommOp& op);
  std::vector<hw::LinkId> instance_links(const CommOp& op, std::size_t instance);
  sim::CollectiveSpec spec_of(const CommOp& op, std::size_t instance) const;
  Expansion& expansion(const CommOp& op);

  const hw::Topology& topo_;
  sim::TaskGraph& graph_;
  std::vector<CommOp> declared_;
  std::unique_ptr<AloneTimes> own_alone_;
  AloneTimes* alone_;
  std::unordered_map<const CommOp*, double> alone_by_op_;  // CommOps outlive the emitter (step descriptions)
  bool isolated_[kNumCommClasses] = {};
  CommTiming timing_ = CommTiming::kSimulated;
  bool finalized_ = false;
  std::map<Key, Expansion> expansions_;
  // The algorithm and protocol NCCL's tuner would pick (sim::nccl::estimate_all), per (op, bytes, group).
  const std::pair<std::string, sim::Protocol>& choice(const CommOp& op, std::size_t instance);
  std::map<std::tuple<int, double, std::vector<hw::Rank>>, std::pair<std::string, sim::Protocol>> choice_;
  std::map<std::string, std::int32_t> label_ids_;
};

}  // namespace strata::search::parallel
