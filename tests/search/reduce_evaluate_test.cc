// Lowering (non-reduction axes), simulation of lowered programs, evaluation determinism under TBB, joint
// placement and split non-switched levels.
#include <gtest/gtest.h>

#include <tbb/task_arena.h>

#include "hw/system_loader.h"
#include "search/reduce/canonical.h"
#include "search/reduce/evaluate.h"
#include "search/reduce/semantics.h"
#include "sim/simulator.h"

namespace rd = strata::search::reduce;
using strata::sim::CollectiveOp;

TEST(ReduceLowering, InstantiatesThePatternOverNonReductionAxes) {
  // Levels node 2 x gpu 4; axes [4, 2] with X = [[2,2],[1,2]], reducing axis 0. In a node, GPU index =
  // 2 u0 + u1 (axis 0 digit more significant), so the reduction group of axis-1 coordinate 0 is {0,2,4,6}
  // and that of coordinate 1 is {1,3,5,7}; synthesis hierarchy node 2 x gpu 2.
  const rd::Placement p({{"node", 2}, {"gpu", 4}}, {4, 2}, {{2, 2}, {1, 2}});
  const std::array<int, 1> reduce{0};
  const auto h = rd::synthesis_hierarchy(p, reduce);
  ASSERT_EQ(h.to_string(), "[root 1, node 2, gpu 2]");
  const rd::ReductionLayout layout(p, reduce);
  const double B = 1024;
  const auto lowered =
      rd::lower(rd::parse_program("(node, InsideGroup, ReduceScatter); (node, Parallel(root), AllReduce); "
                                  "(node, InsideGroup, AllGather)",
                                  h),
                h, layout, B);
  ASSERT_EQ(lowered.steps.size(), 3u);
  using G = std::vector<int>;
  auto groups = [&](std::size_t s) {
    std::vector<G> out;
    for (const auto& c : lowered.steps[s].calls) out.push_back(c.group);
    return out;
  };
  EXPECT_EQ(groups(0), (std::vector<G>{{0, 2}, {4, 6}, {1, 3}, {5, 7}}));
  EXPECT_EQ(groups(1), (std::vector<G>{{0, 4}, {2, 6}, {1, 5}, {3, 7}}));
  EXPECT_EQ(groups(2), groups(0));
  // Bytes (nccl-tests convention): RS over the whole buffer; AR over the half each device kept; AG gathers
  // the whole buffer back.
  for (const auto& c : lowered.steps[0].calls) EXPECT_DOUBLE_EQ(c.bytes, B);
  for (const auto& c : lowered.steps[1].calls) EXPECT_DOUBLE_EQ(c.bytes, B / 2);
  for (const auto& c : lowered.steps[2].calls) EXPECT_DOUBLE_EQ(c.bytes, B);
  // The single AllReduce lowers to exactly the placement's reduction groups.
  const auto flat = rd::lower(rd::parse_program("(root, InsideGroup, AllReduce)", h), h, layout, B);
  std::vector<G> flat_groups;
  for (const auto& c : flat.steps[0].calls) flat_groups.push_back(c.group);
  EXPECT_EQ(flat_groups, p.groups(reduce));
  // Reduce-Master-Broadcast: only the node roots of each group take part in the middle step.
  const auto rab = rd::lower(
      rd::parse_program(
          "(node, InsideGroup, Reduce); (node, Master(root), AllReduce); (node, InsideGroup, Broadcast)", h),
      h, layout, B);
  std::vector<G> middle;
  for (const auto& c : rab.steps[1].calls) middle.push_back(c.group);
  EXPECT_EQ(middle, (std::vector<G>{{0, 4}, {1, 5}}));
  for (const auto& c : rab.steps[1].calls) EXPECT_DOUBLE_EQ(c.bytes, B);
}

TEST(ReduceEvaluate, BaselineEqualsConcurrentAllReducesOverThePlacementsGroups) {
  const auto topo = strata::hw::load_system("configs/hw/gcp-v100x8.yaml", {2});
  rd::EvalConfig cfg;
  cfg.axes = {4, 4};
  cfg.reduce_axes = {0};
  cfg.bytes_per_device = 256.0 * 1024 * 1024;
  cfg.algorithms = {"ring", "tree"};
  const auto evals = rd::evaluate(topo, cfg);
  ASSERT_EQ(evals.size(), 4u);  // 2 matrices x 2 algorithms
  for (const auto& e : evals) {
    const rd::Placement p({topo.levels().begin(), topo.levels().end()}, cfg.axes, e.matrix);
    strata::sim::TaskGraph graph;
    const std::array<int, 1> reduce{0};
    for (const auto& g : p.groups(reduce)) {
      strata::sim::CollectiveSpec spec;
      spec.op = CollectiveOp::kAllReduce;
      spec.group = g;
      spec.bytes = cfg.bytes_per_device;
      strata::sim::add_collective(topo, graph, spec, e.algorithm);
    }
    EXPECT_NEAR(e.baseline_seconds, strata::sim::simulate(topo, graph).seconds(), 1e-12)
        << rd::format_matrix(e.matrix);
    EXPECT_LE(e.best.seconds, e.baseline_seconds);
  }
}

TEST(ReduceEvaluate, DeterministicUnderTbbParallelism) {
  const auto topo = strata::hw::load_system("configs/hw/gcp-a100x16.yaml", {2});
  rd::EvalConfig cfg;
  cfg.axes = {4, 8};
  cfg.reduce_axes = {0};
  cfg.bytes_per_device = 1024.0 * 1024 * 1024;
  cfg.algorithms = {"ring", "tree"};
  cfg.keep_all_programs = true;
  std::vector<rd::PlacementEval> serial;
  tbb::task_arena one(1);
  one.execute([&] { serial = rd::evaluate(topo, cfg); });
  const auto parallel = rd::evaluate(topo, cfg);
  ASSERT_EQ(serial.size(), parallel.size());
  for (std::size_t i = 0; i < serial.size(); ++i) {
    EXPECT_EQ(serial[i].matrix, parallel[i].matrix);
    ASSERT_EQ(serial[i].ranked.size(), parallel[i].ranked.size());
    for (std::size_t r = 0; r < serial[i].ranked.size(); ++r) {
      EXPECT_EQ(serial[i].ranked[r].text, parallel[i].ranked[r].text);
      EXPECT_EQ(serial[i].ranked[r].seconds, parallel[i].ranked[r].seconds);
    }
  }
}

TEST(ReduceEvaluate, JointPlacementRanksByTotalTime) {
  const auto topo = strata::hw::load_system("configs/hw/gcp-a100x16.yaml", {2});
  const std::vector<int> axes{4, 8};
  const std::vector<rd::ReductionSpec> reductions{{{0}, 1024.0 * 1024 * 1024, "gradients"},
                                                  {{1}, 64.0 * 1024 * 1024, "activations"}};
  const auto joint = rd::evaluate_joint(topo, axes, reductions, "ring", {});
  ASSERT_EQ(joint.size(), 2u);
  for (const auto& j : joint) {
    ASSERT_EQ(j.parts.size(), 2u);
    EXPECT_DOUBLE_EQ(j.total_best_seconds, j.parts[0].best.seconds + j.parts[1].best.seconds);
  }
  EXPECT_LE(joint[0].total_best_seconds, joint[1].total_best_seconds);
  // Keeping the big gradient reduction inside a node wins overall even though it sends the activations
  // across nodes: [[1,4],[2,4]] (axis 0 inside the node).
  EXPECT_EQ(joint[0].matrix, (rd::Matrix{{1, 4}, {2, 4}}));
}

TEST(ReduceEvaluate, NonSwitchedNodeLayoutsAreSimulatedOnThePhysicalTopology) {
  // On the V100 NVLink ring, a 4-GPU reduction group of ring neighbours and one of every other GPU differ;
  // P2's uniform level model would rank them equal.
  const auto topo = strata::hw::load_system("configs/hw/gcp-v100x8.yaml", {1});
  rd::EvalConfig cfg;
  cfg.axes = {2, 4};
  cfg.reduce_axes = {1};
  cfg.bytes_per_device = 256.0 * 1024 * 1024;
  cfg.split_non_switched = true;
  const auto evals = rd::evaluate(topo, cfg);
  ASSERT_EQ(evals.size(), 3u);  // which of the three GPU-index bits axis 0 takes
  double lo = 1e300, hi = 0;
  for (const auto& e : evals) {
    lo = std::min(lo, e.baseline_seconds);
    hi = std::max(hi, e.baseline_seconds);
  }
  EXPECT_GT(hi / lo, 1.5);
  cfg.split_non_switched = false;
  EXPECT_EQ(rd::evaluate(topo, cfg).size(), 1u);
}

TEST(ReduceCanonical, OptionsKeepOneProgramPerClassInOrder) {
  const rd::SynthesisHierarchy h({{"node", 2, 0}, {"gpu", 4, 1}});
  const auto literal = rd::synthesize(h).programs;
  // The counts (51/83/64) are checked against a brute-force count in reduce_bruteforce_test.cc.
  // Every kept program is a literal program, kept in the literal order.
  const auto kept = rd::synthesize(h, {5, rd::Canonicalization::kTrajectory}).programs;
  std::size_t at = 0;
  for (const auto& p : kept) {
    while (at < literal.size() && literal[at] != p) ++at;
    EXPECT_LT(at, literal.size());
  }
  // The two orders of AllReduce-AllReduce commute; (node, InsideGroup, Reduce); Master; Broadcast from the
  // single root or from every node root pass through the same states.
  const auto commute = rd::synthesize(h, {5, rd::Canonicalization::kCommute}).programs;
  auto has = [&](const std::vector<rd::Program>& ps, const char* text) {
    return std::find(ps.begin(), ps.end(), rd::parse_program(text, h)) != ps.end();
  };
  EXPECT_TRUE(has(commute, "(node, InsideGroup, AllReduce); (node, Parallel(root), AllReduce)"));
  EXPECT_FALSE(has(commute, "(node, Parallel(root), AllReduce); (node, InsideGroup, AllReduce)"));
  EXPECT_TRUE(has(
      kept, "(node, InsideGroup, Reduce); (node, Master(root), AllReduce); (root, InsideGroup, Broadcast)"));
  EXPECT_FALSE(has(
      kept, "(node, InsideGroup, Reduce); (node, Master(root), AllReduce); (node, InsideGroup, Broadcast)"));
  // One-level hierarchies keep their 3 programs under every option.
  const rd::SynthesisHierarchy one({{"gpu", 8, 0}});
  for (auto c : {rd::Canonicalization::kMasterMinimal, rd::Canonicalization::kCommute,
                 rd::Canonicalization::kTrajectory})
    EXPECT_EQ(rd::synthesize(one, {5, c}).programs.size(), 3u);
}
