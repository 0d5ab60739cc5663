// Equality saturation: e-graph invariants (hash-consing, congruence restored by rebuild, type analysis),
// e-matching against a brute-force enumeration, extraction that is numerically equal to its input, a
// hand-derived optimum that eqsat must reach (and the backtracking search must not beat), determinism.
#include <cmath>
#include <functional>
#include <set>

#include <gtest/gtest.h>
#include <tbb/task_arena.h>

#include "hw/gpu_spec.h"
#include "models/exec/executor.h"
#include "search/subst/egraph.h"
#include "search/subst/eqsat.h"
#include "search/subst/optimizer.h"
#include "search/subst/output_check.h"
#include "search/subst/rule.h"

namespace strata::search::subst {
namespace {

using models::Graph;
using models::TensorType;

models::CostModel a100() {
  return models::CostModel(*hw::find_gpu("a100-sxm4-80gb"));
}

models::Value source(const char* name, models::Shape shape,
                     models::ValueKind kind = models::ValueKind::kInput) {
  models::Value v;
  v.name = name;
  v.type = TensorType{std::move(shape)};
  v.kind = kind;
  return v;
}

// TASO's shipped rules 24 (ewadd reassociation), 64 (conv + relu fusion) and 77 (two matmuls sharing an
// input merged through a weight concatenation).
const char* kRules =
    "24\tewadd(input_3,ewadd(input_1,input_2)) == ewadd(input_2,ewadd(input_1,input_3))\n"
    "64\trelu(conv2d(1,1,0,0,input_7,input_10)) == conv2d(1,1,0,2,input_7,input_10)\n"
    "77\tmatmul(input_1,input_4) == split_0(1,matmul(input_1,concat(1,input_4,input_5)))\n"
    "77\tmatmul(input_1,input_5) == split_1(1,matmul(input_1,concat(1,input_4,input_5)))\n";

std::vector<Rule> rules() {
  return parse_taso_equations(kRules, "test", TasoShapes::kUnknown);
}

double max_abs_difference(const Graph& a, const Graph& b) {
  // The optimizers' check (search/subst/output_check.h); +inf for a NaN, infinity or changed shape.
  return check_same_function(a, b, {.seed = 7}).max_abs;
}

TEST(EGraph, HashConsingGivesOneClassPerDistinctNode) {
  EGraph eg;
  const auto a = source("a", {4, 4});
  const ClassId ca = eg.add(ENode{eg.source_signature(a), 0, {}});
  const auto r1 = eg.add_op("relu", {}, std::vector<ClassId>{ca});
  const std::size_t nodes = eg.num_nodes();
  const auto r2 = eg.add_op("relu", {}, std::vector<ClassId>{ca});
  ASSERT_TRUE(r1 && r2);
  EXPECT_EQ(*r1, *r2);
  EXPECT_EQ(eg.num_nodes(), nodes);
  EXPECT_EQ(eg.num_classes(), 2u);
  EXPECT_EQ(eg.eclass(*r1).type, (TensorType{{4, 4}}));
  // Shape inference rejects a matmul of 4x4 by 3x3.
  const auto b = source("b", {3, 3});
  const ClassId cb = eg.add(ENode{eg.source_signature(b), 0, {}});
  EXPECT_FALSE(eg.add_op("matmul", {}, std::vector<ClassId>{ca, cb}));
}

TEST(EGraph, RebuildRestoresCongruence) {
  EGraph eg;
  const ClassId a = eg.add(ENode{eg.source_signature(source("a", {4, 4})), 0, {}});
  const ClassId b = eg.add(ENode{eg.source_signature(source("b", {4, 4})), 0, {}});
  const ClassId fa = *eg.add_op("relu", {}, std::vector<ClassId>{a});
  const ClassId fb = *eg.add_op("relu", {}, std::vector<ClassId>{b});
  const ClassId gfa = *eg.add_op("ewadd", {}, std::vector<ClassId>{fa, a});
  const ClassId gfb = *eg.add_op("ewadd", {}, std::vector<ClassId>{fb, b});
  EXPECT_NE(eg.find(fa), eg.find(fb));
  EXPECT_EQ(eg.num_classes(), 6u);
  EXPECT_TRUE(eg.merge(a, b));
  EXPECT_FALSE(eg.merge(a, b));
  eg.rebuild();
  // a = b makes relu(a) = relu(b), and then relu(a) + a = relu(b) + b.
  EXPECT_EQ(eg.find(fa), eg.find(fb));
  EXPECT_EQ(eg.find(gfa), eg.find(gfb));
  EXPECT_EQ(eg.num_classes(), 3u);
  EXPECT_EQ(eg.eclass(fa).nodes.size(), 1u);  // the two relu e-nodes became one
  EXPECT_EQ(eg.num_nodes(), 4u);              // source a, source b, relu, ewadd
  const ClassId again = *eg.add_op("relu", {}, std::vector<ClassId>{b});
  EXPECT_EQ(again, eg.find(fa));
}

TEST(EGraph, MergingDifferentTypesIsRejected) {
  EGraph eg;
  const ClassId a = eg.add(ENode{eg.source_signature(source("a", {4, 4})), 0, {}});
  const ClassId b = eg.add(ENode{eg.source_signature(source("b", {4, 8})), 0, {}});
  EXPECT_THROW(eg.merge(a, b), std::logic_error);
}

TEST(EGraph, WeightOnlyAnalysisPropagatesThroughMerges) {
  EGraph eg;
  const auto w = source("w", {4, 4}, models::ValueKind::kParam);
  const auto x = source("x", {4, 4});
  const ClassId cw = eg.add(ENode{eg.source_signature(w), 0, {}});
  const ClassId cx = eg.add(ENode{eg.source_signature(x), 0, {}});
  const ClassId rx = *eg.add_op("relu", {}, std::vector<ClassId>{cx});
  const ClassId rrx = *eg.add_op("relu", {}, std::vector<ClassId>{rx});
  EXPECT_TRUE(eg.eclass(*eg.add_op("relu", {}, std::vector<ClassId>{cw})).weight_only);
  EXPECT_FALSE(eg.eclass(rrx).weight_only);
  eg.merge(cx, cw);  // pretend x equals the weight: everything computed from it becomes foldable
  eg.rebuild();
  EXPECT_TRUE(eg.eclass(rrx).weight_only);
}

// A small graph with shared matmul inputs and an ewadd chain.
Graph small_graph() {
  Graph g("small");
  const auto x = g.add_input("x", TensorType{{8, 16}});
  const auto w1 = g.add_param("w1", TensorType{{16, 16}});
  const auto w2 = g.add_param("w2", TensorType{{16, 16}});
  const auto m1 = g.add("matmul", {x, w1}, {}, "m1");
  const auto m2 = g.add("matmul", {x, w2}, {}, "m2");
  const auto a = g.add("ewadd", {m1, m2}, {}, "a");
  const auto b = g.add("ewadd", {m1, a}, {}, "b");
  g.mark_output(g.add("relu", {b}, {}, "r"));
  return g;
}

// Brute force: every assignment of rule variables to classes under which each lhs denotes a class, found
// bottom-up (the class of an application is that of an existing e-node over the arguments' classes).
std::set<std::pair<std::vector<ClassId>, std::vector<ClassId>>> brute_force(const EGraph& eg,
                                                                            const Rule& rule) {
  const auto vars = rule_variables(rule);
  const auto ids = eg.class_ids();
  std::set<std::pair<std::vector<ClassId>, std::vector<ClassId>>> out;
  std::function<std::optional<ClassId>(const Term&, const std::vector<ClassId>&)> denote =
      [&](const Term& t, const std::vector<ClassId>& b) -> std::optional<ClassId> {
    if (t.is_variable()) {
      const auto i = static_cast<std::size_t>(std::find(vars.begin(), vars.end(), t.name()) - vars.begin());
      return b[i];
    }
    std::vector<ClassId> args;
    for (const auto& a : t.args()) {
      auto c = denote(a, b);
      if (!c) return std::nullopt;
      args.push_back(*c);
    }
    for (ClassId c : ids)
      for (const ENode& n : eg.eclass(c).nodes) {
        const auto& op = eg.signature(n.sig).rule_op;
        const Op want = t.op() == Op::kSplit1 ? Op::kSplit0 : t.op();
        if (!op || op->op != want || n.output != (t.op() == Op::kSplit1 ? 1 : 0) || n.children != args)
          continue;
        bool params = op->params.size() == t.params().size();
        for (std::size_t i = 0; params && i < op->params.size(); ++i)
          params = op->params[i] == t.params()[i].value;
        if (params) return c;
      }
    return std::nullopt;
  };
  std::vector<std::string> lhs_vars;
  for (const auto& eq : rule.outputs) collect_variables(eq.lhs, lhs_vars);
  std::vector<ClassId> b(vars.size(), -1);
  std::function<void(std::size_t)> assign = [&](std::size_t i) {
    if (i == lhs_vars.size()) {
      std::vector<ClassId> roots;
      for (const auto& eq : rule.outputs) {
        auto r = denote(eq.lhs, b);
        if (!r || std::find(roots.begin(), roots.end(), *r) != roots.end()) return;
        roots.push_back(*r);
      }
      out.emplace(roots, b);
      return;
    }
    for (ClassId c : ids) {
      b[i] = c;
      assign(i + 1);
    }
    b[i] = -1;
  };
  assign(0);
  return out;
}

TEST(EMatch, FindsExactlyTheBruteForceMatches) {
  auto geg = egraph_from_graph(small_graph());
  EGraph& eg = geg.egraph;
  const auto rs = rules();
  for (int round = 0; round < 3; ++round) {
    for (const Rule& r : rs) {
      const auto found = ematch(eg, r);
      std::set<std::pair<std::vector<ClassId>, std::vector<ClassId>>> got;
      for (const auto& m : found) got.emplace(m.roots, m.bindings);
      EXPECT_EQ(got, brute_force(eg, r)) << "rule " << r.name << " round " << round;
      EXPECT_EQ(got.size(), found.size()) << "duplicates";
    }
    // Grow the e-graph (reassociations and the matmul merge) and compare again.
    for (const Rule& r : rs)
      for (const auto& m : ematch(eg, r)) {
        bool changed = false;
        apply_ematch(eg, r, m, changed);
      }
    eg.rebuild();
  }
  // Rule 77 on the original graph: (m1, m2) and (m2, m1), both binding x.
  auto fresh = egraph_from_graph(small_graph());
  EXPECT_EQ(ematch(fresh.egraph, rs[2]).size(), 2u);
}

TEST(Eqsat, ExtractedGraphComputesTheSameFunction) {
  const Graph g = small_graph();
  for (auto method : {Extraction::kGreedy, Extraction::kIlp}) {
    EqsatOptions o;
    o.extraction = method;
    const auto res = eqsat_optimize(g, rules(), a100(), o);
    EXPECT_EQ(res.stop, StopReason::kSaturated);
    EXPECT_LE(res.cost_after, res.cost_before);
    EXPECT_NEAR(res.cost_after, graph_cost(res.graph, a100()), 1e-15);
    EXPECT_LT(max_abs_difference(g, res.graph), 1e-9);
  }
}

// Q and K projections of one attention layer: x[64,1024] times two 1024x1024 weights.
Graph qk_graph() {
  Graph g("qk");
  const auto x = g.add_input("x", TensorType{{64, 1024}});
  const auto wq = g.add_param("wq", TensorType{{1024, 1024}});
  const auto wk = g.add_param("wk", TensorType{{1024, 1024}});
  const auto q = g.add("matmul", {x, wq}, {}, "q");
  const auto k = g.add("matmul", {x, wk}, {}, "k");
  g.mark_output(g.add("relu", {q}, {}, "rq"));
  g.mark_output(g.add("relu", {k}, {}, "rk"));
  return g;
}

TEST(Eqsat, ReachesTheHandDerivedOptimumAndTheBacktrackingCost) {
  // By hand: rule 77 is the only rule that applies; its result is one 64x1024x2048 matmul on the (folded)
  // weight concatenation, a split and the two relus. Tree-cost extraction would never pick it (each split
  // output alone costs the whole merged matmul); the DAG cost must.
  const auto cost = a100();
  Graph merged("merged");
  {
    const auto x = merged.add_input("x", TensorType{{64, 1024}});
    const auto wq = merged.add_param("wq", TensorType{{1024, 1024}});
    const auto wk = merged.add_param("wk", TensorType{{1024, 1024}});
    const auto w = merged.add("concat", {wq, wk}, {{"axis", std::int64_t{1}}});
    const auto m = merged.add("matmul", {x, w});
    const auto parts =
        merged.add_node("split", {m}, {{"axis", std::int64_t{1}}, {"sizes", models::Ints{1024, 1024}}});
    merged.mark_output(merged.add("relu", {parts[0]}));
    merged.mark_output(merged.add("relu", {parts[1]}));
  }
  const Graph g = qk_graph();
  const double by_hand = std::min(graph_cost(merged, cost), graph_cost(g, cost));
  ASSERT_LT(graph_cost(merged, cost), graph_cost(g, cost));  // merging pays off on the A100 model
  const auto back = optimize(g, rules(), cost);
  for (auto method : {Extraction::kGreedy, Extraction::kIlp}) {
    EqsatOptions o;
    o.extraction = method;
    const auto res = eqsat_optimize(g, rules(), cost, o);
    EXPECT_NEAR(res.cost_after, by_hand, 1e-12) << extraction_name(method);
    EXPECT_LE(res.cost_after, back.cost_after * (1 + 1e-12));
    EXPECT_LT(max_abs_difference(g, res.graph), 1e-9);
  }
}

// The minimum predicted gain (search/subst/min_gain.h): the merged projection of the test above saves a known
// fraction of the input's time; a minimum just above it keeps the input, one just below takes the merge.
TEST(Eqsat, MinGainKeepsTheInputBelowTheMinimum) {
  const auto cost = a100();
  const Graph g = qk_graph();
  EqsatOptions any;
  any.min_gain = 0;
  const auto merged = eqsat_optimize(g, rules(), cost, any);
  const double saving = 1 - graph_cost(merged.graph, cost) / graph_cost(g, cost);
  ASSERT_GT(saving, 0);
  EqsatOptions above;
  above.min_gain = saving * 1.001;
  const auto kept = eqsat_optimize(g, rules(), cost, above);
  EXPECT_EQ(graph_hash(kept.graph), graph_hash(g));
  EXPECT_DOUBLE_EQ(kept.cost_after, kept.cost_before);
  ASSERT_TRUE(kept.declined_cost.has_value());
  EXPECT_NEAR(*kept.declined_cost, merged.cost_after, 1e-15);
  EqsatOptions below;
  below.min_gain = saving * 0.999;
  const auto taken = eqsat_optimize(g, rules(), cost, below);
  EXPECT_EQ(graph_hash(taken.graph), graph_hash(merged.graph));
  EXPECT_FALSE(taken.declined_cost.has_value());
}

TEST(Eqsat, LimitsAreReportedAsStopReasons) {
  EqsatOptions o;
  o.node_limit = 5;
  EXPECT_EQ(eqsat_optimize(small_graph(), rules(), a100(), o).stop, StopReason::kNodeLimit);
  o.node_limit = 50000;
  o.max_iterations = 1;
  EXPECT_EQ(eqsat_optimize(small_graph(), rules(), a100(), o).stop, StopReason::kIterationLimit);
}

TEST(Eqsat, Deterministic) {
  const Graph g = small_graph();
  const auto a = eqsat_optimize(g, rules(), a100());
  const auto b = eqsat_optimize(g, rules(), a100());
  EXPECT_EQ(graph_hash(a.graph), graph_hash(b.graph));
  EXPECT_EQ(a.cost_after, b.cost_after);
  EXPECT_EQ(a.nodes, b.nodes);
  EXPECT_EQ(a.classes, b.classes);
  EXPECT_EQ(a.rule_applications, b.rule_applications);
  // Rules are searched TBB-parallel; one thread must give the same e-graph and graph.
  EqsatResult c;
  tbb::task_arena(1).execute([&] { c = eqsat_optimize(g, rules(), a100()); });
  EXPECT_EQ(graph_hash(a.graph), graph_hash(c.graph));
  EXPECT_EQ(a.nodes, c.nodes);
  EXPECT_EQ(a.rule_applications, c.rule_applications);
}

}  // namespace
}  // namespace strata::search::subst
