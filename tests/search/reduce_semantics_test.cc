// Chunk-state semantics (P2, Xie et al., MLSys 2022, section 3.2): pre- and postconditions of each
// rule, and the invalid programs of P2 Fig. 4.
#include <gtest/gtest.h>

#include <array>
#include <numeric>

#include "search/reduce/semantics.h"
#include "search/reduce/synthesizer.h"

namespace rd = strata::search::reduce;
using strata::sim::CollectiveOp;

namespace {
bool row_is(const rd::ChunkState& s, int device, int row, std::vector<int> columns) {
  for (int c = 0; c < s.devices(); ++c) {
    const bool want = std::find(columns.begin(), columns.end(), c) != columns.end();
    if (s.bit(device, row, c) != want) return false;
  }
  return true;
}
}  // namespace

TEST(ReduceSemantics, InitialStateHasOwnColumnInEveryRow) {
  const auto s = rd::ChunkState::initial(3);
  for (int d = 0; d < 3; ++d)
    for (int r = 0; r < 3; ++r) EXPECT_TRUE(row_is(s, d, r, {d}));
  EXPECT_FALSE(s.is_final());
}

TEST(ReduceSemantics, AllReduceSumsDisjointContributions) {
  auto s = rd::ChunkState::initial(4);
  const std::array<int, 2> g{1, 3};
  EXPECT_EQ(s.apply(CollectiveOp::kAllReduce, g), "");
  for (int r = 0; r < 4; ++r) {
    EXPECT_TRUE(row_is(s, 1, r, {1, 3}));
    EXPECT_TRUE(row_is(s, 3, r, {1, 3}));
    EXPECT_TRUE(row_is(s, 0, r, {0}));
  }
  // A second AllReduce over a group containing both would sum contributions 1 and 3 twice.
  const std::array<int, 3> again{0, 1, 3};
  EXPECT_NE(s.apply(CollectiveOp::kAllReduce, again), "");
}

TEST(ReduceSemantics, ReduceScatterKeepsAscendingBlocksInGroupOrder) {
  auto s = rd::ChunkState::initial(4);
  const std::array<int, 2> g{2, 0};  // group order: device 2 first
  EXPECT_EQ(s.apply(CollectiveOp::kReduceScatter, g), "");
  EXPECT_EQ(s.rows_held(2), 2);
  EXPECT_TRUE(row_is(s, 2, 0, {0, 2}) && row_is(s, 2, 1, {0, 2}));
  EXPECT_FALSE(s.holds_row(2, 2));
  EXPECT_TRUE(row_is(s, 0, 2, {0, 2}) && row_is(s, 0, 3, {0, 2}));
  EXPECT_FALSE(s.holds_row(0, 0));
  // 4 chunks cannot be scattered over 3 devices.
  auto t = rd::ChunkState::initial(4);
  const std::array<int, 3> three{0, 1, 2};
  EXPECT_NE(t.apply(CollectiveOp::kReduceScatter, three), "");
}

TEST(ReduceSemantics, AllGatherNeedsDisjointEqualRowSets) {
  auto s = rd::ChunkState::initial(2);
  const std::array<int, 2> g{0, 1};
  EXPECT_NE(s.apply(CollectiveOp::kAllGather, g), "");  // both hold every row
  ASSERT_EQ(s.apply(CollectiveOp::kReduceScatter, g), "");
  EXPECT_EQ(s.apply(CollectiveOp::kAllGather, g), "");
  EXPECT_TRUE(s.is_final());
}

TEST(ReduceSemantics, ReduceEmptiesNonRootsAndBroadcastNeedsInformationIncrease) {
  auto s = rd::ChunkState::initial(3);
  const std::array<int, 3> g{0, 1, 2};
  EXPECT_NE(s.apply(CollectiveOp::kBroadcast, g), "");  // devices 1, 2 hold data the root lacks
  ASSERT_EQ(s.apply(CollectiveOp::kReduce, g), "");
  EXPECT_TRUE(row_is(s, 0, 1, {0, 1, 2}));
  EXPECT_TRUE(s.empty(1) && s.empty(2));
  EXPECT_NE(s.apply(CollectiveOp::kAllReduce, g), "");  // different chunks held
  const std::array<int, 2> empties{1, 2};
  EXPECT_NE(s.apply(CollectiveOp::kAllReduce, empties), "");  // degenerate: nothing to reduce
  EXPECT_NE(s.apply(CollectiveOp::kAllGather, empties), "");
  ASSERT_EQ(s.apply(CollectiveOp::kBroadcast, g), "");
  EXPECT_TRUE(s.is_final());
  EXPECT_NE(s.apply(CollectiveOp::kBroadcast, g), "");  // no device gains anything
}

TEST(ReduceSemantics, FinalStateIsTerminal) {
  const rd::SynthesisHierarchy h({{"node", 2, 0}, {"gpu", 2, 1}});
  auto final_state = rd::trace_program(rd::parse_program("(root, InsideGroup, AllReduce)", h), h).back();
  ASSERT_TRUE(final_state.is_final());
  for (const auto& g : rd::distinct_groupings(h))
    for (auto op : rd::kDslCollectives) {
      auto s = final_state;
      EXPECT_NE(s.apply(op, g.groups), "") << rd::dsl_name(op);
    }
}

// P2 Fig. 4 on the hierarchy node 2 x gpu 2 (A0, A1 | C0, C1).
TEST(ReduceSemantics, RejectsThePapersInvalidPrograms) {
  const rd::SynthesisHierarchy h({{"node", 2, 0}, {"gpu", 2, 1}});
  // ReduceScatter then AllReduce over the same pair: would sum different halves together.
  EXPECT_THROW(
      rd::trace_program(
          rd::parse_program("(node, InsideGroup, ReduceScatter); (node, InsideGroup, AllReduce)", h), h),
      std::invalid_argument);
  // AllReduce inside nodes, then across, then across everything again: A0's and C0's data summed twice.
  EXPECT_THROW(rd::trace_program(
                   rd::parse_program("(node, InsideGroup, AllReduce); (node, Parallel(root), AllReduce); "
                                     "(root, InsideGroup, AllReduce)",
                                     h),
                   h),
               std::invalid_argument);
  EXPECT_THROW(rd::trace_program(
                   rd::parse_program("(node, InsideGroup, AllReduce); (node, InsideGroup, AllReduce)", h), h),
               std::invalid_argument);
  // After Reduce inside the nodes, only the node roots hold data: a Parallel AllReduce across nodes would run
  // on empty groups (rejected), the Master form is the valid one.
  EXPECT_THROW(rd::trace_program(
                   rd::parse_program("(node, InsideGroup, Reduce); (node, Parallel(root), AllReduce)", h), h),
               std::invalid_argument);
  EXPECT_NO_THROW(rd::trace_program(
      rd::parse_program("(node, InsideGroup, Reduce); (node, Master(root), AllReduce)", h), h));
}

TEST(ReduceSemantics, ThePapersNamedProgramsReachTheAllReduceState) {
  const rd::SynthesisHierarchy h({{"node", 4, 0}, {"gpu", 8, 1}});
  for (const char* text : {
           "(root, InsideGroup, AllReduce)",
           "(node, InsideGroup, AllReduce); (node, Parallel(root), AllReduce)",
           "(node, InsideGroup, Reduce); (node, Master(root), AllReduce); (node, InsideGroup, Broadcast)",
           "(node, InsideGroup, ReduceScatter); (node, Parallel(root), AllReduce); (node, InsideGroup, "
           "AllGather)",
       }) {
    EXPECT_TRUE(rd::trace_program(rd::parse_program(text, h), h).back().is_final()) << text;
  }
}

TEST(ReduceSemantics, WideStatesBeyond64Devices) {
  auto s = rd::ChunkState::initial(96);
  std::vector<int> all(96);
  std::iota(all.begin(), all.end(), 0);
  ASSERT_EQ(s.apply(CollectiveOp::kReduceScatter, std::span<const int>(all)), "");
  EXPECT_TRUE(s.holds_row(95, 95) && s.bit(95, 95, 70) && !s.holds_row(95, 94));
  ASSERT_EQ(s.apply(CollectiveOp::kAllGather, std::span<const int>(all)), "");
  EXPECT_TRUE(s.is_final());
}
