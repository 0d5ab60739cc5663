// What `strata validate profile` and `strata validate graphs` share: the model they replay (zoo name or file,
// batch, sequence, element type: f32, or bf16 on the CPU), and the device it runs on (cpu: oneDNN,
// cuda: cuBLAS/cuDNN; validate/replay_device.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

#include "models/ir/graph.h"
#include "validate/replay_device.h"

namespace strata::cli {

struct ReplayModelOptions {
  std::string model, device = "cpu", dtype = "f32";
  std::int64_t batch = 0, seq = 0;
};

// --model, --batch, --seq, --dtype, --device on `cmd`, stored in `o` (which must outlive parsing).
void add_replay_model_options(CLI::App& cmd, ReplayModelOptions& o);

// --device alone (the choices of validate/replay_device.h), stored in `device`.
void add_replay_device_option(CLI::App& cmd, std::string& device);

// The device named by --device; refuses an unknown one, and one this build or machine cannot replay on (cpu
// without oneDNN; cuda built without CUDA or without a usable GPU: "no CUDA device (...)"), naming `command`
// (e.g. "validate profile") in the error.
const validate::ReplayDevice& replay_device(const ReplayModelOptions& o, std::string_view command);
const validate::ReplayDevice& replay_device(std::string_view name, std::string_view command);

// The model of --model, --batch, --seq, built in --dtype (f32 or bf16; bf16 replays on the CPU only, where
// oneDNN has bf16 kernels: validate/cpu_replay.h).
models::Graph build_replay_model(const ReplayModelOptions& o);

}  // namespace strata::cli
