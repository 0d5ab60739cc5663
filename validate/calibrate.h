// `strata validate calibrate`: exchange microbenchmarks per link class of an emulated cluster (two ranks of
// one node: shared memory; two ranks of different nodes: the shaped network), fitted by link_fit.h, written
// into the cluster's system file. Only these point-to-point exchanges are used; collective and program times
// never are (they are what validation compares against).
#pragma once

#include <optional>
#include <vector>

#include "validate/cluster.h"
#include "validate/link_fit.h"
#include "validate/plan.h"

namespace strata::validate {

struct LinkCalibration {
  LinkFigures figures;
  std::vector<SizeTime> samples;  // median time per size
  double worst_spread = 0;        // largest (max - min) / median over the sizes
};
struct Calibration {
  std::optional<LinkCalibration> intra;  // only with 2+ ranks per node
  std::optional<LinkCalibration> inter;  // only with 2+ nodes
};

// The exchange sizes: 8 B (latency) and 64 KiB .. 8 MiB; the bandwidth fit uses sizes >= 256 KiB.
std::vector<std::int64_t> calibration_sizes();
inline constexpr double kBandwidthFitMinBytes = 256 * 1024;

Calibration calibrate(const ClusterSpec& spec, int warmup, int iterations);

// Rewrites the cluster's system file with the measured figures (configured ones where a class was not
// measured), noting the configured values and the spreads in its comments.
void write_calibrated_system(const ClusterSpec& spec, const Calibration& c);

}  // namespace strata::validate
