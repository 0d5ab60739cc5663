// Training-graph gradients against central finite differences, for every differentiable operator; plus
// the structure of derived training graphs (parameter gradients, accumulation, optimizer updates).
#include <cmath>
#include <set>

#include "models/exec/executor.h"
#include "models/train/training.h"
#include "models/zoo/zoo.h"
#include "tests/models/test_util.h"

namespace strata::models {
namespace {

struct GradCase {
  std::string name;
  std::string op;
  std::vector<testing::Lit> inputs;  // data empty: random in [-1, 1]
  Attrs attrs;
  std::set<std::size_t> no_grad = {};  // inputs treated as constants by the operator's gradient rule
};

// Loss = sum_k <y_k, r_k> with fixed random r; checks d loss / d input for every float input.
void check_gradients(const GradCase& c) {
  SCOPED_TRACE(c.name);
  auto run = testing::build(c.op, c.inputs, c.attrs);
  TrainOptions opt;
  opt.optimizer = Optimizer::kNone;
  opt.input_grads = true;
  const auto tg = derive_training_graph(run.g, opt);
  Feeds<double> feeds;
  for (std::size_t i = 0; i < c.inputs.size(); ++i) {
    const auto& lit = c.inputs[i];
    feeds[run.ins[i]] =
        lit.data.empty() ? random_values<double>(numel(lit.shape), 7, "in" + std::to_string(i)) : lit.data;
  }
  for (std::size_t k = 0; k < tg.output_grads.size(); ++k) {
    const auto& t = tg.graph.type(tg.output_grads[k]);
    feeds[tg.output_grads[k]] = random_values<double>(t.numel(), 11, "r" + std::to_string(k));
  }
  const auto values = execute<double>(tg.graph, feeds);
  auto loss = [&](const Feeds<double>& f) {
    Feeds<double> forward_feeds;
    for (auto id : run.ins) forward_feeds[id] = f.at(id);
    const auto v = execute<double>(run.g, forward_feeds);
    double l = 0;
    for (std::size_t k = 0; k < run.outs.size(); ++k) {
      const auto& y = v[static_cast<std::size_t>(run.outs[k])];
      const auto& r = feeds.at(tg.output_grads[k]);
      for (std::size_t i = 0; i < y.size(); ++i) l += y[i] * r[i];
    }
    return l;
  };
  int checked = 0;
  for (std::size_t i = 0; i < c.inputs.size(); ++i) {
    if (!is_float(c.inputs[i].dtype) || c.no_grad.contains(i)) continue;
    const ValueId gid = tg.input_grads[i];
    ASSERT_NE(gid, kNoValue) << "no gradient for input " << i;
    const auto& analytic = values[static_cast<std::size_t>(gid)];
    ASSERT_EQ(analytic.size(), feeds[run.ins[i]].size());
    for (std::size_t e = 0; e < analytic.size(); ++e) {
      const double h = 1e-6;
      auto plus = feeds, minus = feeds;
      plus[run.ins[i]][e] += h;
      minus[run.ins[i]][e] -= h;
      const double numeric = (loss(plus) - loss(minus)) / (2 * h);
      EXPECT_NEAR(analytic[e], numeric, 1e-5 * std::max(1.0, std::fabs(numeric)))
          << "input " << i << " element " << e;
      ++checked;
    }
  }
  EXPECT_GT(checked, 0);
}

using testing::Lit;

std::vector<GradCase> grad_cases() {
  const Ints same{1, 1, 1, 1};
  return {
      {"ewadd_broadcast", "ewadd", {{{2, 3}, {}}, {{3}, {}}}, {}},
      {"ewsub_broadcast", "ewsub", {{{2, 1}, {}}, {{2, 3}, {}}}, {}},
      {"ewmul_broadcast", "ewmul", {{{2, 3}, {}}, {{1, 3}, {}}}, {}},
      {"scalar_mul", "scalar_mul", {{{2, 3}, {}}, {{}, {}}}, {}},
      {"relu", "relu", {{{7}, {}}}, {}},
      {"sigmoid", "sigmoid", {{{5}, {}}}, {}},
      {"tanh", "tanh", {{{5}, {}}}, {}},
      {"gelu", "gelu", {{{5}, {}}}, {}},
      {"silu", "silu", {{{5}, {}}}, {}},
      {"rsqrt", "rsqrt", {{{4}, {0.5, 1.0, 2.0, 3.0}}}, {}},
      {"matmul", "matmul", {{{2, 3}, {}}, {{3, 4}, {}}}, {}},
      {"matmul_trans_a", "matmul", {{{3, 2}, {}}, {{3, 4}, {}}}, {{"trans_a", std::int64_t{1}}}},
      {"matmul_trans_b_relu",
       "matmul",
       {{{2, 3}, {}}, {{4, 3}, {}}},
       {{"trans_b", std::int64_t{1}}, {"activation", std::string("relu")}}},
      {"batch_matmul_broadcast", "batch_matmul", {{{2, 2, 3}, {}}, {{3, 2}, {}}}, {}},
      {"batch_matmul_trans",
       "batch_matmul",
       {{{2, 3, 2}, {}}, {{2, 2, 3}, {}}},
       {{"trans_a", std::int64_t{1}}, {"trans_b", std::int64_t{1}}}},
      {"conv2d_stride_pad",
       "conv2d",
       {{{1, 2, 5, 5}, {}}, {{3, 2, 3, 3}, {}}},
       {{"strides", Ints{2, 2}}, {"pads", same}}},
      {"conv2d_groups_bias_relu",
       "conv2d",
       {{{2, 4, 3, 3}, {}}, {{4, 2, 2, 2}, {}}, {{4}, {}}},
       {{"groups", std::int64_t{2}}, {"activation", std::string("relu")}}},
      {"conv2d_dilation", "conv2d", {{{1, 1, 5, 5}, {}}, {{1, 1, 2, 2}, {}}}, {{"dilations", Ints{2, 2}}}},
      {"enlarge", "enlarge", {{{2, 1, 1, 3}, {}}}, {{"kernel", Ints{3, 3}}}},
      {"merge_gconv",
       "merge_gconv",
       {{{4, 2, 1, 3}, {}}},
       {{"groups", std::int64_t{4}}, {"count", std::int64_t{2}}}},
      {"concat", "concat", {{{2, 1}, {}}, {{2, 3}, {}}}, {{"axis", std::int64_t{1}}}},
      {"split", "split", {{{2, 5}, {}}}, {{"axis", std::int64_t{1}}, {"sizes", Ints{2, 3}}}},
      {"transpose", "transpose", {{{2, 3, 4}, {}}}, {{"perm", Ints{2, 0, 1}}}},
      {"reshape", "reshape", {{{2, 3}, {}}}, {{"shape", Ints{3, 2}}}},
      {"expand", "expand", {{{3, 1}, {}}}, {{"shape", Ints{2, 3, 4}}}},
      {"maxpool2d",
       "maxpool2d",
       {{{1, 2, 4, 4}, {}}},
       {{"kernel", Ints{3, 3}}, {"strides", Ints{1, 1}}, {"pads", same}}},
      {"avgpool2d",
       "avgpool2d",
       {{{1, 2, 4, 4}, {}}},
       {{"kernel", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"pads", same}}},
      {"avgpool2d_include_pad",
       "avgpool2d",
       {{{1, 1, 3, 3}, {}}},
       {{"kernel", Ints{2, 2}}, {"pads", same}, {"count_include_pad", std::int64_t{1}}}},
      {"batchnorm",
       "batchnorm",
       {{{2, 3, 2, 2}, {}}, {{3}, {}}, {{3}, {}}, {{3}, {}}, {{3}, {0.5, 1.0, 2.0}}},
       {},
       {3, 4}},
      {"layernorm", "layernorm", {{{3, 4}, {}}, {{4}, {}}, {{4}, {}}}, {}},
      {"layernorm_axis", "layernorm", {{{2, 2, 3}, {}}, {{2, 3}, {}}}, {{"axis", std::int64_t{1}}}},
      {"rmsnorm", "rmsnorm", {{{3, 4}, {}}, {{4}, {}}}, {}},
      {"softmax", "softmax", {{{3, 4}, {}}}, {}},
      {"softmax_axis0", "softmax", {{{3, 4}, {}}}, {{"axis", std::int64_t{0}}}},
      {"softmax_causal", "softmax", {{{2, 3, 3}, {}}}, {{"causal", std::int64_t{1}}}},
      {"reduce_sum", "reduce_sum", {{{2, 3, 4}, {}}}, {{"axes", Ints{0, 2}}, {"keepdims", std::int64_t{0}}}},
      {"reduce_mean", "reduce_mean", {{{2, 3}, {}}}, {{"axes", Ints{1}}}},
      {"attention_gqa_causal",
       "attention",
       {{{1, 4, 3, 2}, {}}, {{1, 2, 3, 2}, {}}, {{1, 2, 3, 2}, {}}},
       {{"causal", std::int64_t{1}}}},
      {"attention_cross_scaled",
       "attention",
       {{{2, 1, 2, 3}, {}}, {{2, 1, 4, 3}, {}}, {{2, 1, 4, 3}, {}}},
       {{"scale", 0.7}}},
      {"embedding", "embedding", {{{4, 3}, {}}, {{2, 2}, {1, 3, 1, 0}, DType::kI64}}, {}},
  };
}

TEST(Gradients, EveryDifferentiableOperatorMatchesFiniteDifferences) {
  std::set<std::string> covered;
  for (const auto& c : grad_cases()) {
    try {
      check_gradients(c);
    } catch (const std::exception& e) {
      ADD_FAILURE() << c.name << ": " << e.what();
    }
    covered.insert(c.op);
  }
  for (const auto& op : OpRegistry::instance().all())
    if (op.grad) {
      EXPECT_TRUE(covered.contains(std::string(op.name))) << "no gradient check for " << op.name;
    }
}

// backward_of names, for every backward node, the forward node whose gradient rule emitted it: such nodes are
// named "<forward node>/grad/..." by GradContext, accumulations after the value; parameter-gradient copies
// and updates belong to none.
TEST(TrainingGraph, BackwardNodesKnowTheirForwardNode) {
  const auto forward = zoo::build_model("gpt3-125m", {.batch = 1, .seq_len = 4});
  const auto tg = derive_training_graph(forward);
  ASSERT_EQ(tg.backward_of.size(), tg.graph.nodes().size());
  int accumulations = 0;
  for (NodeId n = 0; n < static_cast<NodeId>(tg.graph.nodes().size()); ++n) {
    const auto& node = tg.graph.node(n);
    const NodeId f = tg.backward_of[static_cast<std::size_t>(n)];
    if (n < tg.num_forward_nodes || n >= tg.first_update_node) {
      EXPECT_EQ(f, -1) << node.name;
      continue;
    }
    if (node.name.find("/grad/accumulate") != std::string::npos) {
      ++accumulations;
      // The accumulated value is an input of the forward node whose gradient arrived second.
      ASSERT_GE(f, 0) << node.name;
      const auto& fwd = forward.node(f);
      bool reads = false;
      for (auto v : fwd.inputs) reads = reads || node.name.starts_with(forward.value(v).name + "/grad/");
      EXPECT_TRUE(reads) << node.name << " attributed to " << fwd.name;
    } else if (f >= 0) {
      EXPECT_TRUE(node.name.starts_with(forward.node(f).name + "/grad/")) << node.name;
    } else {
      EXPECT_TRUE(node.name.ends_with("/copy")) << node.name;
    }
  }
  EXPECT_GT(accumulations, 0);
}

// A two-layer network: parameter gradients are marked, multiply-used values accumulate, Adam updates
// every parameter, and the SGD step moves parameters against the gradient.
TEST(TrainingGraph, StructureAndSgdStep) {
  Graph g("mlp");
  const auto x = g.add_input("x", {{4, 3}});
  const auto w1 = g.add_param("w1", {{3, 5}});
  const auto w2 = g.add_param("w2", {{5, 2}});
  const auto h = g.add("relu", {g.add("matmul", {x, w1})});
  const auto y = g.add("ewadd", {g.add("matmul", {h, w2}), g.add("reduce_sum", {h}, {{"axes", Ints{1}}})});
  g.mark_output(y);
  const auto adam = derive_training_graph(g);
  ASSERT_EQ(adam.params.size(), 2u);
  for (std::size_t k = 0; k < 2; ++k) {
    const auto& gv = adam.graph.value(adam.param_grads[k]);
    EXPECT_EQ(gv.grad_of, adam.params[k]);
    EXPECT_EQ(gv.kind, ValueKind::kGradient);
    EXPECT_EQ(gv.type.shape, g.type(adam.params[k]).shape);
  }
  int updates = 0, accumulations = 0;
  for (const auto& n : adam.graph.nodes()) {
    updates += n.op->name == "adam_update";
    accumulations += n.name.find("accumulate") != std::string::npos;
  }
  EXPECT_EQ(updates, 2);
  EXPECT_EQ(accumulations, 1);  // h feeds two consumers
  int state_in = 0, state_out = 0;
  for (auto v : adam.graph.values_of(ValueKind::kOptState))
    (adam.graph.value(v).producer < 0 ? state_in : state_out)++;
  EXPECT_EQ(state_in, 4);   // m and v of both parameters
  EXPECT_EQ(state_out, 4);  // their updated values
  EXPECT_EQ(adam.graph.param_count(), g.param_count());

  TrainOptions sgd;
  sgd.optimizer = Optimizer::kSgd;
  sgd.lr = 0.1;
  const auto tg = derive_training_graph(g, sgd);
  const auto v = execute<double>(tg.graph);
  const auto& p = v[static_cast<std::size_t>(w1)];
  const auto& d = v[static_cast<std::size_t>(tg.param_grads[0])];
  const auto updated = tg.graph.outputs()[1];
  for (std::size_t i = 0; i < p.size(); ++i)
    EXPECT_NEAR(v[static_cast<std::size_t>(updated)][i], p[i] - 0.1 * d[i], 1e-12);
}

TEST(TrainingGraph, RejectsBackwardGraphs) {
  Graph g;
  const auto x = g.add_input("x", {{2}});
  g.mark_output(g.add("relu_grad", {x, x}));
  EXPECT_THROW(derive_training_graph(g), GraphError);
}

}  // namespace
}  // namespace strata::models
