// The devices a models/ graph is replayed on for real, declared once: `cpu` (oneDNN, validate/cpu_replay.h)
// and `cuda` (cuBLAS/cuDNN/strata's kernels, validate/cuda_replay.h). `strata validate profile` and `validate
// graphs` take one by name (--device), and the graph check (validate/graph_check.h) replays and times its
// candidates on it; nothing outside replay_device.cc chooses between them by name.
#pragma once

#include <string>
#include <string_view>

#include "hw/gpu_spec.h"
#include "validate/cpu_replay.h"

namespace strata::validate {

struct ReplayDevice {
  std::string_view name;       // "cpu", "cuda"
  std::string_view kernels;    // "oneDNN", "cuBLAS/cuDNN", for messages
  std::string_view library;    // short name for table columns: "oneDNN", "CUDA"
  std::string_view where;      // "the host CPU", "the GPU"
  bool on_host_cpu = false;    // priced by the catalogue's host-cpu entry (else by a GPU's entry)
  bool large_kernels = false;  // reaches its peak only at sizes a CPU core takes seconds for (calibration)
  // A system file whose gpu entry prices this device, for `model sim --profile` hints ("" when none ships).
  std::string_view system_file;
  std::string (*unavailable)();     // "" when this build can replay on it here; otherwise why not
  std::string (*description)();     // the library and device, for progress lines
  std::string (*profile_device)();  // the device name profile entries get by default
  CpuReplay (*replay)(const models::Graph&, const models::Feeds<double>&, const models::ExecOptions&);
  NodeTiming (*time_node)(const models::Graph&, models::NodeId, const TimingOptions&);
  GraphTiming (*time_graph)(const models::Graph&, const TimingOptions&);
  CpuProfile (*profile)(const models::Graph&, const TimingOptions&, std::string_view device);
};

// "cpu, cuda".
std::string replay_device_names();
// The device named `name`; throws util::InputError naming the choices.
const ReplayDevice& find_replay_device(std::string_view name);
// Why a system whose GPU entry is `gpu` cannot price what `device` measures ("" when it can): the CPU is
// priced as host-cpu (strata validate host), a GPU as a GPU of the catalogue. `what` names the system in the
// message (e.g. "--hw dgx-h100.yaml").
std::string pricing_mismatch(const ReplayDevice& device, const hw::GpuSpec& gpu, std::string_view what);

// The host CPU (the default everywhere).
const ReplayDevice& cpu_replay_device();

}  // namespace strata::validate
