// The fused attention operator: shape rule (incl. grouped-query attention), the kernel against the unfused
// batch_matmul -> scale -> softmax -> batch_matmul composition in both number systems, FLOP and byte counts
// by hand. Its gradient is checked against finite differences in grad_test.cc.
#include <cmath>

#include "models/exec/executor.h"
#include "models/ir/graph.h"
#include "models/train/training.h"
#include "tests/models/test_util.h"

namespace strata::models {
namespace {

using testing::Lit;

TEST(Attention, ShapeRuleAndErrors) {
  auto out_shape = [](std::vector<Lit> in) {
    const auto r = testing::build("attention", in);
    return r.g.type(r.outs[0]).shape;
  };
  EXPECT_EQ(out_shape({{{2, 4, 3, 5}, {}}, {{2, 2, 3, 5}, {}}, {{2, 2, 3, 5}, {}}}), (Shape{2, 4, 3, 5}));
  // Cross-attention shapes: 3 queries over 6 keys.
  EXPECT_EQ(out_shape({{{1, 2, 3, 4}, {}}, {{1, 2, 6, 4}, {}}, {{1, 2, 6, 4}, {}}}), (Shape{1, 2, 3, 4}));
  auto fails = [](std::vector<Lit> in, Attrs a, const std::string& what) {
    try {
      testing::build("attention", in, std::move(a));
      ADD_FAILURE() << "accepted: " << what;
    } catch (const GraphError& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  fails({{{1, 4, 3, 2}, {}}, {{1, 3, 3, 2}, {}}, {{1, 3, 3, 2}, {}}}, {}, "must divide query heads 4");
  fails({{{1, 4, 3, 2}, {}}, {{1, 2, 3, 2}, {}}, {{1, 2, 4, 2}, {}}}, {}, "differ");
  fails({{{1, 4, 3, 2}, {}}, {{1, 2, 3, 3}, {}}, {{1, 2, 3, 3}, {}}}, {}, "head dim");
  fails({{{4, 3, 2}, {}}, {{1, 2, 3, 2}, {}}, {{1, 2, 3, 2}, {}}}, {}, "rank 4");
  fails({{{1, 2, 4, 2}, {}}, {{1, 2, 3, 2}, {}}, {{1, 2, 3, 2}, {}}}, {{"causal", std::int64_t{1}}},
        "at least as many keys");
  fails({{{1, 2, 3, 2}, {}}, {{1, 2, 3, 2}, {}}, {{1, 2, 3, 2}, {}}}, {{"causal", std::int64_t{2}}},
        "causal must be 0 or 1");
  fails({{{1, 2, 3, 2}, {}}, {{1, 2, 3, 2}, {}}, {{1, 2, 3, 2}, {}}}, {{"scale", -1.0}}, "scale");
}

// Equal keys: every visible key gets the same weight, so row i of the output is the mean of the visible
// value rows (causal: rows 0..i).
TEST(Attention, EqualKeysAverageTheVisibleValues) {
  const std::vector<double> k(6, 0.5), v = {1, 10, 2, 20, 6, 60};  // [1,1,3,2]
  const auto o = testing::run1(
      "attention", {{{1, 1, 3, 2}, {0.3, -1, 2, 0.1, 1, 1}}, {{1, 1, 3, 2}, k}, {{1, 1, 3, 2}, v}},
      {{"causal", std::int64_t{1}}});
  testing::expect_near(o, {1, 10, 1.5, 15, 3, 30}, 1e-12);
}

struct Composition {
  Graph g;
  ValueId q, k, v, fused, unfused;
};

// q [B,H,S,D], k/v [B,Hkv,S,D]: the fused operator and the unfused composition on the same inputs, k and v
// expanded to H heads for the unfused form (each key/value head repeated H/Hkv times).
Composition compose(std::int64_t b, std::int64_t h, std::int64_t hkv, std::int64_t s, std::int64_t d,
                    bool causal, double scale_attr) {
  Composition c;
  Graph& g = c.g;
  c.q = g.add_input("q", {{b, h, s, d}});
  c.k = g.add_input("k", {{b, hkv, s, d}});
  c.v = g.add_input("v", {{b, hkv, s, d}});
  c.fused = g.add("attention", {c.q, c.k, c.v}, {{"causal", std::int64_t{causal}}, {"scale", scale_attr}});
  auto heads = [&](ValueId x) {
    if (hkv == h) return x;
    const auto r = g.add("reshape", {x}, {{"shape", Ints{b, hkv, 1, s, d}}});
    const auto e = g.add("expand", {r}, {{"shape", Ints{b, hkv, h / hkv, s, d}}});
    return g.add("reshape", {e}, {{"shape", Ints{b, h, s, d}}});
  };
  const double scale = scale_attr == 0 ? 1 / std::sqrt(static_cast<double>(d)) : scale_attr;
  auto scores = g.add("batch_matmul", {c.q, heads(c.k)}, {{"trans_b", std::int64_t{1}}});
  scores = g.add("scalar_mul", {scores, g.add_constant("scale", {{}}, {scale})});
  const auto p = g.add("softmax", {scores}, {{"causal", std::int64_t{causal}}});
  c.unfused = g.add("batch_matmul", {p, heads(c.v)});
  g.mark_output(c.fused);
  g.mark_output(c.unfused);
  return c;
}

TEST(Attention, KernelEqualsTheUnfusedComposition) {
  struct Case {
    std::int64_t b, h, hkv, s, d;
    bool causal;
    double scale;
  };
  for (const Case& t : {Case{2, 4, 4, 5, 3, false, 0.0}, Case{1, 4, 2, 6, 4, true, 0.0},
                        Case{2, 6, 1, 3, 2, true, 0.25}, Case{1, 2, 2, 1, 8, false, 1.0}}) {
    SCOPED_TRACE(::testing::Message() << "h=" << t.h << " hkv=" << t.hkv << " causal=" << t.causal);
    const auto c = compose(t.b, t.h, t.hkv, t.s, t.d, t.causal, t.scale);
    const auto real = execute<double>(c.g);
    const auto& f = real[static_cast<std::size_t>(c.fused)];
    testing::expect_near(f, real[static_cast<std::size_t>(c.unfused)], 1e-12);
    // In the prime field (softmax's uninterpreted exp), the two forms agree exactly.
    const auto field = execute<ModP>(c.g);
    EXPECT_EQ(field[static_cast<std::size_t>(c.fused)], field[static_cast<std::size_t>(c.unfused)]);
  }
}

TEST(Attention, FlopsAndBytesByHand) {
  Graph g;
  const auto q = g.add_input("q", {{2, 8, 128, 64}, DType::kF16});
  const auto kv = g.add_input("k", {{2, 2, 128, 64}, DType::kF16});
  const auto v = g.add_input("v", {{2, 2, 128, 64}, DType::kF16});
  const auto o = g.add("attention", {q, kv, v});
  const auto oc = g.add("attention", {q, kv, v}, {{"causal", std::int64_t{1}}});
  // 4 B H S^2 D = 4 * 2 * 8 * 128 * 128 * 64; causal: half.
  EXPECT_DOUBLE_EQ(node_flops(g, g.node(0)), 67108864.0);
  EXPECT_DOUBLE_EQ(node_flops(g, g.node(1)), 33554432.0);
  // q and o: 2*8*128*64 halves (262144 B each); k and v: 2*2*128*64 halves (65536 B each).
  EXPECT_DOUBLE_EQ(node_bytes(g, g.node(0)), 2 * 262144.0 + 2 * 65536.0);
  EXPECT_EQ(g.node(0).op->kind, OpKind::kContraction);
  g.mark_output(o);
  g.mark_output(oc);

  TrainOptions opt;
  opt.optimizer = Optimizer::kNone;
  opt.input_grads = true;
  const auto tg = derive_training_graph(g, opt);
  int grads = 0;
  for (const auto& n : tg.graph.nodes()) {
    if (n.op->name != "attention_grad") continue;
    ++grads;
    const bool causal = n.attrs.i("causal") != 0;
    // FlashAttention-2 backward: 5 GEMMs of the forward's 2, i.e. 2.5 x 67108864 (half when causal).
    EXPECT_DOUBLE_EQ(node_flops(tg.graph, n), causal ? 83886080.0 : 167772160.0);
    // q, o, do, dq: 262144 B each; k, v, dk, dv: 65536 B each; the logsumexp rows: 2*8*128 fp32.
    EXPECT_DOUBLE_EQ(node_bytes(tg.graph, n), 4 * 262144.0 + 4 * 65536.0 + 4.0 * 2 * 8 * 128);
    EXPECT_EQ(n.outputs.size(), 3u);
  }
  EXPECT_EQ(grads, 2);
}

}  // namespace
}  // namespace strata::models
