// NasRNN: the recurrent cell found by neural architecture search (Zoph & Le 2017) as TASO evaluates it
// (examples/nasrnn.py): per step, eight gates combine the input and the state with two matmuls each, then a
// fixed tree of sigmoid/tanh/relu and add/mul nodes; `seq_len` steps unrolled.
#include "models/zoo/builder.h"
#include "models/zoo/zoo.h"

namespace strata::models::zoo {

Graph build_nasrnn(const ZooOptions& o, std::int64_t hidden) {
  Graph g("nasrnn");
  NetBuilder b(g, o.dtype);
  const std::int64_t batch = o.batch > 0 ? o.batch : 1, steps = o.seq_len > 0 ? o.seq_len : 5;
  ValueId state = b.param("initial_state", {batch, hidden});
  for (std::int64_t t = 0; t < steps; ++t) {
    auto s = b.scope("step" + std::to_string(t));
    const auto x = b.input("x" + std::to_string(t), {batch, hidden}, o.dtype);
    std::vector<ValueId> gate;
    for (int i = 0; i < 8; ++i) {
      auto gs = b.scope("gate" + std::to_string(i));
      gate.push_back(
          b.add(b.linear(x, hidden, false, "wx"), b.linear(state, hidden, false, "wh"), "combine"));
    }
    auto un = [&](const char* op, ValueId v, const std::string& n) { return b.op(op, {v}, {}, n); };
    std::vector<ValueId> mid;
    mid.push_back(b.add(un("relu", gate[0], "r0"), un("sigmoid", gate[3], "s3"), "m0"));
    mid.push_back(b.add(un("sigmoid", gate[1], "s1"), un("tanh", gate[2], "t2"), "m1"));
    mid.push_back(b.mul(un("sigmoid", gate[4], "s4"), un("tanh", gate[5], "t5"), "m2"));
    mid.push_back(b.mul(un("sigmoid", gate[6], "s6"), un("relu", gate[7], "r7"), "m3"));
    mid.push_back(b.add(un("sigmoid", mid[1], "sm1"), un("tanh", mid[2], "tm2"), "m4"));
    mid.push_back(b.mul(un("tanh", mid[0], "tm0"), un("tanh", mid[3], "tm3"), "m5"));
    mid.push_back(b.mul(un("tanh", mid[4], "tm4"), un("tanh", mid[5], "tm5"), "m6"));
    state = un("tanh", mid[6], "state");
  }
  g.mark_output(state);
  return g;
}

}  // namespace strata::models::zoo
