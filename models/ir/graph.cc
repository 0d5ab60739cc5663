#include "models/ir/graph.h"

#include <fmt/format.h>

namespace strata::models {

std::string_view value_kind_name(ValueKind k) {
  switch (k) {
    case ValueKind::kInput:
      return "input";
    case ValueKind::kParam:
      return "param";
    case ValueKind::kConstant:
      return "constant";
    case ValueKind::kActivation:
      return "activation";
    case ValueKind::kGradient:
      return "gradient";
    case ValueKind::kOptState:
      return "optimizer-state";
  }
  return "?";
}

ValueId Graph::add_source(std::string name, TensorType type, ValueKind kind,
                          std::shared_ptr<const std::vector<double>> data) {
  for (auto d : type.shape)
    if (d < 0)
      throw GraphError(fmt::format("value '{}': negative dimension in {}", name, shape_str(type.shape)));
  std::int64_t elements = 0;
  try {
    elements = type.numel();
  } catch (const ShapeOverflow& e) {
    throw GraphError(fmt::format("value '{}': {}", name, e.what()));
  }
  if (data && static_cast<std::int64_t>(data->size()) != elements)
    throw GraphError(
        fmt::format("value '{}': {} data elements for shape {}", name, data->size(), shape_str(type.shape)));
  Value v;
  v.name = std::move(name);
  v.type = std::move(type);
  v.kind = kind;
  v.data = std::move(data);
  values_.push_back(std::move(v));
  return static_cast<ValueId>(values_.size() - 1);
}

ValueId Graph::add_input(std::string name, TensorType type) {
  return add_source(std::move(name), std::move(type), ValueKind::kInput);
}
ValueId Graph::add_param(std::string name, TensorType type, std::shared_ptr<const std::vector<double>> data) {
  return add_source(std::move(name), std::move(type), ValueKind::kParam, std::move(data));
}
ValueId Graph::add_constant(std::string name, TensorType type, std::vector<double> data) {
  return add_source(std::move(name), std::move(type), ValueKind::kConstant,
                    std::make_shared<const std::vector<double>>(std::move(data)));
}

Attrs complete_attrs(const OpDef& def, Attrs attrs, std::string_view where) {
  for (const auto& [k, v] : attrs.items()) {
    const AttrSpec* spec = nullptr;
    for (const auto& s : def.attrs)
      if (s.name == k) spec = &s;
    if (!spec) {
      std::string known;
      for (const auto& s : def.attrs) known += (known.empty() ? "" : ", ") + std::string(s.name);
      throw GraphError(fmt::format("{}: operator '{}' has no attribute '{}' (attributes: {})", where,
                                   def.name, k, known.empty() ? "none" : known));
    }
    if (kind_of(v) != spec->kind) {
      // Integers are accepted where floats are expected.
      if (spec->kind == AttrKind::kFloat && kind_of(v) == AttrKind::kInt) {
        attrs.set(k, static_cast<double>(std::get<std::int64_t>(v)));
        continue;
      }
      throw GraphError(fmt::format("{}: attribute '{}' of '{}' must be {}, got {}", where, k, def.name,
                                   attr_kind_name(spec->kind), attr_kind_name(kind_of(v))));
    }
  }
  for (const auto& s : def.attrs) {
    if (attrs.has(s.name)) continue;
    if (!s.default_value)
      throw GraphError(
          fmt::format("{}: operator '{}' requires attribute '{}' ({})", where, def.name, s.name, s.doc));
    attrs.set(s.name, *s.default_value);
  }
  return attrs;
}

std::string Graph::unique_name(std::string base) {
  return base + std::to_string(nodes_.size());
}

std::vector<ValueId> Graph::add_node(std::string_view op, std::vector<ValueId> inputs, Attrs attrs,
                                     std::string name, ValueKind output_kind) {
  const auto* def = OpRegistry::instance().find(op);
  if (!def)
    throw GraphError(fmt::format("node '{}': unknown operator '{}' (known: {})", name, op,
                                 OpRegistry::instance().names()));
  if (name.empty()) name = unique_name(std::string(op));
  const std::string where = fmt::format("node '{}' ({})", name, op);
  const int n = static_cast<int>(inputs.size());
  if (n < def->min_inputs || (def->max_inputs >= 0 && n > def->max_inputs)) {
    const std::string want = def->max_inputs < 0 ? fmt::format("at least {}", def->min_inputs)
                             : def->min_inputs == def->max_inputs
                                 ? std::to_string(def->min_inputs)
                                 : fmt::format("{} to {}", def->min_inputs, def->max_inputs);
    throw GraphError(fmt::format("{}: {} inputs given, expected {}", where, n, want));
  }
  std::vector<TensorType> in_types;
  for (auto v : inputs) {
    if (v < 0 || idx(v) >= values_.size())
      throw GraphError(fmt::format("{}: input value id {} does not exist", where, v));
    in_types.push_back(values_[idx(v)].type);
  }
  attrs = complete_attrs(*def, std::move(attrs), where);
  std::vector<TensorType> out_types;
  const auto shape_error = [&](const char* what) {
    std::string types;
    for (const auto& t : in_types) types += (types.empty() ? "" : ", ") + type_str(t);
    return GraphError(fmt::format("{}: {} (inputs: {}; attributes: {})", where, what, types, attrs.str()));
  };
  try {
    out_types = def->shape(in_types, attrs);
    for (const auto& t : out_types) (void)t.numel();  // every output's size fits in int64
  } catch (const ShapeError& e) {
    throw shape_error(e.what());
  } catch (const ShapeOverflow& e) {
    throw shape_error(e.what());
  }
  Node node;
  node.op = def;
  node.name = name;
  node.inputs = std::move(inputs);
  node.attrs = std::move(attrs);
  const auto id = static_cast<NodeId>(nodes_.size());
  for (std::size_t i = 0; i < out_types.size(); ++i) {
    Value v;
    v.name = out_types.size() == 1 ? name : fmt::format("{}:{}", name, i);
    v.type = std::move(out_types[i]);
    v.kind = output_kind;
    v.producer = id;
    v.producer_output = static_cast<int>(i);
    values_.push_back(std::move(v));
    node.outputs.push_back(static_cast<ValueId>(values_.size() - 1));
  }
  nodes_.push_back(std::move(node));
  return nodes_.back().outputs;
}

ValueId Graph::add(std::string_view op, std::vector<ValueId> inputs, Attrs attrs, std::string name) {
  auto outs = add_node(op, std::move(inputs), std::move(attrs), std::move(name));
  if (outs.size() != 1) throw GraphError(fmt::format("operator '{}' has {} outputs, not 1", op, outs.size()));
  return outs[0];
}

void Graph::mark_output(ValueId v) {
  outputs_.push_back(v);
}

std::vector<ValueId> Graph::values_of(ValueKind k) const {
  std::vector<ValueId> out;
  for (std::size_t i = 0; i < values_.size(); ++i)
    if (values_[i].kind == k) out.push_back(static_cast<ValueId>(i));
  return out;
}

ValueId Graph::find_value(std::string_view name) const {
  for (std::size_t i = 0; i < values_.size(); ++i)
    if (values_[i].name == name) return static_cast<ValueId>(i);
  return kNoValue;
}

std::vector<TensorType> input_types(const Graph& g, const Node& n) {
  std::vector<TensorType> t;
  for (auto v : n.inputs) t.push_back(g.type(v));
  return t;
}
std::vector<TensorType> output_types(const Graph& g, const Node& n) {
  std::vector<TensorType> t;
  for (auto v : n.outputs) t.push_back(g.type(v));
  return t;
}

double node_flops(const Graph& g, const Node& n) {
  return n.op->flops(input_types(g, n), output_types(g, n), n.attrs);
}

double node_bytes(const Graph& g, const Node& n) {
  const auto in = input_types(g, n), out = output_types(g, n);
  if (n.op->bytes) return n.op->bytes(in, out, n.attrs);
  double b = 0;
  for (const auto& t : in) b += t.bytes();
  for (const auto& t : out) b += t.bytes();
  return b;
}

double Graph::total_flops() const {
  double f = 0;
  for (const auto& n : nodes_) f += node_flops(*this, n);
  return f;
}

double Graph::param_count() const {
  double c = 0;
  for (const auto& v : values_)
    if (v.kind == ValueKind::kParam && v.producer < 0) c += static_cast<double>(v.type.numel());
  return c;
}

double Graph::param_bytes() const {
  double c = 0;
  for (const auto& v : values_)
    if (v.kind == ValueKind::kParam && v.producer < 0) c += v.type.bytes();
  return c;
}

}  // namespace strata::models
