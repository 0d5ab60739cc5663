#include "search/subst/xfers.h"

#include <algorithm>
#include <map>
#include <stdexcept>

#include <fmt/format.h>

namespace strata::search::subst {
namespace {

using models::Graph;
using models::Ints;
using models::Node;
using models::NodeId;
using models::ValueId;

// The graph a replacement is emitted into. Nodes are added through Graph::try_add_node; the first rejection
// is kept and every later add is skipped (returning kNoValue), so an emit function reads as straight-line
// code and its caller checks ok() once, with no exception as control flow.
class Emitter {
 public:
  explicit Emitter(Graph& g) : g_(g) {}

  ValueId add(std::string_view op, std::vector<ValueId> inputs, models::Attrs attrs, std::string name) {
    if (!ok()) return models::kNoValue;
    auto r = g_.try_add(op, std::move(inputs), std::move(attrs), std::move(name));
    if (!r) {
      diagnostic_ = r.diagnostic();
      return models::kNoValue;
    }
    return r.value();
  }
  // Empty after a rejection.
  std::vector<ValueId> add_node(std::string_view op, std::vector<ValueId> inputs, models::Attrs attrs,
                                std::string name) {
    if (!ok()) return {};
    auto r = g_.try_add_node(op, std::move(inputs), std::move(attrs), std::move(name));
    if (!r) {
      diagnostic_ = r.diagnostic();
      return {};
    }
    return std::move(r).value();
  }
  // A scalar or small constant of a valid type: cannot be rejected.
  ValueId add_constant(std::string name, models::TensorType type, std::vector<double> data) {
    return g_.add_constant(std::move(name), std::move(type), std::move(data));
  }
  // Only for values the emit function was given (in(v)) or got from an add while ok().
  const models::TensorType& type(ValueId v) const { return g_.type(v); }

  bool ok() const { return diagnostic_.empty(); }

 private:
  Graph& g_;
  std::string diagnostic_;
};

// Adds the replacement nodes to `out`; `in` maps a value of the original graph to `out`. Returns, for each
// value of the replaced nodes still needed, the value that takes its place (meaningful only while out.ok()).
// `g` is the graph the site was found in (the same content as when it was found; the object may differ).
using Emit = std::function<std::vector<std::pair<ValueId, ValueId>>(
    const Graph& g, Emitter& out, const std::function<ValueId(ValueId)>& in)>;

// g with `replaced` taken out and the nodes of `emit` in their place; nodes that no longer reach an output
// are dropped. nullopt when a value of a replaced node is still used but not provided, or shape inference
// rejects the replacement or a kept node on its new inputs.
std::optional<Graph> rewrite(const Graph& g, std::vector<NodeId> replaced, const Emit& emit) {
  std::sort(replaced.begin(), replaced.end());
  // The replacement goes after the first replaced node and after every value it reads (a dry run on
  // stand-ins finds them): a batchnorm's statistics may be computed between the conv and the batchnorm.
  NodeId at = replaced.front();
  std::vector<ValueId> reads;
  {
    Graph dry;
    Emitter dry_out(dry);
    emit(g, dry_out, [&](ValueId v) {
      at = std::max(at, g.value(v).producer + 1);
      reads.push_back(v);
      return dry.add_source(fmt::format("r{}", v), g.type(v), g.value(v).kind);
    });
    if (!dry_out.ok()) return std::nullopt;
  }
  std::vector<ValueId> map;
  Graph out = copy_sources(g, map);
  Emitter emitter(out);
  auto in = [&](ValueId v) { return map[static_cast<std::size_t>(v)]; };
  std::vector<std::pair<ValueId, ValueId>> provided;
  for (NodeId n = 0; n <= static_cast<NodeId>(g.nodes().size()); ++n) {
    if (n == at) {
      // A value the replacement reads that came from a replaced node has no copy: nothing to emit onto.
      for (ValueId v : reads)
        if (in(v) == models::kNoValue) return std::nullopt;
      provided = emit(g, emitter, in);
      if (!emitter.ok()) return std::nullopt;
      for (auto [old_v, new_v] : provided) map[static_cast<std::size_t>(old_v)] = new_v;
    }
    if (n == static_cast<NodeId>(g.nodes().size())) break;
    if (std::binary_search(replaced.begin(), replaced.end(), n)) continue;
    const Node& node = g.node(n);
    std::vector<ValueId> ins;
    for (ValueId v : node.inputs) {
      ins.push_back(in(v));
      if (ins.back() == models::kNoValue) return std::nullopt;
    }
    const auto kind = node.outputs.empty() ? models::ValueKind::kActivation : g.value(node.outputs[0]).kind;
    const auto outs = out.try_add_node(node.op->name, std::move(ins), node.attrs, node.name, kind);
    if (!outs) return std::nullopt;
    for (std::size_t k = 0; k < outs.value().size() && k < node.outputs.size(); ++k) {
      map[static_cast<std::size_t>(node.outputs[k])] = outs.value()[k];
      out.set_value_name(outs.value()[k], g.value(node.outputs[k]).name);
    }
  }
  for (ValueId v : g.outputs()) {
    const ValueId nv = in(v);
    if (nv == models::kNoValue) return std::nullopt;
    out.mark_output(nv);
    out.set_value_name(nv, g.value(v).name);  // results keep their names
  }
  return remove_dead_nodes(out);
}

// The predicted cost change of a replacement: its nodes costed alone on stand-ins for the values they read
// (weights and weight-only values as parameters, so weight transformations fold), minus the replaced nodes.
std::optional<double> delta_of(const Graph& g, const NodeCosts& costs, const models::CostModel& cost,
                               const std::vector<NodeId>& replaced, const Emit& emit) {
  Graph scratch;
  std::map<ValueId, ValueId> stand_in;
  auto in = [&](ValueId v) {
    auto [it, inserted] = stand_in.emplace(v, models::kNoValue);
    if (inserted) {
      const bool folded = costs.folded[static_cast<std::size_t>(v)] != 0;
      it->second = scratch.add_source(fmt::format("in{}", v), g.type(v),
                                      folded ? models::ValueKind::kParam : models::ValueKind::kInput);
    }
    return it->second;
  };
  Emitter out(scratch);
  emit(g, out, in);
  if (!out.ok()) return std::nullopt;
  double removed = 0;
  for (NodeId n : replaced) removed += costs.node[static_cast<std::size_t>(n)];
  return graph_cost(scratch, cost) - removed;
}

XferSite make_site(const Graph& g, const NodeCosts& costs, const models::CostModel& cost, std::string name,
                   std::vector<NodeId> replaced, Emit emit, bool& ok) {
  XferSite site;
  const auto d = delta_of(g, costs, cost, replaced, emit);
  ok = d.has_value();
  if (!ok) return site;
  site.name = std::move(name);
  site.nodes = replaced;
  site.delta = *d;
  site.apply = [replaced = std::move(replaced), emit = std::move(emit)](const Graph& graph) {
    return rewrite(graph, replaced, emit);
  };
  return site;
}

// The one node reading conv n's output, when n is a convolution without a fused activation whose output is
// not a graph output and has exactly one consumer: where an activation or normalization can fold into it.
std::optional<NodeId> sole_consumer_of_plain_conv(const Graph& g, const GraphUses& uses, NodeId n) {
  const Node& conv = g.node(n);
  if (conv.op->name != "conv2d" || conv.attrs.s("activation") != "none") return std::nullopt;
  const ValueId y = conv.outputs[0];
  const auto& cs = uses.consumers[static_cast<std::size_t>(y)];
  if (cs.size() != 1 || uses.is_output[static_cast<std::size_t>(y)]) return std::nullopt;
  return cs[0];
}

// ---- fuse_conv_relu ----
std::vector<XferSite> fuse_conv_relu(const Graph& g, const NodeCosts& costs, const models::CostModel& cost) {
  std::vector<XferSite> sites;
  const GraphUses uses(g);
  for (NodeId n = 0; n < static_cast<NodeId>(g.nodes().size()); ++n) {
    const auto next = sole_consumer_of_plain_conv(g, uses, n);
    if (!next || g.node(*next).op->name != "relu") continue;
    const NodeId relu = *next;
    const ValueId r = g.node(relu).outputs[0];
    Emit emit = [n, r](const Graph& src, Emitter& out, const std::function<ValueId(ValueId)>& in) {
      const Node& c = src.node(n);
      std::vector<ValueId> ins;
      for (ValueId v : c.inputs) ins.push_back(in(v));
      auto attrs = c.attrs;
      attrs.set("activation", std::string("relu"));
      const ValueId y2 = out.add("conv2d", std::move(ins), std::move(attrs), c.name + ".relu");
      return std::vector<std::pair<ValueId, ValueId>>{{r, y2}};
    };
    bool ok = false;
    auto site = make_site(g, costs, cost, "fuse_conv_relu", {n, relu}, std::move(emit), ok);
    if (ok) sites.push_back(std::move(site));
  }
  return sites;
}

// ---- fuse_conv_batchnorm ----
// Inference batch normalization after a convolution folds into its weight and bias (TASO's conv+batchnorm
// GraphXfer): with s = scale / sqrt(var + eps), w' = w * s (per output channel) and
// b' = (b - mean) * s + beta (b = 0 without a bias); all weight-only, so folded before inference.
std::vector<XferSite> fuse_conv_batchnorm(const Graph& g, const NodeCosts& costs,
                                          const models::CostModel& cost) {
  std::vector<XferSite> sites;
  const GraphUses uses(g);
  for (NodeId n = 0; n < static_cast<NodeId>(g.nodes().size()); ++n) {
    const auto next = sole_consumer_of_plain_conv(g, uses, n);
    if (!next) continue;
    const NodeId bn_id = *next;
    const Node& bn = g.node(bn_id);
    if (bn.op->name != "batchnorm" || bn.inputs[0] != g.node(n).outputs[0]) continue;
    const ValueId z = bn.outputs[0];
    Emit emit = [n, bn_id, z](const Graph& src, Emitter& out, const std::function<ValueId(ValueId)>& in) {
      const Node& c = src.node(n);
      const Node& b = src.node(bn_id);
      const auto w = in(c.inputs[1]);
      const models::Shape ws = out.type(w).shape;  // a copy: adding nodes reallocates
      const auto dtype = out.type(w).dtype;
      const auto eps =
          out.add_constant(b.name + ".eps", models::TensorType{{}, dtype}, {b.attrs.f("epsilon")});
      const auto scale = in(b.inputs[1]), beta = in(b.inputs[2]), mean = in(b.inputs[3]),
                 var = in(b.inputs[4]);
      const auto s = out.add("ewmul",
                             {scale, out.add("rsqrt", {out.add("ewadd", {var, eps}, {}, b.name + ".var_eps")},
                                             {}, b.name + ".rsqrt")},
                             {}, b.name + ".fold_scale");
      const auto s4 = out.add("reshape", {s}, {{"shape", Ints{ws[0], 1, 1, 1}}}, b.name + ".fold_scale4");
      const auto w2 = out.add("ewmul", {w, s4}, {}, b.name + ".fold_weight");
      const auto shifted =
          c.inputs.size() == 3
              ? out.add("ewsub", {in(c.inputs[2]), mean}, {}, b.name + ".shift")
              : out.add(
                    "scalar_mul",
                    {mean, out.add_constant(b.name + ".minus_one", models::TensorType{{}, dtype}, {-1.0})},
                    {}, b.name + ".shift");
      const auto b2 = out.add("ewadd", {out.add("ewmul", {shifted, s}, {}, b.name + ".shift_scale"), beta},
                              {}, b.name + ".fold_bias");
      const auto y2 = out.add("conv2d", {in(c.inputs[0]), w2, b2}, c.attrs, c.name + ".bn");
      return std::vector<std::pair<ValueId, ValueId>>{{z, y2}};
    };
    bool ok = false;
    auto site = make_site(g, costs, cost, "fuse_conv_batchnorm", {n, bn_id}, std::move(emit), ok);
    if (ok) sites.push_back(std::move(site));
  }
  return sites;
}

// ---- merge_convs ----
// Padding of one side after centring a k kernel in K: pad + (K - k) / 2.
bool centred_pads(const Ints& pa, const Ints& ka, const Ints& pb, const Ints& kb, Ints& merged,
                  Ints& kernel) {
  kernel = {std::max(ka[0], kb[0]), std::max(ka[1], kb[1])};
  for (int d = 0; d < 2; ++d)
    if ((kernel[d] - ka[d]) % 2 || (kernel[d] - kb[d]) % 2) return false;
  merged.assign(4, 0);
  for (int side = 0; side < 4; ++side) {
    const int d = side % 2;  // pads are [top, left, bottom, right]
    const auto a = pa[side] + (kernel[d] - ka[d]) / 2, b = pb[side] + (kernel[d] - kb[d]) / 2;
    if (a != b) return false;
    merged[side] = a;
  }
  return true;
}

std::vector<XferSite> merge_convs(const Graph& g, const NodeCosts& costs, const models::CostModel& cost) {
  std::vector<XferSite> sites;
  const GraphUses uses(g);
  const auto& consumers = uses.consumers;
  auto mergeable = [&](const Node& c) {
    return c.op->name == "conv2d" && c.attrs.i("groups") == 1 && c.attrs.ints("dilations") == Ints{1, 1};
  };
  for (ValueId x = 0; x < static_cast<ValueId>(g.values().size()); ++x) {
    const auto& cs = consumers[static_cast<std::size_t>(x)];
    for (std::size_t i = 0; i < cs.size(); ++i) {
      for (std::size_t j = i + 1; j < cs.size(); ++j) {
        NodeId a = cs[i], b = cs[j];
        if (a == b) continue;
        const Node& na = g.node(a);
        const Node& nb = g.node(b);
        if (!mergeable(na) || !mergeable(nb) || na.inputs[0] != x || nb.inputs[0] != x) continue;
        if (na.inputs.size() != nb.inputs.size() || na.attrs.ints("strides") != nb.attrs.ints("strides") ||
            na.attrs.s("activation") != nb.attrs.s("activation"))
          continue;
        const ValueId ya = na.outputs[0], yb = nb.outputs[0];
        // Both results feeding one channel concat, and nothing else, make the merged conv that concat.
        NodeId concat = -1;
        const auto& ca = consumers[static_cast<std::size_t>(ya)];
        const auto& cb = consumers[static_cast<std::size_t>(yb)];
        if (ca.size() == 1 && cb.size() == 1 && ca[0] == cb[0] &&
            !uses.is_output[static_cast<std::size_t>(ya)] && !uses.is_output[static_cast<std::size_t>(yb)]) {
          const Node& c = g.node(ca[0]);
          auto axis = c.op->name == "concat" ? c.attrs.i("axis") : -1;
          if (axis < 0 && c.op->name == "concat") axis += 4;
          if (c.op->name == "concat" && axis == 1 && c.inputs.size() == 2) {
            if (c.inputs[0] == yb && c.inputs[1] == ya) std::swap(a, b);
            if (g.node(ca[0]).inputs[0] == g.node(a).outputs[0]) concat = ca[0];
          }
        }
        const Node& first = g.node(a);
        const Node& second = g.node(b);
        const auto& wa = g.type(first.inputs[1]).shape;
        const auto& wb = g.type(second.inputs[1]).shape;
        Ints pads, kernel;
        if (!centred_pads(first.attrs.ints("pads"), {wa[2], wa[3]}, second.attrs.ints("pads"), {wb[2], wb[3]},
                          pads, kernel))
          continue;
        const ValueId out_a = first.outputs[0], out_b = second.outputs[0];
        const ValueId concat_out = concat >= 0 ? g.node(concat).outputs[0] : models::kNoValue;
        Emit emit = [a, b, pads, kernel, out_a, out_b, concat_out](
                        const Graph& src, Emitter& out, const std::function<ValueId(ValueId)>& in) {
          const Node& p = src.node(a);
          const Node& q = src.node(b);
          auto weight = [&](const Node& c) {
            const ValueId w = in(c.inputs[1]);
            const auto& s = out.type(w).shape;
            if (s[2] == kernel[0] && s[3] == kernel[1]) return w;
            return out.add("enlarge", {w}, {{"kernel", kernel}}, c.name + ".enlarge");
          };
          const std::string name = p.name + "+" + q.name;
          std::vector<ValueId> ins = {
              in(p.inputs[0]),
              out.add("concat", {weight(p), weight(q)}, {{"axis", std::int64_t{0}}}, name + ".weight")};
          if (p.inputs.size() == 3)
            ins.push_back(out.add("concat", {in(p.inputs[2]), in(q.inputs[2])}, {{"axis", std::int64_t{0}}},
                                  name + ".bias"));
          auto attrs = p.attrs;
          attrs.set("pads", pads);
          const ValueId y = out.add("conv2d", std::move(ins), std::move(attrs), name);
          if (concat_out != models::kNoValue)
            return std::vector<std::pair<ValueId, ValueId>>{{concat_out, y}};
          const auto oa = out.type(in(p.inputs[1])).shape[0], ob = out.type(in(q.inputs[1])).shape[0];
          const auto parts = out.add_node("split", {y}, {{"axis", std::int64_t{1}}, {"sizes", Ints{oa, ob}}},
                                          name + ".split");
          if (parts.size() != 2)
            return std::vector<std::pair<ValueId, ValueId>>{};  // rejected: out.ok() false
          return std::vector<std::pair<ValueId, ValueId>>{{out_a, parts[0]}, {out_b, parts[1]}};
        };
        std::vector<NodeId> replaced = {a, b};
        if (concat >= 0) replaced.push_back(concat);
        bool ok = false;
        auto site = make_site(g, costs, cost, "merge_convs", std::move(replaced), std::move(emit), ok);
        if (ok) sites.push_back(std::move(site));
      }
    }
  }
  return sites;
}

// ---- merge_gconv(k) ----
std::vector<XferSite> merge_gconv(const Graph& g, const NodeCosts& costs, const models::CostModel& cost) {
  std::vector<XferSite> sites;
  for (NodeId n = 0; n < static_cast<NodeId>(g.nodes().size()); ++n) {
    const Node& conv = g.node(n);
    if (conv.op->name != "conv2d") continue;
    const std::int64_t groups = conv.attrs.i("groups");
    for (std::int64_t count = 2; count <= groups; ++count) {
      if (groups % count != 0) continue;
      const ValueId y = conv.outputs[0];
      Emit emit = [n, groups, count, y](const Graph& src, Emitter& out,
                                        const std::function<ValueId(ValueId)>& in) {
        const Node& c = src.node(n);
        std::vector<ValueId> ins;
        for (ValueId v : c.inputs) ins.push_back(in(v));
        ins[1] = out.add("merge_gconv", {ins[1]}, {{"groups", groups}, {"count", count}},
                         fmt::format("{}.merge_gconv{}", c.name, count));
        auto attrs = c.attrs;
        attrs.set("groups", groups / count);
        const ValueId y2 = out.add("conv2d", std::move(ins), std::move(attrs),
                                   fmt::format("{}.g{}", c.name, groups / count));
        return std::vector<std::pair<ValueId, ValueId>>{{y, y2}};
      };
      bool ok = false;
      auto site = make_site(g, costs, cost, fmt::format("merge_gconv({})", count), {n}, std::move(emit), ok);
      if (ok) sites.push_back(std::move(site));
    }
  }
  return sites;
}

// ---- matmul_operand_layout ----
bool swaps_last_two(const Node& t, std::size_t rank) {
  if (t.op->name != "transpose" || rank < 2) return false;
  const auto& perm = t.attrs.ints("perm");
  if (perm.empty()) return rank == 2;  // default: reverse
  if (perm.size() != rank) return false;
  for (std::size_t d = 0; d + 2 < rank; ++d)
    if (perm[d] != static_cast<std::int64_t>(d)) return false;
  return perm[rank - 2] == static_cast<std::int64_t>(rank - 1) &&
         perm[rank - 1] == static_cast<std::int64_t>(rank - 2);
}

std::vector<XferSite> matmul_operand_layout(const Graph& g, const NodeCosts& costs,
                                            const models::CostModel& cost) {
  std::vector<XferSite> sites;
  for (NodeId n = 0; n < static_cast<NodeId>(g.nodes().size()); ++n) {
    const Node& mm = g.node(n);
    if (mm.op->name != "matmul" && mm.op->name != "batch_matmul") continue;
    for (int operand = 0; operand < 2; ++operand) {
      const ValueId v = mm.inputs[static_cast<std::size_t>(operand)];
      const NodeId t = g.value(v).producer;
      if (t < 0 || !swaps_last_two(g.node(t), g.type(g.node(t).inputs[0]).shape.size())) continue;
      const ValueId y = mm.outputs[0];
      Emit emit = [n, t, operand, y](const Graph& src, Emitter& out,
                                     const std::function<ValueId(ValueId)>& in) {
        const Node& m = src.node(n);
        std::vector<ValueId> ins = {in(m.inputs[0]), in(m.inputs[1])};
        ins[static_cast<std::size_t>(operand)] = in(src.node(t).inputs[0]);
        auto attrs = m.attrs;
        const char* flag = operand == 0 ? "trans_a" : "trans_b";
        attrs.set(flag, std::int64_t{1 - m.attrs.i(flag)});
        const ValueId y2 = out.add(m.op->name, std::move(ins), std::move(attrs), m.name + "." + flag);
        return std::vector<std::pair<ValueId, ValueId>>{{y, y2}};
      };
      bool ok = false;
      auto site =
          make_site(g, costs, cost, operand == 0 ? "matmul_operand_layout(a)" : "matmul_operand_layout(b)",
                    {n}, std::move(emit), ok);
      if (ok) sites.push_back(std::move(site));
    }
  }
  return sites;
}

struct NamedXfer {
  const char* name;
  std::vector<XferSite> (*fn)(const Graph&, const NodeCosts&, const models::CostModel&);
};
constexpr NamedXfer kXfers[] = {{"fuse_conv_batchnorm", fuse_conv_batchnorm},
                                {"fuse_conv_relu", fuse_conv_relu},
                                {"merge_convs", merge_convs},
                                {"merge_gconv", merge_gconv},
                                {"matmul_operand_layout", matmul_operand_layout}};

}  // namespace

std::vector<std::string> xfer_names() {
  std::vector<std::string> names;
  for (const auto& x : kXfers) names.emplace_back(x.name);
  return names;
}

std::vector<GraphXfer> make_xfers(const std::vector<std::string>& names) {
  std::vector<GraphXfer> out;
  for (const auto& x : kXfers)
    if (names.empty() || std::find(names.begin(), names.end(), x.name) != names.end()) out.emplace_back(x.fn);
  for (const auto& n : names)
    if (std::none_of(std::begin(kXfers), std::end(kXfers), [&](const NamedXfer& x) { return n == x.name; }))
      throw std::invalid_argument(
          fmt::format("unknown transformation '{}' (known: {})", n, fmt::join(xfer_names(), ", ")));
  return out;
}

}  // namespace strata::search::subst
