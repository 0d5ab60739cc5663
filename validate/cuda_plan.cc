#include "validate/cuda_plan.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>

#include <fmt/format.h>

namespace strata::validate::cuda {
namespace {

std::int64_t product(std::span<const std::int64_t> dims) {
  return std::accumulate(dims.begin(), dims.end(), std::int64_t{1}, std::multiplies<>());
}

void check_rank(std::size_t rank) {
  if (rank > static_cast<std::size_t>(kMaxRank))
    throw Unsupported{fmt::format("rank {} > {} (the CUDA kernels' limit)", rank, kMaxRank)};
}

// Row-major strides of `shape`.
std::vector<std::int64_t> strides_of(const models::Shape& shape) {
  std::vector<std::int64_t> st(shape.size(), 1);
  for (std::size_t i = shape.size(); i-- > 1;) st[i - 1] = st[i] * shape[i];
  return st;
}

}  // namespace

GemmPlan plan_gemm(const models::Shape& a, bool trans_a, const models::Shape& b, bool trans_b,
                   const models::Shape& out, GemmType type) {
  if (a.size() < 2 || b.size() < 2 || out.size() < 2) throw Unsupported{"a matmul operand of rank < 2"};
  const std::size_t ra = a.size(), rb = b.size(), ro = out.size();
  const std::int64_t m = trans_a ? a[ra - 1] : a[ra - 2], k = trans_a ? a[ra - 2] : a[ra - 1];
  const std::int64_t n = trans_b ? b[rb - 2] : b[rb - 1];
  if ((trans_b ? b[rb - 1] : b[rb - 2]) != k || out[ro - 2] != m || out[ro - 1] != n)
    throw Unsupported{"matmul shapes do not agree"};
  GemmPlan p;
  p.type = type;
  p.m = n;
  p.n = m;
  p.k = k;
  p.op_first_t = trans_b;
  p.op_second_t = trans_a;
  p.ld_first = trans_b ? k : n;
  p.ld_second = trans_a ? m : k;
  p.ld_out = n;
  const std::span<const std::int64_t> out_batch(out.data(), ro - 2);
  p.batch = product(out_batch);
  // An operand's batch stride: a whole matrix when it has out's batch dims, 0 when it is one matrix.
  const auto batch_stride = [&](const models::Shape& s, const char* name) -> std::int64_t {
    const std::span<const std::int64_t> own(s.data(), s.size() - 2);
    const std::int64_t matrix = s[s.size() - 2] * s[s.size() - 1];
    models::Shape aligned(out_batch.size() - std::min(out_batch.size(), own.size()), 1);
    aligned.insert(aligned.end(), own.begin(), own.end());
    if (std::equal(aligned.begin(), aligned.end(), out_batch.begin(), out_batch.end())) return matrix;
    if (product(own) == 1) return 0;
    throw Unsupported{
        fmt::format("operand {} broadcasts over part of the batch dims (one strided batch "
                    "cannot express it)",
                    name)};
  };
  p.stride_second = batch_stride(a, "a");
  p.stride_first = batch_stride(b, "b");
  p.stride_out = m * n;
  return p;
}

Window2d plan_window(std::span<const std::int64_t> kernel, std::span<const std::int64_t> strides,
                     std::span<const std::int64_t> pads, std::span<const std::int64_t> dilations,
                     const models::Shape& in, const models::Shape& out) {
  if (kernel.size() != 2 || strides.size() != 2 || pads.size() != 4 || in.size() != 4 || out.size() != 4 ||
      (!dilations.empty() && dilations.size() != 2))
    throw Unsupported{"not a 2-D window over an NCHW tensor"};
  if (pads[0] != pads[2] || pads[1] != pads[3])
    throw Unsupported{fmt::format("asymmetric padding [{}, {}, {}, {}] (cuDNN pads both sides alike)",
                                  pads[0], pads[1], pads[2], pads[3])};
  Window2d w;
  w.kernel_h = static_cast<int>(kernel[0]);
  w.kernel_w = static_cast<int>(kernel[1]);
  w.stride_h = static_cast<int>(strides[0]);
  w.stride_w = static_cast<int>(strides[1]);
  w.pad_h = static_cast<int>(pads[0]);
  w.pad_w = static_cast<int>(pads[1]);
  if (!dilations.empty()) {
    w.dilation_h = static_cast<int>(dilations[0]);
    w.dilation_w = static_cast<int>(dilations[1]);
  }
  const auto extent = [](std::int64_t x, int pad, int dil, int ker, int stride) {
    return (x + 2 * pad - dil * (ker - 1) - 1) / stride + 1;
  };
  const std::int64_t oh = extent(in[2], w.pad_h, w.dilation_h, w.kernel_h, w.stride_h);
  const std::int64_t ow = extent(in[3], w.pad_w, w.dilation_w, w.kernel_w, w.stride_w);
  if (oh != out[2] || ow != out[3])
    throw Unsupported{fmt::format("output {}x{} is not cuDNN's {}x{} (ceil mode)", out[2], out[3], oh, ow)};
  return w;
}

PoolWindow plan_pool(const models::Shape& in, const models::Shape& out, const models::Attrs& attrs,
                     bool avg) {
  const auto& k = attrs.ints("kernel");
  const auto& s = attrs.ints("strides");
  const auto pads = attrs.has("pads") ? attrs.ints("pads") : models::Ints{0, 0, 0, 0};
  if (in.size() != 4 || out.size() != 4 || k.size() != 2 || s.size() != 2 || pads.size() != 4)
    throw Unsupported{"not a 2-D window over an NCHW tensor"};
  return {.planes = in[0] * in[1],
          .h = in[2],
          .w = in[3],
          .oh = out[2],
          .ow = out[3],
          .kh = k[0],
          .kw = k[1],
          .sh = s[0],
          .sw = s[1],
          .pt = pads[0],
          .pl = pads[1],
          .pb = pads[2],
          .pr = pads[3],
          .avg = avg,
          .include_pad = avg && attrs.has("count_include_pad") && attrs.i("count_include_pad") != 0};
}

SoftmaxDims plan_softmax(const models::Shape& shape, std::int64_t axis) {
  const auto rank = static_cast<std::int64_t>(shape.size());
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank)
    throw Unsupported{fmt::format("softmax axis {} of a rank-{} tensor", axis, rank)};
  SoftmaxDims d;
  for (std::int64_t i = 0; i < rank; ++i) {
    const std::int64_t e = shape[static_cast<std::size_t>(i)];
    (i < axis ? d.n : i == axis ? d.c : d.h) *= e;
  }
  return d;
}

RowSoftmax plan_row_softmax(const models::Shape& shape, std::int64_t axis, bool causal) {
  const auto rank = static_cast<std::int64_t>(shape.size());
  if (axis < 0) axis += rank;
  if (rank < (causal ? 2 : 1) || axis != rank - 1)
    throw Unsupported{
        fmt::format("{}softmax over axis {} of a rank-{} tensor (the row kernel takes the last)",
                    causal ? "causal " : "", axis, rank)};
  RowSoftmax p;
  p.n = shape.back();
  p.rows = product(std::span<const std::int64_t>(shape.data(), shape.size() - 1));
  p.causal = causal;
  if (causal) {
    p.q_len = std::max<std::int64_t>(shape[shape.size() - 2], 1);  // 0 rows when it is 0
    p.shift = p.n - shape[shape.size() - 2];
  }
  return p;
}

AttentionPlan plan_attention(const models::Shape& q, const models::Shape& k, const models::Shape& v,
                             bool causal, double scale) {
  if (q.size() != 4 || k.size() != 4 || k != v)
    throw Unsupported{"attention needs q [B, H, S, D] and k = v [B, Hkv, Skv, D]"};
  const std::int64_t b = q[0], h = q[1], s = q[2], d = q[3], hkv = k[1], skv = k[2];
  if (k[0] != b || k[3] != d || hkv <= 0 || h % hkv != 0)
    throw Unsupported{"attention's k/v batch, head dim or head count does not fit q"};
  if (causal && skv < s) throw Unsupported{"causal attention with fewer keys than queries"};
  const std::int64_t items = b * hkv, rows = h / hkv * s;  // B·Hkv batch items of G·S query rows
  AttentionPlan p;
  p.scores = plan_gemm({items, rows, d}, false, {items, skv, d}, true, {items, rows, skv});
  p.output = plan_gemm({items, rows, skv}, false, {items, skv, d}, false, {items, rows, d});
  p.softmax = plan_row_softmax({items, rows, skv}, -1, false);
  if (causal) {  // row r of an item is query r mod S: the mask of [.., S, Skv], repeated G times
    p.softmax.causal = true;
    p.softmax.q_len = std::max<std::int64_t>(s, 1);
    p.softmax.shift = skv - s;
  }
  p.score_elements = items * rows * skv;
  p.scale = static_cast<float>(scale == 0 ? 1 / std::sqrt(static_cast<double>(d)) : scale);
  return p;
}

StridedView dense_view(const models::Shape& shape) {
  check_rank(shape.size());
  StridedView v;
  v.rank = static_cast<int>(shape.size());
  const auto st = strides_of(shape);
  for (std::size_t i = 0; i < shape.size(); ++i) {
    v.dims[i] = shape[i];
    v.strides[i] = st[i];
  }
  return v;
}

StridedView broadcast_view(const models::Shape& in, const models::Shape& out) {
  check_rank(out.size());
  if (in.size() > out.size()) throw Unsupported{"operand of higher rank than the output"};
  StridedView v = dense_view(out);
  const auto st = strides_of(in);
  const std::size_t lead = out.size() - in.size();
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (i < lead) {
      v.strides[i] = 0;
      continue;
    }
    const std::int64_t e = in[i - lead];
    if (e != out[i] && e != 1) throw Unsupported{"operand does not broadcast to the output"};
    v.strides[i] = e == out[i] && e != 1 ? st[i - lead] : 0;
  }
  return v;
}

StridedView transpose_view(const models::Shape& in, std::span<const std::int64_t> perm) {
  check_rank(in.size());
  std::vector<std::int64_t> p(perm.begin(), perm.end());
  if (p.empty())
    for (std::size_t i = in.size(); i-- > 0;) p.push_back(static_cast<std::int64_t>(i));
  if (p.size() != in.size()) throw Unsupported{"permutation of the wrong length"};
  const auto st = strides_of(in);
  StridedView v;
  v.rank = static_cast<int>(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    const auto src = static_cast<std::size_t>(p[i] < 0 ? p[i] + static_cast<std::int64_t>(in.size()) : p[i]);
    if (src >= in.size()) throw Unsupported{"permutation entry out of range"};
    v.dims[i] = in[src];
    v.strides[i] = st[src];
  }
  return v;
}

ConcatPart concat_part(std::span<const models::Shape> inputs, std::size_t index, std::int64_t axis) {
  if (index >= inputs.size() || inputs[index].empty()) throw Unsupported{"concat of 0-D tensors"};
  const auto rank = static_cast<std::int64_t>(inputs[index].size());
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) throw Unsupported{"concat axis out of range"};
  models::Shape out = inputs[index];
  const auto ax = static_cast<std::size_t>(axis);
  out[ax] = 0;
  std::int64_t before = 0;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (i == index) before = out[ax];
    out[ax] += inputs[i][ax];
  }
  ConcatPart part;
  part.dst = dense_view(inputs[index]);
  const auto st = strides_of(out);
  for (std::size_t i = 0; i < out.size(); ++i) part.dst.strides[i] = st[i];
  part.offset = before * st[ax];
  return part;
}

ReducePlan plan_reduce(const models::Shape& in, std::span<const std::int64_t> axes) {
  check_rank(in.size());
  const auto rank = static_cast<std::int64_t>(in.size());
  std::vector<bool> reduced(in.size(), axes.empty());
  for (auto a : axes) {
    const std::int64_t ax = a < 0 ? a + rank : a;
    if (ax < 0 || ax >= rank)
      throw Unsupported{fmt::format("reduction axis {} of a rank-{} tensor", a, rank)};
    reduced[static_cast<std::size_t>(ax)] = true;
  }
  const auto st = strides_of(in);
  ReducePlan p;
  for (std::size_t i = 0; i < in.size(); ++i) {
    StridedView& v = reduced[i] ? p.reduced : p.kept;
    v.dims[v.rank] = in[i];
    v.strides[v.rank] = st[i];
    ++v.rank;
  }
  return p;
}

}  // namespace strata::validate::cuda
