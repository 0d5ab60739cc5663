// Validation of the verifier's axioms against the reference executor (TASO §3.3, validate_axioms.py): every
// axiom is instantiated on every assignment of its parameter variables and on small shapes of its tensor
// variables (every dimension in 1..max_dim), both sides are type-checked with the IR's shape rules and, where
// both type-check, evaluated on random inputs in the prime field (exact) and in double precision, and
// compared — values, shapes and split histories (term_eval.h). An axiom is valid when no instance differs and
// at least one instance type-checks; a wrong axiom gets a concrete counter-example.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "search/subst/axioms.h"
#include "search/subst/rule.h"

namespace strata::search::subst {

struct AxiomValidationOptions {
  std::int64_t max_dim = 3;  // every tensor dimension (and the size of free constants) in 1..max_dim
  // Per parameter assignment: at most this many well-typed instances are evaluated and at most this many
  // shape combinations type-checked; shapes are tried in a seeded random order, so a capped run is a
  // uniform-ish sample rather than the smallest shapes only.
  std::size_t max_instances = 100;
  std::size_t max_shape_trials = 20000;
  std::uint64_t seed = 1;
  double tolerance = 1e-9;  // double precision: |lhs - rhs| <= tolerance * max(1, max |lhs|)
  int jobs = 0;             // worker threads; 0 = all hardware threads
};

struct AxiomCounterExample {
  std::vector<std::int64_t> params;                   // in the order of Axiom::param_variables
  std::vector<std::pair<std::string, Shape>> shapes;  // tensor variables
  std::int64_t free_constant_size = 0;                // 0: the axiom has no constant
  std::string what;                                   // "values differ in the prime field at element 3", ...
};

struct AxiomValidation {
  std::string name;
  std::size_t assignments = 0;        // parameter assignments
  std::size_t typed_assignments = 0;  // ... with at least one well-typed instance
  std::size_t instances = 0;          // well-typed instances evaluated
  std::size_t failures = 0;           // instances whose sides differ
  bool exhaustive = true;             // no cap was hit: every shape combination was considered
  std::optional<AxiomCounterExample> counter_example;  // the first failure, in a deterministic order
  [[nodiscard]] bool valid() const { return failures == 0 && instances > 0; }
};

// Validates each axiom; TBB-parallel over (axiom, parameter assignment) and deterministic for a given seed.
std::vector<AxiomValidation> validate_axioms(std::span<const Axiom> axioms,
                                             const AxiomValidationOptions& options);

// A counter-example to `lhs == rhs` (terms with literal parameters only, e.g. one equation of a rule) on
// small shapes of its variables, searched like an axiom instance; with values_only, instances whose sides
// differ in shape or split history are skipped rather than counted (a rewrite never applies there).
std::optional<AxiomCounterExample> find_counter_example(const Term& lhs, const Term& rhs,
                                                        const AxiomValidationOptions& options,
                                                        bool values_only);

// "sx=2 sy=1 pad=0; x: 1x2x2x1, y: 1x2x1x1; constants n=2: values differ ..."
std::string format_counter_example(const AxiomCounterExample& ce, const Axiom& axiom);

}  // namespace strata::search::subst
