#include "search/subst/ir_bridge.h"

#include <fmt/format.h>

namespace strata::search::subst {
namespace {

using models::Ints;
using models::Shape;

// TensorFlow/TASO SAME padding: output = ceil(in / stride); the extra row/column goes to the bottom/right.
std::optional<std::pair<std::int64_t, std::int64_t>> same_pads(std::int64_t in, std::int64_t k,
                                                               std::int64_t s) {
  if (s <= 0 || k <= 0) return std::nullopt;
  const std::int64_t out = (in + s - 1) / s;
  const std::int64_t total = std::max<std::int64_t>((out - 1) * s + k - in, 0);
  return std::pair{total / 2, total - total / 2};
}

std::optional<Ints> pads_for(std::int64_t pad_mode, std::int64_t h, std::int64_t w, std::int64_t kh,
                             std::int64_t kw, std::int64_t sh, std::int64_t sw) {
  if (pad_mode == kPadValid) return Ints{0, 0, 0, 0};
  if (pad_mode != kPadSame) return std::nullopt;
  auto ph = same_pads(h, kh, sh), pw = same_pads(w, kw, sw);
  if (!ph || !pw) return std::nullopt;
  return Ints{ph->first, pw->first, ph->second, pw->second};
}

// SAME / VALID / neither for given IR pads.
std::optional<std::int64_t> pad_mode_of(const Ints& pads, std::int64_t h, std::int64_t w, std::int64_t kh,
                                        std::int64_t kw, std::int64_t sh, std::int64_t sw) {
  if (pads == Ints{0, 0, 0, 0}) {
    auto same = pads_for(kPadSame, h, w, kh, kw, sh, sw);
    if (same && *same == pads) return kPadSame;  // 1x1 kernels: SAME and VALID coincide; prefer SAME
    return kPadValid;
  }
  auto same = pads_for(kPadSame, h, w, kh, kw, sh, sw);
  if (same && *same == pads) return kPadSame;
  return std::nullopt;
}

}  // namespace

std::optional<IrOp> to_ir(const OpInstance& inst, std::span<const Shape> in, std::int64_t split_point,
                          const Shape& constant_shape) {
  const auto& p = inst.params;
  auto rank_is = [&](std::size_t i, std::size_t r) { return i < in.size() && in[i].size() == r; };
  switch (inst.op) {
    case Op::kEwadd:
    case Op::kEwmul:
      if (in.size() != 2 || in[0] != in[1]) return std::nullopt;
      return IrOp{inst.op == Op::kEwadd ? "ewadd" : "ewmul", {}};
    case Op::kSmul:
      if (in.size() != 2 || !in[1].empty() || in[0].empty()) return std::nullopt;
      return IrOp{"scalar_mul", {}};
    case Op::kMatmul:
      if (!rank_is(0, 2) || !rank_is(1, 2) || in[0][1] != in[1][0]) return std::nullopt;
      return IrOp{"matmul", {}};
    case Op::kTranspose:
      if (!rank_is(0, 2)) return std::nullopt;
      return IrOp{"transpose", {{"perm", Ints{1, 0}}, {"shuffle", std::int64_t{1}}}};
    case Op::kRelu:
      if (in.size() != 1 || in[0].empty()) return std::nullopt;
      return IrOp{"relu", {}};
    case Op::kConv2d: {
      if (!rank_is(0, 4) || !rank_is(1, 4)) return std::nullopt;
      const auto& x = in[0];
      const auto& w = in[1];
      if (w[1] <= 0 || x[1] % w[1] != 0 || w[0] % (x[1] / w[1]) != 0) return std::nullopt;
      auto pads = pads_for(p[2], x[2], x[3], w[2], w[3], p[0], p[1]);
      if (!pads) return std::nullopt;
      if (p[3] != kActiNone && p[3] != kActiRelu) return std::nullopt;
      return IrOp{"conv2d",
                  {{"strides", Ints{p[0], p[1]}},
                   {"pads", *pads},
                   {"groups", x[1] / w[1]},
                   {"activation", std::string(p[3] == kActiRelu ? "relu" : "none")}}};
    }
    case Op::kPoolavg:
    case Op::kPoolmax: {
      if (!rank_is(0, 4)) return std::nullopt;
      auto pads = pads_for(p[4], in[0][2], in[0][3], p[0], p[1], p[2], p[3]);
      if (!pads) return std::nullopt;
      IrOp op{inst.op == Op::kPoolavg ? "avgpool2d" : "maxpool2d",
              {{"kernel", Ints{p[0], p[1]}}, {"strides", Ints{p[2], p[3]}}, {"pads", *pads}}};
      // TASO's average pooling equals a convolution with C_pool, whose zero padding counts in the divisor.
      if (inst.op == Op::kPoolavg) op.attrs.set("count_include_pad", std::int64_t{1});
      return op;
    }
    case Op::kConcat: {
      if (in.size() != 2 || in[0].size() != in[1].size() || p[0] < 0 ||
          p[0] >= static_cast<std::int64_t>(in[0].size()))
        return std::nullopt;
      for (std::size_t d = 0; d < in[0].size(); ++d)
        if (static_cast<std::int64_t>(d) != p[0] && in[0][d] != in[1][d]) return std::nullopt;
      return IrOp{"concat", {{"axis", p[0]}}};
    }
    case Op::kSplit0:
    case Op::kSplit1: {
      if (in.size() != 1 || p[0] < 0 || p[0] >= static_cast<std::int64_t>(in[0].size())) return std::nullopt;
      const auto dim = in[0][static_cast<std::size_t>(p[0])];
      if (split_point <= 0 || split_point >= dim) return std::nullopt;
      return IrOp{"split",
                  {{"axis", p[0]}, {"sizes", Ints{split_point, dim - split_point}}},
                  inst.op == Op::kSplit1 ? 1 : 0};
    }
    case Op::kEnlarge:
      if (!rank_is(0, 4) || in[0][2] > p[0] || in[0][3] > p[1] || (p[0] - in[0][2]) % 2 ||
          (p[1] - in[0][3]) % 2)
        return std::nullopt;
      return IrOp{"enlarge", {{"kernel", Ints{p[0], p[1]}}}};
    case Op::kIconv:
    case Op::kCpool:
      if (constant_shape.empty()) return std::nullopt;
      return IrOp{inst.op == Op::kIconv ? "const_iconv" : "const_pool",
                  {{"channels", constant_shape[0]}, {"kernel", Ints{p[0], p[1]}}}};
    case Op::kImatmul:
      if (constant_shape.size() != 2 || constant_shape[0] != constant_shape[1]) return std::nullopt;
      return IrOp{"const_imm", {{"size", constant_shape[0]}}};
    case Op::kIewmul:
      if (constant_shape.empty()) return std::nullopt;
      return IrOp{"const_one", {{"shape", constant_shape}}};
  }
  return std::nullopt;
}

std::optional<OpInstance> from_ir(const models::Graph& g, const models::Node& n) {
  const std::string_view name = n.op->name;
  const auto& a = n.attrs;
  auto shape = [&](std::size_t i) -> const Shape& { return g.type(n.inputs[i]).shape; };
  if (name == "ewadd" || name == "ewmul") {
    if (n.inputs.size() != 2 || shape(0) != shape(1)) return std::nullopt;
    return OpInstance{name == "ewadd" ? Op::kEwadd : Op::kEwmul, {}};
  }
  if (name == "scalar_mul") return OpInstance{Op::kSmul, {}};
  if (name == "relu") return OpInstance{Op::kRelu, {}};
  if (name == "matmul") {
    if (a.i("trans_a") || a.i("trans_b") || a.s("activation") != "none") return std::nullopt;
    if (shape(0).size() != 2 || shape(1).size() != 2) return std::nullopt;
    return OpInstance{Op::kMatmul, {}};
  }
  if (name == "transpose") {
    if (shape(0).size() != 2 || a.i("shuffle") != 1) return std::nullopt;
    const auto& perm = a.ints("perm");
    if (!perm.empty() && perm != Ints{1, 0}) return std::nullopt;
    return OpInstance{Op::kTranspose, {}};
  }
  if (name == "conv2d") {
    if (n.inputs.size() != 2 || a.ints("dilations") != Ints{1, 1}) return std::nullopt;
    const auto& x = shape(0);
    const auto& w = shape(1);
    const auto& s = a.ints("strides");
    auto mode = pad_mode_of(a.ints("pads"), x[2], x[3], w[2], w[3], s[0], s[1]);
    if (!mode) return std::nullopt;
    const auto& act = a.s("activation");
    if (act != "none" && act != "relu") return std::nullopt;
    return OpInstance{Op::kConv2d, {s[0], s[1], *mode, act == "relu" ? kActiRelu : kActiNone}};
  }
  if (name == "avgpool2d" || name == "maxpool2d") {
    if (a.i("ceil_mode")) return std::nullopt;
    const auto& k = a.ints("kernel");
    const auto& s = a.ints("strides");
    const auto& x = shape(0);
    auto mode = pad_mode_of(a.ints("pads"), x[2], x[3], k[0], k[1], s[0], s[1]);
    if (!mode) return std::nullopt;
    if (name == "avgpool2d" && a.i("count_include_pad") == 0 && a.ints("pads") != Ints{0, 0, 0, 0})
      return std::nullopt;
    return OpInstance{name == "avgpool2d" ? Op::kPoolavg : Op::kPoolmax, {k[0], k[1], s[0], s[1], *mode}};
  }
  if (name == "concat") {
    if (n.inputs.size() != 2) return std::nullopt;
    auto axis = a.i("axis");
    if (axis < 0) axis += static_cast<std::int64_t>(shape(0).size());
    return OpInstance{Op::kConcat, {axis}};
  }
  if (name == "split") {
    if (n.outputs.size() != 2) return std::nullopt;
    auto axis = a.i("axis");
    if (axis < 0) axis += static_cast<std::int64_t>(shape(0).size());
    return OpInstance{Op::kSplit0, {axis}};
  }
  if (name == "enlarge") {
    const auto& k = a.ints("kernel");
    return OpInstance{Op::kEnlarge, {k[0], k[1]}};
  }
  if (name == "const_iconv" || name == "const_pool") {
    const auto& k = a.ints("kernel");
    return OpInstance{name == "const_iconv" ? Op::kIconv : Op::kCpool, {k[0], k[1]}};
  }
  if (name == "const_imm") return OpInstance{Op::kImatmul, {}};
  if (name == "const_one") return OpInstance{Op::kIewmul, {}};
  return std::nullopt;
}

bool rules_may_use(std::string_view ir_op, const models::Attrs& attrs) {
  return !(ir_op == "conv2d" && attrs.i("groups") != 1);
}

std::optional<std::int64_t> concat_boundary(std::int64_t id, std::int64_t axis, int depth,
                                            const SplitTraceProducers& producers) {
  if (depth <= 0) return std::nullopt;
  for (const SplitTraceStep& step : producers(id)) {
    if (!step.op || !step.op->split_axis) continue;
    const models::SplitAxisTrace trace = step.op->split_axis(step.inputs, step.output, *step.attrs, axis);
    if (trace.boundary) return trace.boundary;
    for (const auto& [input, input_axis] : trace.carried)
      if (auto p = concat_boundary(step.children[static_cast<std::size_t>(input)], input_axis, depth - 1,
                                   producers))
        return p;
  }
  return std::nullopt;
}

std::optional<std::int64_t> concat_boundary(const models::Graph& g, models::ValueId v, std::int64_t axis,
                                            int depth) {
  return concat_boundary(v, axis, depth, [&g](std::int64_t id) {
    std::vector<SplitTraceStep> steps;
    const auto& val = g.value(static_cast<models::ValueId>(id));
    if (val.producer < 0) return steps;
    const models::Node& n = g.node(val.producer);
    SplitTraceStep& s = steps.emplace_back();
    s.op = n.op;
    s.attrs = &n.attrs;
    for (models::ValueId in : n.inputs) {
      s.inputs.push_back(g.type(in));
      s.children.push_back(in);
    }
    s.output = val.type;
    return steps;
  });
}

std::string instance_name(const OpInstance& inst) {
  std::string s(op_info(inst.op).name);
  if (!inst.params.empty()) s += fmt::format("({})", fmt::join(inst.params, ","));
  return s;
}

std::optional<models::Shape> constant_shape_in(Op parent, std::size_t arg, const models::Shape& sibling) {
  switch (parent) {
    case Op::kConv2d:
      if (arg != 1 || sibling.size() != 4) return std::nullopt;
      return models::Shape{sibling[1]};
    case Op::kMatmul:
      if (sibling.size() != 2) return std::nullopt;
      return arg == 1 ? models::Shape{sibling[1], sibling[1]} : models::Shape{sibling[0], sibling[0]};
    case Op::kEwmul:
    case Op::kEwadd:
      return sibling;
    default:
      return std::nullopt;
  }
}

}  // namespace strata::search::subst
