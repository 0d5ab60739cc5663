#include "search/parallel/comm.h"

#include <algorithm>
#include <array>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "sim/collective_runner.h"
#include "sim/nccl_model.h"
#include "sim/simulator.h"

namespace strata::search::parallel {

std::string_view comm_class_name(CommClass c) {
  static constexpr std::array<std::string_view, kNumCommClasses> kNames = {"tp", "cp", "ep",
                                                                           "pp", "dp", "embedding"};
  return kNames[static_cast<std::size_t>(c)];
}

CommEmitter::Key CommEmitter::key_of(const CommOp& op) {
  return {static_cast<int>(op.cls), op.p2p, static_cast<int>(op.op), op.bytes, op.instances};
}

sim::CollectiveSpec CommEmitter::spec_of(const CommOp& op, std::size_t instance) const {
  sim::CollectiveSpec spec;
  spec.op = op.op;
  spec.group = op.instances[instance];
  spec.bytes = op.bytes;
  spec.label = op.label;
  return spec;
}

void CommEmitter::declare(const CommOp& op) {
  if (finalized_) throw std::logic_error("CommEmitter::declare after finalize");
  if (op.instances.empty()) throw std::invalid_argument("communication '" + op.label + "' has no instances");
  declared_.push_back(op);
}

std::vector<hw::LinkId> CommEmitter::instance_links(const CommOp& op, std::size_t instance) {
  const auto& group = op.instances[instance];
  std::vector<hw::LinkId> links;
  if (op.p2p) {
    const auto r = topo_.route(group.at(0), group.at(1));
    links.assign(r.begin(), r.end());
  } else if (group.size() > 1) {
    sim::TaskGraph scratch;
    const auto root = scratch.add_delay(0, scratch.intern("start"));
    const sim::Dep after[] = {{root}};
    const auto& [algorithm, protocol] = choice(op, 0);  // what emit() runs on every instance
    auto spec = spec_of(op, instance);
    spec.protocol = protocol;
    sim::add_collective(topo_, scratch, spec, algorithm, after);
    for (const auto& t : scratch.tasks()) {
      if (t.kind != sim::TaskKind::kTransfer) continue;
      if (t.route >= 0) {
        const auto& cr = scratch.custom_route(t.route);
        links.insert(links.end(), cr.links.begin(), cr.links.end());
      } else {
        const auto r = topo_.route(t.rank, t.peer);
        links.insert(links.end(), r.begin(), r.end());
      }
    }
  }
  std::sort(links.begin(), links.end());
  links.erase(std::unique(links.begin(), links.end()), links.end());
  return links;
}

void CommEmitter::finalize(CommTiming timing) {
  timing_ = timing;
  finalized_ = true;
  if (timing != CommTiming::kSimulated) return;  // nothing isolated (kAlone: nothing needs to be)
  // Per link: the first (class, instance group) seen, and whether a different one shares it.
  struct Owner {
    int cls = -1;
    const std::vector<hw::Rank>* group = nullptr;
  };
  std::vector<Owner> owner(topo_.links().size());
  bool clash[kNumCommClasses] = {};
  bool used[kNumCommClasses] = {};
  std::set<std::pair<int, std::vector<hw::Rank>>> seen;
  for (const auto& op : declared_) {
    const int c = static_cast<int>(op.cls);
    used[c] = true;
    if (op.p2p) clash[c] = true;  // sends of one pipeline boundary may overlap each other
    for (std::size_t i = 0; i < op.instances.size(); ++i) {
      if (!seen.insert({c, op.instances[i]}).second) continue;  // the same group again: serialized
      for (hw::LinkId l : instance_links(op, i)) {
        auto& o = owner[static_cast<std::size_t>(l)];
        if (o.cls < 0) {
          o = {c, &op.instances[i]};
        } else if (o.cls != c) {
          clash[c] = clash[o.cls] = true;
        } else if (*o.group != op.instances[i]) {
          clash[c] = true;
        }
      }
    }
  }
  for (int c = 0; c < kNumCommClasses; ++c) isolated_[c] = used[c] && !clash[c];
}

const std::pair<std::string, sim::Protocol>& CommEmitter::choice(const CommOp& op, std::size_t instance) {
  auto key = std::make_tuple(static_cast<int>(op.op), op.bytes, op.instances[instance]);
  auto it = choice_.find(key);
  if (it != choice_.end()) return it->second;
  const auto estimates = sim::nccl::estimate_all(topo_, spec_of(op, instance));
  if (estimates.empty()) throw std::invalid_argument("no collective algorithm can run '" + op.label + "'");
  return choice_.emplace(std::move(key), std::pair{estimates.front().algorithm, estimates.front().protocol})
      .first->second;
}

double simulate_alone(const hw::Topology& topo, const CommOp& op) {
  const auto& group = op.instances.front();
  if (op.p2p) {
    sim::TaskGraph g;
    g.add_transfer(group.at(0), group.at(1), op.bytes, topo.route_latency(group[0], group[1]),
                   g.intern("p2p"));
    return sim::simulate(topo, g).seconds();
  }
  if (group.size() < 2) return 0;
  sim::CollectiveRequest request;
  request.spec.op = op.op;
  request.spec.group = group;
  request.spec.bytes = op.bytes;
  return sim::run_collective(topo, request).seconds;
}

double AloneTimes::operator()(const CommOp& op) {
  auto key = std::make_tuple(op.p2p, static_cast<int>(op.op), op.bytes, op.instances.front());
  {
    std::lock_guard lock(mutex_);
    if (auto it = memo_.find(key); it != memo_.end()) return it->second;
  }
  const double seconds = simulate_alone(topo_, op);  // outside the lock: other threads go on meanwhile
  std::lock_guard lock(mutex_);
  memo_.emplace(std::move(key), seconds);
  return seconds;
}

CommEmitter::Expansion& CommEmitter::expansion(const CommOp& op) {
  const auto key = key_of(op);
  if (auto it = expansions_.find(key); it != expansions_.end()) return it->second;
  // Every instance runs instance 0's algorithm and protocol (they are symmetric).
  const auto [algorithm, protocol] = op.p2p ? std::pair<std::string, sim::Protocol>{} : choice(op, 0);
  // Expand every instance on its own, then merge task by task.
  std::vector<sim::TaskGraph> parts(op.instances.size());
  sim::TaskId done = 0;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    auto& g = parts[i];
    const auto root = g.add_delay(0, g.intern(op.label));
    const sim::Dep after[] = {{root}};
    const auto& group = op.instances[i];
    sim::TaskId d;
    if (op.p2p) {
      d = g.add_transfer(group.at(0), group.at(1), op.bytes, topo_.route_latency(group[0], group[1]),
                         g.intern(op.label), after);
    } else {
      auto spec = spec_of(op, i);
      spec.protocol = protocol;
      d = sim::add_collective(topo_, g, spec, algorithm, after);
    }
    if (i == 0) done = d;
    if (g.size() != parts[0].size() || g.edges().size() != parts[0].edges().size() || d != done)
      throw std::logic_error("instances of '" + op.label + "' expand differently; they are not symmetric");
  }
  Expansion e;
  e.done = done;
  const auto& base = parts[0];
  e.items.resize(base.size());
  for (const auto& edge : base.edges())
    e.items[static_cast<std::size_t>(edge.to)].deps.push_back({edge.from, edge.kind});
  for (std::size_t k = 0; k < base.size(); ++k) {
    auto& item = e.items[k];
    item.task = base.tasks()[k];
    item.task.label = -1;
    const auto lbl = base.tasks()[k].label;
    if (lbl >= 0) {
      const std::string name(base.labels()[static_cast<std::size_t>(lbl)]);
      auto it = std::find(e.labels.begin(), e.labels.end(), name);
      item.task.label = static_cast<std::int32_t>(it - e.labels.begin());
      if (it == e.labels.end()) e.labels.push_back(name);
    }
    if (item.task.kind != sim::TaskKind::kTransfer) continue;
    std::map<hw::LinkId, double> weight;
    for (const auto& g : parts) {
      const auto& t = g.tasks()[k];
      if (t.route >= 0) {
        const auto& cr = g.custom_route(t.route);
        for (std::size_t j = 0; j < cr.links.size(); ++j)
          weight[cr.links[j]] += cr.weights.empty() ? 1.0 : cr.weights[j];
      } else {
        for (hw::LinkId l : topo_.route(t.rank, t.peer)) weight[l] += 1.0;
      }
      item.task.seconds = std::max(item.task.seconds, t.seconds);
    }
    sim::CustomRoute route;
    for (const auto& [l, w] : weight) {
      route.links.push_back(l);
      route.weights.push_back(w);
    }
    item.route = static_cast<std::int32_t>(e.routes.size());
    e.routes.push_back(std::move(route));
  }
  return expansions_.emplace(key, std::move(e)).first->second;
}

sim::TaskId CommEmitter::emit(const CommOp& op, hw::Rank rep, int stream, std::span<const sim::Dep> deps) {
  if (!finalized_) throw std::logic_error("CommEmitter::emit before finalize");
  auto label_id = [&](const std::string& s) {
    auto [it, fresh] = label_ids_.try_emplace(s, 0);
    if (fresh) it->second = graph_.intern(s);
    return it->second;
  };
  if (timing_ == CommTiming::kAlone) return graph_.add_delay(alone_seconds(op), label_id(op.label), deps);
  if (fixed_duration(op))
    return graph_.add_compute_fixed(rep, stream, std::max(alone_seconds(op), 1e-12), label_id(op.label),
                                    deps);
  auto& e = expansion(op);
  if (e.graph_routes.empty())
    for (const auto& r : e.routes) e.graph_routes.push_back(graph_.add_route(r));
  std::vector<sim::TaskId> ids(e.items.size());
  std::vector<sim::Dep> d;
  for (std::size_t k = 0; k < e.items.size(); ++k) {
    const auto& item = e.items[k];
    d.clear();
    if (k == 0) d.assign(deps.begin(), deps.end());
    for (const auto& dep : item.deps) d.push_back({ids[static_cast<std::size_t>(dep.task)], dep.kind});
    const auto& t = item.task;
    const std::int32_t label = t.label >= 0 ? label_id(e.labels[static_cast<std::size_t>(t.label)]) : -1;
    switch (t.kind) {
      case sim::TaskKind::kTransfer:
        ids[k] = graph_.add_transfer_via(e.graph_routes[static_cast<std::size_t>(item.route)], t.rank, t.peer,
                                         t.bytes, t.seconds, label, d, t.lane);
        break;
      case sim::TaskKind::kDelay:
        ids[k] = graph_.add_delay(t.seconds, label, d);
        break;
      case sim::TaskKind::kCompute:
        ids[k] = graph_.add_compute_fixed(t.rank, t.stream, std::max(t.seconds, 1e-12), label, d);
        break;
    }
  }
  return ids[static_cast<std::size_t>(e.done)];
}

}  // namespace strata::search::parallel
