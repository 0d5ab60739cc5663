#include "search/subst/ir_bridge.h"

#include <fmt/format.h>

namespace strata::search::subst {

std::optional<IrOp> to_ir(const OpInstance& inst, std::span<const models::Shape> in, std::int64_t split_point,
                          const models::Shape& constant_shape) {
  const OpInfo& info = op_info(inst.op);
  const models::RuleInstance rule{.params = inst.params,
                                  .inputs = in,
                                  .split_point = split_point,
                                  .sizing = constant_shape.empty() ? nullptr : &constant_shape};
  auto attrs = info.def->rule.to_attrs(rule);
  if (!attrs) return std::nullopt;
  return IrOp{info.def, std::move(*attrs), info.ir_output};
}

models::TryResult<IrApplication> apply_ir(const IrOp& ir, std::span<const models::Shape> input_shapes,
                                          std::string_view where) {
  IrApplication a;
  a.def = ir.def;
  auto attrs = models::try_complete_attrs(*a.def, ir.attrs, where);
  if (!attrs) return models::TryResult<IrApplication>::failure(attrs.diagnostic());
  a.attrs = std::move(attrs).value();
  a.inputs.reserve(input_shapes.size());
  for (const auto& s : input_shapes) a.inputs.push_back({s, models::DType::kF32});
  auto out = models::try_infer_types(*a.def, a.inputs, a.attrs, where);
  if (!out) return models::TryResult<IrApplication>::failure(out.diagnostic());
  a.outputs = std::move(out).value();
  return a;
}

std::optional<OpInstance> from_ir(const models::Graph& g, const models::Node& n) {
  if (!n.op->rule.from_node) return std::nullopt;
  const auto op = find_op(*n.op);
  if (!op) return std::nullopt;
  // Called for every value the optimizers look at: the input types are copied into a per-thread buffer whose
  // shapes keep their capacity, so a call allocates nothing once warm.
  thread_local std::vector<models::TensorType> in;
  in.resize(n.inputs.size());
  for (std::size_t i = 0; i < n.inputs.size(); ++i) in[i] = g.type(n.inputs[i]);
  auto params = n.op->rule.from_node(in, n.attrs, n.outputs.size());
  if (!params) return std::nullopt;
  return OpInstance{*op, std::move(*params)};
}

bool rules_may_use(const models::OpDef& def, const models::Attrs& attrs) {
  return !def.rule.optimizers_may_use || def.rule.optimizers_may_use(attrs);
}

std::optional<models::Shape> operand_shape(Op parent, std::size_t arg, const models::Shape* other,
                                           const models::Shape* wanted) {
  const auto fn = op_info(parent).def->rule.operand_shape;
  if (!fn) return std::nullopt;
  return fn(arg, other, wanted);
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
  return operand_shape(parent, arg, &sibling, nullptr);
}

}  // namespace strata::search::subst
