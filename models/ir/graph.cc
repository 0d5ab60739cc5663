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

TryResult<Attrs> try_complete_attrs(const OpDef& def, Attrs attrs, std::string_view where) {
  for (const auto& [k, v] : attrs.items()) {
    const AttrSpec* spec = nullptr;
    for (const auto& s : def.attrs)
      if (s.name == k) spec = &s;
    if (!spec) {
      std::string known;
      for (const auto& s : def.attrs) known += (known.empty() ? "" : ", ") + std::string(s.name);
      return TryResult<Attrs>::failure(fmt::format("{}: operator '{}' has no attribute '{}' (attributes: {})",
                                                   where, def.name, k, known.empty() ? "none" : known));
    }
    if (kind_of(v) != spec->kind) {
      // Integers are accepted where floats are expected.
      if (spec->kind == AttrKind::kFloat && kind_of(v) == AttrKind::kInt) {
        attrs.set(k, static_cast<double>(std::get<std::int64_t>(v)));
        continue;
      }
      return TryResult<Attrs>::failure(fmt::format("{}: attribute '{}' of '{}' must be {}, got {}", where, k,
                                                   def.name, attr_kind_name(spec->kind),
                                                   attr_kind_name(kind_of(v))));
    }
  }
  for (const auto& s : def.attrs) {
    if (attrs.has(s.name)) continue;
    if (!s.default_value)
      return TryResult<Attrs>::failure(
          fmt::format("{}: operator '{}' requires attribute '{}' ({})", where, def.name, s.name, s.doc));
    attrs.set(s.name, *s.default_value);
  }
  return attrs;
}

Attrs complete_attrs(const OpDef& def, Attrs attrs, std::string_view where) {
  auto r = try_complete_attrs(def, std::move(attrs), where);
  if (!r) throw GraphError(r.diagnostic());
  return std::move(r).value();
}

TryResult<std::vector<TensorType>> try_infer_types(const OpDef& def, std::span<const TensorType> inputs,
                                                   const Attrs& attrs, std::string_view where) {
  // Shape rules report a rejection by throwing ShapeError (models/ops/common.h shape_fail), and an output too
  // large for int64 elements throws ShapeOverflow; this is the single place either becomes a diagnostic, so
  // that search loops trying many candidate nodes (through Graph::try_add_node or directly) need no try/catch
  // of their own.
  std::string rejected;
  try {
    auto out = def.shape(inputs, attrs);
    for (const auto& t : out) (void)t.numel();  // every output's size fits in int64
    return out;
  } catch (const ShapeError& e) {
    rejected = e.what();
  } catch (const ShapeOverflow& e) {
    rejected = e.what();
  }
  std::string types;
  for (const auto& t : inputs) types += (types.empty() ? "" : ", ") + type_str(t);
  return TryResult<std::vector<TensorType>>::failure(
      fmt::format("{}: {} (inputs: {}; attributes: {})", where, rejected, types, attrs.str()));
}

std::string Graph::unique_name(std::string base) const {
  return base + std::to_string(nodes_.size());
}

std::optional<std::string> Graph::check_node(std::string_view op, std::vector<ValueId> inputs, Attrs attrs,
                                             std::string name, CheckedNode& c) const {
  const auto* def = OpRegistry::instance().find(op);
  if (!def)
    return fmt::format("node '{}': unknown operator '{}' (known: {})", name, op,
                       OpRegistry::instance().names());
  if (name.empty()) name = unique_name(std::string(op));
  const std::string where = fmt::format("node '{}' ({})", name, op);
  const int n = static_cast<int>(inputs.size());
  if (n < def->min_inputs || (def->max_inputs >= 0 && n > def->max_inputs)) {
    const std::string want = def->max_inputs < 0 ? fmt::format("at least {}", def->min_inputs)
                             : def->min_inputs == def->max_inputs
                                 ? std::to_string(def->min_inputs)
                                 : fmt::format("{} to {}", def->min_inputs, def->max_inputs);
    return fmt::format("{}: {} inputs given, expected {}", where, n, want);
  }
  std::vector<TensorType> in_types;
  in_types.reserve(inputs.size());
  for (auto v : inputs) {
    if (v < 0 || idx(v) >= values_.size())
      return fmt::format("{}: input value id {} does not exist", where, v);
    in_types.push_back(values_[idx(v)].type);
  }
  auto completed = try_complete_attrs(*def, std::move(attrs), where);
  if (!completed) return completed.diagnostic();
  c.node.attrs = std::move(completed).value();
  auto out_types = try_infer_types(*def, in_types, c.node.attrs, where);
  if (!out_types) return out_types.diagnostic();
  c.output_types = std::move(out_types).value();
  c.node.op = def;
  c.node.name = std::move(name);
  c.node.inputs = std::move(inputs);
  return std::nullopt;
}

std::vector<ValueId> Graph::insert(CheckedNode&& c, ValueKind output_kind) {
  const auto id = static_cast<NodeId>(nodes_.size());
  nodes_.push_back(std::move(c.node));
  Node& node = nodes_.back();
  auto& types = c.output_types;
  for (std::size_t i = 0; i < types.size(); ++i) {
    Value v;
    v.name = types.size() == 1 ? node.name : fmt::format("{}:{}", node.name, i);
    v.type = std::move(types[i]);
    v.kind = output_kind;
    v.producer = id;
    v.producer_output = static_cast<int>(i);
    values_.push_back(std::move(v));
    node.outputs.push_back(static_cast<ValueId>(values_.size() - 1));
  }
  return node.outputs;
}

TryResult<std::vector<ValueId>> Graph::try_add_node(std::string_view op, std::vector<ValueId> inputs,
                                                    Attrs attrs, std::string name, ValueKind output_kind) {
  CheckedNode c;
  if (auto rejected = check_node(op, std::move(inputs), std::move(attrs), std::move(name), c))
    return TryResult<std::vector<ValueId>>::failure(std::move(*rejected));
  return insert(std::move(c), output_kind);
}

TryResult<ValueId> Graph::try_add(std::string_view op, std::vector<ValueId> inputs, Attrs attrs,
                                  std::string name) {
  CheckedNode c;
  if (auto rejected = check_node(op, std::move(inputs), std::move(attrs), std::move(name), c))
    return TryResult<ValueId>::failure(std::move(*rejected));
  if (const auto n = c.output_types.size(); n != 1)
    return TryResult<ValueId>::failure(fmt::format("operator '{}' has {} outputs, not 1", op, n));
  return insert(std::move(c), ValueKind::kActivation)[0];
}

std::vector<ValueId> Graph::add_node(std::string_view op, std::vector<ValueId> inputs, Attrs attrs,
                                     std::string name, ValueKind output_kind) {
  auto r = try_add_node(op, std::move(inputs), std::move(attrs), std::move(name), output_kind);
  if (!r) throw GraphError(r.diagnostic());
  return std::move(r).value();
}

ValueId Graph::add(std::string_view op, std::vector<ValueId> inputs, Attrs attrs, std::string name) {
  auto r = try_add(op, std::move(inputs), std::move(attrs), std::move(name));
  if (!r) throw GraphError(r.diagnostic());
  return r.value();
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
