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

// LSTM language models as FlexFlow evaluated them (Jia, Zaharia, Aiken, SysML 2019, arXiv 1807.05358, §8:
// RNNTC, RNNLM, NMT). Sizes follow FlexFlow's released RNN example (github.com/flexflow/FlexFlow, nmt/nmt.cc:
// hidden and embedding 2048, vocabulary 20 * 1024, 20 unrolled steps, 64 samples per GPU). Each layer's
// weights are one parameter shared by every step (FlexFlow's LSTM operator per step and layer).
namespace strata::models::zoo {
namespace {

struct LstmState {
  ValueId h, c;
};

// One LSTM layer's weights: W[(in + hidden), 4 hidden] on [x, h] and a bias of 4 hidden (gates i, f, g, o).
struct LstmWeights {
  ValueId w, b;
  std::int64_t hidden;
};

LstmWeights lstm_weights(NetBuilder& b, std::int64_t in, std::int64_t hidden) {
  return {b.param("weight", {in + hidden, 4 * hidden}), b.param("bias", {4 * hidden}), hidden};
}

// One step (Hochreiter & Schmidhuber 1997 with a forget gate): [i f g o] = [x h] W + b,
// c' = sigmoid(f) c + sigmoid(i) tanh(g), h' = sigmoid(o) tanh(c').
LstmState lstm_cell(NetBuilder& b, const LstmWeights& w, ValueId x, LstmState s) {
  const auto xh = b.concat({x, s.h}, 1, "xh");
  const auto z = b.op("ewadd", {b.op("matmul", {xh, w.w}, {}, "gates"), w.b}, {}, "gates.bias_add");
  const auto parts = b.graph().add_node(
      "split", {z}, {{"axis", std::int64_t{1}}, {"sizes", Ints(4, w.hidden)}}, b.name("split"));
  auto un = [&](const char* op, ValueId v, const std::string& n) { return b.op(op, {v}, {}, n); };
  const auto c = b.add(b.mul(un("sigmoid", parts[1], "f"), s.c, "fc"),
                       b.mul(un("sigmoid", parts[0], "i"), un("tanh", parts[2], "g"), "ig"), "c");
  return {b.mul(un("sigmoid", parts[3], "o"), un("tanh", c, "tanh_c"), "h"), c};
}

// A stack of `layers` LSTM layers over `xs` (one [batch, in] value per step), named `prefix`.layer<l>;
// returns the top layer's output per step. Initial states: `init`'s per layer, else inputs (zeros in
// training). `final_states`: where to put each layer's last state.
std::vector<ValueId> lstm_stack(NetBuilder& b, const std::string& prefix, std::vector<ValueId> xs,
                                std::int64_t layers, std::int64_t hidden, const std::vector<LstmState>* init,
                                std::vector<LstmState>* final_states) {
  const std::int64_t batch = b.shape(xs.front())[0];
  for (std::int64_t l = 0; l < layers; ++l) {
    auto ls = b.scope(prefix + ".layer" + std::to_string(l));
    const auto w = lstm_weights(b, b.shape(xs.front())[1], hidden);
    LstmState s = init ? (*init)[static_cast<std::size_t>(l)]
                       : LstmState{b.input(b.name("h0"), {batch, hidden}, b.dtype()),
                                   b.input(b.name("c0"), {batch, hidden}, b.dtype())};
    for (std::size_t t = 0; t < xs.size(); ++t) {
      auto ts = b.scope("step" + std::to_string(t));
      s = lstm_cell(b, w, xs[t], s);
      xs[t] = s.h;
    }
    if (final_states) final_states->push_back(s);
  }
  return xs;
}

// Token ids per step ([batch] each) looked up in one embedding table [vocab, embed].
std::vector<ValueId> embed_steps(NetBuilder& b, const std::string& prefix, std::int64_t steps,
                                 std::int64_t batch, std::int64_t vocab, std::int64_t embed) {
  auto s = b.scope(prefix);
  const auto table = b.param("embedding", {vocab, embed});
  std::vector<ValueId> xs;
  for (std::int64_t t = 0; t < steps; ++t) {
    const auto ids = b.input(b.name("ids" + std::to_string(t)), {batch}, DType::kI64);
    xs.push_back(b.op("embedding", {table, ids}, {}, "lookup" + std::to_string(t)));
  }
  return xs;
}

// Per-step projection to the vocabulary with one shared weight, then softmax.
void vocab_softmax(NetBuilder& b, Graph& g, const std::vector<ValueId>& hs, std::int64_t vocab) {
  auto s = b.scope("output");
  const auto w = b.param("weight", {b.shape(hs.front())[1], vocab});
  const auto bias = b.param("bias", {vocab});
  for (std::size_t t = 0; t < hs.size(); ++t) {
    const std::string n = "step" + std::to_string(t);
    const auto logits =
        b.op("ewadd", {b.op("matmul", {hs[t], w}, {}, n + ".logits"), bias}, {}, n + ".bias_add");
    g.mark_output(b.op("softmax", {logits}, {}, n + ".softmax"));
  }
}

}  // namespace

Graph build_lstm_model(const ZooOptions& o, const LstmModelSpec& spec) {
  Graph g(spec.name);
  NetBuilder b(g, o.dtype);
  const std::int64_t batch = o.batch > 0 ? o.batch : 1, steps = o.seq_len > 0 ? o.seq_len : spec.seq;
  const auto xs = embed_steps(b, "embed", steps, batch, spec.vocab, spec.embed);
  if (spec.kind == LstmModelKind::kClassifier) {  // RNNTC: the last step's top state -> classes
    const auto hs = lstm_stack(b, "lstm", xs, spec.layers, spec.hidden, nullptr, nullptr);
    auto s = b.scope("classifier");
    g.mark_output(b.op("softmax", {b.linear(hs.back(), spec.classes, true, "fc")}, {}, "softmax"));
  } else if (spec.kind == LstmModelKind::kLanguageModel) {  // RNNLM: every step predicts the next word
    vocab_softmax(b, g, lstm_stack(b, "lstm", xs, spec.layers, spec.hidden, nullptr, nullptr), spec.vocab);
  } else {  // NMT: encoder, decoder started from the encoder's final states, Luong dot attention per step
    std::vector<LstmState> enc_final;
    const auto enc = lstm_stack(b, "encoder", xs, spec.layers, spec.hidden, nullptr, &enc_final);
    const auto ys = embed_steps(b, "decoder_embed", steps, batch, spec.vocab, spec.embed);
    auto dec = lstm_stack(b, "decoder", ys, spec.layers, spec.hidden, &enc_final, nullptr);
    // Memory [batch, steps, hidden] from the encoder's top outputs.
    const auto memory = b.reshape(b.concat(enc, 1, "memory.concat"), {batch, steps, spec.hidden}, "memory");
    auto s = b.scope("attention");
    const auto wc = b.param("combine.weight", {2 * spec.hidden, spec.hidden});
    for (std::size_t t = 0; t < dec.size(); ++t) {
      auto ts = b.scope("step" + std::to_string(t));
      const auto q = b.reshape(dec[t], {batch, spec.hidden, 1}, "query");
      const auto scores =
          b.reshape(b.op("batch_matmul", {memory, q}, {}, "scores"), {batch, steps}, "scores.flat");
      const auto p = b.reshape(b.op("softmax", {scores}, {}, "weights"), {batch, 1, steps}, "weights.row");
      const auto ctx =
          b.reshape(b.op("batch_matmul", {p, memory}, {}, "context"), {batch, spec.hidden}, "ctx");
      dec[t] =
          b.op("tanh", {b.op("matmul", {b.concat({ctx, dec[t]}, 1, "cat"), wc}, {}, "combine")}, {}, "out");
    }
    vocab_softmax(b, g, dec, spec.vocab);
  }
  return g;
}

}  // namespace strata::models::zoo
