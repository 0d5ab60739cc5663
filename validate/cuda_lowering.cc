// models/ operators lowered to cuBLAS (https://docs.nvidia.com/cuda/cublas/), cuDNN's legacy API (still
// shipped in cuDNN 9: https://docs.nvidia.com/deeplearning/cudnn/latest/api/) and strata's own kernels
// (validate/cuda_kernels.cu), one lowering per operator in the table at the end. Shapes map onto the
// libraries' descriptors by the pure functions of validate/cuda_plan.h.
#include "validate/cuda_lowering.h"

#include <dlfcn.h>

#include <algorithm>
#include <climits>
#include <stdexcept>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "models/cost/cost_model.h"
#include "validate/cuda_kernels.h"
#include "validate/cuda_node.h"
#include "validate/cuda_plan.h"

namespace strata::validate::cuda {

void check(cudaError_t e, std::string_view what) {
  if (e != cudaSuccess) throw std::runtime_error(fmt::format("{}: {}", what, cudaGetErrorString(e)));
}
void check(cublasStatus_t s, std::string_view what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(fmt::format("{}: {}", what, cublas().status_string(s)));
}
void check(cudnnStatus_t s, std::string_view what) {
  if (s != CUDNN_STATUS_SUCCESS)
    throw std::runtime_error(fmt::format("{}: {}", what, cudnnGetErrorString(s)));
}

Context& context() {
  // Never destroyed: at exit the CUDA runtime may be torn down before static destructors would run, and the
  // process's end releases the handles anyway.
  static Context* c = [] {
    auto* ctx = new Context;
    check(cudaStreamCreateWithFlags(&ctx->stream, cudaStreamNonBlocking), "cudaStreamCreate");
    check(cudnnCreate(&ctx->dnn), "cudnnCreate");
    check(cudnnSetStream(ctx->dnn, ctx->stream), "cudnnSetStream");
    return ctx;
  }();
  return *c;
}

namespace {

// cuBLAS's functions, loaded (no handle yet: that needs a device).
const Cublas& cublas_functions() {
  static const Cublas* api = [] {
    // The soname of the cuBLAS strata was built against first (found on the library path, as a linked one
    // would be), then the file CMake found.
    void* lib = dlopen(STRATA_CUBLAS_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (!lib) lib = dlopen(STRATA_CUBLAS_PATH, RTLD_NOW | RTLD_LOCAL);
    if (!lib)
      throw std::runtime_error(fmt::format("cuBLAS could not be loaded ({} or {}): {}", STRATA_CUBLAS_SONAME,
                                           STRATA_CUBLAS_PATH, dlerror()));
    auto c = std::make_unique<Cublas>();  // kept for the process's life, as the library
    const auto load = [lib](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
      if (!fn) throw std::runtime_error(fmt::format("cuBLAS has no {}: {}", name, dlerror()));
    };
    load(c->create, "cublasCreate_v2");
    load(c->set_stream, "cublasSetStream_v2");
    load(c->get_version, "cublasGetVersion_v2");
    load(c->status_string, "cublasGetStatusString");
    load(c->gemm_strided_batched, "cublasGemmStridedBatchedEx");
    return c.release();
  }();
  return *api;
}

}  // namespace

const Cublas& cublas() {
  static const Cublas* api = [] {
    auto c = std::make_unique<Cublas>(cublas_functions());
    if (const auto s = c->create(&c->handle); s != CUBLAS_STATUS_SUCCESS)
      throw std::runtime_error(fmt::format("cublasCreate: {}", c->status_string(s)));
    if (const auto s = c->set_stream(c->handle, context().stream); s != CUBLAS_STATUS_SUCCESS)
      throw std::runtime_error(fmt::format("cublasSetStream: {}", c->status_string(s)));
    return c.release();
  }();
  return *api;
}

std::string cublas_load_error() {
  try {
    (void)cublas_functions();
    return {};
  } catch (const std::runtime_error& e) {
    return e.what();
  }
}

DeviceBuffer::DeviceBuffer(std::size_t floats) : n_(floats) {
  check(cudaMalloc(reinterpret_cast<void**>(&p_), std::max<std::size_t>(floats, 1) * sizeof(float)),
        fmt::format("cudaMalloc of {} floats", floats));
}
DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  std::swap(p_, o.p_);
  std::swap(n_, o.n_);
  return *this;
}
DeviceBuffer::~DeviceBuffer() {
  if (p_) cudaFree(p_);
}

int to_int(std::int64_t v, const char* what) {
  if (v < 0 || v > INT_MAX) throw Unsupported{fmt::format("{} {} does not fit cuBLAS/cuDNN's int", what, v)};
  return static_cast<int>(v);
}

void check_gemm_sizes(const GemmPlan& p) {
  const std::pair<std::int64_t, const char*> sizes[] = {
      {p.m, "m"},           {p.n, "n"},        {p.k, "k"},        {p.ld_first, "lda"},
      {p.ld_second, "ldb"}, {p.ld_out, "ldc"}, {p.batch, "batch"}};
  for (const auto& [v, what] : sizes) (void)to_int(v, what);
}

void run_gemm(const GemmPlan& p, float alpha, const float* first, const float* second, float* out) {
  const auto& blas = cublas();
  const float beta = 0.0f;
  check(blas.gemm_strided_batched(
            blas.handle, p.op_first_t ? CUBLAS_OP_T : CUBLAS_OP_N, p.op_second_t ? CUBLAS_OP_T : CUBLAS_OP_N,
            static_cast<int>(p.m), static_cast<int>(p.n), static_cast<int>(p.k), &alpha, first, CUDA_R_32F,
            static_cast<int>(p.ld_first), p.stride_first, second, CUDA_R_32F, static_cast<int>(p.ld_second),
            p.stride_second, &beta, out, CUDA_R_32F, static_cast<int>(p.ld_out), p.stride_out,
            static_cast<int>(p.batch), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
        "cublasGemmStridedBatchedEx");
}

namespace {

using models::Shape;
constexpr float kOne = 1.0f, kZero = 0.0f;

std::int64_t numel(const Shape& s) {
  std::int64_t n = 1;
  for (auto d : s) n *= d;
  return n;
}
bool fused_relu(const models::Attrs& a) {
  return a.has("activation") && a.s("activation") == "relu";
}

// A cuDNN descriptor owned by a node (RAII over its create/destroy pair).
template <class T, cudnnStatus_t (*Create)(T*), cudnnStatus_t (*Destroy)(T)>
class Descriptor {
 public:
  Descriptor() { check(Create(&d_), "cudnnCreate...Descriptor"); }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  ~Descriptor() { Destroy(d_); }
  T get() const { return d_; }

 private:
  T d_{};
};
using TensorDesc =
    Descriptor<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor, cudnnDestroyTensorDescriptor>;
using FilterDesc =
    Descriptor<cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor, cudnnDestroyFilterDescriptor>;
using ConvDesc = Descriptor<cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor,
                            cudnnDestroyConvolutionDescriptor>;
using PoolDesc =
    Descriptor<cudnnPoolingDescriptor_t, cudnnCreatePoolingDescriptor, cudnnDestroyPoolingDescriptor>;
using ActDesc = Descriptor<cudnnActivationDescriptor_t, cudnnCreateActivationDescriptor,
                           cudnnDestroyActivationDescriptor>;

void set_nchw(const TensorDesc& d, std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w) {
  check(cudnnSetTensor4dDescriptor(d.get(), CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, to_int(n, "N"),
                                   to_int(c, "C"), to_int(h, "H"), to_int(w, "W")),
        "cudnnSetTensor4dDescriptor");
}

// matmul / batch_matmul: one cublasGemmStridedBatchedEx (cuda_plan.h's GemmPlan), f32 operands with f32
// compute (CUBLAS_COMPUTE_32F: no TF32 rounding), then the fused relu if any.
class GemmNode final : public BoundNode {
 public:
  GemmNode(GemmPlan p, bool relu, std::int64_t out_numel) : p_(p), relu_(relu), out_numel_(out_numel) {
    check_gemm_sizes(p);
  }
  void run() override {
    run_gemm(p_, 1.0f, in_[1], in_[0], out_[0]);
    if (relu_)
      check(static_cast<cudaError_t>(
                launch_unary(UnaryOp::kRelu, out_[0], out_[0], out_numel_, context().stream)),
            "relu kernel");
  }
  std::string implementation() const override {
    return fmt::format("cuBLAS gemm strided batched (f32, batch {}){}", p_.batch, relu_ ? " + relu" : "");
  }

 private:
  GemmPlan p_;
  bool relu_;
  std::int64_t out_numel_;
};

std::unique_ptr<CudaNode> lower_matmul(const NodeView& v) {
  const auto p = plan_gemm(v.in_shape(0), v.attrs.i("trans_a") != 0, v.in_shape(1), v.attrs.i("trans_b") != 0,
                           v.out_shape());
  return std::make_unique<GemmNode>(p, fused_relu(v.attrs), numel(v.out_shape()));
}

// conv2d (NCHW, OIHW, groups, dilation, optional bias [O], fused relu): cudnnConvolutionForward with the
// fastest algorithm cuDNN's heuristics offer whose workspace can be allocated, then cudnnAddTensor for the
// bias and the relu kernel.
class ConvNode final : public BoundNode {
 public:
  ConvNode(const NodeView& v) : bias_(v.in.size() == 3), relu_(fused_relu(v.attrs)) {
    const auto& x = v.in_shape(0);
    const auto& w = v.in_shape(1);
    const auto& o = v.out_shape();
    const auto win = plan_window(Shape{w[2], w[3]}, v.attrs.ints("strides"), v.attrs.ints("pads"),
                                 v.attrs.ints("dilations"), x, o);
    const int groups = to_int(v.attrs.i("groups"), "groups");
    set_nchw(x_, x[0], x[1], x[2], x[3]);
    set_nchw(y_, o[0], o[1], o[2], o[3]);
    check(cudnnSetFilter4dDescriptor(w_.get(), CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, to_int(w[0], "K"),
                                     to_int(w[1], "C/groups"), to_int(w[2], "R"), to_int(w[3], "S")),
          "cudnnSetFilter4dDescriptor");
    check(cudnnSetConvolution2dDescriptor(conv_.get(), win.pad_h, win.pad_w, win.stride_h, win.stride_w,
                                          win.dilation_h, win.dilation_w, CUDNN_CROSS_CORRELATION,
                                          CUDNN_DATA_FLOAT),
          "cudnnSetConvolution2dDescriptor");
    check(cudnnSetConvolutionGroupCount(conv_.get(), groups), "cudnnSetConvolutionGroupCount");
    // Plain FP32 arithmetic, as the cuBLAS GEMMs (CUBLAS_COMPUTE_32F): cuDNN's default math type lets
    // convolutions run in TF32 on Ampere and later (measured on an H200: a 6.6 GFLOP batch-32 1x1 conv at
    // 83 TFLOP/s, above the 67 TFLOP/s FP32 peak), which the f32 replay and its f32 pricing would not match.
    check(cudnnSetConvolutionMathType(conv_.get(), CUDNN_FMA_MATH), "cudnnSetConvolutionMathType");
    int n = 0, c = 0, h = 0, ww = 0;
    check(cudnnGetConvolution2dForwardOutputDim(conv_.get(), x_.get(), w_.get(), &n, &c, &h, &ww),
          "cudnnGetConvolution2dForwardOutputDim");
    if (Shape{n, c, h, ww} != o) throw Unsupported{"cuDNN's output shape differs from the graph's"};
    if (bias_) set_nchw(b_, 1, o[1], 1, 1);
    out_numel_ = numel(o);
    choose_algorithm();
  }
  void run() override {
    const auto& c = context();
    check(cudnnConvolutionForward(c.dnn, &kOne, x_.get(), in_[0], w_.get(), in_[1], conv_.get(), algo_,
                                  workspace_.data(), workspace_bytes_, &kZero, y_.get(), out_[0]),
          "cudnnConvolutionForward");
    if (bias_)
      check(cudnnAddTensor(c.dnn, &kOne, b_.get(), in_[2], &kOne, y_.get(), out_[0]), "cudnnAddTensor");
    if (relu_)
      check(static_cast<cudaError_t>(launch_unary(UnaryOp::kRelu, out_[0], out_[0], out_numel_, c.stream)),
            "relu kernel");
  }
  std::string implementation() const override {
    return fmt::format("cuDNN convolution (algorithm {}, workspace {} B){}{}", static_cast<int>(algo_),
                       workspace_bytes_, bias_ ? " + bias" : "", relu_ ? " + relu" : "");
  }

 private:
  void choose_algorithm() {
    int found = 0;
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    check(cudnnGetConvolutionForwardAlgorithm_v7(context().dnn, x_.get(), w_.get(), conv_.get(), y_.get(),
                                                 CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &found, perf),
          "cudnnGetConvolutionForwardAlgorithm_v7");
    for (int i = 0; i < found; ++i) {
      if (perf[i].status != CUDNN_STATUS_SUCCESS) continue;
      try {
        workspace_ = DeviceBuffer((perf[i].memory + sizeof(float) - 1) / sizeof(float));
      } catch (const std::runtime_error&) {
        cudaGetLastError();  // clear the failed allocation; try the next algorithm
        continue;
      }
      algo_ = perf[i].algo;
      workspace_bytes_ = perf[i].memory;
      return;
    }
    throw Unsupported{"cuDNN offers no convolution algorithm for this configuration"};
  }
  TensorDesc x_, y_, b_;
  FilterDesc w_;
  ConvDesc conv_;
  bool bias_, relu_;
  std::int64_t out_numel_ = 0;
  cudnnConvolutionFwdAlgo_t algo_ = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  DeviceBuffer workspace_;
  std::size_t workspace_bytes_ = 0;
};

std::unique_ptr<CudaNode> lower_conv(const NodeView& v) {
  return std::make_unique<ConvNode>(v);
}

// maxpool2d / avgpool2d: cudnnPoolingForward (symmetric pads, floor-mode output; cuda_plan.h plan_window).
class PoolNode final : public BoundNode {
 public:
  PoolNode(const NodeView& v, bool avg) {
    const auto& x = v.in_shape(0);
    const auto& o = v.out_shape();
    const auto win =
        plan_window(v.attrs.ints("kernel"), v.attrs.ints("strides"), v.attrs.ints("pads"), {}, x, o);
    mode_ = !avg                                  ? CUDNN_POOLING_MAX_DETERMINISTIC
            : v.attrs.i("count_include_pad") != 0 ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                                                  : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
    check(cudnnSetPooling2dDescriptor(pool_.get(), mode_, CUDNN_NOT_PROPAGATE_NAN, win.kernel_h, win.kernel_w,
                                      win.pad_h, win.pad_w, win.stride_h, win.stride_w),
          "cudnnSetPooling2dDescriptor");
    set_nchw(x_, x[0], x[1], x[2], x[3]);
    set_nchw(y_, o[0], o[1], o[2], o[3]);
  }
  void run() override {
    check(cudnnPoolingForward(context().dnn, pool_.get(), &kOne, x_.get(), in_[0], &kZero, y_.get(), out_[0]),
          "cudnnPoolingForward");
  }
  std::string implementation() const override {
    return mode_ == CUDNN_POOLING_MAX_DETERMINISTIC ? "cuDNN max pooling" : "cuDNN average pooling";
  }

 private:
  PoolDesc pool_;
  TensorDesc x_, y_;
  cudnnPoolingMode_t mode_ = CUDNN_POOLING_MAX_DETERMINISTIC;
};

// maxpool2d / avgpool2d with what cuDNN's descriptors cannot express (asymmetric pads, ceil mode):
// strata's pooling kernel, the reference's window rule (cuda_kernel_math.h pool_at).
class PoolKernelNode final : public BoundNode {
 public:
  PoolKernelNode(const NodeView& v, bool avg) : p_(plan_pool(v.in_shape(0), v.out_shape(), v.attrs, avg)) {}
  void run() override {
    check(static_cast<cudaError_t>(launch_pool(p_, in_[0], out_[0], context().stream)), "pooling kernel");
  }
  std::string implementation() const override {
    return p_.avg ? "strata average-pooling kernel" : "strata max-pooling kernel";
  }

 private:
  PoolWindow p_;
};

template <bool kAvg>
std::unique_ptr<CudaNode> lower_pool(const NodeView& v) {
  try {
    return std::make_unique<PoolNode>(v, kAvg);
  } catch (const Unsupported&) {  // asymmetric pads or ceil mode
    return std::make_unique<PoolKernelNode>(v, kAvg);
  }
}

// embedding (table [V, D], integer indices of any shape): strata's gather kernel.
class GatherNode final : public BoundNode {
 public:
  explicit GatherNode(const NodeView& v)
      : rows_(numel(v.in_shape(1))), vocab_(v.in_shape(0).at(0)), d_(v.in_shape(0).at(1)) {}
  void run() override {
    check(static_cast<cudaError_t>(
              launch_gather_rows(in_[1], rows_, in_[0], vocab_, d_, out_[0], context().stream)),
          "gather kernel");
  }
  std::string implementation() const override { return "strata gather kernel (embedding)"; }

 private:
  std::int64_t rows_, vocab_, d_;
};

std::unique_ptr<CudaNode> lower_embedding(const NodeView& v) {
  if (v.in.size() != 2 || v.in_shape(0).size() != 2) throw Unsupported{"not a [V, D] table with indices"};
  return std::make_unique<GatherNode>(v);
}

// softmax (not causal; causal: strata's row-softmax kernel, lower_causal_softmax): cudnnSoftmaxForward,
// accurate (max-subtracted), channel mode over [N, C, H, 1].
class SoftmaxNode final : public BoundNode {
 public:
  explicit SoftmaxNode(SoftmaxDims d) { set_nchw(x_, d.n, d.c, d.h, 1); }
  void run() override {
    check(cudnnSoftmaxForward(context().dnn, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_CHANNEL, &kOne,
                              x_.get(), in_[0], &kZero, x_.get(), out_[0]),
          "cudnnSoftmaxForward");
  }
  std::string implementation() const override { return "cuDNN softmax (accurate, channel mode)"; }

 private:
  TensorDesc x_;
};

std::unique_ptr<CudaNode> lower_softmax(const NodeView& v) {
  if (v.attrs.i("causal") != 0) return lower_causal_softmax(v);  // validate/cuda_attention.cc
  return std::make_unique<SoftmaxNode>(plan_softmax(v.in_shape(0), v.attrs.i("axis")));
}

// relu / sigmoid / tanh: cudnnActivationForward over the tensor seen as [1, numel, 1, 1].
class ActivationNode final : public BoundNode {
 public:
  ActivationNode(cudnnActivationMode_t mode, std::int64_t n) : mode_(mode) {
    set_nchw(x_, 1, n, 1, 1);
    check(cudnnSetActivationDescriptor(act_.get(), mode, CUDNN_NOT_PROPAGATE_NAN, 0.0),
          "cudnnSetActivationDescriptor");
  }
  void run() override {
    check(
        cudnnActivationForward(context().dnn, act_.get(), &kOne, x_.get(), in_[0], &kZero, x_.get(), out_[0]),
        "cudnnActivationForward");
  }
  std::string implementation() const override {
    return fmt::format("cuDNN activation (mode {})", static_cast<int>(mode_));
  }

 private:
  cudnnActivationMode_t mode_;
  TensorDesc x_;
  ActDesc act_;
};

template <cudnnActivationMode_t kMode>
std::unique_ptr<CudaNode> lower_activation(const NodeView& v) {
  return std::make_unique<ActivationNode>(kMode, numel(v.in_shape(0)));
}

// gelu (erf form), silu, rsqrt: strata's element-wise kernel.
class UnaryNode final : public BoundNode {
 public:
  UnaryNode(UnaryOp op, std::int64_t n) : op_(op), n_(n) {}
  void run() override {
    check(static_cast<cudaError_t>(launch_unary(op_, in_[0], out_[0], n_, context().stream)), "unary kernel");
  }
  std::string implementation() const override { return "strata unary kernel"; }

 private:
  UnaryOp op_;
  std::int64_t n_;
};

template <UnaryOp kOp>
std::unique_ptr<CudaNode> lower_unary(const NodeView& v) {
  return std::make_unique<UnaryNode>(kOp, numel(v.in_shape(0)));
}

// ewadd / ewsub / ewmul / scalar_mul with numpy broadcasting: strata's strided binary kernel.
class BinaryNode final : public BoundNode {
 public:
  BinaryNode(BinaryOp op, const NodeView& v)
      : op_(op),
        a_(broadcast_view(v.in_shape(0), v.out_shape())),
        b_(broadcast_view(v.in_shape(1), v.out_shape())),
        out_view_(dense_view(v.out_shape())) {}
  void run() override {
    check(static_cast<cudaError_t>(
              launch_binary(op_, a_, in_[0], b_, in_[1], out_view_, out_[0], context().stream)),
          "binary kernel");
  }
  std::string implementation() const override { return "strata broadcasting binary kernel"; }

 private:
  BinaryOp op_;
  StridedView a_, b_, out_view_;
};

template <BinaryOp kOp>
std::unique_ptr<CudaNode> lower_binary(const NodeView& v) {
  return std::make_unique<BinaryNode>(kOp, v);
}

// layernorm over dims [axis, rank) and rmsnorm over the last dim: strata's row-normalisation kernel.
class RowNormNode final : public BoundNode {
 public:
  RowNormNode(bool rms, std::int64_t rows, std::int64_t n, float eps)
      : rms_(rms), rows_(rows), n_(n), eps_(eps) {}
  void run() override {
    const float* beta = !rms_ && in_.size() == 3 ? in_[2] : nullptr;
    check(static_cast<cudaError_t>(
              launch_row_norm(rms_, in_[0], in_[1], beta, out_[0], rows_, n_, eps_, context().stream)),
          "row normalisation kernel");
  }
  std::string implementation() const override {
    return rms_ ? "strata rmsnorm kernel" : "strata layernorm kernel";
  }

 private:
  bool rms_;
  std::int64_t rows_, n_;
  float eps_;
};

std::unique_ptr<CudaNode> lower_layernorm(const NodeView& v) {
  const auto& x = v.in_shape(0);
  auto axis = v.attrs.i("axis");
  if (axis < 0) axis += static_cast<std::int64_t>(x.size());
  std::int64_t outer = 1, inner = 1;
  for (std::size_t i = 0; i < x.size(); ++i) (static_cast<std::int64_t>(i) < axis ? outer : inner) *= x[i];
  return std::make_unique<RowNormNode>(false, outer, inner, static_cast<float>(v.attrs.f("epsilon")));
}

std::unique_ptr<CudaNode> lower_rmsnorm(const NodeView& v) {
  const auto& x = v.in_shape(0);
  if (x.empty() || x.back() == 0) throw Unsupported{"empty normalized dim"};
  return std::make_unique<RowNormNode>(true, numel(x) / x.back(), x.back(),
                                       static_cast<float>(v.attrs.f("epsilon")));
}

// batchnorm (x, scale, bias, mean, var): cudnnBatchNormalizationForwardInference, spatial, x as [N, C, rest,
// 1].
class BatchNormNode final : public BoundNode {
 public:
  BatchNormNode(const Shape& x, double eps) : eps_(eps) {
    std::int64_t rest = 1;
    for (std::size_t i = 2; i < x.size(); ++i) rest *= x[i];
    set_nchw(x_, x[0], x[1], rest, 1);
    set_nchw(c_, 1, x[1], 1, 1);
  }
  void run() override {
    check(cudnnBatchNormalizationForwardInference(context().dnn, CUDNN_BATCHNORM_SPATIAL, &kOne, &kZero,
                                                  x_.get(), in_[0], x_.get(), out_[0], c_.get(), in_[1],
                                                  in_[2], in_[3], in_[4], eps_),
          "cudnnBatchNormalizationForwardInference");
  }
  std::string implementation() const override { return "cuDNN batch normalization (inference)"; }

 private:
  TensorDesc x_, c_;
  double eps_;
};

std::unique_ptr<CudaNode> lower_batchnorm(const NodeView& v) {
  return std::make_unique<BatchNormNode>(v.in_shape(0), v.attrs.f("epsilon"));
}

// concat, transpose and kView operators (reshape, ...): strata's strided copy kernel, one launch per input.
class CopyNode final : public BoundNode {
 public:
  struct Part {
    StridedView src, dst;
    std::size_t input;
    std::int64_t offset;  // into the output
    std::size_t output = 0;
    std::int64_t src_offset = 0;  // into the input
  };
  CopyNode(std::vector<Part> parts, std::string what) : parts_(std::move(parts)), what_(std::move(what)) {}
  void run() override {
    for (const auto& p : parts_)
      check(static_cast<cudaError_t>(launch_copy(p.src, in_[p.input] + p.src_offset, p.dst,
                                                 out_[p.output] + p.offset, context().stream)),
            "copy kernel");
  }
  std::string implementation() const override { return what_; }

 private:
  std::vector<Part> parts_;
  std::string what_;
};

std::unique_ptr<CudaNode> lower_concat(const NodeView& v) {
  std::vector<Shape> shapes;
  for (const auto& t : v.in) shapes.push_back(t.shape);
  std::vector<CopyNode::Part> parts;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    const auto part = concat_part(shapes, i, v.attrs.i("axis"));
    parts.push_back({dense_view(shapes[i]), part.dst, i, part.offset});
  }
  return std::make_unique<CopyNode>(std::move(parts), "strata strided copy kernel (concat)");
}

// split along `axis`: output i is the slice of the input a concat of the outputs would have put there.
std::unique_ptr<CudaNode> lower_split(const NodeView& v) {
  std::vector<Shape> shapes;
  for (const auto& t : v.out) shapes.push_back(t.shape);
  std::vector<CopyNode::Part> parts;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    const auto slice = concat_part(shapes, i, v.attrs.i("axis"));
    parts.push_back({slice.dst, dense_view(shapes[i]), 0, 0, i, slice.offset});
  }
  return std::make_unique<CopyNode>(std::move(parts), "strata strided copy kernel (split)");
}

std::unique_ptr<CudaNode> lower_transpose(const NodeView& v) {
  const auto src = transpose_view(v.in_shape(0), v.attrs.ints("perm"));
  return std::make_unique<CopyNode>(std::vector<CopyNode::Part>{{src, dense_view(v.out_shape()), 0, 0}},
                                    "strata strided copy kernel (transpose)");
}

// A view operator (one input, one output of the same size: the data unchanged, only its shape).
std::unique_ptr<CudaNode> lower_view(const NodeView& v) {
  if (v.in.size() != 1 || v.out.size() != 1 || numel(v.in_shape(0)) != numel(v.out_shape()))
    throw Unsupported{"not a one-input view of the same size"};
  const Shape flat{numel(v.out_shape())};
  return std::make_unique<CopyNode>(std::vector<CopyNode::Part>{{dense_view(flat), dense_view(flat), 0, 0}},
                                    "strata copy kernel (view)");
}

// reduce_sum / reduce_mean over `axes` (empty: all); keepdims does not change the output's memory.
class ReduceNode final : public BoundNode {
 public:
  ReduceNode(ReducePlan p, bool mean) : p_(p), mean_(mean) {}
  void run() override {
    check(static_cast<cudaError_t>(
              launch_reduce(p_.kept, p_.reduced, mean_, in_[0], out_[0], context().stream)),
          "reduce kernel");
  }
  std::string implementation() const override {
    return mean_ ? "strata reduce-mean kernel" : "strata reduce-sum kernel";
  }

 private:
  ReducePlan p_;
  bool mean_;
};

template <bool kMean>
std::unique_ptr<CudaNode> lower_reduce(const NodeView& v) {
  return std::make_unique<ReduceNode>(plan_reduce(v.in_shape(0), v.attrs.ints("axes")), kMean);
}

using LowerFn = std::unique_ptr<CudaNode> (*)(const NodeView&);
// The lowerings, by operator name (models/ops); other kView operators copy (lower_view); every other operator
// runs on the reference kernel on the host.
const std::unordered_map<std::string_view, LowerFn>& lowerings() {
  static const std::unordered_map<std::string_view, LowerFn> table{
      {"matmul", lower_matmul},
      {"batch_matmul", lower_matmul},
      {"conv2d", lower_conv},
      {"maxpool2d", lower_pool<false>},
      {"avgpool2d", lower_pool<true>},
      {"embedding", lower_embedding},
      {"attention", lower_attention},
      {"softmax", lower_softmax},
      {"relu", lower_activation<CUDNN_ACTIVATION_RELU>},
      {"sigmoid", lower_activation<CUDNN_ACTIVATION_SIGMOID>},
      {"tanh", lower_activation<CUDNN_ACTIVATION_TANH>},
      {"gelu", lower_unary<UnaryOp::kGelu>},
      {"silu", lower_unary<UnaryOp::kSilu>},
      {"rsqrt", lower_unary<UnaryOp::kRsqrt>},
      {"reduce_sum", lower_reduce<false>},
      {"reduce_mean", lower_reduce<true>},
      {"ewadd", lower_binary<BinaryOp::kAdd>},
      {"ewsub", lower_binary<BinaryOp::kSub>},
      {"ewmul", lower_binary<BinaryOp::kMul>},
      {"scalar_mul", lower_binary<BinaryOp::kMul>},
      {"layernorm", lower_layernorm},
      {"batchnorm", lower_batchnorm},
      {"rmsnorm", lower_rmsnorm},
      {"concat", lower_concat},
      {"split", lower_split},
      {"transpose", lower_transpose},
  };
  return table;
}

}  // namespace

CudaLowering lower_to_cuda(const models::Graph& g, const models::Node& n) {
  const auto& table = lowerings();
  const auto it = table.find(n.op->name);
  const bool view = it == table.end() && n.op->kind == models::OpKind::kView;
  if (it == table.end() && !view) return {nullptr, fmt::format("no CUDA lowering for {}", n.op->name)};
  // Integer inputs are indices, which the replay stores as floats (exact below 2^24); only lowerings that
  // read them as indices take them.
  const bool reads_indices = n.op->name == "embedding";
  for (auto v : n.inputs) {
    const auto dt = g.type(v).dtype;
    if (dt != models::DType::kF32 && (models::is_float(dt) || !reads_indices))
      return {nullptr, fmt::format("input '{}' is {}, the replay runs f32 graphs", g.value(v).name,
                                   models::dtype_name(dt))};
  }
  NodeView nv{{}, {}, n.attrs};
  for (auto v : n.inputs) nv.in.push_back(g.type(v));
  for (auto v : n.outputs) nv.out.push_back(g.type(v));
  try {
    return {view ? lower_view(nv) : it->second(nv), {}};
  } catch (const Unsupported& u) {
    return {nullptr, u.why};
  }
}

}  // namespace strata::validate::cuda
