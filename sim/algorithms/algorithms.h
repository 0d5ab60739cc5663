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

// Adds ring phases for one channel: `steps` consecutive steps around `ring` moving `slice` payload bytes per
// step. Returns the last transfer task of every position (its completion means that rank is done).
std::vector<TaskId> ring_steps(BuildContext& ctx, std::span<const hw::Rank> ring, int steps, double slice,
                               TaskId start, std::int32_t label, int lane);

}  // namespace strata::sim::algorithms
