#include "search/reduce/evaluate.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <numeric>
#include <stdexcept>

#include <fmt/format.h>
#include <tbb/parallel_for.h>

#include "sim/simulator.h"
#include "util/timer.h"

namespace strata::search::reduce {
namespace {

std::vector<int> prime_factors(int n) {
  std::vector<int> f;
  for (int p = 2; p * p <= n; ++p)
    while (n % p == 0) {
      f.push_back(p);
      n /= p;
    }
  if (n > 1) f.push_back(n);
  return f;
}

}  // namespace

std::string_view algorithm_for(const hw::Topology& topo, const sim::CollectiveSpec& call,
                               std::string_view requested) {
  const auto& registry = sim::AlgorithmRegistry::instance();
  const sim::CollectiveAlgorithm* algo = registry.find(requested);
  if (!algo)
    throw std::invalid_argument(
        fmt::format("--algo: unknown algorithm '{}' (expected one of: {})", requested, registry.names()));
  if (algo->nccl_unsupported_reason(call, topo).empty()) return algo->name();
  // A host MPI library's schedules (validate's ground truth) run every call themselves.
  if (algo->family() == sim::nccl::Family::kHostMpi && algo->unsupported_reason(call, topo).empty())
    return algo->name();
  const sim::CollectiveAlgorithm* fallback = registry.first_eligible(call, topo);
  if (!fallback)
    throw std::invalid_argument(
        fmt::format("no registered algorithm can run {} on this group", sim::op_name(call.op)));
  return fallback->name();
}

double simulate_lowered(const hw::Topology& topo, const LoweredProgram& lowered, std::string_view algorithm) {
  sim::TaskGraph graph;
  std::vector<sim::TaskId> last(static_cast<std::size_t>(topo.num_gpus()), -1);
  std::vector<sim::Dep> deps;
  std::vector<std::pair<std::size_t, sim::TaskId>> updates;
  for (const auto& step : lowered.steps) {
    updates.clear();
    for (const auto& call : step.calls) {
      deps.clear();
      for (int d : call.group) {
        const sim::TaskId t = last.at(static_cast<std::size_t>(d));
        if (t >= 0 && std::none_of(deps.begin(), deps.end(), [t](const sim::Dep& x) { return x.task == t; }))
          deps.push_back(sim::Dep{t});
      }
      sim::CollectiveSpec spec;
      spec.op = call.op;
      spec.group = call.group;
      spec.bytes = call.bytes;
      const sim::TaskId done =
          sim::add_collective(topo, graph, spec, algorithm_for(topo, spec, algorithm), deps);
      for (int d : call.group) updates.emplace_back(static_cast<std::size_t>(d), done);
    }
    for (const auto& [d, t] : updates) last[d] = t;
  }
  if (graph.size() == 0) return 0;
  return sim::simulate(topo, graph).seconds();
}

PlacementHierarchy placement_hierarchy(const hw::Topology& topo, bool split_non_switched) {
  PlacementHierarchy ph;
  const auto levels = topo.levels();
  for (std::size_t j = 0; j < levels.size(); ++j) {
    const bool inside_node = j > 0;
    if (split_non_switched && inside_node && !topo.node_is_switched() && levels[j].count > 1) {
      const auto f = prime_factors(levels[j].count);
      for (std::size_t b = 0; b < f.size(); ++b) {
        ph.levels.push_back(hw::Level{fmt::format("{}.{}", levels[j].name, b), f[b]});
        ph.hw_level.push_back(static_cast<int>(j));
      }
      continue;
    }
    ph.levels.push_back(levels[j]);
    ph.hw_level.push_back(static_cast<int>(j));
  }
  return ph;
}

std::vector<PlacementEval> evaluate(const hw::Topology& topo, const EvalConfig& config, EvalStats* stats) {
  const auto ph = placement_hierarchy(topo, config.split_non_switched);
  check_axes(ph.levels, config.axes, config.reduce_axes);
  if (!(config.bytes_per_device > 0))
    throw std::invalid_argument("--bytes: the buffer size must be positive");
  if (config.algorithms.empty()) throw std::invalid_argument("--algo: no algorithm given");
  for (const auto& a : config.algorithms)
    if (!sim::AlgorithmRegistry::instance().find(a))
      throw std::invalid_argument(fmt::format("--algo: unknown algorithm '{}' (expected one of: {})", a,
                                              sim::AlgorithmRegistry::instance().names()));
  std::vector<int> counts;
  for (const auto& l : ph.levels) counts.push_back(l.count);
  std::vector<std::string> hw_names;
  for (const auto& l : topo.levels()) hw_names.push_back(l.name);

  const auto matrices = enumerate_matrices(counts, config.axes);
  std::vector<Placement> placements;
  std::vector<SynthesisHierarchy> hierarchies;
  std::vector<std::size_t> hierarchy_of;  // per placement: index into distinct
  std::vector<std::string> distinct_keys;
  std::vector<const SynthesisHierarchy*> distinct;
  for (const auto& m : matrices) {
    placements.emplace_back(ph.levels, config.axes, m);
    hierarchies.push_back(synthesis_hierarchy(placements.back(), config.reduce_axes, ph.hw_level, hw_names));
  }
  for (const auto& h : hierarchies) {
    const auto key = h.to_string();
    auto it = std::find(distinct_keys.begin(), distinct_keys.end(), key);
    hierarchy_of.push_back(static_cast<std::size_t>(it - distinct_keys.begin()));
    if (it == distinct_keys.end()) {
      distinct_keys.push_back(key);
      distinct.push_back(&h);
    }
  }
  util::Stopwatch clock;
  std::vector<SynthesisResult> synthesized(distinct.size());
  tbb::parallel_for(std::size_t{0}, distinct.size(),
                    [&](std::size_t i) { synthesized[i] = synthesize(*distinct[i], config.synthesis); });
  const double synth_time = clock.seconds();

  // One task per (placement, program); each simulates the program under every requested algorithm.
  struct Task {
    std::size_t placement, program;
  };
  std::vector<Task> tasks;
  std::vector<std::size_t> first_task;
  for (std::size_t p = 0; p < placements.size(); ++p) {
    first_task.push_back(tasks.size());
    for (std::size_t i = 0; i < synthesized[hierarchy_of[p]].programs.size(); ++i) tasks.push_back({p, i});
  }
  const std::size_t num_algos = config.algorithms.size();
  std::vector<double> seconds(tasks.size() * num_algos, 0);
  std::vector<ReductionLayout> layouts;
  for (const auto& pl : placements) layouts.emplace_back(pl, config.reduce_axes);
  clock.restart();
  std::atomic<std::size_t> simulated{0};
  tbb::parallel_for(std::size_t{0}, tasks.size(), [&](std::size_t t) {
    const auto& task = tasks[t];
    const auto& h = hierarchies[task.placement];
    const auto& program = synthesized[hierarchy_of[task.placement]].programs[task.program];
    const auto lowered = lower(program, h, layouts[task.placement], config.bytes_per_device);
    // Under different forced algorithms a program without AllReduce runs the same rings: simulate it once.
    std::vector<std::vector<std::string_view>> effective(num_algos);
    for (std::size_t a = 0; a < num_algos; ++a) {
      for (const auto& step : lowered.steps)
        for (const auto& call : step.calls) {
          sim::CollectiveSpec spec;
          spec.op = call.op;
          spec.group = call.group;
          spec.bytes = call.bytes;
          effective[a].push_back(algorithm_for(topo, spec, config.algorithms[a]));
        }
      const auto same =
          std::find(effective.begin(), effective.begin() + static_cast<std::ptrdiff_t>(a), effective[a]);
      const std::size_t prev = static_cast<std::size_t>(same - effective.begin());
      seconds[t * num_algos + a] =
          prev < a ? seconds[t * num_algos + prev] : simulate_lowered(topo, lowered, config.algorithms[a]);
      if (prev == a) simulated.fetch_add(1, std::memory_order_relaxed);
    }
  });
  const double sim_time = clock.seconds();

  std::vector<PlacementEval> out;
  for (std::size_t p = 0; p < placements.size(); ++p) {
    const auto& h = hierarchies[p];
    const auto& programs = synthesized[hierarchy_of[p]].programs;
    bool cross_node = false;
    for (int a : config.reduce_axes)
      for (std::size_t j = 0; j < ph.levels.size(); ++j)
        if (ph.hw_level[j] == 0 && matrices[p][static_cast<std::size_t>(a)][j] > 1) cross_node = true;
    for (std::size_t a = 0; a < num_algos; ++a) {
      PlacementEval e;
      e.matrix = matrices[p];
      e.algorithm = config.algorithms[a];
      e.hierarchy = h.to_string();
      e.num_programs = programs.size();
      e.cross_node = cross_node;
      std::vector<ProgramTime> ranked;
      for (std::size_t i = 0; i < programs.size(); ++i) {
        const double s = seconds[(first_task[p] + i) * num_algos + a];
        ranked.push_back(ProgramTime{i, to_string(programs[i], h), shape_name(programs[i]), s, {}});
        if (config.keep_all_programs && config.keep_lowered)
          ranked.back().lowered = lower(programs[i], h, layouts[p], config.bytes_per_device);
        // The baseline is the single AllReduce over the whole reduction group (the first program of size 1).
        if (programs[i].size() == 1 && programs[i][0].slice == 0 &&
            programs[i][0].op == sim::CollectiveOp::kAllReduce)
          e.baseline_seconds = s;
      }
      std::stable_sort(ranked.begin(), ranked.end(),
                       [](const ProgramTime& x, const ProgramTime& y) { return x.seconds < y.seconds; });
      e.best = ranked.front();
      if (config.keep_all_programs) e.ranked = std::move(ranked);
      out.push_back(std::move(e));
    }
  }
  if (stats) {
    stats->distinct_hierarchies = distinct.size();
    stats->simulations = simulated.load();
    stats->synthesis_seconds = synth_time;
    stats->simulation_seconds = sim_time;
  }
  return out;
}

std::vector<JointEval> evaluate_joint(const hw::Topology& topo, std::span<const int> axes,
                                      std::span<const ReductionSpec> reductions, const std::string& algorithm,
                                      const SynthesisOptions& synthesis, bool split_non_switched) {
  if (reductions.empty()) throw std::invalid_argument("joint placement needs at least one reduction");
  std::vector<std::vector<PlacementEval>> per_reduction;
  for (const auto& r : reductions) {
    EvalConfig c;
    c.axes.assign(axes.begin(), axes.end());
    c.reduce_axes = r.reduce_axes;
    c.bytes_per_device = r.bytes_per_device;
    c.algorithms = {algorithm};
    c.synthesis = synthesis;
    c.split_non_switched = split_non_switched;
    per_reduction.push_back(evaluate(topo, c));
  }
  std::vector<JointEval> out;
  for (std::size_t p = 0; p < per_reduction.front().size(); ++p) {
    JointEval j;
    j.matrix = per_reduction.front()[p].matrix;
    j.algorithm = algorithm;
    for (const auto& pr : per_reduction) {
      j.parts.push_back(pr[p]);
      j.total_best_seconds += pr[p].best.seconds;
      j.total_baseline_seconds += pr[p].baseline_seconds;
    }
    out.push_back(std::move(j));
  }
  std::stable_sort(out.begin(), out.end(), [](const JointEval& a, const JointEval& b) {
    return a.total_best_seconds < b.total_best_seconds;
  });
  return out;
}

}  // namespace strata::search::reduce
