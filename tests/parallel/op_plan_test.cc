// Per-operator plans: parallel dimensions, configurations, lowering and the two simulators against values
// derived by hand.
#include <algorithm>
#include <map>

#include <gtest/gtest.h>

#include "models/cost/cost_model.h"
#include "search/parallel/op_search.h"
#include "search/parallel/op_sim.h"
#include "sim/collective_runner.h"
#include "sim/trace.h"
#include "tests/parallel/op_test_util.h"

namespace strata::search::parallel {
namespace {

using models::DType;
using models::Graph;
using testing::mlp;
using testing::pcie_system;

int find_choice(const PlanSpace& s, int i, std::vector<int> degrees, int start = 0, int stride = 1) {
  const auto cs = s.configs(i);
  for (std::size_t c = 0; c < cs.size(); ++c)
    if (cs[c].degrees == degrees && cs[c].start == start && cs[c].stride == stride)
      return static_cast<int>(c);
  ADD_FAILURE() << "no such config";
  return 0;
}

TEST(OpPlan, MatmulDeclaresSampleParameterAndReductionDims) {
  const Graph g = mlp(64, 32, 16, 8);
  const PlanSpace s(g, 4);
  ASSERT_EQ(s.size(), 3);
  const auto d = s.dims(0);
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[0].kind, models::ParallelDimKind::kSample);
  EXPECT_EQ(d[0].extent, 64);
  EXPECT_EQ(d[1].kind, models::ParallelDimKind::kParameter);
  EXPECT_EQ(d[1].extent, 16);
  EXPECT_EQ(d[2].kind, models::ParallelDimKind::kReduction);
  EXPECT_EQ(d[2].extent, 32);
  EXPECT_TRUE(s.declared(0));
  // Degree vectors with product <= 4 over three dims that all divide: 1 + 3 (one dim 2) + 3 (one dim 4) + 3
  // (two dims 2) = 10; views: 1 part -> 4 starts; 2 parts -> stride 1: 3, stride 2: 2 = 5; 4 parts -> 1.
  // 4 + 3 x 5 + 6 x 1 = 25.
  EXPECT_EQ(s.configs(0).size(), 25u);
}

// On more than kAllViewsUpTo GPUs only aligned views: for 64 GPUs and a node with one dimension of extent 128
// (relu's batch; its second axis 3 does not split): 1 part: 64 starts; p = 2..64 parts: 64 / p aligned blocks
// and 64 / p spread starts (none for 64 parts, where the spread stride would be 1): 64 + (32+32) + (16+16) +
// (8+8) + (4+4) + (2+2) + 1 = 189.
TEST(OpPlan, LargeMachinesKeepAlignedViews) {
  Graph g;
  g.mark_output(g.add("relu", {g.add_input("x", {{128, 3}, DType::kF32})}));
  const PlanSpace s(g, 64);
  EXPECT_EQ(s.configs(0).size(), 189u);
  for (const auto& c : s.configs(0)) EXPECT_LT(c.device(c.parts() - 1), 64);
}

TEST(OpPlan, BlocksFollowTheDegrees) {
  const Graph g = mlp(64, 32, 16, 8);
  const PlanSpace s(g, 4);
  const OpConfig c{{2, 2, 1}, 0, 1};  // rows x columns
  const auto out3 = s.output_block(0, c, 3);
  EXPECT_EQ(out3.lo, (std::vector<std::int64_t>{32, 8}));
  EXPECT_EQ(out3.hi, (std::vector<std::int64_t>{64, 16}));
  const auto w1 = s.input_block(0, c, 1, 1);  // part 1: rows 0, columns 1
  EXPECT_EQ(w1.lo, (std::vector<std::int64_t>{0, 8}));
  EXPECT_EQ(w1.hi, (std::vector<std::int64_t>{32, 16}));
  EXPECT_EQ(s.reduction_degree(0, OpConfig{{1, 1, 4}, 0, 1}), 4);
}

TEST(OpPlan, DataParallelAndExpertPlans) {
  const Graph g = mlp(64, 32, 16, 8);
  const PlanSpace s(g, 4);
  const auto dp = data_parallel_plan(s);
  for (int i = 0; i < s.size(); ++i) {
    const auto& c = s.config(i, dp.choice[static_cast<std::size_t>(i)]);
    EXPECT_EQ(c.parts(), 4);
    EXPECT_EQ(c.degrees[0], 4);
  }
  const auto ex = expert_plan(s);
  EXPECT_EQ(s.config(0, ex.choice[0]).degrees, (std::vector<int>{1, 4, 1}));  // weight columns split
  EXPECT_EQ(s.config(1, ex.choice[1]).degrees[0], 4);                         // relu: data parallel
  EXPECT_NE(describe_plan(s, ex).find("mm1 (matmul) columns=4 -> gpus 0-3"), std::string::npos);
}

// Data parallelism of a 3-node MLP on 8 NVSwitch-connected A100s: every GPU runs the six kernels of its
// batch shard back to back; the w2 gradient all-reduce starts when mm2's backward is done and overlaps the
// remaining backward kernels, the w1 all-reduce follows the last kernel. Each all-reduce takes its isolated
// time (strata sim collective --algo auto), so the step is
//   max(compute, end of mm2 backward + AR(w2)) + AR(w1).
TEST(OpSim, DataParallelStepIsComputePlusGradientAllReduce) {
  const auto topo = hw::load_system("configs/hw/dgx-a100.yaml");
  const std::int64_t b = 512, k = 4096, h = 4096, o = 256;
  const Graph g = mlp(b, k, h, o);
  const models::CostModel cm(topo.gpu());
  const PlanSpace space(g, 8);
  const ShardCosts costs(space, cm);
  const OpLowering low(space, costs, {});
  const auto dp = data_parallel_plan(space);
  // The forward part is the kernel on the shard, costed independently here.
  Graph shard;
  const auto x = shard.add_input("x", {{b / 8, k}, DType::kF32});
  const auto w1 = shard.add_param("w1", {{k, h}, DType::kF32});
  shard.add("matmul", {x, w1});
  EXPECT_DOUBLE_EQ(costs.get(0, dp.choice[0]).forward, cm.node_cost(shard, shard.node(0)).seconds);

  sim::SimTime compute = 0, mm2_bwd_end = 0;
  for (int i = 0; i < 3; ++i)
    compute += sim::seconds_to_time(costs.get(i, dp.choice[static_cast<std::size_t>(i)]).forward);
  mm2_bwd_end = compute + sim::seconds_to_time(costs.get(2, dp.choice[2]).backward);
  for (int i = 0; i < 3; ++i)
    compute += sim::seconds_to_time(costs.get(i, dp.choice[static_cast<std::size_t>(i)]).backward);
  const auto allreduce = [&](double bytes) {
    sim::CollectiveRequest req;
    req.spec.group = {0, 1, 2, 3, 4, 5, 6, 7};
    req.spec.bytes = bytes;
    return sim::seconds_to_time(sim::run_collective(topo, req).seconds);
  };
  const auto ar1 = allreduce(4.0 * k * h), ar2 = allreduce(4.0 * h * o);
  const sim::SimTime expected = std::max(compute, mm2_bwd_end + ar2) + ar1;

  OpSimulator fast(low, topo, dp);
  EXPECT_EQ(fast.makespan(), expected);
  // A ring all-reduce moves 2 (n-1)/n of the buffer out of each GPU (A100 has no in-switch reduction): the
  // all-reduce of w1 (64 MiB) takes at least that over the GPU's NVSwitch port bandwidth.
  EXPECT_GE(sim::time_to_seconds(ar1), 2.0 * 7 / 8 * 4.0 * k * h / topo.route_bandwidth(0, 1));
  // On sim/'s event simulator the only concurrent flows are the two all-reduces if they overlap; here they
  // do not, so the two simulators agree to rounding.
  EXPECT_NEAR(simulate_full_step(fast, topo), fast.seconds(), 1e-9 * fast.seconds() + 1e-9);
  // Memory on each GPU: w1, w2 with gradients and Adam moments (16 bytes per fp32 element) and the saved
  // activations of the shard (mm1 and relu outputs b/8 x h, mm2 output b/8 x o, fp32).
  const double expect_mem = 16.0 * (k * h + h * o) + 4.0 * (b / 8) * (2 * h + o);
  for (auto m : fast.memory()) EXPECT_EQ(static_cast<double>(m), expect_mem);
}

// Row-split producer into a column-split consumer on 2 GPUs: mm1 splits its batch rows (GPU 0: rows 0..m/2,
// GPU 1: the rest); mm2 splits its weight's columns, so each of its parts needs all of x = mm1's output.
// Forward: each GPU receives the other half, m/2 x n fp32 each way. Backward: each mm2 part produces a full
// (partial) dx; each mm1 part receives the half it owns from the other GPU, m/2 x n each way. No gradient
// all-reduces: mm1's weight is a data input here, mm2's weight shards are not replicated.
TEST(OpLowering, RowSplitIntoColumnSplitMovesHalfTheTensorEachWay) {
  const std::int64_t m = 256, k = 64, n = 128, o = 32;
  Graph g;
  const auto x = g.add_input("x", {{m, k}, DType::kF32});
  const auto w1 = g.add_input("w1", {{k, n}, DType::kF32});
  const auto w2 = g.add_param("w2", {{n, o}, DType::kF32});
  g.mark_output(g.add("matmul", {g.add("matmul", {x, w1}, {}, "mm1"), w2}, {}, "mm2"));
  const auto topo = pcie_system(2);
  const models::CostModel cm(topo.gpu());
  const PlanSpace space(g, 2);
  const ShardCosts costs(space, cm);
  const OpLowering low(space, costs, {});
  const OpPlan plan{{find_choice(space, 0, {2, 1, 1}), find_choice(space, 1, {1, 2, 1})}};
  OpSimulator fast(low, topo, plan);
  const auto tg = fast.to_task_graph();
  std::map<std::pair<int, int>, double> bytes;
  int transfers = 0;
  for (const auto& t : tg.tasks())
    if (t.kind == sim::TaskKind::kTransfer) {
      ++transfers;
      bytes[{t.rank, t.peer}] += t.bytes;
    }
  EXPECT_EQ(transfers, 4);
  const double half = 4.0 * (m / 2) * n;
  EXPECT_DOUBLE_EQ((bytes[{0, 1}]),
                   2 * half);  // forward rows 0..m/2 to GPU 1, backward dx of rows m/2.. to GPU 1
  EXPECT_DOUBLE_EQ((bytes[{1, 0}]), 2 * half);
  // Co-located and identically split neighbours need no activation or gradient transfer (only mm2's
  // replicated weight's gradient all-reduce communicates).
  const OpPlan same{{find_choice(space, 0, {2, 1, 1}), find_choice(space, 1, {2, 1, 1})}};
  OpSimulator dp(low, topo, same);
  const auto tg2 = dp.to_task_graph();
  int activation_transfers = 0;
  for (const auto& t : tg2.tasks()) {
    const auto& label = tg2.labels()[static_cast<std::size_t>(t.label)];
    if (label.starts_with("xfer ") || label.starts_with("gxfer ")) ++activation_transfers;
  }
  EXPECT_EQ(activation_transfers, 0);
}

// The CLI path: a planner for a graph, a named plan evaluated, a trace of its full simulation.
TEST(OpSearchApi, PlannerEvaluatesPlansAndTracesThem) {
  const auto topo = pcie_system(4);
  const models::CostModel cm(topo.gpu());
  const Graph g = mlp(64, 128, 128, 64, true);
  const OpPlanner planner(g, topo, cm);
  const auto dp = data_parallel_plan(planner.space());
  const auto r = evaluate_plan(planner.lowering(), topo, dp, true);
  EXPECT_TRUE(r.fits);
  EXPECT_GT(r.full_seconds, 0);
  EXPECT_EQ(r.listing, describe_plan(planner.space(), dp));
  const OpSimulator fast(planner.lowering(), topo, dp);
  const auto step = run_full_step(fast, topo);
  EXPECT_EQ(step.seconds, r.full_seconds);
  const auto json = sim::chrome_trace_json(topo, step.graph, step.result);
  EXPECT_NE(json.find("fwd mm1 #3"), std::string::npos);  // part 3 of mm1's forward kernel
  EXPECT_NE(json.find("gradsync"), std::string::npos);
}

}  // namespace
}  // namespace strata::search::parallel
