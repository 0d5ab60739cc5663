// Canonicalization passes over synthesized programs: which instruction sequences count as the same program.
// See docs/reduce.md ("Program counts: 93 literal vs the paper's 47").
#pragma once

#include <vector>

#include "search/reduce/program.h"
#include "search/reduce/synthesizer.h"

namespace strata::search::reduce {

// Keeps one representative (the first in input order) of every equivalence class under `c`; the input
// order is preserved. kNone returns the input.
std::vector<Program> canonicalize(const std::vector<Program>& programs, const SynthesisHierarchy& h,
                                  Canonicalization c);

}  // namespace strata::search::reduce
