// Pipeline schedules: the order in which one pipeline stage runs the forward and backward passes of its model
// chunks for every micro-batch. GPipe (Huang et al. 2019), 1F1B / PipeDream-Flush and interleaved 1F1B
// (Narayanan et al. SC'21, arXiv 2104.04473, section 2.2), with the warm-up counts and chunk order of
// Megatron-LM's schedules (megatron/core/pipeline_parallel/schedules.py,
// https://github.com/NVIDIA/Megatron-LM).
#pragma once
#include <string>
#include <vector>

#include "search/parallel/strategy.h"

namespace strata::search::parallel {

struct PipelineOp {
  int micro_batch = 0;
  int chunk = 0;  // model chunk on this stage (0..v-1); virtual stage = chunk * p + stage
  bool backward = false;
  bool operator==(const PipelineOp&) const = default;
};

// Empty when the schedule can run p stages, m micro-batches, v chunks per stage; otherwise why not.
std::string schedule_problem(PipelineSchedule s, int p, int m, int v);

// The passes stage `stage` (0..p-1) runs, in order: every (micro-batch, chunk) once forward and once
// backward. Throws std::invalid_argument when schedule_problem is not empty.
std::vector<PipelineOp> stage_order(PipelineSchedule s, int p, int stage, int m, int v);

// Forward passes in flight (started, backward not yet done) at the peak on `stage`, counted in chunk passes:
// what the stage must hold activations for. GPipe: m x v; 1F1B: min(p - stage, m); interleaved:
// min(2 (p - stage - 1) + (v - 1) p + 1, m v) (Megatron's warm-up count + 1).
int peak_in_flight(PipelineSchedule s, int p, int stage, int m, int v);

}  // namespace strata::search::parallel
