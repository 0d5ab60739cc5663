// Transformers. BERT-base follows Devlin et al. 2019 (incl. the pooler); decoders are built from a
// TransformerSpec (models/zoo/transformer_spec.h): GPT-3 (Brown et al. 2020, Table 2.1: LayerNorm, GELU MLP,
// learned positions, tied embeddings, biases), LLaMA (Touvron et al. 2023: RMSNorm, SwiGLU MLP, rotary
// positions, no biases, untied output head), grouped-query attention and mixtures of experts; the layer
// itself is models/zoo/decoder_layer.cc.
#include <cmath>

#include <fmt/format.h>

#include "models/zoo/builder.h"
#include "models/zoo/decoder_layer.h"
#include "models/zoo/zoo.h"

namespace strata::models::zoo {
namespace {

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
  const std::int64_t batch = o.batch > 0 ? o.batch : 1, seq = o.seq_len > 0 ? o.seq_len : 128;
  if (seq > 512) throw std::invalid_argument("bert-base: sequence length at most 512 (learned positions)");
  const auto ids = b.input("input_ids", {batch, seq}, DType::kI64);
  const auto types = b.input("token_type_ids", {batch, seq}, DType::kI64);
  const auto pos = g.add_constant("position_ids", {{seq}, DType::kI64}, positions(seq));
  ValueId x;
  {
    auto s = b.scope("embeddings");
    const auto we = b.op("embedding", {b.param("word_embeddings", {30522, hidden}), ids}, {}, "word");
    const auto te =
        b.op("embedding", {b.param("token_type_embeddings", {2, hidden}), types}, {}, "token_type");
    const auto pe = b.op("embedding", {b.param("position_embeddings", {512, hidden}), pos}, {}, "position");
    x = b.add(b.add(we, te, "add_type"), pe, "add_position");
    x = b.reshape(x, {batch * seq, hidden}, "flatten");
    x = norm(b, x, NormKind::kLayerNorm, true, 1e-12, "LayerNorm");
  }
  for (std::int64_t l = 0; l < layers; ++l) {
    auto s = b.scope("encoder.layer." + std::to_string(l));
    x = norm(b, b.add(x, encoder_attention(b, x, batch, seq, hidden, heads), "attn_residual"),
             NormKind::kLayerNorm, true, 1e-12, "attn_norm");
    auto h = b.op("gelu", {b.linear(x, ffn, true, "intermediate")}, {}, "gelu");
    x = norm(b, b.add(x, b.linear(h, hidden, true, "output"), "ffn_residual"), NormKind::kLayerNorm, true,
             1e-12, "ffn_norm");
  }
  g.mark_output(x);
  {
    auto s = b.scope("pooler");
    const auto rows = b.reshape(x, {batch, seq * hidden}, "rows");
    const auto cls =
        g.add_node("split", {rows}, {{"axis", std::int64_t{1}}, {"sizes", Ints{hidden, (seq - 1) * hidden}}},
                   b.name("cls"))[0];
    g.mark_output(b.op("tanh", {b.linear(cls, hidden, true, "dense")}, {}, "tanh"));
  }
  return g;
}

Graph build_transformer(const TransformerSpec& c, const ZooOptions& o) {
  if (const auto problem = check_spec(c))
    throw std::invalid_argument(fmt::format("{}: {}: {}", c.name, problem->key, problem->message));
  Graph g(c.name);
  NetBuilder b(g, o.dtype);
  const std::int64_t batch = o.batch > 0 ? o.batch : 1, seq = o.seq_len > 0 ? o.seq_len : c.seq;
  const bool rope = c.positions == Positions::kRope;
  if (!rope && seq > c.seq)
    throw std::invalid_argument(
        fmt::format("{}: sequence length {} exceeds the {} learned positions", c.name, seq, c.seq));
  const auto ids = b.input("input_ids", {batch, seq}, DType::kI64);
  const auto wte = b.param("wte", {c.vocab, c.hidden});
  ValueId x = b.op("embedding", {wte, ids}, {}, "embed_tokens");
  if (!rope) {
    const auto pos = g.add_constant("position_ids", {{seq}, DType::kI64}, positions(seq));
    x = b.add(x, b.op("embedding", {b.param("wpe", {c.seq, c.hidden}), pos}, {}, "embed_positions"),
              "add_positions");
  }
  x = b.reshape(x, {batch * seq, c.hidden}, "flatten");
  const RopeTables rp = rope ? rope_tables(g, seq, c.head_dim(), o.dtype) : RopeTables{};
  const LayerPlan plan{batch, seq, 1, 1, 1, false};
  for (std::int64_t l = 0; l < c.layers; ++l) {
    auto s = b.scope("layers." + std::to_string(l));
    x = decoder_layer(b, x, c, plan, rp);
  }
  x = norm(b, x, c.norm, c.bias, c.norm_eps, "final_norm");
  const ValueId head = c.tied_embeddings ? wte : b.param("lm_head", {c.vocab, c.hidden});
  g.mark_output(b.op("matmul", {x, head}, {{"trans_b", std::int64_t{1}}}, "lm_head"));
  return g;
}

}  // namespace strata::models::zoo
