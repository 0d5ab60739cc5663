#include <algorithm>

#include <fmt/format.h>

#include "models/ir/op_def.h"

namespace strata::models {

std::string_view op_kind_name(OpKind k) {
  switch (k) {
    case OpKind::kContraction:
      return "contraction";
    case OpKind::kElementwise:
      return "elementwise";
    case OpKind::kReduction:
      return "reduction";
    case OpKind::kDataMovement:
      return "data-movement";
    case OpKind::kView:
      return "view";
    case OpKind::kConstant:
      return "constant";
    case OpKind::kOptimizer:
      return "optimizer";
  }
  return "?";
}

const OpRegistry& OpRegistry::instance() {
  static const OpRegistry registry = [] {
    OpRegistry r;
    ops::register_elementwise_ops(r);
    ops::register_contraction_ops(r);
    ops::register_attention_ops(r);
    ops::register_movement_ops(r);
    ops::register_pooling_ops(r);
    ops::register_normalization_ops(r);
    ops::register_reduction_ops(r);
    ops::register_embedding_ops(r);
    ops::register_constant_ops(r);
    ops::register_optimizer_ops(r);
    return r;
  }();
  return registry;
}

void OpRegistry::add(OpDef def) {
  if (find(def.name)) throw std::logic_error(fmt::format("operator '{}' declared twice", def.name));
  if (!def.shape || !def.flops || !def.kernel.real || !def.kernel.modp)
    throw std::logic_error(fmt::format("operator '{}' lacks a shape rule, FLOP count or kernel", def.name));
  ops_.push_back(std::move(def));
}

const OpDef* OpRegistry::find(std::string_view name) const {
  auto it = std::find_if(ops_.begin(), ops_.end(), [&](const OpDef& d) { return d.name == name; });
  return it == ops_.end() ? nullptr : &*it;
}

const OpDef& OpRegistry::get(std::string_view name) const {
  if (const auto* d = find(name)) return *d;
  throw std::invalid_argument(fmt::format("unknown operator '{}' (known: {})", name, names()));
}

std::string OpRegistry::names() const {
  std::string s;
  for (const auto& d : ops_) {
    if (!s.empty()) s += ", ";
    s += d.name;
  }
  return s;
}

}  // namespace strata::models
