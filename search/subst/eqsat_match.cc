// E-matching rule left-hand sides in an e-graph and applying matches by building the rule's right-hand side
// (eqsat.h).
#include <algorithm>
#include <map>

#include "search/subst/eqsat.h"
#include "search/subst/target_args.h"

namespace strata::search::subst {
namespace {

using Bindings = std::vector<ClassId>;

int variable_index(const std::vector<std::string>& vars, const std::string& name) {
  auto it = std::find(vars.begin(), vars.end(), name);
  return it == vars.end() ? -1 : static_cast<int>(it - vars.begin());
}

// A grouped convolution is neither matched nor built (ir_bridge.h: rules_may_use).
bool ungroupable(const Signature& sig) {
  return sig.op && !rules_may_use(*sig.op, sig.attrs);
}

// Whether e-node n is an instance of the application at the top of pattern t.
bool node_matches(const EGraph& eg, const ENode& n, const Term& t) {
  const auto& op = eg.signature(n.sig).rule_op;
  if (!op) return false;
  const Op want = t.op() == Op::kSplit1 ? Op::kSplit0 : t.op();
  if (op->op != want || n.output != (t.op() == Op::kSplit1 ? 1 : 0)) return false;
  if (ungroupable(eg.signature(n.sig))) return false;
  if (op->params.size() != t.params().size() || n.children.size() != t.args().size()) return false;
  for (std::size_t i = 0; i < t.params().size(); ++i)
    if (t.params()[i].is_var() || t.params()[i].value != op->params[i]) return false;
  return true;
}

// Backtracking e-matching: every extension of `b` under which pattern t denotes class c.
void match_pattern(const EGraph& eg, const Term& t, ClassId c, const Bindings& b,
                   const std::vector<std::string>& vars, std::vector<Bindings>& out) {
  c = eg.find(c);
  if (t.is_variable()) {
    const auto i = static_cast<std::size_t>(variable_index(vars, t.name()));
    if (b[i] < 0) {
      out.push_back(b);
      out.back()[i] = c;
    } else if (b[i] == c) {
      out.push_back(b);
    }
    return;
  }
  for (const ENode& n : eg.eclass(c).nodes) {
    if (!node_matches(eg, n, t)) continue;
    std::vector<Bindings> cur{b};
    for (std::size_t i = 0; i < t.args().size() && !cur.empty(); ++i) {
      std::vector<Bindings> next;
      for (const auto& cb : cur) match_pattern(eg, t.args()[i], n.children[i], cb, vars, next);
      cur = std::move(next);
    }
    out.insert(out.end(), std::make_move_iterator(cur.begin()), std::make_move_iterator(cur.end()));
  }
}

// Classes that contain an e-node matching the root operator of t.
std::vector<ClassId> root_candidates(const EGraph& eg, const Term& t) {
  std::vector<ClassId> out;
  for (ClassId c : eg.class_ids())
    for (const ENode& n : eg.eclass(c).nodes)
      if (node_matches(eg, n, t)) {
        out.push_back(c);
        break;
      }
  return out;
}

// How a nullary constant of a target graph takes its shape from its context (as in the backtracking
// optimizer: as in TASO's generator, constants are sized by the operator that consumes them).
using ConstantContext = ConstantContextOf<ClassId>;

// TASO's split point of class c along `axis` (ir_bridge.h): the class's e-nodes in order.
std::optional<std::int64_t> concat_boundary(const EGraph& eg, ClassId c, std::int64_t axis, int depth) {
  return subst::concat_boundary(c, axis, depth, [&eg](std::int64_t id) {
    std::vector<SplitTraceStep> steps;
    const EClass& cls = eg.eclass(eg.find(static_cast<ClassId>(id)));
    for (const ENode& n : cls.nodes) {
      const Signature& sig = eg.signature(n.sig);
      if (!sig.op) continue;
      SplitTraceStep& s = steps.emplace_back();
      s.op = sig.op;
      s.attrs = &sig.attrs;
      s.inputs = sig.inputs;
      s.output = cls.type;
      s.children.assign(n.children.begin(), n.children.end());
    }
    return steps;
  });
}

// Adds target term t under bindings b; `expected` is the type it must have when it is an rhs root (a root
// split takes its split point from it).
std::optional<ClassId> build_target(EGraph& eg, const Term& t, const Bindings& b,
                                    const std::vector<std::string>& vars, std::optional<ConstantContext> ctx,
                                    const models::TensorType* expected) {
  if (t.is_variable()) {
    const int i = variable_index(vars, t.name());
    if (i < 0 || b[static_cast<std::size_t>(i)] < 0) return std::nullopt;
    return eg.find(b[static_cast<std::size_t>(i)]);
  }
  std::vector<ClassId> kids;
  if (!build_target_args(t, ctx, kids, ClassId{-1},
                         [&](const Term& arg, const std::optional<ConstantContext>& c) {
                           return build_target(eg, arg, b, vars, c, nullptr);
                         }))
    return std::nullopt;
  OpInstance inst{t.op(), {}};
  for (const auto& p : t.params()) {
    if (p.is_var()) return std::nullopt;
    inst.params.push_back(p.value);
  }
  std::vector<models::Shape> shapes;
  for (ClassId k : kids) shapes.push_back(eg.eclass(k).type.shape);
  std::int64_t split_point = 0;
  if (inst.op == Op::kSplit0 || inst.op == Op::kSplit1) {
    const auto axis = inst.params[0];
    if (axis < 0 || axis >= static_cast<std::int64_t>(shapes[0].size())) return std::nullopt;
    const auto dim = shapes[0][static_cast<std::size_t>(axis)];
    if (expected && expected->shape.size() == shapes[0].size()) {
      const auto part = expected->shape[static_cast<std::size_t>(axis)];
      split_point = inst.op == Op::kSplit0 ? part : dim - part;
    } else {
      auto point = concat_boundary(eg, kids[0], axis, 8);
      if (!point) return std::nullopt;
      split_point = *point;
    }
  }
  models::Shape cshape;
  if (op_info(t.op()).tensor_args == 0) {
    if (!ctx || ctx->sibling < 0) return std::nullopt;
    auto s = constant_shape_in(ctx->parent, ctx->arg, eg.eclass(ctx->sibling).type.shape);
    if (!s) return std::nullopt;
    cshape = *s;
  }
  auto ir = to_ir(inst, shapes, split_point, cshape);
  if (!ir || !rules_may_use(*ir->def, ir->attrs)) return std::nullopt;
  return eg.add_op(ir->name(), ir->attrs, kids, ir->output);
}

}  // namespace

std::vector<std::string> rule_variables(const Rule& rule) {
  std::vector<std::string> vars;
  for (const auto& eq : rule.outputs) collect_variables(eq.lhs, vars);
  for (const auto& eq : rule.outputs) collect_variables(eq.rhs, vars);
  return vars;
}

std::vector<EMatch> ematch(const EGraph& eg, const Rule& rule) {
  std::vector<EMatch> result;
  if (rule.outputs.empty()) return result;
  for (const auto& eq : rule.outputs)
    if (eq.lhs.is_variable()) return result;  // a bare-variable lhs is not a rewrite site
  const auto vars = rule_variables(rule);
  std::vector<EMatch> partial{EMatch{{}, Bindings(vars.size(), -1)}};
  for (const auto& eq : rule.outputs) {
    // Matches of this lhs on its own, then joined with the partial matches on the shared variables.
    std::vector<std::pair<ClassId, Bindings>> own;
    for (ClassId c : root_candidates(eg, eq.lhs)) {
      std::vector<Bindings> found;
      match_pattern(eg, eq.lhs, c, Bindings(vars.size(), -1), vars, found);
      for (auto& b : found) own.emplace_back(c, std::move(b));
    }
    // A root sharing no variable with the earlier ones (e.g. rule 70: relu(a), relu(b)) would pair with every
    // other match; as in the backtracking optimizer, it is paired only with roots it has a common consumer
    // with.
    std::vector<std::string> earlier, own_vars;
    for (std::size_t e = 0; e < static_cast<std::size_t>(&eq - rule.outputs.data()); ++e)
      collect_variables(rule.outputs[e].lhs, earlier);
    collect_variables(eq.lhs, own_vars);
    const bool unrelated =
        !earlier.empty() && std::none_of(own_vars.begin(), own_vars.end(), [&](const std::string& v) {
          return std::find(earlier.begin(), earlier.end(), v) != earlier.end();
        });
    auto common_consumer = [&](ClassId a, const std::vector<ClassId>& others) {
      for (const auto& [node, cls] : eg.eclass(a).parents)
        for (ClassId k : node.children)
          if (std::find(others.begin(), others.end(), eg.find(k)) != others.end()) return true;
      return false;
    };
    std::vector<EMatch> next;
    for (const auto& p : partial) {
      for (const auto& [root, b] : own) {
        if (std::find(p.roots.begin(), p.roots.end(), root) != p.roots.end()) continue;
        if (unrelated && !common_consumer(root, p.roots)) continue;
        Bindings joined = p.bindings;
        bool ok = true;
        for (std::size_t i = 0; i < b.size() && ok; ++i) {
          if (b[i] < 0) continue;
          if (joined[i] < 0)
            joined[i] = b[i];
          else
            ok = joined[i] == b[i];
        }
        if (!ok) continue;
        EMatch m{p.roots, std::move(joined)};
        m.roots.push_back(root);
        next.push_back(std::move(m));
      }
    }
    partial = std::move(next);
    if (partial.empty()) break;
  }
  std::sort(partial.begin(), partial.end());
  partial.erase(std::unique(partial.begin(), partial.end()), partial.end());
  return partial;
}

bool apply_ematch(EGraph& eg, const Rule& rule, const EMatch& m, bool& changed) {
  changed = false;
  const auto vars = rule_variables(rule);
  std::vector<ClassId> rhs;
  for (std::size_t i = 0; i < rule.outputs.size(); ++i) {
    const models::TensorType expected = eg.eclass(m.roots[i]).type;
    auto r = build_target(eg, rule.outputs[i].rhs, m.bindings, vars, std::nullopt, &expected);
    if (!r || eg.eclass(*r).type != expected) return false;
    rhs.push_back(*r);
  }
  for (std::size_t i = 0; i < rhs.size(); ++i) changed = eg.merge(m.roots[i], rhs[i]) || changed;
  return true;
}

}  // namespace strata::search::subst
