// Depth-first enumeration of the generator's graphs with TASO's pruning (generator_internal.h).
#include <algorithm>
#include <atomic>
#include <bit>
#include <mutex>

#include <fmt/format.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>
#include <tbb/parallel_sort.h>

#include "search/subst/generator_internal.h"

namespace strata::search::subst::generator_detail {
namespace {

class Enumerator {
 public:
  Enumerator(const std::vector<OpInstance>& ops, int max_ops, int max_outputs, std::uint64_t seed)
      : ops_(ops), max_ops_(max_ops), max_outputs_(max_outputs), store_(ops, seed) {
    for (std::size_t t = 0; t < ops_.size(); ++t) {
      const auto bit = std::uint64_t{1} << t;
      const Op op = ops_[t].op;
      const int arity = op_info(op).tensor_args;
      if (arity == 0) constants_.push_back(static_cast<std::uint8_t>(t));
      if (op == Op::kEnlarge) enlarge_bits_ |= bit;
      if (ordered_pair_op(op)) ordered_bits_ |= bit;
      if (op == Op::kSmul) smul_bits_ |= bit;
      if (op == Op::kConv2d) conv_bits_ |= bit;
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

}  // namespace

std::vector<Record> enumerate_graphs(const GeneratorOptions& options, Progress& progress,
                                     std::uint64_t& evaluations) {
  const auto& ops = options.ops;
  // Every thread streams (fingerprint, graph) records of its subtrees.
  const std::vector<EncOp> firsts =
      Enumerator(ops, options.max_ops, options.max_outputs, options.seed).first_choices();
  tbb::enumerable_thread_specific<Enumerator> enumerators(
      [&] { return Enumerator(ops, options.max_ops, options.max_outputs, options.seed); });
  tbb::enumerable_thread_specific<std::vector<Record>> records;
  std::atomic<std::uint64_t> graphs{0};
  std::atomic<std::size_t> done{0};
  tbb::parallel_for(std::size_t{0}, firsts.size(), [&](std::size_t i) {
    auto& mine = records.local();
    const auto before = mine.size();
    enumerators.local().run_from(firsts[i], [&](std::uint64_t fp, std::uint64_t g) {
      mine.push_back({fp, g});
    });
    graphs += mine.size() - before;
    const auto d = ++done;
    if (std::unique_lock lock(progress.mu, std::try_to_lock); lock.owns_lock()) {
      if (progress.since_last.seconds() > 2.0 || d == firsts.size()) {
        progress.since_last.restart();
        progress.say(fmt::format("  enumerating: {}/{} subtrees, {} graphs, {:.1f} s, RSS {} MiB", d,
                                 firsts.size(), graphs.load(), progress.elapsed(), peak_rss_kib() / 1024));
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
  for (auto& en : enumerators) evaluations += en.store().evaluations();
  return all;
}

}  // namespace strata::search::subst::generator_detail
