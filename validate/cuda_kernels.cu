// strata's own CUDA kernels (validate/cuda_kernels.h). Written for clarity over speed: grid-stride loops
// with 64-bit indices, one thread per output element over the per-element functions of
// validate/cuda_kernel_math.h (which the host tests run too), a block per row for the normalisations. The GPU
// replay times them like the cuBLAS/cuDNN kernels, so their speed is what the profile records for these
// operators (docs/gpu.md).
#include <cuda_runtime.h>

#include "validate/cuda_kernel_math.h"
#include "validate/cuda_kernels.h"

namespace strata::validate::cuda {
namespace {

constexpr int kThreads = 256;

int blocks_for(std::int64_t n) {
  const std::int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<int>(b < 1 ? 1 : (b > 65535 ? 65535 : b));
}

std::int64_t numel(const StridedView& v) {
  std::int64_t n = 1;
  for (int i = 0; i < v.rank; ++i) n *= v.dims[i];
  return n;
}

__global__ void unary_kernel(UnaryOp op, const float* x, float* y, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    y[i] = apply_unary(op, x[i]);
}

__global__ void binary_kernel(BinaryOp op, StridedView a, const float* pa, StridedView b, const float* pb,
                              StridedView out, float* py, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    binary_at(op, a, pa, b, pb, out, py, i);
}

__global__ void copy_kernel(StridedView src, const float* ps, StridedView dst, float* pd, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    copy_at(src, ps, dst, pd, i);
}

__global__ void pool_kernel(PoolWindow p, const float* x, float* y, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    y[i] = pool_at(p, x, i);
}

__global__ void gather_kernel(const float* index, const float* table, std::int64_t vocab, std::int64_t d,
                              float* y, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    y[i] = gather_at(index, table, vocab, d, i);
}

__global__ void reduce_kernel(StridedView kept, StridedView reduced, bool mean, const float* x, float* y,
                              std::int64_t outputs, std::int64_t count) {
  for (std::int64_t j = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; j < outputs;
       j += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    reduce_at(kept, reduced, mean, x, y, j, count);
}

// Block-wide sum of one value per thread (blockDim.x == kThreads).
__device__ float block_sum(float v, float* shared) {
  shared[threadIdx.x] = v;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s /= 2) {
    if (threadIdx.x < static_cast<unsigned>(s)) shared[threadIdx.x] += shared[threadIdx.x + s];
    __syncthreads();
  }
  const float total = shared[0];
  __syncthreads();
  return total;
}

__global__ void row_norm_kernel(bool rms, const float* x, const float* gamma, const float* beta, float* y,
                                std::int64_t rows, std::int64_t n, float eps) {
  __shared__ float shared[kThreads];
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float* xr = x + row * n;
    float* yr = y + row * n;
    float mean = 0.0f;
    if (!rms) {
      float s = 0.0f;
      for (std::int64_t i = threadIdx.x; i < n; i += kThreads) s += xr[i];
      mean = block_sum(s, shared) / static_cast<float>(n);
    }
    float ss = 0.0f;
    for (std::int64_t i = threadIdx.x; i < n; i += kThreads) ss += (xr[i] - mean) * (xr[i] - mean);
    const float rstd = rsqrtf(block_sum(ss, shared) / static_cast<float>(n) + eps);
    for (std::int64_t i = threadIdx.x; i < n; i += kThreads)
      yr[i] = normalise(xr[i], mean, rstd, gamma, beta, i);
  }
}

// Block-wide max of one value per thread (blockDim.x == kThreads).
__device__ float block_max(float v, float* shared) {
  shared[threadIdx.x] = v;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s /= 2) {
    if (threadIdx.x < static_cast<unsigned>(s))
      shared[threadIdx.x] = fmaxf(shared[threadIdx.x], shared[threadIdx.x + s]);
    __syncthreads();
  }
  const float m = shared[0];
  __syncthreads();
  return m;
}

// A block per row: the max over the visible keys, the sum of their exponentials, then every element
// (softmax_element). Each thread reads and writes the same elements, so y may be x.
__global__ void row_softmax_kernel(RowSoftmax p, const float* x, float* y) {
  __shared__ float shared[kThreads];
  for (std::int64_t row = blockIdx.x; row < p.rows; row += gridDim.x) {
    const float* xr = x + row * p.n;
    float* yr = y + row * p.n;
    const std::int64_t last = softmax_last_key(p, row);
    float m = -INFINITY;
    for (std::int64_t k = threadIdx.x; k <= last; k += kThreads) m = fmaxf(m, xr[k]);
    const float row_max = block_max(m, shared);
    float s = 0.0f;
    for (std::int64_t k = threadIdx.x; k <= last; k += kThreads) s += expf(xr[k] - row_max);
    const float inv_sum = 1.0f / block_sum(s, shared);
    for (std::int64_t k = threadIdx.x; k < p.n; k += kThreads)
      yr[k] = softmax_element(xr[k], row_max, inv_sum, k <= last);
  }
}

int last_error() {
  return static_cast<int>(cudaGetLastError());
}

}  // namespace

int launch_unary(UnaryOp op, const float* x, float* y, std::int64_t n, void* stream) {
  if (n <= 0) return 0;
  unary_kernel<<<blocks_for(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(op, x, y, n);
  return last_error();
}

int launch_binary(BinaryOp op, const StridedView& a, const float* pa, const StridedView& b, const float* pb,
                  const StridedView& out, float* py, void* stream) {
  const std::int64_t n = numel(out);
  if (n <= 0) return 0;
  binary_kernel<<<blocks_for(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(op, a, pa, b, pb, out, py,
                                                                                   n);
  return last_error();
}

int launch_copy(const StridedView& src, const float* ps, const StridedView& dst, float* pd, void* stream) {
  const std::int64_t n = numel(src);
  if (n <= 0) return 0;
  copy_kernel<<<blocks_for(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(src, ps, dst, pd, n);
  return last_error();
}

int launch_reduce(const StridedView& kept, const StridedView& reduced, bool mean, const float* x, float* y,
                  void* stream) {
  const std::int64_t outputs = numel(kept), count = numel(reduced);
  if (outputs <= 0) return 0;
  reduce_kernel<<<blocks_for(outputs), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      kept, reduced, mean, x, y, outputs, count);
  return last_error();
}

int launch_row_norm(bool rms, const float* x, const float* gamma, const float* beta, float* y,
                    std::int64_t rows, std::int64_t n, float eps, void* stream) {
  if (rows <= 0 || n <= 0) return 0;
  const int blocks = static_cast<int>(rows < 65535 ? rows : 65535);
  row_norm_kernel<<<blocks, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(rms, x, gamma, beta, y, rows, n,
                                                                              eps);
  return last_error();
}

int launch_row_softmax(const RowSoftmax& p, const float* x, float* y, void* stream) {
  if (p.rows <= 0 || p.n <= 0) return 0;
  const int blocks = static_cast<int>(p.rows < 65535 ? p.rows : 65535);
  row_softmax_kernel<<<blocks, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(p, x, y);
  return last_error();
}

int launch_pool(const PoolWindow& p, const float* x, float* y, void* stream) {
  const std::int64_t n = p.planes * p.oh * p.ow;
  if (n <= 0) return 0;
  pool_kernel<<<blocks_for(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(p, x, y, n);
  return last_error();
}

int launch_gather_rows(const float* index, std::int64_t rows, const float* table, std::int64_t vocab,
                       std::int64_t d, float* y, void* stream) {
  const std::int64_t n = rows * d;
  if (n <= 0) return 0;
  gather_kernel<<<blocks_for(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(index, table, vocab, d, y,
                                                                                   n);
  return last_error();
}

}  // namespace strata::validate::cuda
