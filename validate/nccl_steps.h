// The microbenchmarks behind node.fabric.nccl_ring, node.fabric.nccl_ring_ll128, node.fabric.nccl_nvls,
// node.nics.nccl_ring, node.nics.nccl_ring_ll128 and node.nics.nccl_tree (hw/nccl_measured.h,
// docs/fidelity.md §6.3, §6.4, §6.6): NCCL's all-reduce forced onto one channel, once per size of the unit
// NCCL moves per step, at several message sizes that are whole multiples of that unit. The run time grows
// with the number of units one channel moves; the slope is the time per unit, the intercept what does not
// grow with it (launch, the common barrier). No collective at NCCL's own settings is fitted.
//   ring-slices  NCCL_ALGO=Ring, NCCL_PROTO=Simple, NCCL_MIN_NCHANNELS=NCCL_MAX_NCHANNELS=1 and NCCL_BUFFSIZE
//                = 4b, which makes the slices of NCCL's full loops b (a 2-step slice of an 8-step buffer).
//                Sizes of L whole loops (N chunks of 2b) make 2(2N - 1) L handoffs of a slice of b. One more
//                all-reduce at NCCL's own settings gives the channels NCCL gives the node's rings
//                (NCCL_DEBUG=INFO, "N coll channels").
//   net-slices   the same ring with one rank on each of two nodes, so that every handoff crosses the
//                network (N = 2: 6 L handoffs); the channel count is that of both nodes' whole GPU sets.
//   net-chunks   NCCL_ALGO=Tree, NCCL_PROTO=Simple, one channel, NCCL_BUFFSIZE = 8c, which makes the tree's
//                chunk c (one step of the buffer, computeCollChunkInfo), with one rank on each of two nodes:
//                node 0 is the root, node 1 its child, so every chunk crosses the network up and back down.
//                Sizes of k c bytes make k chunks on the channel (the pipeline adds a fixed fill); the
//                channel count is that of both nodes' whole GPU sets, as for net-slices. net-chunks-ll128:
//                the same tree under NCCL_PROTO=LL128 with NCCL_LL128_BUFFSIZE = 8 steps of c x 128/120, so
//                that a chunk carries c bytes, with enough chunks that NCCL does not halve it.
//   ring-ll128   the ring-slices ring under NCCL_PROTO=LL128 with NCCL_LL128_BUFFSIZE = 8 steps of s x
//   128/120
//                bytes, so that a step carries s bytes of payload: sizes of L whole loops (N chunks of one
//                step) make (2N - 1) L steps. net-ll128: the same with one rank on each of two nodes.
//   nvls-steps   NCCL_ALGO=NVLS, NCCL_NVLS_NCHANNELS=1 and NCCL_NVLS_CHUNKSIZE = c. With every GPU a head, a
//                step moves one chunk per head, so sizes of n N c bytes make n steps (v2.21.5-1
//                computeCollSteps); from 64 steps on NCCL keeps the chunk at c (computeCollChunkInfo).
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hw/nccl_measured.h"
#include "validate/measure_backend.h"
#include "validate/plan.h"

namespace strata::validate {

using EnvVar = std::pair<std::string, std::string>;

// One unit size's runs: the environment NCCL reads, and a plan of one all-reduce over all ranks per count,
// case i making counts[i] units (handoffs, steps) on its one channel.
struct UnitRun {
  double unit_bytes = 0;
  std::vector<EnvVar> env;
  MeasurementPlan plan;
  std::vector<double> counts;
};
// Ring slices of `slice_bytes` at `loops` whole loops. Throws std::invalid_argument for fewer than 2 ranks, a
// slice not a multiple of 4 KiB, or fewer than two increasing loop counts.
UnitRun ring_slice_run(int ranks, double slice_bytes, std::span<const int> loops, int warmup, int iterations);
// LL128 ring steps carrying `step_bytes` of payload at `loops` whole loops (NCCL_PROTO=LL128,
// NCCL_LL128_BUFFSIZE = 8 steps of step_bytes x 128/120). Throws std::invalid_argument for fewer than 2
// ranks, a payload not a multiple of 9,600 B or above NCCL's 576,000 B, or fewer than two increasing loop
// counts.
UnitRun ring_ll128_run(int ranks, double step_bytes, std::span<const int> loops, int warmup, int iterations);
// Tree chunks of `chunk_bytes` at `chunks` chunks on the one channel. Throws std::invalid_argument for fewer
// than 2 ranks, a chunk not a multiple of 4 KiB or above 4 MiB, or chunk counts below 8 or not increasing.
UnitRun tree_chunk_run(int ranks, double chunk_bytes, std::span<const int> chunks, int warmup,
                       int iterations);
// LL128 tree chunks carrying `chunk_bytes` of payload at `chunks` chunks on the one channel, one rank per
// node (NCCL_ALGO=Tree, NCCL_PROTO=LL128, NCCL_LL128_BUFFSIZE = 8 steps of chunk_bytes x 128/120). Throws
// std::invalid_argument for fewer than 2 ranks, a payload not a multiple of 9,600 B or above 576,000 B, or
// chunk counts not increasing or below what keeps NCCL from halving the chunk (135 above 128 KiB and 34 above
// 32 KiB on two nodes, at least 8).
UnitRun tree_ll128_chunk_run(int ranks, double chunk_bytes, std::span<const int> chunks, int warmup,
                             int iterations);
// NVLS chunks of `chunk_bytes` at `steps` steps. Throws std::invalid_argument for fewer than 2 ranks, a chunk
// not a multiple of 4 KiB or above 512 KiB (a step of NCCL's 4 MiB buffer), or step counts below 64 or not
// increasing.
UnitRun nvls_step_run(int ranks, double chunk_bytes, std::span<const int> steps, int warmup, int iterations);

// Least squares line through (counts, seconds): seconds = intercept + per_unit x count, and the largest
// |residual| / time. Throws std::invalid_argument for fewer than two distinct counts, or when the time does
// not grow with the count (per_unit <= 0).
struct UnitFit {
  double per_unit = 0;
  double intercept = 0;
  double worst_residual = 0;
};
UnitFit fit_units(std::span<const double> counts, std::span<const double> seconds);

// The collective channels NCCL reports in its INFO log ("NCCL INFO 24 coll channels, ..."; older releases
// only list the rings: "Channel 23/24 :    0   1 ..."), the largest over the lines; nullopt when none is
// found.
std::optional<int> nccl_channels_from_log(std::string_view log);

// What one unit size measured: per run its count and median time, the fit, and the largest spread
// (max - min) / median of a run's iterations.
struct UnitPoint {
  double unit_bytes = 0;
  std::vector<double> counts, median_seconds;
  UnitFit fit;
  double worst_spread = 0;
};
struct UnitMeasurement {
  std::vector<UnitPoint> points;
  hw::SizeTimes table() const;  // per unit size, the fitted time per unit
  std::string library;          // the worker's library line (NCCL's version)
};
// Runs every unit size's plan with `backend` (nccl) as `launch` says (on this machine, or on launch.hosts),
// the run's NCCL settings added to launch.env, and fits each. `progress` is told what runs next. Throws
// util::InputError when a run fails or computes a wrong element, std::invalid_argument when a size does not
// fit (fit_units).
UnitMeasurement measure_units(const MeasureBackend& backend, const HostLaunch& launch,
                              std::span<const UnitRun> runs,
                              const std::function<void(const std::string&)>& progress);
// The channels NCCL gives `launch.ranks` ranks (on this machine or launch.hosts) at its own settings: one
// small all-reduce with NCCL_DEBUG=INFO, read from the ranks' output. Throws util::InputError when the log
// names none.
int nccl_default_channels(const MeasureBackend& backend, HostLaunch launch);

// Table `id` as the system file holds it (hw/nccl_measured.h, with the table's keys), as YAML text:
// {channels: 24, handoffs: [{slice: 32768 B, time: 7.250 us}, ...]}, or {steps: [...]} for NVLS.
std::string nccl_table_yaml(hw::NcclTableId id, const hw::NcclMeasured& measured);
// A copy of the system file `system_yaml` (text) with table `id` set to `measured` at its place
// (node.<section>.<key>), as YAML text. Throws std::invalid_argument when the file has no node.<section> map.
std::string system_with_nccl_table(const std::string& system_yaml, hw::NcclTableId id,
                                   const hw::NcclMeasured& measured);

}  // namespace strata::validate
