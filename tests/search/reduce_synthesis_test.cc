// Synthesis: one-level programs, the grouping table of P2 (Xie et al., MLSys 2022) Table 2, the text
// form, synthesis hierarchies (P2 Table 1) and the validity lemmas.
#include <gtest/gtest.h>

#include <algorithm>

#include "search/reduce/semantics.h"
#include "search/reduce/synthesizer.h"

namespace rd = strata::search::reduce;

namespace {
std::vector<std::string> texts(const rd::SynthesisResult& r, const rd::SynthesisHierarchy& h) {
  std::vector<std::string> out;
  for (const auto& p : r.programs) out.push_back(rd::to_string(p, h));
  return out;
}
}  // namespace

TEST(ReduceSynthesis, OneLevelHierarchyHasExactlyThreePrograms) {
  for (int n : {2, 4, 16}) {
    const rd::SynthesisHierarchy h({{"gpu", n, 0}});
    const auto r = rd::synthesize(h);
    EXPECT_EQ(texts(r, h),
              (std::vector<std::string>{"(root, InsideGroup, AllReduce)",
                                        "(root, InsideGroup, ReduceScatter); (root, InsideGroup, AllGather)",
                                        "(root, InsideGroup, Reduce); (root, InsideGroup, Broadcast)"}));
  }
}

// The program counts themselves are checked against a brute-force count in reduce_bruteforce_test.cc.
TEST(ReduceSynthesis, TwoLevelHierarchyProgramsAreValidAndIncludeThePapersNamedOnes) {
  for (auto [a, b] : std::vector<std::pair<int, int>>{{2, 2}, {2, 4}, {4, 2}, {3, 2}}) {
    const rd::SynthesisHierarchy h({{"node", a, 0}, {"gpu", b, 1}});
    EXPECT_EQ(rd::distinct_groupings(h).size(), 4u);
    const auto r = rd::synthesize(h);
    // No program needs more than 5 steps: a bound of 7 finds the same ones.
    EXPECT_EQ(rd::synthesize(h, {7, rd::Canonicalization::kNone}).programs, r.programs);
    // Every program is valid and reaches the goal; the paper's named programs are among them.
    for (const auto& p : r.programs) EXPECT_TRUE(rd::trace_program(p, h).back().is_final());
    const auto t = texts(r, h);
    for (const char* named :
         {"(node, InsideGroup, AllReduce); (node, Parallel(root), AllReduce)",
          "(node, InsideGroup, Reduce); (node, Master(root), AllReduce); (node, InsideGroup, Broadcast)",
          "(node, InsideGroup, ReduceScatter); (node, Parallel(root), AllReduce); (node, InsideGroup, "
          "AllGather)"})
      EXPECT_NE(std::find(t.begin(), t.end(), named), t.end()) << named;
  }
}

TEST(ReduceSynthesis, ThreeLevelHierarchySizeBoundBinds) {
  const rd::SynthesisHierarchy h({{"a", 2, 0}, {"b", 2, 1}, {"c", 2, 2}});
  EXPECT_EQ(rd::distinct_groupings(h).size(), 9u);
  // Counts against brute force: reduce_bruteforce_test.cc. Here: the bound of 6 keeps every size-5 program
  // (in the same order) and finds longer ones.
  const auto five = rd::synthesize(h).programs;
  const auto six = rd::synthesize(h, {6, rd::Canonicalization::kNone}).programs;
  ASSERT_GT(six.size(), five.size());
  EXPECT_TRUE(std::equal(five.begin(), five.end(), six.begin()));
  EXPECT_EQ(six.back().size(), 6u);
}

TEST(ReduceSynthesis, SynthesisIsDeterministic) {
  const rd::SynthesisHierarchy h({{"node", 4, 0}, {"gpu", 4, 1}});
  const auto a = rd::synthesize(h), b = rd::synthesize(h);
  EXPECT_EQ(texts(a, h), texts(b, h));
  EXPECT_EQ(a.prefixes_explored, b.prefixes_explored);
}

// P2 Table 2 on the Fig. 2a hierarchy (server 2, CPU 2, GPU 4): GPUs A0-A3, B0-B3 | C0-C3, D0-D3.
TEST(ReduceSynthesis, GroupingsReproduceTable2Exactly) {
  const rd::SynthesisHierarchy h({{"server", 2, 0}, {"cpu", 2, 1}, {"gpu", 4, 2}});
  auto name = [](int d) { return std::string(1, static_cast<char>('A' + d / 4)) + std::to_string(d % 4); };
  auto show = [&](const rd::Grouping& g) {
    std::string s;
    for (const auto& grp : g) {
      s += "{";
      for (std::size_t i = 0; i < grp.size(); ++i) s += (i ? "," : "") + name(grp[i]);
      s += "}";
    }
    return s;
  };
  auto groups = [&](const char* text) {
    const auto p = rd::parse_program(std::string(text) + ", AllReduce)", h);
    return show(rd::groups_of(h, p[0].slice, p[0].form));
  };
  EXPECT_EQ(groups("(cpu, InsideGroup"), "{A0,A1,A2,A3}{B0,B1,B2,B3}{C0,C1,C2,C3}{D0,D1,D2,D3}");
  EXPECT_EQ(groups("(cpu, Parallel(server)"), "{A0,B0}{A1,B1}{A2,B2}{A3,B3}{C0,D0}{C1,D1}{C2,D2}{C3,D3}");
  EXPECT_EQ(groups("(cpu, Parallel(root)"), "{A0,B0,C0,D0}{A1,B1,C1,D1}{A2,B2,C2,D2}{A3,B3,C3,D3}");
  EXPECT_EQ(groups("(cpu, Master(root)"), "{A0,B0,C0,D0}");
  EXPECT_EQ(groups("(server, InsideGroup"), "{A0,A1,A2,A3,B0,B1,B2,B3}{C0,C1,C2,C3,D0,D1,D2,D3}");
  EXPECT_EQ(groups("(server, Parallel(root)"), "{A0,C0}{A1,C1}{A2,C2}{A3,C3}{B0,D0}{B1,D1}{B2,D2}{B3,D3}");
  EXPECT_EQ(groups("(root, InsideGroup"), "{A0,A1,A2,A3,B0,B1,B2,B3,C0,C1,C2,C3,D0,D1,D2,D3}");
  // Lemma B.2: Parallel(x_j) at slice x_i forms x_0..x_j * x_{i+1}..x_n groups of size x_{j+1}..x_i.
  const auto g = rd::groups_of(h, 2, rd::Form{rd::FormKind::kParallel, 0});
  EXPECT_EQ(g.size(), 4u);
  EXPECT_EQ(g.front().size(), 4u);
}

TEST(ReduceSynthesis, TextFormRoundTripsAndErrorsNamePosition) {
  const rd::SynthesisHierarchy h({{"node", 2, 0}, {"gpu", 4, 1}});
  for (const auto& p : rd::synthesize(h).programs) EXPECT_EQ(rd::parse_program(rd::to_string(p, h), h), p);
  // Level indices and case are accepted.
  EXPECT_EQ(rd::to_string(rd::parse_program("(1, parallel(0), allreduce)", h), h),
            "(node, Parallel(root), AllReduce)");
  auto error_of = [&](const char* text) {
    try {
      rd::parse_program(text, h);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error_of("(rack, InsideGroup, AllReduce)").find("character 2: unknown level 'rack'"),
            std::string::npos);
  EXPECT_NE(error_of("(node, Sideways, AllReduce)").find("expected a form"), std::string::npos);
  EXPECT_NE(error_of("(node, Parallel(gpu), AllReduce)").find("must be an ancestor"), std::string::npos);
  EXPECT_NE(error_of("(node, InsideGroup, AllToAll)").find("expected a collective"), std::string::npos);
  EXPECT_NE(error_of("(node, InsideGroup, AllReduce").find("expected ')'"), std::string::npos);
  EXPECT_NE(error_of("").find("at least one instruction"), std::string::npos);
}

TEST(ReduceSynthesis, SynthesisHierarchyCollapsesReductionRowsPerLevel) {
  // P2 Table 1: X = [[1 2 3],[4 5 6],[7 8 9]], reduction rows 0 and 2 -> [1 2 3 7 8 9] -> [7 16 27].
  const rd::Placement p({{"l0", 28}, {"l1", 80}, {"l2", 162}}, {6, 120, 504},
                        {{1, 2, 3}, {4, 5, 6}, {7, 8, 9}});
  const std::array<int, 2> reduce{0, 2};
  EXPECT_EQ(rd::synthesis_hierarchy(p, reduce).cardinalities(), (std::vector<int>{7, 16, 27}));
  // Unit factors are dropped: reducing [[1,4],[4,4]] on axis 0 leaves one level.
  const rd::Placement a({{"node", 4}, {"gpu", 16}}, {4, 16}, {{1, 4}, {4, 4}});
  const std::array<int, 1> zero{0};
  const auto h = rd::synthesis_hierarchy(a, zero);
  EXPECT_EQ(h.to_string(), "[root 1, gpu 4]");
}

TEST(ReduceSynthesis, ValidityLemmasAsStaticFilter) {
  // Hierarchy (c)-like: root, node 2 (non-reduction), gpu 4 (reduction).
  const std::vector<int> card{1, 2, 4};
  const std::vector<bool> red{true, false, true};
  using rd::Form, rd::FormKind;
  EXPECT_TRUE(rd::lemma_admits(card, red, 1, Form{FormKind::kInsideGroup, 0}));   // B.5: spans gpu only
  EXPECT_FALSE(rd::lemma_admits(card, red, 0, Form{FormKind::kInsideGroup, 0}));  // spans the node level
  EXPECT_FALSE(rd::lemma_admits(card, red, 1, Form{FormKind::kParallel, 0}));     // B.4: spans node
  EXPECT_TRUE(rd::lemma_admits(card, red, 2, Form{FormKind::kParallel, 1}));      // spans gpu
  EXPECT_FALSE(rd::lemma_admits(card, red, 1, Form{FormKind::kMaster, 0}));       // B.6: node..leaves
  const std::vector<bool> all{true, true, true};
  EXPECT_TRUE(rd::lemma_admits(card, all, 1, Form{FormKind::kMaster, 0}));
}
