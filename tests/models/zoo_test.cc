// Zoo models against published parameter counts and multiply-add counts.
#include <gtest/gtest.h>

#include "models/train/training.h"
#include "models/zoo/zoo.h"

namespace strata::models {
namespace {

// Multiply-adds of the contractions (the figure papers quote as "FLOPs" for CNNs).
double macs(const Graph& g) {
  double f = 0;
  for (const auto& n : g.nodes())
    if (n.op->kind == OpKind::kContraction) f += node_flops(g, n) / 2;
  return f;
}

TEST(Zoo, ResNet50MatchesTorchvision) {
  const auto g = zoo::build_model("resnet50");
  EXPECT_EQ(g.param_count(), 25557032);   // torchvision resnet50 (weights + batchnorm affine)
  EXPECT_NEAR(macs(g) / 1e9, 4.1, 0.05);  // ~4.1 G multiply-adds per 224x224 image
  EXPECT_EQ(g.type(g.outputs()[0]).shape, (Shape{1, 1000}));
  // Scales linearly with batch.
  EXPECT_NEAR(macs(zoo::build_model("resnet50", {.batch = 8})), 8 * macs(g), 1.0);
}

TEST(Zoo, ResNeXt50InceptionSqueezeNet) {
  const auto rx = zoo::build_model("resnext50");
  EXPECT_EQ(rx.param_count(), 25028904);  // torchvision resnext50_32x4d
  EXPECT_NEAR(macs(rx) / 1e9, 4.26, 0.05);
  const auto inc = zoo::build_model("inception-v3");
  EXPECT_EQ(inc.param_count(), 27161264 - 3326696);  // torchvision inception_v3 minus its auxiliary head
  EXPECT_NEAR(macs(inc) / 1e9, 5.7, 0.1);
  const auto sq = zoo::build_model("squeezenet");
  EXPECT_EQ(sq.param_count(), 1248424);  // SqueezeNet 1.0
  EXPECT_EQ(sq.type(sq.outputs()[0]).shape, (Shape{1, 1000}));
}

TEST(Zoo, TasoBenchmarks) {
  const auto nas = zoo::build_model("nasnet-a");
  EXPECT_EQ(nas.type(nas.outputs()[0]).shape, (Shape{1, 5 * 1024, 7, 7}));
  const auto rnn = zoo::build_model("nasrnn", {.seq_len = 5});
  // 5 steps x 8 gates x 2 matmuls of 512x512, plus the initial state.
  EXPECT_EQ(rnn.param_count(), 5 * 8 * 2 * 512 * 512 + 512);
}

// FlexFlow's CNNs (arXiv 1807.05358, §8), counted by hand from the layer shapes.
TEST(Zoo, FlexFlowCnns) {
  const auto alex = zoo::build_model("alexnet");
  // conv 64x3x11x11, 192x64x5x5, 384x192x3x3, 256x384x3x3, 256x256x3x3 and fc 9216-4096-4096-1000, with
  // biases: torchvision's alexnet, 61,100,840.
  const std::int64_t alex_params = (64 * 3 * 121 + 64) + (192 * 64 * 25 + 192) + (384 * 192 * 9 + 384) +
                                   (256 * 384 * 9 + 256) + (256 * 256 * 9 + 256) + (9216 * 4096 + 4096) +
                                   (4096 * 4096 + 4096) + (4096 * 1000 + 1000);
  EXPECT_EQ(alex_params, 61100840);
  EXPECT_EQ(alex.param_count(), alex_params);
  // Multiply-adds: output positions x filter size per conv (55, 27, 13, 13, 13 pixels square), plus the fcs.
  const double alex_macs = 55.0 * 55 * 64 * 3 * 121 + 27.0 * 27 * 192 * 64 * 25 + 13.0 * 13 * 384 * 192 * 9 +
                           13.0 * 13 * 256 * 384 * 9 + 13.0 * 13 * 256 * 256 * 9 + 9216.0 * 4096 +
                           4096.0 * 4096 + 4096.0 * 1000;
  EXPECT_NEAR(macs(alex), alex_macs, 1.0);
  EXPECT_EQ(alex.type(alex.outputs()[0]).shape, (Shape{1, 1000}));
  // ResNet-101 = ResNet-50 with 17 more layer3 blocks, each 1024->256 1x1, 256->256 3x3, 256->1024 1x1 convs
  // and their batchnorms (2 x 256 + 2 x 256 + 2 x 1024 affine): torchvision's resnet101, 44,549,160.
  const std::int64_t block = 1024 * 256 + 256 * 256 * 9 + 256 * 1024 + 2 * (256 + 256 + 1024);
  const auto r101 = zoo::build_model("resnet101");
  EXPECT_EQ(r101.param_count(), 25557032 + 17 * block);
  EXPECT_EQ(r101.param_count(), 44549160);
  // Each extra block at 14x14: 196 positions x (1024*256 + 256*256*9 + 256*1024) multiply-adds.
  EXPECT_NEAR(macs(r101) - macs(zoo::build_model("resnet50")),
              17 * 196.0 * (1024 * 256 + 256 * 256 * 9 + 256 * 1024), 1.0);
}

// FlexFlow's LSTM models: per layer W[(in + h), 4h] + b[4h] with in = embed = h = 2048, vocabulary 20480.
TEST(Zoo, FlexFlowLstmModels) {
  const std::int64_t h = 2048, v = 20480, layer = (2 * h) * (4 * h) + 4 * h, emb = v * h, out = h * v + v;
  EXPECT_EQ(zoo::build_model("rnntc", {.seq_len = 2}).param_count(), emb + 4 * layer + (h * 2 + 2));
  EXPECT_EQ(zoo::build_model("rnnlm", {.seq_len = 2}).param_count(), emb + 2 * layer + out);
  // NMT: source and target embeddings, 2 + 2 layers, the attention's combine W[2h, h], the output layer.
  EXPECT_EQ(zoo::build_model("nmt", {.seq_len = 2}).param_count(), 2 * emb + 4 * layer + 2 * h * h + out);
  // Multiply-adds for T steps of batch B: every cell's [x h] W, the output projections, and for NMT the two
  // attention products (B x T x h each per decoder step) and the combine layer.
  const double T = 3, B = 2, cell = 2.0 * h * 4 * h;
  EXPECT_NEAR(macs(zoo::build_model("rnnlm", {.batch = 2, .seq_len = 3})), T * B * (2 * cell + 1.0 * h * v),
              1.0);
  EXPECT_NEAR(macs(zoo::build_model("rnntc", {.batch = 2, .seq_len = 3})), T * B * 4 * cell + B * h * 2.0,
              1.0);
  EXPECT_NEAR(macs(zoo::build_model("nmt", {.batch = 2, .seq_len = 3})),
              T * B * (4 * cell + 2 * T * h + 2.0 * h * h + 1.0 * h * v), 1.0);
  // RNNLM and NMT predict a word per step: one softmax output per step.
  EXPECT_EQ(zoo::build_model("rnnlm", {.seq_len = 3}).outputs().size(), 3u);
  EXPECT_EQ(zoo::build_model("rnntc", {.seq_len = 3}).outputs().size(), 1u);
}

TEST(Zoo, TransformersMatchPublishedParameterCounts) {
  const auto bert = zoo::build_model("bert-base", {.batch = 2, .seq_len = 16});
  EXPECT_EQ(bert.param_count(), 109482240);  // bert-base-uncased incl. pooler (~110 M)
  const auto gpt = zoo::build_model("gpt3-175b", {.seq_len = 8});
  EXPECT_NEAR(gpt.param_count() / 175e9, 1.0, 0.01);
  const auto small = zoo::build_model("gpt3-125m", {.seq_len = 8});
  EXPECT_NEAR(small.param_count() / 125e6, 1.0, 0.01);
  const auto llama = zoo::build_model("llama-7b", {.seq_len = 8});
  EXPECT_EQ(llama.param_count(), 6738415616);  // LLaMA-7B
  // Forward FLOPs of a decoder are ~2 x params per token plus attention.
  const auto g = zoo::build_model("gpt3-1.3b", {.batch = 1, .seq_len = 2048});
  const double per_token = g.total_flops() / 2048;
  EXPECT_GT(per_token, 2 * g.param_count() * 0.95);
  EXPECT_LT(per_token, 2 * g.param_count() * 1.25);
}

// Issue 10, defect 1: bert-base's pooler slices the CLS row with a split whose unused part got an f32 zero
// gradient, so training failed at f16/bf16. Every zoo model must derive a training step at every element
// type, with each parameter's gradient in the parameter's own type.
TEST(Zoo, EveryModelTrainsAtEveryElementType) {
  for (const auto& entry : zoo::zoo_models()) {
    for (const DType dt : {DType::kF32, DType::kF16, DType::kBF16}) {
      SCOPED_TRACE(entry.name + " " + std::string(dtype_name(dt)));
      const auto forward = zoo::build_model(
          entry.name, {.batch = 1, .seq_len = entry.default_seq > 0 ? std::int64_t{4} : 0, .dtype = dt});
      TrainingGraph tg;
      ASSERT_NO_THROW(tg = derive_training_graph(forward)) << entry.name;
      ASSERT_FALSE(tg.params.empty());
      for (std::size_t k = 0; k < tg.params.size(); ++k) {
        if (tg.param_grads[k] == kNoValue) continue;
        EXPECT_EQ(tg.graph.type(tg.param_grads[k]), tg.graph.type(tg.params[k]))
            << tg.graph.value(tg.params[k]).name;
      }
    }
  }
}

TEST(Zoo, BadNamesAndOptions) {
  EXPECT_THROW(zoo::build_model("resnet51"), std::invalid_argument);
  EXPECT_THROW(zoo::build_model("resnet50", {.seq_len = 4}), std::invalid_argument);
  EXPECT_THROW(zoo::build_model("bert-base", {.seq_len = 1024}), std::invalid_argument);
}

}  // namespace
}  // namespace strata::models
