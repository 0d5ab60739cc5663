// Ring: NCCL's bandwidth-optimal algorithm. All-reduce = 2(n-1) steps (reduce-scatter then all-gather),
// each moving S/(n C) per rank per channel; reduce-scatter and all-gather = n-1 steps; broadcast and reduce
// pipeline chunks along the ring as a chain from/to the root. With n ranks and per-rank bandwidth B the
// all-reduce takes 2(n-1)/n * S/B plus 2(n-1) per-step latencies.
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "sim/algorithms/algorithms.h"
#include "sim/nccl_model.h"

namespace strata::sim::algorithms {

std::vector<std::vector<hw::Rank>> hamiltonian_cycles(const hw::Topology& topo,
                                                      std::span<const hw::Rank> members, std::size_t limit) {
  std::vector<std::vector<hw::Rank>> cycles;
  const std::size_t n = members.size();
  std::vector<hw::Rank> path{members[0]};
  std::vector<char> used(n, 0);
  used[0] = 1;
  std::function<void()> dfs = [&] {
    if (cycles.size() >= limit) return;
    if (path.size() == n) {
      if (topo.direct_link(path.back(), path.front())) cycles.push_back(path);
      return;
    }
    for (std::size_t j = 1; j < n; ++j) {
      if (used[j] || !topo.direct_link(path.back(), members[j])) continue;
      used[j] = 1;
      path.push_back(members[j]);
      dfs();
      path.pop_back();
      used[j] = 0;
    }
  };
  if (n >= 3) dfs();
  return cycles;
}

namespace {

// `channels` rings (channels even) that load every direct link exactly up to `scale` times its multiplicity:
// channels/2 undirected Hamiltonian cycles, each run in both directions, whose edge counts never exceed scale
// x the link multiplicities. Depth-first search over multisets of cycles, at most `budget` partial choices;
// nullopt when none exists (or none was found within the budget).
std::optional<std::vector<std::vector<hw::Rank>>> exact_ring_split(
    const hw::Topology& topo, const std::vector<std::vector<hw::Rank>>& cycles, int channels, int scale = 1,
    long budget = 200000) {
  if (channels < 2 || channels % 2 != 0) return std::nullopt;
  // Undirected cycles: keep one orientation of each (second vertex below the last).
  // Per undirected cycle: its wires, each named by its (lower, higher) rank pair so that a cycle and the
  // reverse of another count against the same wire.
  std::vector<std::vector<std::pair<hw::Rank, hw::Rank>>> edges;
  std::vector<std::size_t> which;
  for (std::size_t i = 0; i < cycles.size(); ++i) {
    const auto& c = cycles[i];
    if (c.size() < 3 || c[1] > c.back()) continue;
    std::vector<std::pair<hw::Rank, hw::Rank>> ws;
    for (std::size_t j = 0; j < c.size(); ++j) ws.push_back(std::minmax(c[j], c[(j + 1) % c.size()]));
    edges.push_back(std::move(ws));
    which.push_back(i);
  }
  std::map<std::pair<hw::Rank, hw::Rank>, int> load;
  std::vector<std::size_t> chosen;
  const auto fits = [&](std::size_t k) {
    for (const auto& w : edges[k])
      if (load[w] + 1 > scale * topo.link(*topo.direct_link(w.first, w.second)).multiplicity) return false;
    return true;
  };
  std::function<bool(std::size_t)> dfs = [&](std::size_t from) {
    if (static_cast<int>(chosen.size()) * 2 == channels) return true;
    for (std::size_t k = from; k < edges.size(); ++k) {
      if (--budget < 0) return false;
      if (!fits(k)) continue;
      for (const auto& w : edges[k]) ++load[w];
      chosen.push_back(k);
      if (dfs(k)) return true;
      chosen.pop_back();
      for (const auto& w : edges[k]) --load[w];
    }
    return false;
  };
  if (!dfs(0)) return std::nullopt;
  std::vector<std::vector<hw::Rank>> out;
  for (std::size_t k : chosen) {
    const auto& c = cycles[which[k]];
    out.push_back(c);
    std::vector<hw::Rank> reversed{c[0]};
    reversed.insert(reversed.end(), c.rbegin(), c.rend() - 1);
    out.push_back(std::move(reversed));
  }
  return out;
}

// Where no split into `channels` rings loads every link fully (e.g. 4 GPUs with one link per pair: each
// undirected Hamiltonian cycle of K4 uses 4 of the 6 links, so 3 channels, one per link of a GPU, cannot
// cover them evenly), more rings at a smaller share each may: all three cycles of K4, each run both ways, put
// two rings on every link direction, and 6 rings at S/6 use all three links of every GPU. This is what NCCL's
// ring search finds when it lowers the per-channel speed until nChannels x speed reaches a GPU's total NVLink
// bandwidth (src/graph/search.cc, ncclTopoCompute). Tries scale k = 2, 3, 4: k x (link multiplicities summed
// over the node's wires) / n undirected cycles, 2 rings each, within kMaxChannels.
std::optional<std::vector<std::vector<hw::Rank>>> scaled_ring_split(
    const hw::Topology& topo, std::span<const hw::Rank> members,
    const std::vector<std::vector<hw::Rank>>& cycles) {
  long wire_units = 0;
  for (std::size_t i = 0; i < members.size(); ++i)
    for (std::size_t j = i + 1; j < members.size(); ++j)
      if (auto l = topo.direct_link(members[i], members[j])) wire_units += topo.link(*l).multiplicity;
  const auto n = static_cast<long>(members.size());
  for (int scale = 2; scale <= 4; ++scale) {
    if (scale * wire_units % n != 0) continue;
    const long channels = 2 * scale * wire_units / n;
    if (channels > kMaxChannels) break;
    if (auto split = exact_ring_split(topo, cycles, static_cast<int>(channels), scale)) return split;
  }
  return std::nullopt;
}

std::vector<hw::Rank> rotate_by(std::vector<hw::Rank> v, std::size_t k) {
  if (!v.empty()) std::rotate(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k % v.size()), v.end());
  return v;
}

// One NCCL channel's handoffs at their measured time per handoff (hw/nccl_measured.h), split as the table's
// segments split it: a fixed time per handoff, and the time to copy the handoffs' bytes at the rate one
// channel moves them when no other channel shares its links. The handoffs are the Simple protocol's slices
// (nccl::ring_simple_slices, tables node.fabric.nccl_ring and node.nics.nccl_ring) or the LL128 protocol's
// steps (nccl::ring_ll128_steps, tables node.fabric.nccl_ring_ll128 and node.nics.nccl_ring_ll128). Applies
// to an all-reduce, reduce-scatter or all-gather over whole nodes (what was measured): on one node the
// node's table; across nodes the network's, each handoff at the slower of its network and (where measured)
// NVLink time, since a ring channel advances one slice or step at a time on every hop alike. Divided over
// NCCL's own ring channels there (those of the call, or --channels); nullopt where no table applies (LL,
// other operations and groups, a protocol without a table).
std::optional<hw::SizeTimes::Split> measured_handoffs(const BuildContext& ctx) {
  const auto op = ctx.spec.op;
  const int n = ctx.group_size();
  const bool ll128 = ctx.spec.protocol == Protocol::kLL128;
  if ((ctx.spec.protocol != Protocol::kSimple && !ll128) || n < 2 ||
      (op != CollectiveOp::kAllReduce && op != CollectiveOp::kReduceScatter &&
       op != CollectiveOp::kAllGather))
    return std::nullopt;
  const auto& node = ctx.topo.nccl_table(ll128 ? hw::NcclTableId::kRingLl128 : hw::NcclTableId::kRing);
  const auto& net = ctx.topo.nccl_table(ll128 ? hw::NcclTableId::kNetRingLl128 : hw::NcclTableId::kNetRing);
  if (node.empty() && net.empty()) return std::nullopt;
  const auto by_node = ctx.members_by_node();
  if (!ctx.whole_nodes(by_node)) return std::nullopt;
  const bool across = by_node.size() > 1;
  const auto& ring_table = across ? net : node;
  if (ring_table.empty()) return std::nullopt;
  const int channels = ctx.spec.channels > 0 ? ctx.spec.channels
                                             : nccl::call_channels(ring_table.channels, ctx.spec.bytes,
                                                                   nccl::Family::kRing, ctx.spec.protocol, n,
                                                                   ctx.topo.has_nvlink(ctx.spec.group[0]));
  const double per_channel = ctx.spec.bytes / channels;
  hw::SizeTimes::Split total;
  for (const auto& s :
       ll128 ? nccl::ring_ll128_steps(op, per_channel, n) : nccl::ring_simple_slices(op, per_channel, n)) {
    auto part = ring_table.times.split(s.bytes, s.handoffs);
    if (across && !node.empty()) {
      const auto inside = node.times.split(s.bytes, s.handoffs);
      if (inside.fixed_seconds + inside.copy_seconds > part.fixed_seconds + part.copy_seconds) part = inside;
    }
    total.fixed_seconds += part.fixed_seconds;
    total.copy_seconds += part.copy_seconds;
  }
  return total;
}

class Ring final : public CollectiveAlgorithm {
 public:
  std::string_view name() const override { return "ring"; }
  std::string_view description() const override {
    return "NCCL-style rings (one per channel), bandwidth-optimal; chain pipeline for broadcast/reduce";
  }
  nccl::Family family() const override { return nccl::Family::kRing; }
  std::string unsupported_reason(const CollectiveSpec& spec, const hw::Topology&) const override {
    if (spec.op == CollectiveOp::kAllToAll || spec.op == CollectiveOp::kSendRecv)
      return "ring has no all-to-all or send/recv schedule (use direct)";
    return {};
  }

  TaskId build(BuildContext& ctx) const override {
    const int n = ctx.group_size();
    const TaskId start = begin_collective(ctx);
    // ring_orders may return more rings than ctx.channels() where only more rings load every link evenly;
    // small messages use fewer (call_rings).
    const auto orders = call_rings(ctx);
    const int channels = static_cast<int>(orders.size());
    const double per_channel = ctx.spec.bytes / channels;
    std::vector<Dep> finals;
    const auto op = ctx.spec.op;
    const auto handoffs = measured_handoffs(ctx);
    const int steps = op == CollectiveOp::kAllReduce ? 2 * (n - 1) : n - 1;  // all-reduce, RS, AG
    const bool chains = op == CollectiveOp::kBroadcast || op == CollectiveOp::kReduce;
    // Chains from (broadcast) or to (reduce) the root, one per channel, and the links' shares among them.
    // NCCL's chunk here is one step of the protocol's buffer (nccl::step_payload). At most 1,024 chunks are
    // modelled (the step form has a transfer per chunk and hop); beyond, the pipeline's fill is under (hops -
    // 1) / 1,024 of its time.
    const int chunks =
        ctx.spec.pipeline_chunks > 0
            ? ctx.spec.pipeline_chunks
            : static_cast<int>(
                  std::clamp(std::ceil(per_channel / nccl::step_payload(ctx.spec.protocol)), 1.0, 1024.0));
    const double chain_chunk = per_channel / chunks;
    const double chain_unit = std::min(chain_chunk, nccl::forward_unit(ctx.spec.protocol));
    std::vector<std::vector<std::pair<hw::Rank, hw::Rank>>> chain_hop_lists;
    std::optional<LinkShares> shares;  // the flow form's only
    if (chains && ctx.spec.granularity == Granularity::kFlow) shares.emplace(ctx.topo);
    if (chains) {
      for (const auto& ring : orders) {
        std::vector<hw::Rank> chain = ring;
        std::rotate(chain.begin(), std::find(chain.begin(), chain.end(), ctx.spec.group[0]), chain.end());
        if (op == CollectiveOp::kReduce) std::reverse(chain.begin() + 1, chain.end());
        chain_hop_lists.push_back(chain_hops(chain, op));
        if (shares)
          shares->add(chain_hop_lists.back(), {}, pipeline_pieces(chain_chunk, chunks, chain_unit), chunks);
      }
    }
    for (int c = 0; c < channels; ++c) {
      const auto& ring = orders[static_cast<std::size_t>(c)];
      if (chains) {
        // The chain, pipelined in chunks.
        const auto label = ctx.label(op == CollectiveOp::kBroadcast ? "chain" : "chain-reduce");
        finals.push_back({chain_pipeline(
            ctx, chain_hop_lists[static_cast<std::size_t>(c)], chain_chunk, chunks, chain_unit, start, label,
            c, ctx.spec.granularity, ctx.protocol_busbw_ceiling() / channels, shares ? &*shares : nullptr)});
        continue;
      }
      const double slice = per_channel / n;
      const auto last = ring_phase(ctx, ring, steps, slice, start, ctx.label("step"), c,
                                   handoffs ? std::optional(handoffs->fixed_seconds) : std::nullopt);
      for (TaskId t : last) finals.push_back({t});
    }
    // Where the handoffs were measured, the ring's links carry a channel's bytes no faster than NCCL's
    // channel moves its slices, and its fixed handoff time replaces NCCL's hop latencies (ring_phase above).
    // strata's rings may be fewer than NCCL's channels (one on a switched node): each carries its share of
    // the bytes in the same time, so the cap is the bytes strata's ring carries over the copy time.
    if (handoffs && handoffs->copy_seconds > 0)
      ctx.graph.cap_transfers_after(start, ctx.wire(per_channel / n * steps) / handoffs->copy_seconds);
    // A ring's bus bandwidth is its channels x the per-hop payload rate of each (all-reduce, reduce-scatter,
    // all-gather and the broadcast/reduce chain alike), so NCCL's protocol ceiling caps every hop of a
    // channel at ceiling / channels (the chains cap their own streaming, chain_pipeline).
    if (const double ceiling = ctx.protocol_busbw_ceiling();
        std::isfinite(ceiling) && op != CollectiveOp::kBroadcast && op != CollectiveOp::kReduce)
      ctx.graph.cap_transfers_after(start, ctx.wire(ceiling / channels));
    return join(ctx, finals);
  }
};

}  // namespace

std::vector<std::pair<hw::Rank, hw::Rank>> chain_hops(std::span<const hw::Rank> chain, CollectiveOp op) {
  std::vector<std::pair<hw::Rank, hw::Rank>> hops;
  const std::size_t n = chain.size();
  for (std::size_t i = 0; i + 1 < n; ++i)
    hops.push_back(op == CollectiveOp::kReduce ? std::pair{chain[n - 1 - i], chain[n - 2 - i]}
                                               : std::pair{chain[i], chain[i + 1]});
  return hops;
}

int step_form_units(double chunk, int chunks, double fill_unit) {
  if (!(fill_unit > 0) || !(fill_unit < chunk)) return 1;
  return std::max(1, static_cast<int>(std::min(std::ceil(chunk * chunks / fill_unit), 256.0)) / chunks);
}

std::vector<TaskId> add_step_pieces(BuildContext& ctx, hw::Rank from, hw::Rank to, double chunk, int units,
                                    double latency, std::span<const std::vector<TaskId>* const> upstream,
                                    TaskId start, TaskId& last, std::int32_t label, int lane,
                                    double stream_rate) {
  const bool whole = ctx.topo.node_of(from) != ctx.topo.node_of(to);
  const bool feeds = upstream.empty() && std::isfinite(stream_rate);
  const int pieces = whole ? 1 : units;
  std::vector<TaskId> out;
  for (int j = 0; j < pieces; ++j) {
    std::vector<Dep> deps;
    for (const auto* u : upstream) {
      const std::size_t idx = whole ? u->size() - 1 : std::min<std::size_t>(j, u->size() - 1);
      deps.push_back({(*u)[idx], DepKind::kDone});
    }
    if (upstream.empty()) deps.push_back({start});
    if (last >= 0) deps.push_back({last, DepKind::kSent});
    last = ctx.graph.add_transfer(from, to, ctx.wire(chunk / pieces), latency, label, deps, lane);
    if (feeds) ctx.graph.cap_transfer(last, ctx.wire(stream_rate));
    out.push_back(last);
  }
  return out;
}

void cap_streaming(BuildContext& ctx, TaskId bundle, double payload, double streamed, double stream_rate) {
  if (std::isfinite(stream_rate) && streamed > 0)
    ctx.graph.cap_transfers_after(bundle - 1, ctx.wire(stream_rate * payload / streamed));
}

TaskId chain_pipeline(BuildContext& ctx, std::span<const std::pair<hw::Rank, hw::Rank>> hops, double chunk,
                      int chunks, double fill_unit, TaskId start, std::int32_t label, int lane,
                      Granularity granularity, double stream_rate, const LinkShares* shares) {
  // Each hop's route looked up once: for its latency, and in flow form the bundle's route and the stages'
  // paces.
  std::vector<std::span<const hw::LinkId>> routes;
  std::vector<double> lat;
  for (const auto& [a, b] : hops) {
    routes.push_back(ctx.topo.route(a, b));
    lat.push_back(ctx.step_latency(routes.back()));
  }
  const auto crosses_network = [&](std::size_t i) {
    return ctx.topo.node_of(hops[i].first) != ctx.topo.node_of(hops[i].second);
  };
  if (granularity == Granularity::kFlow) {
    // K chunks through the stages: the first piece's trip (pipeline_stage_fill through every stage) and the
    // time of the K chunks less that piece, plus the chain's latency. With `shares` the trip crosses each
    // stage at its fill pace (the bundle carries the stage's bytes scaled by its own pace over the stage's);
    // else every stage goes at the bundle's pace.
    const CustomRoute route = BuildContext::merge_routes(routes);
    const double bundle_pace = shares ? shares->pace(route.links) : 1.0;
    const double first = pipeline_stage_fill(crosses_network(0), crosses_network(0), chunk, fill_unit);
    double chain_latency = 0, trip = 0;
    for (std::size_t i = 0; i < hops.size(); ++i) {
      chain_latency += lat[i];
      const double bytes =
          i == 0 ? first : pipeline_stage_fill(crosses_network(i), crosses_network(i - 1), chunk, fill_unit);
      trip += bytes * (shares ? bundle_pace / shares->fill_pace(routes[i]) : 1.0);
    }
    const double payload = chunk * chunks + trip - first;
    const std::array<Dep, 1> deps{Dep{start}};
    const TaskId bundle = add_bundle(ctx, route, hops, payload, chain_latency, label, deps, lane);
    cap_streaming(ctx, bundle, payload, chunk * chunks, stream_rate);
    return bundle;
  }
  // Step form: a transfer per chunk and hop, or per unit inside a node (pipeline_stage_fill): the next hop
  // forwards unit by unit, except after a hop across the network, which moves whole chunks. The streaming
  // rate caps the first hop, which feeds the others (add_step_pieces).
  const int units = step_form_units(chunk, chunks, fill_unit);
  std::vector<TaskId> last(hops.size(), -1), upstream;
  for (int k = 0; k < chunks; ++k) {
    for (std::size_t i = 0; i < hops.size(); ++i) {
      const std::vector<TaskId>* previous_hop[] = {&upstream};
      upstream =
          add_step_pieces(ctx, hops[i].first, hops[i].second, chunk, units, lat[i],
                          std::span(previous_hop, i > 0 ? 1 : 0), start, last[i], label, lane, stream_rate);
    }
  }
  return last.empty() ? start : last.back();
}

std::vector<std::vector<hw::Rank>> call_rings(const BuildContext& ctx) {
  auto rings = ring_orders(ctx, ctx.channels());
  if (ctx.spec.channels != 0) return rings;  // an explicit count, as NCCL keeps a preset nChannels
  // NCCL's threads per channel depend on whether the GPUs talk over NVLink (nccl::call_channels; the same
  // test as the tuner's GroupShape::nvlink).
  const int keep =
      nccl::call_channels(static_cast<int>(rings.size()), ctx.spec.bytes, ctx.family, ctx.spec.protocol,
                          ctx.group_size(), ctx.topo.has_nvlink(ctx.member(0)));
  rings.resize(static_cast<std::size_t>(keep));
  return rings;
}

std::vector<std::vector<hw::Rank>> ring_orders(const BuildContext& ctx, int channels) {
  const auto nodes = ctx.members_by_node();
  const hw::Topology& topo = ctx.topo;
  std::vector<std::vector<hw::Rank>> orders(static_cast<std::size_t>(channels));
  if (!topo.node_is_switched()) {
    // Directly wired nodes: follow direct links. One node: choose whole cycles so that a link of multiplicity
    // m carries m rings (an exact split when one exists, e.g. DGX-1's three undirected Hamiltonian cycles,
    // each run both ways); otherwise balance greedily. Several nodes: cut one cycle of each node at
    // different places.
    if (nodes.size() == 1) {
      const auto cycles = hamiltonian_cycles(topo, nodes[0], 5040);
      if (!cycles.empty()) {
        if (auto exact = exact_ring_split(topo, cycles, channels)) return *exact;
        if (ctx.spec.channels == 0)
          if (auto scaled = scaled_ring_split(topo, nodes[0], cycles)) return *scaled;
        std::map<hw::LinkId, int> load;
        for (int c = 0; c < channels; ++c) {
          std::size_t best = 0;
          double best_cost = 1e300;
          for (std::size_t i = 0; i < cycles.size(); ++i) {
            double cost = 0;
            for (std::size_t j = 0; j < cycles[i].size(); ++j) {
              const hw::LinkId l = *topo.direct_link(cycles[i][j], cycles[i][(j + 1) % cycles[i].size()]);
              cost = std::max(cost, (load[l] + 1.0) / topo.link(l).multiplicity);
            }
            if (cost < best_cost) {
              best_cost = cost;
              best = i;
            }
          }
          const auto& cyc = cycles[best];
          for (std::size_t j = 0; j < cyc.size(); ++j)
            ++load[*topo.direct_link(cyc[j], cyc[(j + 1) % cyc.size()])];
          orders[static_cast<std::size_t>(c)] = cyc;
        }
        return orders;
      }
    }
  }
  std::vector<std::vector<hw::Rank>> node_paths;
  for (const auto& members : nodes) {
    std::vector<hw::Rank> path = members;
    if (!topo.node_is_switched()) {
      const auto cycles = hamiltonian_cycles(topo, members, 1);
      if (!cycles.empty()) path = cycles[0];
    }
    node_paths.push_back(std::move(path));
  }
  for (int c = 0; c < channels; ++c) {
    auto& order = orders[static_cast<std::size_t>(c)];
    for (const auto& path : node_paths) {
      const std::size_t shift =
          static_cast<std::size_t>(c) * path.size() / static_cast<std::size_t>(channels);
      const auto rotated = rotate_by(path, shift);
      order.insert(order.end(), rotated.begin(), rotated.end());
    }
  }
  return orders;
}

std::vector<TaskId> ring_phase(BuildContext& ctx, std::span<const hw::Rank> ring, int steps, double slice,
                               TaskId start, std::int32_t label, int lane, std::optional<double> latency) {
  const auto n = ring.size();
  std::vector<double> lat(n, steps > 0 && latency ? *latency / steps : 0.0);
  if (!latency)
    for (std::size_t i = 0; i < n; ++i) lat[i] = ctx.step_latency(ring[i], ring[(i + 1) % n]);
  if (ctx.spec.granularity == Granularity::kFlow) {
    std::vector<std::pair<hw::Rank, hw::Rank>> hops(n);
    for (std::size_t i = 0; i < n; ++i) hops[i] = {ring[i], ring[(i + 1) % n]};
    const std::array<Dep, 1> deps{Dep{start}};
    return {add_bundle(ctx, hops, slice * steps, ring_window_latency(lat, steps), label, deps, lane)};
  }
  std::vector<TaskId> prev(n, -1), cur(n, -1);
  const double wire = ctx.wire(slice);
  for (int s = 0; s < steps; ++s) {
    for (std::size_t i = 0; i < n; ++i) {
      std::array<Dep, 2> deps;
      std::size_t nd = 0;
      if (s == 0) {
        deps[nd++] = Dep{start};
      } else {
        deps[nd++] = Dep{prev[i], DepKind::kSent};                // my link is free of my previous step
        deps[nd++] = Dep{prev[(i + n - 1) % n], DepKind::kDone};  // the data I forward has arrived
      }
      cur[i] = ctx.graph.add_transfer(ring[i], ring[(i + 1) % n], wire, lat[i], label,
                                      std::span<const Dep>(deps.data(), nd), lane);
    }
    std::swap(prev, cur);
  }
  return prev;
}

std::unique_ptr<CollectiveAlgorithm> make_ring() {
  return std::make_unique<Ring>();
}

}  // namespace strata::sim::algorithms
