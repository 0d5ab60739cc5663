// Causal softmax and fused attention on CUDA (registered in validate/cuda_lowering.cc's table). Attention is
// the unfused computation the reference kernel defines (models/ops/attention.cc): q kᵀ by a cuBLAS strided
// batched GEMM with the scale as its alpha, the (causal) row softmax by strata's kernel in place, and p v by
// a second GEMM, over the shapes of validate/cuda_plan.h plan_attention. Unlike FlashAttention (Dao et al.
// 2022, arXiv 2205.14135) the B·H·S·Skv scores are written to a workspace the node owns, so its time is that
// of the unfused computation on the GPU.
#include <stdexcept>

#include <fmt/format.h>

#include "validate/cuda_kernels.h"
#include "validate/cuda_node.h"
#include "validate/cuda_plan.h"

namespace strata::validate::cuda {
namespace {

void check_launch(int error, const char* what) {
  check(static_cast<cudaError_t>(error), what);
}

// softmax with causal = 1 over the last axis: launch_row_softmax, the reference's mask (row r of the
// [.., S, Skv] rows sees keys k <= (r mod S) + Skv - S).
class CausalSoftmaxNode final : public BoundNode {
 public:
  explicit CausalSoftmaxNode(RowSoftmax p) : p_(p) {}
  void run() override {
    check_launch(launch_row_softmax(p_, in_[0], out_[0], context().stream), "softmax kernel");
  }
  std::string implementation() const override { return "strata causal row-softmax kernel"; }

 private:
  RowSoftmax p_;
};

// attention(q, k, v): scores = scale · q kᵀ, softmax in place, o = scores v. The workspace is allocated when
// the node is built, so run() only enqueues (no allocation, no synchronization) and a CUDA graph captures it.
class AttentionNode final : public BoundNode {
 public:
  explicit AttentionNode(const AttentionPlan& p) : p_(p) {
    check_gemm_sizes(p.scores);
    check_gemm_sizes(p.output);
    try {
      scores_ = DeviceBuffer(static_cast<std::size_t>(p.score_elements));
    } catch (const std::runtime_error& e) {
      cudaGetLastError();  // clear the failed allocation; the node runs on the host instead
      throw Unsupported{
          fmt::format("attention's scores workspace ({} floats): {}", p.score_elements, e.what())};
    }
  }
  void run() override {
    // cuBLAS's first operand is the graph's b (k, then v), its second the graph's a (q, then the scores).
    run_gemm(p_.scores, p_.scale, in_[1], in_[0], scores_.data());
    check_launch(launch_row_softmax(p_.softmax, scores_.data(), scores_.data(), context().stream),
                 "softmax kernel");
    run_gemm(p_.output, 1.0f, in_[2], scores_.data(), out_[0]);
  }
  std::string implementation() const override {
    return fmt::format(
        "cuBLAS gemm strided batched (f32, batch {}) + strata {}row-softmax kernel + cuBLAS gemm (scores "
        "workspace {} floats)",
        p_.scores.batch, p_.softmax.causal ? "causal " : "", p_.score_elements);
  }

 private:
  AttentionPlan p_;
  DeviceBuffer scores_;
};

}  // namespace

std::unique_ptr<CudaNode> lower_causal_softmax(const NodeView& v) {
  return std::make_unique<CausalSoftmaxNode>(plan_row_softmax(v.in_shape(0), v.attrs.i("axis"), true));
}

std::unique_ptr<CudaNode> lower_attention(const NodeView& v) {
  if (v.in.size() != 3) throw Unsupported{"attention needs q, k and v"};
  const auto p = plan_attention(v.in_shape(0), v.in_shape(1), v.in_shape(2), v.attrs.i("causal") != 0,
                                v.attrs.f("scale"));
  return std::make_unique<AttentionNode>(p);
}

}  // namespace strata::validate::cuda
