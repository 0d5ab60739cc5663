// The host-side half of the GPU replay (validate/cuda_replay.h): how a models/ node maps onto cuBLAS, cuDNN
// and strata's own kernels (validate/cuda_kernels.h). Pure functions of shapes and attributes, compiled in
// every build (no CUDA headers), so they are tested on machines without a GPU or CUDA against hand-derived
// values (tests/validate/cuda_plan_test.cc).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "models/ir/attrs.h"
#include "models/ir/tensor_type.h"
#include "validate/cuda_kernels.h"

namespace strata::validate::cuda {

// A configuration a GPU lowering does not handle: the node runs on the reference kernel instead, and `why`
// says so in the replay's report.
struct Unsupported {
  std::string why;
};

// Element type of a GEMM's operands: the replay is f32; bf16 and f16 (with f32 accumulation) are the types
// the plan can describe for mixed-precision GEMMs.
enum class GemmType : std::uint8_t { kF32, kBf16, kF16 };

// One cublasGemmStridedBatchedEx call computing a row-major batched product out[b] = op(a[b]) op(b[b]).
// cuBLAS is column-major: a row-major M x N matrix is its column-major N x M transpose, so the call computes
// outᵀ = op(b)ᵀ op(a)ᵀ, i.e. cuBLAS's first operand is the graph's b and its second the graph's a, and the
// transposes carry over unchanged (a row-major operand read as stored is a column-major transposed one).
struct GemmPlan {
  bool op_first_t = false;           // cuBLAS transa (of the graph's b): CUBLAS_OP_T when true
  bool op_second_t = false;          // cuBLAS transb (of the graph's a)
  std::int64_t m = 0, n = 0, k = 0;  // cuBLAS's: m = N (columns of out), n = M (rows of out), k = K
  std::int64_t ld_first = 0, ld_second = 0, ld_out = 0;  // leading dimensions (row lengths as stored)
  std::int64_t stride_first = 0, stride_second = 0,
               stride_out = 0;  // elements between batch items; 0: shared
  std::int64_t batch = 1;
  GemmType type = GemmType::kF32;
};
// For matmul/batch_matmul with operand shapes `a`, `b` (trans_a / trans_b as the node's attributes) and
// output shape `out`. A batch dimension that broadcasts is supported when the operand has all of out's batch
// dims (stride of a whole matrix) or none of them (a single matrix, stride 0); anything else throws
// Unsupported.
GemmPlan plan_gemm(const models::Shape& a, bool trans_a, const models::Shape& b, bool trans_b,
                   const models::Shape& out, GemmType type = GemmType::kF32);

// A 2-D convolution or pooling as cuDNN's legacy descriptors take it: symmetric padding per spatial dim, and
// the output size cuDNN computes, (in + 2 pad - dilation (kernel - 1) - 1) / stride + 1, equal to the
// graph's.
struct Window2d {
  int pad_h = 0, pad_w = 0, stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
  int kernel_h = 1, kernel_w = 1;
};
// pads are [top, left, bottom, right] as in models/ops (conv2d, maxpool2d, avgpool2d); throws Unsupported for
// asymmetric pads or an output size cuDNN would not produce (pooling's ceil mode).
// maxpool2d / avgpool2d of NCHW `in` to `out` (the graph's output shape, ceil mode already applied) as
// strata's pooling kernel takes it (cuda_kernels.h PoolWindow): any pads, the divisor as `count_include_pad`
// says. Throws Unsupported for anything but a 2-D window over NCHW tensors.
PoolWindow plan_pool(const models::Shape& in, const models::Shape& out, const models::Attrs& attrs, bool avg);

Window2d plan_window(std::span<const std::int64_t> kernel, std::span<const std::int64_t> strides,
                     std::span<const std::int64_t> pads, std::span<const std::int64_t> dilations,
                     const models::Shape& in, const models::Shape& out);

// Softmax over `axis` of `shape` as cuDNN's NCHW softmax with CUDNN_SOFTMAX_MODE_CHANNEL: N = the product of
// the dims before the axis, C = the axis, H = the product of the dims after it, W = 1.
struct SoftmaxDims {
  std::int64_t n = 1, c = 1, h = 1;
};
SoftmaxDims plan_softmax(const models::Shape& shape, std::int64_t axis);

// Softmax over the last axis of `shape` as launch_row_softmax takes it (cuda_kernels.h RowSoftmax): rows =
// the product of the other dims, n = the last dim; causal: q_len = the second-to-last dim and shift = n -
// q_len (models/ops/normalization.cc's mask). Throws Unsupported unless `axis` is the last of at least two
// dims (causal) or the last of at least one (not causal).
RowSoftmax plan_row_softmax(const models::Shape& shape, std::int64_t axis, bool causal);

// Fused attention (models/ops/attention.cc) o = softmax(scale q kᵀ [causal]) v, q [B, H, S, D], k and v [B,
// Hkv, Skv, D], as cuBLAS and the row-softmax kernel compute it. The H = G · Hkv query heads sharing a
// key/value head are adjacent in q and o, so q and o are read as [B·Hkv, G·S, D] (row r of a batch item is
// query r mod S) with no copy, and each GEMM is one strided batch of B·Hkv items:
//   scores [B·Hkv, G·S, Skv] = scale · q kᵀ   (`scores`, alpha = scale)
//   scores = row softmax in place            (`softmax`: Skv per row, causal rows see k <= (r mod S) + Skv -
//   S) o [B·Hkv, G·S, D] = scores v              (`output`, alpha = 1)
// Throws Unsupported for shapes the operator's rule refuses (and causal with fewer keys than queries).
struct AttentionPlan {
  GemmPlan scores, output;
  RowSoftmax softmax;
  std::int64_t score_elements = 0;  // B·H·S·Skv floats of workspace
  float scale = 1;                  // the `scale` attribute, or 1/sqrt(D) when it is 0
};
AttentionPlan plan_attention(const models::Shape& q, const models::Shape& k, const models::Shape& v,
                             bool causal, double scale);

// The dense row-major view of `shape` (rank <= kMaxRank, else Unsupported).
StridedView dense_view(const models::Shape& shape);
// `in` (numpy-broadcast to `out`) read at out's indices: right-aligned, stride 0 where `in` has extent 1
// and out does not, or where `in` has no such dim.
StridedView broadcast_view(const models::Shape& in, const models::Shape& out);
// `in` read through `perm` (out dim i = in dim perm[i]; empty: reversed): out's dims, in's strides permuted.
StridedView transpose_view(const models::Shape& in, std::span<const std::int64_t> perm);
// Where input `index` of a concat along `axis` lands in the output: the input's dims with the output's
// strides, and the element offset of its first element in the output.
struct ConcatPart {
  StridedView dst;
  std::int64_t offset = 0;
};
ConcatPart concat_part(std::span<const models::Shape> inputs, std::size_t index, std::int64_t axis);
// A reduction of `in` over `axes` (empty: all; negative counted from the end) as launch_reduce takes it: the
// kept dims (in order) and the reduced dims, each with the input's strides.
struct ReducePlan {
  StridedView kept, reduced;
};
ReducePlan plan_reduce(const models::Shape& in, std::span<const std::int64_t> axes);

}  // namespace strata::validate::cuda
