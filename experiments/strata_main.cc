// The `strata` command line: the front door to every component.
#include <iostream>
#include <numeric>
#include <map>
#include <set>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "experiments/collective_sweep.h"
#include "experiments/experiment.h"
#include "hw/config_error.h"
#include "hw/system_loader.h"
#include "hw/units.h"
#include "sim/collective_runner.h"
#include "sim/trace.h"

namespace {

using namespace strata;

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
    if (a.node < 0 && b.node < 0 && seen.size() > 40) continue;
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
  if (topo.nodes() > 1 && topo.gpus_per_node() > 1) print_route(1, topo.gpus_per_node() + 2);
}

std::vector<hw::Rank> parse_group(const std::string& text, int num_gpus) {
  std::vector<hw::Rank> out;
  if (text.empty()) {
    out.resize(static_cast<std::size_t>(num_gpus));
    std::iota(out.begin(), out.end(), 0);
    return out;
  }
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const auto comma = text.find(',', pos);
    const std::string item = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    const auto dash = item.find('-');
    try {
      if (dash != std::string::npos) {
        const int lo = std::stoi(item.substr(0, dash)), hi = std::stoi(item.substr(dash + 1));
        for (int r = lo; r <= hi; ++r) out.push_back(r);
      } else {
        out.push_back(std::stoi(item));
      }
    } catch (const std::exception&) {
      throw ConfigError(fmt::format("--group: expected ranks like 0,1,2 or 0-7, got '{}'", item));
    }
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  for (hw::Rank r : out)
    if (r < 0 || r >= num_gpus) throw ConfigError(fmt::format("--group: rank {} is outside 0..{}", r, num_gpus - 1));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"strata: simulator-first discovery of ML-system optimizations for hierarchical GPU systems"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "strata 0.1.0");

  // strata hw ...
  auto* hw_cmd = app.add_subcommand("hw", "Inspect hardware systems (configs/hw/*.yaml) and the built-in catalogues");
  hw_cmd->require_subcommand(1);
  std::string hw_file;
  int hw_nodes = 0;
  auto* hw_show = hw_cmd->add_subcommand("show", "Print a system's hierarchy view and physical graph (wires, routes)");
  hw_show->add_option("system", hw_file, "System YAML file, e.g. configs/hw/dgx-h100.yaml")->required();
  hw_show->add_option("--nodes", hw_nodes, "Turn the node preset into an N-node cluster (overrides 'nodes:')")->check(CLI::PositiveNumber);
  auto* hw_list = hw_cmd->add_subcommand("list", "List the GPU models and link kinds a system file can name");

  // strata sim ...
  auto* sim_cmd = app.add_subcommand("sim", "Simulate on the discrete-event simulator");
  sim_cmd->require_subcommand(1);
  auto* coll = sim_cmd->add_subcommand(
      "collective", "Simulate a collective over a size sweep and print an nccl-tests style table (size, count, "
                    "type, time, algbw, busbw)");
  std::string c_hw, c_op = "allreduce", c_algo = "auto", c_proto = "auto", c_sizes = "8B:8GiB", c_dtype = "fp32",
              c_group, c_trace;
  int c_nodes = 0, c_channels = 0;
  coll->add_option("--hw", c_hw, "System YAML file")->required();
  coll->add_option("--nodes", c_nodes, "Number of nodes (overrides the file)")->check(CLI::PositiveNumber);
  coll->add_option("--op", c_op, std::string("Collective: ") + std::string(sim::kOpNames))->capture_default_str();
  coll->add_option("--algo", c_algo, "Algorithm: auto (NCCL-like choice) or one of: " +
                                         sim::AlgorithmRegistry::instance().names())->capture_default_str();
  coll->add_option("--protocol", c_proto, "Protocol: auto, simple, ll, ll128")->capture_default_str();
  coll->add_option("--sizes", c_sizes, "Sizes MIN:MAX[:FACTOR] with units (nccl-tests -b/-e/-f), e.g. 8B:8GiB")->capture_default_str();
  coll->add_option("--dtype", c_dtype, "Element type for the count column: fp64, fp32, fp16, bf16, fp8")->capture_default_str();
  coll->add_option("--channels", c_channels, "Parallel rings/trees (0 = one per NIC across nodes)")->check(CLI::NonNegativeNumber);
  coll->add_option("--group", c_group, "Participating GPUs, e.g. 0-7 or 0,8,16 (default: all)");
  coll->add_option("--trace", c_trace, "Write a Chrome/Perfetto trace of the largest size to this JSON file");
  auto* algos = sim_cmd->add_subcommand("algorithms", "List the registered collective algorithms");

  // strata run ...
  auto* run_cmd = app.add_subcommand("run", "Run a YAML-configured experiment; results go to results/<experiment>/");
  std::string run_file, run_out = "results";
  bool no_plots = false;
  run_cmd->add_option("experiment", run_file, "Experiment YAML, e.g. configs/experiments/quickstart.yaml")->required();
  run_cmd->add_option("--output", run_out, "Root folder for results")->capture_default_str();
  run_cmd->add_flag("--no-plots", no_plots, "Skip the matplotlib figures");

  CLI11_PARSE(app, argc, argv);

  try {
    if (hw_show->parsed()) {
      const auto topo = hw::load_system(hw_file, hw::LoadOptions{hw_nodes > 0 ? std::optional<int>(hw_nodes) : std::nullopt});
      show_system(topo);
    } else if (hw_list->parsed()) {
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
    } else if (algos->parsed()) {
      for (const auto* a : sim::AlgorithmRegistry::instance().all())
        std::cout << fmt::format("  {:<14} {}\n", a->name(), a->description());
    } else if (coll->parsed()) {
      const auto topo = hw::load_system(c_hw, hw::LoadOptions{c_nodes > 0 ? std::optional<int>(c_nodes) : std::nullopt});
      experiments::SweepConfig cfg;
      auto op = sim::parse_op(c_op);
      if (!op) throw ConfigError(fmt::format("--op: unknown collective '{}' (expected one of: {})", c_op, sim::kOpNames));
      cfg.op = *op;
      if (c_algo != "auto" && !sim::AlgorithmRegistry::instance().find(c_algo))
        throw ConfigError(fmt::format("--algo: unknown algorithm '{}' (expected auto or one of: {})", c_algo,
                                      sim::AlgorithmRegistry::instance().names()));
      cfg.algorithm = c_algo;
      if (c_proto != "auto") {
        auto p = sim::parse_protocol(c_proto);
        if (!p) throw ConfigError(fmt::format("--protocol: expected auto, simple, ll or ll128, got '{}'", c_proto));
        cfg.protocol = *p;
      }
      auto dt = hw::parse_dtype(c_dtype);
      if (!dt) throw ConfigError(fmt::format("--dtype: expected fp64, fp32, tf32, fp16, bf16 or fp8, got '{}'", c_dtype));
      cfg.dtype = *dt;
      cfg.sizes = experiments::parse_size_range(c_sizes, "--sizes");
      cfg.channels = c_channels;
      cfg.group = parse_group(c_group, topo.num_gpus());
      std::cout << experiments::table_header(topo, cfg) << std::flush;
      const auto rows = experiments::run_sweep(topo, cfg, [&](const experiments::SweepRow& r) {
        std::cout << experiments::table_row(cfg, r) << std::flush;
      });
      std::cout << experiments::table_footer(rows);
      if (!c_trace.empty()) {
        sim::CollectiveRequest req;
        req.spec.op = cfg.op;
        req.spec.group = cfg.group;
        req.spec.bytes = cfg.sizes.back();
        req.spec.channels = cfg.channels;
        req.algorithm = rows.back().algorithm;
        req.spec.protocol = rows.back().protocol;
        req.auto_protocol = false;
        req.record_timeline = true;
        const auto result = sim::run_collective(topo, req);
        sim::write_file_atomically(c_trace, sim::chrome_trace_json(topo, result.graph, result.sim));
        std::cout << fmt::format("# trace of {} written to {} (open in https://ui.perfetto.dev)\n",
                                 units::format_bytes(req.spec.bytes), c_trace);
        std::cout << "# busiest links:\n";
        const auto usage = result.sim.link_usage(topo);
        for (std::size_t i = 0; i < std::min<std::size_t>(5, usage.size()); ++i) {
          const auto& l = topo.link(usage[i].link);
          std::cout << fmt::format("#   {} -> {}: {:.1f}% utilized, {}\n", topo.vertices()[static_cast<std::size_t>(l.src)].name,
                                   topo.vertices()[static_cast<std::size_t>(l.dst)].name, usage[i].utilization * 100,
                                   units::format_bytes(usage[i].bytes));
        }
      }
    } else if (run_cmd->parsed()) {
      const auto dir = experiments::run_experiment(run_file, experiments::RunOptions{run_out, !no_plots});
      std::cout << fmt::format("results written to {}/ (summary.md, collectives.csv, busbw.png)\n", dir);
    }
  } catch (const ConfigError& e) {
    std::cerr << "strata: error: " << e.what() << "\n";
    return 2;
  } catch (const std::invalid_argument& e) {
    std::cerr << "strata: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "strata: internal error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
