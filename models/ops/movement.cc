// Data movement: concat, split, transpose (layout-only or data-moving), reshape, expand (broadcast_to).
#include <numeric>

#include "models/ops/common.h"
#include "models/ops/parallel_dims.h"
#include "models/ops/rule_helpers.h"
#include "models/train/grad_context.h"

namespace strata::models::ops {
namespace {

// ---- concat ----
std::vector<TensorType> concat_shape(std::span<const TensorType> in, const Attrs& a) {
  const int r = in[0].rank();
  const int axis = norm_axis(a.i("axis"), r);
  Shape out = in[0].shape;
  out[u(axis)] = 0;
  for (std::size_t k = 0; k < in.size(); ++k) {
    if (in[k].rank() != r)
      shape_fail(fmt::format("input {} has type {}, expected rank {} like input 0 ({})", k, type_str(in[k]),
                             r, type_str(in[0])));
    if (in[k].dtype != in[0].dtype)
      shape_fail(fmt::format("input {} has type {}, expected element type {} like input 0 ({})", k,
                             type_str(in[k]), dtype_name(in[0].dtype), type_str(in[0])));
    for (int d = 0; d < r; ++d)
      if (d != axis && in[k].shape[u(d)] != in[0].shape[u(d)])
        shape_fail(fmt::format("input {} differs from input 0 in dimension {}", k, d));
    out[u(axis)] += in[k].shape[u(axis)];
  }
  return {TensorType{out, in[0].dtype}};
}
template <class T>
void concat_kernel(const KernelCall<T>& c) {
  const int axis = norm_axis(c.attrs.i("axis"), static_cast<int>(c.out[0].shape->size()));
  const auto os = split_at(*c.out[0].shape, axis);
  std::int64_t offset = 0;
  for (const auto& in : c.in) {
    const auto is = split_at(*in.shape, axis);
    const std::int64_t chunk = is.dim * is.inner;
    for (std::int64_t o = 0; o < os.outer; ++o)
      std::copy_n(in.data + o * chunk, chunk, c.out[0].data + o * os.dim * os.inner + offset * os.inner);
    offset += is.dim;
  }
}
void concat_grad(GradContext& c) {
  const int axis = norm_axis(c.fwd.attrs.i("axis"), c.type(c.y(0)).rank());
  Ints sizes;
  for (auto v : c.fwd.inputs) sizes.push_back(c.shape(v)[u(axis)]);
  const auto parts = c.emit_multi("split", {c.dout()}, {{"axis", std::int64_t{axis}}, {"sizes", sizes}});
  for (std::size_t i = 0; i < parts.size(); ++i)
    if (c.need(static_cast<int>(i))) c.set_dx(static_cast<int>(i), parts[i]);
}

// ---- split ----
std::vector<TensorType> split_shape(std::span<const TensorType> in, const Attrs& a) {
  const int axis = norm_axis(a.i("axis"), in[0].rank());
  const auto& sizes = a.ints("sizes");
  if (sizes.empty()) shape_fail("sizes must not be empty");
  std::int64_t total = 0;
  std::vector<TensorType> out;
  for (auto s : sizes) {
    if (s < 0) shape_fail("negative split size");
    total += s;
    TensorType t = in[0];
    t.shape[u(axis)] = s;
    out.push_back(t);
  }
  if (total != in[0].shape[u(axis)])
    shape_fail(fmt::format("sizes sum to {}, dimension {} has {}", total, axis, in[0].shape[u(axis)]));
  return out;
}
template <class T>
void split_kernel(const KernelCall<T>& c) {
  const int axis = norm_axis(c.attrs.i("axis"), static_cast<int>(c.in[0].shape->size()));
  const auto is = split_at(*c.in[0].shape, axis);
  std::int64_t offset = 0;
  for (const auto& out : c.out) {
    const auto os = split_at(*out.shape, axis);
    const std::int64_t chunk = os.dim * os.inner;
    for (std::int64_t o = 0; o < is.outer; ++o)
      std::copy_n(c.in[0].data + o * is.dim * is.inner + offset * is.inner, chunk, out.data + o * chunk);
    offset += os.dim;
  }
}
void split_grad(GradContext& c) {
  if (!c.need(0)) return;
  std::vector<ValueId> parts;
  for (std::size_t i = 0; i < c.dy.size(); ++i) {
    if (c.dy[i] != kNoValue) {
      parts.push_back(c.dy[i]);
    } else {
      const auto& t = c.type(c.y(static_cast<int>(i)));
      // Zeros in the forward output's element type (the fill default is f32).
      parts.push_back(c.emit(
          "fill", {}, {{"shape", t.shape}, {"value", 0.0}, {"dtype", std::string(dtype_name(t.dtype))}}));
    }
  }
  c.set_dx(0, c.emit("concat", parts, {{"axis", c.fwd.attrs.i("axis")}}));
}

// ---- transpose ----
std::vector<int> perm_of(const Attrs& a, int rank) {
  const auto& p = a.ints("perm");
  std::vector<int> perm;
  if (p.empty()) {
    for (int i = rank - 1; i >= 0; --i) perm.push_back(i);
    return perm;
  }
  if (static_cast<int>(p.size()) != rank)
    shape_fail(fmt::format("perm has {} entries for rank {}", p.size(), rank));
  std::vector<bool> seen(u(rank), false);
  for (auto v : p) {
    const int ax = norm_axis(v, rank, "perm entry");
    if (seen[u(ax)]) shape_fail("perm is not a permutation");
    seen[u(ax)] = true;
    perm.push_back(ax);
  }
  return perm;
}
std::vector<TensorType> transpose_shape(std::span<const TensorType> in, const Attrs& a) {
  const auto perm = perm_of(a, in[0].rank());
  TensorType t = in[0];
  for (std::size_t i = 0; i < perm.size(); ++i) t.shape[i] = in[0].shape[u(perm[i])];
  return {t};
}
template <class T>
void transpose_kernel(const KernelCall<T>& c) {
  const auto& is = *c.in[0].shape;
  const int r = static_cast<int>(is.size());
  const auto perm = perm_of(c.attrs, r);
  const auto istr = strides_of(is);
  Shape os(u(r));
  std::vector<std::int64_t> str(u(r));  // input stride for each output axis
  for (int i = 0; i < r; ++i) {
    os[u(i)] = is[u(perm[u(i)])];
    str[u(i)] = istr[u(perm[u(i)])];
  }
  std::vector<std::int64_t> idx(u(r), 0);
  std::int64_t off = 0;
  for (std::int64_t i = 0; i < c.out[0].numel; ++i) {
    c.out[0][i] = c.in[0][off];
    for (int d = r - 1; d >= 0; --d) {
      if (++idx[u(d)] < os[u(d)]) {
        off += str[u(d)];
        break;
      }
      off -= str[u(d)] * (os[u(d)] - 1);
      idx[u(d)] = 0;
    }
  }
}
// A layout-only transpose changes strides, not memory: it moves no bytes.
double transpose_bytes(std::span<const TensorType> in, std::span<const TensorType> out, const Attrs& a) {
  return a.i("shuffle") ? io_bytes(in, out) : 0.0;
}
void transpose_grad(GradContext& c) {
  if (!c.need(0)) return;
  const auto perm = perm_of(c.fwd.attrs, c.type(c.x(0)).rank());
  Ints inv(perm.size());
  for (std::size_t i = 0; i < perm.size(); ++i) inv[u(perm[i])] = static_cast<std::int64_t>(i);
  c.set_dx(0, c.emit("transpose", {c.dout()}, {{"perm", inv}, {"shuffle", c.fwd.attrs.i("shuffle")}}));
}

// ---- reshape ----
std::vector<TensorType> reshape_shape(std::span<const TensorType> in, const Attrs& a) {
  Shape s = a.ints("shape");
  std::int64_t known = 1;
  int infer = -1;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == -1) {
      if (infer >= 0) shape_fail("more than one -1 in shape");
      infer = static_cast<int>(i);
    } else if (s[i] < 0) {
      shape_fail(fmt::format("invalid dimension {}", s[i]));
    } else if (__builtin_mul_overflow(known, s[i], &known)) {
      shape_fail(fmt::format("shape {} has more than 2^63 - 1 elements", shape_str(s)));
    }
  }
  if (infer >= 0) {
    if (known == 0 || in[0].numel() % known)
      shape_fail(fmt::format("cannot infer -1 for {} elements", in[0].numel()));
    s[u(infer)] = in[0].numel() / known;
  }
  if (numel(s) != in[0].numel())
    shape_fail(fmt::format("{} elements cannot be viewed as {}", in[0].numel(), shape_str(s)));
  return {TensorType{s, in[0].dtype}};
}
template <class T>
void copy_kernel(const KernelCall<T>& c) {
  std::copy_n(c.in[0].data, c.out[0].numel, c.out[0].data);
}
void reshape_grad(GradContext& c) {
  if (c.need(0)) c.set_dx(0, c.emit("reshape", {c.dout()}, {{"shape", c.shape(c.x(0))}}));
}

// ---- expand ----
std::vector<TensorType> expand_shape(std::span<const TensorType> in, const Attrs& a) {
  const Shape target = a.ints("shape");
  const Shape out = broadcast_shapes(in[0].shape, target);
  return {TensorType{out, in[0].dtype}};
}
template <class T>
void expand_kernel(const KernelCall<T>& c) {
  const auto& os = *c.out[0].shape;
  for_each_broadcast(os, *c.in[0].shape, os,
                     [&](std::int64_t i, std::int64_t ia, std::int64_t) { c.out[0][i] = c.in[0][ia]; });
}
double expand_bytes(std::span<const TensorType>, std::span<const TensorType> out, const Attrs&) {
  return out[0].bytes();
}
void expand_grad(GradContext& c) {
  if (c.need(0)) c.set_dx(0, c.dout());  // set_dx sums over the broadcast axes
}

double io_if_copy(std::span<const TensorType> in, std::span<const TensorType> out, const Attrs&) {
  return io_bytes(in, out);
}
double no_bytes(std::span<const TensorType>, std::span<const TensorType>, const Attrs&) {
  return 0;
}

// A two-way concatenation along the axis is a boundary there (TASO's split undoes it); the other axes run
// through both parts.
SplitAxisTrace concat_split_axis(std::span<const TensorType> in, const TensorType& out, const Attrs& a,
                                 std::int64_t axis) {
  if (in.size() != 2) return {};
  auto along = a.i("axis");
  if (along < 0) along += out.rank();
  if (along != axis) return {std::nullopt, {{0, axis}, {1, axis}}};
  return {in[0].shape[u(axis)], {{0, axis}, {1, axis}}};
}
// The pieces of a split keep the other axes; along the split axis each piece is a part of the input's most
// recent boundary there, which the users of the split history resolve themselves (search/subst/
// split_history.h).
SplitAxisTrace split_split_axis(std::span<const TensorType> in, const TensorType&, const Attrs& a,
                                std::int64_t axis) {
  if (in.empty()) return {};
  auto along = a.i("axis");
  if (along < 0) along += in[0].rank();
  if (along == axis) return {};
  return {std::nullopt, {{0, axis}}};
}
// Output axis i is input axis perm[i].
SplitAxisTrace transpose_split_axis(std::span<const TensorType> in, const TensorType&, const Attrs& a,
                                    std::int64_t axis) {
  if (in.empty() || axis < 0 || axis >= in[0].rank()) return {};
  const auto perm = perm_of(a, in[0].rank());
  return {std::nullopt, {{0, perm[u(axis)]}}};
}

// Rule forms (TASO's transpose, concat and split_0/split_1). TASO's transpose swaps the two axes of a matrix
// and moves data; its concat joins two tensors; its split undoes the most recent concatenation along the
// axis, so the split point comes from the operand's history (RuleInstance::split_point).
std::optional<Attrs> transpose_rule(const RuleInstance& r) {
  if (r.inputs.size() != 1 || r.inputs[0].size() != 2) return std::nullopt;
  return Attrs{{"perm", Ints{1, 0}}, {"shuffle", std::int64_t{1}}};
}
std::optional<Ints> transpose_params(std::span<const TensorType> in, const Attrs& a, std::size_t) {
  if (in.size() != 1 || in[0].rank() != 2 || a.i("shuffle") != 1) return std::nullopt;
  const auto& perm = a.ints("perm");
  if (!perm.empty() && perm != Ints{1, 0}) return std::nullopt;
  return Ints{};
}
std::optional<Shape> transpose_operand_shape(std::size_t, const Shape*, const Shape* wanted) {
  if (!wanted || wanted->size() != 2) return std::nullopt;
  return Shape{(*wanted)[1], (*wanted)[0]};
}

std::optional<Attrs> concat_rule(const RuleInstance& r) {
  const auto& in = r.inputs;
  if (in.size() != 2 || r.params.size() != 1 || in[0].size() != in[1].size()) return std::nullopt;
  const std::int64_t axis = r.params[0];
  if (axis < 0 || axis >= static_cast<std::int64_t>(in[0].size())) return std::nullopt;
  for (std::size_t d = 0; d < in[0].size(); ++d)
    if (static_cast<std::int64_t>(d) != axis && in[0][d] != in[1][d]) return std::nullopt;
  return Attrs{{"axis", axis}};
}
std::optional<Ints> concat_params(std::span<const TensorType> in, const Attrs& a, std::size_t) {
  if (in.size() != 2) return std::nullopt;
  auto axis = a.i("axis");
  if (axis < 0) axis += in[0].rank();
  return Ints{axis};
}
std::optional<Shape> concat_operand_shape(std::size_t, const Shape* other, const Shape*) {
  if (other) return *other;
  return std::nullopt;
}

std::optional<Attrs> split_rule(const RuleInstance& r) {
  if (r.inputs.size() != 1 || r.params.size() != 1) return std::nullopt;
  const std::int64_t axis = r.params[0];
  if (axis < 0 || axis >= static_cast<std::int64_t>(r.inputs[0].size())) return std::nullopt;
  const auto dim = r.inputs[0][u(axis)];
  if (r.split_point <= 0 || r.split_point >= dim) return std::nullopt;
  return Attrs{{"axis", axis}, {"sizes", Ints{r.split_point, dim - r.split_point}}};
}
std::optional<Ints> split_params(std::span<const TensorType> in, const Attrs& a, std::size_t outputs) {
  if (outputs != 2 || in.size() != 1) return std::nullopt;
  auto axis = a.i("axis");
  if (axis < 0) axis += in[0].rank();
  return Ints{axis};
}

// Parallelization traits (OpDef::parallel_dims). transpose: every output axis, splitting the input axis it
// comes from; the one from input axis 0 is the batch.
std::vector<ParallelDim> transpose_parallel_dims(std::span<const TensorType> in,
                                                 std::span<const TensorType> out, const Attrs& a) {
  static constexpr std::string_view kNames[] = {"axis0", "axis1", "axis2", "axis3",
                                                "axis4", "axis5", "axis6", "axis7"};
  const auto perm = perm_of(a, in[0].rank());
  std::vector<ParallelDim> d;
  for (int i = 0; i < out[0].rank() && i < 8; ++i) {
    const int from = static_cast<int>(perm[u(i)]);
    d.push_back({from == 0 ? "batch" : kNames[from],
                 from == 0 ? ParallelDimKind::kSample : ParallelDimKind::kAttribute,
                 out[0].shape[u(i)],
                 i,
                 {{0, from}}});
  }
  return d;
}
// reshape keeps the row-major order: d equal chunks of the elements are d blocks of input rows and d blocks
// of output rows whenever d divides both leading extents (merging or splitting the batch with other axes).
std::vector<ParallelDim> reshape_parallel_dims(std::span<const TensorType> in,
                                               std::span<const TensorType> out, const Attrs&) {
  if (in[0].rank() == 0 || out[0].rank() == 0) return {};
  return {{"batch", ParallelDimKind::kSample, out[0].shape[0], 0, {{0, 0}}}};
}

}  // namespace

void register_movement_ops(OpRegistry& r) {
  r.add({.name = "concat",
         .symbol = "concat",
         .summary = "concatenate along an axis",
         .kind = OpKind::kDataMovement,
         .min_inputs = 1,
         .max_inputs = -1,
         .attrs = {{"axis", AttrKind::kInt, std::nullopt, "concatenation axis"}},
         .symbol_params = {{"axis", SymbolParamKind::kAxis}},
         .symbol_inputs = 2,  // TASO's concat joins two tensors
         .split_axis = concat_split_axis,
         .rule = {.to_attrs = concat_rule, .from_node = concat_params, .operand_shape = concat_operand_shape},
         .shape = concat_shape,
         .flops = zero_count,
         .bytes = io_if_copy,
         .kernel = STRATA_KERNELS(concat_kernel),
         .grad = concat_grad,
         .onnx_op = "Concat"});
  r.add({.name = "split",
         .symbol = "split",
         .summary = "split along an axis into pieces of the given sizes",
         .kind = OpKind::kDataMovement,
         .attrs = {{"axis", AttrKind::kInt, std::nullopt, "split axis"},
                   {"sizes", AttrKind::kInts, std::nullopt, "size of each output along the axis"}},
         .symbol_params = {{"axis", SymbolParamKind::kAxis}},
         .symbol_outputs = 2,  // TASO's two-way split: split_0, split_1
         .split_axis = split_split_axis,
         .rule = {.to_attrs = split_rule, .from_node = split_params},
         .shape = split_shape,
         .flops = zero_count,
         .bytes = io_if_copy,
         .kernel = STRATA_KERNELS(split_kernel),
         .grad = split_grad,
         .onnx_op = "Split"});
  r.add({.name = "transpose",
         .symbol = "transpose",
         .summary = "permute dimensions; shuffle=0 is a layout (stride) change, shuffle=1 moves data",
         .kind = OpKind::kDataMovement,
         .attrs = {{"perm", AttrKind::kInts, Ints{}, "output axis i is input axis perm[i] (empty: reverse)"},
                   {"shuffle", AttrKind::kInt, std::int64_t{1}, "1: data-moving, 0: layout-only"}},
         .linear_in = {0},
         .split_axis = transpose_split_axis,
         .rule = {.to_attrs = transpose_rule,
                  .from_node = transpose_params,
                  .operand_shape = transpose_operand_shape,
                  .shape_follows = {0}},
         .shape = transpose_shape,
         .flops = zero_count,
         .bytes = transpose_bytes,
         .kernel = STRATA_KERNELS(transpose_kernel),
         .grad = transpose_grad,
         .onnx_op = "Transpose",
         .parallel_dims = transpose_parallel_dims});
  r.add({.name = "reshape",
         .symbol = "reshape",
         .summary = "view with a new shape (one -1 is inferred)",
         .kind = OpKind::kView,
         .attrs = {{"shape", AttrKind::kInts, std::nullopt, "target shape"}},
         .linear_in = {0},
         .shape = reshape_shape,
         .flops = zero_count,
         .bytes = no_bytes,
         .kernel = STRATA_KERNELS(copy_kernel),
         .grad = reshape_grad,
         .onnx_op = "Reshape",
         .parallel_dims = reshape_parallel_dims});
  r.add({.name = "expand",
         .symbol = "expand",
         .summary = "broadcast to a shape (numpy rules)",
         .kind = OpKind::kDataMovement,
         .attrs = {{"shape", AttrKind::kInts, std::nullopt, "target shape"}},
         .linear_in = {0},
         .shape = expand_shape,
         .flops = zero_count,
         .bytes = expand_bytes,
         .kernel = STRATA_KERNELS(expand_kernel),
         .grad = expand_grad,
         .onnx_op = "Expand"});
}

}  // namespace strata::models::ops
