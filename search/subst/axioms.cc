#include "search/subst/axioms.h"

#include <algorithm>
#include <array>
#include <iterator>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "hw/config_error.h"
#include "models/ir/op_def.h"

namespace strata::search::subst {
namespace {

using enum AxiomKind;

// Variable naming: x y z w tensors, s a 0-D scalar, sx sy strides, pad padding, acti activation, kx ky kernel
// sizes, ax a concat/split axis. Literal parameters: pad 0 = SAME, acti 0 = none / 2 = relu.
constexpr std::array<AxiomSpec, 47> kTasoAxioms{{
    // Element-wise algebra
    {"ewadd_assoc", kAxiom, "x y z", "ewadd(x,ewadd(y,z)) == ewadd(ewadd(x,y),z)",
     "x + (y + z) = (x + y) + z"},
    {"ewadd_comm", kAxiom, "x y", "ewadd(x,y) == ewadd(y,x)", "x + y = y + x"},
    {"ewmul_assoc", kAxiom, "x y z", "ewmul(x,ewmul(y,z)) == ewmul(ewmul(x,y),z)",
     "x ⊙ (y ⊙ z) = (x ⊙ y) ⊙ z"},
    {"ewmul_comm", kAxiom, "x y", "ewmul(x,y) == ewmul(y,x)", "x ⊙ y = y ⊙ x"},
    {"ewmul_ewadd_distrib", kAxiom, "x y z", "ewmul(ewadd(x,y),z) == ewadd(ewmul(x,z),ewmul(y,z))",
     "(x + y) ⊙ z = x ⊙ z + y ⊙ z"},
    // Scalar multiplication
    {"smul_assoc", kAxiom, "x s t", "smul(smul(x,s),t) == smul(x,smul(s,t))", "t·(s·x) = (t·s)·x"},
    {"smul_ewadd_distrib", kAxiom, "x y s", "smul(ewadd(x,y),s) == ewadd(smul(x,s),smul(y,s))",
     "s·(x + y) = s·x + s·y"},
    {"smul_ewmul", kAxiom, "x y s", "smul(ewmul(x,y),s) == ewmul(x,smul(y,s))", "s·(x ⊙ y) = x ⊙ (s·y)"},
    {"smul_transpose", kAxiom, "x s", "smul(transpose(x),s) == transpose(smul(x,s))", "s·xᵀ = (s·x)ᵀ"},
    {"smul_matmul", kAxiom, "x y s", "smul(matmul(x,y),s) == matmul(x,smul(y,s))", "s·(x@y) = x@(s·y)"},
    {"smul_concat", kAxiom, "ax x y s", "smul(concat(ax,x,y),s) == concat(ax,smul(x,s),smul(y,s))",
     "s·[x|y]_a = [s·x | s·y]_a"},
    {"conv_smul_input_weight", kAxiom, "sx sy pad acti x y s",
     "conv2d(sx,sy,pad,acti,smul(x,s),y) == conv2d(sx,sy,pad,acti,x,smul(y,s))",
     "conv_{σ,π,α}(s·x, y) = conv_{σ,π,α}(x, s·y)"},
    {"smul_conv", kAxiom, "sx sy pad x y s",
     "smul(conv2d(sx,sy,pad,0,x,y),s) == conv2d(sx,sy,pad,0,smul(x,s),y)",
     "s·conv_{σ,π,none}(x, y) = conv_{σ,π,none}(s·x, y)"},
    // ReLU
    {"relu_conv", kAxiom, "sx sy pad x y", "relu(conv2d(sx,sy,pad,0,x,y)) == conv2d(sx,sy,pad,2,x,y)",
     "relu(conv_{σ,π,none}(x, y)) = conv_{σ,π,relu}(x, y)"},
    {"relu_concat", kAxiom, "ax x y", "relu(concat(ax,x,y)) == concat(ax,relu(x),relu(y))",
     "relu([x|y]_a) = [relu x | relu y]_a"},
    {"relu_transpose", kAxiom, "x", "relu(transpose(x)) == transpose(relu(x))", "relu(xᵀ) = (relu x)ᵀ"},
    // Convolution
    {"conv_weight_ewadd", kAxiom, "sx sy pad x y z",
     "conv2d(sx,sy,pad,0,x,ewadd(y,z)) == ewadd(conv2d(sx,sy,pad,0,x,y),conv2d(sx,sy,pad,0,x,z))",
     "conv(x, y + z) = conv(x, y) + conv(x, z)"},
    {"conv_input_ewadd", kAxiom, "sx sy pad x y z",
     "conv2d(sx,sy,pad,0,ewadd(x,y),z) == ewadd(conv2d(sx,sy,pad,0,x,z),conv2d(sx,sy,pad,0,y,z))",
     "conv(x + y, z) = conv(x, z) + conv(y, z)"},
    {"conv_channel_concat", kAxiom, "sx sy pad x y z w",
     "ewadd(conv2d(sx,sy,pad,0,x,y),conv2d(sx,sy,pad,0,z,w)) == "
     "conv2d(sx,sy,pad,0,concat(1,x,z),concat(1,y,w))",
     "conv(x, y) + conv(z, w) = conv([x|z]_1, [y|w]_1)"},
    // Concatenation
    {"matmul_concat_sum", kAxiom, "x y z w",
     "ewadd(matmul(x,y),matmul(z,w)) == matmul(concat(1,x,z),concat(0,y,w))",
     "x@y + z@w = [x|z]_1 @ [y|w]_0"},
    {"concat_ewadd", kAxiom, "ax x y z w",
     "concat(ax,ewadd(x,y),ewadd(z,w)) == ewadd(concat(ax,x,z),concat(ax,y,w))",
     "[x + y | z + w]_a = [x|z]_a + [y|w]_a"},
    {"concat_ewmul", kAxiom, "ax x y z w",
     "concat(ax,ewmul(x,y),ewmul(z,w)) == ewmul(concat(ax,x,z),concat(ax,y,w))",
     "[x ⊙ y | z ⊙ w]_a = [x|z]_a ⊙ [y|w]_a"},
    {"concat_conv_batch", kAxiom, "sx sy pad acti x y z",
     "concat(0,conv2d(sx,sy,pad,acti,x,z),conv2d(sx,sy,pad,acti,y,z)) == "
     "conv2d(sx,sy,pad,acti,concat(0,x,y),z)",
     "[conv(x, z) | conv(y, z)]_0 = conv([x|y]_0, z)"},
    {"concat_conv_out_channels", kAxiom, "sx sy pad acti x y z",
     "concat(1,conv2d(sx,sy,pad,acti,x,y),conv2d(sx,sy,pad,acti,x,z)) == "
     "conv2d(sx,sy,pad,acti,x,concat(0,y,z))",
     "[conv(x, y) | conv(x, z)]_1 = conv(x, [y|z]_0)"},
    // Matmul, split
    {"matmul_assoc", kAxiom, "x y z", "matmul(x,matmul(y,z)) == matmul(matmul(x,y),z)", "x@(y@z) = (x@y)@z"},
    {"split0_concat", kAxiom, "ax x y", "split_0(ax,concat(ax,x,y)) == x", "split⁰_a([x|y]_a) = x"},
    {"split1_concat", kAxiom, "ax x y", "split_1(ax,concat(ax,x,y)) == y", "split¹_a([x|y]_a) = y"},
    {"matmul_concat_cols", kAxiom, "x y z", "matmul(x,concat(1,y,z)) == concat(1,matmul(x,y),matmul(x,z))",
     "x@[y|z]_1 = [x@y | x@z]_1"},
    {"matmul_ewadd", kAxiom, "x y z", "matmul(x,ewadd(y,z)) == ewadd(matmul(x,y),matmul(x,z))",
     "x@(y + z) = x@y + x@z"},
    // Transpose
    {"transpose_involution", kAxiom, "x", "transpose(transpose(x)) == x", "(xᵀ)ᵀ = x"},
    {"transpose_matmul", kAxiom, "x y", "transpose(matmul(x,y)) == matmul(transpose(y),transpose(x))",
     "(x@y)ᵀ = yᵀ @ xᵀ"},
    {"transpose_concat", kAxiom, "x y", "transpose(concat(0,x,y)) == concat(1,transpose(x),transpose(y))",
     "([x|y]_0)ᵀ = [xᵀ | yᵀ]_1"},
    {"concat_geometry", kAxiom, "x y z w",
     "concat(0,concat(1,x,y),concat(1,z,w)) == concat(1,concat(0,x,z),concat(0,y,w))",
     "[[x|y]_1 | [z|w]_1]_0 = [[x|z]_0 | [y|w]_0]_1"},
    {"transpose_ewadd", kAxiom, "x y", "transpose(ewadd(x,y)) == ewadd(transpose(x),transpose(y))",
     "(x + y)ᵀ = xᵀ + yᵀ"},
    {"transpose_ewmul", kAxiom, "x y", "transpose(ewmul(x,y)) == ewmul(transpose(x),transpose(y))",
     "(x ⊙ y)ᵀ = xᵀ ⊙ yᵀ"},
    // Pooling
    {"concat_poolavg_channels", kAxiom, "kx ky sx sy pad x y",
     "concat(1,poolavg(kx,ky,sx,sy,pad,x),poolavg(kx,ky,sx,sy,pad,y)) == "
     "poolavg(kx,ky,sx,sy,pad,concat(1,x,y))",
     "[avg(x) | avg(y)]_1 = avg([x|y]_1)"},
    {"concat_poolmax_batch", kAxiom, "kx ky sx sy pad x y",
     "concat(0,poolmax(kx,ky,sx,sy,pad,x),poolmax(kx,ky,sx,sy,pad,y)) == "
     "poolmax(kx,ky,sx,sy,pad,concat(0,x,y))",
     "[max(x) | max(y)]_0 = max([x|y]_0)"},
    {"concat_poolmax_channels", kAxiom, "kx ky sx sy pad x y",
     "concat(1,poolmax(kx,ky,sx,sy,pad,x),poolmax(kx,ky,sx,sy,pad,y)) == "
     "poolmax(kx,ky,sx,sy,pad,concat(1,x,y))",
     "[max(x) | max(y)]_1 = max([x|y]_1)"},
    // Constants
    {"conv_cpool", kAxiom, "sx sy pad kx ky x",
     "conv2d(sx,sy,pad,0,x,Cpool(kx,ky)) == poolavg(kx,ky,sx,sy,pad,x)",
     "conv_{σ,π,none}(x, C_p^k) = avg_{k,σ,π}(x)"},
    {"conv_iconv", kAxiom, "kx ky x", "conv2d(1,1,0,0,x,Iconv(kx,ky)) == x",
     "conv_{1,SAME,none}(x, I_c^k) = x"},
    {"matmul_imatmul", kAxiom, "x", "matmul(x,Imatmul) == x", "x @ I_m = x"},
    {"ewmul_iewmul", kAxiom, "x", "ewmul(x,Iewmul) == x", "x ⊙ 𝟙 = x"},
    {"poolavg_iconv", kAxiom, "kx ky", "poolavg(kx,ky,1,1,0,Iconv(kx,ky)) == Cpool(kx,ky)",
     "avg_{k,1,SAME}(I_c^k) = C_p^k (in TASO HEAD, commented out in sosp19ae)"},
    {"conv_enlarge", kAxiom, "sx sy acti kx ky x y",
     "conv2d(sx,sy,0,acti,x,y) == conv2d(sx,sy,0,acti,x,enlarge(kx,ky,y))",
     "conv_{σ,SAME,α}(x, y) = conv_{σ,SAME,α}(x, enl_k(y))"},
    // Lemmas: implied by the axioms, added as hints
    {"transpose_imatmul", kLemma, "", "transpose(Imatmul) == Imatmul", "I_mᵀ = I_m"},
    {"imatmul_matmul", kLemma, "x", "matmul(Imatmul,x) == x", "I_m @ x = x"},
    {"concat_poolavg_batch", kLemma, "kx ky sx sy pad x y",
     "concat(0,poolavg(kx,ky,sx,sy,pad,x),poolavg(kx,ky,sx,sy,pad,y)) == "
     "poolavg(kx,ky,sx,sy,pad,concat(0,x,y))",
     "[avg(x) | avg(y)]_0 = avg([x|y]_0)"},
}};

constexpr std::array<AxiomSpec, 2> kRejectedAxioms{{
    {"concat_assoc", kAxiom, "ax x y z", "concat(ax,x,concat(ax,y,z)) == concat(ax,concat(ax,x,y),z)",
     "[x|[y|z]_a]_a = [[x|y]_a|z]_a — wrong: conflicts with split semantics"},
    {"grouped_conv_concat", kAxiom, "sx sy pad acti x y z w",
     "concat(1,conv2d(sx,sy,pad,acti,x,y),conv2d(sx,sy,pad,acti,z,w)) == "
     "conv2d(sx,sy,pad,acti,concat(1,x,z),concat(0,y,w))",
     "[conv(x,y) | conv(z,w)]_1 = conv([x|z]_1, [y|w]_0) — wrong unless the grouping matches (caught with "
     "N=[1,3])"},
}};

// Records, for every parameter variable, the domain of each position it occupies.
void collect_param_domains(const Term& t, std::vector<ParamVariable>& vars) {
  if (t.is_variable()) return;
  const OpInfo& info = op_info(t.op());
  for (std::size_t i = 0; i < t.params().size(); ++i) {
    const Param& p = t.params()[i];
    if (!p.is_var()) continue;
    const auto domain = param_domain(info.params[i].kind);
    auto it = std::find_if(vars.begin(), vars.end(), [&](const ParamVariable& v) { return v.name == p.var; });
    if (it == vars.end()) {
      vars.push_back({p.var, {domain.begin(), domain.end()}});
      continue;
    }
    std::vector<std::int64_t> common;
    std::set_intersection(it->domain.begin(), it->domain.end(), domain.begin(), domain.end(),
                          std::back_inserter(common));
    it->domain = std::move(common);
  }
  for (const Term& a : t.args()) collect_param_domains(a, vars);
}

}  // namespace

Axiom parse_axiom(const AxiomSpec& spec) {
  const std::string file = fmt::format("axiom {}", spec.name);
  auto fail = [&](std::string_view message) { return ConfigError(fmt::format("{}: {}", file, message)); };
  Axiom ax;
  ax.name = std::string(spec.name);
  ax.kind = spec.kind;
  ax.note = std::string(spec.note);
  const std::string_view text = spec.equation;
  std::size_t pos = 0;
  const TextOrigin origin{file, 1, 1};
  ax.lhs = parse_term(text, pos, origin, true);
  while (pos < text.size() && text[pos] == ' ') ++pos;
  if (text.substr(pos, 2) != "==") throw fail(fmt::format("expected '==' at column {}", pos + 1));
  pos += 2;
  ax.rhs = parse_term(text, pos, origin, true);
  while (pos < text.size() && text[pos] == ' ') ++pos;
  if (pos != text.size()) throw fail(fmt::format("unexpected text at column {}", pos + 1));

  std::vector<std::string> params;
  collect_variables(ax.lhs, ax.tensor_variables, &params);
  collect_variables(ax.rhs, ax.tensor_variables, &params);
  collect_param_domains(ax.lhs, ax.param_variables);
  collect_param_domains(ax.rhs, ax.param_variables);
  for (const ParamVariable& p : ax.param_variables)
    if (p.domain.empty()) throw fail(fmt::format("parameter variable '{}' has an empty domain", p.name));

  std::vector<std::string> declared;
  std::istringstream words{std::string(spec.variables)};
  for (std::string w; words >> w;) declared.push_back(w);
  std::vector<std::string> used = ax.tensor_variables;
  used.insert(used.end(), params.begin(), params.end());
  std::sort(declared.begin(), declared.end());
  std::sort(used.begin(), used.end());
  if (declared != used)
    throw fail(fmt::format("declared variables [{}] differ from the variables used [{}]",
                           fmt::join(declared, " "), fmt::join(used, " ")));
  return ax;
}

std::span<const AxiomSpec> taso_axiom_table() {
  return kTasoAxioms;
}
std::span<const AxiomSpec> taso_rejected_axiom_table() {
  return kRejectedAxioms;
}

std::vector<Axiom> taso_axioms() {
  std::vector<Axiom> out;
  out.reserve(kTasoAxioms.size());
  for (const AxiomSpec& spec : kTasoAxioms) out.push_back(parse_axiom(spec));
  return out;
}

std::vector<Axiom> verification_axioms() {
  std::vector<Axiom> out = taso_axioms();
  for (const models::OpDef& def : models::OpRegistry::instance().all())
    for (const models::RuleAxiom& a : def.rule.axioms)
      out.push_back(parse_axiom(AxiomSpec{a.name, AxiomKind::kAxiom, a.variables, a.equation, a.note}));
  return out;
}

std::string format_axiom(const Axiom& axiom) {
  std::string vars = fmt::format("{}", fmt::join(axiom.tensor_variables, " "));
  for (const ParamVariable& p : axiom.param_variables)
    vars += fmt::format("{}{}∈{{{}}}", vars.empty() ? "" : " ", p.name, fmt::join(p.domain, ","));
  return fmt::format("{}: {}{}{}{} == {}", axiom.name, vars.empty() ? "" : "∀ ", vars,
                     vars.empty() ? "" : ". ", to_string(axiom.lhs), to_string(axiom.rhs));
}

std::vector<std::vector<std::int64_t>> parameter_assignments(const Axiom& axiom) {
  std::vector<std::vector<std::int64_t>> out{{}};
  for (const ParamVariable& p : axiom.param_variables) {
    std::vector<std::vector<std::int64_t>> next;
    for (const auto& prefix : out)
      for (std::int64_t v : p.domain) {
        next.push_back(prefix);
        next.back().push_back(v);
      }
    out = std::move(next);
  }
  return out;
}

namespace {

Term substitute(const Term& t, const Axiom& axiom, std::span<const std::int64_t> values) {
  if (t.is_variable()) return t;
  std::vector<Param> params;
  for (const Param& p : t.params()) {
    if (!p.is_var()) {
      params.push_back(p);
      continue;
    }
    std::size_t i = 0;
    while (axiom.param_variables[i].name != p.var) ++i;
    params.push_back(Param{values[i], {}});
  }
  std::vector<Term> args;
  for (const Term& a : t.args()) args.push_back(substitute(a, axiom, values));
  return Term::apply(t.op(), std::move(params), std::move(args));
}

}  // namespace

std::pair<Term, Term> instantiate(const Axiom& axiom, std::span<const std::int64_t> values) {
  if (values.size() != axiom.param_variables.size())
    throw std::invalid_argument(fmt::format("axiom {} has {} parameter variables, got {} values", axiom.name,
                                            axiom.param_variables.size(), values.size()));
  for (std::size_t i = 0; i < values.size(); ++i) {
    const auto& d = axiom.param_variables[i].domain;
    if (!std::binary_search(d.begin(), d.end(), values[i]))
      throw std::invalid_argument(fmt::format("axiom {}: {}={} is outside its domain {{{}}}", axiom.name,
                                              axiom.param_variables[i].name, values[i], fmt::join(d, ",")));
  }
  return {substitute(axiom.lhs, axiom, values), substitute(axiom.rhs, axiom, values)};
}

}  // namespace strata::search::subst
