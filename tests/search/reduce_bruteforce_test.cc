// Program counts of the reduction synthesizer against an independent brute-force count. The count here uses
// none of search/reduce: device groups come from the mixed-radix definition of InsideGroup / Parallel /
// Master (P2, Xie et al., MLSys 2022, section 3.3 and Table 2), the chunk-state rules are re-implemented on
// column bit masks from their statement in docs/reduce.md ("Semantics"), and programs are counted by dynamic
// programming over (state, steps left) instead of the synthesizer's depth-first search with pruning.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <numeric>
#include <set>
#include <vector>

#include "search/reduce/synthesizer.h"

namespace rd = strata::search::reduce;

namespace {

enum class Coll { kAllReduce, kReduceScatter, kAllGather, kReduce, kBroadcast };
constexpr Coll kColls[] = {Coll::kAllReduce, Coll::kReduceScatter, Coll::kAllGather, Coll::kReduce,
                           Coll::kBroadcast};

using Groups = std::vector<std::vector<int>>;  // members ascending (first = root), groups by first member

// Device d has digits (d_1..d_n), level 1 most significant. A (slice e, form) keeps some digits fixed inside
// a group and lets the others vary: InsideGroup varies e+1..n; Parallel(e') varies e'+1..e; Master(e') is
// Parallel(e') restricted to digits e+1..n = 0.
Groups groups_varying(const std::vector<int>& card, int first_varying, int last_varying, bool master,
                      int master_from) {
  const int n = static_cast<int>(card.size());
  int devices = 1;
  for (int c : card) devices *= c;
  std::map<std::vector<int>, std::vector<int>> by_key;
  for (int d = 0; d < devices; ++d) {
    std::vector<int> digit(static_cast<std::size_t>(n));
    for (int l = n - 1, r = d; l >= 0; --l) {
      digit[static_cast<std::size_t>(l)] = r % card[static_cast<std::size_t>(l)];
      r /= card[static_cast<std::size_t>(l)];
    }
    if (master) {
      bool zero = true;
      for (int l = master_from; l <= n; ++l) zero = zero && digit[static_cast<std::size_t>(l - 1)] == 0;
      if (!zero) continue;
    }
    std::vector<int> key;
    for (int l = 1; l <= n; ++l)
      if (l < first_varying || l > last_varying) key.push_back(digit[static_cast<std::size_t>(l - 1)]);
    by_key[key].push_back(d);
  }
  Groups out;
  for (auto& [k, g] : by_key) out.push_back(g);
  std::sort(out.begin(), out.end());
  return out;
}

// Every distinct grouping of a hierarchy with level cardinalities `card` (levels 1..n under a root), except
// those of single devices.
std::vector<Groups> all_groupings(const std::vector<int>& card) {
  const int n = static_cast<int>(card.size());
  std::set<Groups> distinct;
  for (int e = 0; e <= n; ++e) {
    distinct.insert(groups_varying(card, e + 1, n, false, 0));  // InsideGroup
    for (int a = 0; a < e; ++a) {
      distinct.insert(groups_varying(card, a + 1, e, false, 0));     // Parallel(a)
      distinct.insert(groups_varying(card, a + 1, e, true, e + 1));  // Master(a)
    }
  }
  std::vector<Groups> out;
  for (const auto& g : distinct)
    if (g.front().size() > 1) out.push_back(g);
  return out;
}

// k devices x k rows; mask[d * k + r] = the original columns summed into device d's chunk r.
struct State {
  int k = 0;
  std::vector<std::uint32_t> mask;
  auto operator<=>(const State&) const = default;
  std::uint32_t& at(int d, int r) { return mask[static_cast<std::size_t>(d * k + r)]; }
  std::uint32_t at(int d, int r) const { return mask[static_cast<std::size_t>(d * k + r)]; }
  std::uint32_t rows(int d) const {
    std::uint32_t m = 0;
    for (int r = 0; r < k; ++r)
      if (at(d, r) != 0) m |= 1u << r;
    return m;
  }
  bool is_final() const {
    const std::uint32_t all = (1u << k) - 1;
    return std::all_of(mask.begin(), mask.end(), [&](std::uint32_t m) { return m == all; });
  }
};

State initial(int k) {
  State s{k, std::vector<std::uint32_t>(static_cast<std::size_t>(k * k))};
  for (int d = 0; d < k; ++d)
    for (int r = 0; r < k; ++r) s.at(d, r) = 1u << d;
  return s;
}

// Applies one collective to one group; false when its precondition fails.
bool apply_group(State& s, Coll c, const std::vector<int>& g) {
  const int k = s.k;
  const std::uint32_t rows = s.rows(g[0]);
  if (c == Coll::kAllGather) {
    std::uint32_t seen = 0;
    for (int d : g) {
      const std::uint32_t r = s.rows(d);
      if (r == 0 || (r & seen) != 0 || std::popcount(r) != std::popcount(rows)) return false;
      seen |= r;
    }
    std::vector<std::uint32_t> merged(static_cast<std::size_t>(k), 0);
    for (int d : g)
      for (int r = 0; r < k; ++r) merged[static_cast<std::size_t>(r)] |= s.at(d, r);
    for (int d : g)
      for (int r = 0; r < k; ++r) s.at(d, r) = merged[static_cast<std::size_t>(r)];
    return true;
  }
  if (c == Coll::kBroadcast) {
    bool strictly_less = false;
    for (int d : g)
      for (int r = 0; r < k; ++r) {
        if ((s.at(d, r) & ~s.at(g[0], r)) != 0) return false;
        strictly_less = strictly_less || s.at(d, r) != s.at(g[0], r);
      }
    if (!strictly_less) return false;
    for (int d : g)
      for (int r = 0; r < k; ++r) s.at(d, r) = s.at(g[0], r);
    return true;
  }
  // AllReduce, ReduceScatter, Reduce: equal non-empty row sets, pairwise disjoint columns in every row.
  if (rows == 0) return false;
  std::vector<std::uint32_t> sum(static_cast<std::size_t>(k), 0);
  for (int d : g) {
    if (s.rows(d) != rows) return false;
    for (int r = 0; r < k; ++r) {
      if ((sum[static_cast<std::size_t>(r)] & s.at(d, r)) != 0) return false;
      sum[static_cast<std::size_t>(r)] |= s.at(d, r);
    }
  }
  const int gs = static_cast<int>(g.size());
  if (c == Coll::kReduceScatter && std::popcount(rows) % gs != 0) return false;
  std::vector<int> held;
  for (int r = 0; r < k; ++r)
    if (((rows >> r) & 1u) != 0) held.push_back(r);
  const int block = static_cast<int>(held.size()) / gs;
  for (int i = 0; i < gs; ++i)
    for (int r = 0; r < k; ++r) {
      std::uint32_t v = 0;
      if (c == Coll::kAllReduce || (c == Coll::kReduce && i == 0)) v = sum[static_cast<std::size_t>(r)];
      if (c == Coll::kReduceScatter) {
        const auto pos = std::find(held.begin(), held.end(), r) - held.begin();
        if (pos < static_cast<long>(held.size()) && pos / block == i) v = sum[static_cast<std::size_t>(r)];
      }
      s.at(g[static_cast<std::size_t>(i)], r) = v;
    }
  return true;
}

bool apply(State& s, Coll c, const Groups& groups) {
  return std::all_of(groups.begin(), groups.end(), [&](const auto& g) { return apply_group(s, c, g); });
}

struct BruteForce {
  explicit BruteForce(std::vector<int> card) : groupings(all_groupings(card)) {
    k = std::accumulate(card.begin(), card.end(), 1, std::multiplies<>());
  }
  // Sequences of at most `steps` instructions from `s` whose last step reaches the all-reduced state.
  std::int64_t count(const State& s, int steps) {
    if (s.is_final()) return 1;
    if (steps == 0) return 0;
    auto [it, inserted] = memo.try_emplace({s, steps}, 0);
    if (!inserted) return it->second;
    std::int64_t total = 0;
    for (const auto& g : groupings)
      for (Coll c : kColls) {
        State next = s;
        if (apply(next, c, g)) total += count(next, steps - 1);
      }
    memo[{s, steps}] = total;
    return total;
  }
  std::int64_t count(int steps) { return count(initial(k), steps); }

  struct Step {
    std::size_t grouping;
    Coll coll;
    auto operator<=>(const Step&) const = default;
  };
  using Program = std::vector<Step>;
  // Every program of at most `steps` instructions with the states it passes through (before each step and
  // after the last).
  void enumerate(const State& s, int steps, Program& prefix, std::vector<State>& trace,
                 std::vector<std::pair<Program, std::vector<State>>>& out) {
    if (s.is_final()) {
      out.emplace_back(prefix, trace);
      return;
    }
    if (steps == 0) return;
    for (std::size_t g = 0; g < groupings.size(); ++g)
      for (Coll c : kColls) {
        State next = s;
        if (!apply(next, c, groupings[g])) continue;
        prefix.push_back({g, c});
        trace.push_back(next);
        enumerate(next, steps - 1, prefix, trace, out);
        prefix.pop_back();
        trace.pop_back();
      }
  }
  std::vector<std::pair<Program, std::vector<State>>> programs(int steps) {
    std::vector<std::pair<Program, std::vector<State>>> out;
    Program prefix;
    std::vector<State> trace{initial(k)};
    enumerate(initial(k), steps, prefix, trace, out);
    return out;
  }

  int k = 1;
  std::vector<Groups> groupings;
  std::map<std::pair<State, int>, std::int64_t> memo;
};

std::vector<int> size_histogram(const std::vector<std::pair<BruteForce::Program, std::vector<State>>>& ps,
                                int max_size) {
  std::vector<int> h(static_cast<std::size_t>(max_size + 1), 0);
  for (const auto& p : ps) ++h[p.first.size()];
  return h;
}

rd::SynthesisHierarchy hierarchy(const std::vector<int>& card) {
  std::vector<rd::SynthLevel> levels;
  for (std::size_t i = 0; i < card.size(); ++i) levels.push_back({"l" + std::to_string(i + 1), card[i], 0});
  return rd::SynthesisHierarchy(levels);
}

}  // namespace

TEST(ReduceBruteForce, GroupingCountsMatchTheDefinition) {
  EXPECT_EQ(all_groupings({4}).size(), 1u);  // one level: only the whole root group
  EXPECT_EQ(all_groupings({2, 4}).size(), 4u);
  EXPECT_EQ(all_groupings({2, 2, 2}).size(), 9u);
  EXPECT_EQ(rd::distinct_groupings(hierarchy({2, 2, 2})).size(), all_groupings({2, 2, 2}).size());
}

TEST(ReduceBruteForce, OneLevelHasThreePrograms) {
  for (int n : {2, 4}) {
    BruteForce bf({n});
    EXPECT_EQ(bf.count(5), 3);
    EXPECT_EQ(rd::synthesize(hierarchy({n})).programs.size(), 3u);
  }
}

TEST(ReduceBruteForce, TwoLevelCountsEqualTheSynthesizer) {
  for (const auto& card : std::vector<std::vector<int>>{{2, 2}, {2, 4}, {4, 2}, {3, 2}}) {
    BruteForce bf(card);
    const auto all = bf.programs(5);
    const auto synth = rd::synthesize(hierarchy(card));
    EXPECT_EQ(all.size(), synth.programs.size());
    EXPECT_EQ(bf.count(5), static_cast<std::int64_t>(synth.programs.size()));
    const auto hist = size_histogram(all, 5);
    for (std::size_t s = 1; s < hist.size(); ++s) EXPECT_EQ(hist[s], synth.count_by_size[s]) << "size " << s;
    EXPECT_EQ(bf.count(7), bf.count(5));  // no program longer than 5 (docs/reduce.md)
    EXPECT_EQ(all.size(), 93u);           // the number docs/reduce.md states
  }
}

TEST(ReduceBruteForce, ThreeLevelCountsEqualTheSynthesizer) {
  BruteForce bf({2, 2, 2});
  const auto h = hierarchy({2, 2, 2});
  const auto five = bf.count(5), six = bf.count(6);
  EXPECT_EQ(five, static_cast<std::int64_t>(rd::synthesize(h).programs.size()));
  EXPECT_EQ(six,
            static_cast<std::int64_t>(rd::synthesize(h, {6, rd::Canonicalization::kNone}).programs.size()));
  EXPECT_EQ(five, 1635);  // the numbers docs/reduce.md states
  EXPECT_EQ(six, 4576);
}

// The canonicalizations of docs/reduce.md, each restated on the brute-force programs.
TEST(ReduceBruteForce, CanonicalizationCountsEqualTheSynthesizer) {
  const std::vector<int> card{2, 4};
  BruteForce bf(card);
  const auto all = bf.programs(5);
  auto synth_count = [&](rd::Canonicalization c) {
    return static_cast<std::int64_t>(rd::synthesize(hierarchy(card), {5, c}).programs.size());
  };

  // master-minimal: a step whose groups leave some device out requires that device to hold nothing.
  std::int64_t master_minimal = 0;
  for (const auto& [p, states] : all) {
    bool ok = true;
    for (std::size_t i = 0; i < p.size() && ok; ++i) {
      std::vector<bool> in(static_cast<std::size_t>(bf.k), false);
      for (const auto& g : bf.groupings[p[i].grouping])
        for (int d : g) in[static_cast<std::size_t>(d)] = true;
      for (int d = 0; d < bf.k; ++d)
        if (!in[static_cast<std::size_t>(d)] && states[i].rows(d) != 0) ok = false;
    }
    master_minimal += ok;
  }

  // trajectory: programs passing through the same sequence of states are one.
  std::set<std::vector<State>> trajectories;
  for (const auto& [p, states] : all) trajectories.insert(states);

  // commute: classes of the relation "swap two adjacent steps that, applied in either order from the state
  // before them, are both valid and end in the same state" (union-find over the programs).
  std::vector<std::size_t> parent(all.size());
  std::iota(parent.begin(), parent.end(), 0);
  auto find = [&](std::size_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  std::map<BruteForce::Program, std::size_t> index;
  for (std::size_t i = 0; i < all.size(); ++i) index[all[i].first] = i;
  for (std::size_t i = 0; i < all.size(); ++i) {
    const auto& [p, states] = all[i];
    for (std::size_t j = 0; j + 1 < p.size(); ++j) {
      State s = states[j];
      if (!apply(s, p[j + 1].coll, bf.groupings[p[j + 1].grouping])) continue;
      if (!apply(s, p[j].coll, bf.groupings[p[j].grouping])) continue;
      if (s != states[j + 2]) continue;
      auto q = p;
      std::swap(q[j], q[j + 1]);
      const auto other = index.find(q);
      ASSERT_NE(other, index.end());  // the rest of the program is unchanged, so q is a program too
      parent[find(i)] = find(other->second);
    }
  }
  std::int64_t classes = 0;
  for (std::size_t i = 0; i < all.size(); ++i) classes += find(i) == i;

  EXPECT_EQ(master_minimal, synth_count(rd::Canonicalization::kMasterMinimal));
  EXPECT_EQ(static_cast<std::int64_t>(trajectories.size()), synth_count(rd::Canonicalization::kTrajectory));
  EXPECT_EQ(classes, synth_count(rd::Canonicalization::kCommute));
  // The numbers docs/reduce.md states.
  EXPECT_EQ(master_minimal, 51);
  EXPECT_EQ(classes, 83);
  EXPECT_EQ(static_cast<std::int64_t>(trajectories.size()), 64);
}
