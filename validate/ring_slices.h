// `strata validate ring-slices`: the microbenchmark behind node.fabric.nccl_ring (hw/nccl_ring_measured.h,
// docs/fidelity.md §6.3). NCCL's ring all-reduce on the node's GPUs, forced onto one channel with the Simple
// protocol (NCCL_ALGO=Ring, NCCL_PROTO=Simple, NCCL_MIN_NCHANNELS=NCCL_MAX_NCHANNELS=1), once per slice size
// b: NCCL_BUFFSIZE = 4b makes its full loops' slices b (a 2-step slice of an 8-step buffer). Sizes of whole
// loops (L x N chunks of 2b) make every handoff a slice of b, 2(2N - 1) L handoffs per run, so the time per
// handoff is the slope of the run time over the handoff count, and what does not grow with it (launch, the
// common barrier) the intercept. One more run with NCCL's own settings reports the channels NCCL gives the
// node's rings (NCCL_DEBUG=INFO, "N coll channels"). No collective time at NCCL's own settings is fitted.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hw/nccl_ring_measured.h"
#include "validate/measure_backend.h"
#include "validate/plan.h"

namespace strata::validate {

using EnvVar = std::pair<std::string, std::string>;

// The slices measured by default: 32 KiB (NCCL's smallest slice) to 2 MiB (NCCL_BUFFSIZE 8 MiB), doubling;
// the loop counts of each slice's runs.
std::vector<double> default_ring_slices();
inline constexpr int kRingSliceLoops[] = {2, 4, 8, 16};

// One slice size's runs: the environment NCCL reads, and a plan of one all-reduce over all `ranks` per loop
// count, case i with handoffs[i] handoffs per channel.
struct RingSliceRun {
  double slice_bytes = 0;
  std::vector<EnvVar> env;
  MeasurementPlan plan;
  std::vector<double> handoffs;
};
// Throws std::invalid_argument for fewer than 2 ranks, a slice not a multiple of 4 KiB, or loop counts
// fewer than 2 or not increasing.
RingSliceRun ring_slice_run(int ranks, double slice_bytes, std::span<const int> loops, int warmup,
                            int iterations);

// Least squares line through (handoffs, seconds): seconds = intercept + per_handoff x handoffs, and the
// largest |residual| / time. Throws std::invalid_argument for fewer than two distinct handoff counts, or when
// the time does not grow with the handoffs (per_handoff <= 0).
struct HandoffFit {
  double per_handoff = 0;
  double intercept = 0;
  double worst_residual = 0;
};
HandoffFit fit_handoffs(std::span<const double> handoffs, std::span<const double> seconds);

// The collective channels NCCL reports in its INFO log ("NCCL INFO 24 coll channels, ..."; older releases
// only list the rings: "Channel 23/24 :    0   1 ..."), the largest over the lines; nullopt when none is
// found.
std::optional<int> nccl_channels_from_log(std::string_view log);

// What one slice size measured: per run its handoffs and median time, the fit, and the largest spread
// (max - min) / median of a run's iterations.
struct RingSlicePoint {
  double slice_bytes = 0;
  std::vector<double> handoffs, median_seconds;
  HandoffFit fit;
  double worst_spread = 0;
};
struct RingSliceMeasurement {
  hw::NcclRingMeasured measured;  // NCCL's channels, and per slice the fitted time per handoff
  std::vector<RingSlicePoint> points;
  std::string library;  // the worker's library line (NCCL's version)
};
// Runs every slice size's plan with `backend` (nccl) as `launch` says, with the slice's NCCL settings added
// to launch.env, fits each, and runs one small all-reduce at NCCL's own settings with its INFO log written to
// a temporary folder of this machine to read the channel count (so the ranks must run here: launch.hosts
// empty). `progress` is told what runs next. Throws util::InputError when a run fails or the log names no
// channel count, std::invalid_argument when a slice does not fit (fit_handoffs).
RingSliceMeasurement measure_ring_slices(const MeasureBackend& backend, const HostLaunch& launch,
                                         std::span<const double> slices, std::span<const int> loops,
                                         int warmup, int iterations,
                                         const std::function<void(const std::string&)>& progress);

// A copy of the system file `system_yaml` (text) with node.fabric.nccl_ring set to `measured` (sizes in
// bytes, times in microseconds), as YAML text. Throws std::invalid_argument when the file has no node.fabric.
std::string system_with_nccl_ring(const std::string& system_yaml, const hw::NcclRingMeasured& measured);

}  // namespace strata::validate
