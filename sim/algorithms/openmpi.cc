// Open MPI's collective schedules, as `strata validate` makes Open MPI run them (coll/tuned with forced
// algorithms, Open MPI 4.1, https://github.com/open-mpi/ompi/tree/v4.1.x/ompi/mca/coll/base): the
// simulator's model of the host-MPI ground truth on an emulated cluster. Every schedule follows the
// communicator's rank order, which is the group order (not strata's node-sorted rings), and every step
// costs the route's physical latency (Family::kHostMpi has no library latency table; `validate calibrate`
// measures the links).
//   allreduce      tuned algorithm 4, ring (ompi_coll_base_allreduce_intra_ring): n-1 reduce-scatter steps
//                  then n-1 all-gather steps; rank r sends block S/n to r+1 and receives from r-1, one whole
//                  block per step (not segmented).
//   reducescatter  tuned algorithm 3, ring (ompi_coll_base_reduce_scatter_intra_ring): n-1 such steps.
//   allgather      tuned algorithm 4, ring (ompi_coll_base_allgather_intra_ring): n-1 such steps.
//   broadcast      tuned algorithm 3, pipeline (ompi_coll_base_bcast_intra_pipeline): a chain root, root+1,
//   reduce         ... in rank order, segments of kOpenMpiSegmentBytes forwarded as they arrive (reduce:
//                  the same chain towards the root, tuned reduce algorithm 3).
//   alltoall       tuned algorithm 1, linear (ompi_coll_base_alltoall_intra_basic_linear): every pair's
//                  block posted at once.
//   sendrecv       MPI_Sendrecv to the next member and from the previous one, all at once.
// Not modelled: the CPU time of the reductions (a few GB/s per core, against the tens to hundreds of MB/s of
// the shaped links validate uses) and the block-size rounding for counts not divisible by n.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "sim/algorithms/algorithms.h"
#include "sim/algorithms/openmpi.h"

namespace strata::sim::algorithms {
namespace {

class OpenMpi final : public CollectiveAlgorithm {
 public:
  std::string_view name() const override { return "openmpi"; }
  std::string_view description() const override {
    return "Open MPI coll/tuned as validate runs it: rank-order rings, pipelined chains, linear all-to-all";
  }
  nccl::Family family() const override { return nccl::Family::kHostMpi; }
  std::string unsupported_reason(const CollectiveSpec& spec, const hw::Topology&) const override {
    if (spec.protocol != Protocol::kSimple) return "Open MPI moves plain data: protocol simple only";
    return {};
  }
  std::string nccl_unsupported_reason(const CollectiveSpec&, const hw::Topology&) const override {
    return "Open MPI's schedules, not NCCL's";
  }

  TaskId build(BuildContext& ctx) const override {
    const int n = ctx.group_size();
    const TaskId start = begin_collective(ctx);
    const auto& group = ctx.spec.group;
    const double S = ctx.spec.bytes;
    switch (ctx.spec.op) {
      case CollectiveOp::kAllReduce:
      case CollectiveOp::kReduceScatter:
      case CollectiveOp::kAllGather: {
        const int steps = ctx.spec.op == CollectiveOp::kAllReduce ? 2 * (n - 1) : n - 1;
        std::vector<Dep> finals;
        for (TaskId t : ring_phase(ctx, group, steps, S / n, start, ctx.label("ring"), 0))
          finals.push_back({t});
        return join(ctx, finals);
      }
      case CollectiveOp::kBroadcast:
      case CollectiveOp::kReduce: {
        const int segments = std::max(1, static_cast<int>(std::ceil(S / kOpenMpiSegmentBytes)));
        const auto label =
            ctx.label(ctx.spec.op == CollectiveOp::kBroadcast ? "pipeline" : "pipeline-reduce");
        // Per segment (step granularity) whatever the spec asks: validate's groups are small, and a chain
        // through fast shared-memory hops and one slow network hop fills in one network segment time, each
        // segment a transfer of its own (the flow form gives the same only with the collective's LinkShares,
        // which this one-chain schedule does not build).
        const TaskId done = chain_pipeline(ctx, chain_hops(group, ctx.spec.op), S / segments, segments,
                                           S / segments, start, label, 0, Granularity::kStep);
        return join(ctx, std::array<Dep, 1>{Dep{done}});
      }
      case CollectiveOp::kAllToAll:
      case CollectiveOp::kSendRecv: {
        const bool all_pairs = ctx.spec.op == CollectiveOp::kAllToAll;
        const double payload = all_pairs ? S / n : S;
        const auto label = ctx.label(all_pairs ? "linear" : "sendrecv");
        std::vector<Dep> finals;
        for (int i = 0; i < n; ++i)
          for (int j = 0; j < n; ++j) {
            if (i == j || (!all_pairs && j != (i + 1) % n)) continue;
            const hw::Rank a = ctx.member(i), b = ctx.member(j);
            finals.push_back({ctx.graph.add_transfer(a, b, ctx.wire(payload), ctx.step_latency(a, b), label,
                                                     std::array<Dep, 1>{Dep{start}}, j % 16)});
          }
        return join(ctx, finals);
      }
    }
    throw std::logic_error("openmpi: unknown collective");
  }
};

}  // namespace

std::vector<std::pair<std::string, std::string>> openmpi_forced_algorithms() {
  const std::string seg = fmt::format("{}", static_cast<long long>(kOpenMpiSegmentBytes));
  return {{"coll_tuned_use_dynamic_rules", "1"},        {"coll_tuned_allreduce_algorithm", "4"},
          {"coll_tuned_reduce_scatter_algorithm", "3"}, {"coll_tuned_allgather_algorithm", "4"},
          {"coll_tuned_bcast_algorithm", "3"},          {"coll_tuned_bcast_algorithm_segmentsize", seg},
          {"coll_tuned_reduce_algorithm", "3"},         {"coll_tuned_reduce_algorithm_segmentsize", seg},
          {"coll_tuned_alltoall_algorithm", "1"}};
}

std::unique_ptr<CollectiveAlgorithm> make_openmpi() {
  return std::make_unique<OpenMpi>();
}

}  // namespace strata::sim::algorithms
