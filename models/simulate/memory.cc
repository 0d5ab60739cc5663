#include "models/simulate/memory.h"

#include "models/cost/cost_model.h"

namespace strata::models {

MemoryProfile memory_profile(const Graph& g) {
  MemoryProfile m;
  const auto nv = g.values().size();
  std::vector<ValueId> root(nv);
  for (std::size_t i = 0; i < nv; ++i) root[i] = static_cast<ValueId>(i);
  // Aliases: a view's output, an optimizer's outputs (param, m, v updated in place).
  for (const auto& n : g.nodes()) {
    if (is_view(n)) {
      root[static_cast<std::size_t>(n.outputs[0])] = root[static_cast<std::size_t>(n.inputs[0])];
    } else if (n.op->kind == OpKind::kOptimizer) {
      // Updates are in place: output 0 is the parameter (input 0), output k > 0 the state in input k + 1
      // (input 1 is the gradient): sgd (p, g[, master]), adam (p, g, m, v[, master]).
      for (std::size_t k = 0; k < n.outputs.size(); ++k) {
        const std::size_t src = k == 0 ? 0 : k + 1;
        if (src < n.inputs.size())
          root[static_cast<std::size_t>(n.outputs[k])] = root[static_cast<std::size_t>(n.inputs[src])];
      }
    }
  }
  const int num_nodes = static_cast<int>(g.nodes().size());
  std::vector<int> birth(nv, -1), death(nv, -1);
  std::vector<bool> persistent(nv, false);
  for (std::size_t i = 0; i < nv; ++i) {
    const auto& v = g.values()[i];
    if (v.producer < 0) {
      persistent[i] = true;
      const double b = v.type.bytes();
      switch (v.kind) {
        case ValueKind::kParam:
          m.params += b;
          break;
        case ValueKind::kOptState:
          m.optimizer_state += b;
          break;
        case ValueKind::kConstant:
          m.constants += b;
          break;
        default:
          m.inputs += b;
          break;
      }
    }
  }
  for (int ni = 0; ni < num_nodes; ++ni) {
    const auto& n = g.node(ni);
    for (auto v : n.outputs) {
      const auto r = static_cast<std::size_t>(root[static_cast<std::size_t>(v)]);
      if (birth[r] < 0) birth[r] = ni;
      death[r] = std::max(death[r], ni);
    }
    for (auto v : n.inputs) {
      const auto r = static_cast<std::size_t>(root[static_cast<std::size_t>(v)]);
      death[r] = std::max(death[r], ni);
    }
  }
  for (auto v : g.outputs())
    death[static_cast<std::size_t>(root[static_cast<std::size_t>(v)])] = num_nodes - 1;
  std::vector<double> delta(static_cast<std::size_t>(num_nodes) + 1, 0.0);
  for (std::size_t r = 0; r < nv; ++r) {
    if (persistent[r] || birth[r] < 0 || root[r] != static_cast<ValueId>(r)) continue;
    const double b = g.values()[r].type.bytes();
    delta[static_cast<std::size_t>(birth[r])] += b;
    delta[static_cast<std::size_t>(death[r]) + 1] -= b;
  }
  double live = 0;
  m.live_after_node.resize(static_cast<std::size_t>(num_nodes));
  for (int ni = 0; ni < num_nodes; ++ni) {
    live += delta[static_cast<std::size_t>(ni)];
    m.live_after_node[static_cast<std::size_t>(ni)] = live;
    if (live > m.peak_transient) {
      m.peak_transient = live;
      m.peak_node = ni;
    }
  }
  return m;
}

}  // namespace strata::models
