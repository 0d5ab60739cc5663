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

// The process's CUDA stream and the cuBLAS and cuDNN handles bound to it (created on first use, on device 0
// or $CUDA_VISIBLE_DEVICES' first; one thread at a time, as the CPU replay).
struct Context {
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  cudnnHandle_t dnn = nullptr;
};
Context& context();

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
