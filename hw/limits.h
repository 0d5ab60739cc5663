// The ranges strata accepts for hardware quantities. They bound every value a YAML file or a command-line
// option can feed the simulator, so that times stay representable in integer picoseconds (sim/time.h holds
// about 106 days) and sizes stay representable in int64 and in the int32 rank space, with wide margins for
// any real or planned system. docs/hardware.md lists them.
#pragma once

#include "util/parse.h"

namespace strata::hw::limits {

// Bandwidth of one link or memory: 1 KB/s .. 1 PB/s (NVLink 5 is 1.8 TB/s per GPU, HBM3e ~8 TB/s).
inline constexpr double kMinBandwidth = 1e3, kMaxBandwidth = 1e15;
// Any duration read from a file: 0 .. 10^6 s (11.6 days; simulated time holds about 106 days).
inline constexpr double kMaxDuration = 1e6;
// Latency of one hop or kernel launch: 0 .. 1 s (real hops are 0.1-10 us; a second is already a broken link).
inline constexpr double kMaxLatency = 1.0;
// Memory capacity of one GPU: 1 B .. 1 PiB, the largest size any size field accepts (util/parse.h).
inline constexpr double kMaxCapacity = static_cast<double>(util::kMaxBytes);
// Peak arithmetic throughput: 1 MFLOP/s .. 1 ZFLOP/s.
inline constexpr double kMinFlops = 1e6, kMaxFlops = 1e21;
// GPUs per node (scale-up domain, e.g. GB200 NVL72 has 72) and nodes per system. The product is capped too:
// 1,048,576 GPUs is beyond any announced cluster, and keeps ranks and link ids well inside int32.
inline constexpr int kMaxGpusPerNode = 1024;
inline constexpr int kMaxNodes = 1 << 20;
inline constexpr long long kMaxGpus = 1 << 20;
// Structural counts inside a node (CPUs, PCIe switches, NICs, NVLink links per GPU or pair).
inline constexpr int kMaxPartsPerNode = 1024;

}  // namespace strata::hw::limits
