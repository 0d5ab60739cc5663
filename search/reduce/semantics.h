// Chunk-state semantics of collectives (P2, Xie et al., MLSys 2022, section 3.2, Fig. 7-8). With k
// devices the buffer is split into k chunks; device state s is a boolean k x k matrix, s[r][j] = 1 iff device
// j's original chunk r has been summed into this device's copy of chunk r. A collective applies to a group
// d_0..d_{g-1} only when its precondition holds (so nothing is summed twice and different chunks are never
// summed together); otherwise the step is invalid and the synthesizer prunes the program prefix.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "search/reduce/program.h"

namespace strata::search::reduce {

class ChunkState {
 public:
  // The initial state of k devices: device j has column j set in every row.
  static ChunkState initial(int k);

  int devices() const { return k_; }
  // True when every device holds every row with all k columns (the result of an AllReduce).
  bool is_final() const;
  bool holds_row(int device, int row) const;
  bool bit(int device, int row, int column) const;
  int rows_held(int device) const;
  bool empty(int device) const { return rows_held(device) == 0; }

  // Applies `op` to one group; on a failed precondition returns the reason and leaves the state unchanged.
  // Rules (group order = root first):
  //   AllReduce     pre: equal row sets, pairwise disjoint columns per row, not empty; post: all get the sum.
  //   ReduceScatter pre: as AllReduce and #rows divisible by g; post: device i keeps the i-th block of rows.
  //   AllGather     pre: pairwise disjoint row sets of equal, non-zero size; post: all get the union.
  //   Reduce        pre: as AllReduce; post: d_0 gets the sum, the others become empty.
  //   Broadcast     pre: s_i <= s_0 for all i, strictly for at least one; post: all get s_0.
  std::string apply(sim::CollectiveOp op, std::span<const int> group);
  // Applies `op` to every group of an instruction (the groups are disjoint, so order does not matter); on
  // the first failure returns its reason (the state is then unspecified).
  std::string apply(sim::CollectiveOp op, const Grouping& groups);

  friend bool operator==(const ChunkState&, const ChunkState&) = default;
  std::size_t hash() const;
  // Rows as text, one line per device, e.g. "d0: r0={0,1} r1={0,1}" (for tests and error messages).
  std::string to_string() const;

 private:
  explicit ChunkState(int k);
  std::uint64_t* row(int device, int r) {
    return &bits_[(static_cast<std::size_t>(device) * static_cast<std::size_t>(k_) +
                   static_cast<std::size_t>(r)) *
                  words_];
  }
  const std::uint64_t* row(int device, int r) const {
    return &bits_[(static_cast<std::size_t>(device) * static_cast<std::size_t>(k_) +
                   static_cast<std::size_t>(r)) *
                  words_];
  }
  bool row_empty(int device, int r) const;

  int k_ = 0;
  std::size_t words_ = 1;  // 64-bit words per row
  std::vector<std::uint64_t> bits_;
};

// Runs a program from the initial state; returns the state before each step and after the last, or throws
// std::invalid_argument naming the first step whose precondition fails.
std::vector<ChunkState> trace_program(const Program& p, const SynthesisHierarchy& h);

}  // namespace strata::search::reduce
