// Transformers. Activations are kept as 2-D [tokens, hidden] around linear layers (TASO's layout for BERT,
// so matmuls that share an input can be merged) and as [batch, heads, seq, head_dim] inside attention.
// BERT-base follows Devlin et al. 2019 (incl. the pooler); the decoder covers GPT-3 (Brown et al. 2020,
// Table 2.1: LayerNorm, GELU MLP, learned positions, tied embeddings, biases) and LLaMA (Touvron et al.
// 2023: RMSNorm, SwiGLU MLP, rotary positions, no biases, untied output head).
#include <cmath>

#include <fmt/format.h>

#include "models/zoo/builder.h"
#include "models/zoo/zoo.h"

namespace strata::models::zoo {
namespace {

struct Dims {
  std::int64_t batch, seq, hidden, heads;
  std::int64_t tokens() const { return batch * seq; }
  std::int64_t head_dim() const { return hidden / heads; }
};

ValueId norm(NetBuilder& b, ValueId x, bool rms, bool bias, double eps, const std::string& leaf) {
  const std::int64_t h = b.shape(x).back();
  if (rms) return b.op("rmsnorm", {x, b.param(leaf + ".weight", {h})}, {{"epsilon", eps}}, leaf);
  std::vector<ValueId> in = {x, b.param(leaf + ".weight", {h})};
  if (bias) in.push_back(b.param(leaf + ".bias", {h}));
  return b.op("layernorm", in, {{"epsilon", eps}}, leaf);
}

// Rotary embedding on [B, H, S, D]: x * cos + rotate_half(x) * sin, rotate_half(x) = [-x2, x1].
ValueId rope(NetBuilder& b, ValueId x, const Dims& d, ValueId cos, ValueId sin, ValueId minus_one,
             const std::string& leaf) {
  const std::int64_t half = d.head_dim() / 2;
  const auto parts = b.graph().add_node(
      "split", {x}, {{"axis", std::int64_t{3}}, {"sizes", Ints{half, half}}}, b.name(leaf + ".split"));
  const auto neg = b.op("scalar_mul", {parts[1], minus_one}, {}, leaf + ".neg");
  const auto rot = b.concat({neg, parts[0]}, 3, leaf + ".rotate");
  return b.add(b.mul(x, cos, leaf + ".cos"), b.mul(rot, sin, leaf + ".sin"), leaf);
}

struct Rope {
  ValueId cos = kNoValue, sin = kNoValue, minus_one = kNoValue;
};

ValueId attention(NetBuilder& b, ValueId x, const Dims& d, bool bias, bool causal, const Rope& rp) {
  auto s = b.scope("attn");
  const std::int64_t dh = d.head_dim();
  auto heads = [&](ValueId v, Ints perm, const std::string& n) {
    return b.transpose(b.reshape(v, {d.batch, d.seq, d.heads, dh}, n + ".split_heads"), std::move(perm),
                       n + ".to_heads");
  };
  ValueId q = heads(b.linear(x, d.hidden, bias, "q"), {0, 2, 1, 3}, "q");
  ValueId k = heads(b.linear(x, d.hidden, bias, "k"), {0, 2, 1, 3}, "k");
  const ValueId v = heads(b.linear(x, d.hidden, bias, "v"), {0, 2, 1, 3}, "v");
  if (rp.cos != kNoValue) {
    q = rope(b, q, d, rp.cos, rp.sin, rp.minus_one, "q.rope");
    k = rope(b, k, d, rp.cos, rp.sin, rp.minus_one, "k.rope");
  }
  auto scores = b.op("batch_matmul", {q, k}, {{"trans_b", std::int64_t{1}}}, "scores");
  scores =
      b.op("scalar_mul", {scores, b.scalar("scale", 1.0 / std::sqrt(static_cast<double>(dh)))}, {}, "scale");
  const auto probs =
      b.op("softmax", {scores}, {{"axis", std::int64_t{-1}}, {"causal", std::int64_t{causal}}}, "softmax");
  auto ctx = b.op("batch_matmul", {probs, v}, {}, "context");
  ctx = b.transpose(ctx, {0, 2, 1, 3}, "merge_heads");
  ctx = b.reshape(ctx, {d.tokens(), d.hidden}, "merge_heads.reshape");
  return b.linear(ctx, d.hidden, bias, "out");
}

std::vector<double> positions(std::int64_t seq) {
  std::vector<double> p(static_cast<std::size_t>(seq));
  for (std::int64_t i = 0; i < seq; ++i) p[static_cast<std::size_t>(i)] = static_cast<double>(i);
  return p;
}

}  // namespace

Graph build_bert(const ZooOptions& o, std::int64_t layers, std::int64_t hidden, std::int64_t heads,
                 std::int64_t ffn) {
  Graph g("bert-base");
  NetBuilder b(g, o.dtype);
  const Dims d{o.batch > 0 ? o.batch : 1, o.seq_len > 0 ? o.seq_len : 128, hidden, heads};
  if (d.seq > 512) throw std::invalid_argument("bert-base: sequence length at most 512 (learned positions)");
  const auto ids = b.input("input_ids", {d.batch, d.seq}, DType::kI64);
  const auto types = b.input("token_type_ids", {d.batch, d.seq}, DType::kI64);
  const auto pos = g.add_constant("position_ids", {{d.seq}, DType::kI64}, positions(d.seq));
  ValueId x;
  {
    auto s = b.scope("embeddings");
    const auto we = b.op("embedding", {b.param("word_embeddings", {30522, hidden}), ids}, {}, "word");
    const auto te =
        b.op("embedding", {b.param("token_type_embeddings", {2, hidden}), types}, {}, "token_type");
    const auto pe = b.op("embedding", {b.param("position_embeddings", {512, hidden}), pos}, {}, "position");
    x = b.add(b.add(we, te, "add_type"), pe, "add_position");
    x = b.reshape(x, {d.tokens(), hidden}, "flatten");
    x = norm(b, x, false, true, 1e-12, "LayerNorm");
  }
  for (std::int64_t l = 0; l < layers; ++l) {
    auto s = b.scope("encoder.layer." + std::to_string(l));
    x = norm(b, b.add(x, attention(b, x, d, true, false, {}), "attn_residual"), false, true, 1e-12,
             "attn_norm");
    auto h = b.op("gelu", {b.linear(x, ffn, true, "intermediate")}, {}, "gelu");
    x = norm(b, b.add(x, b.linear(h, hidden, true, "output"), "ffn_residual"), false, true, 1e-12,
             "ffn_norm");
  }
  g.mark_output(x);
  {
    auto s = b.scope("pooler");
    const auto rows = b.reshape(x, {d.batch, d.seq * hidden}, "rows");
    const auto cls = g.add_node("split", {rows},
                                {{"axis", std::int64_t{1}}, {"sizes", Ints{hidden, (d.seq - 1) * hidden}}},
                                b.name("cls"))[0];
    g.mark_output(b.op("tanh", {b.linear(cls, hidden, true, "dense")}, {}, "tanh"));
  }
  return g;
}

Graph build_decoder(const std::string& name, const DecoderConfig& c, const ZooOptions& o) {
  Graph g(name);
  NetBuilder b(g, o.dtype);
  const Dims d{o.batch > 0 ? o.batch : 1, o.seq_len > 0 ? o.seq_len : c.max_seq, c.hidden, c.heads};
  if (c.hidden % c.heads)
    throw std::invalid_argument(name + ": hidden size must be a multiple of the head count");
  if (!c.rope && d.seq > c.max_seq)
    throw std::invalid_argument(
        fmt::format("{}: sequence length {} exceeds the {} learned positions", name, d.seq, c.max_seq));
  const auto ids = b.input("input_ids", {d.batch, d.seq}, DType::kI64);
  const auto wte = b.param("wte", {c.vocab, c.hidden});
  ValueId x = b.op("embedding", {wte, ids}, {}, "embed_tokens");
  if (!c.rope) {
    const auto pos = g.add_constant("position_ids", {{d.seq}, DType::kI64}, positions(d.seq));
    x = b.add(x, b.op("embedding", {b.param("wpe", {c.max_seq, c.hidden}), pos}, {}, "embed_positions"),
              "add_positions");
  }
  x = b.reshape(x, {d.tokens(), c.hidden}, "flatten");
  Rope rp;
  if (c.rope) {
    const std::int64_t dh = d.head_dim(), half = dh / 2;
    std::vector<double> cs(static_cast<std::size_t>(d.seq * dh)), sn(cs.size());
    for (std::int64_t p = 0; p < d.seq; ++p)
      for (std::int64_t i = 0; i < dh; ++i) {
        const double theta = static_cast<double>(p) * std::pow(10000.0, -2.0 * static_cast<double>(i % half) /
                                                                            static_cast<double>(dh));
        cs[static_cast<std::size_t>(p * dh + i)] = std::cos(theta);
        sn[static_cast<std::size_t>(p * dh + i)] = std::sin(theta);
      }
    rp.cos = g.add_constant("rope.cos", {{d.seq, dh}, o.dtype}, std::move(cs));
    rp.sin = g.add_constant("rope.sin", {{d.seq, dh}, o.dtype}, std::move(sn));
    rp.minus_one = g.add_constant("rope.minus_one", {{}, o.dtype}, {-1.0});
  }
  for (std::int64_t l = 0; l < c.layers; ++l) {
    auto s = b.scope("layers." + std::to_string(l));
    x = b.add(x, attention(b, norm(b, x, c.rmsnorm, c.bias, c.norm_eps, "attn_norm"), d, c.bias, true, rp),
              "attn_residual");
    const auto h = norm(b, x, c.rmsnorm, c.bias, c.norm_eps, "mlp_norm");
    ValueId m;
    {
      auto ms = b.scope("mlp");
      if (c.swiglu) {
        const auto gate = b.op("silu", {b.linear(h, c.ffn, c.bias, "gate")}, {}, "silu");
        m = b.linear(b.mul(gate, b.linear(h, c.ffn, c.bias, "up"), "gated"), c.hidden, c.bias, "down");
      } else {
        m = b.linear(b.op("gelu", {b.linear(h, c.ffn, c.bias, "fc")}, {}, "gelu"), c.hidden, c.bias, "proj");
      }
    }
    x = b.add(x, m, "mlp_residual");
  }
  x = norm(b, x, c.rmsnorm, c.bias, c.norm_eps, "final_norm");
  const ValueId head = c.tied_embeddings ? wte : b.param("lm_head", {c.vocab, c.hidden});
  g.mark_output(b.op("matmul", {x, head}, {{"trans_b", std::int64_t{1}}}, "lm_head"));
  return g;
}

}  // namespace strata::models::zoo
