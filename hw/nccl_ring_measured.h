// What NCCL's ring (Simple protocol) does between the GPUs of one node, measured by `strata validate
// ring-slices` (validate/ring_slices.h) and given in a system file as node.fabric.nccl_ring: the channels
// NCCL's topology search gives the node's rings, and the time one channel takes per slice handoff, as a
// function of the slice size (one channel, NCCL_BUFFSIZE varied). A handoff is
// one slice of one primitive of NCCL's ring kernel: wait for the peer's step counter, copy or reduce the
// slice, fence, post (device/prims_simple.h, NCCL v2.21.5-1). The simulator's ring charges a channel this
// time per handoff where the table is given (docs/fidelity.md §6.3); without it nothing changes.
#pragma once

#include <span>
#include <vector>

namespace strata::hw {

struct SliceTime {
  double bytes = 0;    // slice size
  double seconds = 0;  // one channel's time per handoff of that slice (fixed costs included)
};

class SliceTimes {
 public:
  SliceTimes() = default;
  // Points with strictly increasing sizes (at least 1 B) and positive times; throws std::invalid_argument
  // saying which point is wrong.
  explicit SliceTimes(std::vector<SliceTime> points);

  bool empty() const { return points_.empty(); }
  std::span<const SliceTime> points() const { return points_; }
  // Piecewise linear between the points: t(b) = fixed + b x per_byte of the segment that holds b. Below the
  // smallest point its time, all of it fixed (a handoff's fixed costs do not shrink with the slice; NCCL's
  // slices are at least 32 KiB unless the chunk itself is smaller); a segment that does not rise is all
  // fixed; above the largest point, the last segment extended where it rises, else (and for a single point)
  // the last point's time per byte with nothing fixed. Empty table: 0.
  struct Linear {
    double fixed = 0;     // seconds
    double per_byte = 0;  // seconds per byte
  };
  Linear linear_at(double bytes) const;
  double seconds(double bytes) const {
    const Linear l = linear_at(bytes);
    return l.fixed + l.per_byte * bytes;
  }

 private:
  std::vector<SliceTime> points_;
};

// node.fabric.nccl_ring.
struct NcclRingMeasured {
  int channels = 0;     // NCCL's ring channels on the node (NCCL_DEBUG=INFO's "Channel 23/24": 24)
  SliceTimes handoffs;  // one channel's time per slice handoff
  bool empty() const { return handoffs.empty(); }
};

}  // namespace strata::hw
