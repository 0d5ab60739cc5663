#include "experiments/cli_validate_replay.h"

#include <fmt/format.h>

#include "experiments/cli_options.h"
#include "hw/config_error.h"
#include "models/zoo/model_ref.h"
#include "validate/cpu_replay.h"

namespace strata::cli {

void add_replay_model_options(CLI::App& cmd, ReplayModelOptions& o) {
  cmd.add_option("--model", o.model, "Zoo name, transformer:..., model YAML or ONNX file")->required();
  add_int_option(cmd, "--batch", o.batch, {0, kMaxModelDim}, "Batch size (0: the model's default)");
  add_int_option(cmd, "--seq", o.seq, {0, kMaxModelDim}, "Sequence length (0: the model's default)");
  cmd.add_option("--device", o.device, "cpu (oneDNN) or cuda (not built yet)")->capture_default_str();
}

models::Graph build_replay_model(const ReplayModelOptions& o, std::string_view command,
                                 std::string_view gpu_backend) {
  if (o.device == "cuda")
    throw ConfigError(
        fmt::format("--device cuda: the GPU backend ({}, issue 15) is not built yet; only --device cpu "
                    "(oneDNN) today",
                    gpu_backend));
  if (o.device != "cpu") throw ConfigError(fmt::format("--device: expected cpu or cuda, got '{}'", o.device));
  if (!validate::onednn_available())
    throw ConfigError(fmt::format("{} --device cpu: {}", command, validate::onednn_description()));
  models::zoo::ModelRefOptions mo;
  mo.batch = o.batch;
  mo.seq = o.seq;
  mo.dtype = models::DType::kF32;  // the replay computes in f32; profile keys carry the graph's types
  return models::zoo::build_model_ref(models::zoo::resolve_model_ref(o.model), mo);
}

}  // namespace strata::cli
