// Embedding lookup: table [V, D] gathered by integer indices of any shape -> indices.shape + [D].
#include <stdexcept>

#include "models/ops/common.h"
#include "models/ops/parallel_dims.h"
#include "models/train/grad_context.h"

namespace strata::models::ops {
namespace {

std::vector<TensorType> emb_shape(std::span<const TensorType> in, const Attrs&) {
  expect_rank(in[0], 2, "table");
  if (is_float(in[1].dtype))
    shape_fail(fmt::format("indices must be integers, got {}", dtype_name(in[1].dtype)));
  Shape out = in[1].shape;
  out.push_back(in[0].shape[1]);
  return {TensorType{out, in[0].dtype}};
}
double emb_bytes(std::span<const TensorType> in, std::span<const TensorType> out, const Attrs&) {
  return in[1].bytes() + 2 * out[0].bytes();  // rows read + output written
}
std::int64_t checked_index(std::int64_t i, std::int64_t vocab) {
  if (i < 0) i += vocab;  // ONNX Gather allows negative indices
  if (i < 0 || i >= vocab)
    throw std::out_of_range(fmt::format("embedding index {} out of range for {} rows", i, vocab));
  return i;
}
template <class T>
void emb_kernel(const KernelCall<T>& c) {
  const std::int64_t vocab = (*c.in[0].shape)[0], d = (*c.in[0].shape)[1];
  for (std::int64_t i = 0; i < c.in[1].numel; ++i) {
    const std::int64_t row = checked_index(Num<T>::to_index(c.in[1][i]), vocab);
    std::copy_n(c.in[0].data + row * d, d, c.out[0].data + i * d);
  }
}
// embedding_grad(indices, dy) -> [vocab, D]: rows accumulated by index.
std::vector<TensorType> emb_grad_shape(std::span<const TensorType> in, const Attrs& a) {
  if (in[1].rank() != in[0].rank() + 1) shape_fail("dy must have the indices' rank + 1");
  return {TensorType{{a.i("vocab"), in[1].shape.back()}, in[1].dtype}};
}
template <class T>
void emb_grad_kernel(const KernelCall<T>& c) {
  const std::int64_t vocab = (*c.out[0].shape)[0], d = (*c.out[0].shape)[1];
  for (std::int64_t i = 0; i < c.out[0].numel; ++i) c.out[0][i] = T{};
  for (std::int64_t i = 0; i < c.in[0].numel; ++i) {
    const std::int64_t row = checked_index(Num<T>::to_index(c.in[0][i]), vocab);
    for (std::int64_t k = 0; k < d; ++k) c.out[0][row * d + k] += c.in[1][i * d + k];
  }
}
double emb_grad_flops(std::span<const TensorType> in, std::span<const TensorType>, const Attrs&) {
  return static_cast<double>(in[1].numel());
}
void emb_grad(GradContext& c) {
  if (c.need(0)) c.set_dx(0, c.emit("embedding_grad", {c.x(1), c.dout()}, {{"vocab", c.shape(c.x(0))[0]}}));
}

// Parallelization trait: the lookups' batch, the feature columns of the table (parameter) and its vocabulary
// rows (reduction: a part holding some rows produces the rows it owns and zeros elsewhere; the parts' outputs
// are summed, as in Megatron-LM's vocabulary-parallel embedding).
std::vector<ParallelDim> emb_parallel_dims(std::span<const TensorType> in, std::span<const TensorType> out,
                                           const Attrs&) {
  std::vector<ParallelDim> d;
  if (in[1].rank() >= 1) d.push_back({"batch", ParallelDimKind::kSample, in[1].shape[0], 0, {{1, 0}}});
  d.push_back({"features", ParallelDimKind::kParameter, in[0].shape[1], out[0].rank() - 1, {{0, 1}}});
  d.push_back({"vocab", ParallelDimKind::kReduction, in[0].shape[0], -1, {{0, 0}}});
  return d;
}

}  // namespace

void register_embedding_ops(OpRegistry& r) {
  r.add({.name = "embedding",
         .symbol = "embedding",
         .summary = "row lookup: table[V,D] at integer indices",
         .kind = OpKind::kDataMovement,
         .min_inputs = 2,
         .max_inputs = 2,
         .linear_in = {0},
         .shape = emb_shape,
         .flops = zero_count,
         .bytes = emb_bytes,
         .kernel = STRATA_KERNELS(emb_kernel),
         .grad = emb_grad,
         .onnx_op = "Gather",
         .parallel_dims = emb_parallel_dims});
  r.add({.name = "embedding_grad",
         .symbol = "embedding_grad",
         .summary = "(indices, dy) -> table gradient",
         .kind = OpKind::kDataMovement,
         .min_inputs = 2,
         .max_inputs = 2,
         .attrs = {{"vocab", AttrKind::kInt, std::nullopt, "table rows"}},
         .backward = true,
         .shape = emb_grad_shape,
         .flops = emb_grad_flops,
         .kernel = STRATA_KERNELS(emb_grad_kernel)});
}

}  // namespace strata::models::ops
