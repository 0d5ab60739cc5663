// One decoder layer on one GPU's shard, and what it costs: the layer's graph with tensor (Megatron column/row
// splits, Shoeybi et al. 2019, arXiv 1909.08053), sequence (Korthikanti et al. 2022, arXiv 2205.05198),
// context (queries on seq/cp rows, keys and values of the whole sequence) and expert parallelism applied,
// turned into its training graph (models/train), every kernel costed on the GPU by the CostModel and summed
// per phase. The collectives between the pieces (TP all-reduce / reduce-scatter + all-gather, CP key/value
// exchange, EP all-to-all) are not in these costs: the step simulator (search/parallel) puts them on the
// network. Graph pieces that only stand in for a collective (a gathered tensor's copy, a scattered tensor's
// part) are excluded from the sums together with their gradients. docs/models.md, "Layer costs".
#pragma once

#include <cstdint>

#include "hw/gpu_spec.h"
#include "models/cost/cost_model.h"
#include "models/zoo/transformer_spec.h"

namespace strata::models::zoo {

struct LayerShard {                       // one GPU's share of one transformer layer for one micro-batch
  std::int64_t micro_batch = 1, seq = 0;  // seq: the local sequence length (seq / cp)
  int tp = 1, cp = 1, ep = 1;             // ep: expert-parallel size (MoE layers only)
  bool sequence_parallel = false;         // norms / residual adds on tokens/tp rows
};
struct PhaseCost {
  double seconds = 0, flops = 0, bytes = 0;
  int kernels = 0;
};
struct LayerCost {  // one layer, one micro-batch, one GPU
  PhaseCost attn_fwd, mlp_fwd, attn_bwd,
      mlp_bwd;               // mlp = dense MLP or the MoE block (router + local experts)
  PhaseCost attn_core_fwd;   // the attention core alone (selective recomputation re-runs it)
  PhaseCost attn_core_bwd;   // its backward kernels (part of attn_bwd; context parallelism splits it)
  double params = 0;         // parameters this GPU holds for the layer (TP/EP shard)
  double expert_params = 0;  // of which expert weights (MoE)
};
// Throws std::invalid_argument when the shard does not divide the model (heads % tp, ffn % tp, experts % ep,
// ...).
LayerCost layer_cost(const TransformerSpec&, const LayerShard&, hw::DType, const CostModel&);

struct EdgeCost {
  PhaseCost embed_fwd, embed_bwd, head_fwd, head_bwd;
  double embed_params = 0, head_params = 0;
};
// vocab split by tp (rounded up: Megatron pads the vocabulary); head includes the final norm and the (fused)
// cross-entropy on b·s·V/tp logits. With tied embeddings head_params holds the final norm only (the output
// projection is the embedding table; a pipeline's last stage keeps a copy, which the caller counts). fp8:
// both edges in bf16.
EdgeCost edge_cost(const TransformerSpec&, const LayerShard&, hw::DType, const CostModel&);

// The graph layer_cost costs (forward only; for inspection and tests): input x [tokens(/tp with SP), hidden],
// output the layer's output.
Graph build_layer_shard(const TransformerSpec&, const LayerShard&, hw::DType);

}  // namespace strata::models::zoo
