#include "search/subst/term_eval.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "models/exec/executor.h"
#include "models/ir/graph.h"
#include "models/ir/op_def.h"
#include "search/subst/ir_bridge.h"
#include "search/subst/split_history.h"

namespace strata::search::subst {
namespace {

using models::ModP;

bool same_tree(const SplitTreePtr& a, const SplitTreePtr& b) {
  if (a == b) return true;
  if (!a || !b) return false;
  return a->first_size == b->first_size && same_tree(a->first, b->first) && same_tree(a->second, b->second);
}

SplitTreePtr concat_tree(const SplitTreePtr& a, std::int64_t a_size, const SplitTreePtr& b) {
  auto node = std::make_shared<SplitTree>();
  node->first_size = a_size;
  node->first = a;
  node->second = b;
  return node;
}

// A term whose shape depends on where it is used: a constant, possibly under operators whose result's shape
// follows from operands that themselves need context (RuleForm::shape_follows: smul(Iewmul, s),
// relu(Imatmul), transpose(Imatmul), ewadd(Iewmul, Iewmul)).
bool needs_context(const Term& t) {
  if (t.is_variable()) return false;
  const OpInfo& info = op_info(t.op());
  if (info.tensor_args == 0) return true;
  const auto& follows = info.def->rule.shape_follows;
  return !follows.empty() && std::all_of(follows.begin(), follows.end(), [&](int i) {
    return static_cast<std::size_t>(i) < t.args().size() &&
           needs_context(t.args()[static_cast<std::size_t>(i)]);
  });
}

std::string shapes_str(const std::vector<Shape>& shapes) {
  std::vector<std::string> parts;
  for (const auto& s : shapes) parts.push_back(s.empty() ? "scalar" : fmt::format("{}", fmt::join(s, "x")));
  return fmt::format("{}", fmt::join(parts, ", "));
}

// The sizing of a constant: the shape wanted for it, or a free size when its context does not fix it.
Shape constant_sizing(const std::optional<Shape>& wanted, std::int64_t free_size) {
  if (wanted && !wanted->empty()) return *wanted;
  return {free_size, free_size};
}

template <class V>
using Try = models::TryResult<V>;

template <class T, bool kData>
class Evaluator {
 public:
  Evaluator(const TermBindings<T>& vars, const TermEvalOptions& options) : vars_(vars), options_(options) {}

  // The value of `t`, or why it does not type-check (no exceptions: axiom validation and rule refutation try
  // many shapes that do not fit).
  Try<TermValue<T>> eval(const Term& t, const std::optional<Shape>& wanted = std::nullopt) const {
    if (t.is_variable()) {
      auto it = vars_.find(t.name());
      if (it == vars_.end()) return Try<TermValue<T>>::failure(fmt::format("'{}' has no value", t.name()));
      return it->second;
    }
    const auto& args = t.args();
    std::vector<TermValue<T>> in(args.size());
    for (int pass = 0; pass < 2; ++pass)
      for (std::size_t i = 0; i < args.size(); ++i) {
        if (needs_context(args[i]) != (pass == 1)) continue;
        auto v = pass == 0 ? eval(args[i]) : eval(args[i], context_shape(t, i, in, wanted));
        if (!v) return v;
        in[i] = std::move(v).value();
      }
    return apply(t, in, wanted);
  }

 private:
  // The shape argument `i` of `t` (which needs context) must have, as far as the other operands and the shape
  // wanted for `t` determine it (the parent's RuleForm::operand_shape).
  std::optional<Shape> context_shape(const Term& t, std::size_t i, const std::vector<TermValue<T>>& in,
                                     const std::optional<Shape>& wanted) const {
    const auto& args = t.args();
    const std::size_t j = 1 - i;
    const Shape* other = args.size() == 2 && !needs_context(args[j]) ? &in[j].type.shape : nullptr;
    return operand_shape(t.op(), i, other, wanted ? &*wanted : nullptr);
  }

  Try<TermValue<T>> apply(const Term& t, std::vector<TermValue<T>>& in,
                          const std::optional<Shape>& wanted) const {
    OpInstance inst{t.op(), {}};
    for (const Param& p : t.params()) inst.params.push_back(p.value);
    std::vector<Shape> shapes;
    for (const auto& v : in) shapes.push_back(v.type.shape);
    auto fail = [&](std::string_view why) {
      return Try<TermValue<T>>::failure(
          fmt::format("{} on operands of shape ({}): {}", to_string(t), shapes_str(shapes), why));
    };

    const bool split = is_split(t.op());
    std::int64_t split_point = 0;
    SplitTreePtr split_tree;
    if (split) {
      const auto axis = static_cast<std::size_t>(inst.params[0]);
      if (inst.params[0] < 0 || axis >= in[0].type.split.size()) return fail("axis out of range");
      split_tree = in[0].type.split[axis];
      if (!split_tree) return fail("no concatenation to undo along this axis");
      split_point = split_tree->first_size;
    }
    std::optional<IrOp> ir;
    if (t.op() == Op::kSmul && shapes.size() == 2 && shapes[1].empty())
      ir = IrOp{op_info(Op::kSmul).def, {}, 0};  // the IR's scalar_mul also takes a 0-D first operand
    else
      ir = to_ir(inst, shapes, split_point, constant_sizing(wanted, options_.free_constant_size));
    if (!ir) return fail("the operator does not apply");

    auto applied = apply_ir(*ir, shapes, "term");
    if (!applied) return fail(applied.diagnostic());
    const models::OpDef& def = *applied.value().def;
    const models::Attrs& attrs = applied.value().attrs;
    const auto& in_types = applied.value().inputs;
    const auto& out_types = applied.value().outputs;

    TermValue<T> result;
    result.type.shape = out_types.at(static_cast<std::size_t>(ir->output)).shape;
    if constexpr (kData) {
      std::vector<std::vector<T>> outs(out_types.size());
      std::vector<models::In<T>> ins;
      std::vector<models::Out<T>> out_views;
      for (std::size_t i = 0; i < in.size(); ++i)
        ins.push_back({in[i].data.data(), &in[i].type.shape, static_cast<std::int64_t>(in[i].data.size())});
      for (std::size_t o = 0; o < out_types.size(); ++o) {
        outs[o].assign(static_cast<std::size_t>(out_types[o].numel()), T{});
        out_views.push_back({outs[o].data(), &out_types[o].shape, static_cast<std::int64_t>(outs[o].size())});
      }
      const models::KernelCall<T> call{ins, out_views, attrs};
      if constexpr (std::is_same_v<T, double>)
        def.kernel.real(call);
      else
        def.kernel.modp(call);
      result.data = std::move(outs[static_cast<std::size_t>(ir->output)]);
    }
    result.type.split = split_history(t, inst, in, split_tree, def, in_types,
                                      out_types.at(static_cast<std::size_t>(ir->output)), attrs);
    return result;
  }

  // The result's split history, axis by axis, as its operator declares it (OpDef::split_axis,
  // split_history.h); a split's own axis takes the part of the operand's boundary it denotes.
  static std::vector<SplitTreePtr> split_history(const Term& t, const OpInstance& inst,
                                                 const std::vector<TermValue<T>>& in,
                                                 const SplitTreePtr& split_tree, const models::OpDef& def,
                                                 std::span<const models::TensorType> in_types,
                                                 const models::TensorType& out, const models::Attrs& attrs) {
    const std::size_t rank = out.shape.size();
    auto from = [&](int arg, std::int64_t axis) -> SplitTreePtr {
      const auto& s = in[static_cast<std::size_t>(arg)].type.split;
      return axis >= 0 && static_cast<std::size_t>(axis) < s.size() ? s[static_cast<std::size_t>(axis)]
                                                                    : nullptr;
    };
    auto agree = [](const SplitTreePtr& a, const SplitTreePtr& b) { return same_tree(a, b) ? a : nullptr; };
    const auto traces = split_axis_traces(def, in_types, out, attrs, rank);
    std::vector<SplitTreePtr> history(rank);
    for (std::size_t d = 0; d < rank; ++d)
      history[d] = axis_history<SplitTreePtr>(traces[d], from, agree, concat_tree);
    if (is_split(t.op())) {
      const auto axis = static_cast<std::size_t>(inst.params[0]);
      if (axis < rank) history[axis] = t.op() == Op::kSplit0 ? split_tree->first : split_tree->second;
    }
    return history;
  }

  const TermBindings<T>& vars_;
  const TermEvalOptions& options_;
};

}  // namespace

models::TryResult<TermType> try_infer_type(const Term& term,
                                           const std::map<std::string, Shape, std::less<>>& shapes,
                                           const TermEvalOptions& options) {
  TermBindings<ModP> vars;
  for (const auto& [name, shape] : shapes)
    vars[name].type = TermType{shape, std::vector<SplitTreePtr>(shape.size())};
  auto v = Evaluator<ModP, false>(vars, options).eval(term);
  if (!v) return models::TryResult<TermType>::failure(v.diagnostic());
  return std::move(v).value().type;
}

TermType infer_type(const Term& term, const std::map<std::string, Shape, std::less<>>& shapes,
                    const TermEvalOptions& options) {
  auto t = try_infer_type(term, shapes, options);
  if (!t) throw TermTypeError(t.diagnostic());
  return std::move(t).value();
}

template <class T>
TermBindings<T> random_bindings(std::span<const std::pair<std::string, Shape>> shapes, std::uint64_t seed) {
  TermBindings<T> out;
  for (const auto& [name, shape] : shapes) {
    auto& v = out[name];
    v.type = TermType{shape, std::vector<SplitTreePtr>(shape.size())};
    v.data = models::random_values<T>(models::numel(shape), seed, name);
  }
  return out;
}
template TermBindings<double> random_bindings(std::span<const std::pair<std::string, Shape>>, std::uint64_t);
template TermBindings<ModP> random_bindings(std::span<const std::pair<std::string, Shape>>, std::uint64_t);

namespace {
std::optional<std::string> shape_difference(const TermType& a, const TermType& b) {
  if (a.shape == b.shape) return std::nullopt;
  return fmt::format("shapes differ: {} vs {}", shapes_str({a.shape}), shapes_str({b.shape}));
}
}  // namespace

std::optional<std::string> value_difference(const TermValue<ModP>& a, const TermValue<ModP>& b) {
  if (auto d = shape_difference(a.type, b.type)) return d;
  for (std::size_t i = 0; i < a.data.size() && i < b.data.size(); ++i)
    if (!(a.data[i] == b.data[i]))
      return fmt::format("values differ in the prime field at element {} ({} vs {})", i, a.data[i].centered(),
                         b.data[i].centered());
  return std::nullopt;
}

std::optional<std::string> value_difference(const TermValue<double>& a, const TermValue<double>& b,
                                            double tolerance) {
  if (auto d = shape_difference(a.type, b.type)) return d;
  double scale = 1;
  for (double x : a.data) scale = std::max(scale, std::fabs(x));
  for (std::size_t i = 0; i < a.data.size() && i < b.data.size(); ++i)
    if (!(std::fabs(a.data[i] - b.data[i]) <= tolerance * scale))
      return fmt::format("values differ in double precision at element {} ({:.6g} vs {:.6g})", i, a.data[i],
                         b.data[i]);
  return std::nullopt;
}

bool same_split_history(const TermType& a, const TermType& b) {
  if (a.split.size() != b.split.size()) return false;
  for (std::size_t d = 0; d < a.split.size(); ++d)
    if (!same_tree(a.split[d], b.split[d])) return false;
  return true;
}

template <class T>
models::TryResult<TermValue<T>> try_evaluate(const Term& term, const TermBindings<T>& vars,
                                             const TermEvalOptions& options) {
  return Evaluator<T, true>(vars, options).eval(term);
}

template <class T>
TermValue<T> evaluate(const Term& term, const TermBindings<T>& vars, const TermEvalOptions& options) {
  auto v = try_evaluate(term, vars, options);
  if (!v) throw TermTypeError(v.diagnostic());
  return std::move(v).value();
}

template models::TryResult<TermValue<double>> try_evaluate(const Term&, const TermBindings<double>&,
                                                           const TermEvalOptions&);
template models::TryResult<TermValue<ModP>> try_evaluate(const Term&, const TermBindings<ModP>&,
                                                         const TermEvalOptions&);
template TermValue<double> evaluate(const Term&, const TermBindings<double>&, const TermEvalOptions&);
template TermValue<ModP> evaluate(const Term&, const TermBindings<ModP>&, const TermEvalOptions&);

}  // namespace strata::search::subst
