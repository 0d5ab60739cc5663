#include "models/zoo/zoo.h"

#include <stdexcept>

#include <fmt/format.h>

namespace strata::models::zoo {
namespace {

// The zoo's GPT-3 and LLaMA graphs keep the unfused attention they were published with in strata (every
// number in docs/ and the tests is for them); models added with TransformerSpec use the fused operator.
TransformerSpec gpt3(const std::string& name, std::int64_t layers, std::int64_t hidden, std::int64_t heads) {
  TransformerSpec c;
  c.name = name;
  c.layers = layers;
  c.hidden = hidden;
  c.heads = c.kv_heads = heads;
  c.ffn = 4 * hidden;
  c.vocab = 50257;
  c.seq = 2048;
  c.attention = AttentionImpl::kNaive;
  return c;
}
TransformerSpec llama(const std::string& name, std::int64_t layers, std::int64_t hidden, std::int64_t heads,
                      std::int64_t ffn) {
  TransformerSpec c;
  c.name = name;
  c.layers = layers;
  c.hidden = hidden;
  c.heads = c.kv_heads = heads;
  c.ffn = ffn;
  c.vocab = 32000;
  c.seq = 2048;
  c.act = MlpActivation::kSwiglu;
  c.norm = NormKind::kRmsNorm;
  c.positions = Positions::kRope;
  c.bias = c.tied_embeddings = false;
  c.norm_eps = 1e-6;
  c.attention = AttentionImpl::kNaive;
  return c;
}
// Llama 2 70B (Touvron et al. 2023, arXiv 2307.09288, Table 1 and the released config): GQA with 8 key/value
// heads, SwiGLU 28672, 4096 positions, fused attention.
TransformerSpec llama2_70b() {
  TransformerSpec c = llama("llama2-70b", 80, 8192, 64, 28672);
  c.kv_heads = 8;
  c.seq = 4096;
  c.norm_eps = 1e-5;
  c.attention = AttentionImpl::kFlash;
  return c;
}
// Mixtral 8x7B (Jiang et al. 2024, arXiv 2401.04088, Table 1): 32 layers, d 4096, 32 heads (8 kv), 8 SwiGLU
// experts of 14336, top-2, 32000 tokens; the released config's 32768 positions are RoPE (no table), the
// training sequence here is 4096.
TransformerSpec mixtral_8x7b() {
  TransformerSpec c = llama("mixtral-8x7b", 32, 4096, 32, 14336);
  c.kv_heads = 8;
  c.seq = 4096;
  c.experts = 8;
  c.top_k = 2;
  c.norm_eps = 1e-5;
  c.attention = AttentionImpl::kFlash;
  return c;
}

// FlexFlow's RNNs (arXiv 1807.05358, §8): RNNTC 4 recurrent layers, RNNLM 2, NMT 2 + 2; sizes of FlexFlow's
// released RNN example (nmt/nmt.cc), see models/zoo/rnn.cc.
LstmModelSpec flexflow_rnn(const std::string& name) {
  LstmModelSpec s;
  s.name = name;
  if (name == "rnntc") s.kind = LstmModelKind::kClassifier, s.layers = 4;
  if (name == "nmt") s.kind = LstmModelKind::kTranslation;
  return s;
}

ZooEntry decoder_entry(const std::string& desc, const TransformerSpec& c) {
  return {c.name, desc, "transformer", 1, c.seq, [c](const ZooOptions& o) { return build_transformer(c, o); },
          c};
}

std::vector<ZooEntry> make_zoo() {
  std::vector<ZooEntry> z = {
      {"resnet50", "ResNet-50 v1.5 (He et al. 2016; torchvision), 224x224", "cnn", 1, 0,
       [](const ZooOptions& o) { return build_resnet(o, 1, 64, "resnet50"); }},
      {"resnet101", "ResNet-101 v1.5 (He et al. 2016: [3, 4, 23, 3] bottleneck blocks; torchvision), 224x224",
       "cnn", 1, 0,
       [](const ZooOptions& o) {
         return build_resnet(o, 1, 64, "resnet101", {3, 4, 23, 3});
       }},
      {"alexnet", "AlexNet (torchvision's single-tower variant, Krizhevsky 2014), 224x224", "cnn", 1, 0,
       build_alexnet},
      {"resnext50", "ResNeXt-50 32x4d (Xie et al. 2017; torchvision), 224x224", "cnn", 1, 0,
       [](const ZooOptions& o) { return build_resnet(o, 32, 4, "resnext50"); }},
      {"inception-v3", "Inception-v3 (Szegedy et al. 2016; torchvision, no aux head), 299x299", "cnn", 1, 0,
       build_inception_v3},
      {"squeezenet", "SqueezeNet 1.0 (Iandola et al. 2016), 224x224", "cnn", 1, 0, build_squeezenet},
      {"nasnet-a", "NasNet-A cells as evaluated by TASO (3 x (5 normal + 1 reduction), 128x56x56 input)",
       "cnn", 1, 0, build_nasnet_a},
      {"nasrnn", "NasRNN cell (Zoph & Le 2017) as evaluated by TASO, hidden 512, unrolled seq_len steps",
       "rnn", 1, 5, [](const ZooOptions& o) { return build_nasrnn(o); }},
      {"rnntc", "RNNTC (FlexFlow): text classification, 4-layer LSTM, hidden 2048, vocab 20480, 2 classes",
       "rnn", 1, 20, [](const ZooOptions& o) { return build_lstm_model(o, flexflow_rnn("rnntc")); }},
      {"rnnlm", "RNNLM (FlexFlow): language model, 2-layer LSTM, hidden 2048, vocab 20480, softmax per step",
       "rnn", 1, 20, [](const ZooOptions& o) { return build_lstm_model(o, flexflow_rnn("rnnlm")); }},
      {"nmt", "NMT (FlexFlow): 2-layer LSTM encoder + 2-layer decoder with dot attention, hidden 2048", "rnn",
       1, 20, [](const ZooOptions& o) { return build_lstm_model(o, flexflow_rnn("nmt")); }},
      {"bert-base", "BERT-base (Devlin et al. 2019): 12 layers, hidden 768, 12 heads, incl. pooler",
       "transformer", 1, 128, [](const ZooOptions& o) { return build_bert(o); }},
  };
  z.push_back(decoder_entry("GPT-3 Small: 12 layers, d 768, 12 heads", gpt3("gpt3-125m", 12, 768, 12)));
  z.push_back(decoder_entry("GPT-3 Medium: 24 layers, d 1024, 16 heads", gpt3("gpt3-350m", 24, 1024, 16)));
  z.push_back(decoder_entry("GPT-3 Large: 24 layers, d 1536, 16 heads", gpt3("gpt3-760m", 24, 1536, 16)));
  z.push_back(decoder_entry("GPT-3 XL: 24 layers, d 2048, 16 heads", gpt3("gpt3-1.3b", 24, 2048, 16)));
  z.push_back(decoder_entry("GPT-3 2.7B: 32 layers, d 2560, 32 heads", gpt3("gpt3-2.7b", 32, 2560, 32)));
  z.push_back(decoder_entry("GPT-3 6.7B: 32 layers, d 4096, 32 heads", gpt3("gpt3-6.7b", 32, 4096, 32)));
  z.push_back(decoder_entry("GPT-3 13B: 40 layers, d 5120, 40 heads", gpt3("gpt3-13b", 40, 5120, 40)));
  z.push_back(decoder_entry("GPT-3 175B: 96 layers, d 12288, 96 heads", gpt3("gpt3-175b", 96, 12288, 96)));
  z.push_back(decoder_entry("LLaMA 7B: 32 layers, d 4096, 32 heads, SwiGLU 11008, RMSNorm, RoPE",
                            llama("llama-7b", 32, 4096, 32, 11008)));
  z.push_back(decoder_entry("LLaMA 13B: 40 layers, d 5120, 40 heads, SwiGLU 13824",
                            llama("llama-13b", 40, 5120, 40, 13824)));
  z.push_back(decoder_entry("LLaMA 33B: 60 layers, d 6656, 52 heads, SwiGLU 17920",
                            llama("llama-33b", 60, 6656, 52, 17920)));
  z.push_back(decoder_entry("LLaMA 65B: 80 layers, d 8192, 64 heads, SwiGLU 22016",
                            llama("llama-65b", 80, 8192, 64, 22016)));
  z.push_back(decoder_entry("Llama 2 70B: 80 layers, d 8192, 64 heads (8 kv), SwiGLU 28672, fused attention",
                            llama2_70b()));
  z.push_back(decoder_entry(
      "Mixtral 8x7B: 32 layers, d 4096, 32 heads (8 kv), 8 experts top-2 (balanced routing), fused attention",
      mixtral_8x7b()));
  return z;
}

}  // namespace

std::span<const ZooEntry> zoo_models() {
  static const std::vector<ZooEntry> zoo = make_zoo();
  return zoo;
}

const ZooEntry* find_model(std::string_view name) {
  for (const auto& e : zoo_models())
    if (e.name == name) return &e;
  return nullptr;
}

std::string zoo_names() {
  std::string s;
  for (const auto& e : zoo_models()) s += (s.empty() ? "" : ", ") + e.name;
  return s;
}

Graph build_model(std::string_view name, ZooOptions options) {
  const auto* e = find_model(name);
  if (!e) throw std::invalid_argument(fmt::format("unknown model '{}' (zoo: {})", name, zoo_names()));
  if (options.batch < 0) throw std::invalid_argument("batch must be positive");
  if (options.seq_len != 0 && e->default_seq == 0)
    throw std::invalid_argument(fmt::format("model '{}' has no sequence length", name));
  return e->build(options);
}

}  // namespace strata::models::zoo
