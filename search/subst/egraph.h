// An e-graph over the operator IR of models/ (docs/subst.md, "Equality saturation"), in the spirit of egg
// (Willsey et al. 2021): hash-consed e-nodes, e-classes joined by a union-find, and a deferred rebuild that
// restores congruence after a batch of unions. An e-node is an IR operator instance (operator, complete
// attributes, input types: a Signature) applied to child e-classes, or a source value of the input graph.
// Each e-class carries one analysis fact set: its tensor type (every e-node must produce it; shape inference
// rejects an e-node whose type does not fit) and whether it can be computed from weights and constants only
// (then it is folded before inference and costs nothing, as in graph_cost).
//
// Obligations: call rebuild() after merge() and before searching or reading classes; merge() requires both
// classes to have the same tensor type.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "models/ir/graph.h"
#include "search/subst/ir_bridge.h"

namespace strata::search::subst {

using ClassId = std::int32_t;
using SignatureId = std::int32_t;

// An operator with complete attributes on inputs of fixed types, or a source value (op == nullptr).
struct Signature {
  const models::OpDef* op = nullptr;
  models::Attrs attrs;
  std::vector<models::TensorType> inputs;
  std::vector<models::TensorType> outputs;  // from the operator's shape rule
  std::optional<OpInstance> rule_op;        // what it is in the rules' vocabulary (from_ir), if anything
  // Source values only.
  std::string source_name;
  models::ValueKind source_kind = models::ValueKind::kInput;
  std::shared_ptr<const std::vector<double>> source_data;
  std::string key;  // identity: "op|attrs|input types" or "source|name"
};

// A graph holding one node of the signature applied to fresh sources of its input types (for shape
// inference, from_ir and the cost model, which all read a graph).
models::Graph signature_graph(const Signature& sig);

struct ENode {
  SignatureId sig = 0;
  std::int32_t output = 0;  // which output of a multi-output operator (split) this e-node denotes
  std::vector<ClassId> children;
  friend bool operator==(const ENode&, const ENode&) = default;
  friend auto operator<=>(const ENode&, const ENode&) = default;
};

struct ENodeHash {
  std::size_t operator()(const ENode& n) const;
};

struct EClass {
  std::vector<ENode> nodes;                        // canonical and deduplicated after rebuild()
  std::vector<std::pair<ENode, ClassId>> parents;  // e-nodes using this class (possibly stale until rebuild)
  models::TensorType type;
  bool weight_only = false;  // has an e-node computed from parameters / constants only
};

class EGraph {
 public:
  // The signature of `op` with `attrs` (defaults filled in) on inputs of these types; nullopt when the
  // operator is unknown or its shape rule rejects the inputs or attributes.
  std::optional<SignatureId> op_signature(std::string_view op, const models::Attrs& attrs,
                                          std::span<const models::TensorType> inputs);
  SignatureId source_signature(const models::Value& source);
  const Signature& signature(SignatureId id) const { return sigs_[static_cast<std::size_t>(id)]; }

  // Adds an e-node (children need not be canonical) and returns its class; an existing equal e-node's class
  // when there is one (hash-consing). The child classes' types must be the signature's input types.
  ClassId add(ENode node);
  // Convenience: signature + add; nullopt when shape inference rejects the operator on these children.
  std::optional<ClassId> add_op(std::string_view op, const models::Attrs& attrs,
                                std::span<const ClassId> children, int output = 0);
  std::optional<ClassId> lookup(ENode node) const;  // the class of an existing e-node

  ClassId find(ClassId id) const;
  // Unions two classes; true when they were different. Congruence is restored by rebuild(). Throws
  // std::logic_error when their types differ (a rule producing a differently shaped tensor is a bug).
  bool merge(ClassId a, ClassId b);
  void rebuild();

  const EClass& eclass(ClassId id) const { return classes_[static_cast<std::size_t>(find(id))]; }
  // Canonical class ids in increasing order.
  std::vector<ClassId> class_ids() const;
  std::size_t num_classes() const { return num_classes_; }
  std::size_t class_capacity() const { return classes_.size(); }  // every class id is below it
  std::size_t num_nodes() const { return num_nodes_; }            // e-nodes (exact after rebuild)
  ENode canonical(ENode node) const;

 private:
  SignatureId intern(Signature sig);

  std::vector<Signature> sigs_;
  std::unordered_map<std::string, SignatureId> sig_index_;
  std::vector<ClassId> parent_;  // union-find
  std::vector<EClass> classes_;  // by id; only canonical ids hold nodes
  std::unordered_map<ENode, ClassId, ENodeHash> memo_;
  std::vector<ClassId> pending_;           // classes whose parents must be re-canonicalized
  std::vector<ClassId> analysis_pending_;  // classes that became weight-only
  std::size_t num_classes_ = 0;
  std::size_t num_nodes_ = 0;
};

// The e-graph of a models::Graph (dead nodes removed): one class per value; roots are the graph outputs in
// order.
struct GraphEGraph {
  EGraph egraph;
  std::vector<ClassId> roots;
  std::vector<models::ValueId> sources;  // source values of the graph, in order, and their classes
  std::vector<ClassId> source_classes;
  std::vector<std::pair<ENode, std::string>>
      node_names;  // e-node of each input node's first output -> its name
};
GraphEGraph egraph_from_graph(const models::Graph& g);

}  // namespace strata::search::subst
