// Comparing rule sets modulo renaming of inputs (docs/subst.md): two rules are the same when a bijection
// between their inputs that preserves shapes maps one onto the other, possibly with the two sides swapped
// (orientation) and the mapped outputs reordered. Decided exactly through a canonical form.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "search/subst/rule.h"

namespace strata::search::subst {

struct CanonicalOptions {
  bool match_shapes = true;  // renamings must preserve input shapes (unknown shapes form their own class)
  bool modulo_orientation = true;  // SOURCE == TARGET equals TARGET == SOURCE
};

// The lexicographically smallest serialisation over all orientations and output orders, with inputs named by
// order of first occurrence. Equal canonical forms <=> equal rules modulo renaming (and orientation/order).
std::string canonical_form(const Rule& rule, const CanonicalOptions& options = {});
// The same for a single equation of `rule` (shapes from rule's inputs).
std::string canonical_form(const Equation& equation, const Rule& rule, const CanonicalOptions& options = {});

struct CoverageReport {
  CanonicalOptions options;
  std::size_t a_rules = 0, b_rules = 0;
  std::size_t a_distinct = 0, b_distinct = 0;  // distinct canonical forms in each set
  std::size_t a_in_b = 0;                      // rules of A whose form occurs in B
  std::size_t b_in_a = 0;                      // rules of B whose form occurs in A
  std::vector<std::size_t> only_in_a;          // indices into A, in order
  std::vector<std::size_t> only_in_b;          // indices into B, in order
  // The same per equation (a two-output rule contributes two equations).
  std::size_t a_equations = 0, b_equations = 0, a_equations_in_b = 0, b_equations_in_a = 0;
};

// Shapes are matched only when every input of both sets has a known shape (see CoverageReport::options).
CoverageReport compare_rule_sets(std::span<const Rule> a, std::span<const Rule> b,
                                 bool modulo_orientation = true);

}  // namespace strata::search::subst
