// The operator axioms under which substitutions are verified: TASO's 44 axioms and 3 lemmas
// (verify/verify.py of jiazhihao/TASO@f11782c; TASO, SOSP 2019, §3), declared once each in a readable table.
// Every entry is an equation between terms with universally quantified tensor and parameter variables; a
// parameter variable ranges over the verified domain of every operator position it occupies (operators.h).
// Because axioms are ordinary terms, they can be instantiated on concrete parameters and shapes and evaluated
// by a reference executor (axiom validation, as TASO's verify/validate_axioms.py does).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "search/subst/term.h"

namespace strata::search::subst {

enum class AxiomKind { kAxiom, kLemma };

// One row of an axiom table, as written in the source.
struct AxiomSpec {
  std::string_view name;
  AxiomKind kind;
  std::string_view variables;  // the quantified variables, space separated (tensors and parameters)
  std::string_view equation;  // "LHS == RHS" in rule-file term syntax; identifiers in parameter positions are
                              // parameter variables
  std::string_view note;      // what it says, in TASO's notation (verify/verify.py)
};

struct ParamVariable {
  std::string name;
  std::vector<std::int64_t> domain;  // sorted; the intersection of the domains of all positions it occupies
  friend bool operator==(const ParamVariable&, const ParamVariable&) = default;
};

// A parsed, checked axiom.
struct Axiom {
  std::string name;
  AxiomKind kind = AxiomKind::kAxiom;
  std::vector<std::string> tensor_variables;  // in order of first occurrence
  std::vector<ParamVariable> param_variables;
  Term lhs;
  Term rhs;
  std::string note;
};

// Parses a table row; throws ConfigError naming the axiom when the equation does not parse, when the declared
// variables differ from those used, or when a parameter variable's domain is empty.
Axiom parse_axiom(const AxiomSpec& spec);

// TASO's 44 axioms followed by its 3 lemmas, in TASO HEAD order.
std::span<const AxiomSpec> taso_axiom_table();
std::vector<Axiom> taso_axioms();
// The axioms strata verifies under: TASO's (above), then the axioms each operator outside TASO's vocabulary
// declares with its rule form (models/ir/rule_form.h: RuleForm::axioms), in the operator table's order.
std::vector<Axiom> verification_axioms();

// Properties TASO's authors wrote down and then rejected as wrong (kept in verify.py as comments): concat
// associativity (conflicts with split semantics) and the general grouped-convolution concat rule. Adding one
// of them lets the verifier "prove" known-false rules; used to show the soundness tests can fail.
std::span<const AxiomSpec> taso_rejected_axiom_table();

std::string format_axiom(const Axiom& axiom);

// Every assignment of the parameter variables (values in the order of param_variables), as the cartesian
// product of their domains in lexicographic order: the instances an axiom validation has to evaluate.
std::vector<std::vector<std::int64_t>> parameter_assignments(const Axiom& axiom);

// The axiom's two sides with its parameter variables replaced by `values` (in the order of param_variables);
// tensor variables stay variables. Throws std::invalid_argument on a wrong count or a value outside a domain.
std::pair<Term, Term> instantiate(
    const Axiom& axiom,
    std::span<const std::int64_t> values);  // "name: forall x y (sx in {1,2}). LHS == RHS"

}  // namespace strata::search::subst
