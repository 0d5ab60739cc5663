#include "models/simulate/graph_sim.h"

#include <algorithm>
#include <map>

namespace strata::models {

GraphSimResult simulate_graph(const Graph& g, const hw::Topology& topo, const CostModel& cost,
                              const GraphSimOptions& options) {
  GraphSimResult r;
  const auto nv = g.values().size();
  std::vector<sim::TaskId> producer_task(nv, -1);
  std::map<std::string, OpBreakdown> by_op;
  std::vector<sim::Dep> deps;
  KernelCost kernels(cost);  // the simulator times each kernel through the cost model
  for (NodeId id = 0; id < static_cast<NodeId>(g.nodes().size()); ++id) {
    const Node& n = g.node(id);
    const auto c = cost.node_cost(g, n, topo.gpu());
    deps.clear();
    for (auto v : n.inputs) {
      const auto t = producer_task[static_cast<std::size_t>(v)];
      if (t >= 0 && std::none_of(deps.begin(), deps.end(), [&](const sim::Dep& d) { return d.task == t; }))
        deps.push_back({t, sim::DepKind::kDone});
    }
    const auto label = r.tasks.intern(n.name);
    const sim::TaskId task = c.seconds > 0
                                 ? r.tasks.add_compute(options.gpu, 0, kernels.add(g, id), label, deps)
                                 : r.tasks.add_delay(0, label, deps);
    for (auto v : n.outputs) producer_task[static_cast<std::size_t>(v)] = task;
    r.node_seconds.push_back(c.seconds);
    r.flops += c.flops;
    auto& b = by_op[std::string(n.op->name)];
    b.op = n.op->name;
    ++b.count;
    b.seconds += c.seconds;
    b.flops += c.flops;
    b.bytes += c.bytes;
    b.measured += c.measured;
  }
  sim::SimOptions so;
  so.compute = &kernels;
  so.record_timeline = options.record_timeline;
  r.sim = sim::simulate(topo, r.tasks, so);
  r.seconds = r.sim.seconds();
  for (auto& [name, b] : by_op) r.by_op.push_back(b);
  std::sort(r.by_op.begin(), r.by_op.end(), [](const OpBreakdown& a, const OpBreakdown& b) {
    return a.seconds != b.seconds ? a.seconds > b.seconds : a.op < b.op;
  });
  r.memory = memory_profile(g);
  return r;
}

}  // namespace strata::models
