#include "sim/collective.h"

#include <algorithm>
#include <map>
#include <stdexcept>

#include <fmt/format.h>

#include "sim/algorithms/algorithms.h"
#include "sim/nccl_model.h"

namespace strata::sim {

std::string_view op_name(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::kAllReduce:
      return "allreduce";
    case CollectiveOp::kReduceScatter:
      return "reducescatter";
    case CollectiveOp::kAllGather:
      return "allgather";
    case CollectiveOp::kReduce:
      return "reduce";
    case CollectiveOp::kBroadcast:
      return "broadcast";
    case CollectiveOp::kAllToAll:
      return "alltoall";
    case CollectiveOp::kSendRecv:
      return "sendrecv";
  }
  return "?";
}

std::optional<CollectiveOp> parse_op(std::string_view name) {
  for (auto op :
       {CollectiveOp::kAllReduce, CollectiveOp::kReduceScatter, CollectiveOp::kAllGather,
        CollectiveOp::kReduce, CollectiveOp::kBroadcast, CollectiveOp::kAllToAll, CollectiveOp::kSendRecv})
    if (op_name(op) == name) return op;
  return std::nullopt;
}

std::string_view protocol_name(Protocol p) {
  switch (p) {
    case Protocol::kSimple:
      return "simple";
    case Protocol::kLL:
      return "ll";
    case Protocol::kLL128:
      return "ll128";
  }
  return "?";
}

std::optional<Protocol> parse_protocol(std::string_view name) {
  for (auto p : {Protocol::kSimple, Protocol::kLL, Protocol::kLL128})
    if (protocol_name(p) == name) return p;
  return std::nullopt;
}

std::string_view granularity_name(Granularity g) {
  return g == Granularity::kFlow ? "flow" : "step";
}

std::optional<Granularity> parse_granularity(std::string_view name) {
  for (auto g : {Granularity::kFlow, Granularity::kStep})
    if (granularity_name(g) == name) return g;
  return std::nullopt;
}

double protocol_wire_factor(Protocol p) {
  switch (p) {
    case Protocol::kSimple:
      return 1.0;
    case Protocol::kLL:
      return 2.0;
    case Protocol::kLL128:
      return 128.0 / 120.0;
  }
  return 1.0;
}

double busbw_factor(CollectiveOp op, int n) {
  if (n <= 1) return 0.0;
  switch (op) {
    case CollectiveOp::kAllReduce:
      return 2.0 * (n - 1) / n;
    case CollectiveOp::kReduceScatter:
    case CollectiveOp::kAllGather:
    case CollectiveOp::kAllToAll:
      return static_cast<double>(n - 1) / n;
    case CollectiveOp::kReduce:
    case CollectiveOp::kBroadcast:
    case CollectiveOp::kSendRecv:
      return 1.0;
  }
  return 1.0;
}

BuildContext::BuildContext(const hw::Topology& topo_in, TaskGraph& graph_in, const CollectiveSpec& spec_in,
                           std::string algorithm_in, nccl::Family family_in, std::vector<Dep> after_in)
    : topo(topo_in),
      graph(graph_in),
      spec(spec_in),
      algorithm(std::move(algorithm_in)),
      family(family_in),
      after(std::move(after_in)) {
  // Only LL and LL128 depend on the group's spread over nodes (counting them costs a pass over the group).
  const int nodes = spec.protocol == Protocol::kSimple ? 1 : static_cast<int>(members_by_node().size());
  payload_cost_ = nccl::payload_cost(family, spec.protocol, nodes);
  busbw_ceiling_ =
      nccl::protocol_busbw_ceiling(family, spec.protocol, topo.gpu().arch, nodes, topo.cpu_vendor());
}

double BuildContext::step_latency(hw::Rank a, hw::Rank b) const {
  return step_latency(topo.route(a, b));
}

double BuildContext::step_latency(std::span<const hw::LinkId> route) const {
  const double hop = nccl::hop_latency(topo.route_transport(route), family, spec.protocol);
  return std::max(hop, topo.route_latency(route));
}

CustomRoute BuildContext::bundle_route(std::span<const std::pair<hw::Rank, hw::Rank>> hops) const {
  std::vector<std::span<const hw::LinkId>> routes;
  routes.reserve(hops.size());
  for (const auto& [a, b] : hops) routes.push_back(topo.route(a, b));
  return merge_routes(routes);
}

CustomRoute BuildContext::merge_routes(std::span<const std::span<const hw::LinkId>> routes) {
  std::vector<hw::LinkId> all;
  for (const auto r : routes) all.insert(all.end(), r.begin(), r.end());
  std::sort(all.begin(), all.end());
  CustomRoute out;
  for (std::size_t i = 0; i < all.size();) {
    std::size_t j = i;
    while (j < all.size() && all[j] == all[i]) ++j;
    out.links.push_back(all[i]);
    out.weights.push_back(static_cast<double>(j - i));
    i = j;
  }
  return out;
}

std::int32_t BuildContext::label(std::string_view phase) {
  const std::string prefix = spec.label.empty() ? std::string(op_name(spec.op)) : spec.label;
  return graph.intern(fmt::format("{}/{} {}", prefix, algorithm, phase));
}

std::vector<std::vector<hw::Rank>> BuildContext::members_by_node() const {
  std::map<int, std::vector<hw::Rank>> by_node;
  for (hw::Rank r : spec.group) by_node[topo.node_of(r)].push_back(r);
  std::vector<std::vector<hw::Rank>> out;
  for (auto& [node, members] : by_node) out.push_back(std::move(members));
  return out;
}

bool BuildContext::whole_nodes(const std::vector<std::vector<hw::Rank>>& by_node) const {
  return std::all_of(by_node.begin(), by_node.end(), [&](const auto& members) {
    return static_cast<int>(members.size()) == topo.gpus_per_node();
  });
}

int BuildContext::channels() const {
  if (spec.channels > 0) return spec.channels;
  const auto nodes = members_by_node();
  if (nodes.size() > 1)
    return std::max(1, std::min(topo.nics_per_node(), static_cast<int>(nodes.front().size())));
  if (!topo.node_is_switched() && spec.group.size() > 2) {
    // Directly wired node: one ring per outgoing NVLink of a GPU, so rings can use every link.
    int links = 0;
    for (hw::Rank peer : spec.group)
      if (auto l = topo.direct_link(spec.group[0], peer)) links += topo.link(*l).multiplicity;
    return std::max(1, links);
  }
  return 1;
}

AlgorithmRegistry::AlgorithmRegistry() {
  algorithms::register_builtin(*this);
}

AlgorithmRegistry& AlgorithmRegistry::instance() {
  static AlgorithmRegistry registry;
  return registry;
}

void AlgorithmRegistry::add(std::unique_ptr<CollectiveAlgorithm> algorithm) {
  if (find(algorithm->name()))
    throw std::logic_error(fmt::format("algorithm '{}' registered twice", algorithm->name()));
  algorithms_.push_back(std::move(algorithm));
}

const CollectiveAlgorithm* AlgorithmRegistry::find(std::string_view name) const {
  for (const auto& a : algorithms_)
    if (a->name() == name) return a.get();
  return nullptr;
}

std::vector<const CollectiveAlgorithm*> AlgorithmRegistry::all() const {
  std::vector<const CollectiveAlgorithm*> out;
  for (const auto& a : algorithms_) out.push_back(a.get());
  return out;
}

std::string AlgorithmRegistry::names() const {
  std::string s;
  for (const auto& a : algorithms_) s += fmt::format("{}{}", s.empty() ? "" : ", ", a->name());
  return s;
}

const CollectiveAlgorithm* AlgorithmRegistry::first_eligible(const CollectiveSpec& spec,
                                                             const hw::Topology& topo) const {
  for (const auto& a : algorithms_)
    if (a->unsupported_reason(spec, topo).empty()) return a.get();
  return nullptr;
}

TaskId add_collective(const hw::Topology& topo, TaskGraph& graph, const CollectiveSpec& spec,
                      std::string_view algorithm, std::span<const Dep> after) {
  const CollectiveAlgorithm* algo = AlgorithmRegistry::instance().find(algorithm);
  if (!algo)
    throw std::invalid_argument(fmt::format("unknown algorithm '{}' (expected one of: {})", algorithm,
                                            AlgorithmRegistry::instance().names()));
  if (spec.group.empty()) throw std::invalid_argument("collective group is empty");
  for (hw::Rank r : spec.group)
    if (r < 0 || r >= topo.num_gpus())
      throw std::invalid_argument(fmt::format("rank {} is outside the system's {} GPUs", r, topo.num_gpus()));
  {
    std::vector<hw::Rank> sorted = spec.group;
    std::sort(sorted.begin(), sorted.end());
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
      throw std::invalid_argument("collective group lists a rank twice");
  }
  if (!(spec.bytes >= 0)) throw std::invalid_argument("collective size must be non-negative");
  if (spec.channels < 0 || spec.channels > kMaxChannels)
    throw std::invalid_argument(
        fmt::format("{} channels: expected 0 (choose from the topology) to {} (NCCL's "
                    "MAXCHANNELS)",
                    spec.channels, kMaxChannels));
  if (std::string reason = algo->unsupported_reason(spec, topo); !reason.empty())
    throw std::invalid_argument(
        fmt::format("algorithm '{}' cannot run {}: {}", algorithm, op_name(spec.op), reason));
  BuildContext ctx(topo, graph, spec, std::string(algorithm), algo->family(),
                   std::vector<Dep>(after.begin(), after.end()));
  if (spec.group.size() == 1) {
    // NCCL runs a one-rank collective as a local device copy (ncclLaunchOneRank: the out-of-place buffer is
    // copied, S read and S written in HBM); nothing crosses a link, and nccl-tests' busbw factor is 0.
    const TaskId start = algorithms::begin_collective(ctx);
    const double hbm = topo.gpu().hbm_bandwidth;
    return graph.add_delay(hbm > 0 ? 2 * spec.bytes / hbm : 0.0, ctx.label("local copy"),
                           std::array{Dep{start}});
  }
  return algo->build(ctx);
}

}  // namespace strata::sim
