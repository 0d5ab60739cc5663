// Internals of the graph optimizer shared by its files: rule-lhs matching (optimizer_match.cc), building a
// rule's target graph (optimizer_rewrite.cc), cost prediction (optimizer_cost.cc) and the search driver
// (optimizer.cc). Not part of the public interface.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "search/subst/optimizer.h"
#include "search/subst/target_args.h"
#include "util/hash.h"

namespace strata::search::subst::optimizer_detail {

using models::Graph;
using models::Node;
using models::NodeId;
using models::ValueId;

// The lhs of a rule with every distinct subterm (by text) and variable numbered once, so matching keeps its
// state in flat vectors instead of maps keyed by printed terms.
struct LhsIndex {
  std::unordered_map<const Term*, int> term_id;  // applications -> subterm id; variables -> variable id
  std::vector<std::string> var_names;
  int num_terms = 0;

  explicit LhsIndex(const Rule& rule);
};

struct MatchState {
  std::vector<ValueId> vars;  // by variable id; kNoValue = unbound
  std::vector<ValueId> apps;  // by subterm id: the value it matched
};

class Matcher {
 public:
  // index may be null: operators are then derived per visited node (one-off matches).
  Matcher(const Graph& g, const MatchIndex* index, const LhsIndex& lhs) : g_(g), index_(index), lhs_(lhs) {}
  bool match(const Term& t, ValueId v, MatchState& st) const;

  MatchState empty() const {
    return {std::vector<ValueId>(lhs_.var_names.size(), models::kNoValue),
            std::vector<ValueId>(static_cast<std::size_t>(lhs_.num_terms), models::kNoValue)};
  }

 private:
  const Graph& g_;
  const MatchIndex* index_;
  const LhsIndex& lhs_;
};

// Whether v can be the value of a term with this root operator (cheap pre-filter).
bool root_candidate(const Graph& g, const Term& t, ValueId v);

// The matches of a rule whose lhs is already indexed.
std::vector<Match> find_matches_with(const Graph& g, const MatchIndex& index, const LhsIndex& lhs,
                                     const Rule& rule, std::size_t rule_index);

// A value of the graph being built: an existing value or output `output` of new node `node`.
struct Ref {
  ValueId old = models::kNoValue;
  int node = -1;
  int output = 0;
};

// How a nullary constant of the target graph takes its shape from its context (as in TASO's generator,
// constants are sized by the operator that consumes them).
using ConstantContext = ConstantContextOf<Ref>;

struct NewNode {
  const Term* term = nullptr;
  std::vector<Ref> args;
  std::optional<ConstantContext> context;
};

class TargetBuilder {
 public:
  TargetBuilder(const std::map<std::string, ValueId>& vars) : vars_(vars) {}

  // nullopt: a variable of the rhs that the lhs does not bind.
  std::optional<Ref> build(const Term& t, std::optional<ConstantContext> ctx = std::nullopt);

  std::vector<NewNode>& nodes() { return nodes_; }

 private:
  const std::map<std::string, ValueId>& vars_;
  std::map<std::string, int> memo_;
  std::vector<NewNode> nodes_;
};

// Emits one node of a rule's target graph into `out` (inputs already there); nullopt when the rule operator
// cannot be expressed on these shapes or shape inference rejects it (Graph::try_add_node; nothing is added).
std::optional<std::vector<ValueId>> emit_new_node(Graph& out, const NewNode& nn, std::vector<ValueId> ins,
                                                  ValueId sibling, const std::string& name_prefix);

enum class Estimate : std::uint8_t { kOk, kRejected, kUnknown };

// The predicted time of a rule's target graph alone, built on stand-ins for the bound values (weights and
// weight-only values as parameters, so they fold). The rewritten graph's cost is then the current cost minus
// the matched nodes plus this, without rebuilding the graph; dead producers of dropped variables only make
// the real graph cheaper. `unknown` when a split point lies outside the target graph.
std::pair<Estimate, double> target_cost(const Graph& g, const NodeCosts& costs, const Rule& rule,
                                        const Match& match, const models::CostModel& cost,
                                        std::size_t& new_nodes);

// The optimizer's hash step: util::hash_combine followed by a partial splitmix64-style finalizer (shifts 31
// and 29, one multiply). Its values key the search's duplicate detection and memo, so they must not change.
inline std::uint64_t mix(std::uint64_t h, std::uint64_t x) {
  h = util::hash_combine(h, x);
  h ^= h >> 31;
  h *= 0xbf58476d1ce4e5b9ULL;
  return h ^ (h >> 29);
}

}  // namespace strata::search::subst::optimizer_detail
