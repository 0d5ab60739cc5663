#include "models/zoo/model_ref.h"

#include <filesystem>
#include <stdexcept>

#include <fmt/format.h>

#include "models/onnx/onnx.h"

namespace strata::models::zoo {

ModelRef resolve_model_ref(std::string_view text) {
  ModelRef ref;
  ref.text = std::string(text);
  if (text.starts_with(kTransformerPrefix)) {
    ref.kind = ModelRefKind::kTransformer;
    ref.transformer = parse_transformer_spec(text);
    return ref;
  }
  if (const ZooEntry* e = find_model(text)) {
    ref.kind = ModelRefKind::kZoo;
    ref.transformer = e->transformer;
    return ref;
  }
  if (text.ends_with(".yaml") || text.ends_with(".yml")) {
    ref.kind = ModelRefKind::kYaml;
    ref.transformer = load_transformer_spec(ref.text);
    return ref;
  }
  std::error_code ec;
  if (text.ends_with(".onnx") || text.find('/') != std::string_view::npos ||
      std::filesystem::exists(ref.text, ec)) {
    ref.kind = ModelRefKind::kOnnx;  // the importer reports missing files, directories and non-models
    return ref;
  }
  throw std::invalid_argument(fmt::format(
      "unknown model '{}' (zoo: {}; or an .onnx file, a model YAML like configs/models/gpt3-175b.yaml, or "
      "transformer:layers=L,hidden=H,heads=A,vocab=V,seq=S[,key=value...])",
      text, zoo_names()));
}

std::optional<TransformerSpec> training_transformer(const ModelRef& ref) {
  if (!ref.transformer) return std::nullopt;
  auto spec = *ref.transformer;
  if (ref.kind == ModelRefKind::kZoo) spec.attention = AttentionImpl::kFlash;
  return spec;
}

std::string not_a_transformer_message(std::string_view text) {
  std::string decoders;
  for (const auto& m : zoo_models())
    if (m.transformer) decoders += (decoders.empty() ? "" : ", ") + m.name;
  return fmt::format(
      "'{}' is not a transformer: expected a decoder of the zoo ({}), "
      "transformer:layers=..,hidden=..,heads=..,"
      "vocab=..,seq=.. or a model YAML (configs/models/)",
      text, decoders);
}

Graph build_model_ref(const ModelRef& ref, const ModelRefOptions& o) {
  if (ref.kind == ModelRefKind::kOnnx) {
    if (o.batch || o.seq)
      throw std::invalid_argument(
          "--batch/--seq apply to zoo and transformer models; for ONNX files use --dim NAME=VALUE");
    return import_onnx(ref.text, {.dims = o.onnx_dims});
  }
  if (!o.onnx_dims.empty()) throw std::invalid_argument("--dim applies to ONNX files only");
  if (o.batch < 0 || o.seq < 0) throw std::invalid_argument("batch and sequence length must be positive");
  const ZooOptions zo{.batch = o.batch, .seq_len = o.seq, .dtype = o.dtype};
  if (ref.kind == ModelRefKind::kZoo) return build_model(ref.text, zo);
  return build_transformer(*ref.transformer, zo);
}

}  // namespace strata::models::zoo
