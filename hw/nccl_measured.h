// What NCCL's kernels and network proxy do, measured by microbenchmarks (validate/nccl_steps.h) and given
// in a system file:
//   node.fabric.nccl_ring  `strata validate ring-slices`: the channels NCCL's topology search gives the
//              node's rings, and the time one channel takes per slice handoff of its ring (Simple
//              protocol), by slice size (one channel, NCCL_BUFFSIZE varied). A handoff is one slice of one
//              primitive of the ring kernel: wait for the peer's step counter, copy or reduce the slice,
//              fence, post (device/prims_simple.h, NCCL v2.21.5-1).
//   node.fabric.nccl_ring_ll128  `strata validate ring-ll128`: the same ring under NCCL's LL128 protocol, the
//              time one channel takes per step by the step's payload (one channel, NCCL_LL128_BUFFSIZE
//              varied). LL128 moves one step per primitive (ProtoLL128, device/prims_ll128.h): the sender
//              waits for a free step of the peer's buffer and writes 128-byte lines that carry their own
//              flags, the receiver polls the lines; 120 of each line's 128 bytes are payload.
//   node.fabric.nccl_nvls  `strata validate nvls-steps`: the time one NVLS channel takes per step, by chunk
//              size (one channel, NCCL_NVLS_CHUNKSIZE varied). A step is one chunk per head through the
//              kernel's scatter, reduce-and-multicast and gather warps (device/all_reduce.h, NVLS).
//   node.nics.nccl_ring  `strata validate net-slices`: the same ring handoff when every hop crosses the
//              network (one rank on each of two nodes), which adds the network proxy: one send per slice, at
//              most NCCL_STEPS steps in flight, the credit back only when the send completes
//              (transport/net.cc); and the channels NCCL gives rings over whole nodes.
//   node.nics.nccl_ring_ll128  `strata validate net-ll128`: the LL128 step when every hop crosses the
//              network (one rank on each of two nodes); the proxy sends one message per step.
//   node.nics.nccl_tree  `strata validate net-chunks`: NCCL's tree between two nodes (one rank on each, one
//              channel), the time per chunk by chunk size (NCCL_BUFFSIZE varied): the network proxy as for
//              the ring, with a tree chunk of one step and 8 steps in flight; and the channels NCCL gives
//              trees over whole nodes (the same count as its rings: one set of collective channels).
//   node.nics.nccl_tree_ll128  `strata validate net-chunks-ll128`: the same tree under LL128, by the chunk's
//              payload (one channel, NCCL_LL128_BUFFSIZE varied; a tree chunk is one LL128 step).
// The fabric tables describe the node's whole GPU set (the commands measure every GPU of the node) and are
// charged for collectives over a whole node; the NIC table for rings over whole nodes, where every channel
// then moves at the slower of its NVLink and network handoffs (docs/fidelity.md §6.3, §6.4, §6.6). Without
// them nothing changes. The tree table is charged for trees over whole nodes and, per chunk, for the
// network part of NVLS-Tree (docs/fidelity.md §6.6).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

namespace strata::hw {

// A time that depends on a size: one channel's time per ring handoff by slice size, per NVLS step by chunk
// size.
struct SizeTime {
  double bytes = 0;    // the slice or chunk size
  double seconds = 0;  // one channel's time for it (fixed costs included)
};

class SizeTimes {
 public:
  SizeTimes() = default;
  // Points with strictly increasing sizes (at least 1 B) and positive times; throws std::invalid_argument
  // saying which point is wrong.
  explicit SizeTimes(std::vector<SizeTime> points);

  bool empty() const { return points_.empty(); }
  std::span<const SizeTime> points() const { return points_; }
  // Piecewise linear between the points: t(b) = fixed + b x per_byte of the segment that holds b. Below the
  // smallest point its time, all of it fixed (fixed costs do not shrink with the size; NCCL's ring slices are
  // at least 32 KiB unless the chunk itself is smaller, its NVLS chunks at least 16 KiB); a segment that does
  // not rise is all fixed; above the largest point, the last segment extended where it rises, else (and for a
  // single point) the last point's time per byte with nothing fixed. Empty table: 0.
  struct Linear {
    double fixed = 0;     // seconds
    double per_byte = 0;  // seconds per byte
  };
  Linear linear_at(double bytes) const;
  double seconds(double bytes) const {
    const Linear l = linear_at(bytes);
    return l.fixed + l.per_byte * bytes;
  }
  // `count` units of `bytes` on one channel: the fixed parts, and the per-byte parts (the time one channel
  // alone needs to move the bytes), each summed; how the simulator charges a table (docs/fidelity.md §6.3).
  struct Split {
    double fixed_seconds = 0;
    double copy_seconds = 0;
  };
  Split split(double bytes, double count) const;

 private:
  std::vector<SizeTime> points_;
};

// One measured table as a system file gives it: one channel's time per unit (slice handoff, step or chunk)
// by the unit's size (LL128 sizes are payload bytes), and, for the ring and tree tables, NCCL's collective
// channels (NCCL_DEBUG=INFO's "24 coll channels"; 0 for NVLS, whose channel count is NCCL's fixed 16).
struct NcclMeasured {
  int channels = 0;
  SizeTimes times;
  bool empty() const { return times.empty(); }
};

// The tables a system file can hold, each declared once in nccl_measured.cc (nccl_tables()): the system
// loader reads them, `strata hw show` prints them, `strata validate <command>` measures and writes them,
// and sim/algorithms charges them.
enum class NcclTableId : std::uint8_t {
  kRing,          // node.fabric.nccl_ring
  kRingLl128,     // node.fabric.nccl_ring_ll128
  kNetRing,       // node.nics.nccl_ring
  kNetRingLl128,  // node.nics.nccl_ring_ll128
  kNetTree,       // node.nics.nccl_tree
  kNetTreeLl128,  // node.nics.nccl_tree_ll128
  kNvls,          // node.fabric.nccl_nvls
  kTree,          // node.fabric.nccl_tree
};
inline constexpr std::size_t kNcclTableCount = 8;

struct NcclTableInfo {
  NcclTableId id;
  std::string_view section, key;  // where it sits: node.<section>.<key> ("fabric" or "nics")
  std::string_view path;          // "node.fabric.nccl_ring"
  std::string_view list_key;      // the list of points: "handoffs", or "steps" for NVLS
  std::string_view size_key;      // a point's size: "slice", "step" (LL128 payload) or "chunk"
  std::string_view unit;          // what one point's time is for: "handoff", "step" or "chunk"
  std::string_view command;       // strata validate <command> measures it
  std::string_view label, what;   // strata hw show: its line's label, and what the line lists
  bool channels = true;           // holds NCCL's channel count
  bool across_nodes = false;      // measured between two nodes: applies to nodes with NICs
  bool ll128 = false;             // NCCL's LL128 protocol: applies where the GPUs have NVLink
  bool nvls = false;              // NVLS: applies where the node's switch reduces
};
std::span<const NcclTableInfo> nccl_tables();
const NcclTableInfo& nccl_table_info(NcclTableId id);

// Every table of a system, indexed by NcclTableId; empty tables where the file gives none.
class NcclMeasuredTables {
 public:
  const NcclMeasured& operator[](NcclTableId id) const { return tables_[static_cast<std::size_t>(id)]; }
  void set(NcclTableId id, NcclMeasured m) { tables_[static_cast<std::size_t>(id)] = std::move(m); }
  // The places in the system file of the tables given ("node.fabric.nccl_ring", ...), in nccl_tables()'s
  // order; empty for every preset.
  std::vector<std::string_view> given() const;

 private:
  std::array<NcclMeasured, kNcclTableCount> tables_;
};

}  // namespace strata::hw
