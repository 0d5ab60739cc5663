// Internals of the rule generator (generator.cc drives them): the packed graph encoding and TASO's
// enumeration order (generator_encoding.cc), the depth-first enumeration (generator_enumerate.cc), pairing
// and pruning of fingerprint classes (generator_pair.cc) and confirmation in double precision
// (generator_confirm.cc). Not part of the public interface.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "search/subst/fingerprint.h"
#include "search/subst/generator.h"
#include "util/timer.h"

namespace strata::search::subst::generator_detail {

constexpr int kInputs = kGeneratorInputs;
constexpr int kMaxOps = 4;
constexpr int kMaxTensors = kInputs + 2 * kMaxOps;

// TASO's conv enumeration never takes a weight variable (w1..w13) as the data input (its generator.cc).
inline bool is_weight_input(int t) {
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
inline std::uint64_t pack(const Enc& g) {
  std::uint64_t r = 0;
  for (int k = 0; k < g.n; ++k) {
    const auto& e = g.ops[static_cast<std::size_t>(k)];
    const std::uint64_t word = (std::uint64_t{e.tmpl} + 1) << 10 | std::uint64_t{e.in[0]} << 5 | e.in[1];
    r |= word << (16 * k);
  }
  return r;
}
Enc unpack(std::uint64_t r, const std::vector<OpInstance>& ops);

inline int op_outputs(const std::vector<OpInstance>& ops, const EncOp& e) {
  return is_split(ops[e.tmpl].op) ? 2 : 1;
}

// Tensor index -> producing operator position (-1: input) and output number.
struct Producers {
  std::array<std::int8_t, kMaxTensors> op{};
  std::array<std::int8_t, kMaxTensors> out{};
  int tensors = kInputs;
};
Producers producers(const Enc& g, const std::vector<OpInstance>& ops);

// Unconsumed operator outputs of an encoded graph, by tensor index.
std::vector<int> graph_outputs(const Enc& g, const std::vector<OpInstance>& ops);

// Every shape class's used inputs are a prefix of the class (x1, x1 x2, ...): one representative per
// renaming.
inline int input_class(int i) {
  return i < 18 ? i / 3 : 6 + (i - 18);
}
inline bool inputs_prefix_closed(const Enc& g) {
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
int taso_rank(const OpInstance& inst, const ValueStore& store, std::span<const ValueId> args);

// Whether TASO's search space has an operator with these arguments in some order of the graph: element-wise
// add/mul and concat take their first argument from an earlier tensor than their second (TASO enumerates
// j < k), which for operator outputs is a precedence constraint between their producers.
inline bool ordered_pair_op(Op op) {
  return op == Op::kEwadd || op == Op::kEwmul || op == Op::kConcat;
}

// TASO's key of a graph: the smallest, over the orders TASO can build it in, sequence of (operator rank,
// argument tensor indices); TASO visits graphs in this order and keeps the first of each fingerprint.
std::vector<int> taso_key(const Enc& g, const std::vector<OpInstance>& ops, ValueStore& store);

// One enumerated graph and the fingerprint of its outputs; sorted, equal fingerprints form a class.
struct Record {
  std::uint64_t fingerprint;
  std::uint64_t graph;  // pack(Enc)
  friend auto operator<=>(const Record&, const Record&) = default;
};

// Progress messages shared by the stages: at most one every two seconds from the worker threads.
struct Progress {
  std::function<void(const std::string&)> say;
  util::Stopwatch watch;       // since generate_rules started
  util::Stopwatch since_last;  // since the last periodic report
  std::mutex mu;
  double elapsed() const { return watch.seconds(); }
};

// Peak resident set size of this process (VmHWM), KiB; 0 where /proc is not available.
std::size_t peak_rss_kib();

// Enumerates every graph of the options' space (in parallel): the records sorted by (fingerprint, graph),
// and the number of operator evaluations in `evaluations`.
std::vector<Record> enumerate_graphs(const GeneratorOptions& options, Progress& progress,
                                     std::uint64_t& evaluations);

// A candidate: the class representative and a member, with outputs paired.
struct Candidate {
  Rule rule;
  std::uint64_t rep = 0, member = 0;         // pack(Enc)
  std::vector<std::pair<int, int>> outputs;  // tensor indices (rep, member), in rule.outputs order
};

// Candidates of the classes [begin, end) of `all` (runs of equal fingerprints), in class order; adds the
// counts before and after TASO's structural checks to `stats`.
std::vector<Candidate> pair_classes(const std::vector<Record>& all,
                                    const std::vector<std::pair<std::size_t, std::size_t>>& classes,
                                    const GeneratorOptions& options, Progress& progress,
                                    GeneratorStats& stats);

// Drops exact duplicates, renamings and (with options.prune_unrelated) conjunctions of unrelated equations;
// records the counts after each stage in `stats`.
void prune_candidates(std::vector<Candidate>& stage, const GeneratorOptions& options, GeneratorStats& stats);

// Keeps the rules of the candidates confirmed in double precision on independent random inputs.
std::vector<Rule> confirm_candidates(std::vector<Candidate>& stage, const GeneratorOptions& options);

}  // namespace strata::search::subst::generator_detail
