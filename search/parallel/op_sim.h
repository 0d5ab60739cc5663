// Simulation of a per-operator plan's training iteration, two ways (docs/parallel.md, "Per-operator plans and
// MCMC"):
//
// (a) OpSimulator, the search's fast simulator, after FlexFlow (Jia et al., SysML'19 §5): a list scheduler.
//     Every GPU runs its kernels one at a time; every directed link is a resource that carries one transfer
//     at a time (a transfer holds every link of its route for latency + bytes / bottleneck bandwidth); an
//     all-reduce holds every link of its group's ring for the time it takes alone on the topology (simulated
//     once per group and size, algorithm and protocol chosen like `strata sim collective --algo auto`). Ready
//     tasks start in order of (ready time, topological key). With delta simulation (FlexFlow §5.2) a
//     proposal that changes one node's configuration re-lowers only that node's blocks and its neighbours'
//     transfer blocks, and restarts the scheduler from a saved state just before the first point in the
//     schedule the change can affect; the result equals a full re-simulation exactly (integer picoseconds,
//     the same pops in the same order).
// (b) simulate_full_step: the same tasks on sim/'s discrete-event simulator (sim::simulate): transfers and
//     collectives are flows sharing link bandwidth max-min fairly instead of queueing for whole links, and
//     all-reduces are expanded into their algorithm's transfers. Used to report final plans.
#pragma once

#include <cstdint>
#include <vector>

#include "search/parallel/op_lowering.h"
#include "sim/simulator.h"
#include "sim/task_graph.h"

namespace strata::search::parallel {

class OpSimulator {
 public:
  // checkpoint_every: the scheduler saves the resources' state every this many started tasks (the points a
  // delta simulation can restart from).
  OpSimulator(const OpLowering& lowering, const hw::Topology& topo, OpPlan plan, int checkpoint_every = 32);

  const OpPlan& plan() const { return plan_; }
  sim::SimTime makespan() const { return makespan_; }
  double seconds() const { return sim::time_to_seconds(makespan_); }
  // Per-GPU bytes (OpLowering::add_memory over all nodes), the largest, and whether it fits the GPU.
  const std::vector<std::int64_t>& memory() const { return memory_; }
  std::int64_t peak_memory() const;
  bool fits() const;

  // Changes node i to configuration `choice`, re-lowers what that touches and re-simulates from the last
  // checkpoint before the change can matter. Exactly one of commit() or rollback() must follow.
  // With a `limit`, simulation stops as soon as a task ends after it: the proposal is then known to take
  // longer than `limit`, makespan() is only a lower bound, complete() is false and only rollback() may follow
  // (MCMC passes the time above which it would reject anyway).
  sim::SimTime propose(int i, int choice, sim::SimTime limit = sim::kNever);
  bool complete() const { return complete_; }
  void commit();
  void rollback();

  // Re-simulates the current tasks from time zero (the reference delta simulation must equal).
  sim::SimTime simulate_full();

  std::size_t task_count() const;
  // Tasks the last simulation started (after the restart point).
  std::size_t last_replayed() const { return last_replayed_; }

  // The current tasks as a sim::TaskGraph, with labels "fwd <node> p<part>", "xfer <node> ...", etc.
  sim::TaskGraph to_task_graph() const;
  CommTables& comm() { return comm_; }

 private:
  struct Slot {
    OpTaskKind kind = OpTaskKind::kCompute;
    bool active = false;
    std::uint64_t key = 0;
    sim::SimTime duration = 0;
    std::int32_t gpu = -1;                           // compute: the one resource
    const std::vector<std::int32_t>* res = nullptr;  // transfers / all-reduces: link resources
    int node = 0;
    OpBlock block = OpBlock::kFwd;
    LoweredTask task;  // as lowered (deps as TaskRefs)
    std::vector<std::int32_t> deps, succ;
    sim::SimTime ready = 0, start = 0, end = 0;
    std::int32_t pop = kUnpopped;
  };
  static constexpr std::int32_t kUnpopped = INT32_MAX;
  using Table = std::vector<std::pair<std::int32_t, std::int32_t>>;  // (local, slot), sorted by local

  Table& table(int node, OpBlock b) {
    return tables_[static_cast<std::size_t>(node) * kOpBlocks + static_cast<std::size_t>(b)];
  }
  std::int32_t resolve(const TaskRef& r) const;
  std::int32_t allocate();
  // Lowers blocks of node i into fresh slots (replace) or updates the dependencies of the existing ones.
  void relower(int i, OpBlock first, bool second_in_place);
  void install_block(int node, OpBlock b, std::vector<LoweredTask>& tasks);
  void update_deps_in_place(int node, OpBlock b, std::vector<LoweredTask>& tasks);
  void link(std::int32_t s);    // adds s to its deps' successor lists (after resolve)
  void unlink(std::int32_t s);  // removes it
  void run(std::int32_t from, const std::vector<std::int32_t>& seeds, sim::SimTime limit = sim::kNever);
  void memory_of_neighbourhood(int i, int sign);

  const OpLowering& lowering_;
  const hw::Topology& topo_;
  mutable CommTables comm_;
  OpPlan plan_;
  int checkpoint_every_;
  int resources_;
  std::vector<Slot> slots_;
  std::vector<std::int32_t> free_;
  std::vector<Table> tables_;
  std::vector<std::int64_t> memory_;

  // Schedule: started tasks in order; resource states every checkpoint_every_ starts.
  std::vector<std::int32_t> pops_;
  std::vector<sim::SimTime> checkpoints_;  // (pops / checkpoint_every_ + 1) x resources_
  std::vector<sim::SimTime> checkpoint_max_;
  sim::SimTime makespan_ = 0;
  std::size_t last_replayed_ = 0;
  bool complete_ = true;
  std::vector<std::int32_t> pending_;  // scratch

  // Undo log of the open proposal.
  struct Undo {
    bool open = false;
    int node = -1, old_choice = -1;
    std::vector<std::pair<std::size_t, Table>> old_tables;  // (table index, contents)
    std::vector<std::int32_t> removed, added;
    std::vector<std::pair<std::int32_t, std::vector<std::int32_t>>> modified;  // (slot, old deps)
    std::vector<std::pair<std::int32_t, std::vector<TaskRef>>> modified_refs;
    std::int32_t from = 0;
    std::vector<std::int32_t> old_pops;  // pops_[from..]
    struct Times {
      sim::SimTime ready, start, end;
    };
    std::vector<Times> old_times;  // parallel to old_pops
    std::vector<sim::SimTime> old_checkpoints, old_checkpoint_max;
    sim::SimTime old_makespan = 0;
    std::vector<std::int64_t> old_memory;
  } undo_;
};

// The plan on sim/'s event simulator (b above): the task graph, the run (timeline recorded, e.g. for
// sim::chrome_trace_json) and the iteration time, which ends with the last task.
struct FullStep {
  sim::TaskGraph graph;
  sim::SimResult result;
  double seconds = 0;
};
FullStep run_full_step(const OpSimulator& fast, const hw::Topology& topo);
// Its iteration time in seconds.
double simulate_full_step(const OpSimulator& fast, const hw::Topology& topo);

}  // namespace strata::search::parallel
