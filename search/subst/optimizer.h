// Cost-based graph optimization with substitution rules: TASO/MetaFlow's backtracking search (docs/subst.md;
// TASO, SOSP 2019, §5, and Graph::optimize in src/core/ops.cc of jiazhihao/TASO@f11782c). A rule's source
// graph (its lhs terms, a DAG over input variables) is matched onto a models::Graph, replaced by its target
// graph built through the IR bridge, and the result re-checked by shape inference. Candidates are explored
// best-first by total predicted operator time; graphs up to alpha times the best cost are kept, so the search
// can pass through slightly worse graphs to reach better ones.
#pragma once

#include <array>
#include <compare>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "models/cost/cost_model.h"
#include "models/ir/graph.h"
#include "search/subst/ir_bridge.h"
#include "search/subst/min_gain.h"
#include "search/subst/rule.h"

namespace strata::search::subst {

// One place a rule applies: the matched source nodes (ascending ids) and the variable bindings.
struct Match {
  std::size_t rule = 0;  // index into the rule list
  std::vector<models::NodeId> nodes;
  std::vector<std::pair<std::string, models::ValueId>> bindings;  // rule input -> graph value, sorted by name
  friend auto operator<=>(const Match&, const Match&) = default;
};

// What matching needs to know about a graph, computed once per graph and shared by all rules: the rule
// operator of every node (from_ir; grouped convolutions have none, see optimizer.cc), consumers of every
// value, graph outputs, and the nodes of each rule operator.
// Who reads each value of a graph, and which values are graph outputs.
struct GraphUses {
  std::vector<std::vector<models::NodeId>> consumers;  // by value id, in node order
  std::vector<char> is_output;                         // by value id
  explicit GraphUses(const models::Graph& g);
};
struct MatchIndex : GraphUses {
  std::vector<std::optional<OpInstance>> instances;  // by node id
  std::vector<std::vector<models::NodeId>> by_op = std::vector<std::vector<models::NodeId>>(all_ops().size());
  explicit MatchIndex(const models::Graph& g);
};

// All matches of rule `rule_index` in g, ordered by their node lists. A match requires the operators and
// their parameters to agree (through from_ir), a variable occurring twice to bind one value, and every value
// produced by the matched nodes that is used outside them (or is a graph output) to be one of the rule's lhs
// roots.
std::vector<Match> find_matches(const models::Graph& g, const Rule& rule, std::size_t rule_index);
// The same with a prebuilt index of g (matching many rules against one graph).
std::vector<Match> find_matches(const models::Graph& g, const MatchIndex& index, const Rule& rule,
                                std::size_t rule_index);

// Applies a match: emits the rule's target graph, rewires the consumers of the lhs roots to the rhs values,
// removes dead nodes and rebuilds g in topological order with shape inference. nullopt when the target cannot
// be expressed on these shapes, the rewrite would create a cycle or shape inference rejects it. Node names
// of new nodes start with `name_prefix`.
std::optional<models::Graph> apply_match(const models::Graph& g, const Rule& rule, const Match& match,
                                         std::string_view name_prefix);

// Removes nodes none of whose outputs reach a graph output; source values are kept.
models::Graph remove_dead_nodes(const models::Graph& g);

// The start of every rebuilt graph: a graph named like g holding copies of g's source values (inputs,
// parameters, constants) in g's order. `map` is resized to g's values and maps each source to its copy, every
// other value to kNoValue.
models::Graph copy_sources(const models::Graph& g, std::vector<models::ValueId>& map);

// Per-node predicted times (seconds; 0 for folded nodes), which values are folded (weight-only), and the sum.
struct NodeCosts {
  std::vector<double> node;  // by node id
  std::vector<char> folded;  // by value id
  double total = 0;
};
NodeCosts node_costs(const models::Graph& g, const models::CostModel& cost);

// Sum of the cost model's per-node times (seconds), except nodes computed from parameters and constants only
// (folded once before inference, as TASO does).
double graph_cost(const models::Graph& g, const models::CostModel& cost);

// Hash independent of node order and of node/value names of activations: the sorted multiset of structural
// node hashes (operator, attributes, input hashes; sources hash by name and type).
std::uint64_t graph_hash(const models::Graph& g);

// A transformation outside the rule language (hand-written, like TASO's GraphXfers, search/subst/xfers.h):
// every place it applies to a graph, with the predicted cost change and a function that builds the rewritten
// graph from the graph the site was found in (called only if the search takes this candidate).
struct XferSite {
  std::string name;                   // transformation, e.g. "merge_gconv(8)"
  std::vector<models::NodeId> nodes;  // the nodes it replaces
  double delta = 0;                   // predicted cost change, seconds
  std::function<std::optional<models::Graph>(const models::Graph&)> apply;
};
using GraphXfer =
    std::function<std::vector<XferSite>(const models::Graph&, const NodeCosts&, const models::CostModel&)>;

// Readable listing of a graph: sources, then one line per node in order
// ("y = conv2d[activation=relu,...](x, w) : f32[1,64,56,56]"), then the outputs.
std::string graph_listing(const models::Graph& g);

struct OptimizerOptions {
  double alpha = 1.05;           // relaxation: keep candidates costing less than alpha * best
  int budget = 1000;             // number of graphs taken from the priority queue
  double max_op_ratio = 2.0;     // operator-count cap relative to the input graph
  std::vector<GraphXfer> xfers;  // hand-written transformations applied alongside the rules
  std::function<void(std::string_view)> progress;  // optional, called now and then
  // Keep the graphs along the path to the best graph (OptimizeResult::path_graphs), for measuring every
  // step (`strata validate graphs`). Explored graphs are then not released, so memory grows with the budget
  // (Inception-v3: about 500 MB for 1,000 graphs); the search itself is unchanged.
  bool record_path = false;
  // The input is returned unless the best graph found saves at least this fraction of its predicted time
  // (search/subst/min_gain.h).
  double min_gain = kDefaultMinGain;
};

struct AppliedSubstitution {
  std::string rule;                // rule name
  std::vector<std::string> nodes;  // names of the matched nodes in the graph it was applied to
};

struct OptimizeResult {
  models::Graph graph;
  double cost_before = 0;  // seconds
  double cost_after = 0;
  std::vector<AppliedSubstitution> applied;  // path from the input to the best graph
  // With OptimizerOptions::record_path: the graph after each step of `applied` (same length; the last is
  // `graph`); empty otherwise.
  std::vector<models::Graph> path_graphs;
  // Set when the best graph found (predicted this many seconds) saved less than OptimizerOptions::min_gain:
  // `graph` is then the input, `applied` and `path_graphs` are empty and cost_after == cost_before.
  std::optional<double> declined_cost;
  int explored = 0;   // distinct graphs taken from the queue and expanded
  int generated = 0;  // candidates enqueued (materialized only when popped)
  double seconds = 0;
};

OptimizeResult optimize(const models::Graph& input, std::span<const Rule> rules,
                        const models::CostModel& cost, const OptimizerOptions& options = {});

}  // namespace strata::search::subst
