#include "models/train/training.h"

#include <fmt/format.h>

#include "models/train/grad_context.h"

namespace strata::models {

namespace {

// The optimizer step: one update node per parameter that has a gradient.
void append_updates(TrainingGraph& tg, const Graph& forward, const TrainOptions& options) {
  Graph& g = tg.graph;
  tg.first_update_node = static_cast<int>(g.nodes().size());
  for (std::size_t k = 0; k < tg.params.size(); ++k) {
    const ValueId p = tg.params[k], d = tg.param_grads[k];
    if (d == kNoValue || options.optimizer == Optimizer::kNone) continue;
    const auto& pname = forward.value(p).name;
    // Mixed precision: parameters below f32 are updated through an f32 master copy (optimizer state, as in
    // ZeRO's accounting, Rajbhandari et al. SC'20 §3.1).
    const bool master = g.type(p).dtype != DType::kF32 && g.type(p).dtype != DType::kF64;
    const auto master_copy = [&] {
      return g.add_source(pname + ".master", TensorType{g.type(p).shape, DType::kF32}, ValueKind::kOptState);
    };
    std::vector<ValueId> outs;
    if (options.optimizer == Optimizer::kSgd) {
      std::vector<ValueId> in{p, d};
      if (master) in.push_back(master_copy());
      outs = g.add_node("sgd_update", in, {{"lr", options.lr}}, pname + "/update", ValueKind::kParam);
    } else {
      TensorType st{g.type(p).shape, options.optimizer_state_dtype};
      const auto m = g.add_source(pname + ".adam_m", st, ValueKind::kOptState);
      const auto v = g.add_source(pname + ".adam_v", st, ValueKind::kOptState);
      std::vector<ValueId> in{p, d, m, v};
      if (master) in.push_back(master_copy());
      outs = g.add_node("adam_update", in, {{"lr", options.lr}}, pname + "/update", ValueKind::kParam);
    }
    for (std::size_t o = 1; o < outs.size(); ++o) g.set_value_kind(outs[o], ValueKind::kOptState);
    for (auto o : outs) g.mark_output(o);
  }
}

}  // namespace

TrainingGraph derive_training_graph(const Graph& forward, const TrainOptions& options) {
  TrainingGraph tg{forward, {}, {}, {}, {}, {}, 0, 0, {}};
  Graph& g = tg.graph;
  g.set_name(forward.name() + ".train");
  tg.num_forward_nodes = static_cast<int>(forward.nodes().size());
  const std::size_t nvals = forward.values().size();

  // Which values depend on something we differentiate with respect to.
  std::vector<bool> needs_grad(nvals, false);
  for (std::size_t i = 0; i < nvals; ++i) {
    const auto& v = forward.values()[i];
    needs_grad[i] = v.kind == ValueKind::kParam ||
                    (options.input_grads && v.kind == ValueKind::kInput && is_float(v.type.dtype));
  }
  for (const auto& n : forward.nodes()) {
    if (n.op->backward)
      throw GraphError(
          fmt::format("node '{}' ({}) is already a backward or update operator; "
                      "derive training graphs from forward graphs only",
                      n.name, n.op->name));
    bool any = false;
    for (auto v : n.inputs) any = any || needs_grad[static_cast<std::size_t>(v)];
    for (auto v : n.outputs) needs_grad[static_cast<std::size_t>(v)] = any;
  }

  std::vector<ValueId> grad(nvals, kNoValue);
  auto accumulate = [&](ValueId v, ValueId d) {
    auto& slot = grad[static_cast<std::size_t>(v)];
    if (slot == kNoValue) {
      slot = d;
    } else {
      slot = g.add_node("ewadd", {slot, d}, {},
                        fmt::format("{}/grad/accumulate{}", forward.value(v).name, g.nodes().size()),
                        ValueKind::kGradient)[0];
    }
  };
  for (auto out : forward.outputs()) {
    const auto& t = forward.type(out);
    const ValueId seed = g.add_input(forward.value(out).name + ".grad", t);
    tg.output_grads.push_back(seed);
    if (needs_grad[static_cast<std::size_t>(out)]) accumulate(out, seed);
  }

  tg.backward_of.assign(g.nodes().size(), -1);  // forward nodes and accumulations into seeded outputs
  for (int ni = static_cast<int>(forward.nodes().size()) - 1; ni >= 0; --ni) {
    const Node node = forward.node(ni);
    GradContext ctx{g, node, {}, {}, {}};
    bool any_dy = false;
    for (auto o : node.outputs) {
      ctx.dy.push_back(grad[static_cast<std::size_t>(o)]);
      any_dy = any_dy || ctx.dy.back() != kNoValue;
    }
    if (!any_dy) continue;
    bool any_need = false;
    for (auto v : node.inputs) {
      ctx.needs.push_back(needs_grad[static_cast<std::size_t>(v)]);
      any_need = any_need || ctx.needs.back();
    }
    if (!any_need) continue;
    if (!node.op->grad)
      throw GraphError(
          fmt::format("node '{}': operator '{}' has no gradient rule", node.name, node.op->name));
    ctx.dx.assign(node.inputs.size(), kNoValue);
    node.op->grad(ctx);
    for (std::size_t i = 0; i < node.inputs.size(); ++i)
      if (ctx.dx[i] != kNoValue && ctx.needs[i]) accumulate(node.inputs[i], ctx.dx[i]);
    tg.backward_of.resize(g.nodes().size(), ni);
  }

  // Mark parameter gradients. A gradient value shared with another parameter or a seed gets its own view.
  std::vector<bool> claimed(g.values().size(), false);
  for (auto s : tg.output_grads) claimed[static_cast<std::size_t>(s)] = true;
  auto own = [&](ValueId v, const std::string& name) {
    if (claimed[static_cast<std::size_t>(v)])
      v = g.add_node("reshape", {v}, {{"shape", g.type(v).shape}}, name + "/copy", ValueKind::kGradient)[0];
    claimed.resize(g.values().size(), false);
    claimed[static_cast<std::size_t>(v)] = true;
    g.set_value_name(v, name);
    return v;
  };
  for (std::size_t i = 0; i < nvals; ++i) {
    const auto& v = forward.values()[i];
    if (v.kind == ValueKind::kParam) {
      tg.params.push_back(static_cast<ValueId>(i));
      ValueId d = grad[i];
      if (d != kNoValue) {
        d = own(d, v.name + ".grad");
        g.set_grad_of(d, static_cast<ValueId>(i));
      }
      tg.param_grads.push_back(d);
    } else if (options.input_grads && v.kind == ValueKind::kInput) {
      tg.inputs.push_back(static_cast<ValueId>(i));
      ValueId d = grad[i];
      if (d != kNoValue) d = own(d, v.name + ".grad");
      tg.input_grads.push_back(d);
    }
  }

  tg.backward_of.resize(g.nodes().size(), -1);
  append_updates(tg, forward, options);
  tg.backward_of.resize(g.nodes().size(), -1);
  return tg;
}

}  // namespace strata::models
