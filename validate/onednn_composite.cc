// models/ operators that take several oneDNN primitives (or owned buffers) per node: convolutions in blocked
// layouts with their reorders, causal softmax (mask + softmax), fused attention (matmul, mask, softmax,
// matmul). Lowered from the table in onednn_kernels.cc.
#include <cmath>
#include <optional>

#include "validate/onednn_common.h"

namespace strata::validate::detail {
namespace {

// A convolution in the layouts oneDNN prefers for it (format `any`: blocked, e.g. nChw16c): bind() packs the
// weights once; run() reorders the NCHW input in, convolves, and reorders the output back to NCHW, so the
// graph's plain tensors are what goes in and out and the timing includes the activation reorders a framework
// with plain tensors between operators pays. Where oneDNN picks plain layouts anyway, no reorder runs.
class BlockedConvNode final : public OneDnnNode {
 public:
  BlockedConvNode(const dnnl::convolution_forward::primitive_desc& pd, const memory::desc& src,
                  const memory::desc& wei, const memory::desc& dst, bool bias, const memory::desc& bias_desc)
      : conv_(pd),
        user_src_(src, cpu_engine(), DNNL_MEMORY_NONE),
        user_wei_(wei, cpu_engine(), DNNL_MEMORY_NONE),
        user_dst_(dst, cpu_engine(), DNNL_MEMORY_NONE) {
    impl_ = pd.impl_info_str();
    src_ = stage(user_src_, pd.src_desc(), src_in_, true);
    wei_ = stage(user_wei_, pd.weights_desc(), wei_in_, true);
    dst_ = stage(user_dst_, pd.dst_desc(), dst_out_, false);
    args_ = {{DNNL_ARG_SRC, src_}, {DNNL_ARG_WEIGHTS, wei_}, {DNNL_ARG_DST, dst_}};
    if (bias) {
      bias_ = memory(bias_desc, cpu_engine(), DNNL_MEMORY_NONE);
      args_.emplace(DNNL_ARG_BIAS, bias_);
    }
    if (src_in_ || dst_out_) impl_ += " (+ NCHW reorders)";
  }
  void bind(std::span<const void* const> in, std::span<void* const> out) override {
    user_src_.set_data_handle(const_cast<void*>(in[0]));
    user_wei_.set_data_handle(const_cast<void*>(in[1]));
    if (bias_) bias_.set_data_handle(const_cast<void*>(in[2]));
    user_dst_.set_data_handle(out[0]);
    if (wei_in_) {  // packed once per binding
      wei_in_->execute(cpu_stream(), user_wei_, wei_);
      cpu_stream().wait();
    }
  }
  void run() override {
    if (src_in_) src_in_->execute(cpu_stream(), user_src_, src_);
    conv_.execute(cpu_stream(), args_);
    if (dst_out_) dst_out_->execute(cpu_stream(), dst_, user_dst_);
    cpu_stream().wait();
  }
  std::string implementation() const override { return impl_; }

 private:
  // The memory the convolution uses for a plain user tensor: the user's own when the layouts agree, else an
  // owned buffer in the wanted layout with the reorder between them.
  static memory stage(const memory& user, const memory::desc& wanted, std::optional<dnnl::reorder>& reorder,
                      bool into) {
    if (wanted == user.get_desc()) return user;
    memory staged(wanted, cpu_engine());
    reorder = into ? dnnl::reorder(user, staged) : dnnl::reorder(staged, user);
    return staged;
  }
  dnnl::convolution_forward conv_;
  memory user_src_, user_wei_, user_dst_, src_, wei_, dst_, bias_;
  std::optional<dnnl::reorder> src_in_, wei_in_, dst_out_;
  std::unordered_map<int, memory> args_;
  std::string impl_;
};

}  // namespace

// conv2d: NCHW input, OIHW weight (grouped: [g, O/g, C/g, kh, kw], the same memory), optional bias [O],
// pads [top, left, bottom, right], dilations (oneDNN counts the gaps: d - 1), fused relu; oneDNN chooses the
// layouts (BlockedConvNode). Measured on resnet50 (batch 1, one Zen 5 core): 43 ms in all for its 53
// convolutions against 77 ms with the plain layouts (oneDNN's im2col GEMM), reorders included.
std::unique_ptr<OneDnnNode> lower_conv(const NodeView& v) {
  const auto& x = v.in_shape(0);
  const auto& w = v.in_shape(1);
  const auto& st = v.attrs.ints("strides");
  const auto& p = v.attrs.ints("pads");
  const auto& dil = v.attrs.ints("dilations");
  const std::int64_t groups = v.attrs.i("groups");
  const auto src = dense(x, v.dt);
  const auto wei = groups == 1 ? dense(w, v.dt) : dense(Dims{groups, w[0] / groups, w[1], w[2], w[3]}, v.dt);
  const auto dst = dense(v.out_shape(), v.dt);
  const bool bias = v.in.size() == 3;
  const auto b = bias ? dense(v.in_shape(2), v.dt) : memory::desc();
  auto any = [](const memory::desc& d) {
    return memory::desc(d.dims(), d.data_type(), memory::format_tag::any);
  };
  const Dims strides{st[0], st[1]}, dilates{dil[0] - 1, dil[1] - 1}, pad_l{p[0], p[1]}, pad_r{p[2], p[3]};
  const auto desc =
      bias ? dnnl::convolution_forward::desc(prop_kind::forward_inference, algorithm::convolution_direct,
                                             any(src), any(wei), b, any(dst), strides, dilates, pad_l, pad_r)
           : dnnl::convolution_forward::desc(prop_kind::forward_inference, algorithm::convolution_direct,
                                             any(src), any(wei), any(dst), strides, dilates, pad_l, pad_r);
  const dnnl::convolution_forward::primitive_desc pd(desc, fused_activation(v.attrs), cpu_engine());
  return std::make_unique<BlockedConvNode>(pd, src, wei, dst, bias, b);
}

namespace {

// Causal softmax over the last axis of [..., S, Skv]: query row q sees keys k <= q + Skv - S (the IR's
// rule). oneDNN's softmax has no mask, so a binary add writes the input plus a mask (0 where visible, a very
// negative finite number elsewhere, whose exp oneDNN flushes to 0) into the output, and the softmax then runs
// in place there. Needs Skv >= S, so that every row sees at least one key.
class CausalSoftmaxNode final : public OneDnnNode {
 public:
  CausalSoftmaxNode(const memory::desc& data, const memory::desc& mask_desc, std::int64_t s, std::int64_t skv)
      : mask_(mask_desc, cpu_engine()),
        src_(data, cpu_engine(), DNNL_MEMORY_NONE),
        dst_(data, cpu_engine(), DNNL_MEMORY_NONE) {
    for (std::int64_t q = 0; q < s; ++q)
      for (std::int64_t k = 0; k < skv; ++k)
        set_element(mask_, q * skv + k, k <= q + skv - s ? 0.0f : kMasked);
    const dnnl::binary::primitive_desc add_pd(
        dnnl::binary::desc(algorithm::binary_add, data, mask_desc, data), cpu_engine());
    const auto rank = static_cast<int>(data.dims().size());
    const dnnl::softmax_forward::primitive_desc softmax_pd(
        dnnl::softmax_forward::desc(prop_kind::forward_inference, data, rank - 1), cpu_engine());
    add_ = dnnl::binary(add_pd);
    softmax_ = dnnl::softmax_forward(softmax_pd);
    impl_ = fmt::format("{} + {}", add_pd.impl_info_str(), softmax_pd.impl_info_str());
  }
  void bind(std::span<const void* const> in, std::span<void* const> out) override {
    src_.set_data_handle(const_cast<void*>(in[0]));
    dst_.set_data_handle(out[0]);
  }
  void run() override {
    add_.execute(cpu_stream(), {{DNNL_ARG_SRC_0, src_}, {DNNL_ARG_SRC_1, mask_}, {DNNL_ARG_DST, dst_}});
    softmax_.execute(cpu_stream(), {{DNNL_ARG_SRC, dst_}, {DNNL_ARG_DST, dst_}});
    cpu_stream().wait();
  }
  std::string implementation() const override { return impl_; }

 private:
  // Finite: x + kMasked never overflows for |x| < 1e37; in bf16 it is -1.0009e30 (same exponent range).
  static constexpr float kMasked = -1e30f;
  memory mask_, src_, dst_;
  dnnl::binary add_;
  dnnl::softmax_forward softmax_;
  std::string impl_;
};

}  // namespace

std::unique_ptr<OneDnnNode> lower_softmax(const NodeView& v) {
  const auto& x = v.in_shape(0);
  if (x.empty()) throw Unsupported{"0-D softmax"};
  const auto rank = static_cast<std::int64_t>(x.size());
  auto axis = v.attrs.i("axis");
  if (axis < 0) axis += rank;
  const auto data = dense(x, v.dt);
  if (v.attrs.i("causal") != 0) {
    if (rank < 2 || axis != rank - 1) throw Unsupported{"causal softmax not over the last of >= 2 axes"};
    const std::int64_t s = x[static_cast<std::size_t>(rank - 2)], skv = x[static_cast<std::size_t>(rank - 1)];
    if (skv < s)
      throw Unsupported{"causal softmax with fewer keys than queries (rows without a visible key)"};
    Dims mask(static_cast<std::size_t>(rank), 1);
    mask[static_cast<std::size_t>(rank - 2)] = s;
    mask[static_cast<std::size_t>(rank - 1)] = skv;
    return std::make_unique<CausalSoftmaxNode>(data, dense(mask, v.dt), s, skv);
  }
  const dnnl::softmax_forward::primitive_desc pd(
      dnnl::softmax_forward::desc(prop_kind::forward_inference, data, static_cast<int>(axis)), cpu_engine());
  return make<dnnl::softmax_forward>(pd, {{DNNL_ARG_SRC, 0, data}}, {{DNNL_ARG_DST, 0, data}});
}

namespace {

// Fused attention o = softmax(scale · q kᵀ [causal mask]) v with grouped key/value heads, as oneDNN
// primitives: q [B, H, S, D] read as [B, Hkv, G·S, D] (G = H / Hkv query heads per key/value head, adjacent
// in memory, so the view is free), scores = q kᵀ · scale by a matmul (k through transposed strides, the
// scale as its output scale) into an owned [B, Hkv, G·S, Skv] buffer, the causal mask added by a binary
// primitive, the softmax in place, and p v by a matmul straight into o, which is [B, Hkv, G·S, D] in memory.
// Unlike FlashAttention the scores are materialized (B·H·S·Skv floats), so its time is that of the unfused
// computation on this CPU.
class AttentionNode final : public OneDnnNode {
 public:
  AttentionNode(std::int64_t b, std::int64_t h, std::int64_t hkv, std::int64_t s, std::int64_t skv,
                std::int64_t d, float scale, bool causal, memory::data_type dt) {
    const std::int64_t rows = h / hkv * s;  // G·S
    const memory::desc q(Dims{b, hkv, rows, d}, dt, Dims{hkv * rows * d, rows * d, d, 1});
    const memory::desc kt(Dims{b, hkv, d, skv}, dt,
                          Dims{hkv * skv * d, skv * d, 1, d});  // k [B, Hkv, Skv, D] transposed
    const auto scores = dense(Dims{b, hkv, rows, skv}, dt);     // bf16 too: p v's operands share a type
    const auto v = dense(Dims{b, hkv, skv, d}, dt);
    const auto o = dense(Dims{b, hkv, rows, d}, dt);
    dnnl::primitive_attr scaled;
    scaled.set_output_scales(0, {scale});
    const dnnl::matmul::primitive_desc qk_pd(dnnl::matmul::desc(q, kt, scores), scaled, cpu_engine());
    const dnnl::softmax_forward::primitive_desc softmax_pd(
        dnnl::softmax_forward::desc(prop_kind::forward_inference, scores, 3), cpu_engine());
    const dnnl::matmul::primitive_desc pv_pd(dnnl::matmul::desc(scores, v, o), cpu_engine());
    q_ = memory(q, cpu_engine(), DNNL_MEMORY_NONE);
    k_ = memory(kt, cpu_engine(), DNNL_MEMORY_NONE);
    v_ = memory(v, cpu_engine(), DNNL_MEMORY_NONE);
    o_ = memory(o, cpu_engine(), DNNL_MEMORY_NONE);
    scores_ = memory(scores, cpu_engine());
    qk_ = dnnl::matmul(qk_pd);
    softmax_ = dnnl::softmax_forward(softmax_pd);
    pv_ = dnnl::matmul(pv_pd);
    impl_ =
        fmt::format("{} + {} + {}", qk_pd.impl_info_str(), softmax_pd.impl_info_str(), pv_pd.impl_info_str());
    if (causal) {
      // Row r of a group is query r mod S; it sees keys k <= q + Skv - S (the IR's rule).
      const auto mask = dense(Dims{1, 1, rows, skv}, dt);
      mask_ = memory(mask, cpu_engine());
      for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t k = 0; k < skv; ++k)
          set_element(mask_, r * skv + k, k <= r % s + skv - s ? 0.0f : kMasked);
      const dnnl::binary::primitive_desc add_pd(
          dnnl::binary::desc(algorithm::binary_add, scores, mask, scores), cpu_engine());
      add_mask_ = dnnl::binary(add_pd);
      impl_ = fmt::format("{} + {} (mask) + {} + {}", qk_pd.impl_info_str(), add_pd.impl_info_str(),
                          softmax_pd.impl_info_str(), pv_pd.impl_info_str());
    }
  }
  void bind(std::span<const void* const> in, std::span<void* const> out) override {
    q_.set_data_handle(const_cast<void*>(in[0]));
    k_.set_data_handle(const_cast<void*>(in[1]));
    v_.set_data_handle(const_cast<void*>(in[2]));
    o_.set_data_handle(out[0]);
  }
  void run() override {
    auto& stream = cpu_stream();
    qk_.execute(stream, {{DNNL_ARG_SRC, q_}, {DNNL_ARG_WEIGHTS, k_}, {DNNL_ARG_DST, scores_}});
    if (add_mask_)
      add_mask_->execute(stream,
                         {{DNNL_ARG_SRC_0, scores_}, {DNNL_ARG_SRC_1, mask_}, {DNNL_ARG_DST, scores_}});
    softmax_.execute(stream, {{DNNL_ARG_SRC, scores_}, {DNNL_ARG_DST, scores_}});
    pv_.execute(stream, {{DNNL_ARG_SRC, scores_}, {DNNL_ARG_WEIGHTS, v_}, {DNNL_ARG_DST, o_}});
    stream.wait();
  }
  std::string implementation() const override { return impl_; }

 private:
  static constexpr float kMasked = -1e30f;  // as CausalSoftmaxNode's
  memory q_, k_, v_, o_, scores_, mask_;
  dnnl::matmul qk_, pv_;
  dnnl::softmax_forward softmax_;
  std::optional<dnnl::binary> add_mask_;
  std::string impl_;
};

}  // namespace

// attention(q [B,H,S,D], k [B,Hkv,Skv,D], v [B,Hkv,Skv,D]), attributes causal and scale (0: 1/sqrt(D)).
std::unique_ptr<OneDnnNode> lower_attention(const NodeView& v) {
  const auto& q = v.in_shape(0);
  const auto& k = v.in_shape(1);
  const bool causal = v.attrs.i("causal") != 0;
  if (causal && k[2] < q[2])  // the shape rule refuses these already; the mask below assumes it
    throw Unsupported{"causal attention with fewer keys than queries (rows without a visible key)"};
  const double scale =
      v.attrs.f("scale") == 0 ? 1 / std::sqrt(static_cast<double>(q[3])) : v.attrs.f("scale");
  return std::make_unique<AttentionNode>(q[0], q[1], k[1], q[2], k[2], q[3], static_cast<float>(scale),
                                         causal, v.dt);
}

namespace {

// rmsnorm over the last dim, x / sqrt(mean(x²) + eps) · gamma. oneDNN 2.x has no RMS normalization, but it
// is layer normalization with mean 0 and variance mean(x²): an eltwise square into an owned [rows, n]
// buffer, a mean reduction of it into an owned [rows] variance, and layer normalization with these global
// statistics and gamma as its scale. (A single reduction to Σx², with (1/n)·s + eps and s^(-1/2) as
// post-ops, only has oneDNN 2.6's reference implementation, ref:any: 20x slower on a 128 x 256 input.)
class RmsNormNode final : public OneDnnNode {
 public:
  // In bf16: x, the squares and y bf16; the variance, mean and gamma f32 (gamma widened when bound).
  RmsNormNode(std::int64_t rows, std::int64_t n, float eps, memory::data_type dt) {
    const auto x = dense(Dims{rows, n}, dt), var = dense(Dims{rows, 1}), stat = dense(Dims{rows}),
               gamma = dense(Dims{n});
    const dnnl::eltwise_forward::primitive_desc square_pd(
        dnnl::eltwise_forward::desc(prop_kind::forward_inference, algorithm::eltwise_square, x, 0.0f, 0.0f),
        cpu_engine());
    const dnnl::reduction::primitive_desc mean_pd(
        dnnl::reduction::desc(algorithm::reduction_mean, x, var, 0.0f, 0.0f), cpu_engine());
    const dnnl::layer_normalization_forward::primitive_desc norm_pd(
        dnnl::layer_normalization_forward::desc(
            prop_kind::forward_inference, x, eps,
            dnnl::normalization_flags::use_global_stats | dnnl::normalization_flags::use_scale),
        cpu_engine());
    x_ = memory(x, cpu_engine(), DNNL_MEMORY_NONE);
    gamma_ = memory(gamma, cpu_engine(), DNNL_MEMORY_NONE);
    y_ = memory(x, cpu_engine(), DNNL_MEMORY_NONE);
    squares_ = memory(x, cpu_engine());
    var_ = memory(stat, cpu_engine());
    var_col_ = memory(var, cpu_engine(), var_.get_data_handle());  // the same floats as [rows, 1]
    mean_ = memory(stat, cpu_engine());
    std::fill_n(static_cast<float*>(mean_.get_data_handle()), rows, 0.0f);
    square_ = dnnl::eltwise_forward(square_pd);
    reduce_ = dnnl::reduction(mean_pd);
    norm_ = dnnl::layer_normalization_forward(norm_pd);
    impl_ = fmt::format("{} + {} + {}", square_pd.impl_info_str(), mean_pd.impl_info_str(),
                        norm_pd.impl_info_str());
  }
  void bind(std::span<const void* const> in, std::span<void* const> out) override {
    x_.set_data_handle(const_cast<void*>(in[0]));
    gamma_.set_data_handle(const_cast<void*>(in[1]));
    y_.set_data_handle(out[0]);
  }
  void run() override {
    auto& stream = cpu_stream();
    square_.execute(stream, {{DNNL_ARG_SRC, x_}, {DNNL_ARG_DST, squares_}});
    reduce_.execute(stream, {{DNNL_ARG_SRC, squares_}, {DNNL_ARG_DST, var_col_}});
    norm_.execute(stream, {{DNNL_ARG_SRC, x_},
                           {DNNL_ARG_MEAN, mean_},
                           {DNNL_ARG_VARIANCE, var_},
                           {DNNL_ARG_SCALE, gamma_},
                           {DNNL_ARG_DST, y_}});
    stream.wait();
  }
  std::string implementation() const override { return impl_; }

 private:
  memory x_, gamma_, y_, squares_, var_, var_col_, mean_;
  dnnl::eltwise_forward square_;
  dnnl::reduction reduce_;
  dnnl::layer_normalization_forward norm_;
  std::string impl_;
};

}  // namespace

// split and concat along an axis: one reorder per part, between the part (a dense tensor) and its slice of
// the whole tensor (a sub-memory of the dense whole at the part's offset along the axis). Split reads the
// whole (input 0) into each output; concat writes each input into the whole (output 0).
//
// Concat does not use oneDNN's concat primitive: in oneDNN 2.x (src/cpu/simple_concat.cpp) a concat whose
// axis has only size-1 dimensions before it (axis 1 at batch 1, every concat of a batch-1 CNN) copies
// element by element through a std::function call per element. On this project's Zen 4 VM that took
// 1.5-2.2 ns per element, 9-17x the reorders' time (0.08-0.17 ns), at one of two speeds 1.47x apart from
// run to run; at batch 8 the primitive copies whole blocks with memcpy and takes what the reorders take
// (docs/replay.md, "Concat").
class SliceCopyNode final : public OneDnnNode {
 public:
  enum class Direction { kSplit, kConcat };
  SliceCopyNode(const NodeView& v, Direction direction)
      : suffix_(direction == Direction::kSplit ? " (split)" : " (concat as reorders)") {
    const bool split = direction == Direction::kSplit;
    const auto& whole_shape = split ? v.in_shape(0) : v.out_shape(0);
    const auto& parts = split ? v.out : v.in;
    const auto rank = static_cast<std::int64_t>(whole_shape.size());
    auto axis = v.attrs.i("axis");
    if (axis < 0) axis += rank;
    if (rank == 0 || axis < 0 || axis >= rank) throw Unsupported{"axis out of range"};
    const auto whole = dense(whole_shape, v.dt);
    std::int64_t first = 0;
    for (std::size_t i = 0; i < parts.size(); ++i) {
      const auto& shape = parts[i].shape;
      Dims offsets(whole_shape.size(), 0);
      offsets[static_cast<std::size_t>(axis)] = first;
      first += shape[static_cast<std::size_t>(axis)];
      const auto slice = whole.submemory_desc(shape, offsets);
      const auto dense_part = dense(shape, v.dt);
      const auto& from = split ? slice : dense_part;
      const auto& to = split ? dense_part : slice;
      const dnnl::reorder::primitive_desc pd(cpu_engine(), from, cpu_engine(), to);
      impl_ = pd.impl_info_str();
      parts_.push_back({dnnl::reorder(pd), memory(from, cpu_engine(), DNNL_MEMORY_NONE),
                        memory(to, cpu_engine(), DNNL_MEMORY_NONE), split ? 0 : i, split ? i : 0});
    }
  }
  void bind(std::span<const void* const> in, std::span<void* const> out) override {
    // The slice's offset is in its descriptor: the whole's memory takes the whole buffer.
    for (auto& p : parts_) {
      p.src.set_data_handle(const_cast<void*>(in[p.input]));
      p.dst.set_data_handle(out[p.output]);
    }
  }
  void run() override {
    for (auto& p : parts_) p.copy.execute(cpu_stream(), {{DNNL_ARG_FROM, p.src}, {DNNL_ARG_TO, p.dst}});
    cpu_stream().wait();
  }
  std::string implementation() const override { return impl_ + suffix_; }

 private:
  struct Part {
    dnnl::reorder copy;
    memory src, dst;
    std::size_t input, output;  // the node's buffers they are bound to
  };
  std::string suffix_;
  std::vector<Part> parts_;
  std::string impl_;
};

std::unique_ptr<OneDnnNode> lower_split(const NodeView& v) {
  return std::make_unique<SliceCopyNode>(v, SliceCopyNode::Direction::kSplit);
}

std::unique_ptr<OneDnnNode> lower_concat(const NodeView& v) {
  return std::make_unique<SliceCopyNode>(v, SliceCopyNode::Direction::kConcat);
}

std::unique_ptr<OneDnnNode> lower_rmsnorm(const NodeView& v) {
  const auto& x = v.in_shape(0);
  if (x.empty() || x.back() == 0) throw Unsupported{"empty normalized dim"};
  std::int64_t rows = 1;
  for (std::size_t i = 0; i + 1 < x.size(); ++i) rows *= x[i];
  return widened_inputs(
      std::make_unique<RmsNormNode>(rows, x.back(), static_cast<float>(v.attrs.f("epsilon")), v.dt), v.dt,
      {{1, x.back()}});
}

}  // namespace strata::validate::detail
