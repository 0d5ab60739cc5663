// What the files of the CUDA lowering table share (validate/cuda_lowering.cc, which holds the table, and the
// operators lowered in files of their own, validate/cuda_attention.cc): the node's view, the bound-buffers
// base class, and the cuBLAS GEMM call. Internal to those files; compiled only with the GPU backend.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "models/ir/attrs.h"
#include "models/ir/tensor_type.h"
#include "validate/cuda_lowering.h"
#include "validate/cuda_plan.h"

namespace strata::validate::cuda {

// The node's types and attributes, what every lowering reads (as the oneDNN lowerings' NodeView).
struct NodeView {
  std::vector<models::TensorType> in, out;
  const models::Attrs& attrs;
  const models::Shape& in_shape(std::size_t i) const { return in.at(i).shape; }
  const models::Shape& out_shape(std::size_t i = 0) const { return out.at(i).shape; }
};

// The common part of every node: its bound buffers.
class BoundNode : public CudaNode {
 public:
  void bind(std::span<const float* const> in, std::span<float* const> out) override {
    in_.assign(in.begin(), in.end());
    out_.assign(out.begin(), out.end());
  }

 protected:
  std::vector<const float*> in_;
  std::vector<float*> out_;
};

// `v` as cuBLAS/cuDNN's int, or Unsupported naming `what`.
int to_int(std::int64_t v, const char* what);

// Throws Unsupported unless every size of `p` fits cuBLAS's int.
void check_gemm_sizes(const GemmPlan& p);

// One cublasGemmStridedBatchedEx on context().stream: out = alpha · (the product `p` describes), f32 operands
// with f32 compute (CUBLAS_COMPUTE_32F: no TF32 rounding); `first` is cuBLAS's first operand (the graph's
// b), `second` its second (the graph's a). No allocation and no synchronization: a CUDA graph captures it.
void run_gemm(const GemmPlan& p, float alpha, const float* first, const float* second, float* out);

// Lowerings defined in validate/cuda_attention.cc: softmax with causal = 1 (strata's row-softmax kernel)
// and fused attention (two cuBLAS GEMMs around that kernel).
std::unique_ptr<CudaNode> lower_causal_softmax(const NodeView& v);
std::unique_ptr<CudaNode> lower_attention(const NodeView& v);

}  // namespace strata::validate::cuda
