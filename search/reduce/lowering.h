// Lowering a program from its synthesis hierarchy to concrete device groups on the whole system (P2 section
// 3.4): the grouping pattern of every instruction is instantiated once per combination of non-reduction
// coordinates, and each (reduction position, non-reduction coordinates) pair is mapped to a physical device
// through the placement's layout. Every instantiation of one instruction runs concurrently.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "hw/topology.h"
#include "search/reduce/placement.h"
#include "search/reduce/program.h"
#include "sim/collective.h"

namespace strata::search::reduce {

// One collective call of a lowered step: its devices (root first) and its size in nccl-tests convention
// (AllReduce/Reduce/Broadcast: the vector each device holds; ReduceScatter: the whole input; AllGather: the
// whole output), derived from the chunk semantics: a device holding r of the k chunks holds r/k of the
// buffer.
struct LoweredCall {
  sim::CollectiveOp op;
  std::vector<hw::Rank> group;
  double bytes = 0;
};

struct LoweredStep {
  std::vector<LoweredCall> calls;  // concurrent; disjoint groups
};

struct LoweredProgram {
  std::vector<LoweredStep> steps;
};

// Maps synthesis-hierarchy device ids to physical devices for one reduction (placement + reduction axes).
class ReductionLayout {
 public:
  ReductionLayout(const Placement& placement, std::span<const int> reduce_axes);
  int group_size() const { return static_cast<int>(offset_.size()); }
  int instances() const { return static_cast<int>(base_.size()); }
  // The physical device of synthesis device `s` in reduction group `instance` (instances ordered by their
  // first device).
  int device(int instance, int s) const {
    return base_[static_cast<std::size_t>(instance)] + offset_[static_cast<std::size_t>(s)];
  }

 private:
  std::vector<int> base_;    // device with all reduction digits 0, per instance
  std::vector<int> offset_;  // per synthesis device: sum of its reduction digits x their weights
};

// Lowers `program` (valid on `h`, which must be synthesis_hierarchy(placement, reduce_axes)) for a buffer of
// `bytes_per_device` bytes per device. Throws std::invalid_argument if the program is invalid.
LoweredProgram lower(const Program& program, const SynthesisHierarchy& h, const ReductionLayout& layout,
                     double bytes_per_device);

// Readable form: one line per step, "op: {0,1,2,3} {4,5,6,7} ... (bytes)".
std::string to_string(const LoweredProgram& lowered, std::span<const hw::Level> levels, int max_groups = 4);

}  // namespace strata::search::reduce
