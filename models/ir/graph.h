// A computation graph: a DAG of operator nodes over typed tensor values. Nodes are kept in a topological
// order (a node may only consume values that already exist), which is also the execution and memory
// order the executor and the single-device simulation use.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "models/ir/attrs.h"
#include "models/ir/op_def.h"
#include "models/ir/tensor_type.h"

namespace strata::models {

using ValueId = std::int32_t;
using NodeId = std::int32_t;
inline constexpr ValueId kNoValue = -1;

enum class ValueKind : std::uint8_t {
  kInput,       // fed per step (activations in, labels, seeded output gradients)
  kParam,       // trainable weight
  kConstant,    // fixed data (literal, or a non-trainable buffer such as batchnorm running statistics)
  kActivation,  // produced by a forward node
  kGradient,    // produced by a backward node (grad_of names the parameter for parameter gradients)
  kOptState,    // optimizer state (Adam moments), persistent across steps
};
std::string_view value_kind_name(ValueKind k);

struct Value {
  std::string name;
  TensorType type;
  ValueKind kind = ValueKind::kActivation;
  NodeId producer = -1;  // -1 for inputs, params, constants, optimizer state
  int producer_output = 0;
  ValueId grad_of = kNoValue;  // for gradients of parameters: the parameter
  // Literal data (ONNX initializers, scalar constants); row-major, as doubles. Empty: none.
  std::shared_ptr<const std::vector<double>> data;
};

struct Node {
  const OpDef* op = nullptr;
  std::string name;
  std::vector<ValueId> inputs;
  std::vector<ValueId> outputs;
  Attrs attrs;
};

// Thrown for malformed graphs (bad operator use, shape mismatch); the message names the node and operator.
class GraphError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// The outcome of a try_ operation (Graph::try_add_node, try_complete_attrs): the result, or a diagnostic that
// names the node, the operator and what was rejected -- the text the throwing form puts in its GraphError.
// Search loops (search/subst) build many candidate nodes and drop the rejected ones; this lets them do so
// without exceptions as control flow.
template <class T>
class [[nodiscard]] TryResult {
 public:
  // Implicit on success, so `return value;` works in a function returning TryResult<T>.
  TryResult(const T& value) : state_(std::in_place_index<0>, value) {}
  TryResult(T&& value) : state_(std::in_place_index<0>, std::move(value)) {}
  static TryResult failure(std::string diagnostic) {
    return TryResult(std::in_place_index<1>, std::move(diagnostic));
  }

  bool ok() const { return state_.index() == 0; }
  explicit operator bool() const { return ok(); }
  // Only when ok().
  const T& value() const& { return std::get<0>(state_); }
  T&& value() && { return std::get<0>(std::move(state_)); }
  // Only when !ok().
  const std::string& diagnostic() const { return std::get<1>(state_); }

 private:
  template <std::size_t I, class U>
  TryResult(std::in_place_index_t<I> i, U&& u) : state_(i, std::forward<U>(u)) {}
  std::variant<T, std::string> state_;
};

class Graph {
 public:
  explicit Graph(std::string name = "graph") : name_(std::move(name)) {}

  const std::string& name() const { return name_; }
  void set_name(std::string n) { name_ = std::move(n); }

  ValueId add_input(std::string name, TensorType type);
  ValueId add_param(std::string name, TensorType type, std::shared_ptr<const std::vector<double>> data = {});
  ValueId add_constant(std::string name, TensorType type, std::vector<double> data);
  // A value of any source kind (input/param/constant/optimizer state) without producer.
  ValueId add_source(std::string name, TensorType type, ValueKind kind,
                     std::shared_ptr<const std::vector<double>> data = {});

  // Validates arity, inputs and attributes (unknown names, wrong kinds, missing required ones; defaults
  // filled in), runs the shape rule and creates the outputs. `name` empty: "<op><index>". A rejected node
  // leaves the graph unchanged and gives a diagnostic naming the node, the operator and the reason (for a
  // shape rule's rejection also the input types and attributes). Shape rules (models/ops) report a rejection
  // by throwing ShapeError; try_infer_types (below) turns it into the diagnostic, so callers need no
  // try/catch.
  TryResult<std::vector<ValueId>> try_add_node(std::string_view op, std::vector<ValueId> inputs,
                                               Attrs attrs = {}, std::string name = {},
                                               ValueKind output_kind = ValueKind::kActivation);
  // try_add_node for an operator with one output (a diagnostic when it has another count).
  TryResult<ValueId> try_add(std::string_view op, std::vector<ValueId> inputs, Attrs attrs = {},
                             std::string name = {});
  // The same, throwing GraphError with the diagnostic as its message: for building graphs that must be valid
  // (model zoo, importers, copies of existing graphs), where a rejection is an error to report.
  std::vector<ValueId> add_node(std::string_view op, std::vector<ValueId> inputs, Attrs attrs = {},
                                std::string name = {}, ValueKind output_kind = ValueKind::kActivation);
  ValueId add(std::string_view op, std::vector<ValueId> inputs, Attrs attrs = {}, std::string name = {});

  void mark_output(ValueId v);
  void set_value_name(ValueId v, std::string name) { values_[idx(v)].name = std::move(name); }
  void set_grad_of(ValueId grad, ValueId param) { values_[idx(grad)].grad_of = param; }
  void set_value_kind(ValueId v, ValueKind k) { values_[idx(v)].kind = k; }

  std::span<const Value> values() const { return values_; }
  std::span<const Node> nodes() const { return nodes_; }
  const Value& value(ValueId v) const { return values_[idx(v)]; }
  const Node& node(NodeId n) const { return nodes_[idx(n)]; }
  const TensorType& type(ValueId v) const { return values_[idx(v)].type; }
  std::span<const ValueId> outputs() const { return outputs_; }
  // Values of a kind, in creation order.
  std::vector<ValueId> values_of(ValueKind k) const;
  ValueId find_value(std::string_view name) const;  // kNoValue when absent

  // Totals over all nodes / trainable parameters (source values of kind kParam; updated copies excluded).
  double total_flops() const;
  double param_count() const;
  double param_bytes() const;

 private:
  static std::size_t idx(std::int32_t i) { return static_cast<std::size_t>(i); }
  std::string unique_name(std::string base) const;

  // A node that passed every check of try_add_node, not yet in the graph (its outputs empty).
  struct CheckedNode {
    Node node;
    std::vector<TensorType> output_types;
  };
  // Fills `c` and returns nullopt, or returns the diagnostic (filled in place rather than returned in a
  // TryResult: one less move of the node on the path every graph rebuild of the search takes).
  std::optional<std::string> check_node(std::string_view op, std::vector<ValueId> inputs, Attrs attrs,
                                        std::string name, CheckedNode& c) const;
  std::vector<ValueId> insert(CheckedNode&& c, ValueKind output_kind);

  std::string name_;
  std::vector<Value> values_;
  std::vector<Node> nodes_;
  std::vector<ValueId> outputs_;
};

// Attribute validation shared by add_node and the ONNX importer: fills defaults, rejects unknown names and
// wrong kinds. The diagnostic starts with `where`; complete_attrs throws it as a GraphError.
TryResult<Attrs> try_complete_attrs(const OpDef& def, Attrs attrs, std::string_view where);
Attrs complete_attrs(const OpDef& def, Attrs attrs, std::string_view where);

// The output types of operator `def` on inputs of these types (attributes already completed), or the
// diagnostic "<where>: <reason> (inputs: <types>; attributes: <attrs>)" when its shape rule rejects them or
// an output has more than 2^63 - 1 elements. The one place a shape rule's ShapeError (and ShapeOverflow)
// becomes a value; Graph::try_add_node uses it, and so can code that needs types without a graph.
TryResult<std::vector<TensorType>> try_infer_types(const OpDef& def, std::span<const TensorType> inputs,
                                                   const Attrs& attrs, std::string_view where);

// Input and output types of a node, for shape/cost functions.
std::vector<TensorType> input_types(const Graph& g, const Node& n);
std::vector<TensorType> output_types(const Graph& g, const Node& n);
double node_flops(const Graph& g, const Node& n);
double node_bytes(const Graph& g, const Node& n);

}  // namespace strata::models
