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
  cmd.add_option("--dtype", o.dtype,
                 "Element type of weights and activations: f32, or bf16 (CPU only, oneDNN's bf16 kernels "
                 "with f32 accumulation; refused on a CPU without bf16 support)")
      ->check(CLI::IsMember({"f32", "bf16"}))
      ->capture_default_str();
  add_replay_device_option(cmd, o.device);
}

void add_replay_device_option(CLI::App& cmd, std::string& device) {
  cmd.add_option("--device", device,
                 fmt::format("Where the kernels run: {} (cpu: oneDNN; cuda: cuBLAS/cuDNN on GPU 0)",
                             validate::replay_device_names()))
      ->capture_default_str();
}

const validate::ReplayDevice& replay_device(const ReplayModelOptions& o, std::string_view command) {
  return replay_device(o.device, command);
}

const validate::ReplayDevice& replay_device(std::string_view name, std::string_view command) {
  const auto& device = validate::find_replay_device(name);
  if (auto why = device.unavailable(); !why.empty())
    throw ConfigError(fmt::format("{} --device {}: {}", command, device.name, why));
  return device;
}

models::Graph build_replay_model(const ReplayModelOptions& o) {
  models::zoo::ModelRefOptions mo;
  mo.batch = o.batch;
  mo.seq = o.seq;
  mo.dtype = o.dtype == "bf16" ? models::DType::kBF16 : models::DType::kF32;  // profile keys carry it
  return models::zoo::build_model_ref(models::zoo::resolve_model_ref(o.model), mo);
}

}  // namespace strata::cli
