// The reduction DSL of P2 (section 3.3, Table 2): a program is a sequence of instructions (slice, form,
// collective) over a synthesis hierarchy. Forms are InsideGroup, Parallel(level) and Master(level). Programs
// have a text form, e.g.
//   (node, InsideGroup, ReduceScatter); (node, Parallel(root), AllReduce); (node, InsideGroup, AllGather)
// which parse_program() reads back. See docs/reduce.md.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "sim/collective.h"

namespace strata::search::reduce {

// A synthesis hierarchy: level 0 is the root (cardinality 1), levels 1..depth() have cardinalities > 0.
// Device ids are mixed-radix numbers of the per-level child indices, level 1 most significant.
struct SynthLevel {
  std::string name;
  int cardinality = 1;
  int hw_level = -1;  // the hardware level it was collapsed from (-1: root or not from hardware)
};

class SynthesisHierarchy {
 public:
  // `levels` are the non-root levels, outermost first; a root level named "root" is prepended.
  explicit SynthesisHierarchy(std::vector<SynthLevel> levels);
  const std::vector<SynthLevel>& levels() const { return levels_; }  // including the root at index 0
  int depth() const { return static_cast<int>(levels_.size()) - 1; }
  int num_devices() const { return num_devices_; }
  const SynthLevel& level(int l) const { return levels_[static_cast<std::size_t>(l)]; }
  int cardinality(int l) const { return level(l).cardinality; }
  // Index of the level with this name, or -1.
  int find(std::string_view name) const;
  std::vector<int> cardinalities() const;  // of levels 1..depth
  std::string to_string() const;           // "[root 1, node 4, gpu 16]"

 private:
  std::vector<SynthLevel> levels_;
  int num_devices_ = 1;
};

// The collectives the DSL composes (a subset of sim::CollectiveOp).
inline constexpr sim::CollectiveOp kDslCollectives[] = {
    sim::CollectiveOp::kAllReduce, sim::CollectiveOp::kReduceScatter, sim::CollectiveOp::kAllGather,
    sim::CollectiveOp::kReduce, sim::CollectiveOp::kBroadcast};
std::string_view dsl_name(sim::CollectiveOp op);  // "AllReduce", ...

enum class FormKind { kInsideGroup, kParallel, kMaster };

struct Form {
  FormKind kind = FormKind::kInsideGroup;
  int level = 0;  // the ancestor level e' of Parallel(e') / Master(e'); unused for InsideGroup
  friend bool operator==(const Form&, const Form&) = default;
};

struct Instruction {
  int slice = 0;
  Form form;
  sim::CollectiveOp op = sim::CollectiveOp::kAllReduce;
  friend bool operator==(const Instruction&, const Instruction&) = default;
};

using Program = std::vector<Instruction>;

std::string to_string(const Instruction& in, const SynthesisHierarchy& h);
std::string to_string(const Program& p, const SynthesisHierarchy& h);  // "; "-separated instructions
// Short name of a program's collectives, e.g. "ReduceScatter-AllReduce-AllGather".
std::string shape_name(const Program& p);

// Parses the text form (level names or level indices; whitespace-insensitive; ';' or newlines between
// instructions). Throws std::invalid_argument naming the character position and what was expected.
Program parse_program(std::string_view text, const SynthesisHierarchy& h);

// Device groups of one (slice, form) on the synthesis hierarchy (P2 section 3.3 and Table 2):
//   InsideGroup at slice e:  devices under one level-e node;
//   Parallel(e') at slice e: within every level-e' node, the devices at the same position of its slice
//   groups; Master(e') at slice e:   the Parallel(e') groups of position 0 (one group per level-e' node).
// Groups list device ids in increasing order (the first is the root of Reduce/Broadcast) and are ordered by
// their first device. Devices outside every group take no part. Throws std::invalid_argument if the form's
// level is not an ancestor of the slice.
using Grouping = std::vector<std::vector<int>>;
Grouping groups_of(const SynthesisHierarchy& h, int slice, Form form);

// The distinct groupings the synthesizer uses: every (slice, form) whose groups are not all single devices,
// keeping the first syntactic form of each distinct group set (slices outermost first; InsideGroup, then
// Parallel and Master of ancestors outermost first). Two-level hierarchies have 4, three-level ones 9.
struct GroupingChoice {
  int slice = 0;
  Form form;
  Grouping groups;
};
std::vector<GroupingChoice> distinct_groupings(const SynthesisHierarchy& h);

}  // namespace strata::search::reduce
