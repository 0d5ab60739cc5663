// Shape inference and evaluation of rule terms with the operator table of models/ (models/ir/op_def.h): each
// operator application is mapped to its IR operator by the IR bridge (to_ir), type-checked by the OpDef's
// shape rule and run by its reference kernel, in double precision or in the prime field (ModP). The
// verifier's axiom validation, rule shape checking and fast refutation all evaluate terms here, so the rule
// vocabulary has one semantics: the executor's.
//
// Split semantics follow TASO's split trees (SOSP 2019 Fig. 3; `SplitInfo` in include/taso/ops.h): every axis
// of a value carries the history of the concatenations along it; split_0/split_1 undo the most recent one.
// The history passes through element-wise operators (when both operands agree), transpose (axes swapped),
// matmul (rows from the left operand, columns from the right), conv2d (batch from the input, output channels
// from the weight's axis 0) and pooling (batch and channels).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "models/ir/graph.h"
#include "models/ir/modp.h"
#include "search/subst/rule.h"
#include "search/subst/term.h"

namespace strata::search::subst {

// The concatenation history of one axis: the most recent concatenation (the extent of its first part) and the
// histories of its two parts; nullptr = no history.
struct SplitTree {
  std::int64_t first_size = 0;
  std::shared_ptr<const SplitTree> first, second;
};
using SplitTreePtr = std::shared_ptr<const SplitTree>;

struct TermType {
  Shape shape;
  std::vector<SplitTreePtr> split;  // one per axis; nullptr = no concatenation history
};

template <class T>
struct TermValue {
  TermType type;
  std::vector<T> data;  // row-major; empty when only shapes were inferred
};

// A term that does not type-check; the message names the innermost offending subterm and why.
class TermTypeError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// Constants (Iconv, Cpool, Imatmul, Iewmul) take their size from their consumer where it determines it
// (matmul, ewadd/ewmul, concat: the other operand; conv2d weight: the input's channels). Elsewhere (at the
// root, under transpose or pooling) they get `free_constant_size`: Imatmul and Iewmul n×n, Iconv n×n×kh×kw,
// Cpool n×1×kh×kw.
struct TermEvalOptions {
  std::int64_t free_constant_size = 4;
};

template <class T>
using TermBindings = std::map<std::string, TermValue<T>, std::less<>>;

// Shape of `term` when its variables have the given shapes, or why it does not type-check. The try_ forms
// are for loops over many candidate shapes (axiom validation, refutation); the others throw TermTypeError.
models::TryResult<TermType> try_infer_type(const Term& term,
                                           const std::map<std::string, Shape, std::less<>>& shapes,
                                           const TermEvalOptions& options = {});
TermType infer_type(const Term& term, const std::map<std::string, Shape, std::less<>>& shapes,
                    const TermEvalOptions& options = {});

// Value of `term` on the given variable values, or why it does not type-check.
template <class T>
models::TryResult<TermValue<T>> try_evaluate(const Term& term, const TermBindings<T>& vars,
                                             const TermEvalOptions& options = {});
template <class T>
TermValue<T> evaluate(const Term& term, const TermBindings<T>& vars, const TermEvalOptions& options = {});

// Random values for the given variables (models::random_values keyed by seed and variable name): doubles in
// [-1, 1], residues uniform in the field. Variables have no split history.
template <class T>
TermBindings<T> random_bindings(std::span<const std::pair<std::string, Shape>> shapes, std::uint64_t seed);

// Why two values differ — shapes, then elements (exactly in the prime field; beyond
// tolerance * max(1, max |a|) in double precision) — or nullopt when they agree.
std::optional<std::string> value_difference(const TermValue<models::ModP>& a,
                                            const TermValue<models::ModP>& b);
std::optional<std::string> value_difference(const TermValue<double>& a, const TermValue<double>& b,
                                            double tolerance);
// Whether two values have the same concatenation history on every axis (split_0/split_1 behave alike).
bool same_split_history(const TermType& a, const TermType& b);

extern template models::TryResult<TermValue<double>> try_evaluate(const Term&, const TermBindings<double>&,
                                                                  const TermEvalOptions&);
extern template models::TryResult<TermValue<models::ModP>> try_evaluate(const Term&,
                                                                        const TermBindings<models::ModP>&,
                                                                        const TermEvalOptions&);
extern template TermValue<double> evaluate(const Term&, const TermBindings<double>&, const TermEvalOptions&);
extern template TermValue<models::ModP> evaluate(const Term&, const TermBindings<models::ModP>&,
                                                 const TermEvalOptions&);

}  // namespace strata::search::subst
