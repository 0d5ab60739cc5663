// What `strata validate profile` and `strata validate graphs` share: the model they replay (zoo name or file,
// batch, sequence), built in f32 because the replay computes in f32, and the device it runs on (the CPU with
// oneDNN today; the GPU backend is not built).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

#include "models/ir/graph.h"

namespace strata::cli {

struct ReplayModelOptions {
  std::string model, device = "cpu";
  std::int64_t batch = 0, seq = 0;
};

// --model, --batch, --seq, --device on `cmd`, stored in `o` (which must outlive parsing).
void add_replay_model_options(CLI::App& cmd, ReplayModelOptions& o);

// Refuses a device other than cpu (cuda: not built yet, naming `gpu_backend`), and cpu without oneDNN; then
// builds the model in f32. `command` names the subcommand in errors (e.g. "validate profile").
models::Graph build_replay_model(const ReplayModelOptions& o, std::string_view command,
                                 std::string_view gpu_backend);

}  // namespace strata::cli
