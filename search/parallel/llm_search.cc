#include "search/parallel/llm_search.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <stdexcept>
#include <tuple>

#include <tbb/parallel_for.h>

#include "util/timer.h"

namespace strata::search::parallel {
namespace {

using models::zoo::TransformerSpec;

std::vector<int> divisors(int n) {
  std::vector<int> d;
  for (int i = 1; i <= n; ++i)
    if (n % i == 0) d.push_back(i);
  return d;
}

using CostKey = std::tuple<int, int, int, int, bool>;  // micro-batch, tp, cp, ep, sp
CostKey cost_key(const LlmStrategy& s) {
  return {s.micro_batch, s.tp, s.cp, s.ep, s.sequence_parallel};
}

// A lower bound on the simulated step: for every stage j, the chain of its passes (compute and blocking
// communication, each at least its time alone) cannot start before micro-batch 0's forward has crossed the
// virtual stages before it, nor end before the last backward has crossed them back; stage 0 then waits for
// its last gradient bucket and runs the optimizer. Each stage's data-parallel stream (parameter gathers, then
// gradient reductions, then the optimizer) and its asynchronous stream bound the step too.
double lower_bound(const StepDescription& d, AloneTimes& alone) {
  const int V = d.p * d.v;
  std::vector<double> comm_time(d.comms.size(), -1.0);  // per operation, looked up once
  auto time_of = [&](int op) {
    auto& t = comm_time[static_cast<std::size_t>(op)];
    if (t < 0) t = alone(d.comms[static_cast<std::size_t>(op)]);
    return t;
  };
  // A pass's chain (compute and blocking communication) and its asynchronous communication.
  auto chain = [&](const PassDescription& pass, bool async) {
    double t = 0;
    for (const auto& seg : pass.segments) {
      if (!async && seg.kind == Segment::Kind::kCompute) t += seg.seconds;
      if (!async && seg.kind == Segment::Kind::kComm) t += time_of(seg.comm);
      if (async && seg.kind == Segment::Kind::kAsync) t += time_of(seg.comm);
    }
    return t;
  };
  std::vector<double> f(static_cast<std::size_t>(V)), b(f.size()), async(f.size());
  for (int vs = 0; vs < V; ++vs) {
    const auto i = static_cast<std::size_t>(vs);
    f[i] = chain(d.fwd[i], false);
    b[i] = chain(d.bwd[i], false);
    async[i] = chain(d.fwd[i], true) + chain(d.bwd[i], true);
  }
  auto send = [&](const std::vector<int>& sends, int i) {
    const int op = sends[static_cast<std::size_t>(i)];
    return op < 0 ? 0.0 : time_of(op);
  };
  double best = 0;
  for (int s = 0; s < d.p; ++s) {
    // Each stream of the stage runs its work one operation after another, each at least as long as alone:
    // the compute chain, the asynchronous stream, and the data-parallel stream (gathers, then reductions).
    double busy = 0, async_busy = 0;
    for (int c = 0; c < d.v; ++c) {
      const auto i = static_cast<std::size_t>(c * d.p + s);
      busy += d.m * (f[i] + b[i]);
      async_busy += d.m * async[i];
    }
    double head = 0, tail = 0;
    for (int vs = 0; vs < s; ++vs) {
      head += f[static_cast<std::size_t>(vs)] + send(d.send_fwd, vs);
      tail += b[static_cast<std::size_t>(vs)] + send(d.send_bwd, vs);
    }
    const auto& sync = d.stages[static_cast<std::size_t>(s)];
    double gathers = 0, reductions = 0;
    for (const auto& chunk : sync.param_gather)
      for (const auto& g : chunk) gathers += time_of(g.op);
    for (int op : sync.grad_sync) reductions += time_of(op);
    const double last_bucket = s == 0 && !sync.grad_sync.empty() ? time_of(sync.grad_sync.back()) : 0.0;
    const double rest = tail + last_bucket + sync.optimizer_seconds;
    best = std::max(
        {best, head + std::max(busy, async_busy) + rest, gathers + reductions + sync.optimizer_seconds});
    // Parameter gathers overlap the stage's first forward pass (chunk 0) layer by layer: the data stream
    // issues them in order from time 0, and the chain reaches layer L no earlier than head + (its work before
    // L) nor before the gathers layer L needs are done; everything after L still follows.
    if (!sync.param_gather.empty() && !sync.param_gather[0].empty()) {
      std::vector<std::pair<int, double>> prefix;  // (layer marker, chain work before it) in pass order
      double work = 0;
      for (const auto& seg : d.fwd[static_cast<std::size_t>(s)].segments) {
        if (seg.layer != Segment::kNoLayer) prefix.emplace_back(seg.layer, work);
        if (seg.kind == Segment::Kind::kCompute) work += seg.seconds;
        if (seg.kind == Segment::Kind::kComm) work += time_of(seg.comm);
      }
      double issued = 0;
      for (const auto& g : sync.param_gather[0]) {
        issued += time_of(g.op);
        // The first marked segment that waits for g: the first layer at or after its first layer.
        for (const auto& [layer, before] : prefix)
          if (layer >= g.first_layer) {
            best = std::max(best, std::max(head + before, issued) + (busy - before) + rest);
            break;
          }
      }
    }
  }
  return best;
}

// A cheaper bound from the per-GPU costs alone (no step description, no communication): each stage's compute
// behind the fill and drain of the stages before it. Never above lower_bound (its compute terms are a
// subset), so candidates are first ordered and cut by it, and lower_bound is computed only for those it
// cannot cut.
double compute_bound(const TransformerSpec& spec, const LlmStrategy& st, const LlmCosts& c) {
  const int p = st.pp, v = st.virtual_stages, V = p * v;
  const auto m = static_cast<double>(st.micro_batches());
  const double per_chunk = static_cast<double>(spec.layers) / V;
  const auto& l = c.layer;
  const double f_layer = l.attn_fwd.seconds + l.mlp_fwd.seconds;
  double b_layer = l.attn_bwd.seconds + l.mlp_bwd.seconds;
  if (st.recompute == Recompute::kFull) b_layer += f_layer;
  if (st.recompute == Recompute::kSelective) b_layer += l.attn_core_fwd.seconds;
  auto f = [&](int vs) {
    return per_chunk * f_layer + (vs == 0 ? c.edge.embed_fwd.seconds : 0) +
           (vs == V - 1 ? c.edge.head_fwd.seconds : 0);
  };
  auto b = [&](int vs) {
    return per_chunk * b_layer + (vs == 0 ? c.edge.embed_bwd.seconds : 0) +
           (vs == V - 1 ? c.edge.head_bwd.seconds : 0);
  };
  double best = 0;
  for (int s = 0; s < p; ++s) {
    double busy = 0, edge = 0;
    for (int ch = 0; ch < v; ++ch) busy += m * (f(ch * p + s) + b(ch * p + s));
    for (int vs = 0; vs < s; ++vs) edge += f(vs) + b(vs);
    best = std::max(best, busy + edge);
  }
  return best;
}

bool result_less(const LlmStepResult& a, const LlmStepResult& b) {
  if (a.step_seconds != b.step_seconds) return a.step_seconds < b.step_seconds;
  const auto da = a.strategy.describe(), db = b.strategy.describe();
  if (da != db) return da < db;
  return a.placement_text < b.placement_text;
}

struct Candidate {
  LlmStrategy st;
  reduce::Matrix placement;
  double cheap = 0;  // compute_bound: the order and the stopping rule
  double bound = 0;  // lower_bound (computed lazily): whether to run the uncontended step
  std::string text;
  double uncontended = -1;  // uncontended_step_seconds (computed lazily, -1: not yet): whether to simulate
};

// Enumerates the strategies of the space that pass the model's divisibility rules; counts the rest.
std::vector<LlmStrategy> enumerate(const TransformerSpec& spec, const hw::Topology& topo,
                                   const LlmSearchOptions& o, LlmSearchCounts& counts) {
  const int n = topo.num_gpus();
  std::vector<LlmStrategy> out;
  for (int tp : divisors(n))
    for (int pp : divisors(n / tp))
      for (int cp : o.space.context_parallel ? divisors(n / tp / pp) : std::vector<int>{1}) {
        const int dp = n / tp / pp / cp;
        for (int ep : spec.moe() ? divisors(dp) : std::vector<int>{1})
          for (int mb : o.space.micro_batches) {
            LlmStrategy s;
            s.tp = tp, s.pp = pp, s.cp = cp, s.dp = dp, s.ep = ep, s.micro_batch = mb;
            s.global_batch = o.global_batch;
            s.dtype = o.space.dtype;
            std::vector<std::pair<PipelineSchedule, int>> schedules = {{PipelineSchedule::kOneFOneB, 1}};
            for (int v = 2; v <= o.space.max_virtual_stages && pp > 1; ++v)
              schedules.push_back({PipelineSchedule::kInterleaved, v});
            for (const auto& [schedule, v] : schedules)
              for (bool sp : o.space.sequence_parallel) {
                if (sp && tp == 1) continue;
                s.schedule = schedule, s.virtual_stages = v, s.sequence_parallel = sp;
                ++counts.enumerated;
                if (!strategy_problems(spec, s, topo).empty()) {
                  ++counts.invalid;
                  continue;
                }
                out.push_back(s);
              }
          }
      }
  return out;
}

}  // namespace

std::optional<LlmStrategy> megatron_expert_strategy(const TransformerSpec& spec, const hw::Topology& topo,
                                                    const models::CostModel& cost, std::int64_t global_batch,
                                                    hw::DType dtype) {
  const int n = topo.num_gpus();
  int tp = 1;
  for (int t : divisors(topo.gpus_per_node()))
    if (spec.heads % t == 0 && spec.ffn % t == 0 && n % t == 0) tp = t;
  std::optional<LlmStrategy> leanest;
  for (int pp : divisors(n / tp)) {
    LlmStrategy s;
    s.tp = tp, s.pp = pp, s.dp = n / tp / pp, s.micro_batch = 1, s.global_batch = global_batch;
    s.sequence_parallel = tp > 1;
    s.recompute = Recompute::kSelective;
    s.zero = s.dp > 1 ? 1 : 0;
    s.dtype = dtype;
    if (!strategy_problems(spec, s, topo).empty()) continue;
    const auto costs = llm_costs(spec, s, cost);
    if (llm_memory(spec, s, costs.layer, costs.edge).total() <= topo.gpu().hbm_capacity) return s;
    leanest = s;  // deeper pipelines hold less per GPU
  }
  return leanest;
}

LlmSearchResult search_llm(const TransformerSpec& spec, const hw::Topology& topo,
                           const models::CostModel& cost, const LlmSearchOptions& o) {
  if (o.global_batch < 1) throw std::invalid_argument("--global-batch must be at least 1");
  if (o.top < 1) throw std::invalid_argument("--top must be at least 1");
  if (o.space.micro_batches.empty() || o.space.recompute.empty() || o.space.zero.empty() ||
      o.space.sequence_parallel.empty())
    throw std::invalid_argument("the search space has an empty dimension");
  util::Stopwatch clock;
  LlmSearchResult result;
  auto strategies = enumerate(spec, topo, o, result.counts);
  // Per-GPU costs, once per distinct shard, in parallel.
  std::map<CostKey, LlmCosts> costs;
  for (const auto& s : strategies) costs.try_emplace(cost_key(s));
  {
    std::vector<std::pair<const CostKey, LlmCosts>*> todo;
    for (auto& kv : costs) todo.push_back(&kv);
    const auto& any = strategies;
    tbb::parallel_for(std::size_t{0}, todo.size(), [&](std::size_t i) {
      const auto& [mb, tp, cp, ep, sp] = todo[i]->first;
      LlmStrategy s;
      s.micro_batch = mb, s.tp = tp, s.cp = cp, s.ep = ep, s.sequence_parallel = sp, s.dtype = o.space.dtype;
      todo[i]->second = llm_costs(spec, s, cost);
    });
    (void)any;
  }
  // Memory and dominance. Recomputation only adds work to the chain, so for each strategy and ZeRO stage only
  // the lowest recomputation level that fits is kept. ZeRO-2 communicates and computes exactly like ZeRO-1
  // (it only shards gradients too), so it is kept only where ZeRO-1 does not fit; ZeRO-0, -1 and -3 trade
  // communication against optimizer work and are all kept. A strategy with nothing that fits is out of
  // memory.
  std::vector<Candidate> candidates;
  const double capacity = topo.gpu().hbm_capacity;
  for (auto s : strategies) {
    const auto& c = costs.at(cost_key(s));
    bool placed = false;
    int zero1_recompute = -1;  // the lowest recomputation level at which ZeRO-1 fits
    for (int z : o.space.zero) {
      if (z > 0 && s.dp * s.cp == 1) continue;  // nothing to shard
      for (Recompute rc : o.space.recompute) {
        s.recompute = rc, s.zero = z;
        if (llm_memory(spec, s, c.layer, c.edge).total() > capacity) continue;
        // ZeRO-2 at this recomputation level runs exactly like ZeRO-1 at it: keep it only when ZeRO-1 needs
        // more recomputation (or does not fit at all).
        if (z == 2 && zero1_recompute >= 0 && zero1_recompute <= static_cast<int>(rc)) break;
        if (z == 1) zero1_recompute = static_cast<int>(rc);
        candidates.push_back({s, megatron_placement(topo, s), 0, 0, s.describe()});
        placed = true;
        break;
      }
    }
    if (!placed) ++result.counts.out_of_memory;
  }
  // Lower bounds (representative-only descriptions), in parallel.
  AloneTimes alone(topo);
  const std::vector<hw::Level> levels(topo.levels().begin(), topo.levels().end());
  // Candidates in order of the cheap bound; the full bound is computed lazily, 64 at a time in parallel.
  auto order = [&](std::vector<Candidate>& list) {
    for (auto& cand : list) cand.cheap = compute_bound(spec, cand.st, costs.at(cost_key(cand.st)));
    std::sort(list.begin(), list.end(), [](const Candidate& a, const Candidate& b) {
      if (a.cheap != b.cheap) return a.cheap < b.cheap;
      if (a.text != b.text) return a.text < b.text;
      return a.placement < b.placement;
    });
  };
  auto full_bounds = [&](std::vector<Candidate>& list, std::size_t from, std::size_t to) {
    tbb::parallel_for(from, to, [&](std::size_t i) {
      auto& cand = list[i];
      const std::vector<int> axes = {cand.st.pp, cand.st.dp, cand.st.cp, cand.st.tp};
      const reduce::Placement placement(levels, axes, cand.placement);
      const auto d =
          describe_llm_step(spec, cand.st, topo, cost, costs.at(cost_key(cand.st)), placement, true);
      cand.bound = std::max(cand.cheap, lower_bound(d, alone));
    });
  };
  order(candidates);
  result.counts.plans = candidates.size();
  // Branch and bound: walk the candidates in cheap-bound order; for those whose full bound beats the k-th
  // best step, run the step without contention (the tightest bound), and simulate, in fixed batches, those it
  // does not prune; stop when the cheap bound cannot beat the k-th best. Batches are formed from bounds and
  // the results of earlier batches only, so the outcome does not depend on the thread count.
  constexpr std::size_t kBatch = 4, kBoundChunk = 64;
  std::vector<LlmStepResult> best;
  auto kth = [&] {
    return best.size() < static_cast<std::size_t>(o.top)
               ? std::numeric_limits<double>::infinity()
               : best[static_cast<std::size_t>(o.top) - 1].step_seconds;
  };
  LlmStepOptions so;
  so.simulate_when_oom = false;
  so.alone = &alone;
  std::size_t simulated = 0, uncontended = 0;
  // `chosen`: candidates whose full bound beats the k-th best. Their uncontended steps are computed in
  // parallel; those still below the k-th best are simulated in parallel, in uncontended-bound order.
  auto settle = [&](std::vector<Candidate>& list, const std::vector<std::size_t>& chosen) {
    tbb::parallel_for(std::size_t{0}, chosen.size(), [&](std::size_t k) {
      auto& cand = list[chosen[k]];
      if (cand.uncontended >= 0) return;
      cand.uncontended =
          std::max(cand.bound, uncontended_step_seconds(spec, cand.st, topo, cost,
                                                        costs.at(cost_key(cand.st)), cand.placement, alone));
    });
    uncontended += chosen.size();
    std::vector<std::size_t> batch;
    for (std::size_t i : chosen)
      if (list[i].uncontended < kth()) batch.push_back(i);
    std::stable_sort(batch.begin(), batch.end(),
                     [&](std::size_t a, std::size_t b) { return list[a].uncontended < list[b].uncontended; });
    if (batch.empty()) return;
    std::vector<LlmStepResult> results(batch.size());
    tbb::parallel_for(std::size_t{0}, batch.size(), [&](std::size_t k) {
      const auto& cand = list[batch[k]];
      auto opts = so;
      opts.placement = cand.placement;
      results[k] = simulate_llm_step(spec, cand.st, topo, cost, costs.at(cost_key(cand.st)), opts);
    });
    simulated += results.size();
    for (auto& r : results) {
      r.graph = {};
      r.sim = {};
      best.push_back(std::move(r));
    }
    std::sort(best.begin(), best.end(), result_less);
    if (best.size() > static_cast<std::size_t>(o.top)) best.resize(static_cast<std::size_t>(o.top));
    if (o.progress) o.progress(result.counts.simulated + simulated, best.front().step_seconds);
  };
  // First the most promising pool (the first kPool by the cheap bound) in full-bound order, which finds a
  // good k-th best early; then the rest in cheap-bound order with full bounds computed lazily, until the
  // cheap bound cannot beat the k-th best. Every candidate not simulated had a bound no better than the k-th
  // best at the time, and the k-th best only improves: the top k is exact.
  constexpr std::size_t kPool = 256;
  auto branch_and_bound = [&](std::vector<Candidate>& list) {
    simulated = uncontended = 0;
    const std::size_t pool = std::min(list.size(), kPool);
    full_bounds(list, 0, pool);
    std::vector<std::size_t> pool_order(pool);
    for (std::size_t i = 0; i < pool; ++i) pool_order[i] = i;
    std::stable_sort(pool_order.begin(), pool_order.end(),
                     [&](std::size_t a, std::size_t b) { return list[a].bound < list[b].bound; });
    for (std::size_t k = 0; k < pool && list[pool_order[k]].bound < kth();) {
      std::vector<std::size_t> chosen;
      for (; k < pool && chosen.size() < kBatch && list[pool_order[k]].bound < kth(); ++k)
        chosen.push_back(pool_order[k]);
      settle(list, chosen);
    }
    std::size_t next = pool, bounded = pool;
    while (next < list.size() && list[next].cheap < kth()) {
      std::vector<std::size_t> chosen;
      for (; next < list.size() && chosen.size() < kBatch && list[next].cheap < kth(); ++next) {
        if (next >= bounded) {
          bounded = std::min(list.size(), next + kBoundChunk);
          full_bounds(list, next, bounded);
        }
        if (list[next].bound < kth()) chosen.push_back(next);
      }
      if (!chosen.empty()) settle(list, chosen);
    }
    result.counts.simulated += simulated;
    result.counts.uncontended += uncontended;
    result.counts.pruned += list.size() - simulated;
  };
  branch_and_bound(candidates);
  // Placements of the best strategies: every other parallelism matrix of the axes over the machine levels,
  // bounded and simulated the same way.
  if (o.space.all_placements) {
    std::vector<int> counts_per_level;
    for (const auto& l : levels) counts_per_level.push_back(l.count);
    std::vector<Candidate> alternatives;
    for (const auto& r : best) {
      const std::vector<int> axes = {r.strategy.pp, r.strategy.dp, r.strategy.cp, r.strategy.tp};
      for (const auto& m : reduce::enumerate_matrices(counts_per_level, axes))
        if (m != r.placement) alternatives.push_back({r.strategy, m, 0, 0, r.strategy.describe()});
    }
    result.counts.plans += alternatives.size();
    order(alternatives);
    branch_and_bound(alternatives);
  }
  result.top = std::move(best);
  // Baselines.
  if (auto expert = megatron_expert_strategy(spec, topo, cost, o.global_batch, o.space.dtype))
    result.expert =
        simulate_llm_step(spec, *expert, topo, cost, so);  // out of memory: reported, not simulated
  std::optional<LlmStepResult> dp;
  for (const auto& cand : candidates)
    if (cand.st.tp == 1 && cand.st.pp == 1 && cand.st.cp == 1) {
      auto r = simulate_llm_step(spec, cand.st, topo, cost, costs.at(cost_key(cand.st)));
      if (!dp || result_less(r, *dp)) dp = std::move(r);
    }
  if (dp) {
    dp->graph = {};
    dp->sim = {};
  }
  result.data_parallel = std::move(dp);
  if (result.expert) {
    result.expert->graph = {};
    result.expert->sim = {};
  }
  result.seconds = clock.seconds();
  return result;
}

}  // namespace strata::search::parallel
