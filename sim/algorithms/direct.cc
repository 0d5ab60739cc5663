// Direct: every pair exchanges its share at once (NCCL's all-to-all and send/recv; ASTRA-sim's "direct").
// Latency is a single step; bandwidth depends on every GPU's links carrying all of its traffic at once,
// which makes it the natural schedule on switched fabrics and for all-to-all.
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "sim/algorithms/algorithms.h"
#include "sim/nccl_model.h"

namespace strata::sim::algorithms {
namespace {

class Direct final : public CollectiveAlgorithm {
 public:
  std::string_view name() const override { return "direct"; }
  std::string_view description() const override {
    return "all pairs at once: alltoall, sendrecv, and one-step versions of every other collective";
  }
  nccl::Family family() const override { return nccl::Family::kRing; }
  // Every pair at once, so no NCCL bus-bandwidth formula fits: the estimate is one step's latency plus the
  // busiest link's load, adding every pair's bytes along its topology route (sources: every member, or the
  // members on the first node for groups over 64, whose links are loaded like every other node's).
  double estimate(const nccl::EstimateInputs& in) const override {
    const auto& group = in.spec.group;
    const auto n = group.size();
    const double S = in.spec.bytes;
    const auto op = in.spec.op;
    const int phases = op == CollectiveOp::kAllReduce ? 2 : 1;
    std::map<hw::LinkId, double> load;
    const auto add = [&](std::size_t i, std::size_t j, double bytes) {
      for (hw::LinkId l : in.topo.route(group[i], group[j])) load[l] += bytes;
    };
    const int first_node = in.topo.node_of(group[0]);
    for (std::size_t i = 0; i < n; ++i) {
      if (n > 64 && in.topo.node_of(group[i]) != first_node) continue;
      if (op == CollectiveOp::kSendRecv) {
        add(i, (i + 1) % n, S);
        continue;
      }
      for (std::size_t j = 0; j < n; ++j) {
        if (i == j) continue;
        if (op == CollectiveOp::kBroadcast) {
          if (i == 0) add(i, j, S);
        } else if (op == CollectiveOp::kReduce) {
          if (j == 0) add(i, j, S);
        } else {
          add(i, j, S / static_cast<double>(n));
        }
      }
    }
    double busiest = 0;
    for (const auto& [l, bytes] : load) busiest = std::max(busiest, bytes / in.topo.link(l).bandwidth);
    const double lat = in.base_latency + phases * (in.group.nodes > 1 ? in.inter_latency : in.intra_latency);
    return lat + phases * busiest * in.wire_factor;
  }
  // NCCL runs all-to-all and send/recv as grouped point-to-point sends, which is this schedule; it has no
  // direct schedule for the other collectives (it runs rings, trees or NVLS for them).
  std::string nccl_unsupported_reason(const CollectiveSpec& spec, const hw::Topology& topo) const override {
    if (spec.op != CollectiveOp::kAllToAll && spec.op != CollectiveOp::kSendRecv)
      return "NCCL has no direct schedule for this collective (strata's own)";
    return unsupported_reason(spec, topo);
  }
  std::string unsupported_reason(const CollectiveSpec& spec, const hw::Topology& topo) const override {
    if (spec.op == CollectiveOp::kAllToAll || spec.op == CollectiveOp::kSendRecv) return {};
    // The one-shot forms of the other collectives are intra-node schedules (like the one-shot all-reduce
    // kernels of TensorRT-LLM and vLLM over NVLink); across nodes their n(n-1) messages per step are not a
    // schedule anyone runs, and strata models no per-message cost that would say so.
    const int node = topo.node_of(spec.group[0]);
    for (hw::Rank r : spec.group)
      if (topo.node_of(r) != node)
        return fmt::format("direct runs {} within one node only (across nodes: alltoall and sendrecv)",
                           op_name(spec.op));
    return {};
  }

  TaskId build(BuildContext& ctx) const override {
    const TaskId start = begin_collective(ctx);
    const int n = ctx.group_size();
    const double S = ctx.spec.bytes;
    std::vector<Dep> finals{{start}};
    const auto send = [&](int a, int b, double payload, std::int32_t label, std::span<const Dep> deps) {
      const hw::Rank ra = ctx.member(a), rb = ctx.member(b);
      return ctx.graph.add_transfer(ra, rb, ctx.wire(payload), ctx.step_latency(ra, rb), label, deps, b % 16);
    };
    const std::array<Dep, 1> from_start{Dep{start}};
    switch (ctx.spec.op) {
      case CollectiveOp::kSendRecv:
        // nccl-tests' sendrecv_perf: every rank sends to the next and receives from the previous, at once.
        for (int i = 0; i < n; ++i)
          finals.push_back({send(i, (i + 1) % n, S, ctx.label("send"), from_start)});
        break;
      case CollectiveOp::kBroadcast:
      case CollectiveOp::kReduce: {
        const auto label = ctx.label(ctx.spec.op == CollectiveOp::kBroadcast ? "scatter" : "gather");
        for (int i = 1; i < n; ++i)
          finals.push_back({ctx.spec.op == CollectiveOp::kBroadcast ? send(0, i, S, label, from_start)
                                                                    : send(i, 0, S, label, from_start)});
        break;
      }
      case CollectiveOp::kAllToAll:
      case CollectiveOp::kAllGather:
      case CollectiveOp::kReduceScatter: {
        // Each rank sends S/n to every other rank (its slice, or the peer's slice to reduce).
        const auto label = ctx.label("exchange");
        for (int i = 0; i < n; ++i)
          for (int j = 0; j < n; ++j)
            if (i != j) finals.push_back({send(i, j, S / n, label, from_start)});
        break;
      }
      case CollectiveOp::kAllReduce: {
        // Reduce-scatter directly, then all-gather directly once a rank holds its reduced slice.
        const auto rs = ctx.label("reduce-scatter"), ag = ctx.label("all-gather");
        std::vector<std::vector<Dep>> arrived(static_cast<std::size_t>(n));
        for (int i = 0; i < n; ++i)
          for (int j = 0; j < n; ++j)
            if (i != j) arrived[static_cast<std::size_t>(j)].push_back({send(i, j, S / n, rs, from_start)});
        for (int j = 0; j < n; ++j)
          for (int k = 0; k < n; ++k)
            if (j != k) finals.push_back({send(j, k, S / n, ag, arrived[static_cast<std::size_t>(j)])});
        break;
      }
    }
    return join(ctx, finals);
  }
};

}  // namespace

std::unique_ptr<CollectiveAlgorithm> make_direct() {
  return std::make_unique<Direct>();
}

}  // namespace strata::sim::algorithms
