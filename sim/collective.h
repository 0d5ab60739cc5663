// Collective operations over any device group, expanded by a named algorithm into transfers on the task
// graph. Each algorithm lives in one file under sim/algorithms/ and registers itself in
// sim/algorithms/builtin.cc; the rest of strata reaches algorithms only by name through the registry.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hw/topology.h"
#include "sim/task_graph.h"

namespace strata::sim {

namespace nccl {
// NCCL's algorithm families, which index its latency tables (src/graph/tuning.cc). kHostMpi is not NCCL's: a
// host MPI library's schedules (sim/algorithms/openmpi.cc), whose steps have no library latency table and
// cost the route's physical latency, which `strata validate calibrate` measures per link class.
enum class Family { kTree, kRing, kNvls, kNvlsTree, kHostMpi };
struct EstimateInputs;
}  // namespace nccl

enum class CollectiveOp { kAllReduce, kReduceScatter, kAllGather, kReduce, kBroadcast, kAllToAll, kSendRecv };
std::string_view op_name(CollectiveOp op);
std::optional<CollectiveOp> parse_op(std::string_view name);
inline constexpr std::string_view kOpNames =
    "allreduce, reducescatter, allgather, reduce, broadcast, alltoall, sendrecv";

// NCCL's wire protocols. Simple moves plain data; LL packs 4 B of data with a 4 B flag (50% payload);
// LL128 carries 120 B of data per 128 B line (93.75%).
enum class Protocol { kSimple, kLL, kLL128 };
std::string_view protocol_name(Protocol p);
std::optional<Protocol> parse_protocol(std::string_view name);
// Wire bytes per payload byte.
double protocol_wire_factor(Protocol p);

// How finely an algorithm expands into transfers. kFlow: each pipelined ring, tree or chain of a channel is
// one flow bundle whose hops advance at a common rate (the pipeline's pace), with the pipeline's latency and
// fill added; cost is independent of group size, so 1024-GPU collectives simulate in milliseconds. kStep:
// every per-rank step and chunk is its own transfer with its dependencies (detailed traces; the reference
// the flow form is tested against).
enum class Granularity { kFlow, kStep };
std::string_view granularity_name(Granularity g);
std::optional<Granularity> parse_granularity(std::string_view name);

// nccl-tests' bus-bandwidth factor: busbw = algbw x factor(op, n).
double busbw_factor(CollectiveOp op, int n);

// Most channels (parallel rings/trees) a collective may use: NCCL 2.x's MAXCHANNELS (src/include/devcomm.h,
// https://github.com/NVIDIA/nccl), the size of its per-communicator channel arrays. Each channel is simulated
// as its own flows, so an unbounded count would also grow the task graph without limit.
inline constexpr int kMaxChannels = 32;

struct CollectiveSpec {
  CollectiveOp op = CollectiveOp::kAllReduce;
  // Participating GPUs; group[0] is the root of Reduce/Broadcast. SendRecv (as nccl-tests' sendrecv_perf):
  // every member sends the message to the next member and receives from the previous one.
  std::vector<hw::Rank> group;
  // nccl-tests convention: the size of the operation's buffer. AllReduce/Reduce/Broadcast: the whole vector;
  // AllGather/ReduceScatter: the whole gathered array (each rank owns bytes/n); AllToAll: each rank's send
  // buffer (bytes/n to each peer); SendRecv: the message.
  double bytes = 0;
  Protocol protocol = Protocol::kSimple;
  int channels = 0;  // parallel rings/trees, 0..kMaxChannels; 0 = choose from the topology (one per NIC)
  int pipeline_chunks = 0;  // chunks per tree/chain pipeline; 0 = default
  Granularity granularity = Granularity::kFlow;
  std::string label;  // trace name prefix; default: op name
};

// What an algorithm needs to expand a collective.
class BuildContext {
 public:
  BuildContext(const hw::Topology& topo, TaskGraph& graph, const CollectiveSpec& spec, std::string algorithm,
               nccl::Family family, std::vector<Dep> after);
  const hw::Topology& topo;
  TaskGraph& graph;
  const CollectiveSpec& spec;
  const std::string algorithm;   // for trace labels
  const nccl::Family family;     // NCCL latency tables are indexed by the algorithm family
  const std::vector<Dep> after;  // the collective starts once these are done

  int group_size() const { return static_cast<int>(spec.group.size()); }
  hw::Rank member(int i) const { return spec.group[static_cast<std::size_t>(i)]; }
  // Link bytes charged for a payload under the spec's protocol: its wire factor, or NCCL's slower rating of
  // the algorithm family's protocol (nccl::payload_cost).
  double wire(double payload) const { return payload * payload_cost_; }
  // NCCL's ceiling on the bus bandwidth of the spec's protocol for this family and group (bytes/s, +inf when
  // none; nccl::protocol_busbw_ceiling).
  double protocol_busbw_ceiling() const { return busbw_ceiling_; }
  // Per-step latency of one hop a -> b: NCCL's per-hop latency for (transport, algorithm, protocol), but
  // never less than the route's physical latency.
  double step_latency(hw::Rank a, hw::Rank b) const;
  // The same for a hop whose route (topo.route(a, b)) is already at hand.
  double step_latency(std::span<const hw::LinkId> route) const;
  std::int32_t label(std::string_view phase);
  // The route of a flow bundle: the topology routes of all `hops` merged, each link weighted by how many
  // hops cross it (links in ascending id order, so the bundle is deterministic).
  CustomRoute bundle_route(std::span<const std::pair<hw::Rank, hw::Rank>> hops) const;
  // The same from the hops' routes already looked up.
  static CustomRoute merge_routes(std::span<const std::span<const hw::LinkId>> routes);
  // Channels to use: spec.channels, or one per NIC when the group spans nodes (at least 1).
  int channels() const;
  // Group members per node, in group order; nodes in ascending order.
  std::vector<std::vector<hw::Rank>> members_by_node() const;
  // True when every node in `by_node` (members_by_node()) takes part with all of its GPUs: the groups NCCL's
  // measured tables describe (hw/nccl_measured.h).
  bool whole_nodes(const std::vector<std::vector<hw::Rank>>& by_node) const;

 private:
  double payload_cost_ = 1;
  double busbw_ceiling_ = 0;
};

// A collective algorithm describes itself completely; nothing outside its file switches over its name.
class CollectiveAlgorithm {
 public:
  virtual ~CollectiveAlgorithm() = default;
  virtual std::string_view name() const = 0;
  virtual std::string_view description() const = 0;
  // Which of NCCL's latency tables (base and per-hop latencies) the algorithm's steps use.
  virtual nccl::Family family() const = 0;
  // Empty when the algorithm can run `spec` (op, group, protocol) on `topo`; otherwise why not. The tuner,
  // the CLI and search/reduce ask only this.
  virtual std::string unsupported_reason(const CollectiveSpec& spec, const hw::Topology& topo) const = 0;
  // Empty when NCCL itself would run this algorithm for `spec`; otherwise why not. The tuner's "auto" choice
  // (NCCL's) considers only these; search/reduce, which reproduces programs of NCCL calls (P²), forces an
  // algorithm only where this is empty. Default: the same as unsupported_reason (an algorithm models one of
  // NCCL's unless it says otherwise, as strata's own schedules direct and hierarchical do).
  virtual std::string nccl_unsupported_reason(const CollectiveSpec& spec, const hw::Topology& topo) const {
    return unsupported_reason(spec, topo);
  }
  // NCCL-style analytic time (seconds) of `in.spec` at `in.spec.protocol`, which `--algo best` ranks by (and
  // `auto` where NCCL's own tuner, sim/nccl_tuner.h, does not apply); called only when eligible and for
  // groups of two or more. The default reads the algorithm's own flow-form expansion without simulating it
  // (nccl::expansion_estimate); an algorithm whose expansion is too large to build per estimate (direct: n^2
  // transfers) overrides it.
  virtual double estimate(const nccl::EstimateInputs& in) const;
  // Adds the collective's tasks; returns a task that is done when the whole collective is.
  virtual TaskId build(BuildContext& ctx) const = 0;
};

class AlgorithmRegistry {
 public:
  static AlgorithmRegistry& instance();
  void add(std::unique_ptr<CollectiveAlgorithm> algorithm);
  const CollectiveAlgorithm* find(std::string_view name) const;
  std::vector<const CollectiveAlgorithm*> all() const;  // in registration order
  std::string names() const;                            // "ring, tree, ..."
  // The first registered algorithm that can run `spec` (registration order: ring first), or nullptr.
  const CollectiveAlgorithm* first_eligible(const CollectiveSpec& spec, const hw::Topology& topo) const;

 private:
  AlgorithmRegistry();
  std::vector<std::unique_ptr<CollectiveAlgorithm>> algorithms_;
};

// Adds the collective `spec` to `graph` with the named algorithm (not "auto"); throws std::invalid_argument
// naming the reason when the algorithm cannot run it. Returns the collective's completion task.
TaskId add_collective(const hw::Topology& topo, TaskGraph& graph, const CollectiveSpec& spec,
                      std::string_view algorithm, std::span<const Dep> after = {});

}  // namespace strata::sim
