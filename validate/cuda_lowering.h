// One models/ node lowered to cuBLAS, cuDNN or strata's own CUDA kernels (validate/cuda_kernels.h), f32 in
// the graph's dense row-major layouts. Internal to validate/cuda_replay.cc; compiled only with the GPU
// backend (STRATA_HAVE_CUDA). The lowerings are one table in cuda_lowering.cc keyed by operator name; a node
// without one (or in a configuration it refuses, cuda_plan.h's Unsupported) runs the reference executor's
// kernel on the host, its inputs copied from and its outputs to the device.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "models/ir/graph.h"

namespace strata::validate::cuda {

// Throws std::runtime_error "<what>: <the library's error string>" unless the call succeeded.
void check(cudaError_t e, std::string_view what);
void check(cublasStatus_t s, std::string_view what);
void check(cudnnStatus_t s, std::string_view what);

// The process's CUDA stream and the cuDNN handle bound to it (created on first use, on device 0 or
// $CUDA_VISIBLE_DEVICES' first; one thread at a time, as the CPU replay).
struct Context {
  cudaStream_t stream = nullptr;
  cudnnHandle_t dnn = nullptr;
};
Context& context();

// cuBLAS, loaded with dlopen on first use rather than linked: linked, cuBLAS and cuBLASLt would be mapped and
// relocated at every strata command's start (about 215 MB resident, measured), GPU or not. The functions the
// replay calls, with the header's types, and a handle bound to context().stream. Throws std::runtime_error
// naming the library and dlerror() when it cannot be loaded.
struct Cublas {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasSetStream_v2) set_stream = nullptr;
  decltype(&cublasGetVersion_v2) get_version = nullptr;
  decltype(&cublasGetStatusString) status_string = nullptr;
  // The C API's cublasGemmStridedBatchedEx (the header adds C++ overloads, so its type is spelled out).
  cublasStatus_t (*gemm_strided_batched)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                         const void*, const void*, cudaDataType, int, long long, const void*,
                                         cudaDataType, int, long long, const void*, void*, cudaDataType, int,
                                         long long, int, cublasComputeType_t, cublasGemmAlgo_t) = nullptr;
  cublasHandle_t handle = nullptr;
};
const Cublas& cublas();
// "" when the library and every function above load (no device needed); otherwise why not.
std::string cublas_load_error();

// A device allocation of floats (RAII).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t floats);
  DeviceBuffer(DeviceBuffer&& o) noexcept : p_(o.p_), n_(o.n_) { o.p_ = nullptr, o.n_ = 0; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer();
  float* data() const { return p_; }
  std::size_t size() const { return n_; }

 private:
  float* p_ = nullptr;
  std::size_t n_ = 0;
};

// A compiled node: bind() gives it the device buffers of its inputs and outputs (dense f32, the node's value
// shapes); run() enqueues its work on context().stream (the host-reference node synchronizes inside run()).
class CudaNode {
 public:
  virtual ~CudaNode() = default;
  virtual void bind(std::span<const float* const> in, std::span<float* const> out) = 0;
  virtual void run() = 0;
  virtual std::string implementation() const = 0;  // "cuBLAS gemm (strided batched, f32)", ...
};

struct CudaLowering {
  std::unique_ptr<CudaNode> kernel;  // null: not lowered
  std::string why_not;               // when null: why
};
CudaLowering lower_to_cuda(const models::Graph& g, const models::Node& n);

// The reference executor's kernel for `n` on the host (double precision, rounded to f32), reading its inputs
// from and writing its outputs to device buffers; run() synchronizes the stream, copies, computes, copies
// back.
std::unique_ptr<CudaNode> host_reference_node(const models::Graph& g, const models::Node& n);

}  // namespace strata::validate::cuda
