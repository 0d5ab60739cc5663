// Checks of substitution rules by evaluation with the reference executor (term_eval.h), before and beside the
// Z3 proof:
//  - shape checking: on the rule's declared input shapes both sides of every equation must type-check under
//    the IR's shape rules and have the same shape;
//  - refutation: both sides evaluated in the prime field on random inputs, at the declared shapes and at a
//  few
//    other shapes that keep the rule well-typed. Different values prove the sides different functions (no
//    probability involved in this direction), so a refuted rule can be rejected without asking Z3. Agreement
//    proves nothing: acceptance still needs a Z3 proof.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "search/subst/rule.h"

namespace strata::search::subst {

// Why the rule is not well-typed on its declared shapes ("output 1: target does not type-check: ..."), or
// nullopt when it is, or when some input shape is unknown (nothing to check).
std::optional<std::string> rule_shape_error(const Rule& rule);

struct RefuteOptions {
  std::uint64_t seed = 1;
  // Random input sets per shape set; one already misses a difference only with probability <= degree / p.
  int samples = 1;
  // Also try the declared shapes with their sizes changed consistently (rule_check.cc: kOtherSizes).
  bool other_shapes = true;
  // Then search small shapes (every dimension 1..max_dim) on which both sides type-check, like the axiom
  // validation, at most small_shape_instances per equation; 0 = off. Off by default: it also refutes rules
  // that hold only for the convolution grouping of their declared shapes, which Z3 proves from TASO's axioms
  // #19/#24 (themselves false for grouped weights, docs/subst.md).
  std::size_t small_shape_instances = 0;
  std::int64_t max_dim = 3;
};

// Sides that evaluate differently. The prime field models relu and max-pooling as fixed pseudo-random
// functions, so a difference there shows the equation is not entailed by the axioms; it is false over the
// reals only when double precision also differs (relu(relu(x)) = relu(x) is true but differs in the field).
struct Refutation {
  std::string
      reason;  // "output 0 at input_1: 2x4, ...: values differ in the prime field at element 3 ...; ..."
  bool false_over_reals = true;
};

// A counter-example when evaluation shows the sides differ, nullopt otherwise (including unknown shapes and
// ill-typed rules).
std::optional<Refutation> refute_by_evaluation(const Rule& rule, const RefuteOptions& options = {});

}  // namespace strata::search::subst
