// The built-in collective algorithms. Each is one file in this folder; adding one means writing that file
// and one line in builtin.cc.
#pragma once

#include <memory>

#include "sim/collective.h"

namespace strata::sim::algorithms {

std::unique_ptr<CollectiveAlgorithm> make_ring();
std::unique_ptr<CollectiveAlgorithm> make_tree();
std::unique_ptr<CollectiveAlgorithm> make_direct();
std::unique_ptr<CollectiveAlgorithm> make_hierarchical();
std::unique_ptr<CollectiveAlgorithm> make_nvls();

void register_builtin(AlgorithmRegistry& registry);

// Shared by several algorithms: a start task (NCCL's base launch latency after ctx.after) and a join.
TaskId begin_collective(BuildContext& ctx);
TaskId join(BuildContext& ctx, std::span<const Dep> deps);

// Ring orders for `channels` parallel rings over the group (ring.cc). Rings visit nodes in ascending order;
// on switched nodes each channel starts the node at a different GPU so channels enter and leave nodes
// through different NICs; on directly wired nodes (ring, cube-mesh) rings follow direct links, balanced
// over the links' multiplicities.
std::vector<std::vector<hw::Rank>> ring_orders(const BuildContext& ctx, int channels);

// Adds `steps` consecutive ring steps around `ring` for one channel, each moving `slice` payload bytes per
// rank, starting after `start`. Returns tasks whose completion means every rank is done: at step
// granularity the last transfer of every position, at flow granularity the single bundle.
std::vector<TaskId> ring_phase(BuildContext& ctx, std::span<const hw::Rank> ring, int steps, double slice,
                               TaskId start, std::int32_t label, int lane);

// A pipelined flow bundle: every hop carries `payload_per_hop` bytes (before protocol overhead) at one common
// rate, then the whole bundle is done after `latency` seconds.
TaskId add_bundle(BuildContext& ctx, std::span<const std::pair<hw::Rank, hw::Rank>> hops,
                  double payload_per_hop, double latency, std::int32_t label, std::span<const Dep> deps,
                  int lane);

// Latency of the slowest chain of `steps` consecutive hops around a ring whose hop latencies are `lat`
// (step s of rank i waits for step s-1 of rank i-1, so latencies add along windows of the ring).
double ring_window_latency(std::span<const double> lat, int steps);

}  // namespace strata::sim::algorithms
