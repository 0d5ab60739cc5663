#include "models/train/grad_context.h"

#include <fmt/format.h>

namespace strata::models {

std::vector<ValueId> GradContext::emit_multi(std::string_view op, std::vector<ValueId> inputs, Attrs attrs) {
  return g.add_node(op, std::move(inputs), std::move(attrs),
                    fmt::format("{}/grad/{}{}", fwd.name, op, g.nodes().size()), ValueKind::kGradient);
}

ValueId GradContext::emit(std::string_view op, std::vector<ValueId> inputs, Attrs attrs) {
  auto outs = emit_multi(op, std::move(inputs), std::move(attrs));
  return outs.at(0);
}

ValueId GradContext::scalar(double v) {
  return g.add_constant(fmt::format("{}/grad/const{}", fwd.name, g.values().size()),
                        TensorType{{}, g.type(fwd.outputs[0]).dtype}, {v});
}

ValueId GradContext::sum_to(ValueId v, Shape target) {
  const Shape s = shape(v);
  if (s == target) return v;
  Ints axes;
  const std::size_t lead = s.size() - target.size();
  for (std::size_t i = 0; i < s.size(); ++i)
    if (i < lead || (target[i - lead] == 1 && s[i] != 1)) axes.push_back(static_cast<std::int64_t>(i));
  ValueId r = v;
  if (!axes.empty()) r = emit("reduce_sum", {v}, {{"axes", axes}, {"keepdims", std::int64_t{1}}});
  if (shape(r) != target) r = emit("reshape", {r}, {{"shape", target}});
  return r;
}

void GradContext::set_dx(int i, ValueId grad) {
  dx[static_cast<std::size_t>(i)] = sum_to(grad, shape(x(i)));
}

}  // namespace strata::models
