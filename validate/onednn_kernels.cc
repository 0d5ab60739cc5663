// models/ operators lowered to oneDNN 2.x primitives (https://oneapi-src.github.io/oneDNN/v2.6/), one
// lowering per operator in the table at the end. Node inputs and outputs keep the graph's plain layouts
// (NCHW activations, OIHW weights, row-major matrices); convolutions alone run in oneDNN's blocked layouts,
// reordering in and out (onednn_composite.cc). Lowerings of one primitive are here.
#include "validate/onednn_kernels.h"

#include <cstring>
#include <optional>
#include <stdexcept>
#include <variant>

#include "validate/cpu_replay.h"
#include "validate/onednn_common.h"
#include "validate/replay_buffer.h"

namespace strata::validate::detail {

void set_element(const memory& m, std::int64_t i, float value) {
  const auto k = static_cast<std::size_t>(i);
  if (m.get_desc().data_type() == memory::data_type::bf16)
    static_cast<std::uint16_t*>(m.get_data_handle())[k] = bf16_from_float(value);
  else
    static_cast<float*>(m.get_data_handle())[k] = value;
}

namespace {

// A node whose bf16 parameter inputs are widened to owned f32 copies at each binding (widened_inputs).
class WidenedInputsNode final : public OneDnnNode {
 public:
  WidenedInputsNode(std::unique_ptr<OneDnnNode> node, std::vector<std::pair<std::size_t, std::int64_t>> which)
      : node_(std::move(node)), which_(std::move(which)), copies_(which_.size()) {}
  void bind(std::span<const void* const> in, std::span<void* const> out) override {
    std::vector<const void*> inputs(in.begin(), in.end());
    for (std::size_t i = 0; i < which_.size(); ++i) {
      const auto [index, numel] = which_[i];
      const auto* words = static_cast<const std::uint16_t*>(in[index]);
      copies_[i].resize(static_cast<std::size_t>(numel));
      std::transform(words, words + numel, copies_[i].begin(), float_from_bf16);
      inputs[index] = copies_[i].data();
    }
    node_->bind(inputs, out);
  }
  void run() override { node_->run(); }
  std::string implementation() const override { return node_->implementation(); }

 private:
  std::unique_ptr<OneDnnNode> node_;
  std::vector<std::pair<std::size_t, std::int64_t>> which_;
  std::vector<std::vector<float>> copies_;
};

}  // namespace

std::unique_ptr<OneDnnNode> widened_inputs(std::unique_ptr<OneDnnNode> node, memory::data_type dt,
                                           std::vector<std::pair<std::size_t, std::int64_t>> which) {
  if (dt == memory::data_type::f32) return node;
  return std::make_unique<WidenedInputsNode>(std::move(node), std::move(which));
}

namespace {

// matmul / batch_matmul: op(a) @ op(b), batch dims broadcast; a transpose is a stride swap of the last two
// dims (no copy), a broadcast batch dim has extent 1 (oneDNN matmul broadcasts those).
std::unique_ptr<OneDnnNode> lower_matmul(const NodeView& v) {
  const std::size_t rank = v.out_shape().size();
  auto operand = [&](const Shape& s, bool transposed) {
    const Dims d = aligned(s, rank);
    Dims st = row_major_strides(d), logical = d;
    if (transposed) {
      std::swap(logical[rank - 1], logical[rank - 2]);
      std::swap(st[rank - 1], st[rank - 2]);
    }
    if (rank > DNNL_MAX_NDIMS) throw Unsupported{fmt::format("rank {} > {}", rank, DNNL_MAX_NDIMS)};
    return memory::desc(logical, v.dt, st);
  };
  const auto a = operand(v.in_shape(0), v.attrs.i("trans_a") != 0);
  const auto b = operand(v.in_shape(1), v.attrs.i("trans_b") != 0);
  const auto o = dense(v.out_shape(), v.dt);
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, o), fused_activation(v.attrs), cpu_engine());
  return make<dnnl::matmul>(pd, {{DNNL_ARG_SRC, 0, a}, {DNNL_ARG_WEIGHTS, 1, b}}, {{DNNL_ARG_DST, 0, o}});
}

// maxpool2d / avgpool2d. The output size comes from the graph (ceil mode included): the right/bottom pad
// given to oneDNN is the declared one plus whatever the ceil-mode windows overhang. The reference's average
// with count_include_pad divides by the window's part inside the declared pads; oneDNN's include-padding
// divides by the whole kernel, so the two agree only when no window overhangs (otherwise not lowered).
template <bool kAvg>
std::unique_ptr<OneDnnNode> lower_pool(const NodeView& v) {
  const auto& x = v.in_shape(0);
  const auto& o = v.out_shape();
  const auto& k = v.attrs.ints("kernel");
  const auto& st = v.attrs.ints("strides");
  const auto& p = v.attrs.ints("pads");
  auto right_pad = [](std::int64_t in, std::int64_t out, std::int64_t ker, std::int64_t s, std::int64_t lead,
                      std::int64_t trail) {
    return trail + std::max<std::int64_t>(0, (out - 1) * s + ker - (in + lead + trail));
  };
  const Dims pad_l{p[0], p[1]};
  const Dims pad_r{right_pad(x[2], o[2], k[0], st[0], p[0], p[2]),
                   right_pad(x[3], o[3], k[1], st[1], p[1], p[3])};
  algorithm alg = algorithm::pooling_max;
  if constexpr (kAvg) {
    const bool include = v.attrs.i("count_include_pad") != 0;
    if (include && (pad_r[0] != p[2] || pad_r[1] != p[3]))
      throw Unsupported{"count_include_pad with ceil-mode windows past the padding"};
    alg = include ? algorithm::pooling_avg_include_padding : algorithm::pooling_avg_exclude_padding;
  }
  const auto src = dense(x, v.dt), dst = dense(o, v.dt);
  const dnnl::pooling_forward::primitive_desc pd(
      dnnl::pooling_forward::desc(prop_kind::forward_inference, alg, src, dst, {st[0], st[1]}, {k[0], k[1]},
                                  pad_l, pad_r),
      cpu_engine());
  return make<dnnl::pooling_forward>(pd, {{DNNL_ARG_SRC, 0, src}}, {{DNNL_ARG_DST, 0, dst}});
}

// Unary activations: oneDNN's eltwise algorithm with its alpha (swish(x) = x * sigmoid(alpha x)).
template <algorithm kAlg, int kAlpha = 0>
std::unique_ptr<OneDnnNode> lower_unary(const NodeView& v) {
  const auto data = dense(v.in_shape(0), v.dt);
  const dnnl::eltwise_forward::primitive_desc pd(
      dnnl::eltwise_forward::desc(prop_kind::forward_inference, kAlg, data, static_cast<float>(kAlpha), 0.0f),
      cpu_engine());
  return make<dnnl::eltwise_forward>(pd, {{DNNL_ARG_SRC, 0, data}}, {{DNNL_ARG_DST, 0, data}});
}

// rsqrt: eltwise pow, alpha · x^beta with alpha 1, beta -1/2.
std::unique_ptr<OneDnnNode> lower_rsqrt(const NodeView& v) {
  const auto data = dense(v.in_shape(0), v.dt);
  const dnnl::eltwise_forward::primitive_desc pd(
      dnnl::eltwise_forward::desc(prop_kind::forward_inference, algorithm::eltwise_pow, data, 1.0f, -0.5f),
      cpu_engine());
  return make<dnnl::eltwise_forward>(pd, {{DNNL_ARG_SRC, 0, data}}, {{DNNL_ARG_DST, 0, data}});
}

// reduce_sum / reduce_mean over `axes` (empty: all): oneDNN's reduction writes the input's dims with the
// reduced ones set to 1, which is the output's memory with or without keepdims.
template <algorithm kAlg>
std::unique_ptr<OneDnnNode> lower_reduce(const NodeView& v) {
  const auto& x = v.in_shape(0);
  const auto rank = static_cast<std::int64_t>(x.size());
  if (rank == 0) throw Unsupported{"0-D reduction"};
  Dims out = x;
  const auto& axes = v.attrs.ints("axes");
  if (axes.empty()) std::fill(out.begin(), out.end(), 1);
  for (auto a : axes) out[static_cast<std::size_t>(a < 0 ? a + rank : a)] = 1;
  const auto src = dense(x, v.dt), dst = dense(out, v.dt);
  const dnnl::reduction::primitive_desc pd(dnnl::reduction::desc(kAlg, src, dst, 0.0f, 0.0f), cpu_engine());
  return make<dnnl::reduction>(pd, {{DNNL_ARG_SRC, 0, src}}, {{DNNL_ARG_DST, 0, dst}});
}

// ewadd / ewsub / ewmul / scalar_mul with numpy broadcasting. oneDNN's binary broadcasts only its second
// source (dims of 1), so the first must have the output's shape; for add and mul the operands are swapped
// when only the second does. A 0-D scalar is a tensor of 1s in every dim.
template <algorithm kAlg>
std::unique_ptr<OneDnnNode> lower_binary(const NodeView& v) {
  const std::size_t rank = std::max<std::size_t>(v.out_shape().size(), 1);
  const Dims out = aligned(v.out_shape(), rank);
  Dims a = aligned(v.in_shape(0), rank), b = aligned(v.in_shape(1), rank);
  std::size_t first = 0, second = 1;
  if (a != out) {
    if (b != out || kAlg == algorithm::binary_sub)
      throw Unsupported{"the first operand broadcasts (oneDNN broadcasts only the second)"};
    std::swap(a, b);
    std::swap(first, second);
  }
  const auto s0 = dense(a, v.dt), s1 = dense(b, v.dt), dst = dense(out, v.dt);
  const dnnl::binary::primitive_desc pd(dnnl::binary::desc(kAlg, s0, s1, dst), cpu_engine());
  return make<dnnl::binary>(pd, {{DNNL_ARG_SRC_0, first, s0}, {DNNL_ARG_SRC_1, second, s1}},
                            {{DNNL_ARG_DST, 0, dst}});
}

// layernorm over dims [axis, rank): the input seen as [outer, inner] rows; gamma (and beta) are [inner].
std::unique_ptr<OneDnnNode> lower_layernorm(const NodeView& v) {
  const auto& x = v.in_shape(0);
  auto axis = v.attrs.i("axis");
  if (axis < 0) axis += static_cast<std::int64_t>(x.size());
  std::int64_t outer = 1, inner = 1;
  for (std::size_t i = 0; i < x.size(); ++i) (static_cast<std::int64_t>(i) < axis ? outer : inner) *= x[i];
  const auto data = dense(Dims{outer, inner}, v.dt), param = dense(Dims{inner});  // parameters: f32
  const bool shift = v.in.size() == 3;
  auto flags = dnnl::normalization_flags::use_scale;
  if (shift) flags = flags | dnnl::normalization_flags::use_shift;
  const dnnl::layer_normalization_forward::primitive_desc pd(
      dnnl::layer_normalization_forward::desc(prop_kind::forward_inference, data,
                                              static_cast<float>(v.attrs.f("epsilon")), flags),
      cpu_engine());
  std::vector<PrimitiveNode::Binding> ins{{DNNL_ARG_SRC, 0, data}, {DNNL_ARG_SCALE, 1, param}};
  std::vector<std::pair<std::size_t, std::int64_t>> params{{1, inner}};
  if (shift) {
    ins.push_back({DNNL_ARG_SHIFT, 2, param});
    params.emplace_back(2, inner);
  }
  return widened_inputs(make<dnnl::layer_normalization_forward>(pd, ins, {{DNNL_ARG_DST, 0, data}}), v.dt,
                        params);
}

// batchnorm (x, scale, bias, mean, var) with the given statistics; x seen as [N, C, rest, 1].
std::unique_ptr<OneDnnNode> lower_batchnorm(const NodeView& v) {
  const auto& x = v.in_shape(0);
  std::int64_t rest = 1;
  for (std::size_t i = 2; i < x.size(); ++i) rest *= x[i];
  const auto data = dense(Dims{x[0], x[1], rest, 1}, v.dt), channel = dense(Dims{x[1]});  // channel: f32
  const auto flags = dnnl::normalization_flags::use_global_stats | dnnl::normalization_flags::use_scale |
                     dnnl::normalization_flags::use_shift;
  const dnnl::batch_normalization_forward::primitive_desc pd(
      dnnl::batch_normalization_forward::desc(prop_kind::forward_inference, data,
                                              static_cast<float>(v.attrs.f("epsilon")), flags),
      cpu_engine());
  auto node = make<dnnl::batch_normalization_forward>(pd,
                                                      {{DNNL_ARG_SRC, 0, data},
                                                       {DNNL_ARG_SCALE, 1, channel},
                                                       {DNNL_ARG_SHIFT, 2, channel},
                                                       {DNNL_ARG_MEAN, 3, channel},
                                                       {DNNL_ARG_VARIANCE, 4, channel}},
                                                      {{DNNL_ARG_DST, 0, data}});
  return widened_inputs(std::move(node), v.dt, {{1, x[1]}, {2, x[1]}, {3, x[1]}, {4, x[1]}});
}

// transpose (both forms compute the permuted tensor): a reorder from the input read through permuted
// strides into a dense output.
std::unique_ptr<OneDnnNode> lower_transpose(const NodeView& v) {
  const auto& x = v.in_shape(0);
  const auto rank = x.size();
  if (rank == 0) throw Unsupported{"0-D transpose"};
  auto perm = v.attrs.ints("perm");
  if (perm.empty())
    for (std::size_t i = rank; i-- > 0;) perm.push_back(static_cast<std::int64_t>(i));
  const Dims in_strides = row_major_strides(x);
  Dims dims(rank), strides(rank);
  for (std::size_t i = 0; i < rank; ++i) {
    dims[i] = x[static_cast<std::size_t>(perm[i])];
    strides[i] = in_strides[static_cast<std::size_t>(perm[i])];
  }
  if (rank > DNNL_MAX_NDIMS) throw Unsupported{fmt::format("rank {} > {}", rank, DNNL_MAX_NDIMS)};
  const memory::desc src(dims, v.dt, strides);
  const auto dst = dense(v.out_shape(), v.dt);
  const dnnl::reorder::primitive_desc pd(cpu_engine(), src, cpu_engine(), dst);
  return make<dnnl::reorder>(pd, {{DNNL_ARG_FROM, 0, src}}, {{DNNL_ARG_TO, 0, dst}});
}

// embedding: table rows copied by index. oneDNN 2.x has no gather primitive; a row copy per lookup is what
// frameworks' CPU embedding kernels do. The replay stores integer values as f32 holding whole numbers
// (validate/replay_buffer.h), exact for tables of up to 2^24 rows; an index out of range throws what the
// reference kernel throws (negative indices count from the end, as ONNX Gather's).
class RowGatherNode final : public OneDnnNode {
 public:
  RowGatherNode(std::int64_t rows, std::size_t row_bytes, std::int64_t lookups)
      : rows_(rows), row_bytes_(row_bytes), lookups_(lookups) {}
  void bind(std::span<const void* const> in, std::span<void* const> out) override {
    table_ = static_cast<const char*>(in[0]);
    indices_ = static_cast<const float*>(in[1]);
    out_ = static_cast<char*>(out[0]);
  }
  void run() override {
    for (std::int64_t i = 0; i < lookups_; ++i) {
      auto row = static_cast<std::int64_t>(indices_[i]);
      if (row < 0) row += rows_;
      if (row < 0 || row >= rows_)
        throw std::out_of_range(fmt::format("embedding index {} out of range for {} rows",
                                            static_cast<std::int64_t>(indices_[i]), rows_));
      std::memcpy(out_ + static_cast<std::size_t>(i) * row_bytes_,
                  table_ + static_cast<std::size_t>(row) * row_bytes_, row_bytes_);
    }
  }
  std::string implementation() const override { return "strata row copy (oneDNN 2.x has no gather)"; }

 private:
  std::int64_t rows_;
  std::size_t row_bytes_;
  std::int64_t lookups_;
  const char* table_ = nullptr;
  const float* indices_ = nullptr;
  char* out_ = nullptr;
};

std::unique_ptr<OneDnnNode> lower_embedding(const NodeView& v) {
  const auto& table = v.in_shape(0);
  if (table[0] > (std::int64_t{1} << 24))
    throw Unsupported{fmt::format("{} rows: the replay's f32 index values are exact below 2^24", table[0])};
  const std::size_t element = v.dt == memory::data_type::bf16 ? 2 : 4;
  return std::make_unique<RowGatherNode>(table[0], static_cast<std::size_t>(table[1]) * element,
                                         v.in.at(1).numel());
}

using LowerFn = std::unique_ptr<OneDnnNode> (*)(const NodeView&);
struct Lowering {
  Lowering(LowerFn f, int index = -1) : lower(f), index_input(index) {}  // NOLINT: implicit, for the table
  LowerFn lower;
  int index_input;  // an input of integer indices (not a data operand), or -1
};
// The lowerings, by operator name (models/ops); every other operator runs on the reference kernel.
const std::unordered_map<std::string_view, Lowering>& lowerings() {
  static const std::unordered_map<std::string_view, Lowering> table{
      {"matmul", lower_matmul},
      {"batch_matmul", lower_matmul},
      {"conv2d", lower_conv},
      {"maxpool2d", lower_pool<false>},
      {"avgpool2d", lower_pool<true>},
      {"softmax", lower_softmax},
      {"attention", lower_attention},
      {"relu", lower_unary<algorithm::eltwise_relu>},
      {"sigmoid", lower_unary<algorithm::eltwise_logistic>},
      {"tanh", lower_unary<algorithm::eltwise_tanh>},
      {"gelu", lower_unary<algorithm::eltwise_gelu_erf>},
      {"silu", lower_unary<algorithm::eltwise_swish, 1>},
      {"rsqrt", lower_rsqrt},
      {"reduce_sum", lower_reduce<algorithm::reduction_sum>},
      {"reduce_mean", lower_reduce<algorithm::reduction_mean>},
      {"ewadd", lower_binary<algorithm::binary_add>},
      {"ewsub", lower_binary<algorithm::binary_sub>},
      {"ewmul", lower_binary<algorithm::binary_mul>},
      {"scalar_mul", lower_binary<algorithm::binary_mul>},
      {"layernorm", lower_layernorm},
      {"batchnorm", lower_batchnorm},
      {"rmsnorm", lower_rmsnorm},
      {"concat", lower_concat},
      {"split", lower_split},
      {"transpose", lower_transpose},
      {"embedding", {lower_embedding, 1}},
  };
  return table;
}

}  // namespace

namespace {

// The element type of `n`'s data: every input (but the index input, if any) and output f32, or every one
// bf16; otherwise why not.
std::variant<memory::data_type, std::string> node_data_type(const models::Graph& g, const models::Node& n,
                                                            int index_input) {
  std::vector<models::ValueId> data;
  for (std::size_t i = 0; i < n.inputs.size(); ++i)
    if (static_cast<int>(i) != index_input) data.push_back(n.inputs[i]);
  data.insert(data.end(), n.outputs.begin(), n.outputs.end());
  std::optional<models::DType> common;
  for (auto v : data) {
    const auto t = g.type(v).dtype;
    if (t != models::DType::kF32 && t != models::DType::kBF16)
      return fmt::format("'{}' is {}, the replay lowers f32 and bf16 values", g.value(v).name,
                         models::dtype_name(t));
    if (common && *common != t)
      return fmt::format("'{}' is {}, another operand {} (mixed element types)", g.value(v).name,
                         models::dtype_name(t), models::dtype_name(*common));
    common = t;
  }
  return common == models::DType::kBF16 ? memory::data_type::bf16 : memory::data_type::f32;
}

}  // namespace

OneDnnLowering lower_to_onednn(const models::Graph& g, const models::Node& n) {
  const auto& table = lowerings();
  const auto it = table.find(n.op->name);
  if (it == table.end()) return {nullptr, fmt::format("no oneDNN lowering for {}", n.op->name)};
  const auto dt = node_data_type(g, n, it->second.index_input);
  if (const auto* why = std::get_if<std::string>(&dt)) return {nullptr, *why};
  NodeView view{{}, {}, n.attrs, std::get<memory::data_type>(dt)};
  for (auto v : n.inputs) view.in.push_back(g.type(v));
  for (auto v : n.outputs) view.out.push_back(g.type(v));
  OneDnnLowering lowered;
  try {
    lowered.kernel = it->second.lower(view);
  } catch (const Unsupported& u) {
    return {nullptr, u.why};
  } catch (const dnnl::error& e) {
    return {nullptr, fmt::format("oneDNN refused it: {}", e.what())};
  }
  if (view.dt == memory::data_type::bf16 && !cpu_runs_bf16())
    throw models::GraphError(fmt::format(
        "bf16 replay: node '{}' ({}) cannot run in bf16 on this CPU: it lacks bf16 support (the AVX512_BF16 "
        "instructions, /proc/cpuinfo flag avx512_bf16, or at least AVX-512, on which oneDNN emulates them), "
        "so oneDNN would run only its slow reference loops ({}; oneDNN's bf16 matmul here: {}); replay "
        "the model in f32 (--dtype f32) instead",
        n.name, n.op->name, lowered.kernel->implementation(), cpu_bf16_matmul_note()));
  return lowered;
}

std::string bf16_matmul_implementation() {
  const memory::desc d(Dims{64, 64}, memory::data_type::bf16, memory::format_tag::ab);
  try {
    return dnnl::matmul::primitive_desc(dnnl::matmul::desc(d, d, d), cpu_engine()).impl_info_str();
  } catch (const dnnl::error&) {
    return "";
  }
}

}  // namespace strata::validate::detail
