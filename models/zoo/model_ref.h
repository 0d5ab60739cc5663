// What a `--model` argument names, resolved in one place for every command: a zoo name,
// `transformer:key=value,...` (models/zoo/transformer_spec.h), a model YAML (*.yaml / *.yml, the same keys)
// or an ONNX file (*.onnx, a path with '/', or an existing file). Transformer-shaped references also carry
// their TransformerSpec, which the parallelization search uses directly.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "models/ir/graph.h"
#include "models/zoo/transformer_spec.h"
#include "models/zoo/zoo.h"

namespace strata::models::zoo {

enum class ModelRefKind : std::uint8_t { kZoo, kTransformer, kYaml, kOnnx };

struct ModelRef {
  ModelRefKind kind = ModelRefKind::kZoo;
  std::string text;                            // as given
  std::optional<TransformerSpec> transformer;  // zoo decoders, transformer:..., model YAMLs
};

// Throws std::invalid_argument for an unknown name or a bad transformer: spec, ConfigError for a bad model
// YAML. ONNX files are only classified here; build_model_ref reads them.
ModelRef resolve_model_ref(std::string_view text);

struct ModelRefOptions {
  std::int64_t batch = 0, seq = 0;  // 0: the model's default (zoo and transformer references)
  DType dtype = DType::kF32;
  std::map<std::string, std::int64_t> onnx_dims;  // symbolic ONNX input dimensions
};
// The transformer a training-step simulation uses for `ref` (search/parallel): its spec, with FlashAttention
// for the zoo's decoders, whose graphs keep unfused attention (docs/models.md) while Megatron-LM trains them
// with FlashAttention. nullopt when `ref` is not a transformer.
std::optional<TransformerSpec> training_transformer(const ModelRef& ref);
// "'<text>' is not a transformer: expected a decoder of the zoo (...), transformer:... or a model YAML".
std::string not_a_transformer_message(std::string_view text);

// The forward graph. batch/seq/dtype apply to zoo and transformer references, onnx_dims to ONNX files; giving
// one to the other kind is an error (std::invalid_argument).
Graph build_model_ref(const ModelRef& ref, const ModelRefOptions& options = {});

}  // namespace strata::models::zoo
