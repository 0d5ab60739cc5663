#include "sim/nccl_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "sim/nccl_tuner.h"

namespace strata::sim::nccl {
namespace {
constexpr double kUs = 1e-6;
constexpr double kUnlimited = std::numeric_limits<double>::infinity();
// [family Tree, Ring, NVLS, NVLSTree, HostMpi][LL, LL128, Simple], microseconds. HostMpi (not NCCL's) has no
// table: zeros, so its steps cost the route's physical latency alone (BuildContext::step_latency).
constexpr double kBase[5][3] = {{6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}};
// [transport NVLink, PCI, NET][family Tree, Ring, NVLS, NVLSTree, HostMpi][LL, LL128, Simple], microseconds.
constexpr double kHop[3][5][3] = {
    {{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}, {0, 0, 25}, {0, 0, 25}, {0, 0, 0}},
    {{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}},
    {{5.0, 8.5, 14}, {2.7, 4.0, 14.0}, {0, 0, 18}, {0, 0, 20.9}, {0, 0, 0}},
};
int trans(hw::Transport t) {
  return t == hw::Transport::kNvlink ? 0 : (t == hw::Transport::kNet ? 2 : 1);
}
}  // namespace

int table_index(Family f) {
  switch (f) {
    case Family::kTree:
      return 0;
    case Family::kRing:
      return 1;
    case Family::kNvls:
      return 2;
    case Family::kNvlsTree:
      return 3;
    case Family::kHostMpi:
      return 4;
  }
  return 1;
}
int table_index(Protocol p) {
  return p == Protocol::kLL ? 0 : (p == Protocol::kLL128 ? 1 : 2);
}

double base_latency(Family f, Protocol p) {
  return kBase[table_index(f)][table_index(p)] * kUs;
}
double hop_latency(hw::Transport t, Family f, Protocol p) {
  return kHop[trans(t)][table_index(f)][table_index(p)] * kUs;
}

double payload_cost(Family f, Protocol p, int nodes) {
  if (f == Family::kTree && p == Protocol::kLL) return 3.8;
  if (f == Family::kTree && p == Protocol::kLL128 && nodes == 1) return 9.0 / 7.0;
  return protocol_wire_factor(p);
}

double protocol_busbw_ceiling(Family f, Protocol p, hw::GpuArch arch, int nodes, hw::CpuVendor vendor) {
  if (p != Protocol::kLL || (f != Family::kRing && f != Family::kTree)) return kUnlimited;
  // llMaxBws [row][1 node, 2 nodes, 3+ nodes], GB/s. Rows: one node by GPU generation (Volta, Ampere,
  // Hopper, Blackwell); several nodes by host CPU (row 0 for Intel and others, row 1 for AMD).
  constexpr double kLlMax[4][3] = {
      {39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {282.0, 90.0, 70.0}};
  int row = 0;
  if (nodes <= 1) {
    switch (arch) {
      case hw::GpuArch::kAmpere:
        row = 1;
        break;
      case hw::GpuArch::kHopper:
        row = 2;
        break;
      case hw::GpuArch::kBlackwell:
        row = 3;
        break;
      default:
        row = 0;  // Volta and older (NCCL's lowest compute-capability row)
    }
  } else {
    row = vendor == hw::CpuVendor::kAmd ? 1 : 0;
  }
  const int column = nodes <= 1 ? 0 : (nodes == 2 ? 1 : 2);
  return kLlMax[row][column] * 1e9;
}

double step_payload(Protocol p) {
  switch (p) {
    case Protocol::kSimple:
      return 512 * 1024.0;
    case Protocol::kLL:
      return 32 * 1024.0;
    case Protocol::kLL128:
      break;
  }
  return kLl128StepPayload;
}

double forward_unit(Protocol p) {
  switch (p) {
    case Protocol::kLL:
      return 512 * 8.0;  // NCCL_LL_MAX_NTHREADS lines of one 8 B datum each
    case Protocol::kLL128:
      return 640 / 32 * (32 * 8 * 8.0) * 120 / 128;  // NCCL_LL128_MAX_NTHREADS / WARP_SIZE warp slices
    case Protocol::kSimple:
      break;
  }
  return std::numeric_limits<double>::infinity();
}

int call_channels(int channels, double bytes, Family f, Protocol p, int ranks, bool nvlink) {
  if (f != Family::kRing && f != Family::kTree) return channels;
  double threads = 512, threshold = 64;
  if (p == Protocol::kLL128) {
    threads = 640;
    threshold = 8;
  } else if (p == Protocol::kLL) {
    threshold = f == Family::kRing ? 8.0 * ranks : 8.0;
  } else if (f == Family::kRing && !nvlink) {
    threads = 256;
  }
  int nc = channels;
  while (nc >= 2 && bytes < nc * threads * threshold) --nc;
  return nc;
}

namespace {

// One channel's ring loops (v2.21.5-1 device/all_reduce.h, runRing; enqueue.cc): 2N - 1 primitives a loop for
// all-reduce and N for reduce-scatter and all-gather, a loop moving N chunks of `chunk`; the last loop's
// chunk is the rest / N rounded up to `align` (0 when the loops are all full).
struct RingLoops {
  double primitives = 0, full_loops = 0, last_chunk = 0;
};
RingLoops ring_loops(CollectiveOp op, double bytes_per_channel, double n, double chunk, double align) {
  RingLoops l;
  l.primitives = op == CollectiveOp::kAllReduce ? 2 * n - 1 : n;
  l.full_loops = std::floor(bytes_per_channel / (n * chunk));
  const double rest = bytes_per_channel - l.full_loops * n * chunk;
  if (rest > 0) l.last_chunk = std::ceil(std::ceil(rest / n) / align) * align;
  return l;
}

}  // namespace

std::vector<SliceCount> ring_simple_slices(CollectiveOp op, double bytes_per_channel, int ranks) {
  constexpr double kChunk = 2.0 * 1024 * 1024, kMinSlice = 32 * 1024.0, kChunkAlign = 4096;
  if (ranks < 2 || !(bytes_per_channel > 0)) return {};
  const auto l = ring_loops(op, bytes_per_channel, ranks, kChunk, kChunkAlign);
  std::vector<SliceCount> out;
  if (l.full_loops > 0) out.push_back({kChunk / 2, 2 * l.primitives * l.full_loops});
  if (l.last_chunk > 0) {
    const double first = std::min(l.last_chunk, std::max(l.last_chunk / 2, kMinSlice));
    out.push_back({first, l.primitives});
    out.push_back({l.last_chunk - first, l.primitives});
  }
  return out;
}

std::vector<SliceCount> ring_ll128_steps(CollectiveOp op, double bytes_per_channel, int ranks) {
  if (ranks < 2 || !(bytes_per_channel > 0)) return {};
  const auto l = ring_loops(op, bytes_per_channel, ranks, kLl128StepPayload, kLl128ChunkAlign);
  std::vector<SliceCount> out;
  if (l.full_loops > 0) out.push_back({kLl128StepPayload, l.primitives * l.full_loops});
  if (l.last_chunk > 0) out.push_back({l.last_chunk, l.primitives});
  return out;
}

GroupShape group_shape(const hw::Topology& topo, std::span<const hw::Rank> group) {
  GroupShape g;
  g.ranks = static_cast<int>(group.size());
  std::set<int> nodes;
  for (hw::Rank r : group) nodes.insert(topo.node_of(r));
  g.nodes = static_cast<int>(nodes.size());
  g.nvlink = topo.has_nvlink(group.empty() ? 0 : group[0]);
  return g;
}

double expansion_estimate(const EstimateInputs& in, const CollectiveAlgorithm& algorithm) {
  CollectiveSpec spec = in.spec;
  spec.granularity = Granularity::kFlow;
  TaskGraph graph;
  BuildContext ctx(in.topo, graph, spec, std::string(algorithm.name()), algorithm.family(), {});
  algorithm.build(ctx);
  const auto tasks = graph.tasks();
  const auto& links = in.topo.links();
  // Stage of each task: its dependency depth (tasks are added after their dependencies, and edges are
  // stored in the order their target tasks were added).
  std::vector<int> stage(tasks.size(), 0);
  for (const auto& e : graph.edges())
    stage[static_cast<std::size_t>(e.to)] =
        std::max(stage[static_cast<std::size_t>(e.to)], stage[static_cast<std::size_t>(e.from)] + 1);
  const auto route_of = [&](const Task& t, std::vector<hw::LinkId>& route, std::vector<double>& weights) {
    if (t.route >= 0) {
      const auto& r = graph.custom_route(t.route);
      route = r.links;
      weights = r.weights;
    } else {
      const auto r = in.topo.route(t.rank, t.peer);
      route.assign(r.begin(), r.end());
      weights.clear();
    }
  };
  std::map<std::pair<int, hw::LinkId>, double> load;  // (stage, link) -> bytes
  std::vector<hw::LinkId> route;
  std::vector<double> weights;
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    if (tasks[i].kind != TaskKind::kTransfer) continue;
    route_of(tasks[i], route, weights);
    for (std::size_t k = 0; k < route.size(); ++k)
      if (links[static_cast<std::size_t>(route[k])].shared)
        load[{stage[i], route[k]}] += tasks[i].bytes * (weights.empty() ? 1.0 : weights[k]);
  }
  std::vector<double> start(tasks.size(), 0.0), finish(tasks.size(), 0.0);
  std::size_t next_edge = 0;
  const auto edges = graph.edges();
  double makespan = 0;
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    for (; next_edge < edges.size() && static_cast<std::size_t>(edges[next_edge].to) == i; ++next_edge)
      start[i] = std::max(start[i], finish[static_cast<std::size_t>(edges[next_edge].from)]);
    const Task& t = tasks[i];
    double duration = t.seconds;  // delay, or the transfer's delivery latency
    if (t.kind == TaskKind::kTransfer) {
      route_of(t, route, weights);
      double drain = 0;
      for (hw::LinkId l : route) {
        const auto& link = links[static_cast<std::size_t>(l)];
        // A shared link drains the stage's whole load; a fat pipe only caps this transfer.
        const double bytes = link.shared ? load[{stage[i], l}] : t.bytes;
        drain = std::max(drain, bytes / link.bandwidth);
      }
      if (t.max_rate > 0) drain = std::max(drain, t.bytes / t.max_rate);
      duration += drain;
    }
    finish[i] = start[i] + duration;
    makespan = std::max(makespan, finish[i]);
  }
  return makespan;
}

std::vector<Estimate> estimate_all(const hw::Topology& topo, const CollectiveSpec& spec,
                                   std::string_view only, Candidates candidates) {
  const GroupShape g = group_shape(topo, spec.group);
  const hw::Transport intra_t = g.nvlink ? hw::Transport::kNvlink : hw::Transport::kPcie;
  // NCCL's own choice (auto, or an explicit NCCL algorithm's protocol) ranks by NCCL's tuner where strata
  // reproduces NCCL's topology graphs; `best` compares every schedule by the same expansion estimate.
  const auto model = (candidates == Candidates::kNccl || !only.empty()) && g.ranks > 1
                         ? tuner_model(topo, spec.group)
                         : std::nullopt;
  std::vector<Estimate> out;
  for (const CollectiveAlgorithm* algo : AlgorithmRegistry::instance().all()) {
    if (!only.empty() && algo->name() != only) continue;
    const Family f = algo->family();
    // A host MPI library's schedules are another runtime than the GPUs' collective library: they run only
    // when named, never as a tuner's pick.
    if (only.empty() && f == Family::kHostMpi) continue;
    for (Protocol p : {Protocol::kLL, Protocol::kLL128, Protocol::kSimple}) {
      if (p == Protocol::kLL128 && !g.nvlink) continue;  // NCCL enables LL128 on NVLink only
      CollectiveSpec trial = spec;
      trial.protocol = p;
      if (!algo->unsupported_reason(trial, topo).empty()) continue;
      const bool nccls = algo->nccl_unsupported_reason(trial, topo).empty();
      if (only.empty() && candidates == Candidates::kNccl && !nccls) continue;
      const EstimateInputs in{topo,
                              trial,
                              g,
                              base_latency(f, p),
                              hop_latency(intra_t, f, p),
                              hop_latency(hw::Transport::kNet, f, p),
                              payload_cost(f, p, g.nodes)};
      // One rank: every algorithm is the same local copy (add_collective), so they tie at its cost.
      if (g.ranks == 1) {
        out.push_back({std::string(algo->name()), p,
                       in.base_latency + 2 * spec.bytes / std::max(topo.gpu().hbm_bandwidth, 1.0)});
        continue;
      }
      std::optional<double> nccl_seconds;
      if (model && nccls) nccl_seconds = tuner_time(*model, f, p, spec.op, spec.bytes);
      if (nccl_seconds && std::isinf(*nccl_seconds)) continue;  // NCCL does not run this pair
      out.push_back({std::string(algo->name()), p, nccl_seconds ? *nccl_seconds : algo->estimate(in)});
    }
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const Estimate& a, const Estimate& b) { return a.seconds < b.seconds; });
  return out;
}

}  // namespace strata::sim::nccl

namespace strata::sim {
double CollectiveAlgorithm::estimate(const nccl::EstimateInputs& in) const {
  return nccl::expansion_estimate(in, *this);
}
}  // namespace strata::sim
