#include "search/parallel/schedule.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace strata::search::parallel {
namespace {

// Megatron's warm-up forward count for a stage.
int warmup_count(PipelineSchedule s, int p, int stage, int m, int v) {
  switch (s) {
    case PipelineSchedule::kGpipe:
      return m * v;
    case PipelineSchedule::kOneFOneB:
      return std::min(p - stage - 1, m);
    case PipelineSchedule::kInterleaved:
      // With as many micro-batches as stages Megatron runs every forward first.
      if (m == p) return m * v;
      return std::min((p - stage - 1) * 2 + (v - 1) * p, m * v);
  }
  return 0;
}

// The k-th forward (or backward) chunk pass of an interleaved stage: groups of p micro-batches go through
// chunk 0, then chunk 1, ...; backward passes visit the chunks in reverse.
PipelineOp interleaved_op(int k, int p, int v, bool backward) {
  const int in_group = k % (p * v);
  int chunk = in_group / p;
  if (backward) chunk = v - 1 - chunk;
  return {(k / (p * v)) * p + k % p, chunk, backward};
}

}  // namespace

std::string schedule_problem(PipelineSchedule s, int p, int m, int v) {
  if (p < 1 || m < 1 || v < 1)
    return fmt::format("stages ({}), micro-batches ({}) and chunks ({}) must be at least 1", p, m, v);
  if (s != PipelineSchedule::kInterleaved && v != 1)
    return fmt::format("{} runs one model chunk per stage (virtual stages {} needs the interleaved schedule)",
                       schedule_name(s), v);
  if (s == PipelineSchedule::kInterleaved) {
    if (p < 2) return "the interleaved schedule needs at least 2 pipeline stages";
    if (v < 2) return "the interleaved schedule needs at least 2 virtual stages per GPU";
    if (m % p != 0)
      return fmt::format(
          "the interleaved schedule needs micro-batches ({}) to be a multiple of pipeline "
          "stages ({})",
          m, p);
  }
  return {};
}

std::vector<PipelineOp> stage_order(PipelineSchedule s, int p, int stage, int m, int v) {
  if (auto problem = schedule_problem(s, p, m, v); !problem.empty()) throw std::invalid_argument(problem);
  if (stage < 0 || stage >= p)
    throw std::invalid_argument(fmt::format("stage {} outside 0..{}", stage, p - 1));
  const int total = m * v;
  auto op = [&](int k, bool backward) {
    return s == PipelineSchedule::kInterleaved ? interleaved_op(k, p, v, backward)
                                               : PipelineOp{k, 0, backward};
  };
  std::vector<PipelineOp> order;
  order.reserve(static_cast<std::size_t>(2 * total));
  const int warmup = warmup_count(s, p, stage, m, v);
  for (int k = 0; k < warmup; ++k) order.push_back(op(k, false));
  for (int k = 0; k < total - warmup; ++k) {
    order.push_back(op(warmup + k, false));
    order.push_back(op(k, true));
  }
  for (int k = total - warmup; k < total; ++k) order.push_back(op(k, true));
  return order;
}

int peak_in_flight(PipelineSchedule s, int p, int stage, int m, int v) {
  const int warmup = warmup_count(s, p, stage, m, v);
  return std::min(warmup + 1, m * v);
}

}  // namespace strata::search::parallel
