#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include <fmt/format.h>
#include <tbb/parallel_for.h>

#include "search/parallel/op_search.h"
#include "search/parallel/op_sim.h"
#include "util/hash.h"
#include "util/timer.h"

namespace strata::search::parallel {

namespace {

std::size_t u(std::int64_t i) {
  return static_cast<std::size_t>(i);
}

// splitmix64 stream (util/hash.h).
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    state_ += util::kGoldenGamma;
    return util::stafford_mix13(state_);
  }
  // Uniform in [0, n) (the modulo bias is below 2^-40 for the sizes drawn here).
  std::uint64_t below(std::uint64_t n) { return next() % n; }
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

 private:
  std::uint64_t state_;
};

// Energy of a plan: its time, inflated by the memory overflow when it does not fit.
double energy(const OpSimulator& s, double capacity) {
  const double t = s.seconds();
  const double peak = static_cast<double>(s.peak_memory());
  return peak <= capacity ? t : t * (2 + (peak - capacity) / capacity);
}

struct ChainResult {
  OpPlan best;
  double best_seconds = 0;
  bool found = false;
  double least_energy = 0;  // for the no-feasible-plan case
  std::vector<McmcProgress> history;
  std::int64_t proposals = 0, accepted = 0, stopped_early = 0;
};

ChainResult run_chain(const OpLowering& lowering, const hw::Topology& topo, const OpPlan& start, int chain,
                      const McmcOptions& o) {
  const auto& space = lowering.space();
  OpSimulator s(lowering, topo, start, o.checkpoint_every);
  const double capacity = topo.gpu().hbm_capacity;
  Rng rng(util::mix64(util::hash_combine(o.seed, static_cast<std::uint64_t>(chain))));
  std::vector<int> movable;
  for (int i = 0; i < space.size(); ++i)
    if (space.configs(i).size() > 1) movable.push_back(i);
  ChainResult r;
  r.best = start;
  double cur = energy(s, capacity);
  const double cost0 = cur > 0 ? cur : 1;
  r.least_energy = cur;
  if (s.fits()) {
    r.found = true;
    r.best_seconds = s.seconds();
  }
  util::Stopwatch clock;
  r.history.push_back({chain, 0, 0, r.found ? r.best_seconds : 0});
  const std::int64_t limit = o.proposals > 0 ? o.proposals : INT64_MAX;
  std::int64_t improved_at = 0;
  while (!movable.empty() && r.proposals < limit) {
    if (o.stall_min > 0 && r.proposals >= o.stall_min && r.proposals >= 2 * improved_at) break;
    if (o.seconds > 0 && (r.proposals & 63) == 0 && clock.seconds() >= o.seconds) break;
    ++r.proposals;
    const int i = movable[u(static_cast<std::int64_t>(rng.below(movable.size())))];
    const auto n = static_cast<std::uint64_t>(space.configs(i).size());
    auto choice = static_cast<int>(rng.below(n - 1));
    if (choice >= s.plan().choice[u(i)]) ++choice;  // uniform over the other configurations
    // Metropolis-Hastings: accept when next <= cur or u < exp(-beta (next - cur) / cost0), i.e. when
    // next < cur - ln(u) cost0 / beta. Drawing u first gives that threshold; with delta simulation a plan
    // whose schedule passes it (its energy is at least its time) is rejected without simulating the rest.
    // The decisions are the same as with a complete simulation.
    const double u_draw = rng.unit();
    const double threshold = o.beta > 0 ? cur - std::log(u_draw) * cost0 / o.beta : INFINITY;
    sim::SimTime stop_after = sim::kNever;
    if (o.delta && threshold * 1e12 < 9e18) stop_after = static_cast<sim::SimTime>(threshold * 1e12) + 1;
    s.propose(i, choice, stop_after);
    if (!o.delta) s.simulate_full();
    r.stopped_early += s.complete() ? 0 : 1;
    const double next = s.complete() ? energy(s, capacity) : INFINITY;
    const bool accept = next <= cur || next < threshold;
    if (!accept) {
      s.rollback();
      continue;
    }
    s.commit();
    ++r.accepted;
    cur = next;
    r.least_energy = std::min(r.least_energy, cur);
    if (s.fits() && (!r.found || s.seconds() < r.best_seconds)) {
      r.found = true;
      r.best_seconds = s.seconds();
      r.best = s.plan();
      r.history.push_back({chain, r.proposals, clock.seconds(), r.best_seconds});
      improved_at = r.proposals;
    } else if (!r.found && cur <= r.least_energy) {
      r.best = s.plan();
    }
  }
  return r;
}

}  // namespace

PlanReport evaluate_plan(const OpLowering& lowering, const hw::Topology& topo, const OpPlan& plan,
                         bool full_simulation) {
  OpSimulator s(lowering, topo, plan);
  PlanReport r;
  r.plan = plan;
  r.fast_seconds = s.seconds();
  r.full_seconds = full_simulation ? simulate_full_step(s, topo) : 0;
  r.peak_memory_bytes = s.peak_memory();
  r.fits = s.fits();
  r.listing = describe_plan(lowering.space(), plan);
  return r;
}

static void validate(const McmcOptions& o) {
  const auto bad = [](std::string_view field, const std::string& want, const std::string& got) {
    return std::invalid_argument(fmt::format("MCMC option {}: expected {}, got {}", field, want, got));
  };
  if (o.proposals < 0) throw bad("proposals", "a count >= 0", std::to_string(o.proposals));
  if (!(o.seconds >= 0) || !std::isfinite(o.seconds))
    throw bad("seconds", "a finite time >= 0", fmt::format("{}", o.seconds));
  if (o.proposals == 0 && o.seconds == 0)
    throw bad("proposals/seconds", "a proposal or time budget", "neither");
  if (!(o.beta >= 0) || !std::isfinite(o.beta))
    throw bad("beta", "a finite value >= 0", fmt::format("{}", o.beta));
  if (o.chains_per_start < 1 || o.chains_per_start > 4096)
    throw bad("chains_per_start", "1..4096", std::to_string(o.chains_per_start));
  if (o.stall_min < 0) throw bad("stall_min", "a count >= 0", std::to_string(o.stall_min));
  if (o.checkpoint_every < 1)
    throw bad("checkpoint_every", "a count >= 1", std::to_string(o.checkpoint_every));
}

McmcResult run_mcmc(const OpLowering& lowering, const hw::Topology& topo, const McmcOptions& o) {
  validate(o);
  const auto& space = lowering.space();
  util::Stopwatch clock;
  const OpPlan dp = data_parallel_plan(space), ex = expert_plan(space);
  const int per = std::max(1, o.chains_per_start);
  const int chains = 2 * per;
  std::vector<ChainResult> results(u(chains));
  tbb::parallel_for(0, chains,
                    [&](int c) { results[u(c)] = run_chain(lowering, topo, c < per ? dp : ex, c, o); });
  McmcResult r;
  r.chains = chains;
  r.nodes = space.size();
  r.gpus = space.gpus();
  r.scaled_costs = lowering.costs().scaled_count();
  int best = -1;
  for (int c = 0; c < chains; ++c) {
    const auto& cr = results[u(c)];
    r.proposals += cr.proposals;
    r.accepted += cr.accepted;
    r.stopped_early += cr.stopped_early;
    r.history.insert(r.history.end(), cr.history.begin(), cr.history.end());
    if (cr.found && (best < 0 || !results[u(best)].found || cr.best_seconds < results[u(best)].best_seconds))
      best = c;
    else if (!cr.found &&
             (best < 0 || (!results[u(best)].found && cr.least_energy < results[u(best)].least_energy)))
      best = c;
  }
  r.found = best >= 0 && results[u(best)].found;
  r.best = evaluate_plan(lowering, topo, best >= 0 ? results[u(best)].best : dp, o.full_simulation);
  r.data_parallel = evaluate_plan(lowering, topo, dp, o.full_simulation);
  r.expert = evaluate_plan(lowering, topo, ex, o.full_simulation);
  if (o.full_simulation) {
    // The finalists (every chain's best and the two starts) ranked by the event simulator, the more faithful
    // one (docs/parallel.md: the fast one overrates serialized small all-reduces).
    std::vector<PlanReport> finalists{r.best, r.data_parallel, r.expert};
    for (int c = 0; c < chains; ++c)
      if (c != best && results[u(c)].found)
        finalists.push_back(evaluate_plan(lowering, topo, results[u(c)].best, true));
    for (const auto& f : finalists)
      if (f.fits && (!r.best.fits || f.full_seconds < r.best.full_seconds)) r.best = f;
    r.found = r.best.fits;
  }
  r.wall_seconds = clock.seconds();
  return r;
}

OpPlanner::OpPlanner(const models::Graph& forward, const hw::Topology& topo, const models::CostModel& cost,
                     OpLowering::Options options)
    : topo_(topo),
      space_(forward, topo.num_gpus()),
      costs_(space_, cost),
      lowering_(space_, costs_, options) {}

McmcResult run_mcmc(const models::Graph& forward, const hw::Topology& topo, const models::CostModel& cost,
                    const McmcOptions& o) {
  validate(o);
  const OpPlanner planner(forward, topo, cost, {.adam = o.adam});
  return run_mcmc(planner.lowering(), topo, o);
}

}  // namespace strata::search::parallel
