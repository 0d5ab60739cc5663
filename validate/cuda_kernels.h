// strata's own CUDA kernels for the GPU replay (validate/cuda_kernels.cu): the element-wise, movement,
// reduction and row-normalisation operators that cuBLAS and cuDNN do not cover in the layouts the graph
// keeps. Internal to validate/cuda_*.cc. Every tensor is f32 in device memory; a StridedView describes how an
// n-dimensional index maps to an element offset, so broadcasting (stride 0), transposition (permuted strides)
// and slices (an offset pointer plus the whole tensor's strides) are all one kind of view. The launchers
// enqueue on `stream` (a cudaStream_t) and return the launch's cudaError_t as an int (0: success).
#pragma once

#include <cstdint>

namespace strata::validate::cuda {

inline constexpr int kMaxRank = 8;

// dims[i] and strides[i] (in elements) for i < rank; rank 0 is a single element.
struct StridedView {
  int rank = 0;
  std::int64_t dims[kMaxRank] = {};
  std::int64_t strides[kMaxRank] = {};
};

enum class UnaryOp : std::uint8_t { kRelu, kSigmoid, kTanh, kGelu, kSilu, kRsqrt };
enum class BinaryOp : std::uint8_t { kAdd, kSub, kMul };

// y[i] = op(x[i]) for i < n (in place allowed).
int launch_unary(UnaryOp op, const float* x, float* y, std::int64_t n, void* stream);
// y at the dense index of `out` = op(a at a's view of it, b at b's view of it); a and b have out's dims,
// their strides 0 where they broadcast.
int launch_binary(BinaryOp op, const StridedView& a, const float* pa, const StridedView& b, const float* pb,
                  const StridedView& out, float* py, void* stream);
// dst[dst view(i)] = src[src view(i)] for every index i of the (common) dims.
int launch_copy(const StridedView& src, const float* ps, const StridedView& dst, float* pd, void* stream);
// y[j] = sum (or mean) over the reduced index r of x[kept(j) + reduced(r)]; `kept` has the output's dims in
// the dense output order with the input's strides, `reduced` the reduced dims with the input's strides.
int launch_reduce(const StridedView& kept, const StridedView& reduced, bool mean, const float* x, float* y,
                  void* stream);
// Row normalisation of x [rows, n]: layernorm (y = (x - mean) * rstd * gamma [+ beta]) or rmsnorm
// (y = x * rsqrt(mean(x^2) + eps) * gamma); beta may be null.
int launch_row_norm(bool rms, const float* x, const float* gamma, const float* beta, float* y,
                    std::int64_t rows, std::int64_t n, float eps, void* stream);

// Softmax over rows of n contiguous floats (the last axis), max-subtracted, as models/ops/normalization.cc's
// softmax defines it: row r sees keys k <= last(r) (cuda_kernel_math.h softmax_last_key), all n unless
// causal, else (r mod q_len) + shift with q_len the row axis's length (the second-to-last dim) and shift =
// n - q_len (keys aligned to the end; negative when there are fewer keys than queries); keys after it give 0.
// A row that sees no key gives NaN, as the reference's 0 · (1 / 0).
struct RowSoftmax {
  std::int64_t rows = 0, n = 0, q_len = 1, shift = 0;
  bool causal = false;
};
// y = softmax of x row by row (one block per row); y == x (in place) allowed.
int launch_row_softmax(const RowSoftmax& p, const float* x, float* y, void* stream);

// 2-D pooling over `planes` (N x C) NCHW planes of h x w as models/ops/pooling.cc defines it: output (oy, ox)
// pools the window of kh x kw starting at (oy sh - pt, ox sw - pl), clipped to the input; the average divides
// by the clipped window's size or, with include_pad, by the window clipped to the input padded by pb and pr
// at its end. Any padding and ceil mode (the output size is given), which cuDNN's descriptors cannot express.
struct PoolWindow {
  std::int64_t planes = 0, h = 0, w = 0, oh = 0, ow = 0, kh = 1, kw = 1, sh = 1, sw = 1;
  std::int64_t pt = 0, pl = 0, pb = 0, pr = 0;
  bool avg = false, include_pad = false;
};
int launch_pool(const PoolWindow& p, const float* x, float* y, void* stream);
// Embedding lookup: y [rows, d] = table [index[r], :] for integer indices stored as floats (rounded to the
// nearest, negative ones counted from the end as ONNX Gather does); an index outside [-vocab, vocab) gives
// a row of NaN (the reference executor throws), so a bad index fails the comparison instead of reading out
// of bounds.
int launch_gather_rows(const float* index, std::int64_t rows, const float* table, std::int64_t vocab,
                       std::int64_t d, float* y, void* stream);

}  // namespace strata::validate::cuda
