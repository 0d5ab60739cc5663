// One decoder layer on one GPU's shard: FLOPs against the Megatron-LM hand formulas (Narayanan et al. SC'21,
// §5.1: 24 b s h^2 + 4 b s^2 h per layer forward, 2x that backward for the GEMMs), tensor-parallel splits,
// parameters per GPU, MoE active FLOPs, and the phase bookkeeping (every backward node counted once,
// stand-ins excluded).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "hw/gpu_spec.h"
#include "models/cost/cost_model.h"
#include "models/exec/executor.h"
#include "models/train/training.h"
#include "models/zoo/transformer_layer.h"

namespace strata::models::zoo {
namespace {

const CostModel& h100() {
  static const CostModel cm(*hw::find_gpu("h100-sxm"));
  return cm;
}

TransformerSpec gpt(std::int64_t h, std::int64_t heads, AttentionImpl attn) {
  auto s = parse_transformer_spec(
      fmt::format("transformer:layers=4,hidden={},heads={},vocab=1024,seq=512", h, heads));
  s.attention = attn;
  return s;
}

// GEMM FLOPs (contraction nodes) of a shard, forward and backward.
struct GemmFlops {
  double fwd = 0, bwd = 0;
};
GemmFlops gemm_flops(const TransformerSpec& spec, const LayerShard& shard) {
  const Graph g = build_layer_shard(spec, shard, hw::DType::kBf16);
  TrainOptions opt;
  opt.optimizer = Optimizer::kNone;
  opt.input_grads = true;
  const auto tg = derive_training_graph(g, opt);
  GemmFlops f;
  for (NodeId n = 0; n < static_cast<NodeId>(tg.graph.nodes().size()); ++n) {
    const auto& node = tg.graph.node(n);
    if (node.op->kind != OpKind::kContraction) continue;
    (n < tg.num_forward_nodes ? f.fwd : f.bwd) += node_flops(tg.graph, node);
  }
  return f;
}

TEST(LayerCost, GemmFlopsFollowMegatronFormulaAndSplitByTp) {
  const std::int64_t h = 1024, b = 2, s = 512;
  const auto spec = gpt(h, 16, AttentionImpl::kNaive);
  const double bh = static_cast<double>(b), sd = static_cast<double>(s), hd = static_cast<double>(h);
  const double forward = 24 * bh * sd * hd * hd + 4 * bh * sd * sd * hd;
  for (int tp : {1, 2, 4, 8}) {
    SCOPED_TRACE(tp);
    const auto f = gemm_flops(spec, {.micro_batch = b, .seq = s, .tp = tp});
    EXPECT_DOUBLE_EQ(f.fwd, forward / tp);
    EXPECT_DOUBLE_EQ(f.bwd, 2 * forward / tp);
  }
}

// All forward FLOPs of a GPT-3 layer (naive attention) by hand, T = b s tokens, H heads, t = tp: 2 LayerNorms
// (8 flops per element) and 2 residual adds on T h (replicated), the row-parallel biases (out, fc2) on T h,
// GEMMs (24 T h^2 + 4 T s h) / t, column-parallel biases 7 T h / t, GELU 8 x 4 T h / t, score scaling 1 and
// softmax 5 flops per score (T s H / t scores).
TEST(LayerCost, ForwardFlopsByHand) {
  const std::int64_t h = 512, heads = 8, b = 1, s = 256;
  const auto spec = gpt(h, heads, AttentionImpl::kNaive);
  const double T = b * s, hd = h, sd = s, H = heads;
  for (int tp : {1, 4}) {
    SCOPED_TRACE(tp);
    const auto c = layer_cost(spec, {.micro_batch = b, .seq = s, .tp = tp}, hw::DType::kBf16, h100());
    const double t = tp;
    const double expected =
        16 * T * hd + 2 * T * hd + 2 * T * hd +
        (24 * T * hd * hd + 4 * T * sd * hd + 7 * T * hd + 32 * T * hd + 6 * T * sd * H) / t;
    EXPECT_DOUBLE_EQ(c.attn_fwd.flops + c.mlp_fwd.flops, expected);
    // The attention core (scores, scale, softmax, context): 4 T s h / t GEMM + 6 T s H / t.
    EXPECT_DOUBLE_EQ(c.attn_core_fwd.flops, (4 * T * sd * hd + 6 * T * sd * H) / t);
    EXPECT_EQ(c.attn_core_fwd.kernels, 4);
    EXPECT_GT(c.attn_fwd.seconds, c.attn_core_fwd.seconds);
    EXPECT_GT(c.mlp_bwd.seconds, c.mlp_fwd.seconds);
  }
}

// Every node of the training graph lands in exactly one phase: the phase sums equal the graph's totals.
TEST(LayerCost, PhasesPartitionTheTrainingGraph) {
  const auto spec = gpt(256, 4, AttentionImpl::kFlash);
  const LayerShard shard{.micro_batch = 2, .seq = 64};
  const auto c = layer_cost(spec, shard, hw::DType::kBf16, h100());
  const Graph g = build_layer_shard(spec, shard, hw::DType::kBf16);
  TrainOptions opt;
  opt.optimizer = Optimizer::kNone;
  opt.input_grads = true;
  const auto tg = derive_training_graph(g, opt);
  double fwd = 0, bwd = 0, seconds = 0;
  for (NodeId n = 0; n < static_cast<NodeId>(tg.graph.nodes().size()); ++n) {
    const auto oc = h100().node_cost(tg.graph, tg.graph.node(n));
    (n < tg.num_forward_nodes ? fwd : bwd) += oc.flops;
    seconds += oc.seconds;
  }
  EXPECT_DOUBLE_EQ(c.attn_fwd.flops + c.mlp_fwd.flops, fwd);
  EXPECT_DOUBLE_EQ(c.attn_bwd.flops + c.mlp_bwd.flops, bwd);
  EXPECT_NEAR(c.attn_fwd.seconds + c.mlp_fwd.seconds + c.attn_bwd.seconds + c.mlp_bwd.seconds, seconds,
              1e-15);
  // Fused causal attention: 4 b s^2 h / 2 forward (one kernel), its backward 2.5x that in attn_bwd.
  const double core = 4.0 * 2 * 64 * 64 * 256 / 2;
  EXPECT_DOUBLE_EQ(c.attn_core_fwd.flops, core);
  EXPECT_EQ(c.attn_core_fwd.kernels, 1);
  EXPECT_DOUBLE_EQ(c.attn_core_bwd.flops, 2.5 * core);  // FlashAttention-2's backward: 5 GEMMs to 2
  EXPECT_EQ(c.attn_core_bwd.kernels, 1);
  // attn_bwd: the core's 2.5x plus dgrad and wgrad GEMMs of q, k, v, out (2 x 2 x 4 T h^2), etc.
  EXPECT_GT(c.attn_bwd.flops, 2.5 * core + 16.0 * 128 * 256 * 256);
}

// Parameters per GPU: GPT-3 layer 12 h^2 + 13 h; with tp = t, Megatron's split keeps the row-parallel biases
// (attention out, fc2) and both LayerNorms whole: 12 h^2 / t + 7 h / t + 6 h.
TEST(LayerCost, ParamsPerGpu) {
  const double h = 768;
  const auto spec = gpt(768, 12, AttentionImpl::kFlash);
  for (int tp : {1, 2, 4}) {
    const auto c = layer_cost(spec, {.micro_batch = 1, .seq = 32, .tp = tp}, hw::DType::kBf16, h100());
    EXPECT_DOUBLE_EQ(c.params, 12 * h * h / tp + 7 * h / tp + 6 * h) << tp;
    EXPECT_EQ(c.expert_params, 0);
  }
  EXPECT_DOUBLE_EQ(12 * h * h + 7 * h + 6 * h, transformer_params(spec).per_layer);
}

// Mixtral-shaped MoE (small): each GPU's experts process b s top_k tokens in all (balanced routing), whatever
// ep; expert GEMMs are 2 x 3 h f per token and expert; the router 2 T h E.
TEST(LayerCost, MoeActiveFlopsAndExpertParams) {
  const auto spec = parse_transformer_spec(
      "transformer:layers=2,hidden=256,heads=8,kv_heads=2,ffn=512,vocab=1000,seq=128,experts=8,top_k=2,act="
      "swiglu,"
      "norm=rmsnorm,positions=rope,bias=0,tied_embeddings=0");
  const double T = 2 * 128, h = 256, f = 512;
  for (int ep : {1, 2, 8}) {
    SCOPED_TRACE(ep);
    const LayerShard shard{.micro_batch = 2, .seq = 128, .ep = ep};
    const Graph g = build_layer_shard(spec, shard, hw::DType::kBf16);
    double expert = 0, router = 0;
    for (const auto& n : g.nodes()) {
      if (n.op->kind != OpKind::kContraction) continue;
      if (n.name.find(".experts.") != std::string::npos) expert += node_flops(g, n);
      if (n.name.find(".router") != std::string::npos) router += node_flops(g, n);
    }
    EXPECT_DOUBLE_EQ(expert, T * 2 * 2 * 3 * h * f);
    EXPECT_DOUBLE_EQ(router, 2 * T * h * 8);
    const auto c = layer_cost(spec, shard, hw::DType::kBf16, h100());
    EXPECT_DOUBLE_EQ(c.expert_params, 8.0 / ep * 3 * h * f);
    // attention (q, out: h^2; k, v: h x 64), 2 RMSNorms, router, local experts
    EXPECT_DOUBLE_EQ(c.params, 2 * h * h + 2 * h * 64 + 2 * h + 8 * h + c.expert_params);
  }
  EXPECT_THROW(layer_cost(spec, {.micro_batch = 1, .seq = 128, .ep = 3}, hw::DType::kBf16, h100()),
               std::invalid_argument);
}

// Context parallelism: local queries s / cp against all s keys: the fused core costs 1/cp of the whole causal
// attention; the key/value gather stand-ins are not costed. Sequence parallelism puts norms and residual adds
// on T / tp rows.
TEST(LayerCost, ContextAndSequenceParallelism) {
  const auto spec = gpt(512, 8, AttentionImpl::kFlash);
  const auto whole = layer_cost(spec, {.micro_batch = 1, .seq = 256}, hw::DType::kBf16, h100());
  const auto cp = layer_cost(spec, {.micro_batch = 1, .seq = 128, .cp = 2}, hw::DType::kBf16, h100());
  EXPECT_DOUBLE_EQ(cp.attn_core_fwd.flops, whole.attn_core_fwd.flops / 2);
  EXPECT_DOUBLE_EQ(cp.mlp_fwd.flops, whole.mlp_fwd.flops / 2);

  const double T = 256, h = 512;
  const auto tp = layer_cost(spec, {.micro_batch = 1, .seq = 256, .tp = 4}, hw::DType::kBf16, h100());
  const auto sp = layer_cost(spec, {.micro_batch = 1, .seq = 256, .tp = 4, .sequence_parallel = true},
                             hw::DType::kBf16, h100());
  // Two LayerNorms (8 flops / element) and two residual adds move from T to T/4 rows; the GEMMs stay.
  EXPECT_DOUBLE_EQ((tp.attn_fwd.flops + tp.mlp_fwd.flops) - (sp.attn_fwd.flops + sp.mlp_fwd.flops),
                   (2 * 8 + 2) * T * h * 3 / 4);
  EXPECT_EQ(tp.params, sp.params);
}

TEST(LayerCost, EdgesSplitTheVocabulary) {
  const auto spec = gpt(256, 4, AttentionImpl::kFlash);  // vocab 1024, seq 512, tied, learned positions
  const double T = 2 * 64, h = 256;
  for (int tp : {1, 4}) {
    const auto e = edge_cost(spec, {.micro_batch = 2, .seq = 64, .tp = tp}, hw::DType::kBf16, h100());
    EXPECT_DOUBLE_EQ(e.embed_params, 1024.0 / tp * h + 512 * h);
    EXPECT_DOUBLE_EQ(e.head_params, 2 * h);  // final LayerNorm; the projection is the tied embedding
    // logits GEMM 2 T h V / t; its backward dgrad + wgrad twice that.
    EXPECT_GE(e.head_fwd.flops, 2 * T * h * 1024 / tp);
    EXPECT_GE(e.head_bwd.flops, 4 * T * h * 1024 / tp);
    EXPECT_GT(e.embed_bwd.seconds, 0);
  }
  EXPECT_THROW(edge_cost(spec, {.micro_batch = 1, .seq = 64, .tp = 3}, hw::DType::kBf16, h100()),
               std::invalid_argument);
}

}  // namespace
}  // namespace strata::models::zoo

namespace strata::models::zoo {
namespace {

// fp8 (Transformer Engine style): the same FLOPs; the linear layers' GEMMs at H100's fp8 peak (twice bf16's),
// the attention core unchanged. A GEMM-bound MLP (h 8192, 4096 tokens) then takes a little over half the bf16
// time.
TEST(LayerCost, Fp8RunsLinearLayersAtTheFp8Peak) {
  const auto spec = gpt(8192, 64, AttentionImpl::kFlash);
  const LayerShard shard{.micro_batch = 2, .seq = 2048};
  const auto bf16 = layer_cost(spec, shard, hw::DType::kBf16, h100());
  const auto fp8 = layer_cost(spec, shard, hw::DType::kFp8, h100());
  EXPECT_DOUBLE_EQ(fp8.mlp_fwd.flops, bf16.mlp_fwd.flops);
  EXPECT_DOUBLE_EQ(fp8.attn_bwd.flops, bf16.attn_bwd.flops);
  EXPECT_DOUBLE_EQ(fp8.attn_core_fwd.seconds, bf16.attn_core_fwd.seconds);
  EXPECT_GT(fp8.mlp_fwd.seconds / bf16.mlp_fwd.seconds, 0.5);
  EXPECT_LT(fp8.mlp_fwd.seconds / bf16.mlp_fwd.seconds, 0.6);
  EXPECT_LT(fp8.mlp_bwd.seconds / bf16.mlp_bwd.seconds, 0.6);
  const auto e8 = edge_cost(spec, shard, hw::DType::kFp8, h100());
  const auto e16 = edge_cost(spec, shard, hw::DType::kBf16, h100());
  EXPECT_DOUBLE_EQ(e8.head_fwd.seconds, e16.head_fwd.seconds);  // the output layer stays in bf16
}

// The MoE block's routing, checked numerically (ep = 1): the block's output for token t must be
// sum_j p[t, e_j] * MLP_{e_j}(h_t) with e_j = (t * top_k + j) mod experts, computed here from the executed
// graph's router probabilities, normed input and expert weights.
TEST(LayerCost, MoeBlockRoutesTokensRoundRobin) {
  const auto spec = parse_transformer_spec(
      "transformer:layers=1,hidden=4,heads=2,ffn=3,vocab=10,seq=5,experts=3,top_k=2,bias=0");
  const Graph g = build_layer_shard(spec, {.micro_batch = 2, .seq = 5}, hw::DType::kFp32);
  const auto v = execute<double>(g);
  auto value = [&](const std::string& name) -> const std::vector<double>& {
    for (std::size_t i = 0; i < g.values().size(); ++i)
      if (g.values()[i].name == name) return v[i];
    throw std::runtime_error("no value " + name);
  };
  const auto& h = value("layers.0.mlp_norm");
  const auto& p = value("layers.0.mlp.router.softmax");
  const auto& out = value("layers.0.mlp.combine.sum");
  const std::int64_t T = 10, H = 4, F = 3, E = 3, K = 2;
  ASSERT_EQ(out.size(), static_cast<std::size_t>(T * H));
  auto gelu = [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); };
  for (std::int64_t t = 0; t < T; ++t)
    for (std::int64_t o = 0; o < H; ++o) {
      double want = 0;
      for (std::int64_t j = 0; j < K; ++j) {
        const std::int64_t e = (t * K + j) % E;
        const auto& w1 = value("layers.0.mlp.experts." + std::to_string(e) + ".fc.weight");    // [H, F]
        const auto& w2 = value("layers.0.mlp.experts." + std::to_string(e) + ".proj.weight");  // [F, H]
        double y = 0;
        for (std::int64_t f = 0; f < F; ++f) {
          double a = 0;
          for (std::int64_t i = 0; i < H; ++i)
            a += h[static_cast<std::size_t>(t * H + i)] * w1[static_cast<std::size_t>(i * F + f)];
          y += gelu(a) * w2[static_cast<std::size_t>(f * H + o)];
        }
        want += p[static_cast<std::size_t>(t * E + e)] * y;
      }
      EXPECT_NEAR(out[static_cast<std::size_t>(t * H + o)], want, 1e-12) << "token " << t << " output " << o;
    }
}

}  // namespace
}  // namespace strata::models::zoo
