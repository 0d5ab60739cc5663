// Activations are kept as 2-D [tokens, hidden] around linear layers (TASO's layout for BERT, so matmuls that
// share an input can be merged) and as [batch, heads, seq, head_dim] inside attention. Tensor parallelism
// follows Megatron-LM (Shoeybi et al. 2019): q/k/v and the first MLP GEMM(s) column-parallel (heads/tp,
// kv_heads/tp, ffn/tp per GPU), the attention output and second MLP GEMM row-parallel (their output is a
// partial sum the caller all-reduces); biases of row-parallel GEMMs and norms are replicated.
#include "models/zoo/decoder_layer.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>

#include <fmt/format.h>

namespace strata::models::zoo {
namespace {

struct Dims {
  std::int64_t batch, seq, kv_len, heads, kv_heads, head_dim;
  std::int64_t tokens() const { return batch * seq; }
};

// Rotary embedding on [B, H, S, D]: x * cos + rotate_half(x) * sin, rotate_half(x) = [-x2, x1].
ValueId apply_rope(NetBuilder& b, ValueId x, std::int64_t head_dim, const RopeTables& rp,
                   const std::string& leaf) {
  const std::int64_t half = head_dim / 2;
  const auto parts = b.graph().add_node(
      "split", {x}, {{"axis", std::int64_t{3}}, {"sizes", Ints{half, half}}}, b.name(leaf + ".split"));
  const auto neg = b.op("scalar_mul", {parts[1], rp.minus_one}, {}, leaf + ".neg");
  const auto rot = b.concat({neg, parts[0]}, 3, leaf + ".rotate");
  return b.add(b.mul(x, rp.cos, leaf + ".cos"), b.mul(rot, rp.sin, leaf + ".sin"), leaf);
}

NodeId node_count(NetBuilder& b) {
  return static_cast<NodeId>(b.graph().nodes().size());
}
void mark_standins(NetBuilder& b, NodeId from, LayerNodes* nodes) {
  if (!nodes) return;
  for (NodeId n = from; n < node_count(b); ++n) nodes->standins.push_back(n);
}

// x [rows, ...] repeated `times` along a new axis `axis` and merged into its neighbour: the copy that stands
// for an all-gather (its cost is the collective's, not a kernel's).
ValueId repeat_axis(NetBuilder& b, ValueId x, int axis, std::int64_t times, const std::string& leaf) {
  Shape s = b.shape(x), ex = s;
  ex.insert(ex.begin() + axis, 1);
  const auto r = b.reshape(x, ex, leaf + ".unsqueeze");
  ex[static_cast<std::size_t>(axis)] = times;
  const auto e = b.op("expand", {r}, {{"shape", ex}}, leaf + ".expand");
  Shape merged = s;
  merged[static_cast<std::size_t>(axis)] *= times;
  return b.reshape(e, merged, leaf);
}

// Sequence parallelism: the [tokens/tp, h] shard all-gathered to [tokens, h] (stand-in).
ValueId sp_gather(NetBuilder& b, ValueId x, const LayerPlan& p, const std::string& leaf, LayerNodes* nodes) {
  if (!p.sequence_parallel || p.tp == 1) return x;
  const NodeId from = node_count(b);
  const auto y = repeat_axis(b, x, 0, p.tp, leaf);
  mark_standins(b, from, nodes);
  return y;
}
// ... and the row-parallel partial sums [tokens, h] reduce-scattered to this GPU's [tokens/tp, h] (stand-in).
ValueId sp_scatter(NetBuilder& b, ValueId x, const LayerPlan& p, const std::string& leaf, LayerNodes* nodes) {
  if (!p.sequence_parallel || p.tp == 1) return x;
  const NodeId from = node_count(b);
  const std::int64_t rows = b.shape(x)[0] / p.tp;
  const auto parts = b.graph().add_node(
      "split", {x}, {{"axis", std::int64_t{0}}, {"sizes", Ints(static_cast<std::size_t>(p.tp), rows)}},
      b.name(leaf));
  mark_standins(b, from, nodes);
  return parts[0];
}

ValueId attention_block(NetBuilder& b, ValueId x, const TransformerSpec& spec, const Dims& d, bool causal,
                        const RopeTables& rp, LayerNodes* nodes) {
  auto s = b.scope("attn");
  const std::int64_t dh = d.head_dim;
  auto heads = [&](ValueId v, std::int64_t n, const std::string& name) {
    return b.transpose(b.reshape(v, {d.batch, d.seq, n, dh}, name + ".split_heads"), {0, 2, 1, 3},
                       name + ".to_heads");
  };
  ValueId q = heads(b.linear(x, d.heads * dh, spec.bias, "q"), d.heads, "q");
  ValueId k = heads(b.linear(x, d.kv_heads * dh, spec.bias, "k"), d.kv_heads, "k");
  ValueId v = heads(b.linear(x, d.kv_heads * dh, spec.bias, "v"), d.kv_heads, "v");
  if (rp.cos != kNoValue) {
    q = apply_rope(b, q, dh, rp, "q.rope");
    k = apply_rope(b, k, dh, rp, "k.rope");
  }
  if (d.kv_len != d.seq) {  // context parallelism: keys and values of the whole sequence (stand-in gather)
    const NodeId from = node_count(b);
    k = repeat_axis(b, k, 2, d.kv_len / d.seq, "k.cp_gather");
    v = repeat_axis(b, v, 2, d.kv_len / d.seq, "v.cp_gather");
    mark_standins(b, from, nodes);
  }
  ValueId ctx;
  if (spec.attention == AttentionImpl::kFlash) {
    if (nodes) nodes->core_begin = node_count(b);
    ctx = b.op("attention", {q, k, v}, {{"causal", std::int64_t{causal}}}, "core");
  } else {
    if (d.kv_heads != d.heads) {  // grouped-query attention, unfused: each key/value head repeated per group
      auto repeat = [&](ValueId t, const std::string& leaf) {
        const auto r = b.reshape(t, {d.batch, d.kv_heads, 1, d.kv_len, dh}, leaf + ".unsqueeze");
        const auto e =
            b.op("expand", {r}, {{"shape", Ints{d.batch, d.kv_heads, d.heads / d.kv_heads, d.kv_len, dh}}},
                 leaf + ".expand");
        return b.reshape(e, {d.batch, d.heads, d.kv_len, dh}, leaf);
      };
      k = repeat(k, "k.repeat");
      v = repeat(v, "v.repeat");
    }
    if (nodes) nodes->core_begin = node_count(b);
    auto scores = b.op("batch_matmul", {q, k}, {{"trans_b", std::int64_t{1}}}, "scores");
    scores = b.op("scalar_mul", {scores, b.scalar("scale", 1.0 / std::sqrt(static_cast<double>(dh)))}, {},
                  "scale");
    const auto probs =
        b.op("softmax", {scores}, {{"axis", std::int64_t{-1}}, {"causal", std::int64_t{causal}}}, "softmax");
    ctx = b.op("batch_matmul", {probs, v}, {}, "context");
  }
  if (nodes) nodes->core_end = node_count(b);
  ctx = b.transpose(ctx, {0, 2, 1, 3}, "merge_heads");
  ctx = b.reshape(ctx, {d.tokens(), d.heads * dh}, "merge_heads.reshape");
  return b.linear(ctx, spec.hidden, spec.bias, "out");
}

ValueId dense_mlp(NetBuilder& b, ValueId h, const TransformerSpec& spec, std::int64_t ffn) {
  if (spec.act == MlpActivation::kSwiglu) {
    const auto gate = b.op("silu", {b.linear(h, ffn, spec.bias, "gate")}, {}, "silu");
    return b.linear(b.mul(gate, b.linear(h, ffn, spec.bias, "up"), "gated"), spec.hidden, spec.bias, "down");
  }
  return b.linear(b.op("gelu", {b.linear(h, ffn, spec.bias, "fc")}, {}, "gelu"), spec.hidden, spec.bias,
                  "proj");
}

ValueId index_constant(NetBuilder& b, const std::string& leaf, const std::vector<double>& idx) {
  return b.graph().add_constant(b.name(leaf), {{static_cast<std::int64_t>(idx.size())}, DType::kI64}, idx);
}

// Mixture of experts with balanced routing (docs/models.md, "Mixture of experts"): the router (a linear layer
// and a softmax over experts) is computed for its cost, but tokens are not routed by its values: token t's
// k-th choice (slot s = t * top_k + k) goes to expert s mod E, so every expert receives tokens * top_k / E
// tokens. With expert parallelism the E / ep local experts process the slots of all ep ranks' tokens (after
// the all-to-all, which the step simulator adds): the local stand-in gathers them from this rank's slots.
ValueId moe_block(NetBuilder& b, ValueId h, const TransformerSpec& spec, const LayerPlan& p, std::int64_t ffn,
                  LayerNodes* nodes) {
  const std::int64_t tokens = b.shape(h)[0], k = spec.top_k, experts = spec.experts;
  const std::int64_t slots = tokens * k, local = experts / p.ep;
  const auto logits = b.linear(h, experts, false, "router");
  const auto probs = b.op("softmax", {logits}, {{"axis", std::int64_t{-1}}}, "router.softmax");
  // Dispatch: one gather of every local expert's rows, expert after expert (the permutation before the
  // all-to-all and the sort by expert after it are gathers in Megatron-LM too); a split of contiguous row
  // blocks (a view) hands each expert its rows. Local expert e (global id e, rank 0's share) takes the global
  // slots s = e, e + E, ... of the ep ranks' slots; every rank routes alike, so rank r's slot s is this
  // rank's slot s mod (tokens * top_k) in the stand-in.
  const std::int64_t global_slots = slots * p.ep;
  std::vector<double> rows_token;
  Ints sizes;
  std::vector<std::int64_t> position(static_cast<std::size_t>(slots), -1);
  for (std::int64_t e = 0; e < local; ++e) {
    std::int64_t n = 0;
    for (std::int64_t s = e; s < global_slots; s += experts, ++n) {
      if (s < slots) position[static_cast<std::size_t>(s)] = static_cast<std::int64_t>(rows_token.size());
      rows_token.push_back(static_cast<double>((s % slots) / k));
    }
    sizes.push_back(n);
  }
  const auto rows = static_cast<std::int64_t>(rows_token.size());
  if (std::find(sizes.begin(), sizes.end(), 0) != sizes.end())
    throw std::invalid_argument(
        fmt::format("{}: a local expert receives no token ({} tokens x top_k {} x ep {} over {} experts)",
                    spec.name, tokens, k, p.ep, experts));
  const auto dispatched =
      b.op("embedding", {h, index_constant(b, "dispatch.index", rows_token)}, {}, "dispatch");
  const auto per_expert =
      local == 1 ? std::vector<ValueId>{dispatched}
                 : b.graph().add_node("split", {dispatched}, {{"axis", std::int64_t{0}}, {"sizes", sizes}},
                                      b.name("dispatch.split"));
  std::vector<ValueId> outs;
  for (std::int64_t e = 0; e < local; ++e) {
    auto es = b.scope("experts." + std::to_string(e));
    const double before = b.graph().param_count();
    outs.push_back(dense_mlp(b, per_expert[static_cast<std::size_t>(e)], spec, ffn));
    if (nodes) nodes->expert_params += b.graph().param_count() - before;
  }
  const auto all = outs.size() == 1 ? outs[0] : b.concat(outs, 0, "experts.concat");
  // Combine: every slot's expert output back in slot order (slots of remote experts: this rank's stand-in
  // rows), weighted by its gate probability, summed over the token's top_k slots.
  std::vector<double> back(static_cast<std::size_t>(slots)), gate(static_cast<std::size_t>(slots));
  for (std::int64_t s = 0; s < slots; ++s) {
    const auto i = static_cast<std::size_t>(s);
    back[i] = static_cast<double>(position[i] >= 0 ? position[i] : s % rows);
    gate[i] = static_cast<double>((s / k) * experts + s % experts);
  }
  const auto ordered = b.op("embedding", {all, index_constant(b, "combine.index", back)}, {}, "combine");
  const auto flat_probs = b.reshape(probs, {tokens * experts, 1}, "router.flat");
  const auto gates = b.op("embedding", {flat_probs, index_constant(b, "gate.index", gate)}, {}, "gates");
  const auto weighted = b.mul(ordered, gates, "weighted");
  const auto per_token = b.reshape(weighted, {tokens, k, spec.hidden}, "per_token");
  return b.op("reduce_sum", {per_token}, {{"axes", Ints{1}}, {"keepdims", std::int64_t{0}}}, "combine.sum");
}

}  // namespace

RopeTables rope_tables(Graph& g, std::int64_t seq, std::int64_t dh, DType dtype) {
  // The tables depend on (seq, head_dim) only and take seq x head_dim sin/cos evaluations (tens of ms at 4096
  // tokens), while layer_cost builds a layer graph per call: computed once per shape and shared read-only.
  using Tables =
      std::pair<std::shared_ptr<const std::vector<double>>, std::shared_ptr<const std::vector<double>>>;
  static std::mutex mutex;
  static std::map<std::pair<std::int64_t, std::int64_t>, Tables> cache;
  Tables tables;
  {
    const std::lock_guard lock(mutex);
    auto it = cache.find({seq, dh});
    if (it == cache.end()) {
      const std::int64_t half = dh / 2;
      std::vector<double> cs(static_cast<std::size_t>(seq * dh)), sn(cs.size());
      for (std::int64_t p = 0; p < seq; ++p)
        for (std::int64_t i = 0; i < dh; ++i) {
          const double theta =
              static_cast<double>(p) *
              std::pow(10000.0, -2.0 * static_cast<double>(i % half) / static_cast<double>(dh));
          cs[static_cast<std::size_t>(p * dh + i)] = std::cos(theta);
          sn[static_cast<std::size_t>(p * dh + i)] = std::sin(theta);
        }
      it =
          cache
              .emplace(std::pair{seq, dh}, Tables{std::make_shared<const std::vector<double>>(std::move(cs)),
                                                  std::make_shared<const std::vector<double>>(std::move(sn))})
              .first;
    }
    tables = it->second;
  }
  RopeTables rp;
  rp.cos = g.add_source("rope.cos", {{seq, dh}, dtype}, ValueKind::kConstant, tables.first);
  rp.sin = g.add_source("rope.sin", {{seq, dh}, dtype}, ValueKind::kConstant, tables.second);
  rp.minus_one = g.add_constant("rope.minus_one", {{}, dtype}, {-1.0});
  return rp;
}

ValueId norm(NetBuilder& b, ValueId x, NormKind kind, bool bias, double eps, const std::string& leaf) {
  const std::int64_t h = b.shape(x).back();
  if (kind == NormKind::kRmsNorm)
    return b.op("rmsnorm", {x, b.param(leaf + ".weight", {h})}, {{"epsilon", eps}}, leaf);
  std::vector<ValueId> in = {x, b.param(leaf + ".weight", {h})};
  if (bias) in.push_back(b.param(leaf + ".bias", {h}));
  return b.op("layernorm", in, {{"epsilon", eps}}, leaf);
}

void check_plan(const TransformerSpec& s, const LayerPlan& p) {
  if (const auto problem = check_spec(s))
    throw std::invalid_argument(fmt::format("{}: {}: {}", s.name, problem->key, problem->message));
  const auto fail = [&](const std::string& what) {
    throw std::invalid_argument(fmt::format("{}: {}", s.name, what));
  };
  if (p.tp < 1 || p.cp < 1 || p.ep < 1)
    fail(fmt::format("tp {}, cp {}, ep {} must be >= 1", p.tp, p.cp, p.ep));
  if (p.batch < 1 || p.seq < 1)
    fail(fmt::format("micro-batch {} and sequence {} must be >= 1", p.batch, p.seq));
  if (s.heads % p.tp) fail(fmt::format("heads {} not divisible by tp {}", s.heads, p.tp));
  if (s.kv_heads >= p.tp ? s.kv_heads % p.tp != 0 : p.tp % s.kv_heads != 0)
    fail(fmt::format("kv_heads {} and tp {}: one must divide the other", s.kv_heads, p.tp));
  if (s.ffn % p.tp) fail(fmt::format("ffn {} not divisible by tp {}", s.ffn, p.tp));
  if (p.ep > 1 && !s.moe()) fail(fmt::format("ep {} needs a mixture-of-experts model", p.ep));
  if (s.moe() && s.experts % p.ep) fail(fmt::format("experts {} not divisible by ep {}", s.experts, p.ep));
  if (p.sequence_parallel && (p.batch * p.seq) % p.tp)
    fail(fmt::format("sequence parallelism: tokens {} not divisible by tp {}", p.batch * p.seq, p.tp));
}

ValueId decoder_layer(NetBuilder& b, ValueId x, const TransformerSpec& spec, const LayerPlan& p,
                      const RopeTables& rp, LayerNodes* nodes) {
  check_plan(spec, p);
  const Dims d{
      p.batch,        p.seq, p.seq * p.cp, spec.heads / p.tp, std::max<std::int64_t>(spec.kv_heads / p.tp, 1),
      spec.head_dim()};
  const std::int64_t ffn = spec.ffn / p.tp;
  LayerNodes local;
  LayerNodes* n = nodes ? nodes : &local;
  n->attn_begin = node_count(b);
  {
    const auto h =
        sp_gather(b, norm(b, x, spec.norm, spec.bias, spec.norm_eps, "attn_norm"), p, "attn.sp_gather", n);
    const auto a = sp_scatter(b, attention_block(b, h, spec, d, true, rp, n), p, "attn.sp_scatter", n);
    x = b.add(x, a, "attn_residual");
  }
  n->attn_end = n->mlp_begin = node_count(b);
  const auto h =
      sp_gather(b, norm(b, x, spec.norm, spec.bias, spec.norm_eps, "mlp_norm"), p, "mlp.sp_gather", n);
  ValueId m;
  {
    auto ms = b.scope("mlp");
    m = spec.moe() ? moe_block(b, h, spec, p, ffn, n) : dense_mlp(b, h, spec, ffn);
  }
  x = b.add(x, sp_scatter(b, m, p, "mlp.sp_scatter", n), "mlp_residual");
  n->mlp_end = node_count(b);
  return x;
}

// BERT's encoder attention (bidirectional, naive, biases): the same block.
ValueId encoder_attention(NetBuilder& b, ValueId x, std::int64_t batch, std::int64_t seq, std::int64_t hidden,
                          std::int64_t heads) {
  TransformerSpec spec;
  spec.hidden = hidden;
  spec.heads = spec.kv_heads = heads;
  spec.attention = AttentionImpl::kNaive;
  spec.bias = true;
  const Dims d{batch, seq, seq, heads, heads, hidden / heads};
  return attention_block(b, x, spec, d, false, {}, nullptr);
}

}  // namespace strata::models::zoo
