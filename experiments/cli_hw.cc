// strata hw show|list
#include <algorithm>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "experiments/cli.h"
#include "experiments/cli_options.h"
#include "hw/config_error.h"
#include "hw/system_loader.h"
#include "hw/units.h"
#include "util/parse.h"

namespace strata::cli {
namespace {

void show_system(const hw::Topology& topo) {
  std::cout << fmt::format("system: {}\nGPU: {} ({}, {}), HBM {} at {}\n", topo.name(), topo.gpu().name,
                           topo.gpu().description, hw::arch_name(topo.gpu().arch), units::format_bytes(topo.gpu().hbm_capacity),
                           units::format_bandwidth(topo.gpu().hbm_bandwidth));
  std::cout << "\nhierarchy view (outermost first):\n";
  for (const auto& l : topo.levels()) std::cout << fmt::format("  {:<10} x {}\n", l.name, l.count);
  std::cout << fmt::format("  = {} GPUs\n", topo.num_gpus());
  std::cout << "\nphysical view:\n";
  std::map<std::string, int> kinds;
  for (const auto& v : topo.vertices()) ++kinds[std::string(hw::vertex_kind_name(v.kind))];
  for (const auto& [k, c] : kinds) std::cout << fmt::format("  {:<12} {}\n", k, c);
  std::cout << fmt::format("  links        {} directed ({} duplex wires)\n", topo.links().size(), topo.links().size() / 2);
  std::cout << "\n  wires of node 0 and the network (effective bandwidth per direction):\n";
  std::set<std::string> seen;
  for (std::size_t i = 0; i < topo.links().size(); i += 2) {
    const auto& l = topo.links()[i];
    const auto& a = topo.vertices()[static_cast<std::size_t>(l.src)];
    const auto& b = topo.vertices()[static_cast<std::size_t>(l.dst)];
    if ((a.node > 0) || (b.node > 0)) continue;
    const std::string line = fmt::format("    {:<14} <-> {:<14} {:<8} x{:<2} {:>12}  {}", a.name, b.name, l.kind,
                                         l.multiplicity, units::format_bandwidth(l.bandwidth),
                                         units::format_duration(l.latency));
    if (seen.insert(line).second) std::cout << line << "\n";
  }
  std::cout << "\n  sample routes:\n";
  const auto print_route = [&](hw::Rank a, hw::Rank b) {
    std::string path = topo.vertices()[static_cast<std::size_t>(topo.gpu_vertex(a))].name;
    for (hw::LinkId l : topo.route(a, b))
      path += " -> " + topo.vertices()[static_cast<std::size_t>(topo.link(l).dst)].name;
    std::cout << fmt::format("    gpu {} -> gpu {}: {}  (bottleneck {}, latency {})\n", a, b, path,
                             units::format_bandwidth(topo.route_bandwidth(a, b)),
                             units::format_duration(topo.route_latency(a, b)));
  };
  if (topo.gpus_per_node() > 1) print_route(0, 1);
  if (topo.gpus_per_node() > 4) print_route(0, topo.gpus_per_node() - 1);
  if (topo.nodes() > 1) print_route(0, topo.gpus_per_node());
  // GPU 1 to a GPU of node 1 other than its first (GPU 2 of that node when there is one).
  if (topo.nodes() > 1 && topo.gpus_per_node() > 1)
    print_route(1, topo.gpus_per_node() + std::min(2, topo.gpus_per_node() - 1));
}

}  // namespace

void add_hw_commands(CLI::App& app) {
  auto* hw_cmd = app.add_subcommand("hw", "Inspect hardware systems (configs/hw/*.yaml) and the built-in catalogues");
  hw_cmd->require_subcommand(1);
  struct Options {
    std::string file;
    int nodes = 0;
  };
  auto opt = std::make_shared<Options>();
  auto* show = hw_cmd->add_subcommand("show", "Print a system's hierarchy view and physical graph (wires, routes)");
  show->add_option("system", opt->file, "System YAML file, e.g. configs/hw/dgx-h100.yaml")->required();
  add_int_option(*show, "--nodes", opt->nodes, {1, hw::limits::kMaxNodes},
                 "Turn the node preset into an N-node cluster (overrides 'nodes:')", false);
  show->callback([opt] {
    const auto topo =
        hw::load_system(opt->file, hw::LoadOptions{opt->nodes > 0 ? std::optional<int>(opt->nodes) : std::nullopt});
    show_system(topo);
  });
  auto* list = hw_cmd->add_subcommand("list", "List the GPU models and link kinds a system file can name");
  list->callback([] {
    std::cout << "GPU models:\n";
    for (const auto& g : hw::gpu_catalog())
      std::cout << fmt::format("  {:<16} {:<40} fp16/bf16 {:>7.1f} TFLOPS  HBM {:>8} {:>12}\n", g.name, g.description,
                               g.peak_flops(hw::DType::kBf16) / 1e12, units::format_bytes(g.hbm_capacity),
                               units::format_bandwidth(g.hbm_bandwidth));
    std::cout << "\nlink kinds (per direction):\n";
    for (const auto& l : hw::link_catalog())
      std::cout << fmt::format("  {:<10} {:<55} line {:>10}  effective {:>10}  latency {}\n", l.name, l.description,
                               units::format_bandwidth(l.bandwidth), units::format_bandwidth(l.effective_bandwidth()),
                               units::format_duration(l.latency));
  });
}

}  // namespace strata::cli
