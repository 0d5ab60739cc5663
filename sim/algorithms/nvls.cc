// NVLS (NVLink SHARP, third-generation NVSwitch and later): the switch reduces and multicasts. For an
// all-reduce of S bytes on n GPUs each GPU's port carries S + S/n each way: its whole buffer up for the
// in-switch reduction (multimem.ld_reduce) plus its reduced slice up for the multicast store, and its
// reduced slice plus everyone's reduced slices down. NCCL rates the switch path at nvlsEfficiency = 0.85 of
// the NVLink bandwidth on Hopper; with 8 H100 that gives algbw ~ 0.85 * 370.8 * 8/9 = 280 GB/s, in line
// with NVIDIA's "busBw ~480, algbw ~275" for NVLS on 8 H100 (nccl-tests #212), and n = 5, 6, 7 GPUs of a
// node give algbw 263, 270, 276 GB/s against 258, ~265, ~270 measured (github.com/NVIDIA/nccl/issues/1455).
//
// Mid-size messages (docs/fidelity.md §6.4): NCCL's kernel (src/device/all_reduce.h, NVLS, v2.21.5-1) gives
// each of 16 channels three groups of warps - scatter, reduce-and-multicast, gather - coupled by FIFOs, and
// moves one chunk per head per step; the chunk falls from 128 KiB to 16 KiB for smaller messages. A channel's
// n steps therefore take n + 2 step times, and with few steps (2 at 4 MiB, 16 at 128 MiB on 8 GPUs) the
// fill and drain are a large share of the time. No per-step overhead is charged beyond that unless the
// system file gives one channel's measured step time (node.fabric.nccl_nvls, `strata validate nvls-steps`):
// its size is not in NCCL's source.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "sim/algorithms/algorithms.h"
#include "sim/nccl_model.h"

namespace strata::sim::algorithms {
namespace {

class Nvls final : public CollectiveAlgorithm {
 public:
  std::string_view name() const override { return "nvls"; }
  std::string_view description() const override {
    return "in-switch reduction and multicast on NVSwitch gen3+ (all-reduce within one node)";
  }
  nccl::Family family() const override { return nccl::Family::kNvls; }
  std::string unsupported_reason(const CollectiveSpec& spec, const hw::Topology& topo) const override {
    if (spec.op != CollectiveOp::kAllReduce) return "nvls implements allreduce only";
    if (!topo.nvls_capable()) return "the system has no NVSwitch with in-switch reduction (NVSwitch gen3+)";
    const int node = topo.node_of(spec.group[0]);
    for (hw::Rank r : spec.group)
      if (topo.node_of(r) != node) return "nvls works within one node (across nodes: nvls-tree)";
    // NCCL sets up NVLS only for more than two GPUs (v2.21.5-1 src/transport/nvls.cc, ncclNvlsInit); a
    // group on part of a node forms its own multicast group, whose ports carry the same S (n+1)/n.
    if (spec.group.size() < 3) return "nvls needs at least 3 GPUs (NCCL disables NVLS for 2 or fewer)";
    if (spec.protocol != Protocol::kSimple) return "nvls uses the simple protocol only";
    return {};
  }

  TaskId build(BuildContext& ctx) const override {
    const TaskId start = begin_collective(ctx);
    const int n = ctx.group_size();
    const double chunk = nvls_chunk_bytes(ctx.spec.bytes, n);
    const double payload = nvls_pipeline_payload(ctx.spec.bytes, n, chunk);
    const double wire = payload * (n + 1.0) / n / nccl::kNvlsEfficiency;
    double lat = nccl::hop_latency(hw::Transport::kNvlink, nccl::Family::kNvls, Protocol::kSimple);
    double copy = 0;  // seconds a channel needs to move its chunks alone (0: not measured)
    if (const auto& measured = ctx.topo.nccl_table(hw::NcclTableId::kNvls); !measured.empty()) {
      // A channel's n steps take n + 2 step times (fill and drain of its three warp groups); each splits
      // into the measured fixed part, charged as latency instead of NCCL's NVLS hop latency, and its chunk
      // at the rate one channel alone moves it, which caps the ports' flows (docs/fidelity.md §6.4).
      const double stages = std::ceil(ctx.spec.bytes / kNvlsChannels / (n * chunk)) + 2;
      const auto split = measured.times.split(chunk, stages);
      lat = split.fixed_seconds;
      copy = split.copy_seconds;
    }
    const std::array<Dep, 1> deps{Dep{start}};
    std::vector<Dep> finals;
    const auto up = ctx.label("up"), down = ctx.label("down");
    for (hw::Rank r : ctx.spec.group) {
      const auto [to_switch, from_switch] = nvswitch_port(ctx.topo, r);
      finals.push_back({ctx.graph.add_transfer_on(CustomRoute{{to_switch}, {}}, r, r, wire, lat, up, deps)});
      finals.push_back(
          {ctx.graph.add_transfer_on(CustomRoute{{from_switch}, {}}, r, r, wire, lat, down, deps)});
    }
    if (copy > 0) ctx.graph.cap_transfers_after(start, wire / copy);
    return join(ctx, finals);
  }
};

}  // namespace

std::pair<hw::LinkId, hw::LinkId> nvswitch_port(const hw::Topology& topo, hw::Rank gpu) {
  const hw::VertexId g = topo.gpu_vertex(gpu);
  hw::LinkId to_switch = -1, from_switch = -1;
  for (hw::LinkId l = 0; l < static_cast<hw::LinkId>(topo.links().size()); ++l) {
    const auto& lk = topo.link(l);
    const auto other = lk.src == g ? lk.dst : (lk.dst == g ? lk.src : -1);
    if (other < 0 || topo.vertices()[static_cast<std::size_t>(other)].kind != hw::VertexKind::kNvSwitch)
      continue;
    (lk.src == g ? to_switch : from_switch) = l;
  }
  return {to_switch, from_switch};
}

double nvls_chunk_bytes(double bytes, int heads) {
  const double ops = static_cast<double>(kNvlsChannels) * heads;
  double chunk = kNvlsChunk;
  if (bytes < 64 * ops * chunk && chunk > 65536) chunk = 65536;
  if (bytes < 8 * ops * chunk && chunk > 32768) chunk = 32768;
  if (bytes < 2 * ops * chunk && chunk > 16384) chunk = 16384;
  return chunk;
}

double nvls_tree_chunk_bytes(double bytes, int nodes, int heads) {
  // At most the tree's maximum chunk (NCCL_NVLSTREE_MAX_CHUNKSIZE: 64 KiB from 4 nodes on, else the NVLS
  // chunk); the 256 KiB and 128 KiB steps of NCCL's rule only bite when NCCL_NVLS_CHUNKSIZE is raised.
  double chunk = std::min(kNvlsChunk, nodes >= 4 ? 65536.0 : kNvlsChunk);
  const double ops = static_cast<double>(kNvlsChannels) * heads;
  if (bytes < 32 * ops * chunk && chunk > 262144) chunk = 262144;
  if (bytes < 16 * ops * chunk && chunk > 131072) chunk = 131072;
  if (bytes < 4 * ops * chunk && chunk > 65536) chunk = 65536;
  if (bytes < 1 * ops * chunk && chunk > 32768) chunk = 32768;
  return chunk;
}

double nvls_pipeline_payload(double bytes, int heads, double chunk) {
  const double per_channel = bytes / kNvlsChannels;
  const double step = std::min(per_channel, heads * chunk);
  return bytes + 2.0 * kNvlsChannels * step;
}

std::unique_ptr<CollectiveAlgorithm> make_nvls() {
  return std::make_unique<Nvls>();
}

}  // namespace strata::sim::algorithms
