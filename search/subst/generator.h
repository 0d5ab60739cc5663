// Automatic generation of candidate substitutions (TASO, Jia et al., SOSP 2019, §2; docs/subst.md
// "Generator"): enumerate every acyclic graph of up to N operator instances over TASO's fixed input tensors,
// in TASO's search space (its argument rules and tensor metadata) but each graph once; fingerprint each by
// memoized evaluation in the IR's prime field (fingerprint.h) with an output-order-independent hash; pair
// graphs with equal fingerprints around two centres per class; prune (common subgraph / supergraph, exact
// duplicates, input renaming, unrelated equations) and confirm in double precision. TBB-parallel over
// subtrees; the output does not depend on the number of threads. Memory: bounded value stores plus 16 bytes
// per enumerated graph.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "search/subst/ir_bridge.h"
#include "search/subst/rule.h"

namespace strata::search::subst {

// Operator sets by name, comma-separated: ewadd, ewmul, smul, matmul, transpose (moves data),
// transpose_layout (TASO's shuffle=false transpose: permutes strides; instance {transpose, {0}}), relu,
// conv2d (stride 1, SAME, no activation), conv2d_relu (fused ReLU), poolavg, poolmax (3x3, stride 1, SAME),
// concat (axes 0 and 1), split (axes 0 and 1), enlarge (to 3x3), constants (Imatmul, Iewmul, Iconv 3x3, Cpool
// 3x3), and "taso" for all of them (the instances of TASO's artifact generator, src/generator/generator.cc
// of jiazhihao/sosp19ae@6946461). Throws std::invalid_argument naming a bad entry.
std::vector<OpInstance> parse_operator_set(std::string_view spec);
// The symbols outside TASO's vocabulary that parse_operator_set accepts by name (parameterless symbols of
// operators declaring a rule form), comma-separated: "sigmoid, tanh".
std::string extra_operator_names();

struct GeneratorOptions {
  std::vector<OpInstance> ops;
  int max_ops = 3;  // 1..4
  // Largest number of unconsumed outputs (mapped outputs of a rule) of a recorded graph. TASO's sets have at
  // most 2; graphs with more are still enumerated as prefixes, but not fingerprinted.
  int max_outputs = 2;
  std::uint64_t seed = 1;   // random inputs of the fingerprints and of the floating-point confirmation
  double tolerance = 1e-5;  // relative, floating-point confirmation
  // Drop multi-output rules made of unrelated equations (has_unrelated_equations: each part is a smaller
  // rule). TASO keeps them; false reproduces that (e.g. for coverage against TASO's sets).
  bool prune_unrelated = true;
  std::function<void(std::string_view)> progress;  // one line per stage (stderr in the CLI)
};

// Counts after each stage, in pipeline order.
struct GeneratorStats {
  std::uint64_t graphs = 0;                 // enumerated graphs (after the in-search rejections)
  std::uint64_t evaluations = 0;            // operator evaluations (distinct terms; the rest are memo hits)
  std::uint64_t fingerprints = 0;           // distinct fingerprints
  std::uint64_t candidates = 0;             // pairs with equal fingerprints (star around each representative)
  std::uint64_t after_common_subgraph = 0;  // after common-subgraph / supergraph pruning
  std::uint64_t after_duplicates = 0;       // after removing exact duplicates
  std::uint64_t after_renaming = 0;         // after removing rules equal up to input renaming
  std::uint64_t after_unrelated = 0;        // after removing conjunctions of unrelated equations
  std::uint64_t float_rejected = 0;         // rules the floating-point test rejected (rules written = rest)
  double seconds = 0;
  std::size_t peak_rss_kib = 0;  // of the whole process (VmHWM)
};

struct GeneratorResult {
  std::vector<Rule> rules;
  GeneratorStats stats;
};

GeneratorResult generate_rules(const GeneratorOptions& options);

// A multi-output rule whose equations fall into groups sharing no operator on either side (in particular
// groups over separate inputs) is the conjunction of smaller rules: each group is itself an equivalence,
// applicable on its own; a rule is needed only where one side shares a node between outputs (e.g. the split
// of one merged matmul).
bool has_unrelated_equations(const Rule& rule);

}  // namespace strata::search::subst
