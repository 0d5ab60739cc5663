// Any decoder-only transformer by its dimensions: GPT-3 (Brown et al. 2020, Table 2.1), LLaMA / Llama 2
// (Touvron et al. 2023, arXiv 2302.13971 and 2307.09288: RMSNorm, SwiGLU, RoPE, grouped-query attention),
// Mixtral-style mixture-of-experts (Jiang et al. 2024, arXiv 2401.04088: top-k routed SwiGLU experts). One
// record for the zoo's decoders, the `transformer:key=value,...` model references of the command line and the
// model YAMLs under configs/models/ (docs/models.md lists the keys); parameter counts follow from the
// dimensions alone.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "models/ir/graph.h"

namespace strata::models::zoo {

enum class MlpActivation : std::uint8_t { kGelu, kSwiglu };
enum class NormKind : std::uint8_t { kLayerNorm, kRmsNorm };
// flash: one fused `attention` operator (scores never reach HBM); naive: batch_matmul, scale, softmax,
// batch_matmul with the S x S scores materialized.
enum class AttentionImpl : std::uint8_t { kFlash, kNaive };
enum class Positions : std::uint8_t { kLearned, kRope };

struct TransformerSpec {
  std::string name = "transformer";
  std::int64_t layers = 0, hidden = 0, heads = 0;
  std::int64_t kv_heads = 0;  // key/value heads (grouped-query attention); heads for multi-head attention
  std::int64_t ffn = 0;       // MLP inner size (per expert)
  std::int64_t vocab = 0;
  std::int64_t seq = 0;      // training sequence length (also the learned position table's size)
  std::int64_t experts = 0;  // 0 or 1: dense MLP; > 1: mixture of experts
  std::int64_t top_k = 1;    // experts per token (MoE)
  MlpActivation act = MlpActivation::kGelu;
  NormKind norm = NormKind::kLayerNorm;
  AttentionImpl attention = AttentionImpl::kFlash;
  Positions positions = Positions::kLearned;
  bool bias = true;  // biases in linear layers (and LayerNorm's beta)
  bool tied_embeddings = true;
  double norm_eps = 1e-5;

  std::int64_t head_dim() const { return hidden / heads; }
  std::int64_t kv_dim() const { return kv_heads * head_dim(); }
  bool moe() const { return experts > 1; }
};

// The ffn default: 4 h for GELU; for SwiGLU LLaMA's rule, 2/3 of 4 h rounded up to a multiple of 256.
std::int64_t default_ffn(std::int64_t hidden, MlpActivation act);

// What is wrong with a spec (cross-key rules: hidden % heads, heads % kv_heads, top_k <= experts, ...): the
// key to blame and the message; nullopt when it is valid.
struct SpecProblem {
  std::string key, message;
};
std::optional<SpecProblem> check_spec(const TransformerSpec& spec);

// Parameter counts from the dimensions (the graph's parameter count equals them; tests check both).
struct TransformerParams {
  double per_layer = 0;         // one layer, every expert
  double per_layer_active = 0;  // one layer, top_k experts (= per_layer for dense models)
  double embedding = 0;         // token (+ learned position) embeddings
  double head = 0;              // final norm + output projection (0 for the projection when tied)
  double total = 0;             // layers x per_layer + embedding + head
  double active = 0;            // layers x per_layer_active + embedding + head
};
TransformerParams transformer_params(const TransformerSpec& spec);

// `transformer:layers=96,hidden=12288,heads=96,vocab=51200,seq=2048[,key=value...]`. Throws
// std::invalid_argument naming the key and what was expected (unknown, missing, repeated, non-integer, out of
// range, cross-key rules).
TransformerSpec parse_transformer_spec(std::string_view text);
inline constexpr std::string_view kTransformerPrefix = "transformer:";
// A model YAML (configs/models/<name>.yaml) with the same keys; throws ConfigError naming file, line and
// field.
TransformerSpec load_transformer_spec(const std::string& path);
TransformerSpec parse_transformer_yaml(std::string_view text, const std::string& source);
// "layers=96,hidden=12288,..." with every key (round-trips through parse_transformer_spec).
std::string format_transformer_spec(const TransformerSpec& spec);

// The forward graph: token ids [batch, seq] -> logits [batch * seq, vocab] (options.batch 0: 1;
// options.seq_len 0: spec.seq). Throws std::invalid_argument for an invalid spec or a sequence beyond the
// learned positions.
struct ZooOptions;
Graph build_transformer(const TransformerSpec& spec, const ZooOptions& options);

}  // namespace strata::models::zoo
