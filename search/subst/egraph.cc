#include "search/subst/egraph.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "util/hash.h"

namespace strata::search::subst {
namespace {

bool weight_kind(models::ValueKind k) {
  return k == models::ValueKind::kParam || k == models::ValueKind::kConstant;
}

// signature_graph, or the diagnostic of Graph::try_add_node when the operator rejects these inputs.
models::TryResult<models::Graph> try_signature_graph(const Signature& sig) {
  models::Graph g("signature");
  if (!sig.op) {
    g.add_source(sig.source_name, sig.outputs.at(0), sig.source_kind, sig.source_data);
    return g;
  }
  std::vector<models::ValueId> ins;
  for (std::size_t i = 0; i < sig.inputs.size(); ++i)
    ins.push_back(g.add_input(fmt::format("in{}", i), sig.inputs[i]));
  const auto outs = g.try_add_node(sig.op->name, std::move(ins), sig.attrs, "op");
  if (!outs) return models::TryResult<models::Graph>::failure(outs.diagnostic());
  for (auto v : outs.value()) g.mark_output(v);
  return g;
}

}  // namespace

std::size_t ENodeHash::operator()(const ENode& n) const {
  std::uint64_t h = util::hash_combine(static_cast<std::uint64_t>(n.sig) * util::kFnvPrime,
                                       static_cast<std::uint64_t>(n.output));
  for (ClassId c : n.children) h = util::hash_combine(h, static_cast<std::uint64_t>(c));
  return h;
}

models::Graph signature_graph(const Signature& sig) {
  auto g = try_signature_graph(sig);
  if (!g) throw models::GraphError(g.diagnostic());
  return std::move(g).value();
}

SignatureId EGraph::intern(Signature sig) {
  auto [it, inserted] = sig_index_.emplace(sig.key, static_cast<SignatureId>(sigs_.size()));
  if (inserted) sigs_.push_back(std::move(sig));
  return it->second;
}

std::optional<SignatureId> EGraph::op_signature(std::string_view op, const models::Attrs& attrs,
                                                std::span<const models::TensorType> inputs) {
  const auto* def = models::OpRegistry::instance().find(op);
  if (!def) return std::nullopt;
  Signature sig;
  sig.op = def;
  auto completed = models::try_complete_attrs(*def, attrs, "e-node");
  if (!completed) return std::nullopt;
  sig.attrs = std::move(completed).value();
  sig.inputs.assign(inputs.begin(), inputs.end());
  sig.key = fmt::format("{}|{}|", def->name, sig.attrs.str());
  for (const auto& t : inputs) sig.key += models::type_str(t) + ";";
  if (auto it = sig_index_.find(sig.key); it != sig_index_.end()) return it->second;
  const auto probe = try_signature_graph(sig);
  if (!probe) return std::nullopt;  // arity or shapes rejected
  const models::Graph& g = probe.value();
  sig.outputs.clear();
  for (auto v : g.outputs()) sig.outputs.push_back(g.type(v));
  sig.rule_op = from_ir(g, g.node(0));
  return intern(std::move(sig));
}

SignatureId EGraph::source_signature(const models::Value& source) {
  Signature sig;
  sig.source_name = source.name;
  sig.source_kind = source.kind;
  sig.source_data = source.data;
  sig.outputs = {source.type};
  sig.key = "source|" + source.name;
  return intern(std::move(sig));
}

ClassId EGraph::find(ClassId id) const {
  while (parent_[static_cast<std::size_t>(id)] != id) id = parent_[static_cast<std::size_t>(id)];
  return id;
}

ENode EGraph::canonical(ENode node) const {
  for (auto& c : node.children) c = find(c);
  return node;
}

std::optional<ClassId> EGraph::lookup(ENode node) const {
  auto it = memo_.find(canonical(std::move(node)));
  if (it == memo_.end()) return std::nullopt;
  return find(it->second);
}

ClassId EGraph::add(ENode node) {
  node = canonical(std::move(node));
  if (auto it = memo_.find(node); it != memo_.end()) return find(it->second);
  const Signature& sig = signature(node.sig);
  if (static_cast<std::size_t>(node.output) >= sig.outputs.size() ||
      node.children.size() != sig.inputs.size())
    throw std::logic_error(fmt::format("e-graph: e-node of '{}' has the wrong arity", sig.key));
  bool weight_only = sig.op ? true : weight_kind(sig.source_kind);
  for (std::size_t i = 0; i < node.children.size(); ++i) {
    const EClass& child = eclass(node.children[i]);
    if (child.type != sig.inputs[i])
      throw std::logic_error(
          fmt::format("e-graph: child {} of '{}' has type {}", i, sig.key, models::type_str(child.type)));
    weight_only = weight_only && child.weight_only;
  }
  const auto id = static_cast<ClassId>(classes_.size());
  parent_.push_back(id);
  EClass cls;
  cls.nodes.push_back(node);
  cls.type = sig.outputs[static_cast<std::size_t>(node.output)];
  cls.weight_only = weight_only;
  classes_.push_back(std::move(cls));
  for (ClassId c : node.children) classes_[static_cast<std::size_t>(c)].parents.emplace_back(node, id);
  memo_.emplace(std::move(node), id);
  ++num_classes_;
  ++num_nodes_;
  return id;
}

std::optional<ClassId> EGraph::add_op(std::string_view op, const models::Attrs& attrs,
                                      std::span<const ClassId> children, int output) {
  std::vector<models::TensorType> types;
  for (ClassId c : children) types.push_back(eclass(c).type);
  auto sig = op_signature(op, attrs, types);
  if (!sig || output < 0 || static_cast<std::size_t>(output) >= signature(*sig).outputs.size())
    return std::nullopt;
  return add(ENode{*sig, output, {children.begin(), children.end()}});
}

bool EGraph::merge(ClassId a, ClassId b) {
  a = find(a);
  b = find(b);
  if (a == b) return false;
  auto& ca = classes_[static_cast<std::size_t>(a)];
  auto& cb = classes_[static_cast<std::size_t>(b)];
  if (ca.type != cb.type)
    throw std::logic_error(fmt::format("e-graph: merging classes of types {} and {}",
                                       models::type_str(ca.type), models::type_str(cb.type)));
  // Union by size; the smaller class's nodes and parents move to the larger.
  if (ca.nodes.size() + ca.parents.size() < cb.nodes.size() + cb.parents.size()) std::swap(a, b);
  auto& root = classes_[static_cast<std::size_t>(a)];
  auto& gone = classes_[static_cast<std::size_t>(b)];
  parent_[static_cast<std::size_t>(b)] = a;
  root.nodes.insert(root.nodes.end(), gone.nodes.begin(), gone.nodes.end());
  root.parents.insert(root.parents.end(), gone.parents.begin(), gone.parents.end());
  if (root.weight_only != gone.weight_only) {
    // The side that was not weight-only gains that fact; its parents may gain it too.
    root.weight_only = true;
    analysis_pending_.push_back(a);
  }
  gone = EClass{};
  --num_classes_;
  pending_.push_back(a);
  return true;
}

void EGraph::rebuild() {
  while (!pending_.empty() || !analysis_pending_.empty()) {
    std::vector<ClassId> todo;
    todo.swap(pending_);
    for (auto& c : todo) c = find(c);
    std::sort(todo.begin(), todo.end());
    todo.erase(std::unique(todo.begin(), todo.end()), todo.end());
    for (ClassId c : todo) {
      // Re-canonicalize the parents: congruent parents (equal after canonicalization) are merged.
      auto parents = std::move(classes_[static_cast<std::size_t>(find(c))].parents);
      for (auto& [node, cls] : parents) {
        memo_.erase(node);
        node = canonical(std::move(node));
      }
      std::sort(parents.begin(), parents.end());
      std::vector<std::pair<ENode, ClassId>> kept;
      for (auto& [node, cls] : parents) {
        auto [it, inserted] = memo_.emplace(node, find(cls));
        if (!inserted) {
          merge(it->second, cls);
          it->second = find(it->second);
        }
        if (kept.empty() || kept.back().first != node) kept.emplace_back(node, find(cls));
      }
      auto& target = classes_[static_cast<std::size_t>(find(c))].parents;
      target.insert(target.end(), kept.begin(), kept.end());
    }
    std::vector<ClassId> changed;
    changed.swap(analysis_pending_);
    for (ClassId c : changed) {
      for (const auto& [node, cls] : classes_[static_cast<std::size_t>(find(c))].parents) {
        auto& pc = classes_[static_cast<std::size_t>(find(cls))];
        if (pc.weight_only || !signature(node.sig).op) continue;
        const bool all = std::all_of(node.children.begin(), node.children.end(),
                                     [&](ClassId k) { return eclass(k).weight_only; });
        if (all) {
          pc.weight_only = true;
          analysis_pending_.push_back(find(cls));
        }
      }
    }
  }
  // Canonical, deduplicated node lists; the memo keeps canonical e-nodes only, pointing at canonical classes
  // (an e-node listed under several children leaves a stale key when the first of them is repaired).
  num_nodes_ = 0;
  for (ClassId id = 0; id < static_cast<ClassId>(classes_.size()); ++id) {
    if (find(id) != id) continue;
    auto& nodes = classes_[static_cast<std::size_t>(id)].nodes;
    for (auto& n : nodes) n = canonical(std::move(n));
    std::sort(nodes.begin(), nodes.end());
    nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
    num_nodes_ += nodes.size();
  }
  for (auto it = memo_.begin(); it != memo_.end();) {
    if (canonical(it->first) != it->first) {
      it = memo_.erase(it);
    } else {
      it->second = find(it->second);
      ++it;
    }
  }
}

std::vector<ClassId> EGraph::class_ids() const {
  std::vector<ClassId> ids;
  ids.reserve(num_classes_);
  for (ClassId id = 0; id < static_cast<ClassId>(classes_.size()); ++id)
    if (parent_[static_cast<std::size_t>(id)] == id) ids.push_back(id);
  return ids;
}

GraphEGraph egraph_from_graph(const models::Graph& g) {
  GraphEGraph out;
  auto& eg = out.egraph;
  std::vector<ClassId> cls(g.values().size(), -1);
  for (models::ValueId v = 0; v < static_cast<models::ValueId>(g.values().size()); ++v) {
    const auto& val = g.value(v);
    if (val.producer >= 0) continue;
    cls[static_cast<std::size_t>(v)] = eg.add(ENode{eg.source_signature(val), 0, {}});
    out.sources.push_back(v);
    out.source_classes.push_back(cls[static_cast<std::size_t>(v)]);
  }
  for (const models::Node& n : g.nodes()) {
    std::vector<models::TensorType> types;
    std::vector<ClassId> children;
    for (auto v : n.inputs) {
      types.push_back(g.type(v));
      children.push_back(cls[static_cast<std::size_t>(v)]);
    }
    auto sig = eg.op_signature(n.op->name, n.attrs, types);
    if (!sig)
      throw std::invalid_argument(
          fmt::format("e-graph: node '{}' ({}) is not well-formed", n.name, n.op->name));
    for (std::size_t k = 0; k < n.outputs.size(); ++k)
      cls[static_cast<std::size_t>(n.outputs[k])] =
          eg.add(ENode{*sig, static_cast<std::int32_t>(k), children});
    out.node_names.emplace_back(ENode{*sig, 0, children}, n.name);
  }
  for (auto v : g.outputs()) out.roots.push_back(cls[static_cast<std::size_t>(v)]);
  eg.rebuild();
  return out;
}

}  // namespace strata::search::subst
