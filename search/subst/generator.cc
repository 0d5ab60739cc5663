#include "search/subst/generator.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>

#include <fmt/format.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>
#include <tbb/parallel_sort.h>

#include "models/exec/executor.h"
#include "models/ir/op_def.h"
#include "search/subst/coverage.h"
#include "search/subst/fingerprint.h"

namespace strata::search::subst {
namespace {

using models::Shape;
using Clock = std::chrono::steady_clock;

constexpr int kInputs = kGeneratorInputs;
constexpr int kMaxOps = 4;
constexpr int kMaxTensors = kInputs + 2 * kMaxOps;

// TASO's conv enumeration never takes a weight variable (w1..w13) as the data input (its generator.cc).
bool is_weight_input(int t) {
  return (t >= 3 && t < 6) || (t >= 9 && t < 19);
}

// One operator of a graph: instance index and argument tensors (inputs 0..19, then operator outputs in order;
// a split has two).
struct EncOp {
  std::uint8_t tmpl = 0;
  std::uint8_t nin = 0;
  std::array<std::uint8_t, 2> in{};
  friend auto operator<=>(const EncOp&, const EncOp&) = default;
  friend bool operator==(const EncOp&, const EncOp&) = default;
};
struct Enc {
  std::uint8_t n = 0;
  std::array<EncOp, kMaxOps> ops{};
  friend bool operator==(const Enc&, const Enc&) = default;
};

// 16 bits per operator: instance + 1 (6 bits, 0 = no operator), two 5-bit tensor indices.
std::uint64_t pack(const Enc& g) {
  std::uint64_t r = 0;
  for (int k = 0; k < g.n; ++k) {
    const auto& e = g.ops[static_cast<std::size_t>(k)];
    const std::uint64_t word = (std::uint64_t{e.tmpl} + 1) << 10 | std::uint64_t{e.in[0]} << 5 | e.in[1];
    r |= word << (16 * k);
  }
  return r;
}
Enc unpack(std::uint64_t r, const std::vector<OpInstance>& ops) {
  Enc g;
  for (int k = 0; k < kMaxOps; ++k) {
    const auto word = (r >> (16 * k)) & 0xFFFF;
    if (word == 0) break;
    auto& e = g.ops[static_cast<std::size_t>(k)];
    e.tmpl = static_cast<std::uint8_t>((word >> 10) - 1);
    e.in = {static_cast<std::uint8_t>((word >> 5) & 31), static_cast<std::uint8_t>(word & 31)};
    e.nin = static_cast<std::uint8_t>(op_info(ops[e.tmpl].op).tensor_args);
    g.n = static_cast<std::uint8_t>(k + 1);
  }
  return g;
}

int op_outputs(const std::vector<OpInstance>& ops, const EncOp& e) {
  return is_split(ops[e.tmpl].op) ? 2 : 1;
}

// Tensor index -> producing operator position (-1: input) and output number.
struct Producers {
  std::array<std::int8_t, kMaxTensors> op{};
  std::array<std::int8_t, kMaxTensors> out{};
  int tensors = kInputs;
};
Producers producers(const Enc& g, const std::vector<OpInstance>& ops) {
  Producers p;
  p.op.fill(-1);
  for (int k = 0; k < g.n; ++k)
    for (int o = 0; o < op_outputs(ops, g.ops[static_cast<std::size_t>(k)]); ++o) {
      p.op[static_cast<std::size_t>(p.tensors)] = static_cast<std::int8_t>(k);
      p.out[static_cast<std::size_t>(p.tensors)] = static_cast<std::int8_t>(o);
      ++p.tensors;
    }
  return p;
}

// Unconsumed operator outputs of an encoded graph, by tensor index.
std::vector<int> graph_outputs(const Enc& g, const std::vector<OpInstance>& ops) {
  std::array<int, kMaxTensors> used{};
  for (int k = 0; k < g.n; ++k)
    for (int a = 0; a < g.ops[static_cast<std::size_t>(k)].nin; ++a)
      ++used[g.ops[static_cast<std::size_t>(k)].in[static_cast<std::size_t>(a)]];
  std::vector<int> outs;
  const int n = producers(g, ops).tensors;
  for (int t = kInputs; t < n; ++t)
    if (!used[static_cast<std::size_t>(t)]) outs.push_back(t);
  return outs;
}

// Every shape class's used inputs are a prefix of the class (x1, x1 x2, ...): one representative per
// renaming.
int input_class(int i) {
  return i < 18 ? i / 3 : 6 + (i - 18);
}
bool inputs_prefix_closed(const Enc& g) {
  std::uint32_t used = 0;
  for (int k = 0; k < g.n; ++k)
    for (int a = 0; a < g.ops[static_cast<std::size_t>(k)].nin; ++a) {
      const int t = g.ops[static_cast<std::size_t>(k)].in[static_cast<std::size_t>(a)];
      if (t < kInputs) used |= 1u << t;
    }
  for (int i = 1; i < kInputs; ++i)
    if ((used >> i & 1u) && input_class(i) == input_class(i - 1) && !(used >> (i - 1) & 1u)) return false;
  return true;
}

// Position of an operator in TASO's enumeration order (its `ops` list in generator.cc main): the
// representative of a fingerprint class is the graph TASO's depth-first search visits first.
int taso_rank(const OpInstance& inst, const ValueStore& store, std::span<const ValueId> args) {
  switch (inst.op) {
    case Op::matmul:
      return 0;
    case Op::ewadd:
      return 1;
    case Op::ewmul:
      return 2;
    case Op::conv2d: {
      const auto& w = store.shape(args[1]);
      const int relu = inst.params[3] == kActiRelu ? 1 : 0;
      if (w[2] == 3 && w[3] == 3) return 3 + relu;
      if (w[2] == 1 && w[3] == 3) return 5 + relu;
      if (w[2] == 3 && w[3] == 1) return 7 + relu;
      return 26 + relu;
    }
    case Op::poolavg:
      return 9;
    case Op::poolmax:
      return 10;
    case Op::Cpool:
      return 11;
    case Op::Iconv:
      return 12;
    case Op::Imatmul:
      return 13;
    case Op::Iewmul:
      return 14;
    case Op::enlarge:
      return 15;
    case Op::smul:
      return 16;
    case Op::relu:
      return 17;
    case Op::concat:
      return 18 + (store.rank(args[0]) == 4 ? 2 : 0) + (inst.params[0] == 0 ? 1 : 0);
    case Op::split_0:
    case Op::split_1:
      return inst.params[0] == 1 ? 22 : 23;
    case Op::transpose:
      return is_layout_only_transpose(inst) ? 24 : 25;
  }
  return 30;
}

// Whether TASO's search space has an operator with these arguments in some order of the graph: element-wise
// add/mul and concat take their first argument from an earlier tensor than their second (TASO enumerates
// j < k), which for operator outputs is a precedence constraint between their producers.
bool ordered_pair_op(Op op) {
  return op == Op::ewadd || op == Op::ewmul || op == Op::concat;
}

// TASO's key of a graph: the smallest, over the orders TASO can build it in, sequence of (operator rank,
// argument tensor indices); TASO visits graphs in this order and keeps the first of each fingerprint.
std::vector<int> taso_key(const Enc& g, const std::vector<OpInstance>& ops, ValueStore& store) {
  std::array<int, kMaxOps> perm{};
  for (int i = 0; i < g.n; ++i) perm[static_cast<std::size_t>(i)] = i;
  const auto prod = producers(g, ops);
  std::array<int, kMaxOps> first_tensor{};
  {
    int t = kInputs;
    for (int k = 0; k < g.n; ++k) {
      first_tensor[static_cast<std::size_t>(k)] = t;
      t += op_outputs(ops, g.ops[static_cast<std::size_t>(k)]);
    }
  }
  // Values of all tensors (for ranks that depend on argument shapes).
  std::vector<ValueId> values(kMaxTensors);
  for (int i = 0; i < kInputs; ++i) values[static_cast<std::size_t>(i)] = static_cast<ValueId>(i);
  for (int k = 0; k < g.n; ++k) {
    const auto& e = g.ops[static_cast<std::size_t>(k)];
    std::array<ValueId, 2> args{};
    for (int a = 0; a < e.nin; ++a)
      args[static_cast<std::size_t>(a)] = values[e.in[static_cast<std::size_t>(a)]];
    const auto r = store.apply(e.tmpl, std::span(args.data(), e.nin));
    for (int o = 0; o < r.count; ++o)
      values[static_cast<std::size_t>(first_tensor[static_cast<std::size_t>(k)] + o)] =
          r.ids[static_cast<std::size_t>(o)];
  }
  std::array<int, kMaxOps> ranks{};
  for (int k = 0; k < g.n; ++k) {
    const auto& e = g.ops[static_cast<std::size_t>(k)];
    std::array<ValueId, 2> args{};
    for (int a = 0; a < e.nin; ++a)
      args[static_cast<std::size_t>(a)] = values[e.in[static_cast<std::size_t>(a)]];
    ranks[static_cast<std::size_t>(k)] = taso_rank(ops[e.tmpl], store, std::span(args.data(), e.nin));
  }
  std::vector<int> best;
  do {
    // perm[i] = original op placed at position i; new tensor index of each original tensor.
    std::array<int, kMaxOps> pos{};
    for (int i = 0; i < g.n; ++i) pos[static_cast<std::size_t>(perm[static_cast<std::size_t>(i)])] = i;
    std::array<int, kMaxTensors> index{};
    for (int t = 0; t < kInputs; ++t) index[static_cast<std::size_t>(t)] = t;
    int next = kInputs;
    bool valid = true;
    std::vector<int> key;
    for (int i = 0; i < g.n && valid; ++i) {
      const int k = perm[static_cast<std::size_t>(i)];
      const auto& e = g.ops[static_cast<std::size_t>(k)];
      std::array<int, 2> idx{-1, -1};
      for (int a = 0; a < e.nin; ++a) {
        const int t = e.in[static_cast<std::size_t>(a)];
        const int p = prod.op[static_cast<std::size_t>(t)];
        if (p >= 0 && pos[static_cast<std::size_t>(p)] >= i) valid = false;
        idx[static_cast<std::size_t>(a)] = index[static_cast<std::size_t>(t)];
      }
      if (!valid) break;
      if (ordered_pair_op(ops[e.tmpl].op) && idx[0] >= idx[1]) valid = false;
      key.insert(key.end(), {ranks[static_cast<std::size_t>(k)], idx[0], idx[1]});
      for (int o = 0; o < op_outputs(ops, e); ++o)
        index[static_cast<std::size_t>(first_tensor[static_cast<std::size_t>(k)] + o)] = next++;
    }
    if (valid && (best.empty() || key < best)) best = std::move(key);
  } while (std::next_permutation(perm.begin(), perm.begin() + g.n));
  if (best.empty()) best.assign(1, 1 << 20);  // not in TASO's space: after every graph that is
  return best;
}

// ----- depth-first enumeration -----------------------------------------------------------------------------

struct Record {
  std::uint64_t fingerprint;
  std::uint64_t graph;  // pack(Enc)
  friend auto operator<=>(const Record&, const Record&) = default;
};

class Enumerator {
 public:
  Enumerator(const std::vector<OpInstance>& ops, int max_ops, int max_outputs, std::uint64_t seed)
      : ops_(ops), max_ops_(max_ops), max_outputs_(max_outputs), store_(ops, seed) {
    for (std::size_t t = 0; t < ops_.size(); ++t) {
      const auto bit = std::uint64_t{1} << t;
      const Op op = ops_[t].op;
      const int arity = op_info(op).tensor_args;
      if (arity == 0) constants_.push_back(static_cast<std::uint8_t>(t));
      if (op == Op::enlarge) enlarge_bits_ |= bit;
      if (ordered_pair_op(op)) ordered_bits_ |= bit;
      if (op == Op::smul) smul_bits_ |= bit;
      if (op == Op::conv2d) conv_bits_ |= bit;
      if (is_split(op)) split_bits_ |= bit;
      if (arity == 1) unary_bits_ |= bit;
      if (arity == 2) binary_bits_ |= bit;
    }
    unary_mask_.assign(kShapes, kUnknown);
    binary_mask_.resize(kShapes);
  }

  // The first operator of every graph: the parallel split of the search.
  std::vector<EncOp> first_choices() {
    reset();
    std::vector<EncOp> out;
    for_each_choice([&](const EncOp& e) { out.push_back(e); });
    std::sort(out.begin(), out.end());
    return out;
  }

  // Enumerates every graph whose first operator is `first`; visit(fingerprint, packed graph).
  template <class Visit>
  void run_from(const EncOp& first, Visit&& visit) {
    if (store_.memory_bytes() > kStoreBudget) store_.clear();
    reset();
    step(first, visit);
  }

  ValueStore& store() { return store_; }

 private:
  static constexpr std::size_t kStoreBudget = std::size_t{192} << 20;
  static constexpr std::size_t kShapes = ValueStore::kMaxShapes;
  static constexpr std::uint64_t kUnknown = ~std::uint64_t{0};

  void reset() {
    tensors_.clear();
    hashes_.clear();
    for (ValueId i = 0; i < kInputs; ++i) {
      tensors_.push_back(i);
      hashes_.push_back(store_.hash(i));
    }
    producer_.assign(kInputs, -1);
    uses_.assign(kInputs, 0);
    open_outputs_ = 0;
    enc_ = Enc{};
    prec_.fill(0);
  }

  // Instances applicable to arguments of these shapes, as bit masks (filled lazily from the IR's shape
  // rules).
  std::uint64_t unary_mask(int sa) {
    auto& m = unary_mask_[static_cast<std::size_t>(sa)];
    if (m == kUnknown) {
      m = 0;
      for (std::size_t t = 0; t < ops_.size(); ++t)
        if ((unary_bits_ >> t & 1u) && store_.shape_applies(static_cast<int>(t), sa, 0))
          m |= std::uint64_t{1} << t;
    }
    return m;
  }
  std::uint64_t binary_mask(int sa, int sb) {
    auto& row = binary_mask_[static_cast<std::size_t>(sa)];  // rows allocated on first use
    if (row.empty()) row.assign(kShapes, kUnknown);
    auto& m = row[static_cast<std::size_t>(sb)];
    if (m == kUnknown) {
      m = 0;
      for (std::size_t t = 0; t < ops_.size(); ++t)
        if ((binary_bits_ >> t & 1u) && store_.shape_applies(static_cast<int>(t), sa, sb))
          m |= std::uint64_t{1} << t;
    }
    return m;
  }

  template <class F>
  void for_each_choice(F&& f) {
    const int nt = static_cast<int>(tensors_.size());
    // At the last level a choice must consume enough unconsumed outputs to leave at most max_outputs.
    const bool last = enc_.n + 1 == max_ops_;
    const int need = last ? open_outputs_ + 1 - max_outputs_ : -kMaxTensors;  // +1 for a split
    std::array<bool, kMaxTensors> open{};
    std::array<int, kMaxTensors> open_list{};
    int n_open = 0;
    for (int t = kInputs; t < nt; ++t)
      if (uses_[static_cast<std::size_t>(t)] == 0) {
        open[static_cast<std::size_t>(t)] = true;
        open_list[static_cast<std::size_t>(n_open++)] = t;
      }
    if (need <= 0)
      for (auto t : constants_) f(EncOp{t, 0, {}});
    for (int a = 0; a < nt; ++a) {
      const int consumed = open[static_cast<std::size_t>(a)] ? 1 : 0;
      if (consumed < need) continue;
      const int sa = store_.shape_id(tensors_[static_cast<std::size_t>(a)]);
      std::uint64_t m = unary_mask(sa);
      if (a >= kInputs) m &= ~enlarge_bits_;  // TASO: enlarge applies to inputs only
      if (consumed < need + 1) m &= ~split_bits_;
      for (; m; m &= m - 1)
        f(EncOp{static_cast<std::uint8_t>(std::countr_zero(m)), 1, {static_cast<std::uint8_t>(a), 0}});
    }
    auto binary = [&](int a, int b, std::uint64_t conv_ok, int sa) {
      std::uint64_t m = binary_mask(sa, store_.shape_id(tensors_[static_cast<std::size_t>(b)])) & conv_ok;
      if (a == b) m &= ~(ordered_bits_ | smul_bits_);
      if (b < kInputs && a >= b) m &= ~ordered_bits_;  // an input precedes every operator
      for (; m; m &= m - 1)
        f(EncOp{static_cast<std::uint8_t>(std::countr_zero(m)),
                2,
                {static_cast<std::uint8_t>(a), static_cast<std::uint8_t>(b)}});
    };
    for (int a = 0; a < nt; ++a) {
      const int sa = store_.shape_id(tensors_[static_cast<std::size_t>(a)]);
      const std::uint64_t conv_ok = is_weight_input(a) ? ~conv_bits_ : ~std::uint64_t{0};
      const int ca = open[static_cast<std::size_t>(a)] ? 1 : 0;
      if (ca >= need) {
        for (int b = 0; b < nt; ++b) binary(a, b, conv_ok, sa);
      } else if (ca + 1 >= need) {
        for (int i = 0; i < n_open; ++i)
          if (open_list[static_cast<std::size_t>(i)] != a)
            binary(a, open_list[static_cast<std::size_t>(i)], conv_ok, sa);
      }
    }
  }

  // Canonical order: the graph's operators appear in the order of the greedy smallest-first topological
  // sort, so each graph is enumerated once: a new operator must be larger than every operator placed after
  // its last producer.
  bool canonical(const EncOp& e) const {
    int last = -1;
    for (int a = 0; a < e.nin; ++a)
      last = std::max(last, static_cast<int>(producer_[e.in[static_cast<std::size_t>(a)]]));
    for (int k = last + 1; k < enc_.n; ++k)
      if (!(enc_.ops[static_cast<std::size_t>(k)] < e)) return false;
    return true;
  }

  template <class Visit>
  void step(const EncOp& e, Visit& visit) {
    for (int k = 0; k < enc_.n; ++k)
      if (enc_.ops[static_cast<std::size_t>(k)] == e) return;  // duplicated computation
    if (!canonical(e)) return;
    const int me = enc_.n;
    const bool last_level = me + 1 == max_ops_;
    // Unconsumed outputs after e: each later operator lowers the count by at most one, so a graph that can
    // neither be recorded (at most max_outputs outputs) nor become recordable is not evaluated.
    int consumed = 0;
    for (int a = 0; a < e.nin; ++a) {
      const int t = e.in[static_cast<std::size_t>(a)];
      if (t >= kInputs && uses_[static_cast<std::size_t>(t)] == 0 && (a == 0 || e.in[0] != e.in[1]))
        ++consumed;
    }
    const int outputs = open_outputs_ - consumed + ((split_bits_ >> e.tmpl & 1u) ? 2 : 1);
    if (outputs - (max_ops_ - me - 1) > max_outputs_) return;
    // TASO's argument order for ewadd/ewmul/concat as a precedence between producers (see ordered_pair_op).
    std::uint8_t prec = 0;
    for (int a = 0; a < e.nin; ++a) {
      const int p = producer_[e.in[static_cast<std::size_t>(a)]];
      if (p >= 0) prec |= static_cast<std::uint8_t>(prec_[static_cast<std::size_t>(p)] | (1u << p));
    }
    const auto saved_prec = prec_;
    if ((ordered_bits_ >> e.tmpl & 1u) && e.in[0] >= kInputs) {
      const int pa = producer_[e.in[0]];
      if (e.in[1] < kInputs) return;
      const int pb = producer_[e.in[1]];
      if (pa == pb) {
        if (e.in[0] > e.in[1]) return;  // the two outputs of one split, in output order
      } else {
        if (prec_[static_cast<std::size_t>(pa)] >> pb & 1u) return;  // pb must precede pa: contradiction
        // pa precedes pb and everything after pb.
        const auto add = static_cast<std::uint8_t>(prec_[static_cast<std::size_t>(pa)] | (1u << pa));
        for (int k = 0; k < me; ++k)
          if (k == pb || (prec_[static_cast<std::size_t>(k)] >> pb & 1u))
            prec_[static_cast<std::size_t>(k)] |= add;
        prec |= add;
      }
    }
    enc_.ops[static_cast<std::size_t>(me)] = e;
    enc_.n = static_cast<std::uint8_t>(me + 1);
    const bool visible = inputs_prefix_closed(enc_) && outputs <= max_outputs_;
    enc_.n = static_cast<std::uint8_t>(me);
    enc_.ops[static_cast<std::size_t>(me)] = EncOp{};
    if (!visible && last_level) {  // neither recorded nor extended: nothing to evaluate
      prec_ = saved_prec;
      return;
    }
    std::array<ValueId, 2> args{};
    for (int a = 0; a < e.nin; ++a)
      args[static_cast<std::size_t>(a)] = tensors_[e.in[static_cast<std::size_t>(a)]];
    const auto r = store_.apply(e.tmpl, std::span(args.data(), e.nin), !last_level);
    if (r.count == 0) {
      prec_ = saved_prec;
      return;
    }
    // A tensor equal to an existing one (or an input) is redundant computation (TASO's DFS check).
    for (int o = 0; o < r.count; ++o) {
      const auto h = store_.hash(r.ids[static_cast<std::size_t>(o)]);
      if ((o == 1 && store_.hash(r.ids[0]) == h) ||
          std::find(hashes_.begin(), hashes_.end(), h) != hashes_.end()) {
        prec_ = saved_prec;
        return;
      }
    }
    for (int o = 0; o < r.count; ++o) {
      tensors_.push_back(r.ids[static_cast<std::size_t>(o)]);
      hashes_.push_back(store_.hash(r.ids[static_cast<std::size_t>(o)]));
      producer_.push_back(static_cast<std::int8_t>(me));
      uses_.push_back(0);
    }
    for (int a = 0; a < e.nin; ++a) ++uses_[e.in[static_cast<std::size_t>(a)]];
    const int saved_open = open_outputs_;
    open_outputs_ = outputs;
    prec_[static_cast<std::size_t>(me)] = prec;
    enc_.ops[static_cast<std::size_t>(me)] = e;
    enc_.n = static_cast<std::uint8_t>(me + 1);
    if (visible) visit(fingerprint(), pack(enc_));
    if (!last_level) for_each_choice([&](const EncOp& next) { step(next, visit); });
    enc_.n = static_cast<std::uint8_t>(me);
    enc_.ops[static_cast<std::size_t>(me)] = EncOp{};
    open_outputs_ = saved_open;
    for (int a = 0; a < e.nin; ++a) --uses_[e.in[static_cast<std::size_t>(a)]];
    for (int o = 0; o < r.count; ++o) {
      tensors_.pop_back();
      hashes_.pop_back();
      producer_.pop_back();
      uses_.pop_back();
    }
    prec_ = saved_prec;
    prec_[static_cast<std::size_t>(me)] = 0;
  }

  // Order-independent hash of the unconsumed outputs (TASO §2.2: hash2 over hash1 of each output).
  std::uint64_t fingerprint() const {
    std::array<std::uint64_t, kMaxTensors> hs{};
    std::size_t n = 0;
    for (std::size_t t = kInputs; t < tensors_.size(); ++t)
      if (uses_[t] == 0) hs[n++] = hashes_[t];
    std::sort(hs.begin(), hs.begin() + static_cast<std::ptrdiff_t>(n));
    std::uint64_t h = 0xF1A6;
    for (std::size_t i = 0; i < n; ++i) h = mix64(h ^ hs[i]);
    return h;
  }

  const std::vector<OpInstance>& ops_;
  int max_ops_;
  int max_outputs_;
  ValueStore store_;
  std::vector<std::uint8_t> constants_;
  std::uint64_t enlarge_bits_ = 0, ordered_bits_ = 0, smul_bits_ = 0, conv_bits_ = 0, split_bits_ = 0;
  std::uint64_t unary_bits_ = 0, binary_bits_ = 0;
  std::vector<std::uint64_t> unary_mask_;
  std::vector<std::vector<std::uint64_t>> binary_mask_;
  std::vector<ValueId> tensors_;
  std::vector<std::uint64_t> hashes_;
  std::vector<std::int8_t> producer_;
  std::vector<int> uses_;
  int open_outputs_ = 0;
  Enc enc_;
  std::array<std::uint8_t, kMaxOps> prec_{};  // bit k of prec_[i]: operator k must precede operator i
};

// ----- conversion to rules, confirmation
// --------------------------------------------------------------------

Term tensor_term(const Enc& g, const std::vector<OpInstance>& ops, int tensor,
                 std::vector<int>& used_inputs) {
  if (tensor < kInputs) {
    used_inputs.push_back(tensor);
    return Term::variable(fmt::format("input_{}", tensor + 1));
  }
  const auto prod = producers(g, ops);
  const int k = prod.op[static_cast<std::size_t>(tensor)];
  const auto& e = g.ops[static_cast<std::size_t>(k)];
  const auto& inst = ops[e.tmpl];
  Op op = inst.op;
  if (is_split(op)) op = prod.out[static_cast<std::size_t>(tensor)] == 0 ? Op::split_0 : Op::split_1;
  std::vector<Param> params;
  if (op != Op::transpose)  // both transposes print alike (TASO's text form drops the shuffle flag)
    for (auto p : inst.params) params.push_back(Param{p, {}});
  std::vector<Term> args;
  for (int a = 0; a < e.nin; ++a)
    args.push_back(tensor_term(g, ops, e.in[static_cast<std::size_t>(a)], used_inputs));
  return Term::apply(op, std::move(params), std::move(args));
}

// All tensors of a graph as values of `store`.
std::vector<ValueId> replay(const Enc& g, ValueStore& store) {
  std::vector<ValueId> ts;
  for (ValueId i = 0; i < kInputs; ++i) ts.push_back(i);
  for (int k = 0; k < g.n; ++k) {
    const auto& e = g.ops[static_cast<std::size_t>(k)];
    std::array<ValueId, 2> args{};
    for (int a = 0; a < e.nin; ++a) args[static_cast<std::size_t>(a)] = ts[e.in[static_cast<std::size_t>(a)]];
    const auto r = store.apply(e.tmpl, std::span(args.data(), e.nin));
    if (r.count == 0) throw std::logic_error("generator: replay failed");
    for (int o = 0; o < r.count; ++o) ts.push_back(r.ids[static_cast<std::size_t>(o)]);
  }
  return ts;
}

// Double-precision evaluation of an encoded graph through the IR's real kernels (the confirmation step).
struct RealTensor {
  Shape shape;
  std::vector<double> data;
  TensorMeta meta;
};

std::vector<RealTensor> replay_real(const Enc& g, const std::vector<OpInstance>& ops,
                                    const std::vector<RealTensor>& inputs) {
  std::vector<RealTensor> ts = inputs;
  for (int k = 0; k < g.n; ++k) {
    const auto& e = g.ops[static_cast<std::size_t>(k)];
    const auto& inst = ops[e.tmpl];
    std::vector<Shape> shapes;
    for (int a = 0; a < e.nin; ++a) shapes.push_back(ts[e.in[static_cast<std::size_t>(a)]].shape);
    std::int64_t split_at = 0;
    if (is_split(inst.op)) split_at = split_point(ts[e.in[0]].meta, static_cast<std::size_t>(inst.params[0]));
    std::array<const TensorMeta*, 2> am{};
    std::array<const Shape*, 2> as{};
    for (int a = 0; a < e.nin; ++a) {
      am[static_cast<std::size_t>(a)] = &ts[e.in[static_cast<std::size_t>(a)]].meta;
      as[static_cast<std::size_t>(a)] = &ts[e.in[static_cast<std::size_t>(a)]].shape;
    }
    std::array<TensorMeta, 2> metas;
    if (!propagate_meta(inst, std::span(am.data(), e.nin), std::span(as.data(), e.nin), metas))
      throw std::logic_error("generator: real replay failed (metadata)");
    Shape cshape;
    if (inst.op == Op::Imatmul) cshape = {4, 4};
    if (inst.op == Op::Iewmul) cshape = {2, 4, 5, 5};
    if (inst.op == Op::Iconv || inst.op == Op::Cpool) cshape = {4};
    const auto ir = to_ir(inst, shapes, split_at, cshape);
    if (!ir) throw std::logic_error("generator: real replay failed");
    const auto& def = models::OpRegistry::instance().get(ir->name);
    const auto attrs = models::complete_attrs(def, ir->attrs, "generator");
    std::vector<models::TensorType> in;
    for (const auto& s : shapes) in.push_back({s, models::DType::kF32});
    const auto out_types = def.shape(in, attrs);
    std::vector<RealTensor> outs(out_types.size());
    std::vector<models::In<double>> ins;
    std::vector<models::Out<double>> os;
    for (int a = 0; a < e.nin; ++a) {
      const auto& t = ts[e.in[static_cast<std::size_t>(a)]];
      ins.push_back({t.data.data(), &t.shape, static_cast<std::int64_t>(t.data.size())});
    }
    for (std::size_t o = 0; o < outs.size(); ++o) {
      outs[o].shape = out_types[o].shape;
      outs[o].data.assign(static_cast<std::size_t>(out_types[o].numel()), 0.0);
    }
    for (auto& o : outs) os.push_back({o.data.data(), &o.shape, static_cast<std::int64_t>(o.data.size())});
    if (!def.kernel.real)
      throw std::logic_error(fmt::format("generator: IR op '{}' has no real kernel", def.name));
    def.kernel.real(models::KernelCall<double>{ins, os, attrs});
    for (std::size_t o = 0; o < outs.size(); ++o) {
      outs[o].meta = metas[o];
      ts.push_back(std::move(outs[o]));
    }
  }
  return ts;
}

std::vector<RealTensor> real_inputs(std::uint64_t seed) {
  std::vector<RealTensor> in;
  for (int i = 1; i <= kInputs; ++i) {
    RealTensor t;
    t.shape = *taso_generator_input_shape(i);
    t.data = models::random_values<double>(models::numel(t.shape), seed, fmt::format("input_{}", i));
    in.push_back(std::move(t));
  }
  return in;
}

std::size_t peak_rss_kib() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmHWM:", 0) == 0) return static_cast<std::size_t>(std::stoull(line.substr(6)));
  return 0;
}

void collect_operators(const Term& t, std::set<std::string>& out) {
  if (t.is_variable()) return;
  out.insert(to_string(t));
  for (const auto& a : t.args()) collect_operators(a, out);
}

// A candidate: the class representative and a member, with outputs paired.
struct Candidate {
  Rule rule;
  std::uint64_t rep = 0, member = 0;         // pack(Enc)
  std::vector<std::pair<int, int>> outputs;  // tensor indices (rep, member), in rule.outputs order
};

bool confirm_in_double(const Candidate& c, const std::vector<OpInstance>& ops,
                       const std::vector<RealTensor>& inputs, double tolerance) {
  const auto a = replay_real(unpack(c.rep, ops), ops, inputs);
  const auto b = replay_real(unpack(c.member, ops), ops, inputs);
  for (auto [ta, tb] : c.outputs) {
    const auto& x = a[static_cast<std::size_t>(ta)].data;
    const auto& y = b[static_cast<std::size_t>(tb)].data;
    if (x.size() != y.size()) return false;
    for (std::size_t k = 0; k < x.size(); ++k)
      if (!(std::fabs(x[k] - y[k]) <= tolerance * std::max({1.0, std::fabs(x[k]), std::fabs(y[k])})))
        return false;
  }
  return true;
}

// TASO's pass_checks (src/generator/generator.cc) on two graphs over the same inputs: a shared operator
// applied to the same input variables, or a constant on both sides (common subgraph), or single-output graphs
// whose roots are the same instance with at most one argument that is not the same input variable (common
// supergraph). Either makes the pair implied by a smaller one (for constants: by the constant's identities).
bool common_subgraph(const Enc& a, const Enc& b) {
  for (int i = 0; i < a.n; ++i)
    for (int j = 0; j < b.n; ++j) {
      const auto& x = a.ops[static_cast<std::size_t>(i)];
      const auto& y = b.ops[static_cast<std::size_t>(j)];
      if (x.tmpl != y.tmpl) continue;
      bool same = true;
      for (int k = 0; k < x.nin; ++k)
        same = same && x.in[static_cast<std::size_t>(k)] < kInputs &&
               x.in[static_cast<std::size_t>(k)] == y.in[static_cast<std::size_t>(k)];
      if (same) return true;
    }
  return false;
}
bool common_supergraph(const Enc& a, const Enc& b, const std::vector<OpInstance>& ops,
                       const ValueStore& store, const std::vector<ValueId>& av,
                       const std::vector<ValueId>& bv) {
  const auto ao = graph_outputs(a, ops), bo = graph_outputs(b, ops);
  if (ao.size() != 1 || bo.size() != 1) return false;
  const auto& x = a.ops[static_cast<std::size_t>(a.n - 1)];
  const auto& y = b.ops[static_cast<std::size_t>(b.n - 1)];
  if (x.tmpl != y.tmpl || x.nin == 0) return false;
  // TASO's convolution instances are per kernel size: conv(x, w) and conv(x, enlarge(w)) are different ones.
  auto rank = [&](const EncOp& e, const std::vector<ValueId>& v) {
    std::array<ValueId, 2> args{};
    for (int k = 0; k < e.nin; ++k) args[static_cast<std::size_t>(k)] = v[e.in[static_cast<std::size_t>(k)]];
    return taso_rank(ops[e.tmpl], store, std::span(args.data(), e.nin));
  };
  if (rank(x, av) != rank(y, bv)) return false;
  int differ = 0;
  for (int k = 0; k < x.nin; ++k)
    differ += x.in[static_cast<std::size_t>(k)] < kInputs &&
                      x.in[static_cast<std::size_t>(k)] == y.in[static_cast<std::size_t>(k)]
                  ? 0
                  : 1;
  return differ <= 1;
}

}  // namespace

bool has_unrelated_equations(const Rule& rule) {
  const std::size_t n = rule.outputs.size();
  if (n < 2) return false;
  // Operator nodes of each side of each equation; a graph has no duplicated computation, so an operator
  // subterm occurring in two equations of one side is one shared node.
  std::vector<std::set<std::string>> lhs(n), rhs(n);
  for (std::size_t i = 0; i < n; ++i) {
    collect_operators(rule.outputs[i].lhs, lhs[i]);
    collect_operators(rule.outputs[i].rhs, rhs[i]);
  }
  auto meet = [](const std::set<std::string>& a, const std::set<std::string>& b) {
    return std::any_of(a.begin(), a.end(), [&](const auto& t) { return b.contains(t); });
  };
  // Connected components of "shares an operator on a side"; more than one = a conjunction of smaller rules.
  std::vector<std::size_t> comp(n);
  for (std::size_t i = 0; i < n; ++i) comp[i] = i;
  bool changed = true;
  while (changed) {
    changed = false;
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = i + 1; j < n; ++j) {
        if (comp[i] == comp[j] || !(meet(lhs[i], lhs[j]) || meet(rhs[i], rhs[j]))) continue;
        const auto from = std::max(comp[i], comp[j]), to = std::min(comp[i], comp[j]);
        for (auto& c : comp)
          if (c == from) c = to;
        changed = true;
      }
  }
  return std::any_of(comp.begin(), comp.end(), [&](std::size_t c) { return c != comp[0]; });
}

std::vector<OpInstance> parse_operator_set(std::string_view spec) {
  std::vector<OpInstance> out;
  auto add = [&](Op op, std::vector<std::int64_t> p = {}) {
    OpInstance inst{op, std::move(p)};
    if (std::find(out.begin(), out.end(), inst) == out.end()) out.push_back(std::move(inst));
  };
  auto add_name = [&](std::string_view n) {
    if (n == "ewadd")
      add(Op::ewadd);
    else if (n == "ewmul")
      add(Op::ewmul);
    else if (n == "smul")
      add(Op::smul);
    else if (n == "matmul")
      add(Op::matmul);
    else if (n == "transpose")
      add(Op::transpose);
    else if (n == "transpose_layout")
      add(Op::transpose, {0});
    else if (n == "relu")
      add(Op::relu);
    else if (n == "conv2d")
      add(Op::conv2d, {1, 1, kPadSame, kActiNone});
    else if (n == "conv2d_relu")
      add(Op::conv2d, {1, 1, kPadSame, kActiRelu});
    else if (n == "poolavg")
      add(Op::poolavg, {3, 3, 1, 1, kPadSame});
    else if (n == "poolmax")
      add(Op::poolmax, {3, 3, 1, 1, kPadSame});
    else if (n == "concat") {
      add(Op::concat, {0});
      add(Op::concat, {1});
    } else if (n == "split") {
      add(Op::split_0, {0});
      add(Op::split_0, {1});
    } else if (n == "enlarge")
      add(Op::enlarge, {3, 3});
    else if (n == "constants") {
      add(Op::Imatmul);
      add(Op::Iewmul);
      add(Op::Iconv, {3, 3});
      add(Op::Cpool, {3, 3});
    } else
      return false;
    return true;
  };
  std::size_t pos = 0;
  while (pos <= spec.size()) {
    const auto comma = std::min(spec.find(',', pos), spec.size());
    const auto name = spec.substr(pos, comma - pos);
    if (name == "taso") {
      for (auto n : {"ewadd", "ewmul", "smul", "matmul", "transpose", "transpose_layout", "relu", "conv2d",
                     "conv2d_relu", "poolavg", "poolmax", "concat", "split", "enlarge", "constants"})
        add_name(n);
    } else if (!add_name(name)) {
      throw std::invalid_argument(
          fmt::format("--ops: unknown operator set entry '{}' (expected taso or a comma-separated list of "
                      "ewadd, ewmul, smul, "
                      "matmul, transpose, transpose_layout, relu, conv2d, conv2d_relu, poolavg, poolmax, "
                      "concat, split, enlarge, "
                      "constants)",
                      name));
    }
    pos = comma + 1;
  }
  return out;
}

GeneratorResult generate_rules(const GeneratorOptions& options) {
  if (options.max_ops < 1 || options.max_ops > kMaxOps)
    throw std::invalid_argument(fmt::format("--max-ops must be 1..{}, got {}", kMaxOps, options.max_ops));
  if (options.max_outputs < 1 || options.max_outputs > 2 * kMaxOps)
    throw std::invalid_argument(
        fmt::format("--max-outputs must be 1..{}, got {}", 2 * kMaxOps, options.max_outputs));
  if (options.ops.empty() || options.ops.size() > 62)
    throw std::invalid_argument("operator set must have 1..62 entries");
  const auto start = Clock::now();
  auto say = [&](const std::string& s) {
    if (options.progress) options.progress(s);
  };
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  const auto& ops = options.ops;
  GeneratorResult result;
  auto& st = result.stats;

  // Enumeration: every thread streams (fingerprint, graph) records of its subtrees.
  const std::vector<EncOp> firsts =
      Enumerator(ops, options.max_ops, options.max_outputs, options.seed).first_choices();
  tbb::enumerable_thread_specific<Enumerator> enumerators(
      [&] { return Enumerator(ops, options.max_ops, options.max_outputs, options.seed); });
  tbb::enumerable_thread_specific<std::vector<Record>> records;
  std::atomic<std::uint64_t> graphs{0};
  std::atomic<std::size_t> done{0};
  std::mutex progress_mu;
  auto last_report = Clock::now();
  tbb::parallel_for(std::size_t{0}, firsts.size(), [&](std::size_t i) {
    auto& mine = records.local();
    const auto before = mine.size();
    enumerators.local().run_from(firsts[i], [&](std::uint64_t fp, std::uint64_t g) {
      mine.push_back({fp, g});
    });
    graphs += mine.size() - before;
    const auto d = ++done;
    if (std::unique_lock lock(progress_mu, std::try_to_lock); lock.owns_lock()) {
      if (Clock::now() - last_report > std::chrono::seconds(2) || d == firsts.size()) {
        last_report = Clock::now();
        say(fmt::format("  enumerating: {}/{} subtrees, {} graphs, {:.1f} s, RSS {} MiB", d, firsts.size(),
                        graphs.load(), elapsed(), peak_rss_kib() / 1024));
      }
    }
  });
  std::vector<Record> all;
  {
    std::size_t total = 0;
    for (auto& r : records) total += r.size();
    all.reserve(total);
    for (auto& r : records) {
      all.insert(all.end(), r.begin(), r.end());
      std::vector<Record>().swap(r);
    }
  }
  tbb::parallel_sort(all.begin(), all.end());
  st.graphs = all.size();
  for (auto& en : enumerators) st.evaluations += en.store().evaluations();
  enumerators.clear();  // their value stores are not needed any more
  // Classes: runs of equal fingerprints.
  std::vector<std::pair<std::size_t, std::size_t>> classes;
  for (std::size_t i = 0; i < all.size();) {
    std::size_t j = i + 1;
    while (j < all.size() && all[j].fingerprint == all[i].fingerprint) ++j;
    ++st.fingerprints;
    if (j - i >= 2) classes.emplace_back(i, j);
    i = j;
  }
  say(fmt::format(
      "enumerated {} graphs of up to {} operators ({} operator evaluations), {} distinct fingerprints, "
      "{} classes with 2 or more graphs ({:.1f} s)",
      st.graphs, options.max_ops, st.evaluations, st.fingerprints, classes.size(), elapsed()));

  // Candidates: star around the graph TASO's search visits first; outputs paired by value; TASO's structural
  // checks (common subgraph / supergraph).
  tbb::enumerable_thread_specific<ValueStore> stores([&] { return ValueStore(ops, options.seed); });
  std::vector<std::vector<Candidate>> per_class(classes.size());
  std::atomic<std::uint64_t> candidates{0}, after_structure{0};
  std::atomic<std::size_t> classes_done{0};
  tbb::parallel_for(std::size_t{0}, classes.size(), [&](std::size_t c) {
    auto& store = stores.local();
    if (store.memory_bytes() > (std::size_t{64} << 20)) store.clear();
    const auto [b, e] = classes[c];
    // Two centres per class: the graph TASO's search visits first (TASO's star, for comparability) and the
    // smallest graph (fewest operators, then TASO's order): every member is also paired with its simplest
    // equivalent, so each equivalence to a smaller form is a rule of its own.
    std::size_t first = b, smallest = b;
    std::vector<int> first_key, small_key;
    for (std::size_t i = b; i < e; ++i) {
      const Enc g = unpack(all[i].graph, ops);
      auto key = taso_key(g, ops, store);
      if (i == b || key < first_key) {
        first_key = key;
        first = i;
      }
      key.insert(key.begin(), g.n);
      if (i == b || key < small_key) {
        small_key = std::move(key);
        smallest = i;
      }
    }
    std::uint64_t n_cand = 0, n_struct = 0;
    for (int centre = 0; centre < 2; ++centre) {
      if (centre == 1 && smallest == first) break;
      const std::size_t rep = centre == 0 ? first : smallest;
      const Enc rg = unpack(all[rep].graph, ops);
      const auto rv = replay(rg, store);
      const auto r_out = graph_outputs(rg, ops);
      for (std::size_t i = b; i < e; ++i) {
        if (i == rep || (centre == 1 && i == first)) continue;  // first-smallest is paired once
        const Enc mg = unpack(all[i].graph, ops);
        const auto mv = replay(mg, store);
        auto m_out = graph_outputs(mg, ops);
        if (m_out.size() != r_out.size()) continue;
        Candidate cand;
        cand.rep = all[rep].graph;
        cand.member = all[i].graph;
        std::vector<bool> taken(m_out.size(), false);
        bool ok = true;
        for (int ta : r_out) {
          bool found = false;
          for (std::size_t j = 0; j < m_out.size() && !found; ++j)
            if (!taken[j] && store.identity(rv[static_cast<std::size_t>(ta)]) ==
                                 store.identity(mv[static_cast<std::size_t>(m_out[j])])) {
              taken[j] = found = true;
              cand.outputs.emplace_back(ta, m_out[j]);
            }
          ok = ok && found;
        }
        if (!ok) continue;
        ++n_cand;
        if (common_subgraph(rg, mg) || common_supergraph(rg, mg, ops, store, rv, mv)) continue;
        ++n_struct;
        Rule& rule = cand.rule;
        std::vector<int> used;
        for (auto [ta, tb] : cand.outputs)
          rule.outputs.push_back({tensor_term(rg, ops, ta, used), tensor_term(mg, ops, tb, used)});
        std::sort(used.begin(), used.end());
        used.erase(std::unique(used.begin(), used.end()), used.end());
        for (int u : used)
          rule.inputs.push_back({fmt::format("input_{}", u + 1), taso_generator_input_shape(u + 1)});
        per_class[c].push_back(std::move(cand));
      }
    }
    candidates += n_cand;
    after_structure += n_struct;
    const auto d = ++classes_done;
    if (std::unique_lock lock(progress_mu, std::try_to_lock); lock.owns_lock()) {
      if (Clock::now() - last_report > std::chrono::seconds(2)) {
        last_report = Clock::now();
        say(fmt::format("  pairing: {}/{} classes, {} candidates, {:.1f} s", d, classes.size(),
                        candidates.load(), elapsed()));
      }
    }
  });
  st.candidates = candidates;
  st.after_common_subgraph = after_structure;
  std::vector<Candidate> stage;
  for (auto& v : per_class)
    for (auto& r : v) stage.push_back(std::move(r));
  per_class.clear();
  std::vector<Record>().swap(all);
  say(fmt::format("{} candidate pairs (equal fingerprints), {} after common subgraph/supergraph ({:.1f} s)",
                  st.candidates, st.after_common_subgraph, elapsed()));

  // Exact duplicates (same equations, either orientation).
  {
    std::vector<std::string> keys(stage.size());
    tbb::parallel_for(std::size_t{0}, stage.size(), [&](std::size_t i) {
      std::vector<std::string> eqs;
      for (const auto& e : stage[i].rule.outputs) {
        auto l = to_string(e.lhs), r = to_string(e.rhs);
        eqs.push_back(std::min(l, r) + "==" + std::max(l, r));
      }
      std::sort(eqs.begin(), eqs.end());
      keys[i] = fmt::format("{}", fmt::join(eqs, ";"));
    });
    std::set<std::string> seen;
    std::vector<Candidate> next;
    for (std::size_t i = 0; i < stage.size(); ++i)
      if (seen.insert(keys[i]).second) next.push_back(std::move(stage[i]));
    stage = std::move(next);
  }
  st.after_duplicates = stage.size();
  // Input renaming.
  {
    std::vector<std::string> keys(stage.size());
    tbb::parallel_for(std::size_t{0}, stage.size(),
                      [&](std::size_t i) { keys[i] = canonical_form(stage[i].rule); });
    std::set<std::string> seen;
    std::vector<Candidate> next;
    for (std::size_t i = 0; i < stage.size(); ++i)
      if (seen.insert(keys[i]).second) next.push_back(std::move(stage[i]));
    stage = std::move(next);
  }
  st.after_renaming = stage.size();
  // Conjunctions of unrelated equations over separate inputs.
  if (options.prune_unrelated)
    std::erase_if(stage, [](const Candidate& c) { return has_unrelated_equations(c.rule); });
  st.after_unrelated = stage.size();
  say(
      fmt::format("pruning: {} after exact duplicates, {} after input renaming, {} after unrelated equations "
                  "({:.1f} s)",
                  st.after_duplicates, st.after_renaming, st.after_unrelated, elapsed()));

  // Confirmation in double precision on independent random inputs (the real relu, real average pooling).
  const auto reals = real_inputs(options.seed + 7);
  std::vector<char> keep(stage.size(), 0);
  tbb::parallel_for(std::size_t{0}, stage.size(), [&](std::size_t i) {
    keep[i] = confirm_in_double(stage[i], ops, reals, options.tolerance) ? 1 : 0;
  });
  for (std::size_t i = 0; i < stage.size(); ++i)
    if (keep[i]) result.rules.push_back(std::move(stage[i].rule));
  st.float_rejected = stage.size() - result.rules.size();
  for (std::size_t i = 0; i < result.rules.size(); ++i) {
    result.rules[i].name = fmt::format("gen{}", i + 1);
    result.rules[i].origin.clear();
  }
  say(fmt::format("{} rules confirmed in double precision ({} rejected), {:.1f} s", result.rules.size(),
                  st.float_rejected, elapsed()));
  st.seconds = elapsed();
  st.peak_rss_kib = peak_rss_kib();
  return result;
}

}  // namespace strata::search::subst
