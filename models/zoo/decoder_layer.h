// The decoder layer builder shared by the whole-model graph (models/zoo/transformer.cc) and one GPU's layer
// shard (models/zoo/transformer_layer.cc): one construction, so the shard costed for the step simulator is
// the same layer the zoo builds, split. Internal to models/zoo.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/zoo/builder.h"
#include "models/zoo/transformer_spec.h"

namespace strata::models::zoo {

// What one GPU builds of a layer. The whole model: tp = cp = ep = 1, no sequence parallelism.
struct LayerPlan {
  std::int64_t batch = 1, seq = 1;  // seq: local query rows per sequence (seq / cp)
  int tp = 1, cp = 1, ep = 1;
  bool sequence_parallel = false;
};

// Where the layer's nodes went, as node-id ranges [begin, end) of the graph, recorded while building.
struct LayerNodes {
  NodeId attn_begin = 0, attn_end = 0;  // attention norm, attention block, residual add
  NodeId core_begin = 0, core_end = 0;  // the attention core (scores, softmax, context / the fused op)
  NodeId mlp_begin = 0, mlp_end = 0;    // MLP norm, MLP or MoE block, residual add
  std::vector<NodeId> standins;         // nodes that only stand in for a collective (not costed)
  double expert_params = 0;             // parameters created for experts
};

struct RopeTables {
  ValueId cos = kNoValue, sin = kNoValue, minus_one = kNoValue;
};
// cos/sin tables [seq, head_dim] of rotary embeddings (Su et al. 2021, arXiv 2104.09864), base 10000.
RopeTables rope_tables(Graph& g, std::int64_t seq, std::int64_t head_dim, DType dtype);

// LayerNorm (with beta when `bias`) or RMSNorm over the last dim.
ValueId norm(NetBuilder& b, ValueId x, NormKind kind, bool bias, double eps, const std::string& leaf);

// One decoder layer on x [tokens, hidden] (tokens / tp rows with sequence parallelism); returns its output of
// x's shape. Throws std::invalid_argument when the plan does not divide the spec.
ValueId decoder_layer(NetBuilder& b, ValueId x, const TransformerSpec& spec, const LayerPlan& plan,
                      const RopeTables& rope, LayerNodes* nodes = nullptr);

// BERT's bidirectional encoder attention (naive, biases) on x [batch * seq, hidden]: the same attention
// block.
ValueId encoder_attention(NetBuilder& b, ValueId x, std::int64_t batch, std::int64_t seq, std::int64_t hidden,
                          std::int64_t heads);

// Throws std::invalid_argument naming what does not divide (heads % tp, kv_heads vs tp, ffn % tp, experts %
// ep).
void check_plan(const TransformerSpec& spec, const LayerPlan& plan);

}  // namespace strata::models::zoo
