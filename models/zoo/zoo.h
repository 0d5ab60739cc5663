// The model zoo: CNNs (ResNet-50, ResNeXt-50, Inception-v3, SqueezeNet, NasNet-A), recurrent (NasRNN) and
// transformer models (BERT-base, GPT-3 and LLaMA-style decoders), each parameterized by batch size,
// sequence length and element type.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>

#include "models/ir/graph.h"

namespace strata::models::zoo {

struct ZooOptions {
  std::int64_t batch = 0;    // 0: the model's default
  std::int64_t seq_len = 0;  // 0: the model's default (sequence models only)
  DType dtype = DType::kF32;
};

struct ZooEntry {
  std::string name;
  std::string description;
  std::string family;  // "cnn", "rnn", "transformer"
  std::int64_t default_batch = 1;
  std::int64_t default_seq = 0;  // 0: not a sequence model
  std::function<Graph(const ZooOptions&)> build;
};

std::span<const ZooEntry> zoo_models();
const ZooEntry* find_model(std::string_view name);
std::string zoo_names();
// Builds a zoo model; throws std::invalid_argument for unknown names (listing the known ones).
Graph build_model(std::string_view name, ZooOptions options = {});

// A GPT/LLaMA-style decoder-only transformer.
struct DecoderConfig {
  std::int64_t layers = 12, hidden = 768, heads = 12, ffn = 3072, vocab = 50257, max_seq = 2048;
  bool rmsnorm = false;  // false: LayerNorm
  bool swiglu = false;   // false: GELU MLP
  bool rope = false;     // false: learned absolute positions
  bool bias = true;      // biases in linear layers
  bool tied_embeddings = true;
  double norm_eps = 1e-5;
};
Graph build_decoder(const std::string& name, const DecoderConfig& cfg, const ZooOptions& options);
Graph build_bert(const ZooOptions& options, std::int64_t layers = 12, std::int64_t hidden = 768,
                 std::int64_t heads = 12, std::int64_t ffn = 3072);

// Family builders (models/zoo/*.cc).
Graph build_resnet(const ZooOptions& o, std::int64_t groups, std::int64_t width_per_group,
                   const std::string& name);
Graph build_inception_v3(const ZooOptions& o);
Graph build_squeezenet(const ZooOptions& o);
Graph build_nasnet_a(const ZooOptions& o);
Graph build_nasrnn(const ZooOptions& o, std::int64_t hidden = 512);

}  // namespace strata::models::zoo
