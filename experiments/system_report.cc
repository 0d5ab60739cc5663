#include "experiments/system_report.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "experiments/option_ranges.h"
#include "hw/system_loader.h"
#include "hw/units.h"
#include "sim/nccl_tuner.h"

namespace strata::experiments {

hw::Topology load_cluster(const std::string& path, int nodes) {
  if (nodes != 0) check_int(nodes, kNodesRange, "--nodes");
  return hw::load_system(path, hw::LoadOptions{nodes > 0 ? std::optional<int>(nodes) : std::nullopt});
}

std::string describe_system(const hw::Topology& topo) {
  std::string out;
  out += fmt::format("system: {}\nGPU: {} ({}, {}), HBM {} at {}\n", topo.name(), topo.gpu().name,
                     topo.gpu().description, hw::arch_name(topo.gpu().arch),
                     units::format_bytes(topo.gpu().hbm_capacity),
                     units::format_bandwidth(topo.gpu().hbm_bandwidth));
  out += "\nhierarchy view (outermost first):\n";
  for (const auto& l : topo.levels()) out += fmt::format("  {:<10} x {}\n", l.name, l.count);
  out += fmt::format("  = {} GPUs\n", topo.num_gpus());
  out += "\nphysical view:\n";
  std::map<std::string, int> kinds;
  for (const auto& v : topo.vertices()) ++kinds[std::string(hw::vertex_kind_name(v.kind))];
  for (const auto& [k, c] : kinds) out += fmt::format("  {:<12} {}\n", k, c);
  out += fmt::format("  links        {} directed ({} duplex wires)\n", topo.links().size(),
                     topo.links().size() / 2);
  out += fmt::format("  cpu vendor   {} (node.host.cpu_vendor)\n", hw::cpu_vendor_name(topo.cpu_vendor()));
  const auto table = [](const hw::SizeTimes& t) {
    std::string text;
    for (const auto& p : t.points())
      text += fmt::format("{}{} in {}", text.empty() ? " " : ", ", units::format_bytes(p.bytes),
                          units::format_duration(p.seconds));
    return text;
  };
  // The measured NCCL tables (hw/nccl_measured.h), each as written, or named with the command that measures
  // it where it would apply: NIC tables on nodes with NICs, LL128 tables where the GPUs have NVLink (NCCL
  // runs LL128 only there, sim/nccl_model.cc), NVLS where the switch reduces.
  const bool nics = topo.nics_per_node() > 0, nvlink = topo.has_nvlink(0);
  for (const auto& info : hw::nccl_tables()) {
    const auto& t = topo.nccl_table(info.id);
    if (!t.empty())
      out += fmt::format("  {:<12} {}{} ({}):{}\n", info.label,
                         info.channels ? fmt::format("{} ", t.channels) : "", info.what, info.path,
                         table(t.times));
    else if ((!info.across_nodes || nics) && (!info.ll128 || nvlink) && (!info.nvls || topo.nvls_capable()))
      out += fmt::format("  {:<12} not measured ({}; strata validate {})\n", info.label, info.path,
                         info.command);
  }
  // NCCL's topology graphs for a communicator over every GPU, as strata rebuilds its search (what `--algo
  // auto` ranks with): to hold against a system's NCCL_DEBUG_SUBSYS=GRAPH log ("nChannels N, bw a/b").
  const std::vector<hw::Rank> all = topo.all_ranks();
  std::string why;
  if (const auto m = all.size() > 1 ? sim::nccl::tuner_model(topo, all, &why) : std::nullopt) {
    const auto graph = [](const sim::nccl::TopoGraph& g) {
      return g.channels == 0 ? std::string("none")
                             : fmt::format("{} x {:g}/{:g} GB/s", g.channels, g.bw_intra, g.bw_inter);
    };
    out += fmt::format(
        "  nccl graphs  ring {}, tree {}, nvls {}; {} channels (NCCL 2.21's search: channels x speed inside/"
        "across nodes)\n",
        graph(m->ring), graph(m->tree), graph(m->nvls), m->comm_channels);
  } else {
    out += fmt::format("  nccl graphs  not rebuilt: {}; --algo auto ranks by strata's estimate\n",
                       all.size() > 1 ? why : "one GPU");
  }
  out += "\n  wires of node 0 and the network (effective bandwidth per direction):\n";
  std::set<std::string> seen;
  for (std::size_t i = 0; i < topo.links().size(); i += 2) {
    const auto& l = topo.links()[i];
    const auto& a = topo.vertices()[static_cast<std::size_t>(l.src)];
    const auto& b = topo.vertices()[static_cast<std::size_t>(l.dst)];
    if ((a.node > 0) || (b.node > 0)) continue;
    const std::string line =
        fmt::format("    {:<14} <-> {:<14} {:<8} x{:<2} {:>12}  {}", a.name, b.name, l.kind, l.multiplicity,
                    units::format_bandwidth(l.bandwidth), units::format_duration(l.latency));
    if (seen.insert(line).second) out += line + "\n";
  }
  out += "\n  sample routes:\n";
  const auto print_route = [&](hw::Rank a, hw::Rank b) {
    std::string path = topo.vertices()[static_cast<std::size_t>(topo.gpu_vertex(a))].name;
    for (hw::LinkId l : topo.route(a, b))
      path += " -> " + topo.vertices()[static_cast<std::size_t>(topo.link(l).dst)].name;
    out += fmt::format("    gpu {} -> gpu {}: {}  (bottleneck {}, latency {})\n", a, b, path,
                       units::format_bandwidth(topo.route_bandwidth(a, b)),
                       units::format_duration(topo.route_latency(a, b)));
  };
  if (topo.gpus_per_node() > 1) print_route(0, 1);
  if (topo.gpus_per_node() > 4) print_route(0, topo.gpus_per_node() - 1);
  if (topo.nodes() > 1) print_route(0, topo.gpus_per_node());
  // GPU 1 to a GPU of node 1 other than its first (GPU 2 of that node when there is one).
  if (topo.nodes() > 1 && topo.gpus_per_node() > 1)
    print_route(1, topo.gpus_per_node() + std::min(2, topo.gpus_per_node() - 1));
  return out;
}

}  // namespace strata::experiments
