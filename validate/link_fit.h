// Latency and bandwidth of one link class from exchange microbenchmarks (`strata validate calibrate`): every
// size's median time t(S) of a two-rank MPI_Sendrecv (each rank sends S and receives S at once, loading the
// link in both directions as the collectives do) is fitted by t = latency + S / bandwidth. These are the
// only measurements calibration uses; collective and program times are never fitted.
#pragma once

#include <span>
#include <string>

namespace strata::validate {

struct LinkFigures {
  double bandwidth = 0;  // bytes/s per direction
  double latency = 0;    // seconds one way (rank to rank)
  std::string source;    // "configured" or how it was measured
};

struct SizeTime {
  double bytes = 0;
  double seconds = 0;
};

// latency = the time of the smallest size; bandwidth = 1 / x for the x that minimises the relative residuals
// sum_i (1 - (latency + S_i x) / t_i)^2 over the sizes of at least `min_bytes`, with u_i = S_i / t_i:
// x = sum u_i (1 - latency / t_i) / sum u_i^2. Throws std::invalid_argument when no size qualifies or the
// fitted slope is not positive.
LinkFigures fit_link(std::span<const SizeTime> samples, double min_bytes);

}  // namespace strata::validate
