// Per-GPU memory of an LLM strategy: model state under each ZeRO stage (Rajbhandari et al. SC'20, arXiv
// 1910.02054: 2 B weights + 2 B gradients + 12 B fp32 Adam state per parameter), activations per layer and
// micro-batch generalised from Korthikanti et al. 2022 (arXiv 2205.05198, Table 2) to any head/FFN shape,
// times the chunk passes the pipeline schedule keeps in flight, plus communication buffers and a runtime
// reserve. docs/parallel.md, "Memory".
#pragma once
#include "models/zoo/transformer_layer.h"
#include "models/zoo/transformer_spec.h"
#include "search/parallel/strategy.h"

namespace strata::search::parallel {

// Bytes of activations one layer keeps for its backward pass, for one micro-batch on one GPU.
// Korthikanti et al.'s terms with s the local sequence (seq / cp), h hidden, a heads, t = tp:
//  replicated across TP ranks (divided by t with sequence parallelism): both norms' inputs 4sbh, the QKV and
//    MLP inputs 2sbh each, two dropout masks sbh each: 10sbh;
//  split across TP ranks (/t): Q 2sbh, K and V 2sbh x kv_heads/heads each, the output projection's input
//    2sbh, the MLP's inner tensors 2sbf each (GELU: its input and the second GEMM's input, 2; SwiGLU: gate,
//    up and their product, 3), x top_k for MoE plus the dispatched input 2sbh x top_k;
//  naive attention only: the score terms 5 a s^2 b / t (FlashAttention does not store them; selective
//    recomputation drops them).
//  full recomputation keeps only the layer input, 2sbh (/t with sequence parallelism).
// For GPT (f = 4h, kv = a) this is exactly Table 2: sbh(10 + 24/t + 5as/(ht)), sbh(34/t + ...) with SP, ...
double layer_activation_bytes(const models::zoo::TransformerSpec& spec, const LlmStrategy& st,
                              Recompute recompute);

struct MemoryBreakdown {
  double weights = 0, gradients = 0, optimizer = 0;  // model state (after ZeRO sharding)
  double activations = 0;                            // in-flight micro-batches x kept activations
  double comm_buffers = 0;                           // NCCL channel buffers + gathered ZeRO-3 layers
  double reserve = 0;                                // CUDA context, library workspaces (fixed)
  double total() const { return weights + gradients + optimizer + activations + comm_buffers + reserve; }
  int stage = 0;  // the pipeline stage this is (the one with the peak, when returned by llm_memory)
};

// A GPU's parameters on one stage: dense (sharded over dp x cp by ZeRO) and expert (over dp x cp / ep).
struct StageParams {
  double dense = 0, expert = 0;
};
StageParams stage_params(const models::zoo::TransformerSpec& spec, const LlmStrategy& st,
                         const models::zoo::LayerCost& layer, const models::zoo::EdgeCost& edge, int stage);

// Memory of every stage; the returned breakdown is the largest (ties: the earliest stage).
MemoryBreakdown llm_memory(const models::zoo::TransformerSpec& spec, const LlmStrategy& st,
                           const models::zoo::LayerCost& layer, const models::zoo::EdgeCost& edge);
MemoryBreakdown stage_memory(const models::zoo::TransformerSpec& spec, const LlmStrategy& st,
                             const models::zoo::LayerCost& layer, const models::zoo::EdgeCost& edge,
                             int stage);

// Bytes per parameter of model state on a GPU under a ZeRO stage with sharding degree d (weights, gradients,
// optimizer state): ZeRO paper section 5.
struct StateBytes {
  double weights, gradients, optimizer;
};
StateBytes zero_state_bytes(int zero, double d);

inline constexpr double kRuntimeReserveBytes = 1.0 * (1ull << 30);  // CUDA context + cuBLAS/NCCL workspaces
inline constexpr double kNcclBufferBytes = 4.0 * (1ull << 20);      // NCCL_BUFFSIZE default per channel

}  // namespace strata::search::parallel
