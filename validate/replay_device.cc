#include "validate/replay_device.h"

#include <array>

#include <fmt/format.h>

#include "util/error.h"
#include "validate/cuda_replay.h"

namespace strata::validate {
namespace {

std::string cpu_unavailable() {
  return onednn_available() ? std::string() : std::string(kOneDnnMissing);
}
std::string cpu_description() {
  return fmt::format("{} ({})", onednn_description(), omp_threads_note());
}
std::string cpu_profile_device() {
  return std::string(kHostCpuDevice);
}
CpuProfile cuda_profile(const models::Graph& g, const TimingOptions& t, std::string_view device) {
  return profile_on_cuda(g, t, device);
}

// The registry: the one place that lists the devices.
const std::array<ReplayDevice, 2> kDevices{
    ReplayDevice{"cpu", "oneDNN", "oneDNN", "the host CPU", true, false, "configs/validate/host-cpu.yaml",
                 cpu_unavailable, cpu_description, cpu_profile_device, replay_on_cpu, time_node, time_graph,
                 profile_on_cpu},
    ReplayDevice{"cuda", "cuBLAS/cuDNN", "CUDA", "the GPU", false, true, "", cuda_unavailable_reason,
                 cuda_description, cuda_device_name, replay_on_cuda, time_node_cuda, time_graph_cuda,
                 cuda_profile},
};

}  // namespace

std::string replay_device_names() {
  std::string out;
  for (const auto& d : kDevices) out += fmt::format("{}{}", out.empty() ? "" : ", ", d.name);
  return out;
}

const ReplayDevice& find_replay_device(std::string_view name) {
  for (const auto& d : kDevices)
    if (d.name == name) return d;
  throw util::InputError(fmt::format("--device '{}': expected one of {}", name, replay_device_names()));
}

std::string pricing_mismatch(const ReplayDevice& device, const hw::GpuSpec& gpu, std::string_view what) {
  const bool host = gpu.name == kHostCpuDevice;
  if (host == device.on_host_cpu) return {};
  if (device.on_host_cpu)
    return fmt::format(
        "{}: its GPU is '{}'; {} on {} is priced as the device '{}' (a system file with gpu: host-cpu, e.g. "
        "from strata validate host)",
        what, gpu.name, device.kernels, device.where, kHostCpuDevice);
  return fmt::format(
      "{}: its GPU is '{}' (the host CPU); --device {} measures {}: give a system whose gpu is that GPU's "
      "catalogue entry (strata hw list; e.g. configs/hw/dgx-h100.yaml)",
      what, gpu.name, device.name, device.where);
}

const ReplayDevice& cpu_replay_device() {
  return kDevices[0];
}

}  // namespace strata::validate
