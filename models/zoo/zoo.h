// The model zoo: CNNs (AlexNet, ResNet-50/101, ResNeXt-50, Inception-v3, SqueezeNet, NasNet-A), recurrent
// (NasRNN; FlexFlow's LSTM models RNNTC, RNNLM, NMT) and
// transformer models (BERT-base; GPT-3, LLaMA, Llama 2 and Mixtral-style decoders from a TransformerSpec),
// each parameterized by batch size, sequence length and element type.
#pragma once

#include <array>
#include <functional>
#include <optional>
#include <span>
#include <string>

#include "models/ir/graph.h"
#include "models/zoo/transformer_spec.h"

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
  std::optional<TransformerSpec> transformer =
      std::nullopt;  // decoder-only transformers: the spec the graph is built from
};

std::span<const ZooEntry> zoo_models();
const ZooEntry* find_model(std::string_view name);
std::string zoo_names();
// Builds a zoo model; throws std::invalid_argument for unknown names (listing the known ones).
Graph build_model(std::string_view name, ZooOptions options = {});

Graph build_bert(const ZooOptions& options, std::int64_t layers = 12, std::int64_t hidden = 768,
                 std::int64_t heads = 12, std::int64_t ffn = 3072);

// Family builders (models/zoo/*.cc).
// Bottleneck ResNets: `blocks` per stage ({3, 4, 6, 3}: ResNet-50 / ResNeXt-50; {3, 4, 23, 3}: ResNet-101).
Graph build_resnet(const ZooOptions& o, std::int64_t groups, std::int64_t width_per_group,
                   const std::string& name, std::array<std::int64_t, 4> blocks = {3, 4, 6, 3});
Graph build_alexnet(const ZooOptions& o);
Graph build_inception_v3(const ZooOptions& o);
Graph build_squeezenet(const ZooOptions& o);
Graph build_nasnet_a(const ZooOptions& o);
Graph build_nasrnn(const ZooOptions& o, std::int64_t hidden = 512);

// LSTM models after FlexFlow's RNNTC, RNNLM and NMT (models/zoo/rnn.cc).
enum class LstmModelKind { kClassifier, kLanguageModel, kTranslation };
struct LstmModelSpec {
  std::string name;
  LstmModelKind kind = LstmModelKind::kLanguageModel;
  std::int64_t layers = 2;  // per stack (NMT: encoder and decoder each)
  std::int64_t hidden = 2048, embed = 2048, vocab = 20 * 1024, seq = 20;
  std::int64_t classes = 2;  // classifier only
};
Graph build_lstm_model(const ZooOptions& o, const LstmModelSpec& spec);

}  // namespace strata::models::zoo
