#include "models/zoo/zoo.h"

#include <stdexcept>

#include <fmt/format.h>

namespace strata::models::zoo {
namespace {

DecoderConfig gpt3(std::int64_t layers, std::int64_t hidden, std::int64_t heads) {
  DecoderConfig c;
  c.layers = layers;
  c.hidden = hidden;
  c.heads = heads;
  c.ffn = 4 * hidden;
  return c;
}
DecoderConfig llama(std::int64_t layers, std::int64_t hidden, std::int64_t heads, std::int64_t ffn) {
  DecoderConfig c;
  c.layers = layers;
  c.hidden = hidden;
  c.heads = heads;
  c.ffn = ffn;
  c.vocab = 32000;
  c.max_seq = 2048;
  c.rmsnorm = c.swiglu = c.rope = true;
  c.bias = c.tied_embeddings = false;
  c.norm_eps = 1e-6;
  return c;
}

ZooEntry decoder_entry(const std::string& name, const std::string& desc, DecoderConfig c) {
  return {name, desc,      "transformer",
          1,    c.max_seq, [name, c](const ZooOptions& o) { return build_decoder(name, c, o); }};
}

std::vector<ZooEntry> make_zoo() {
  std::vector<ZooEntry> z = {
      {"resnet50", "ResNet-50 v1.5 (He et al. 2016; torchvision), 224x224", "cnn", 1, 0,
       [](const ZooOptions& o) { return build_resnet(o, 1, 64, "resnet50"); }},
      {"resnext50", "ResNeXt-50 32x4d (Xie et al. 2017; torchvision), 224x224", "cnn", 1, 0,
       [](const ZooOptions& o) { return build_resnet(o, 32, 4, "resnext50"); }},
      {"inception-v3", "Inception-v3 (Szegedy et al. 2016; torchvision, no aux head), 299x299", "cnn", 1, 0,
       build_inception_v3},
      {"squeezenet", "SqueezeNet 1.0 (Iandola et al. 2016), 224x224", "cnn", 1, 0, build_squeezenet},
      {"nasnet-a", "NasNet-A cells as evaluated by TASO (3 x (5 normal + 1 reduction), 128x56x56 input)",
       "cnn", 1, 0, build_nasnet_a},
      {"nasrnn", "NasRNN cell (Zoph & Le 2017) as evaluated by TASO, hidden 512, unrolled seq_len steps",
       "rnn", 1, 5, [](const ZooOptions& o) { return build_nasrnn(o); }},
      {"bert-base", "BERT-base (Devlin et al. 2019): 12 layers, hidden 768, 12 heads, incl. pooler",
       "transformer", 1, 128, [](const ZooOptions& o) { return build_bert(o); }},
  };
  z.push_back(decoder_entry("gpt3-125m", "GPT-3 Small: 12 layers, d 768, 12 heads", gpt3(12, 768, 12)));
  z.push_back(decoder_entry("gpt3-350m", "GPT-3 Medium: 24 layers, d 1024, 16 heads", gpt3(24, 1024, 16)));
  z.push_back(decoder_entry("gpt3-760m", "GPT-3 Large: 24 layers, d 1536, 16 heads", gpt3(24, 1536, 16)));
  z.push_back(decoder_entry("gpt3-1.3b", "GPT-3 XL: 24 layers, d 2048, 16 heads", gpt3(24, 2048, 16)));
  z.push_back(decoder_entry("gpt3-2.7b", "GPT-3 2.7B: 32 layers, d 2560, 32 heads", gpt3(32, 2560, 32)));
  z.push_back(decoder_entry("gpt3-6.7b", "GPT-3 6.7B: 32 layers, d 4096, 32 heads", gpt3(32, 4096, 32)));
  z.push_back(decoder_entry("gpt3-13b", "GPT-3 13B: 40 layers, d 5120, 40 heads", gpt3(40, 5120, 40)));
  z.push_back(decoder_entry("gpt3-175b", "GPT-3 175B: 96 layers, d 12288, 96 heads", gpt3(96, 12288, 96)));
  z.push_back(decoder_entry("llama-7b", "LLaMA 7B: 32 layers, d 4096, 32 heads, SwiGLU 11008, RMSNorm, RoPE",
                            llama(32, 4096, 32, 11008)));
  z.push_back(decoder_entry("llama-13b", "LLaMA 13B: 40 layers, d 5120, 40 heads, SwiGLU 13824",
                            llama(40, 5120, 40, 13824)));
  z.push_back(decoder_entry("llama-33b", "LLaMA 33B: 60 layers, d 6656, 52 heads, SwiGLU 17920",
                            llama(60, 6656, 52, 17920)));
  z.push_back(decoder_entry("llama-65b", "LLaMA 65B: 80 layers, d 8192, 64 heads, SwiGLU 22016",
                            llama(80, 8192, 64, 22016)));
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
