// Fused scaled-dot-product attention, FlashAttention-style (Dao et al. 2022, arXiv 2205.14135;
// FlashAttention-2, Dao 2023, arXiv 2307.08691): o = softmax(scale * q k^T [causal mask]) v computed tile by
// tile on chip, so the S x S score matrix never reaches HBM. Grouped-query attention (Ainslie et al. 2023,
// arXiv 2305.13245): k and v have Hkv heads, Hkv dividing H, and query head h reads key/value head h / (H /
// Hkv).
//
// The reference kernels compute exactly what the unfused composition batch_matmul(q, k, trans_b) ->
// scalar_mul(scale) -> softmax(causal) -> batch_matmul(., v) computes, in both number systems: over the reals
// with the max-subtracted exponentials of softmax, in the field with softmax's uninterpreted exp (no max
// subtraction), so fingerprints of the fused and unfused forms agree.
#include <array>
#include <cmath>

#include "models/ops/common.h"
#include "models/train/grad_context.h"

namespace strata::models::ops {
namespace {

struct AttnDims {
  std::int64_t batch, heads, kv_heads, q_len, kv_len, head_dim;
  std::int64_t group() const { return heads / kv_heads; }
  // Causal: query row i attends to keys j <= i + shift (keys aligned to the end, as softmax's causal mask).
  std::int64_t shift() const { return kv_len - q_len; }
};

AttnDims attn_dims(std::span<const TensorType> in) {
  expect_rank(in[0], 4, "q");
  expect_rank(in[1], 4, "k");
  expect_rank(in[2], 4, "v");
  const auto &q = in[0].shape, &k = in[1].shape, &v = in[2].shape;
  if (k != v) shape_fail(fmt::format("k {} and v {} differ", shape_str(k), shape_str(v)));
  if (k[0] != q[0]) shape_fail(fmt::format("batch of k {} differs from q {}", shape_str(k), shape_str(q)));
  if (k[3] != q[3]) shape_fail(fmt::format("head dim of k {} differs from q {}", shape_str(k), shape_str(q)));
  if (k[2] < 1) shape_fail(fmt::format("k {} has no keys", shape_str(k)));
  if (k[1] <= 0 || q[1] % k[1] != 0)
    shape_fail(
        fmt::format("key/value heads {} must divide query heads {} (grouped-query attention)", k[1], q[1]));
  return {q[0], q[1], k[1], q[2], k[2], q[3]};
}

double attn_scale(const Attrs& a, std::int64_t head_dim) {
  const double s = a.f("scale");
  return s == 0 ? 1.0 / std::sqrt(static_cast<double>(head_dim)) : s;
}

std::vector<TensorType> attention_shape(std::span<const TensorType> in, const Attrs& a) {
  const auto d = attn_dims(in);
  const auto causal = a.i("causal");
  if (causal != 0 && causal != 1) shape_fail(fmt::format("causal must be 0 or 1, got {}", causal));
  if (causal && d.kv_len < d.q_len)
    shape_fail(
        fmt::format("causal attention needs at least as many keys ({}) as queries ({})", d.kv_len, d.q_len));
  if (!std::isfinite(a.f("scale")) || a.f("scale") < 0)
    shape_fail(fmt::format("scale must be finite and >= 0 (0: 1/sqrt(head_dim)), got {}", a.f("scale")));
  if (in[1].dtype != in[0].dtype || in[2].dtype != in[0].dtype) shape_fail("q, k and v must share one dtype");
  return {in[0]};
}

// The two GEMMs q k^T and p v: 2 x 2 B H S Skv D; FlashAttention's own FLOP count halves it when causal
// (Dao 2023 §4.1 benchmarks count the causal FLOPs as half).
double attention_gemm_flops(const AttnDims& d, bool causal) {
  const double f = 4.0 * static_cast<double>(d.batch * d.heads) * static_cast<double>(d.q_len) *
                   static_cast<double>(d.kv_len) * static_cast<double>(d.head_dim);
  return causal ? f / 2 : f;
}
double attention_flops(std::span<const TensorType> in, std::span<const TensorType>, const Attrs& a) {
  return attention_gemm_flops(attn_dims(in), a.i("causal") != 0);
}
// HBM traffic: q, k, v read once and o written once (io_bytes); the scores stay on chip.

// Softmax row i of scale * q_i . k_j over the visible keys, written to p[0, kv_len) (0 where masked); as
// softmax_kernel does it: max-subtracted over the reals, uninterpreted exp in the field.
template <class T>
void attention_row(const T* qi, const T* kh, const AttnDims& d, std::int64_t limit, T scale, T* p) {
  for (std::int64_t j = 0; j <= limit; ++j) {
    T acc{};
    for (std::int64_t e = 0; e < d.head_dim; ++e) acc += qi[e] * kh[j * d.head_dim + e];
    p[j] = acc * scale;
  }
  T mx = p[0];
  if constexpr (std::is_same_v<T, double>)
    for (std::int64_t j = 1; j <= limit; ++j) mx = std::max(mx, p[j]);
  T sum{};
  for (std::int64_t j = 0; j < d.kv_len; ++j) {
    T ex{};
    if (j <= limit) {
      if constexpr (std::is_same_v<T, double>)
        ex = std::exp(p[j] - mx);
      else
        ex = Num<T>::exp(p[j]);
    }
    p[j] = ex;
    sum += ex;
  }
  const T inv = Num<T>::inv(sum);
  for (std::int64_t j = 0; j < d.kv_len; ++j) p[j] = p[j] * inv;
}

// Calls f(q_head_offset, kv_head_offset, row i, visible key limit) for every query row.
template <class F>
void for_each_row(const AttnDims& d, bool causal, F&& f) {
  for (std::int64_t b = 0; b < d.batch; ++b)
    for (std::int64_t h = 0; h < d.heads; ++h) {
      const std::int64_t qoff = (b * d.heads + h) * d.q_len * d.head_dim;
      const std::int64_t kvoff = (b * d.kv_heads + h / d.group()) * d.kv_len * d.head_dim;
      for (std::int64_t i = 0; i < d.q_len; ++i) f(qoff, kvoff, i, causal ? i + d.shift() : d.kv_len - 1);
    }
}

template <class T>
void attention_kernel(const KernelCall<T>& c) {
  const TensorType tq{*c.in[0].shape}, tk{*c.in[1].shape}, tv{*c.in[2].shape};
  const std::array<TensorType, 3> types{tq, tk, tv};
  const auto d = attn_dims(types);
  const T scale = Num<T>::from_double(attn_scale(c.attrs, d.head_dim));
  std::vector<T> p(u(d.kv_len));
  for_each_row(d, c.attrs.i("causal") != 0,
               [&](std::int64_t qoff, std::int64_t kvoff, std::int64_t i, std::int64_t limit) {
                 attention_row(c.in[0].data + qoff + i * d.head_dim, c.in[1].data + kvoff, d, limit, scale,
                               p.data());
                 T* oi = c.out[0].data + qoff + i * d.head_dim;
                 const T* vh = c.in[2].data + kvoff;
                 for (std::int64_t e = 0; e < d.head_dim; ++e) oi[e] = T{};
                 for (std::int64_t j = 0; j <= limit; ++j)
                   for (std::int64_t e = 0; e < d.head_dim; ++e) oi[e] += p[u(j)] * vh[j * d.head_dim + e];
               });
}

// ---------------- attention_grad ----------------
// (q, k, v, o, do) -> dq, dk, dv, recomputing p row by row as FlashAttention-2's backward pass does (Dao
// 2023, Algorithm 2): dv_j += p_ij do_i; dp_ij = do_i . v_j; ds_ij = p_ij (dp_ij - D_i) with D_i = do_i .
// o_i; dq_i = scale sum_j ds_ij k_j; dk_j += scale ds_ij q_i. Key/value gradients sum over the query heads of
// a group.
std::vector<TensorType> attention_grad_shape(std::span<const TensorType> in, const Attrs& a) {
  const auto out = attention_shape(in.first(3), a);
  if (in[3].shape != in[0].shape || in[4].shape != in[0].shape)
    shape_fail(fmt::format("o {} and do {} must have q's shape {}", shape_str(in[3].shape),
                           shape_str(in[4].shape), shape_str(in[0].shape)));
  return {in[0], in[1], in[2]};
}
// FlashAttention-2's backward runs five GEMMs of the forward's size (q k^T recomputed, dv, dp, dq, dk)
// against the forward's two: 2.5 x the forward FLOPs (Dao 2023, Algorithm 2; §4.1 counts the backward so).
double attention_grad_flops(std::span<const TensorType> in, std::span<const TensorType>, const Attrs& a) {
  return 2.5 * attention_gemm_flops(attn_dims(in.first(3)), a.i("causal") != 0);
}
// q, k, v, o, do read; dq, dk, dv written; plus the fp32 row statistics (the forward's logsumexp, one per
// query row and head) read back.
double attention_grad_bytes(std::span<const TensorType> in, std::span<const TensorType> out, const Attrs&) {
  const auto d = attn_dims(in.first(3));
  return io_bytes(in, out) + 4.0 * static_cast<double>(d.batch * d.heads * d.q_len);
}

template <class T>
void attention_grad_kernel(const KernelCall<T>& c) {
  const std::array<TensorType, 3> types{TensorType{*c.in[0].shape}, TensorType{*c.in[1].shape},
                                        TensorType{*c.in[2].shape}};
  const auto d = attn_dims(types);
  const T scale = Num<T>::from_double(attn_scale(c.attrs, d.head_dim));
  for (int o = 0; o < 3; ++o)
    for (std::int64_t i = 0; i < c.out[u(o)].numel; ++i) c.out[u(o)][i] = T{};
  std::vector<T> p(u(d.kv_len));
  const std::int64_t dh = d.head_dim;
  for_each_row(d, c.attrs.i("causal") != 0,
               [&](std::int64_t qoff, std::int64_t kvoff, std::int64_t i, std::int64_t limit) {
                 const T* qi = c.in[0].data + qoff + i * dh;
                 const T* kh = c.in[1].data + kvoff;
                 const T* vh = c.in[2].data + kvoff;
                 const T* oi = c.in[3].data + qoff + i * dh;
                 const T* doi = c.in[4].data + qoff + i * dh;
                 attention_row(qi, kh, d, limit, scale, p.data());
                 T row_d{};
                 for (std::int64_t e = 0; e < dh; ++e) row_d += doi[e] * oi[e];
                 T* dqi = c.out[0].data + qoff + i * dh;
                 T* dk = c.out[1].data + kvoff;
                 T* dv = c.out[2].data + kvoff;
                 for (std::int64_t j = 0; j <= limit; ++j) {
                   T dp{};
                   for (std::int64_t e = 0; e < dh; ++e) {
                     dv[j * dh + e] += p[u(j)] * doi[e];
                     dp += doi[e] * vh[j * dh + e];
                   }
                   const T ds = p[u(j)] * (dp - row_d) * scale;
                   for (std::int64_t e = 0; e < dh; ++e) {
                     dqi[e] += ds * kh[j * dh + e];
                     dk[j * dh + e] += ds * qi[e];
                   }
                 }
               });
}

void attention_grad(GradContext& c) {
  const auto g = c.emit_multi("attention_grad", {c.x(0), c.x(1), c.x(2), c.y(0), c.dout()}, c.fwd.attrs);
  for (int i = 0; i < 3; ++i)
    if (c.need(i)) c.set_dx(i, g[u(i)]);
}

const std::vector<AttrSpec> kAttnAttrs = {
    {"causal", AttrKind::kInt, std::int64_t{0}, "1: query i sees keys j <= i + (kv_len - q_len)"},
    {"scale", AttrKind::kFloat, 0.0, "score scale; 0: 1/sqrt(head_dim)"}};

}  // namespace

void register_attention_ops(OpRegistry& r) {
  r.add(
      {.name = "attention",
       .symbol = "attention",
       .summary = "fused attention softmax(scale q k^T [causal]) v; q [B,H,S,D], k, v [B,Hkv,Skv,D], Hkv | H",
       .kind = OpKind::kContraction,
       .min_inputs = 3,
       .max_inputs = 3,
       .attrs = kAttnAttrs,
       .shape = attention_shape,
       .flops = attention_flops,
       .kernel = STRATA_KERNELS(attention_kernel),
       .grad = attention_grad});
  r.add({.name = "attention_grad",
         .symbol = "attention_grad",
         .summary = "(q, k, v, o, do) -> dq, dk, dv (FlashAttention-2 backward)",
         .kind = OpKind::kContraction,
         .min_inputs = 5,
         .max_inputs = 5,
         .attrs = kAttnAttrs,
         .backward = true,
         .shape = attention_grad_shape,
         .flops = attention_grad_flops,
         .bytes = attention_grad_bytes,
         .kernel = STRATA_KERNELS(attention_grad_kernel)});
}

}  // namespace strata::models::ops
