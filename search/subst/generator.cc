#include "search/subst/generator.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <unordered_map>

#include <fmt/format.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>

#include "models/exec/executor.h"
#include "models/ir/graph.h"
#include "models/ir/op_def.h"
#include "search/subst/coverage.h"

namespace strata::search::subst {
namespace {

using models::ModP;
using models::Shape;

constexpr int kInputs = 20;  // TASO's input_1..input_20 (taso.md §2.3)
constexpr int kMaxOps = 4;
constexpr int kMaxTensors = kInputs + 2 * kMaxOps;

std::uint64_t mix(std::uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Shape class of each input: renamings only permute inputs inside a class (x1..x3, w1..w3, ...).
int input_class(int i) { return i < 18 ? i / 3 : 6 + (i - 18); }

struct EncOp {
  std::uint8_t tmpl = 0;
  std::uint8_t nin = 0;
  std::array<std::uint8_t, 2> in{};
  friend auto operator<=>(const EncOp&, const EncOp&) = default;
  friend bool operator==(const EncOp&, const EncOp&) = default;
};
// A graph: operator instances in a topological order; tensors are numbered inputs first, then op outputs in order
// (a split has two).
struct Enc {
  std::uint8_t n = 0;
  std::array<EncOp, kMaxOps> ops{};
  friend auto operator<=>(const Enc&, const Enc&) = default;
  friend bool operator==(const Enc&, const Enc&) = default;
};

bool is_split(Op op) { return op == Op::split_0 || op == Op::split_1; }
Shape constant_shape(Op op) {
  switch (op) {
    case Op::Imatmul: return {4, 4};
    case Op::Iewmul: return {2, 4, 5, 5};
    case Op::Iconv:
    case Op::Cpool: return {4};
    default: return {};
  }
}

template <class T>
struct Tensor {
  Shape shape;
  std::array<std::vector<T>, 2> data;  // ModP: two independent samples; double: one
  std::array<std::int64_t, 4> split_at{};  // most recent concatenation boundary per axis (0: none)
  std::uint64_t hash = 0;
};

template <class T>
std::uint64_t hash_tensor(const Tensor<T>& t) {
  std::uint64_t h = mix(t.shape.size());
  for (auto d : t.shape) h = mix(h ^ static_cast<std::uint64_t>(d));
  if constexpr (std::is_same_v<T, ModP>)
    for (const auto& s : t.data)
      for (auto x : s) h = mix(h ^ x.v);
  return h;
}

// Evaluates operator instances through the IR's op table (shape rule + kernel), caching attributes per shapes.
template <class T>
class Evaluator {
 public:
  explicit Evaluator(const std::vector<OpInstance>& ops) : ops_(ops) {}

  // Appends the outputs of instance `tmpl` on `args` to `out`; false when it does not apply.
  bool apply(int tmpl, std::span<const Tensor<T>* const> args, std::vector<Tensor<T>>& out) {
    const auto& inst = ops_[static_cast<std::size_t>(tmpl)];
    std::vector<Shape> shapes;
    for (auto* a : args) shapes.push_back(a->shape);
    std::int64_t split_point = 0;
    if (is_split(inst.op)) {
      const auto axis = static_cast<std::size_t>(inst.params[0]);
      if (axis >= 4 || axis >= shapes[0].size()) return false;
      split_point = args[0]->split_at[axis];
      if (split_point == 0) return false;
    }
    const Prepared* prep = prepare(tmpl, shapes, split_point);
    if (!prep) return false;
    const std::size_t samples = std::is_same_v<T, ModP> ? 2 : 1;
    const std::size_t first = out.size();
    for (const auto& type : prep->out_types) {
      Tensor<T> t;
      t.shape = type.shape;
      for (std::size_t s = 0; s < samples; ++s) t.data[s].assign(static_cast<std::size_t>(type.numel()), T{});
      out.push_back(std::move(t));
    }
    for (std::size_t s = 0; s < samples; ++s) {
      std::vector<models::In<T>> ins;
      std::vector<models::Out<T>> outs;
      for (std::size_t i = 0; i < args.size(); ++i)
        ins.push_back({args[i]->data[s].data(), &args[i]->shape, static_cast<std::int64_t>(args[i]->data[s].size())});
      for (std::size_t o = first; o < out.size(); ++o)
        outs.push_back({out[o].data[s].data(), &out[o].shape, static_cast<std::int64_t>(out[o].data[s].size())});
      const models::KernelCall<T> call{ins, outs, prep->attrs};
      if constexpr (std::is_same_v<T, double>) prep->def->kernel.real(call); else prep->def->kernel.modp(call);
    }
    // Split trees (taso.md §2.2), simplified to the most recent boundary per axis.
    for (std::size_t o = first; o < out.size(); ++o) {
      auto& t = out[o];
      const bool elementwise = inst.op == Op::ewadd || inst.op == Op::ewmul;
      if (inst.op == Op::relu || inst.op == Op::smul) t.split_at = args[0]->split_at;
      if (elementwise)
        for (std::size_t d = 0; d < 4; ++d)
          t.split_at[d] = args[0]->split_at[d] == args[1]->split_at[d] ? args[0]->split_at[d] : 0;
      if (inst.op == Op::concat) {
        const auto axis = static_cast<std::size_t>(inst.params[0]);
        for (std::size_t d = 0; d < 4; ++d)
          t.split_at[d] = args[0]->split_at[d] == args[1]->split_at[d] ? args[0]->split_at[d] : 0;
        t.split_at[axis] = args[0]->shape[axis];
      }
      if (is_split(inst.op)) {
        t.split_at = args[0]->split_at;
        t.split_at[static_cast<std::size_t>(inst.params[0])] = 0;
      }
      t.hash = hash_tensor(t);
    }
    return true;
  }

 private:
  struct Prepared {
    const models::OpDef* def = nullptr;
    models::Attrs attrs;
    std::vector<models::TensorType> out_types;
  };
  const Prepared* prepare(int tmpl, const std::vector<Shape>& shapes, std::int64_t split_point) {
    auto key = std::make_tuple(tmpl, shapes, split_point);
    auto it = cache_.find(key);
    if (it != cache_.end()) return it->second ? &*it->second : nullptr;
    std::optional<Prepared> prep;
    const auto& inst = ops_[static_cast<std::size_t>(tmpl)];
    if (auto ir = to_ir(inst, shapes, split_point, constant_shape(inst.op))) {
      try {
        Prepared p;
        p.def = &models::OpRegistry::instance().get(ir->name);
        p.attrs = models::complete_attrs(*p.def, ir->attrs, "generator");
        std::vector<models::TensorType> in;
        for (const auto& s : shapes) in.push_back({s, models::DType::kF32});
        p.out_types = p.def->shape(in, p.attrs);
        prep = std::move(p);
      } catch (const std::invalid_argument&) {
        // shape rule rejected the combination
      }
    }
    auto [pos, _] = cache_.emplace(std::move(key), std::move(prep));
    return pos->second ? &*pos->second : nullptr;
  }
  const std::vector<OpInstance>& ops_;
  std::map<std::tuple<int, std::vector<Shape>, std::int64_t>, std::optional<Prepared>> cache_;
};

template <class T>
std::vector<Tensor<T>> make_inputs(std::uint64_t seed) {
  std::vector<Tensor<T>> in;
  for (int i = 1; i <= kInputs; ++i) {
    Tensor<T> t;
    t.shape = *taso_generator_input_shape(i);
    const auto name = fmt::format("input_{}", i);
    const std::size_t samples = std::is_same_v<T, ModP> ? 2 : 1;
    for (std::size_t s = 0; s < samples; ++s)
      t.data[s] = models::random_values<T>(models::numel(t.shape), seed + s, name);
    t.hash = hash_tensor(t);
    in.push_back(std::move(t));
  }
  return in;
}

int op_outputs(const std::vector<OpInstance>& ops, const EncOp& e) {
  return is_split(ops[e.tmpl].op) ? 2 : 1;
}

// Replays an encoded graph; returns all tensors.
template <class T>
std::vector<Tensor<T>> replay(const Enc& g, Evaluator<T>& ev,
                              const std::vector<Tensor<T>>& inputs) {
  std::vector<Tensor<T>> ts = inputs;
  ts.reserve(kMaxTensors);
  for (int k = 0; k < g.n; ++k) {
    const auto& e = g.ops[static_cast<std::size_t>(k)];
    std::array<const Tensor<T>*, 2> args{};
    for (int a = 0; a < e.nin; ++a) args[static_cast<std::size_t>(a)] = &ts[e.in[static_cast<std::size_t>(a)]];
    std::vector<Tensor<T>> out;
    if (!ev.apply(e.tmpl, std::span(args.data(), e.nin), out)) throw std::logic_error("generator: replay failed");
    for (auto& t : out) ts.push_back(std::move(t));
  }
  return ts;
}

// Unconsumed operator outputs of an encoded graph, by tensor index.
std::vector<int> graph_outputs(const Enc& g, const std::vector<OpInstance>& ops) {
  std::vector<int> used(kMaxTensors, 0);
  int next = kInputs;
  std::vector<int> produced;
  for (int k = 0; k < g.n; ++k) {
    const auto& e = g.ops[static_cast<std::size_t>(k)];
    for (int a = 0; a < e.nin; ++a) ++used[e.in[static_cast<std::size_t>(a)]];
    for (int o = 0; o < op_outputs(ops, e); ++o) produced.push_back(next++);
  }
  std::vector<int> outs;
  for (int t : produced)
    if (!used[static_cast<std::size_t>(t)]) outs.push_back(t);
  return outs;
}

// Every shape class's used inputs are a prefix of the class (x1, x1 x2, ...): one representative per renaming.
bool inputs_prefix_closed(const Enc& g) {
  std::array<bool, kInputs> used{};
  for (int k = 0; k < g.n; ++k)
    for (int a = 0; a < g.ops[static_cast<std::size_t>(k)].nin; ++a) {
      const int t = g.ops[static_cast<std::size_t>(k)].in[static_cast<std::size_t>(a)];
      if (t < kInputs) used[static_cast<std::size_t>(t)] = true;
    }
  for (int i = 1; i < kInputs; ++i)
    if (used[static_cast<std::size_t>(i)] && input_class(i) == input_class(i - 1) && !used[static_cast<std::size_t>(i - 1)])
      return false;
  return true;
}

struct Shard {
  std::mutex mu;
  struct Entry {
    Enc rep;
    std::uint32_t count = 0;
  };
  std::unordered_map<std::uint64_t, Entry> table;
};
constexpr std::size_t kShards = 64;

// Depth-first enumeration; calls visit(enc, fingerprint) for every accepted graph.
class Enumerator {
 public:
  Enumerator(const std::vector<OpInstance>& ops, int max_ops, const std::vector<Tensor<ModP>>& inputs)
      : ops_(ops), max_ops_(max_ops), inputs_(inputs), ev_(ops) {}

  // All (instance, inputs) choices applicable to the input tensors: the parallel split of the search.
  std::vector<EncOp> first_choices() {
    tensors_ = inputs_;
    return choices();
  }

  template <class Visit>
  void run_from(const EncOp& first, Visit&& visit) {
    tensors_ = inputs_;
    tensors_.reserve(kMaxTensors);
    enc_ = Enc{};
    step(first, visit);
  }

 private:
  std::vector<EncOp> choices() const {
    std::vector<EncOp> out;
    const int nt = static_cast<int>(tensors_.size());
    for (std::size_t t = 0; t < ops_.size(); ++t) {
      const auto& info = op_info(ops_[t].op);
      const int arity = info.tensor_args;
      if (arity == 0) {
        out.push_back({static_cast<std::uint8_t>(t), 0, {}});
      } else if (arity == 1) {
        for (int a = 0; a < nt; ++a) {
          if (ops_[t].op == Op::enlarge && a >= kInputs) continue;  // TASO: enlarge applies to inputs only
          out.push_back({static_cast<std::uint8_t>(t), 1, {static_cast<std::uint8_t>(a), 0}});
        }
      } else {
        for (int a = 0; a < nt; ++a)
          for (int b = 0; b < nt; ++b)
            out.push_back({static_cast<std::uint8_t>(t), 2, {static_cast<std::uint8_t>(a), static_cast<std::uint8_t>(b)}});
      }
    }
    return out;
  }

  bool consumes_last(const EncOp& e) const {
    if (enc_.n == 0) return true;
    const int last_outputs = op_outputs(ops_, enc_.ops[enc_.n - 1u]);
    const int first_last = static_cast<int>(tensors_.size()) - last_outputs;
    for (int a = 0; a < e.nin; ++a)
      if (e.in[static_cast<std::size_t>(a)] >= first_last) return true;
    return false;
  }

  template <class Visit>
  void step(const EncOp& e, Visit& visit) {
    // Duplicated computation: the same instance on the same inputs twice.
    for (int k = 0; k < enc_.n; ++k)
      if (enc_.ops[static_cast<std::size_t>(k)] == e) return;
    // One topological order per graph: independent neighbours in increasing order.
    if (enc_.n > 0 && !consumes_last(e) && !(enc_.ops[enc_.n - 1u] < e)) return;
    std::array<const Tensor<ModP>*, 2> args{};
    for (int a = 0; a < e.nin; ++a) args[static_cast<std::size_t>(a)] = &tensors_[e.in[static_cast<std::size_t>(a)]];
    std::vector<Tensor<ModP>> out;
    if (!ev_.apply(e.tmpl, std::span(args.data(), e.nin), out)) return;
    // A tensor equal to an existing one (or an input) is redundant computation (TASO's DFS check).
    for (const auto& o : out)
      for (const auto& t : tensors_)
        if (t.hash == o.hash) return;
    if (out.size() == 2 && out[0].hash == out[1].hash) return;
    const std::size_t before = tensors_.size();
    for (auto& o : out) tensors_.push_back(std::move(o));
    enc_.ops[enc_.n++] = e;
    if (inputs_prefix_closed(enc_)) visit(enc_, fingerprint());
    if (enc_.n < max_ops_)
      for (const auto& next : choices()) step(next, visit);
    --enc_.n;
    enc_.ops[enc_.n] = EncOp{};
    tensors_.resize(before);
  }

  std::uint64_t fingerprint() const {
    std::vector<std::uint64_t> hs;
    for (int t : graph_outputs(enc_, ops_)) hs.push_back(tensors_[static_cast<std::size_t>(t)].hash);
    std::sort(hs.begin(), hs.end());
    std::uint64_t h = 0xF1A6;
    for (auto x : hs) h = mix(h ^ x);
    return h;
  }

  const std::vector<OpInstance>& ops_;
  int max_ops_;
  const std::vector<Tensor<ModP>>& inputs_;
  Evaluator<ModP> ev_;
  std::vector<Tensor<ModP>> tensors_;
  Enc enc_;
};

Term tensor_term(const Enc& g, const std::vector<OpInstance>& ops, int tensor, std::vector<int>& used_inputs) {
  if (tensor < kInputs) {
    used_inputs.push_back(tensor);
    return Term::variable(fmt::format("input_{}", tensor + 1));
  }
  int next = kInputs;
  for (int k = 0; k < g.n; ++k) {
    const auto& e = g.ops[static_cast<std::size_t>(k)];
    const int n_out = op_outputs(ops, e);
    if (tensor < next + n_out) {
      const auto& inst = ops[e.tmpl];
      Op op = inst.op;
      if (is_split(op)) op = tensor == next ? Op::split_0 : Op::split_1;
      std::vector<Param> params;
      for (auto p : inst.params) params.push_back(Param{p, {}});
      std::vector<Term> args;
      for (int a = 0; a < e.nin; ++a) args.push_back(tensor_term(g, ops, e.in[static_cast<std::size_t>(a)], used_inputs));
      return Term::apply(op, std::move(params), std::move(args));
    }
    next += n_out;
  }
  throw std::logic_error("generator: bad tensor index");
}

std::size_t peak_rss_kib() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmHWM:", 0) == 0) return static_cast<std::size_t>(std::stoull(line.substr(6)));
  return 0;
}

void collect_input_ops(const Term& t, std::set<std::string>& out) {
  if (t.is_variable()) return;
  bool all_vars = !t.args().empty();
  for (const auto& a : t.args()) {
    all_vars = all_vars && a.is_variable();
    collect_input_ops(a, out);
  }
  if (all_vars) out.insert(to_string(t));
}

}  // namespace

bool has_common_subgraph(const Rule& rule) {
  std::set<std::string> lhs, rhs;
  for (const auto& eq : rule.outputs) {
    collect_input_ops(eq.lhs, lhs);
    collect_input_ops(eq.rhs, rhs);
  }
  for (const auto& s : lhs)
    if (rhs.contains(s)) return true;
  return false;
}

bool has_common_supergraph(const Rule& rule) {
  if (rule.outputs.size() != 1) return false;
  const auto& l = rule.outputs[0].lhs;
  const auto& r = rule.outputs[0].rhs;
  if (l.is_variable() || r.is_variable() || l.op() != r.op() || l.params() != r.params()) return false;
  if (l.args().empty()) return false;
  int differ = 0;
  for (std::size_t i = 0; i < l.args().size(); ++i) differ += l.args()[i] == r.args()[i] ? 0 : 1;
  return differ <= 1;
}

std::vector<OpInstance> parse_operator_set(std::string_view spec) {
  std::vector<OpInstance> out;
  auto add = [&](Op op, std::vector<std::int64_t> p = {}) {
    OpInstance inst{op, std::move(p)};
    if (std::find(out.begin(), out.end(), inst) == out.end()) out.push_back(std::move(inst));
  };
  auto add_name = [&](std::string_view n) {
    if (n == "ewadd") add(Op::ewadd);
    else if (n == "ewmul") add(Op::ewmul);
    else if (n == "smul") add(Op::smul);
    else if (n == "matmul") add(Op::matmul);
    else if (n == "transpose") add(Op::transpose);
    else if (n == "relu") add(Op::relu);
    else if (n == "conv2d") add(Op::conv2d, {1, 1, kPadSame, kActiNone});
    else if (n == "conv2d_relu") add(Op::conv2d, {1, 1, kPadSame, kActiRelu});
    else if (n == "poolavg") add(Op::poolavg, {3, 3, 1, 1, kPadSame});
    else if (n == "poolmax") add(Op::poolmax, {3, 3, 1, 1, kPadSame});
    else if (n == "concat") { add(Op::concat, {0}); add(Op::concat, {1}); }
    else if (n == "split") { add(Op::split_0, {0}); add(Op::split_0, {1}); }
    else if (n == "enlarge") add(Op::enlarge, {3, 3});
    else if (n == "constants") { add(Op::Imatmul); add(Op::Iewmul); add(Op::Iconv, {3, 3}); add(Op::Cpool, {3, 3}); }
    else return false;
    return true;
  };
  std::size_t pos = 0;
  while (pos <= spec.size()) {
    const auto comma = std::min(spec.find(',', pos), spec.size());
    const auto name = spec.substr(pos, comma - pos);
    if (name == "taso") {
      for (auto n : {"ewadd", "ewmul", "smul", "matmul", "transpose", "relu", "conv2d", "conv2d_relu", "poolavg",
                     "poolmax", "concat", "split", "enlarge", "constants"})
        add_name(n);
    } else if (!add_name(name)) {
      throw std::invalid_argument(fmt::format(
          "--ops: unknown operator set entry '{}' (expected taso or a comma-separated list of ewadd, ewmul, smul, "
          "matmul, transpose, relu, conv2d, conv2d_relu, poolavg, poolmax, concat, split, enlarge, constants)",
          name));
    }
    pos = comma + 1;
  }
  return out;
}

GeneratorResult generate_rules(const GeneratorOptions& options) {
  if (options.max_ops < 1 || options.max_ops > kMaxOps)
    throw std::invalid_argument(fmt::format("--max-ops must be 1..{}, got {}", kMaxOps, options.max_ops));
  if (options.ops.empty() || options.ops.size() > 255) throw std::invalid_argument("operator set must have 1..255 entries");
  const auto start = std::chrono::steady_clock::now();
  auto say = [&](const std::string& s) {
    if (options.progress) options.progress(s);
  };
  const auto& ops = options.ops;
  const auto inputs = make_inputs<ModP>(options.seed);
  GeneratorResult result;
  auto& st = result.stats;

  std::vector<EncOp> firsts = Enumerator(ops, options.max_ops, inputs).first_choices();
  tbb::enumerable_thread_specific<Enumerator> enumerators([&] { return Enumerator(ops, options.max_ops, inputs); });

  // Pass 1: fingerprint table (representative = smallest encoding, so the result is independent of scheduling).
  std::vector<Shard> shards(kShards);
  std::atomic<std::uint64_t> graphs{0};
  std::atomic<std::size_t> done{0};
  tbb::parallel_for(std::size_t{0}, firsts.size(), [&](std::size_t i) {
    std::uint64_t local = 0;
    enumerators.local().run_from(firsts[i], [&](const Enc& g, std::uint64_t fp) {
      ++local;
      auto& shard = shards[fp % kShards];
      std::lock_guard lock(shard.mu);
      auto [it, inserted] = shard.table.try_emplace(fp, Shard::Entry{g, 0});
      if (!inserted && g < it->second.rep) it->second.rep = g;
      ++it->second.count;
    });
    graphs += local;
    const auto d = ++done;
    if (d % 64 == 0 || d == firsts.size())
      say(fmt::format("  pass 1 (fingerprints): {}/{} subtrees, {} graphs", d, firsts.size(), graphs.load()));
  });
  st.graphs = graphs;
  for (auto& s : shards) st.fingerprints += s.table.size();
  say(fmt::format("enumerated {} graphs of up to {} operators, {} distinct fingerprints", st.graphs, options.max_ops,
                  st.fingerprints));

  // Pass 2: members of colliding classes.
  tbb::enumerable_thread_specific<std::vector<std::pair<std::uint64_t, Enc>>> members;
  tbb::parallel_for(std::size_t{0}, firsts.size(), [&](std::size_t i) {
    auto& mine = members.local();
    enumerators.local().run_from(firsts[i], [&](const Enc& g, std::uint64_t fp) {
      const auto& e = shards[fp % kShards].table.at(fp);
      if (e.count >= 2 && !(e.rep == g)) mine.emplace_back(fp, g);
    });
  });
  std::vector<std::pair<std::uint64_t, Enc>> pairs;
  for (auto& m : members) pairs.insert(pairs.end(), m.begin(), m.end());
  std::sort(pairs.begin(), pairs.end());
  st.candidates = pairs.size();
  say(fmt::format("{} candidate pairs (equal fingerprints)", st.candidates));

  // Floating-point confirmation and conversion to rules (parallel, results in candidate order).
  const auto real_inputs = make_inputs<double>(options.seed + 7);
  std::vector<std::optional<Rule>> rules(pairs.size());
  tbb::enumerable_thread_specific<Evaluator<double>> real_evs([&] { return Evaluator<double>(ops); });
  tbb::enumerable_thread_specific<Evaluator<ModP>> modp_evs([&] { return Evaluator<ModP>(ops); });
  tbb::parallel_for(std::size_t{0}, pairs.size(), [&](std::size_t i) {
    const auto& [fp, member] = pairs[i];
    const Enc& rep = shards[fp % kShards].table.at(fp).rep;
    auto& rev = real_evs.local();
    auto& mev = modp_evs.local();
    const auto a_mod = replay(rep, mev, inputs), b_mod = replay(member, mev, inputs);
    const auto a_real = replay(rep, rev, real_inputs), b_real = replay(member, rev, real_inputs);
    auto a_out = graph_outputs(rep, ops), b_out = graph_outputs(member, ops);
    if (a_out.size() != b_out.size()) return;
    // Pair outputs by their prime-field hash (the fingerprint is a multiset of these).
    std::vector<std::pair<int, int>> matched;
    std::vector<bool> taken(b_out.size(), false);
    for (int ta : a_out) {
      bool found = false;
      for (std::size_t j = 0; j < b_out.size() && !found; ++j)
        if (!taken[j] && a_mod[static_cast<std::size_t>(ta)].hash == b_mod[static_cast<std::size_t>(b_out[j])].hash) {
          taken[j] = found = true;
          matched.emplace_back(ta, b_out[j]);
        }
      if (!found) return;
    }
    for (auto [ta, tb] : matched) {
      const auto& x = a_real[static_cast<std::size_t>(ta)].data[0];
      const auto& y = b_real[static_cast<std::size_t>(tb)].data[0];
      if (x.size() != y.size()) return;
      for (std::size_t k = 0; k < x.size(); ++k)
        if (!(std::fabs(x[k] - y[k]) <= options.tolerance * std::max({1.0, std::fabs(x[k]), std::fabs(y[k])}))) return;
    }
    Rule r;
    std::vector<int> used;
    for (auto [ta, tb] : matched)
      r.outputs.push_back({tensor_term(rep, ops, ta, used), tensor_term(member, ops, tb, used)});
    std::sort(used.begin(), used.end());
    used.erase(std::unique(used.begin(), used.end()), used.end());
    for (int u : used) r.inputs.push_back({fmt::format("input_{}", u + 1), taso_generator_input_shape(u + 1)});
    rules[i] = std::move(r);
  });
  std::vector<Rule> confirmed;
  for (auto& r : rules)
    if (r) confirmed.push_back(std::move(*r));
  st.float_rejected = st.candidates - confirmed.size();
  say(fmt::format("{} confirmed in double precision ({} rejected)", confirmed.size(), st.float_rejected));

  // Pruning stages.
  std::set<std::string> seen_exact;
  std::vector<Rule> stage1;
  for (auto& r : confirmed) {
    std::vector<std::string> eqs;
    for (const auto& e : r.outputs) {
      auto l = to_string(e.lhs), rr = to_string(e.rhs);
      eqs.push_back(std::min(l, rr) + "==" + std::max(l, rr));
    }
    std::sort(eqs.begin(), eqs.end());
    std::string key = fmt::format("{}", fmt::join(eqs, ";"));
    if (seen_exact.insert(key).second) stage1.push_back(std::move(r));
  }
  st.after_duplicates = stage1.size();
  std::set<std::string> seen_canonical;
  std::vector<Rule> stage2;
  for (auto& r : stage1)
    if (seen_canonical.insert(canonical_form(r)).second) stage2.push_back(std::move(r));
  st.after_renaming = stage2.size();
  for (auto& r : stage2)
    if (!has_common_subgraph(r) && !has_common_supergraph(r)) result.rules.push_back(std::move(r));
  st.after_common_subgraph = result.rules.size();
  for (std::size_t i = 0; i < result.rules.size(); ++i) {
    result.rules[i].name = fmt::format("gen{}", i + 1);
    result.rules[i].origin.clear();
  }
  say(fmt::format("pruning: {} after exact duplicates, {} after input renaming, {} after common subgraph/supergraph",
                  st.after_duplicates, st.after_renaming, st.after_common_subgraph));
  st.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  st.peak_rss_kib = peak_rss_kib();
  return result;
}

}  // namespace strata::search::subst
