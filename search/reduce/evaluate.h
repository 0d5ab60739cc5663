// Evaluation of placements x synthesized reduction programs on the strata simulator: every placement of the
// axes is enumerated, its reduction programs are synthesized on hierarchy (d), lowered to device groups and
// simulated with NCCL ring or tree collectives; programs are ranked per placement and compared with the
// baseline of one AllReduce over each reduction group. TBB-parallel; output order is deterministic.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hw/topology.h"
#include "search/reduce/lowering.h"
#include "search/reduce/placement.h"
#include "search/reduce/synthesizer.h"

namespace strata::search::reduce {

// The algorithm a collective of a program runs with when `requested` (a registered name) is forced: the
// requested one where NCCL would run it for the call (its nccl_unsupported_reason), otherwise the first
// registered algorithm that can run the call (ring). E.g. NCCL's tree implements all-reduce only, so every
// other step of a "tree" program uses rings, as NCCL does. A host-MPI library's schedule (openmpi) runs every
// call it can.
std::string_view algorithm_for(const hw::Topology& topo, const sim::CollectiveSpec& call,
                               std::string_view requested);

// Simulates a lowered program on the physical topology: each call becomes a collective on one task graph and
// starts when all of its devices finished their previous call (no global barrier between steps, as with
// per-device NCCL streams). Returns the makespan in seconds.
double simulate_lowered(const hw::Topology& topo, const LoweredProgram& lowered, std::string_view algorithm);

// The machine hierarchy that placements are enumerated over: the topology's levels, with non-switched node
// levels optionally split into prime sub-levels (so placements also choose which GPUs of a node form groups,
// which matters on rings and cube-meshes). hw_level[j] = the topology level sub-level j belongs to.
struct PlacementHierarchy {
  std::vector<hw::Level> levels;
  std::vector<int> hw_level;
};
PlacementHierarchy placement_hierarchy(const hw::Topology& topo, bool split_non_switched);

struct EvalConfig {
  std::vector<int> axes;
  std::vector<int> reduce_axes;  // reduced together (one reduction over several axes)
  double bytes_per_device = 0;   // the buffer every device reduces
  std::vector<std::string> algorithms{"ring"};
  SynthesisOptions synthesis;
  bool split_non_switched = false;  // see PlacementHierarchy
  bool keep_all_programs = false;   // fill PlacementEval::ranked with every program, not only the best
  bool keep_lowered = false;  // with keep_all_programs: also fill ProgramTime::lowered (validate runs them)
};

struct ProgramTime {
  std::size_t index = 0;  // position in the synthesis result
  std::string text;       // text form
  std::string shape;      // e.g. "ReduceScatter-AllReduce-AllGather"
  double seconds = 0;
  LoweredProgram lowered;  // only with EvalConfig::keep_lowered
};

struct PlacementEval {
  Matrix matrix;
  std::string algorithm;
  std::string hierarchy;  // the synthesis hierarchy, e.g. "[root 1, node 4, gpu 16]"
  std::size_t num_programs = 0;
  double baseline_seconds = 0;  // one AllReduce over each reduction group
  ProgramTime best;
  std::vector<ProgramTime> ranked;  // fastest first (ties: synthesis order); empty unless keep_all_programs
  bool cross_node = false;          // a reduced axis has a factor > 1 on the top level
  double speedup() const { return best.seconds > 0 ? baseline_seconds / best.seconds : 1.0; }
};

struct EvalStats {
  std::size_t distinct_hierarchies = 0;
  std::size_t simulations = 0;    // simulator runs (programs identical under ring and tree run once)
  double synthesis_seconds = 0;   // wall time
  double simulation_seconds = 0;  // wall time
};

// Every placement x algorithm, ordered by matrix (lexicographic) then by the order of config.algorithms.
std::vector<PlacementEval> evaluate(const hw::Topology& topo, const EvalConfig& config,
                                    EvalStats* stats = nullptr);

// Joint placement choice for several reductions (beyond P2): each reduction has its own axes and size; a
// placement's cost is the sum over reductions of its best program's time.
struct ReductionSpec {
  std::vector<int> reduce_axes;
  double bytes_per_device = 0;
  std::string label;  // e.g. "gradients"
};
struct JointEval {
  Matrix matrix;
  std::string algorithm;
  std::vector<PlacementEval> parts;  // one per reduction, in input order
  double total_best_seconds = 0;
  double total_baseline_seconds = 0;
};
// Sorted by total_best_seconds (ties: matrix order).
std::vector<JointEval> evaluate_joint(const hw::Topology& topo, std::span<const int> axes,
                                      std::span<const ReductionSpec> reductions, const std::string& algorithm,
                                      const SynthesisOptions& synthesis, bool split_non_switched = false);

}  // namespace strata::search::reduce
