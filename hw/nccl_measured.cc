#include "hw/nccl_measured.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

namespace strata::hw {

SizeTimes::SizeTimes(std::vector<SizeTime> points) : points_(std::move(points)) {
  for (std::size_t i = 0; i < points_.size(); ++i) {
    const auto& p = points_[i];
    if (!(p.bytes >= 1) || !std::isfinite(p.bytes))
      throw std::invalid_argument(fmt::format("point {}: the size must be at least 1 B", i + 1));
    if (!(p.seconds > 0) || !std::isfinite(p.seconds))
      throw std::invalid_argument(fmt::format("point {}: the time must be positive", i + 1));
    if (i > 0 && !(p.bytes > points_[i - 1].bytes))
      throw std::invalid_argument(fmt::format("point {}: sizes must increase from point to point", i + 1));
  }
}

SizeTimes::Linear SizeTimes::linear_at(double bytes) const {
  if (points_.empty()) return {};
  if (bytes <= points_.front().bytes) return {points_.front().seconds, 0};
  const auto& last = points_.back();
  const Linear proportional{0, last.seconds / last.bytes};
  if (points_.size() == 1) return proportional;
  // The segment that holds `bytes`, or the last one when it lies beyond every point.
  const auto upper = std::upper_bound(points_.begin(), points_.end(), bytes,
                                      [](double b, const SizeTime& p) { return b < p.bytes; });
  const auto hi = upper == points_.end() ? points_.end() - 1 : upper;
  const auto lo = hi - 1;
  const double slope = (hi->seconds - lo->seconds) / (hi->bytes - lo->bytes);
  if (!(slope > 0)) {
    // A segment that does not rise (measurement noise) has nothing that grows with the size.
    if (bytes > last.bytes) return proportional;
    return {lo->seconds + slope * (bytes - lo->bytes), 0};
  }
  return {lo->seconds - slope * lo->bytes, slope};
}

SizeTimes::Split SizeTimes::split(double bytes, double count) const {
  const Linear l = linear_at(bytes);
  return {count * l.fixed, count * bytes * l.per_byte};
}

namespace {

// clang-format off
constexpr NcclTableInfo kTables[] = {
    {NcclTableId::kRing, "fabric", "nccl_ring", "node.fabric.nccl_ring", "handoffs", "slice", "handoff",
     "ring-slices", "nccl ring", "channels, measured time per slice handoff"},
    {NcclTableId::kRingLl128, "fabric", "nccl_ring_ll128", "node.fabric.nccl_ring_ll128", "handoffs", "step",
     "step", "ring-ll128", "nccl ll128", "channels, measured time per LL128 step by payload",
     true, false, true},
    {NcclTableId::kNetRing, "nics", "nccl_ring", "node.nics.nccl_ring", "handoffs", "slice", "handoff",
     "net-slices", "nccl net", "ring channels over whole nodes, measured time per slice handoff between nodes",
     true, true},
    {NcclTableId::kNetRingLl128, "nics", "nccl_ring_ll128", "node.nics.nccl_ring_ll128", "handoffs", "step",
     "step", "net-ll128", "nccl net128",
     "ring channels over whole nodes, measured time per LL128 step between nodes", true, true, true},
    {NcclTableId::kNetTree, "nics", "nccl_tree", "node.nics.nccl_tree", "handoffs", "chunk", "chunk",
     "net-chunks", "nccl tree", "tree channels over whole nodes, measured time per chunk between nodes",
     true, true},
    {NcclTableId::kNetTreeLl128, "nics", "nccl_tree_ll128", "node.nics.nccl_tree_ll128", "handoffs", "chunk",
     "chunk", "net-chunks-ll128", "nccl tree128",
     "tree channels over whole nodes, measured time per LL128 chunk between nodes", true, true, true},
    {NcclTableId::kNvls, "fabric", "nccl_nvls", "node.fabric.nccl_nvls", "steps", "chunk", "step",
     "nvls-steps", "nccl nvls", "measured time per step by chunk", false, false, false, true},
    {NcclTableId::kTree, "fabric", "nccl_tree", "node.fabric.nccl_tree", "handoffs", "chunk", "chunk",
     "tree-chunks", "nccl chain", "tree channels on one node, measured time per chunk through its chain"},
};
// clang-format on
constexpr bool in_id_order() {
  for (std::size_t i = 0; i < std::size(kTables); ++i)
    if (static_cast<std::size_t>(kTables[i].id) != i) return false;
  return true;
}
static_assert(std::size(kTables) == kNcclTableCount && in_id_order(), "one entry per NcclTableId, in order");

}  // namespace

std::span<const NcclTableInfo> nccl_tables() {
  return kTables;
}

const NcclTableInfo& nccl_table_info(NcclTableId id) {
  return kTables[static_cast<std::size_t>(id)];
}

std::vector<std::string_view> NcclMeasuredTables::given() const {
  std::vector<std::string_view> paths;
  for (const auto& t : kTables)
    if (!(*this)[t.id].empty()) paths.push_back(t.path);
  return paths;
}

}  // namespace strata::hw
