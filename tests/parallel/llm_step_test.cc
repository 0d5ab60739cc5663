// The LLM step model against hand-derived values: Megatron's TP collectives per layer (Shoeybi et al. 2019:
// two all-reduces forward and two backward per layer; Korthikanti et al. 2022: with sequence parallelism an
// all-gather and a reduce-scatter per all-reduce), Korthikanti et al.'s Table 2 activation memory, the ZeRO
// paper's model-state figures, a data-parallel step against the ring all-reduce closed form, and the
// isolated-communication shortcut against full flow simulation.
#include <gtest/gtest.h>

#include "search/parallel/llm_step.h"
#include "sim/collective_runner.h"
#include "tests/test_systems.h"

namespace strata::search::parallel {
namespace {

using models::zoo::AttentionImpl;
using models::zoo::TransformerSpec;

TransformerSpec gpt(std::int64_t layers, std::int64_t hidden, std::int64_t heads, std::int64_t seq) {
  TransformerSpec s;
  s.name = "gpt-test";
  s.layers = layers, s.hidden = hidden, s.heads = heads, s.kv_heads = heads, s.ffn = 4 * hidden;
  s.vocab = 51200, s.seq = seq;
  return s;
}

// Per-GPU costs set by hand (the step model must only add, order and overlap them).
LlmCosts hand_costs(double attn_fwd, double mlp_fwd, double params) {
  LlmCosts c;
  c.layer.attn_fwd.seconds = attn_fwd;
  c.layer.mlp_fwd.seconds = mlp_fwd;
  c.layer.attn_bwd.seconds = 2 * attn_fwd;
  c.layer.mlp_bwd.seconds = 2 * mlp_fwd;
  c.layer.attn_core_fwd.seconds = attn_fwd / 4;
  c.layer.params = params;
  c.edge.embed_fwd.seconds = 1e-5, c.edge.embed_bwd.seconds = 1e-5;
  c.edge.head_fwd.seconds = 1e-5, c.edge.head_bwd.seconds = 1e-5;
  c.edge.embed_params = 1e6;
  return c;
}

int count_class(const StepDescription& d, const PassDescription& pass, CommClass cls, sim::CollectiveOp op) {
  int n = 0;
  for (const auto& seg : pass.segments)
    if (seg.kind == Segment::Kind::kComm && d.comms[static_cast<std::size_t>(seg.comm)].cls == cls &&
        d.comms[static_cast<std::size_t>(seg.comm)].op == op)
      ++n;
  return n;
}

StepDescription describe(const hw::Topology& topo, const TransformerSpec& spec, const LlmStrategy& st,
                         const LlmCosts& costs) {
  const std::vector<hw::Level> levels(topo.levels().begin(), topo.levels().end());
  const reduce::Placement placement(levels, {st.pp, st.dp, st.cp, st.tp}, megatron_placement(topo, st));
  const models::CostModel cost(topo.gpu());
  return describe_llm_step(spec, st, topo, cost, costs, placement, false);
}

TEST(LlmStep, TensorParallelCollectivesPerLayer) {
  const auto topo = test::uniform_switch(1, 2, 100, 100);
  const auto spec = gpt(4, 1024, 16, 1024);
  LlmStrategy st;
  st.tp = 2, st.global_batch = 4;
  const auto costs = hand_costs(1e-3, 2e-3, 1e6);
  using sim::CollectiveOp;
  auto d = describe(topo, spec, st, costs);
  // Two all-reduces per layer each way, plus the embedding's (forward), the loss's (forward) and the output
  // layer's input gradient (backward).
  EXPECT_EQ(count_class(d, d.fwd[0], CommClass::kTensor, CollectiveOp::kAllReduce), 2 * 4 + 2);
  EXPECT_EQ(count_class(d, d.bwd[0], CommClass::kTensor, CollectiveOp::kAllReduce), 2 * 4 + 1);
  for (const auto& c : d.comms)
    if (c.label == "tp allreduce") {
      EXPECT_DOUBLE_EQ(c.bytes, 1.0 * 1024 * 1024 * 2);  // b s h x 2 B
    }
  // Sequence parallelism: each all-reduce becomes an all-gather before and a reduce-scatter after.
  st.sequence_parallel = true;
  d = describe(topo, spec, st, costs);
  EXPECT_EQ(count_class(d, d.fwd[0], CommClass::kTensor, CollectiveOp::kAllGather),
            2 * 4 + 1);  // + head input
  EXPECT_EQ(count_class(d, d.fwd[0], CommClass::kTensor, CollectiveOp::kReduceScatter),
            2 * 4 + 1);  // + embedding
  EXPECT_EQ(count_class(d, d.bwd[0], CommClass::kTensor, CollectiveOp::kAllGather),
            2 * 4 + 1);  // + embedding
  EXPECT_EQ(count_class(d, d.bwd[0], CommClass::kTensor, CollectiveOp::kReduceScatter), 2 * 4 + 1);  // + head
  // Full recomputation re-runs each layer's forward, collectives included, inside the backward pass.
  st.sequence_parallel = false;
  st.recompute = Recompute::kFull;
  d = describe(topo, spec, st, costs);
  EXPECT_EQ(count_class(d, d.bwd[0], CommClass::kTensor, CollectiveOp::kAllReduce), 4 * 4 + 1);
}

TEST(LlmMemory, ActivationsMatchKorthikantiTable2) {
  // GPT-3 175B: s = 2048, h = 12288, a = 96, t = 8, b = 1; the paper's terms in units of s b h.
  auto spec = gpt(96, 12288, 96, 2048);
  spec.attention = AttentionImpl::kNaive;
  LlmStrategy st;
  st.tp = 8;
  const double sbh = 2048.0 * 12288;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(spec, st, Recompute::kNone),
                   sbh * (10 + 24.0 / 8 + 5.0 * 96 * 2048 / (12288 * 8)));
  EXPECT_DOUBLE_EQ(layer_activation_bytes(spec, st, Recompute::kSelective), sbh * (10 + 24.0 / 8));
  EXPECT_DOUBLE_EQ(layer_activation_bytes(spec, st, Recompute::kFull), 2 * sbh);
  st.sequence_parallel = true;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(spec, st, Recompute::kNone),
                   sbh * (34 + 5.0 * 96 * 2048 / 12288) / 8);
  EXPECT_DOUBLE_EQ(layer_activation_bytes(spec, st, Recompute::kSelective), sbh * 34 / 8);
  EXPECT_DOUBLE_EQ(layer_activation_bytes(spec, st, Recompute::kFull), 2 * sbh / 8);
  // FlashAttention never stores the scores: no recomputation already has selective's footprint.
  spec.attention = AttentionImpl::kFlash;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(spec, st, Recompute::kNone), sbh * 34 / 8);
}

TEST(LlmMemory, ZeroStagesMatchThePapersExample) {
  // ZeRO (Rajbhandari et al. SC'20), Figure 1: 7.5 B parameters, data parallelism 64: 120 GB, 31.4 GB,
  // 16.6 GB, 1.9 GB per GPU.
  const double psi = 7.5e9;
  const double expected[] = {120e9, 31.4e9, 16.6e9, 1.875e9};
  for (int z = 0; z < 4; ++z) {
    const auto b = zero_state_bytes(z, 64);
    EXPECT_NEAR((b.weights + b.gradients + b.optimizer) * psi, expected[z], 0.06e9) << "ZeRO-" << z;
  }
}

TEST(LlmMemory, PipelineKeepsItsInFlightMicroBatches) {
  auto spec = gpt(8, 1024, 16, 1024);
  const auto costs = hand_costs(1e-3, 2e-3, 1e6);
  LlmStrategy st;
  st.pp = 4, st.dp = 1, st.global_batch = 8;
  const double per_layer = layer_activation_bytes(spec, st, Recompute::kNone);
  // 1F1B: stage 0 holds p = 4 micro-batches of its 2 layers, the last stage 1; GPipe all 8.
  EXPECT_DOUBLE_EQ(stage_memory(spec, st, costs.layer, costs.edge, 0).activations, 4 * 2 * per_layer);
  const double logits = 4.0 * 1024 * 51200;
  EXPECT_DOUBLE_EQ(stage_memory(spec, st, costs.layer, costs.edge, 3).activations,
                   1 * 2 * per_layer + logits);
  st.schedule = PipelineSchedule::kGpipe;
  EXPECT_DOUBLE_EQ(stage_memory(spec, st, costs.layer, costs.edge, 0).activations, 8 * 2 * per_layer);
}

TEST(LlmStep, DataParallelStepIsComputePlusAllReduce) {
  // 4 GPUs on one switch with 100 GB/s ports, data parallelism only, gradients reduced after the backward
  // pass in one bucket: step = m (F + B) + ring all-reduce + optimizer.
  const auto topo = test::uniform_switch(1, 4, 100, 100);
  const auto spec = gpt(2, 1024, 16, 1024);
  const double params = 100e6;  // per layer: 2 x 100 M x 2 B = 400 MB of gradients with the embedding's 2 MB
  const auto costs = hand_costs(1e-3, 2e-3, params);
  LlmStrategy st;
  st.dp = 4, st.global_batch = 8;  // m = 2 micro-batches per replica
  st.overlap_grad_reduce = false;
  st.bucket_bytes = 1e12;  // one bucket
  const models::CostModel cost(topo.gpu());
  const auto r = simulate_llm_step(spec, st, topo, cost, costs);
  const double grads = (2 * params + costs.edge.embed_params) * 2;
  const double compute = 2 * (2 * (1e-3 + 2e-3) * 3 + 1e-5 * 4);  // m x (layers x (F + B) + edges)
  // Ring all-reduce: 2 (n - 1) / n x S over 100 GB/s per direction; NCCL's launch and hop latencies (tens of
  // microseconds) stay below 0.5% of it.
  const double allreduce = 2.0 * 3 / 4 * grads / 100e9;
  const auto d = describe(topo, spec, st, costs);
  const double optimizer = d.stages[0].optimizer_seconds;
  EXPECT_GT(optimizer, 0);
  EXPECT_NEAR(r.step_seconds, compute + allreduce + optimizer, 0.005 * r.step_seconds);
  EXPECT_NEAR(r.breakdown.dp_exposed, allreduce, 0.005 * allreduce);
  // Overlapped in buckets (Megatron's 80 MB: each layer's 400 MB of gradients fills one): layer 1's bucket
  // (6 ms) runs during layer 0's last backward (6 ms), so only layer 0's bucket and the embedding's are
  // exposed.
  st.overlap_grad_reduce = true;
  st.bucket_bytes = 0;
  const auto overlapped = simulate_llm_step(spec, st, topo, cost, costs);
  const double layer_bucket = 2.0 * 3 / 4 * (params * 2) / 100e9;
  const double embedding_bucket = 2.0 * 3 / 4 * (costs.edge.embed_params * 2) / 100e9;
  EXPECT_NEAR(overlapped.step_seconds, compute + layer_bucket + embedding_bucket + optimizer,
              0.005 * overlapped.step_seconds);
}

TEST(LlmStep, IsolatedCommunicationShortcutEqualsFlowSimulation) {
  // 2 nodes x 4 GPUs: TP inside the node (its own NVLink ports), DP and PP across the network.
  const auto topo = test::uniform_switch(2, 4, 100, 25);
  const auto spec = gpt(4, 1024, 16, 1024);
  const auto costs = hand_costs(1e-4, 2e-4, 5e6);
  const models::CostModel cost(topo.gpu());
  for (int pp : {1, 2}) {
    LlmStrategy st;
    st.tp = 4, st.pp = pp, st.dp = 2 / pp, st.global_batch = 8;
    st.sequence_parallel = true;
    LlmStepOptions fast, detailed, full;
    detailed.record_timeline = true;  // layer by layer: no merging of fixed-length segments
    full.comm_timing = CommTiming::kAllFlows;
    full.record_timeline = true;
    const auto a = simulate_llm_step(spec, st, topo, cost, costs, fast);
    const auto b = simulate_llm_step(spec, st, topo, cost, costs, detailed);
    const auto c = simulate_llm_step(spec, st, topo, cost, costs, full);
    EXPECT_TRUE(a.isolated[static_cast<std::size_t>(CommClass::kTensor)]);
    EXPECT_FALSE(c.isolated[static_cast<std::size_t>(CommClass::kTensor)]);
    EXPECT_LT(a.tasks, b.tasks);
    EXPECT_LT(b.tasks, c.tasks);
    EXPECT_NEAR(a.step_seconds, c.step_seconds, 1e-9 * c.step_seconds) << "pp " << pp;
    EXPECT_NEAR(b.step_seconds, c.step_seconds, 1e-9 * c.step_seconds) << "pp " << pp;
    EXPECT_NEAR(a.breakdown.tp_comm, c.breakdown.tp_comm, 1e-6 * c.breakdown.tp_comm);
    EXPECT_NEAR(a.breakdown.compute, c.breakdown.compute, 1e-6 * c.breakdown.compute);
  }
}

TEST(LlmStep, UncontendedStepBoundsTheSimulatedStep) {
  const auto spec = gpt(8, 1024, 16, 2048);
  // (a) Nothing shares a link: TP inside each node on its own ports, DP across nodes one NIC per TP rank,
  // every class isolated, so the step without contention is the simulated step.
  {
    const auto topo = test::uniform_switch(2, 4, 100, 25);
    const models::CostModel cost(topo.gpu());
    LlmStrategy st;
    st.tp = 4, st.dp = 2, st.global_batch = 8, st.sequence_parallel = true;
    const auto costs = llm_costs(spec, st, cost);
    const auto r = simulate_llm_step(spec, st, topo, cost, costs);
    for (auto cls : {CommClass::kTensor, CommClass::kData})
      ASSERT_TRUE(r.isolated[static_cast<std::size_t>(cls)]) << comm_class_name(cls);
    AloneTimes alone(topo);
    EXPECT_NEAR(uncontended_step_seconds(spec, st, topo, cost, costs, r.placement, alone), r.step_seconds,
                1e-9 * r.step_seconds);
  }
  // (b) TP, CP and DP on the ports of one NVSwitch, pipelined with ZeRO-3 gathers on the side: contention
  // only slows communication down, so the step without it is never longer, and here strictly shorter.
  {
    const auto topo = test::uniform_switch(2, 4, 100, 25);
    const models::CostModel cost(topo.gpu());
    LlmStrategy st;
    st.tp = 2, st.cp = 2, st.dp = 1, st.pp = 2, st.global_batch = 8, st.zero = 3;
    st.schedule = PipelineSchedule::kInterleaved, st.virtual_stages = 2;
    const auto costs = llm_costs(spec, st, cost);
    AloneTimes alone(topo);
    double slack = 0;
    for (const auto& placement :
         {megatron_placement(topo, st), reduce::Matrix{{1, 2}, {1, 1}, {2, 1}, {1, 2}}}) {
      LlmStepOptions o;
      o.placement = placement;
      const auto r = simulate_llm_step(spec, st, topo, cost, costs, o);
      const double bound = uncontended_step_seconds(spec, st, topo, cost, costs, placement, alone);
      EXPECT_LE(bound, r.step_seconds * (1 + 1e-12)) << reduce::format_matrix(placement);
      EXPECT_GT(bound, 0.5 * r.step_seconds);  // a bound worth having
      slack = std::max(slack, r.step_seconds - bound);
    }
    EXPECT_GT(slack, 0);  // some contention was there to leave out
  }
}

TEST(LlmStep, ProblemsNameWhatDoesNotDivide) {
  const auto topo = test::uniform_switch(1, 8, 100, 100);
  const auto spec = gpt(6, 1024, 12, 1024);
  LlmStrategy st;
  st.tp = 8, st.global_batch = 4;
  const auto p = strategy_problems(spec, st, topo);
  EXPECT_NE(p.find("heads (12) must be a multiple of tp (8)"), std::string::npos) << p;
  st.tp = 4, st.pp = 2, st.virtual_stages = 2, st.schedule = PipelineSchedule::kInterleaved;
  EXPECT_NE(strategy_problems(spec, st, topo).find("layers (6) must be a multiple of pp x virtual stages"),
            std::string::npos);
  st = {};
  st.dp = 8, st.global_batch = 12;
  EXPECT_NE(strategy_problems(spec, st, topo).find("global batch (12)"), std::string::npos);
}

}  // namespace
}  // namespace strata::search::parallel
