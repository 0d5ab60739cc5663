// Building the arguments of a rule's target term, shared by the backtracking optimizer (into an IR graph) and
// equality saturation (into an e-graph). TASO's constants (Iconv, Cpool, Imatmul, Iewmul) have no shape of
// their own: a constant argument takes its shape from its sibling under a binary operator, or, under enlarge,
// from the context the enlarge itself was given. So non-constant arguments are built first.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "search/subst/operators.h"
#include "search/subst/term.h"

namespace strata::search::subst {

// Where a constant of a target term gets its shape. Sibling is the builder's handle of a built argument.
template <class Sibling>
struct ConstantContextOf {
  Op parent = Op::kEwadd;
  std::size_t arg = 0;
  Sibling sibling{};
};

// Builds t's arguments into `built` (one slot per argument, initialised to `unbuilt`), non-constant arguments
// first, then constants and enlarge arguments with their context. build_arg(argument term, context) returns
// the built handle or nullopt; the first nullopt stops the walk and returns false.
template <class Sibling, class BuildArg>
bool build_target_args(const Term& t, const std::optional<ConstantContextOf<Sibling>>& ctx,
                       std::vector<Sibling>& built, const Sibling& unbuilt, BuildArg&& build_arg) {
  const auto& args = t.args();
  built.assign(args.size(), unbuilt);
  for (int pass = 0; pass < 2; ++pass) {
    for (std::size_t i = 0; i < args.size(); ++i) {
      const bool constant = !args[i].is_variable() && op_info(args[i].op()).tensor_args == 0;
      const bool through_enlarge = !args[i].is_variable() && args[i].op() == Op::kEnlarge;
      if ((pass == 0) == (constant || through_enlarge)) continue;
      std::optional<ConstantContextOf<Sibling>> child;
      if (constant || through_enlarge) {
        if (t.op() == Op::kEnlarge)
          child = ctx;
        else if (args.size() == 2)
          child = ConstantContextOf<Sibling>{t.op(), i, built[1 - i]};
      }
      std::optional<Sibling> b = build_arg(args[i], child);
      if (!b) return false;
      built[i] = *b;
    }
  }
  return true;
}

}  // namespace strata::search::subst
