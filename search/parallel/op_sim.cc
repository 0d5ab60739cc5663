#include "search/parallel/op_sim.h"

#include <algorithm>
#include <queue>
#include <stdexcept>
#include <tuple>

#include <fmt/format.h>

#include "sim/collective.h"

namespace strata::search::parallel {

namespace {

const std::vector<std::int32_t> kNoResources;

constexpr OpBlock kFirstBlocks[] = {OpBlock::kFwdIn, OpBlock::kRed, OpBlock::kBwdIn, OpBlock::kSync};

std::string_view block_name(OpBlock b) {
  switch (b) {
    case OpBlock::kFwdIn:
      return "xfer";
    case OpBlock::kFwd:
      return "fwd";
    case OpBlock::kRed:
      return "reduce";
    case OpBlock::kBwdIn:
      return "gxfer";
    case OpBlock::kBwd:
      return "bwd";
    case OpBlock::kSync:
      return "gradsync";
  }
  return "?";
}

}  // namespace

OpSimulator::OpSimulator(const OpLowering& lowering, const hw::Topology& topo, OpPlan plan,
                         int checkpoint_every)
    : lowering_(lowering),
      topo_(topo),
      comm_(topo),
      plan_(std::move(plan)),
      checkpoint_every_(std::max(1, checkpoint_every)),
      resources_(comm_.resources()) {
  const auto& space = lowering.space();
  if (plan_.choice.size() != ix(space.size()))
    throw std::invalid_argument(
        fmt::format("plan has {} configurations for {} nodes", plan_.choice.size(), space.size()));
  if (topo.num_gpus() != space.gpus())
    throw std::invalid_argument(
        fmt::format("plan space is for {} GPUs, topology has {}", space.gpus(), topo.num_gpus()));
  tables_.resize(ix(space.size()) * kOpBlocks);
  memory_.assign(ix(space.gpus()), 0);
  std::vector<LoweredTask> a, b;
  for (int i = 0; i < space.size(); ++i)
    for (OpBlock first : kFirstBlocks) {
      lowering_.lower(i, first, plan_, comm_, a, b);
      install_block(i, first, a);
      if (first == OpBlock::kFwdIn) install_block(i, OpBlock::kFwd, b);
      if (first == OpBlock::kBwdIn) install_block(i, OpBlock::kBwd, b);
    }
  std::vector<std::int32_t> all;
  for (std::size_t s = 0; s < slots_.size(); ++s) {
    link(static_cast<std::int32_t>(s));
    all.push_back(static_cast<std::int32_t>(s));
  }
  for (int i = 0; i < space.size(); ++i) lowering_.add_memory(i, plan_, +1, memory_);
  checkpoints_.assign(ix(resources_), 0);
  checkpoint_max_.assign(1, 0);
  run(0, all);
}

std::int64_t OpSimulator::peak_memory() const {
  return memory_.empty() ? 0 : *std::max_element(memory_.begin(), memory_.end());
}

bool OpSimulator::fits() const {
  return static_cast<double>(peak_memory()) <= topo_.gpu().hbm_capacity;
}

std::size_t OpSimulator::task_count() const {
  std::size_t n = 0;
  for (const auto& s : slots_) n += s.active ? 1 : 0;
  return n;
}

std::int32_t OpSimulator::allocate() {
  std::int32_t s;
  if (!free_.empty()) {
    s = free_.back();
    free_.pop_back();
    slots_[ix(s)] = Slot{};
  } else {
    s = static_cast<std::int32_t>(slots_.size());
    slots_.emplace_back();
  }
  if (undo_.open) undo_.added.push_back(s);
  return s;
}

void OpSimulator::install_block(int node, OpBlock b, std::vector<LoweredTask>& tasks) {
  Table& t = table(node, b);
  t.clear();
  for (auto& task : tasks) {
    const std::int32_t s = allocate();
    Slot& slot = slots_[ix(s)];
    slot.kind = task.kind;
    slot.active = true;
    slot.key = lowering_.key(node, b, task.local);
    slot.node = node;
    slot.block = b;
    switch (task.kind) {
      case OpTaskKind::kCompute:
        slot.duration = sim::seconds_to_time(task.seconds);
        // A kernel-less node (reshape, layout-only transpose) neither waits for nor holds its GPU.
        if (slot.duration > 0)
          slot.gpu = task.gpu;
        else
          slot.res = &kNoResources;
        break;
      case OpTaskKind::kTransfer:
        slot.res = &comm_.route_resources(task.gpu, task.peer);
        slot.duration = comm_.transfer_time(task.gpu, task.peer, task.bytes);
        break;
      case OpTaskKind::kAllReduce:
        slot.res = &comm_.group_resources(task.group);
        slot.duration = comm_.allreduce(task.group, task.bytes).time;
        break;
    }
    t.emplace_back(task.local, s);
    slot.task = std::move(task);
  }
  std::sort(t.begin(), t.end());
}

std::int32_t OpSimulator::resolve(const TaskRef& r) const {
  const Table& t = tables_[ix(r.node) * kOpBlocks + ix(static_cast<int>(r.block))];
  auto it = std::lower_bound(t.begin(), t.end(), std::make_pair(r.local, std::int32_t{-1}));
  if (it == t.end() || it->first != r.local)
    throw std::logic_error(fmt::format("op lowering: dangling dependency on node {} block {} task {}", r.node,
                                       block_name(r.block), r.local));
  return it->second;
}

void OpSimulator::link(std::int32_t s) {
  Slot& slot = slots_[ix(s)];
  slot.deps.clear();
  for (const auto& r : slot.task.deps) slot.deps.push_back(resolve(r));
  std::sort(slot.deps.begin(), slot.deps.end());
  slot.deps.erase(std::unique(slot.deps.begin(), slot.deps.end()), slot.deps.end());
  for (auto d : slot.deps) slots_[ix(d)].succ.push_back(s);
}

void OpSimulator::unlink(std::int32_t s) {
  for (auto d : slots_[ix(s)].deps) {
    auto& succ = slots_[ix(d)].succ;
    auto it = std::find(succ.begin(), succ.end(), s);
    if (it != succ.end()) {
      *it = succ.back();
      succ.pop_back();
    }
  }
}

void OpSimulator::run(std::int32_t from, const std::vector<std::int32_t>& seeds, sim::SimTime limit) {
  const auto C = static_cast<std::size_t>(checkpoint_every_);
  const std::size_t k = ix(from) / C;
  pops_.resize(ix(from));
  checkpoints_.resize((k + 1) * ix(resources_));
  checkpoint_max_.resize(k + 1);
  std::vector<sim::SimTime> free(checkpoints_.begin() + static_cast<std::ptrdiff_t>(k * ix(resources_)),
                                 checkpoints_.end());
  sim::SimTime latest = checkpoint_max_[k];
  pending_.resize(slots_.size());
  using Entry = std::tuple<sim::SimTime, std::uint64_t, std::int32_t>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> ready;
  for (auto s : seeds)
    if (slots_[ix(s)].active) slots_[ix(s)].pop = kUnpopped;
  std::size_t expected = 0;
  for (auto s : seeds) {
    Slot& slot = slots_[ix(s)];
    if (!slot.active) continue;
    ++expected;
    std::int32_t waiting = 0;
    sim::SimTime r = 0;
    for (auto d : slot.deps) {
      const Slot& dep = slots_[ix(d)];
      if (dep.pop == kUnpopped)
        ++waiting;
      else
        r = std::max(r, dep.end);
    }
    pending_[ix(s)] = waiting;
    if (waiting == 0) ready.emplace(r, slot.key, s);
  }
  const std::size_t first = pops_.size();
  complete_ = true;
  while (!ready.empty()) {
    const auto [r, key, s] = ready.top();
    ready.pop();
    Slot& slot = slots_[ix(s)];
    sim::SimTime start = r;
    if (slot.gpu >= 0)
      start = std::max(start, free[ix(slot.gpu)]);
    else
      for (auto res : *slot.res) start = std::max(start, free[ix(res)]);
    const sim::SimTime end = sim::checked_add(start, slot.duration);
    if (end > limit) {  // the caller only needs to know that the iteration ends after `limit`
      complete_ = false;
      makespan_ = end;
      last_replayed_ = pops_.size() - ix(from);
      return;
    }
    if (slot.gpu >= 0)
      free[ix(slot.gpu)] = end;
    else
      for (auto res : *slot.res) free[ix(res)] = end;
    slot.ready = r, slot.start = start, slot.end = end;
    slot.pop = static_cast<std::int32_t>(pops_.size());
    pops_.push_back(s);
    latest = std::max(latest, end);
    if (pops_.size() % C == 0) {
      checkpoints_.insert(checkpoints_.end(), free.begin(), free.end());
      checkpoint_max_.push_back(latest);
    }
    for (auto t : slot.succ)
      if (--pending_[ix(t)] == 0) {
        sim::SimTime rt = 0;
        for (auto d : slots_[ix(t)].deps) rt = std::max(rt, slots_[ix(d)].end);
        ready.emplace(rt, slots_[ix(t)].key, t);
      }
  }
  if (pops_.size() - first != expected)
    throw std::logic_error("op simulator: the task graph has a cycle or a missing dependency");
  makespan_ = latest;
  last_replayed_ = pops_.size() - first;
}

sim::SimTime OpSimulator::simulate_full() {
  std::vector<std::int32_t> all;
  for (std::size_t s = 0; s < slots_.size(); ++s)
    if (slots_[s].active) all.push_back(static_cast<std::int32_t>(s));
  run(0, all);
  return makespan_;
}

void OpSimulator::memory_of_neighbourhood(int i, int sign) {
  // Node i, its consumers (the inputs they receive) and its tied partners (whether their copy of a shared
  // weight merges into the owner's), each once.
  std::vector<int> nodes{i};
  const auto& cs = lowering_.consumers(i);
  const auto& ts = lowering_.tied_partners(i);
  nodes.insert(nodes.end(), cs.begin(), cs.end());
  nodes.insert(nodes.end(), ts.begin(), ts.end());
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  for (int n : nodes) lowering_.add_memory(n, plan_, sign, memory_);
}

sim::SimTime OpSimulator::propose(int i, int choice, sim::SimTime limit) {
  if (undo_.open)
    throw std::logic_error("OpSimulator::propose: previous proposal neither committed nor rolled back");
  undo_ = Undo{};
  undo_.open = true;
  undo_.node = i;
  undo_.old_choice = plan_.choice[ix(i)];
  undo_.old_memory = memory_;
  memory_of_neighbourhood(i, -1);
  plan_.choice[ix(i)] = choice;
  memory_of_neighbourhood(i, +1);

  // The earliest (ready time, key) at which the schedule can change.
  std::pair<sim::SimTime, std::uint64_t> bound{sim::kNever, ~std::uint64_t{0}};
  const auto note = [&](const Slot& s) { bound = std::min(bound, std::make_pair(s.ready, s.key)); };

  const auto replace = [&](int node, OpBlock b, std::vector<LoweredTask>& tasks) {
    const std::size_t ti = ix(node) * kOpBlocks + ix(static_cast<int>(b));
    undo_.old_tables.emplace_back(ti, tables_[ti]);
    for (const auto& [local, s] : tables_[ti]) {
      note(slots_[ix(s)]);
      unlink(s);
      slots_[ix(s)].active = false;
      undo_.removed.push_back(s);
    }
    install_block(node, b, tasks);
  };
  const auto in_place = [&](int node, OpBlock b, std::vector<LoweredTask>& tasks) {
    const Table& t = table(node, b);
    if (t.size() != tasks.size()) throw std::logic_error("op simulator: in-place block changed size");
    for (std::size_t k = 0; k < t.size(); ++k) {
      const auto s = t[k].second;
      Slot& slot = slots_[ix(s)];
      note(slot);
      unlink(s);
      undo_.modified.emplace_back(s, slot.deps);
      undo_.modified_refs.emplace_back(s, std::move(slot.task.deps));
      slot.task.deps = std::move(tasks[k].deps);
    }
  };

  std::vector<LoweredTask> a, b;
  for (OpBlock first : kFirstBlocks) {
    lowering_.lower(i, first, plan_, comm_, a, b);
    replace(i, first, a);
    if (first == OpBlock::kFwdIn) replace(i, OpBlock::kFwd, b);
    if (first == OpBlock::kBwdIn) replace(i, OpBlock::kBwd, b);
  }
  for (int c : lowering_.consumers(i)) {
    lowering_.lower(c, OpBlock::kFwdIn, plan_, comm_, a, b);
    replace(c, OpBlock::kFwdIn, a);
    in_place(c, OpBlock::kFwd, b);
  }
  for (int p : lowering_.producers(i)) {
    lowering_.lower(p, OpBlock::kBwdIn, plan_, comm_, a, b);
    replace(p, OpBlock::kBwdIn, a);
    in_place(p, OpBlock::kBwd, b);
  }
  for (int t : lowering_.tied_partners(i)) {  // shared weights: who synchronises them, waiting for whom
    lowering_.lower(t, OpBlock::kSync, plan_, comm_, a, b);
    replace(t, OpBlock::kSync, a);
  }

  // Link the new and changed tasks; bound their first possible start by the old schedule where all their
  // dependencies are old tasks (otherwise a dependency's own bound is earlier).
  for (const auto& [s, old] : undo_.modified) slots_[ix(s)].pop = kUnpopped;
  for (auto s : undo_.added) link(s);
  for (const auto& [s, old] : undo_.modified) link(s);
  const auto bound_new = [&](std::int32_t s) {
    const Slot& slot = slots_[ix(s)];
    sim::SimTime r = 0;
    for (auto d : slot.deps) {
      if (slots_[ix(d)].pop == kUnpopped) return;
      r = std::max(r, slots_[ix(d)].end);
    }
    bound = std::min(bound, std::make_pair(r, slot.key));
  };
  for (auto s : undo_.added) bound_new(s);
  for (const auto& [s, old] : undo_.modified) bound_new(s);

  // Restart at the last checkpoint before the first old start at or after the bound (starts are sorted by
  // (ready, key): a task becomes ready no earlier than the task that released it started).
  const auto cut = std::partition_point(pops_.begin(), pops_.end(), [&](std::int32_t s) {
    return std::make_pair(slots_[ix(s)].ready, slots_[ix(s)].key) < bound;
  });
  const auto c = static_cast<std::size_t>(cut - pops_.begin());
  const auto from = static_cast<std::int32_t>(c - c % ix(checkpoint_every_));
  undo_.from = from;
  undo_.old_pops.assign(pops_.begin() + from, pops_.end());
  for (auto s : undo_.old_pops) {
    const Slot& slot = slots_[ix(s)];
    undo_.old_times.push_back({slot.ready, slot.start, slot.end});
  }
  const std::size_t k = ix(from) / ix(checkpoint_every_);
  undo_.old_checkpoints.assign(checkpoints_.begin() + static_cast<std::ptrdiff_t>((k + 1) * ix(resources_)),
                               checkpoints_.end());
  undo_.old_checkpoint_max.assign(checkpoint_max_.begin() + static_cast<std::ptrdiff_t>(k + 1),
                                  checkpoint_max_.end());
  undo_.old_makespan = makespan_;
  std::vector<std::int32_t> seeds;
  seeds.reserve(undo_.old_pops.size() + undo_.added.size());
  for (auto s : undo_.old_pops)
    if (slots_[ix(s)].active) seeds.push_back(s);
  seeds.insert(seeds.end(), undo_.added.begin(), undo_.added.end());
  run(from, seeds, limit);
  return makespan_;
}

void OpSimulator::commit() {
  if (!undo_.open) throw std::logic_error("OpSimulator::commit without a proposal");
  if (!complete_)
    throw std::logic_error("OpSimulator::commit of a proposal whose simulation stopped at its limit");
  for (auto s : undo_.removed) {
    Slot& slot = slots_[ix(s)];
    slot.deps.clear(), slot.succ.clear(), slot.task.deps.clear();
    free_.push_back(s);
  }
  undo_ = Undo{};
}

void OpSimulator::rollback() {
  if (!undo_.open) throw std::logic_error("OpSimulator::rollback without a proposal");
  for (auto s : undo_.added) {
    unlink(s);
    Slot& slot = slots_[ix(s)];
    slot.active = false;
    slot.deps.clear(), slot.succ.clear(), slot.task.deps.clear();
  }
  // Free in reverse allocation order, so the free list is as before the proposal.
  for (auto it = undo_.added.rbegin(); it != undo_.added.rend(); ++it) free_.push_back(*it);
  for (auto& [s, old] : undo_.modified) unlink(s);
  for (auto& [ti, t] : undo_.old_tables) tables_[ti] = std::move(t);
  for (std::size_t m = 0; m < undo_.modified.size(); ++m) {
    Slot& slot = slots_[ix(undo_.modified[m].first)];
    slot.task.deps = std::move(undo_.modified_refs[m].second);
  }
  for (auto s : undo_.removed) slots_[ix(s)].active = true;
  for (auto s : undo_.removed) link(s);
  for (auto& [s, old] : undo_.modified) link(s);
  plan_.choice[ix(undo_.node)] = undo_.old_choice;
  memory_ = std::move(undo_.old_memory);
  // Schedule as before.
  pops_.resize(ix(undo_.from));
  for (std::size_t k = 0; k < undo_.old_pops.size(); ++k) {
    const auto s = undo_.old_pops[k];
    Slot& slot = slots_[ix(s)];
    const auto& t = undo_.old_times[k];
    // Its position, not a saved field: changed tasks were marked unstarted before the times were saved.
    slot.ready = t.ready, slot.start = t.start, slot.end = t.end;
    slot.pop = static_cast<std::int32_t>(pops_.size());
    pops_.push_back(s);
  }
  const std::size_t k = ix(undo_.from) / ix(checkpoint_every_);
  checkpoints_.resize((k + 1) * ix(resources_));
  checkpoints_.insert(checkpoints_.end(), undo_.old_checkpoints.begin(), undo_.old_checkpoints.end());
  checkpoint_max_.resize(k + 1);
  checkpoint_max_.insert(checkpoint_max_.end(), undo_.old_checkpoint_max.begin(),
                         undo_.old_checkpoint_max.end());
  makespan_ = undo_.old_makespan;
  complete_ = true;
  undo_ = Undo{};
}

sim::TaskGraph OpSimulator::to_task_graph() const {
  std::vector<std::int32_t> order;
  for (std::size_t s = 0; s < slots_.size(); ++s)
    if (slots_[s].active) order.push_back(static_cast<std::int32_t>(s));
  std::sort(order.begin(), order.end(),
            [&](std::int32_t a, std::int32_t b) { return slots_[ix(a)].key < slots_[ix(b)].key; });
  std::vector<sim::TaskId> id(slots_.size(), -1);
  sim::TaskGraph tg;
  const auto& g = lowering_.space().graph();
  std::vector<sim::Dep> deps;
  for (auto s : order) {
    const Slot& slot = slots_[ix(s)];
    deps.clear();
    for (auto d : slot.deps) deps.push_back({id[ix(d)], sim::DepKind::kDone});
    const auto& name = g.node(lowering_.space().nodes()[ix(slot.node)]).name;
    const auto label = tg.intern(fmt::format("{} {} #{}", block_name(slot.block), name, slot.task.local));
    switch (slot.kind) {
      case OpTaskKind::kCompute:
        // As in the fast simulator, a kernel-less node is a pure dependency (the event simulator's compute
        // tasks need a positive duration).
        id[ix(s)] = slot.duration > 0 ? tg.add_compute_fixed(slot.task.gpu, 0, slot.task.seconds, label, deps)
                                      : tg.add_delay(0, label, deps);
        break;
      case OpTaskKind::kTransfer:
        id[ix(s)] = tg.add_transfer(slot.task.gpu, slot.task.peer, slot.task.bytes,
                                    topo_.route_latency(slot.task.gpu, slot.task.peer), label, deps);
        break;
      case OpTaskKind::kAllReduce: {
        const auto& choice = comm_.allreduce(slot.task.group, slot.task.bytes);
        sim::CollectiveSpec spec;
        spec.op = sim::CollectiveOp::kAllReduce;
        spec.group = comm_.ranks(slot.task.group);
        spec.bytes = slot.task.bytes;
        spec.protocol = choice.protocol;
        spec.label = fmt::format("{} {}", block_name(slot.block), name);
        id[ix(s)] = sim::add_collective(topo_, tg, spec, choice.algorithm, deps);
        break;
      }
    }
  }
  return tg;
}

FullStep run_full_step(const OpSimulator& fast, const hw::Topology& topo) {
  FullStep step;
  step.graph = fast.to_task_graph();
  step.result = sim::simulate(topo, step.graph, {.compute = nullptr, .record_timeline = true});
  // The iteration ends when its last task does. SimResult::makespan is the time of the engine's last event,
  // which can be a stale flow-completion event (NetworkModel reschedules completions when rates change and
  // drops the old events lazily, when they fire), later than every task; so the end is read off the timeline.
  sim::SimTime end = 0;
  for (const auto& t : step.result.timeline) end = std::max(end, t.done);
  step.seconds = sim::time_to_seconds(end);
  return step;
}

double simulate_full_step(const OpSimulator& fast, const hw::Topology& topo) {
  return run_full_step(fast, topo).seconds;
}

}  // namespace strata::search::parallel
