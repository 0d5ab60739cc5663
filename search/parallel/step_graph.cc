#include "search/parallel/step_graph.h"

#include <algorithm>
#include <map>
#include <stdexcept>

#include <fmt/format.h>

namespace strata::search::parallel {
namespace {

class Builder {
 public:
  Builder(const hw::Topology& topo, const StepDescription& d, StepGraph& out, CommTiming timing, bool coarse,
          AloneTimes* alone)
      : d_(d), out_(out), emitter_(topo, out.graph, alone), timing_(timing), coarse_(coarse) {}

  void run() {
    check();
    for (const auto& c : d_.comms) emitter_.declare(c);
    emitter_.finalize(timing_);
    for (int c = 0; c < kNumCommClasses; ++c)
      out_.isolated[static_cast<std::size_t>(c)] = emitter_.isolated(CommClass(c));
    const int V = d_.p * d_.v;
    fwd_done_.assign(static_cast<std::size_t>(V),
                     std::vector<sim::TaskId>(static_cast<std::size_t>(d_.m), -1));
    bwd_done_ = fwd_done_;
    out_.chain.resize(static_cast<std::size_t>(d_.p));
    out_.last_backward.assign(static_cast<std::size_t>(d_.p), -1);
    out_.optimizer.assign(static_cast<std::size_t>(d_.p), -1);
    orders_.resize(static_cast<std::size_t>(d_.p));
    for (int s = 0; s < d_.p; ++s)
      orders_[static_cast<std::size_t>(s)] = stage_order(d_.schedule, d_.p, s, d_.m, d_.v);
    // Stages depend on each other both ways (activations forward, gradients backward): emit passes in
    // rounds, each stage as far as its inputs exist.
    std::vector<std::size_t> next(static_cast<std::size_t>(d_.p), 0);
    std::vector<sim::TaskId> prev(static_cast<std::size_t>(d_.p), -1);
    std::vector<sim::TaskId> data_prev(static_cast<std::size_t>(d_.p), -1);
    gathers_.resize(static_cast<std::size_t>(d_.p));
    for (int s = 0; s < d_.p; ++s) emit_param_gathers(s, data_prev[static_cast<std::size_t>(s)]);
    for (bool progress = true; progress;) {
      progress = false;
      for (int s = 0; s < d_.p; ++s) {
        auto& i = next[static_cast<std::size_t>(s)];
        const auto& order = orders_[static_cast<std::size_t>(s)];
        while (i < order.size() && ready(s, order[i])) {
          emit_pass(s, order[i], i, prev[static_cast<std::size_t>(s)],
                    data_prev[static_cast<std::size_t>(s)]);
          ++i;
          progress = true;
        }
      }
    }
    for (int s = 0; s < d_.p; ++s)
      if (next[static_cast<std::size_t>(s)] != orders_[static_cast<std::size_t>(s)].size())
        throw std::logic_error("pipeline schedule deadlocks (a pass waits for one that never runs)");
    for (int s = 0; s < d_.p; ++s) finish_stage(s, data_prev[static_cast<std::size_t>(s)]);
  }

 private:
  void check() const {
    if (auto problem = schedule_problem(d_.schedule, d_.p, d_.m, d_.v); !problem.empty())
      throw std::invalid_argument(problem);
    const auto V = static_cast<std::size_t>(d_.p * d_.v);
    if (d_.fwd.size() != V || d_.bwd.size() != V || d_.rep.size() != static_cast<std::size_t>(d_.p) ||
        d_.stages.size() != static_cast<std::size_t>(d_.p) || d_.send_fwd.size() != V - 1 ||
        d_.send_bwd.size() != V - 1)
      throw std::invalid_argument("step description sizes do not match its pipeline");
  }

  int vstage(int s, int chunk) const { return chunk * d_.p + s; }

  bool ready(int s, const PipelineOp& op) const {
    const int vs = vstage(s, op.chunk);
    const int V = d_.p * d_.v;
    const auto mb = static_cast<std::size_t>(op.micro_batch);
    if (!op.backward) return vs == 0 || fwd_done_[static_cast<std::size_t>(vs - 1)][mb] >= 0;
    if (fwd_done_[static_cast<std::size_t>(vs)][mb] < 0) return false;
    return vs == V - 1 || bwd_done_[static_cast<std::size_t>(vs + 1)][mb] >= 0;
  }

  void emit_param_gathers(int s, sim::TaskId& data_prev) {
    const auto& sync = d_.stages[static_cast<std::size_t>(s)];
    auto& g = gathers_[static_cast<std::size_t>(s)];
    g.assign(static_cast<std::size_t>(d_.v), {});
    for (std::size_t c = 0; c < sync.param_gather.size() && c < g.size(); ++c)
      for (const auto& pg : sync.param_gather[c]) {
        std::vector<sim::Dep> deps;
        if (data_prev >= 0) deps.push_back({data_prev});
        data_prev = emitter_.emit(d_.comms[static_cast<std::size_t>(pg.op)],
                                  d_.rep[static_cast<std::size_t>(s)], kDataStream, deps);
        g[c].push_back({data_prev, pg.first_layer});
      }
  }

  // The pass's input: the previous virtual stage's send (forward) or the next one's (backward).
  sim::TaskId arrival(int vs, const PipelineOp& op) {
    const auto mb = static_cast<std::size_t>(op.micro_batch);
    const int V = d_.p * d_.v;
    if (!op.backward && vs > 0) return fwd_done_[static_cast<std::size_t>(vs - 1)][mb];
    if (op.backward && vs < V - 1) return bwd_done_[static_cast<std::size_t>(vs + 1)][mb];
    return -1;
  }

  void emit_pass(int s, const PipelineOp& op, std::size_t index, sim::TaskId& prev, sim::TaskId& data_prev) {
    const int vs = vstage(s, op.chunk);
    const hw::Rank rep = d_.rep[static_cast<std::size_t>(s)];
    const auto& pass = (op.backward ? d_.bwd : d_.fwd)[static_cast<std::size_t>(vs)];
    std::vector<sim::Dep> deps;
    if (prev >= 0) deps.push_back({prev});
    if (const auto in = arrival(vs, op); in >= 0) deps.push_back({in});
    // The chunk's first forward waits, layer by layer, for the parameter gathers it needs.
    std::vector<std::pair<sim::TaskId, int>> pending_gathers;
    if (!op.backward && !first_forward_done(s, op.chunk))
      pending_gathers = gathers_[static_cast<std::size_t>(s)][static_cast<std::size_t>(op.chunk)];
    const bool last_backward = op.backward && is_last_backward(s, op, index);
    std::vector<sim::TaskId> seg_task(pass.segments.size(), -1);
    // Asynchronous communication of a stage runs in issue order on its own stream (as FSDP's all-gathers and
    // ring attention's exchanges do), also across passes.
    sim::TaskId& async_prev = async_tail_.try_emplace(s, -1).first->second;
    auto& chain = out_.chain[static_cast<std::size_t>(s)];
    // Coarse mode: consecutive compute and isolated-communication segments have fixed durations, so one task
    // of their summed length gives the same times; a run ends where something else must see its boundary
    // (asynchronous issue, a wait, a gradient bucket's launch, flow-simulated communication).
    StepGraph::Timed run;
    bool in_run = false;
    auto flush = [&] {
      if (!in_run) return;
      run.task = out_.graph.add_compute_fixed(rep, kComputeStream, std::max(run.fixed_total(), 1e-12),
                                              label(op.backward ? "backward" : "forward", op), deps);
      run.first = run.task;
      chain.push_back(run);
      deps.assign(1, {run.task});
      run = {};
      in_run = false;
    };
    for (std::size_t k = 0; k < pass.segments.size(); ++k) {
      const auto& seg = pass.segments[k];
      std::vector<sim::Dep> gather_deps;
      if (seg.layer != Segment::kNoLayer) {
        for (auto it = pending_gathers.begin(); it != pending_gathers.end();) {
          if (it->second <= seg.layer) {
            gather_deps.push_back({it->first});
            it = pending_gathers.erase(it);
          } else {
            ++it;
          }
        }
      }
      const bool fixed = seg.kind == Segment::Kind::kCompute ||
                         (seg.kind == Segment::Kind::kComm &&
                          emitter_.fixed_duration(d_.comms[static_cast<std::size_t>(seg.comm)]));
      const bool trigger = last_backward && seg.grad_trigger >= 0 && d_.overlap_grad_reduce;
      if (coarse_ && fixed && seg.waits.empty() && gather_deps.empty()) {
        run.fixed[static_cast<std::size_t>(seg.time)] +=
            seg.kind == Segment::Kind::kCompute
                ? seg.seconds
                : emitter_.alone_seconds(d_.comms[static_cast<std::size_t>(seg.comm)]);
        in_run = true;
        if (trigger) {
          flush();
          emit_grad_sync(s, seg.grad_trigger, deps.front().task, data_prev);
        }
        continue;
      }
      flush();
      deps.insert(deps.end(), gather_deps.begin(), gather_deps.end());
      for (int w : seg.waits) deps.push_back({seg_task.at(static_cast<std::size_t>(w))});
      if (seg.kind == Segment::Kind::kAsync) {
        std::vector<sim::Dep> adeps = deps;
        if (async_prev >= 0) adeps.push_back({async_prev});
        async_prev = emitter_.emit(d_.comms[static_cast<std::size_t>(seg.comm)], rep, kAsyncStream, adeps);
        seg_task[k] = async_prev;
        continue;  // the chain does not wait
      }
      sim::TaskId t;
      const auto first = static_cast<sim::TaskId>(out_.graph.size());  // an emitted collective's first task
      if (seg.kind == Segment::Kind::kCompute) {
        t = out_.graph.add_compute_fixed(rep, kComputeStream, std::max(seg.seconds, 1e-12),
                                         label(seg.label, op), deps);
      } else {
        t = emitter_.emit(d_.comms[static_cast<std::size_t>(seg.comm)], rep, kComputeStream, deps);
      }
      seg_task[k] = t;
      chain.push_back({t, seg.time, {}, first});
      deps.assign(1, {t});
      if (trigger) emit_grad_sync(s, seg.grad_trigger, t, data_prev);
    }
    flush();
    const sim::TaskId end = deps.empty() ? out_.graph.add_delay(0, -1) : deps.front().task;
    prev = end;
    // Send the pass's output on.
    const auto mb = static_cast<std::size_t>(op.micro_batch);
    const int V = d_.p * d_.v;
    const sim::Dep after[] = {{end}};
    if (!op.backward) {
      const int send = vs < V - 1 ? d_.send_fwd[static_cast<std::size_t>(vs)] : -1;
      fwd_done_[static_cast<std::size_t>(vs)][mb] =
          send >= 0 ? emitter_.emit(d_.comms[static_cast<std::size_t>(send)], rep, kAsyncStream, after) : end;
      first_fwd_[{s, op.chunk}] = true;
    } else {
      const int send = vs > 0 ? d_.send_bwd[static_cast<std::size_t>(vs - 1)] : -1;
      bwd_done_[static_cast<std::size_t>(vs)][mb] =
          send >= 0 ? emitter_.emit(d_.comms[static_cast<std::size_t>(send)], rep, kAsyncStream, after) : end;
      out_.last_backward[static_cast<std::size_t>(s)] = end;
    }
  }

  bool first_forward_done(int s, int chunk) const { return first_fwd_.count({s, chunk}) > 0; }

  // Whether this backward is the last one of its chunk on the stage (gradients complete after it).
  bool is_last_backward(int s, const PipelineOp& op, std::size_t index) const {
    const auto& order = orders_[static_cast<std::size_t>(s)];
    for (std::size_t j = index + 1; j < order.size(); ++j)
      if (order[j].backward && order[j].chunk == op.chunk) return false;
    return true;
  }

  // Launches the stage's gradient reduction number `position` (an index into StageSync::grad_sync).
  void emit_grad_sync(int s, int position, sim::TaskId after, sim::TaskId& data_prev) {
    std::vector<sim::Dep> deps = {{after}};
    if (data_prev >= 0) deps.push_back({data_prev});
    const int op = d_.stages[static_cast<std::size_t>(s)].grad_sync.at(static_cast<std::size_t>(position));
    data_prev = emitter_.emit(d_.comms[static_cast<std::size_t>(op)], d_.rep[static_cast<std::size_t>(s)],
                              kDataStream, deps);
    synced_[s].push_back(position);
  }

  void finish_stage(int s, sim::TaskId& data_prev) {
    const auto& sync = d_.stages[static_cast<std::size_t>(s)];
    const auto last = out_.last_backward[static_cast<std::size_t>(s)];
    // Reductions not yet launched (no overlap, or no trigger): after the stage's last backward.
    const auto done = synced_[s];
    for (int position = 0; position < static_cast<int>(sync.grad_sync.size()); ++position)
      if (std::find(done.begin(), done.end(), position) == done.end())
        emit_grad_sync(s, position, last, data_prev);
    std::vector<sim::Dep> deps = {{last}};
    if (data_prev >= 0) deps.push_back({data_prev});
    out_.optimizer[static_cast<std::size_t>(s)] = out_.graph.add_compute_fixed(
        d_.rep[static_cast<std::size_t>(s)], kComputeStream, std::max(sync.optimizer_seconds, 1e-12),
        out_.graph.intern("optimizer step"), deps);
  }

  std::int32_t label(const std::string& base, const PipelineOp& op) {
    // Coarse graphs are never traced: one label per name, without formatting a string per pass.
    if (coarse_) {
      auto [it, fresh] = labels_.try_emplace(base, 0);
      if (fresh) it->second = out_.graph.intern(base);
      return it->second;
    }
    const auto text =
        fmt::format("{} mb{}{}", base, op.micro_batch, d_.v > 1 ? fmt::format(" c{}", op.chunk) : "");
    auto [it, fresh] = labels_.try_emplace(text, 0);
    if (fresh) it->second = out_.graph.intern(text);
    return it->second;
  }

  const StepDescription& d_;
  StepGraph& out_;
  CommEmitter emitter_;
  const CommTiming timing_;
  const bool coarse_;
  std::vector<std::vector<PipelineOp>> orders_;
  std::vector<std::vector<sim::TaskId>> fwd_done_, bwd_done_;
  std::vector<std::vector<std::vector<std::pair<sim::TaskId, int>>>>
      gathers_;  // per stage, chunk: (task, layer)
  std::map<std::pair<int, int>, bool> first_fwd_;
  std::map<int, std::vector<int>> synced_;
  std::map<std::string, std::int32_t> labels_;
  std::map<int, sim::TaskId> async_tail_;
};

}  // namespace

StepGraph build_step_graph(const hw::Topology& topo, const StepDescription& d, CommTiming timing, bool coarse,
                           AloneTimes* alone) {
  StepGraph out;
  Builder(topo, d, out, timing, coarse, alone).run();
  return out;
}

StepBreakdown breakdown(const StepGraph& g, const sim::SimResult& r, int stage) {
  StepBreakdown b;
  b.stage = stage;
  b.step = r.seconds();
  if (r.timeline.empty()) return b;
  auto span = [&](sim::TaskId t) {
    const auto& tt = r.timeline[static_cast<std::size_t>(t)];
    return sim::time_to_seconds(tt.done - tt.start);
  };
  // Where a time kind goes in the breakdown.
  auto field = [&b](TimeKind kind) -> double& {
    switch (kind) {
      case TimeKind::kRecompute:
        return b.recompute;
      case TimeKind::kTensorComm:
        return b.tp_comm;
      case TimeKind::kContextComm:
        return b.cp_comm;
      case TimeKind::kExpertComm:
        return b.ep_comm;
      case TimeKind::kCompute:
        break;
    }
    return b.compute;
  };
  for (const auto& timed : g.chain[static_cast<std::size_t>(stage)]) {
    if (timed.fixed_total() > 0) {  // a merged run: its parts have fixed lengths
      for (std::size_t k = 0; k < timed.fixed.size(); ++k) field(static_cast<TimeKind>(k)) += timed.fixed[k];
      continue;
    }
    field(timed.kind) += sim::time_to_seconds(r.timeline[static_cast<std::size_t>(timed.task)].done -
                                              r.timeline[static_cast<std::size_t>(timed.first)].start);
  }
  const auto opt = g.optimizer[static_cast<std::size_t>(stage)];
  const auto last = g.last_backward[static_cast<std::size_t>(stage)];
  b.optimizer = span(opt);
  b.dp_exposed = sim::time_to_seconds(r.timeline[static_cast<std::size_t>(opt)].start -
                                      r.timeline[static_cast<std::size_t>(last)].done);
  b.bubble = std::max(
      0.0, b.step - b.compute - b.recompute - b.tp_comm - b.cp_comm - b.ep_comm - b.dp_exposed - b.optimizer);
  return b;
}

}  // namespace strata::search::parallel
