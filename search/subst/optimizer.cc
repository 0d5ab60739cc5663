// The optimizer's search (TASO's cost-based backtracking search, Jia et al., SOSP 2019, Algorithm 2): a
// priority queue of candidate rewrites ordered by predicted cost. Matching, rewriting and cost prediction
// live in optimizer_match.cc, optimizer_rewrite.cc and optimizer_cost.cc.
#include "search/subst/optimizer.h"

#include <algorithm>
#include <bit>
#include <functional>
#include <memory>
#include <mutex>
#include <queue>
#include <unordered_map>
#include <unordered_set>
#include <variant>

#include <fmt/format.h>
#include <tbb/parallel_for.h>

#include "search/subst/optimizer_internal.h"
#include "util/hash.h"
#include "util/timer.h"

namespace strata::search::subst {

using namespace optimizer_detail;

namespace {

std::uint64_t hash_attrs(const models::Attrs& attrs) {
  std::uint64_t h = 0x6174747273ULL;
  for (const auto& [name, value] : attrs.items()) {
    h = mix(h, util::fnv1a(name));
    h = mix(h, value.index());
    std::visit(
        [&](const auto& x) {
          using X = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<X, std::int64_t>) {
            h = mix(h, static_cast<std::uint64_t>(x));
          } else if constexpr (std::is_same_v<X, double>) {
            h = mix(h, std::bit_cast<std::uint64_t>(x));
          } else if constexpr (std::is_same_v<X, std::string>) {
            h = mix(h, util::fnv1a(x));
          } else {
            for (auto i : x) h = mix(h, static_cast<std::uint64_t>(i));
          }
        },
        value);
  }
  return h;
}

std::uint64_t hash_type(const models::TensorType& t) {
  std::uint64_t h = mix(0x74797065ULL, static_cast<std::uint64_t>(t.dtype));
  for (auto d : t.shape) h = mix(h, static_cast<std::uint64_t>(d));
  return h;
}

}  // namespace

std::string graph_listing(const Graph& g) {
  std::string out = fmt::format("graph {}: {} nodes\n", g.name(), g.nodes().size());
  for (const auto& v : g.values())
    if (v.producer < 0)
      out += fmt::format("  {} {} : {}\n", models::value_kind_name(v.kind), v.name, models::type_str(v.type));
  for (const Node& n : g.nodes()) {
    std::vector<std::string_view> outs, ins;
    std::vector<std::string> types;
    for (ValueId v : n.outputs) {
      outs.push_back(g.value(v).name);
      types.push_back(models::type_str(g.type(v)));
    }
    for (ValueId v : n.inputs) ins.push_back(g.value(v).name);
    out += fmt::format("  {} = {}[{}]({}) : {}    # {}\n", fmt::join(outs, ", "), n.op->name, n.attrs.str(),
                       fmt::join(ins, ", "), fmt::join(types, ", "), n.name);
  }
  std::vector<std::string_view> outs;
  for (ValueId v : g.outputs()) outs.push_back(g.value(v).name);
  out += fmt::format("  outputs: {}\n", fmt::join(outs, ", "));
  return out;
}

std::uint64_t graph_hash(const Graph& g) {
  std::vector<std::uint64_t> vh(g.values().size(), 0);
  std::vector<std::uint64_t> nh;
  for (ValueId v = 0; v < static_cast<ValueId>(g.values().size()); ++v) {
    const auto& val = g.value(v);
    if (val.producer < 0) vh[static_cast<std::size_t>(v)] = mix(util::fnv1a(val.name), hash_type(val.type));
  }
  for (const Node& n : g.nodes()) {
    std::uint64_t h = mix(util::fnv1a(n.op->name), hash_attrs(n.attrs));
    for (ValueId v : n.inputs) h = mix(h, vh[static_cast<std::size_t>(v)]);
    for (std::size_t k = 0; k < n.outputs.size(); ++k)
      vh[static_cast<std::size_t>(n.outputs[k])] = mix(h, k + 1);
    nh.push_back(h);
  }
  std::sort(nh.begin(), nh.end());
  std::uint64_t h = 0x5354524154410000ULL;
  for (auto x : nh) h = mix(h, x);
  for (ValueId v : g.outputs()) h = mix(h, vh[static_cast<std::size_t>(v)]);
  return h;
}

namespace {

// A state of the search: a graph, its cost and the substitutions that led to it from the input. The graph
// is released (left empty) once no waiting candidate is a rewrite of it and it is not the best graph: it is
// never read again, and keeping every explored graph was most of the optimizer's memory (Inception-v3:
// about 500 MB for 1,000 graphs of up to 900 nodes).
struct State {
  Graph graph;
  double cost = 0;
  std::vector<AppliedSubstitution> path;
  std::size_t waiting = 0;  // candidates in the queue whose parent this is
  std::size_t parent = 0;   // the state this one was rewritten from (0 for the input itself)
};

// A candidate waiting in the queue: a rule match on a parent state, materialized only when popped (most
// candidates never are), or a graph already built (hand-written transformations, or a rule whose cost
// could not be predicted without building it).
struct Pending {
  double estimate = 0;
  std::size_t parent = 0;
  std::size_t rule = 0;
  Match match;
  AppliedSubstitution step;
  std::function<std::optional<Graph>(const Graph&)> xfer;  // hand-written transformation site
};

struct DeltaEstimate {
  Estimate status = Estimate::kUnknown;
  double delta = 0;
  std::size_t new_nodes = 0;
};

class Search {
 public:
  Search(const Graph& input, std::span<const Rule> rules, const models::CostModel& cost,
         const OptimizerOptions& options)
      : rules_(rules), cost_(cost), options_(options) {
    Graph start_graph = remove_dead_nodes(input);
    const double c0 = graph_cost(start_graph, cost);
    res_.cost_before = res_.cost_after = c0;
    max_ops_ =
        static_cast<std::size_t>(options.max_op_ratio * static_cast<double>(start_graph.nodes().size()));
    seen_.insert(graph_hash(start_graph));
    states_.push_back({std::move(start_graph), c0, {}});
    for (const auto& r : rules) lhs_indices_.emplace_back(r);
  }

  OptimizeResult run() {
    expand(0);
    while (!queue_.empty() && res_.explored < options_.budget) {
      const std::size_t pi = queue_.top().second;
      queue_.pop();
      Pending p = std::move(*pending_[pi]);
      pending_[pi].reset();
      std::optional<Graph> next = materialize(p, pi);
      unwait(p.parent);
      if (!next) continue;
      const NodeCosts next_costs = node_costs(*next, cost_);
      // The operator cap counts operators that run per step; weight-only ones are folded before inference.
      std::size_t runtime_ops = 0;
      for (const Node& n : next->nodes())
        runtime_ops += n.outputs.empty() || next_costs.folded[static_cast<std::size_t>(n.outputs[0])] == 0;
      if (runtime_ops > max_ops_) continue;
      if (!seen_.insert(graph_hash(*next)).second) continue;
      const double c = next_costs.total;
      if (c >= options_.alpha * states_[best_].cost) continue;
      auto path = states_[p.parent].path;
      path.push_back(std::move(p.step));
      states_.push_back({std::move(*next), c, std::move(path), 0, p.parent});
      if (c < states_[best_].cost) {
        const std::size_t previous_best = best_;
        best_ = states_.size() - 1;
        release_if_unused(previous_best);
      }
      expand(states_.size() - 1);
      if (options_.progress && res_.explored % 50 == 0)
        options_.progress(fmt::format("optimize: {} graphs explored, {} candidates, best {:.4f} ms",
                                      res_.explored, res_.generated, states_[best_].cost * 1e3));
    }
    if (best_ != 0 && !worth_rewriting(res_.cost_before, states_[best_].cost, options_.min_gain)) {
      res_.declined_cost = states_[best_].cost;
      best_ = 0;  // the input; cost_after stays cost_before
    }
    res_.graph = states_[best_].graph;
    res_.cost_after = states_[best_].cost;
    res_.applied = states_[best_].path;
    if (options_.record_path) {
      for (std::size_t s = best_; s != 0; s = states_[s].parent) res_.path_graphs.push_back(states_[s].graph);
      std::reverse(res_.path_graphs.begin(), res_.path_graphs.end());
    }
    res_.seconds = watch_.seconds();
    return std::move(res_);
  }

 private:
  using Entry = std::pair<double, std::size_t>;  // estimated cost, pending index (earlier first on ties)

  // The graph of a popped candidate, built only now (candidates are priced by cost delta when enqueued);
  // nullopt when the rewrite fails.
  std::optional<Graph> materialize(Pending& p, std::size_t pi) {
    std::optional<Graph> next;
    if (p.xfer) {
      next = p.xfer(states_[p.parent].graph);
    } else {
      const Graph& parent = states_[p.parent].graph;
      next = apply_match(parent, rules_[p.rule], p.match, fmt::format("s{}_", pi));
      p.step.rule = rules_[p.rule].name;
      for (NodeId n : p.match.nodes) p.step.nodes.push_back(parent.node(n).name);
    }
    return next;
  }

  // What the search needs of the state being expanded, shared by the parallel rule loop.
  struct Expansion {
    std::size_t idx;
    const Graph& current;
    NodeCosts costs;
    MatchIndex index;
    double threshold;
    std::vector<std::uint64_t> node_hash, value_hash;
  };

  void expand(std::size_t idx) {
    ++res_.explored;
    const Graph& current = states_[idx].graph;
    Expansion x{
        idx, current, node_costs(current, cost_), MatchIndex(current), options_.alpha * states_[best_].cost,
        {},  {}};
    for (const Node& n : current.nodes()) x.node_hash.push_back(util::fnv1a(n.name));
    for (const auto& v : current.values()) x.value_hash.push_back(util::fnv1a(v.name));
    std::vector<std::vector<Pending>> per_rule(rules_.size() + options_.xfers.size());
    tbb::parallel_for(std::size_t{0}, per_rule.size(), [&](std::size_t r) {
      if (r >= rules_.size())
        xfer_candidates(x, r, per_rule[r]);
      else
        rule_candidates(x, r, per_rule[r]);
    });
    for (auto& cands : per_rule)
      for (auto& cand : cands) {
        if (cand.estimate >= options_.alpha * states_[best_].cost) continue;
        ++states_[cand.parent].waiting;
        pending_.push_back(std::make_unique<Pending>(std::move(cand)));
        queue_.push({pending_.back()->estimate, pending_.size() - 1});
        ++res_.generated;
      }
    trim_queue();
    release_if_unused(idx);
  }

  void unwait(std::size_t state) {
    --states_[state].waiting;
    release_if_unused(state);
  }
  // The input (state 0) is kept: it is returned when the best graph saves less than min_gain.
  void release_if_unused(std::size_t state) {
    if (states_[state].waiting == 0 && state != best_ && state != 0 && !options_.record_path)
      states_[state].graph = Graph{};
  }

  void xfer_candidates(const Expansion& x, std::size_t r, std::vector<Pending>& out) {
    for (auto& site : options_.xfers[r - rules_.size()](x.current, x.costs, cost_)) {
      if (x.costs.total + site.delta >= x.threshold) continue;
      Pending p{x.costs.total + site.delta, x.idx, r, {}, {site.name, {}}, {}};
      for (NodeId n : site.nodes) p.step.nodes.push_back(x.current.node(n).name);
      p.xfer = std::move(site.apply);
      out.push_back(std::move(p));
    }
  }

  void rule_candidates(const Expansion& x, std::size_t r, std::vector<Pending>& out) {
    for (auto& m : find_matches_with(x.current, x.index, lhs_indices_[r], rules_[r], r)) {
      const DeltaEstimate d = delta_of(x, r, m);
      if (d.status != Estimate::kOk || x.costs.total + d.delta >= x.threshold) continue;
      out.push_back({x.costs.total + d.delta, x.idx, r, std::move(m), {}, {}});
    }
  }

  // The cost change of applying match m of rule r. The same match (same rule, nodes and bound values,
  // identified by name: rewrites keep the names of the nodes and values they do not replace) recurs in every
  // descendant of the graph it was found in; its cost change is computed once.
  DeltaEstimate delta_of(const Expansion& x, std::size_t r, const Match& m) {
    std::uint64_t key = mix(0x6d61746368ULL, r);
    for (NodeId n : m.nodes) key = mix(key, x.node_hash[static_cast<std::size_t>(n)]);
    for (const auto& [name, v] : m.bindings)
      key = mix(mix(key, x.value_hash[static_cast<std::size_t>(v)]),
                x.costs.folded[static_cast<std::size_t>(v)]);
    {
      std::lock_guard lock(cache_mutex_);
      if (auto it = delta_cache_.find(key); it != delta_cache_.end()) return it->second;
    }
    std::size_t new_nodes = 0;
    const auto [status, estimate] = target_cost(x.current, x.costs, rules_[r], m, cost_, new_nodes);
    DeltaEstimate d{status, estimate - x.costs.total, new_nodes};
    if (status == Estimate::kUnknown) {  // split points outside the target graph: build it once
      const auto next = apply_match(x.current, rules_[r], m, "probe_");
      d = next ? DeltaEstimate{Estimate::kOk, graph_cost(*next, cost_) - x.costs.total,
                               next->nodes().size() + m.nodes.size() - x.current.nodes().size()}
               : DeltaEstimate{Estimate::kRejected, 0, 0};
    }
    std::lock_guard lock(cache_mutex_);
    delta_cache_.emplace(key, d);
    return d;
  }

  // At most `budget - explored` more graphs are expanded, so candidates ranked far below that can never be
  // reached; dropping them (keeping a wide margin for duplicates and failed rewrites) bounds memory without
  // changing the search.
  void trim_queue() {
    const std::size_t keep =
        32 * static_cast<std::size_t>(std::max(options_.budget - res_.explored, 1)) + 4096;
    if (queue_.size() <= 2 * keep) return;
    std::vector<Entry> entries;
    entries.reserve(queue_.size());
    while (!queue_.empty()) {
      entries.push_back(queue_.top());
      queue_.pop();
    }
    for (std::size_t i = keep; i < entries.size(); ++i) {
      const std::size_t parent = pending_[entries[i].second]->parent;
      pending_[entries[i].second].reset();
      unwait(parent);
    }
    entries.resize(keep);
    queue_ = decltype(queue_)(std::greater<>{}, std::move(entries));
  }

  std::span<const Rule> rules_;
  const models::CostModel& cost_;
  const OptimizerOptions& options_;
  util::Stopwatch watch_;
  OptimizeResult res_;
  std::vector<State> states_;
  std::vector<std::unique_ptr<Pending>> pending_;  // null once popped or dropped
  std::size_t max_ops_ = 0;
  std::unordered_set<std::uint64_t> seen_;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> queue_;
  std::size_t best_ = 0;
  std::vector<LhsIndex> lhs_indices_;
  std::unordered_map<std::uint64_t, DeltaEstimate> delta_cache_;
  std::mutex cache_mutex_;
};

}  // namespace

OptimizeResult optimize(const Graph& input, std::span<const Rule> rules, const models::CostModel& cost,
                        const OptimizerOptions& options) {
  return Search(input, rules, cost, options).run();
}

}  // namespace strata::search::subst
