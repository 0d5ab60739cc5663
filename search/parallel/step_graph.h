// A pipelined training step as a task graph on sim/. The step is described per virtual stage (a model chunk
// on a pipeline stage) by its forward and backward pass: a chain of segments on the representative GPU of the
// stage — compute kernels, blocking collectives (tensor parallelism), asynchronous communication that later
// compute waits for (context-parallel ring steps, ZeRO-3 gathers) — plus pipeline sends between virtual
// stages, gradient reductions triggered during the last micro-batch's backward, parameter gathers before the
// first forward, and the optimizer. build_step_graph orders every stage's passes by the pipeline schedule and
// wires the dependencies; the simulator does the rest (docs/parallel.md, "Step simulation").
#pragma once
#include <array>
#include <string>
#include <vector>

#include "hw/topology.h"
#include "search/parallel/comm.h"
#include "search/parallel/schedule.h"
#include "sim/simulator.h"
#include "sim/task_graph.h"

namespace strata::search::parallel {

// What a segment's time counts as in the step breakdown.
enum class TimeKind : std::uint8_t { kCompute, kRecompute, kTensorComm, kContextComm, kExpertComm };
inline constexpr std::size_t kNumTimeKinds = 5;

struct Segment {
  enum class Kind : std::uint8_t { kCompute, kComm, kAsync };
  Kind kind = Kind::kCompute;
  double seconds = 0;  // kCompute
  int comm = -1;       // kComm / kAsync: index into StepDescription::comms
  std::string label;   // kCompute: trace name
  TimeKind time = TimeKind::kCompute;
  std::vector<int> waits;  // earlier kAsync segments of the same pass this one waits for
  int grad_trigger = -1;   // backward: index into the stage's grad_sync ops that may start after it
  // Forward: this segment begins layer `layer` of the chunk (-1: the embedding); kNoLayer otherwise. The
  // chunk's first forward waits here for the parameter gathers the layer needs.
  static constexpr int kNoLayer = -2;
  int layer = kNoLayer;
};

struct PassDescription {
  std::vector<Segment> segments;
};

struct StageSync {
  // Gradient reductions (or reduce-scatters), in launch order; each starts once the segment naming it in
  // the last micro-batch's backward is done (or, with overlap off, after the stage's last backward).
  std::vector<int> grad_sync;
  // Parameter gathers (ZeRO-1/2's distributed optimizer, steady state): issued at the start of the step on
  // the data-parallel stream; the first forward of chunk c waits for gather g before layer g.first_layer
  // (Megatron's --overlap-param-gather).
  struct ParamGather {
    int op = -1;
    int first_layer = -1;  // the first layer of the chunk whose parameters it carries (-1: the embedding)
  };
  std::vector<std::vector<ParamGather>> param_gather;  // per chunk
  double optimizer_seconds = 0;
};

struct StepDescription {
  int p = 1, m = 1, v = 1;
  PipelineSchedule schedule = PipelineSchedule::kOneFOneB;
  std::vector<hw::Rank> rep;              // per stage: the GPU whose compute is simulated
  std::vector<PassDescription> fwd, bwd;  // per virtual stage vs = chunk * p + stage
  std::vector<CommOp> comms;
  // Per boundary vs -> vs + 1 (size p v - 1): comm indices, or -1 when the next pass may start at once.
  std::vector<int> send_fwd, send_bwd;
  std::vector<StageSync> stages;  // per stage
  bool overlap_grad_reduce = true;
};

// Streams on a representative GPU (trace rows).
inline constexpr int kComputeStream = 0, kAsyncStream = 1, kDataStream = 2;

struct StepGraph {
  sim::TaskGraph graph;
  // Per stage: the chain's tasks with their time kinds (for the breakdown), and the last task of the stage.
  struct Timed {
    sim::TaskId task = -1;
    TimeKind kind = TimeKind::kCompute;
    // A coarse task merging fixed-length segments: seconds per TimeKind (all zero for a single segment).
    std::array<double, kNumTimeKinds> fixed{};
    sim::TaskId first = -1;  // the segment's first task (a flow-simulated collective has several)
    double fixed_total() const {
      double t = 0;
      for (double x : fixed) t += x;
      return t;
    }
  };
  std::vector<std::vector<Timed>> chain;
  std::vector<sim::TaskId> last_backward, optimizer;
  std::array<bool, kNumCommClasses> isolated{};
};

// Throws std::invalid_argument for an inconsistent description. `timing`: how communication is timed
// (CommTiming). `coarse`: consecutive fixed-length segments of a pass become one task (same times, far fewer
// tasks; the trace then shows passes instead of layers). `alone`: a shared memo of communication times alone
// (nullptr: one per graph).
StepGraph build_step_graph(const hw::Topology& topo, const StepDescription& d,
                           CommTiming timing = CommTiming::kSimulated, bool coarse = false,
                           AloneTimes* alone = nullptr);

struct StepBreakdown {
  double step = 0;
  double compute = 0, recompute = 0;             // on the critical stage's chain
  double tp_comm = 0, cp_comm = 0, ep_comm = 0;  // exposed: on the chain
  double dp_exposed = 0;                         // from the stage's last backward to its optimizer start
  double optimizer = 0;
  double bubble = 0;  // the rest: idle time of the stage
  int stage = 0;      // the stage the breakdown is taken on (the first)
};

StepBreakdown breakdown(const StepGraph& g, const sim::SimResult& result, int stage = 0);

}  // namespace strata::search::parallel
