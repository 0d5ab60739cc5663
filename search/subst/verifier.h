// Proves substitution rules from operator axioms with Z3 (TASO §3, docs/subst.md). Operators are
// uninterpreted functions over one tensor sort with integer parameters; a rule is proved when, for every
// mapped output, the axioms entail LHS = RHS (Z3 answers unsat for axioms ∧ LHS ≠ RHS within the per-query
// timeout). Anything else — a counter-model, a timeout, a parameter outside the axioms' verified domain —
// leaves the rule unproved, so the verifier is sound as long as the axioms are.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "search/subst/axioms.h"
#include "search/subst/rule.h"
#include "search/subst/rule_check.h"

namespace strata::search::subst {

enum class VerifyStatus {
  kProved,     // every equation entailed by the axioms
  kFalse,      // an equation differs on concrete random inputs (reason "evaluation: ..."): a counter-example
  kNotProved,  // not entailed within the timeout: Z3 timed out or gave up ("unknown"), or found a model of
               // the axioms in which it fails ("not entailed"; the axioms are not complete, so the rule may
               // be true)
  kInvalid,    // outside the verifier's scope (ill-typed, or a parameter outside its verified domain)
};
std::string_view to_string(VerifyStatus status);

struct VerifyOptions {
  // Per query (one query per mapped output). The slowest proof of TASO's 820 rules takes 0.09 s (0.4 s on a
  // loaded machine); rules false at their shapes are refuted before Z3, so only true-but-unprovable rules pay
  // the timeout. TASO's artifact used 10 s.
  unsigned timeout_ms = 2000;
  int jobs = 0;  // worker threads; 0 = all hardware threads
  // Extra Z3 solver parameters (name, value), e.g. {"mbqi", "false"}; values "true"/"false" are booleans,
  // unsigned integers are numbers, anything else a string.
  std::vector<std::pair<std::string, std::string>> z3_params;
  // Before Z3 (rule_check.h), for rules whose input shapes are known: an equation whose sides do not
  // type-check or differ in shape makes the rule `invalid`; sides that evaluate differently on random
  // prime-field inputs make it `refuted` without a Z3 query. Both only reject, so soundness does not depend
  // on them.
  bool check_shapes = true;
  bool refute_by_evaluation = true;
  RefuteOptions refute;
  // false: stop after the evaluation checks; rules they do not reject are `kNotProved` ("not refuted").
  bool run_z3 = true;
};

struct EquationResult {
  VerifyStatus status = VerifyStatus::kNotProved;
  std::string reason;  // empty when proved; Z3's reason otherwise ("timeout", "counter-model", ...)
  double seconds = 0;
};

struct RuleResult {
  VerifyStatus status = VerifyStatus::kNotProved;  // proved only when every equation is
  std::string reason;  // of the first unproved equation, prefixed by its output number
  double seconds = 0;
  std::vector<EquationResult> equations;
};

// Called once per finished rule, serialised (never concurrently); `done` counts finished rules.
using VerifyProgress =
    std::function<void(std::size_t done, std::size_t total, std::size_t index, const RuleResult&)>;

// Verifies all rules in parallel, one TBB task and one Z3 context per rule; results are in rule order and do
// not depend on `jobs`.
std::vector<RuleResult> verify_rules(std::span<const Rule> rules, std::span<const Axiom> axioms,
                                     const VerifyOptions& options, const VerifyProgress& progress = {});

}  // namespace strata::search::subst
