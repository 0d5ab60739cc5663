// Replaying models/ graphs on an NVIDIA GPU (issue 15, the GPU backend of validate/; docs/gpu.md): the
// CPU replay's structures (validate/cpu_replay.h) filled by cuBLAS (matmul, batch_matmul), cuDNN (conv2d in
// plain FP32, max/avg pooling, softmax, relu/sigmoid/tanh, batchnorm) and strata's own CUDA kernels
// (validate/cuda_kernels.cu: gelu, silu, rsqrt, broadcasting ewadd/ewsub/ewmul/scalar_mul, layernorm,
// rmsnorm, reduce_sum/mean, concat, split, transpose, pooling that cuDNN cannot express, embedding, views),
// f32 throughout; every other node (causal softmax, attention, backward and optimizer operators, ...) runs
// the reference executor's kernel on the host between copies. Kernels are timed with CUDA events on one
// stream: warm-up runs, then repetitions that replay a CUDA graph of the GPU kernels (the host's kernels run
// directly between graphs), the median, min and max as the CPU profiler keeps.
//
// Compiled whenever CMake finds the CUDA toolkit, cuDNN and NCCL (STRATA_CUDA, docs/gpu.md). Without
// the backend every function below throws std::runtime_error with kCudaNotBuilt; with it but without a usable
// GPU (no device, no driver) with "no CUDA device (<cudaGetErrorString>)".
#pragma once

#include <string>
#include <string_view>

#include "validate/cpu_replay.h"

namespace strata::validate {

inline constexpr std::string_view kCudaNotBuilt =
    "strata was built without CUDA (the GPU backend needs the CUDA toolkit, cuDNN and NCCL when CMake runs: "
    "configure with -DSTRATA_CUDA=ON to see what is missing)";

// Whether this build has the GPU backend.
bool cuda_built();
// Empty when a CUDA device can be used; otherwise why not: kCudaNotBuilt, or "no CUDA device
// (cudaGetDeviceCount: <the runtime's error string>)".
std::string cuda_unavailable_reason();
// Throws std::runtime_error with cuda_unavailable_reason() unless it is empty.
void require_cuda();
// "NVIDIA H100 80GB HBM3 (sm_90, 79.1 GiB), CUDA runtime 13000, cuBLAS 130100, cuDNN 91900" (needs a device).
std::string cuda_description();
// "" when cuBLAS, which the replay loads when a GEMM first runs (dlopen: linked, it would add about 215 MB
// resident to every strata command), loads with every function the replay calls; otherwise why not
// (kCudaNotBuilt without the backend). Needs no GPU.
std::string cublas_load_error();
// The device's name as cudaGetDeviceProperties gives it: the default device of GPU profile entries.
std::string cuda_device_name();

// As replay_on_cpu, on the GPU: every value is uploaded, every node run in graph order, every value
// downloaded into the result. NodeBackend::backend is kCuda (detail: the library and kernel) or kReference.
CpuReplay replay_on_cuda(const models::Graph& g, const models::Feeds<double>& feeds = {},
                         const models::ExecOptions& options = {});
// As time_node: one node on pseudo-random inputs, timed with CUDA events around each run (a CUDA-graph
// replay of it on the GPU; NodeBackend::detail says which).
NodeTiming time_node_cuda(const models::Graph& g, models::NodeId node, const TimingOptions& options = {});
// As time_graph: whole passes over shared device buffers, each pass timed with CUDA events (GraphTiming::
// cuda_graph: every kernel replayed from CUDA graphs).
GraphTiming time_graph_cuda(const models::Graph& g, const TimingOptions& options = {});
// As profile_on_cpu; `device` empty: cuda_device_name().
CpuProfile profile_on_cuda(const models::Graph& g, const TimingOptions& options = {},
                           std::string_view device = {});

}  // namespace strata::validate
