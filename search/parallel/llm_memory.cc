#include "search/parallel/llm_memory.h"

#include <algorithm>

#include "search/parallel/schedule.h"

namespace strata::search::parallel {

using models::zoo::AttentionImpl;
using models::zoo::MlpActivation;

double layer_activation_bytes(const models::zoo::TransformerSpec& spec, const LlmStrategy& st,
                              Recompute recompute) {
  const double s = static_cast<double>(spec.seq) / st.cp, b = st.micro_batch,
               h = static_cast<double>(spec.hidden);
  const double t = st.tp, a = static_cast<double>(spec.heads);
  const double sbh = s * b * h;
  const double replicated_div = st.sequence_parallel ? t : 1.0;
  if (recompute == Recompute::kFull) return 2 * sbh / replicated_div;
  const double kv = static_cast<double>(spec.kv_heads) / a;
  const double f = static_cast<double>(spec.ffn);
  const double top_k = spec.moe() ? static_cast<double>(spec.top_k) : 1.0;
  const double inner = spec.act == MlpActivation::kSwiglu ? 3.0 : 2.0;
  const double replicated = 10 * sbh;
  double split = (2 + 4 * kv + 2) * sbh + top_k * inner * 2 * s * b * f;
  if (spec.moe()) split += 2 * sbh * top_k;
  if (spec.attention == AttentionImpl::kNaive && recompute == Recompute::kNone)
    split += 5 * a * s * static_cast<double>(spec.seq) * b;
  return replicated / replicated_div + split / t;
}

StateBytes zero_state_bytes(int zero, double d) {
  switch (zero) {
    case 1:
      return {2, 2, 12 / d};
    case 2:
      return {2, 2 / d, 12 / d};
    case 3:
      return {2 / d, 2 / d, 12 / d};
    default:
      return {2, 2, 12};
  }
}

StageParams stage_params(const models::zoo::TransformerSpec& spec, const LlmStrategy& st,
                         const models::zoo::LayerCost& layer, const models::zoo::EdgeCost& edge, int stage) {
  const double layers = static_cast<double>(spec.layers) / st.pp;
  StageParams p;
  p.dense = layers * (layer.params - layer.expert_params);
  p.expert = layers * layer.expert_params;
  if (stage == 0) p.dense += edge.embed_params;
  if (stage == st.pp - 1) {
    p.dense += edge.head_params;
    // Tied embeddings: the last stage keeps its own copy of the table for the output layer.
    if (spec.tied_embeddings && st.pp > 1) p.dense += edge.embed_params;
  }
  return p;
}

MemoryBreakdown stage_memory(const models::zoo::TransformerSpec& spec, const LlmStrategy& st,
                             const models::zoo::LayerCost& layer, const models::zoo::EdgeCost& edge,
                             int stage) {
  MemoryBreakdown m;
  m.stage = stage;
  const auto params = stage_params(spec, st, layer, edge, stage);
  const double d_dense = static_cast<double>(st.dp) * st.cp;
  const double d_expert = std::max(1.0, d_dense / st.ep);
  const auto dense = zero_state_bytes(st.zero, d_dense), expert = zero_state_bytes(st.zero, d_expert);
  m.weights = params.dense * dense.weights + params.expert * expert.weights;
  m.gradients = params.dense * dense.gradients + params.expert * expert.gradients;
  m.optimizer = params.dense * dense.optimizer + params.expert * expert.optimizer;
  // Activations: chunk passes in flight x layers per chunk x bytes per layer.
  const int v = st.virtual_stages;
  const auto m_batches = static_cast<int>(st.micro_batches());
  const int in_flight = peak_in_flight(st.schedule, st.pp, stage, m_batches, v);
  const double layers_per_chunk = static_cast<double>(spec.layers) / (st.pp * v);
  m.activations = in_flight * layers_per_chunk * layer_activation_bytes(spec, st, st.recompute);
  // Recomputation rebuilds one layer's full activations during its backward pass.
  if (st.recompute != Recompute::kNone) m.activations += layer_activation_bytes(spec, st, Recompute::kNone);
  const double s = static_cast<double>(spec.seq) / st.cp, b = st.micro_batch;
  // The last stage's logits for the cross-entropy (fp32, vocabulary split by tp), one micro-batch at a time.
  if (stage == st.pp - 1) m.activations += 4 * s * b * static_cast<double>(spec.vocab) / st.tp;
  // NCCL keeps a send and a receive buffer per channel in every communicator a rank is part of (tp, pp, dp,
  // cp, ep: those larger than one); 16 channels each. ZeRO-3 holds two gathered layers (current + prefetch).
  int communicators = 0;
  for (int n : {st.tp, st.pp, st.dp, st.cp, st.ep}) communicators += n > 1 ? 1 : 0;
  m.comm_buffers = communicators * 2 * 16 * kNcclBufferBytes;
  if (st.zero == 3) m.comm_buffers += 2 * 2 * layer.params;
  m.reserve = kRuntimeReserveBytes;
  return m;
}

MemoryBreakdown llm_memory(const models::zoo::TransformerSpec& spec, const LlmStrategy& st,
                           const models::zoo::LayerCost& layer, const models::zoo::EdgeCost& edge) {
  MemoryBreakdown best;
  for (int stage = 0; stage < st.pp; ++stage) {
    const auto m = stage_memory(spec, st, layer, edge, stage);
    if (stage == 0 || m.total() > best.total()) best = m;
  }
  return best;
}

}  // namespace strata::search::parallel
