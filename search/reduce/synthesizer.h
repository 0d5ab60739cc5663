// Syntax-guided synthesis of reduction programs (P2 section 3.5): enumerate programs of increasing size over
// the distinct groupings of a synthesis hierarchy x the five collectives, discard a prefix at its first
// invalid step (chunk-state rules, semantics.h), and keep the programs that reach the all-reduce state.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "search/reduce/placement.h"
#include "search/reduce/program.h"

namespace strata::search::reduce {

// Which programs count as distinct (docs/reduce.md, "Program counts"). On a two-level hierarchy the literal
// rules give 93 programs; P2 reports 47 with an undescribed canonicalization that none of these reproduces.
enum class Canonicalization {
  kNone,           // the literal rules: every valid instruction sequence (93 on a two-level hierarchy)
  kMasterMinimal,  // drop programs that use Master(e') while devices outside its groups still hold data (51)
  kCommute,        // identify sequences that differ by swapping adjacent steps that commute on the state (83)
  kTrajectory,     // identify sequences that pass through the same states (e.g. the last Broadcast from one
                   // root or from every node's root after a Master step) (64)
};
std::string_view canonicalization_name(Canonicalization c);
inline constexpr std::string_view kCanonicalizationNames = "none, master-minimal, commute, trajectory";
std::optional<Canonicalization> parse_canonicalization(std::string_view name);

struct SynthesisOptions {
  int max_size = 5;  // instructions per program (P2's bound)
  Canonicalization canonicalization = Canonicalization::kNone;
};

struct SynthesisResult {
  std::vector<Program> programs;  // by size, then by instruction order of distinct_groupings x collectives
  std::vector<std::int64_t> count_by_size;  // index = size (0 unused)
  std::int64_t prefixes_explored = 0;       // valid prefixes visited (after pruning)
  std::int64_t steps_rejected = 0;          // instruction applications refused by a precondition
};

SynthesisResult synthesize(const SynthesisHierarchy& h, const SynthesisOptions& options = {});

// The synthesis hierarchy (d) of P2 Table 1: for every hardware level, the product of the reduction axes'
// factors there; levels whose product is 1 are dropped; named after the hardware levels. `hw_level`, when
// given, maps each placement level to the hardware level it belongs to (sub-levels of a split level collapse
// together and take its name from `hw_names`); empty = every placement level is its own hardware level.
SynthesisHierarchy synthesis_hierarchy(const Placement& placement, std::span<const int> reduce_axes,
                                       std::span<const int> hw_level = {},
                                       std::span<const std::string> hw_names = {});

// Validity lemmas B.4-B.6 of P2 App. B as a static filter: on a hierarchy whose levels are flagged as
// reduction factors or not, (slice, form) can only be valid if every level its groups span (B.4, B.5) or,
// for Master, every level below the form's level (B.6) is a reduction factor or has cardinality 1. On
// hierarchy (d) every level is a reduction factor and the filter admits everything.
bool lemma_admits(std::span<const int> cardinalities, const std::vector<bool>& is_reduction_level, int slice,
                  Form form);

}  // namespace strata::search::reduce
