#include "models/zoo/transformer_layer.h"

#include <algorithm>
#include <functional>
#include <stdexcept>

#include <fmt/format.h>

#include "models/train/training.h"
#include "models/zoo/builder.h"
#include "models/zoo/decoder_layer.h"

namespace strata::models::zoo {
namespace {

DType ir_dtype(hw::DType dt) {
  switch (dt) {
    case hw::DType::kFp16:
      return DType::kF16;
    case hw::DType::kBf16:
      return DType::kBF16;
    case hw::DType::kFp32:
    case hw::DType::kTf32:
      return DType::kF32;
    case hw::DType::kFp64:
      return DType::kF64;
    case hw::DType::kFp8:  // Transformer Engine: tensors in bf16, linear-layer GEMMs in fp8 (fp8_linears)
      return DType::kBF16;
  }
  throw std::invalid_argument("layer costs: unknown element type");
}

LayerPlan plan_of(const LayerShard& s) {
  return LayerPlan{s.micro_batch, s.seq, s.tp, s.cp, s.ep, s.sequence_parallel};
}

void add(PhaseCost& p, const OpCost& c) {
  p.seconds += c.seconds;
  p.flops += c.flops;
  p.bytes += c.bytes;
  if (!c.is_view) ++p.kernels;
}

// A linear layer: a contraction with a parameter operand (attention's contractions have none).
bool is_linear(const Graph& g, const Node& n) {
  if (n.op->kind != OpKind::kContraction) return false;
  for (ValueId v : n.inputs)
    if (g.value(v).kind == ValueKind::kParam) return true;
  return false;
}

// The training graph of `forward` (no optimizer update; gradients of the inputs too, as a layer passes its
// input's gradient to the previous layer), each node costed and added to the phase `phase_of` names for the
// forward node it belongs to (nullptr: not counted). Nodes that belong to no forward node must be views.
// fp8_linears: the GEMMs of linear layers (forward, input and weight gradients) run at the fp8 peak, as
// Transformer Engine's FP8 training does (Micikevicius et al. 2022, arXiv 2209.05433); everything else at the
// graph's bf16.
using CostSink = std::function<void(NodeId forward_node, bool backward, const OpCost& cost)>;
void cost_training_graph(const Graph& forward, const CostModel& cost, bool fp8_linears,
                         const CostSink& sink) {
  TrainOptions opt;
  opt.optimizer = Optimizer::kNone;
  opt.input_grads = true;
  const TrainingGraph tg = derive_training_graph(forward, opt);
  const Graph& g = tg.graph;
  for (NodeId n = 0; n < static_cast<NodeId>(g.nodes().size()); ++n) {
    const bool backward = n >= tg.num_forward_nodes;
    const NodeId owner = backward ? tg.backward_of[static_cast<std::size_t>(n)] : n;
    const Node& node = g.node(n);
    const bool fp8 = fp8_linears && owner >= 0 && node.op->kind == OpKind::kContraction &&
                     is_linear(forward, forward.node(owner));
    const OpCost c = fp8 ? cost.node_cost(g, node, cost.gpu(), hw::DType::kFp8) : cost.node_cost(g, node);
    if (owner < 0) {
      if (!c.is_view && c.seconds > 0)
        throw std::logic_error(fmt::format("layer costs: node '{}' ({}) belongs to no forward node",
                                           g.node(n).name, g.node(n).op->name));
      continue;
    }
    sink(owner, backward, c);
  }
}

bool in(NodeId n, NodeId begin, NodeId end) {
  return n >= begin && n < end;
}

}  // namespace

namespace {

Graph build_shard(const TransformerSpec& spec, const LayerShard& shard, hw::DType dt, LayerNodes* nodes) {
  const LayerPlan plan = plan_of(shard);
  check_plan(spec, plan);
  const DType dtype = ir_dtype(dt);
  Graph g(spec.name + ".layer");
  NetBuilder b(g, dtype);
  const std::int64_t tokens = shard.micro_batch * shard.seq;
  const std::int64_t rows = shard.sequence_parallel ? tokens / shard.tp : tokens;
  const auto x = b.input("x", {rows, spec.hidden}, dtype);
  const RopeTables rp =
      spec.positions == Positions::kRope ? rope_tables(g, shard.seq, spec.head_dim(), dtype) : RopeTables{};
  auto s = b.scope("layers.0");
  g.mark_output(decoder_layer(b, x, spec, plan, rp, nodes));
  return g;
}

}  // namespace

Graph build_layer_shard(const TransformerSpec& spec, const LayerShard& shard, hw::DType dt) {
  return build_shard(spec, shard, dt, nullptr);
}

LayerCost layer_cost(const TransformerSpec& spec, const LayerShard& shard, hw::DType dt,
                     const CostModel& cost) {
  LayerNodes nodes;
  const Graph g = build_shard(spec, shard, dt, &nodes);
  LayerCost out;
  out.params = g.param_count();
  out.expert_params = nodes.expert_params;
  std::vector<bool> standin(g.nodes().size(), false);
  for (NodeId n : nodes.standins) standin[static_cast<std::size_t>(n)] = true;
  cost_training_graph(g, cost, dt == hw::DType::kFp8, [&](NodeId f, bool backward, const OpCost& c) {
    if (standin[static_cast<std::size_t>(f)]) return;
    if (in(f, nodes.attn_begin, nodes.attn_end)) {
      add(backward ? out.attn_bwd : out.attn_fwd, c);
      if (in(f, nodes.core_begin, nodes.core_end)) add(backward ? out.attn_core_bwd : out.attn_core_fwd, c);
      return;
    }
    if (in(f, nodes.mlp_begin, nodes.mlp_end)) return add(backward ? out.mlp_bwd : out.mlp_fwd, c);
    throw std::logic_error(fmt::format("layer costs: node '{}' is in no phase", g.node(f).name));
  });
  return out;
}

EdgeCost edge_cost(const TransformerSpec& spec, const LayerShard& shard, hw::DType dt,
                   const CostModel& cost) {
  check_plan(spec, plan_of(shard));
  const DType dtype = ir_dtype(dt);
  const std::int64_t vocab = (spec.vocab + shard.tp - 1) / shard.tp, tokens = shard.micro_batch * shard.seq;
  EdgeCost out;
  {  // token (+ learned position) embedding of this GPU's vocabulary shard
    Graph g(spec.name + ".embed");
    NetBuilder b(g, dtype);
    const auto ids = b.input("input_ids", {shard.micro_batch, shard.seq}, DType::kI64);
    ValueId x = b.op("embedding", {b.param("wte", {vocab, spec.hidden}), ids}, {}, "embed_tokens");
    if (spec.positions == Positions::kLearned) {
      std::vector<double> pos(static_cast<std::size_t>(shard.seq));
      for (std::size_t i = 0; i < pos.size(); ++i) pos[i] = static_cast<double>(i);
      const auto p = g.add_constant("position_ids", {{shard.seq}, DType::kI64}, std::move(pos));
      x = b.add(x, b.op("embedding", {b.param("wpe", {spec.seq, spec.hidden}), p}, {}, "embed_positions"),
                "add_positions");
    }
    g.mark_output(b.reshape(x, {tokens, spec.hidden}, "flatten"));
    out.embed_params = g.param_count();
    cost_training_graph(
        g, cost, false,  // fp8: only the transformer layers' linear layers run in fp8
        [&](NodeId, bool backward, const OpCost& c) { add(backward ? out.embed_bwd : out.embed_fwd, c); });
  }
  {  // final norm, output projection onto the vocabulary shard, cross-entropy over its logits
    Graph g(spec.name + ".head");
    NetBuilder b(g, dtype);
    const auto x = b.input("x", {tokens, spec.hidden}, dtype);
    const double before = g.param_count();
    const auto h = norm(b, x, spec.norm, spec.bias, spec.norm_eps, "final_norm");
    out.head_params = g.param_count() - before;
    const auto w = b.param("lm_head", {vocab, spec.hidden});
    if (!spec.tied_embeddings) out.head_params += static_cast<double>(vocab * spec.hidden);
    const auto logits = b.op("matmul", {h, w}, {{"trans_b", std::int64_t{1}}}, "lm_head");
    // Megatron's fused vocab-parallel cross-entropy reads the logits once forward and writes their gradient
    // once backward; costed as a softmax over the logits and its gradient.
    g.mark_output(b.op("softmax", {logits}, {{"axis", std::int64_t{-1}}}, "cross_entropy"));
    cost_training_graph(
        g, cost, false,  // fp8: only the transformer layers' linear layers run in fp8
        [&](NodeId, bool backward, const OpCost& c) { add(backward ? out.head_bwd : out.head_fwd, c); });
  }
  return out;
}

}  // namespace strata::models::zoo
