// strata hw show|list
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "experiments/cli.h"
#include "experiments/cli_options.h"
#include "experiments/system_report.h"
#include "hw/config_error.h"
#include "hw/system_loader.h"
#include "hw/units.h"
#include "util/parse.h"

namespace strata::cli {

void add_hw_commands(CLI::App& app) {
  auto* hw_cmd =
      app.add_subcommand("hw", "Inspect hardware systems (configs/hw/*.yaml) and the built-in catalogues");
  hw_cmd->require_subcommand(1);
  struct Options {
    std::string file;
    int nodes = 0;
  };
  auto opt = std::make_shared<Options>();
  auto* show =
      hw_cmd->add_subcommand("show",
                             "Print a system's hierarchy view, physical graph (wires, routes), measured NCCL "
                             "tables and the topology graphs NCCL's search builds on it");
  show->add_option("system", opt->file, "System YAML file, e.g. configs/hw/dgx-h100.yaml")->required();
  add_int_option(*show, "--nodes", opt->nodes, {1, hw::limits::kMaxNodes},
                 "Turn the node preset into an N-node cluster (overrides 'nodes:')", false);
  show->callback(
      [opt] { std::cout << experiments::describe_system(experiments::load_cluster(opt->file, opt->nodes)); });
  auto* list = hw_cmd->add_subcommand("list", "List the GPU models and link kinds a system file can name");
  list->callback([] {
    std::cout << "GPU models:\n";
    for (const auto& g : hw::gpu_catalog())
      std::cout << fmt::format("  {:<16} {:<40} fp16/bf16 {:>7.1f} TFLOPS  HBM {:>8} {:>12}\n", g.name,
                               g.description, g.peak_flops(hw::DType::kBf16) / 1e12,
                               units::format_bytes(g.hbm_capacity), units::format_bandwidth(g.hbm_bandwidth));
    std::cout
        << "\nlink kinds (per direction; NCCL: NCCL's own rating of the link, which its tuner reads):\n";
    for (const auto& l : hw::link_catalog())
      std::cout << fmt::format("  {:<10} {:<55} line {:>10}  effective {:>10}  latency {:>9}  NCCL {:>10}\n",
                               l.name, l.description, units::format_bandwidth(l.bandwidth),
                               units::format_bandwidth(l.effective_bandwidth()),
                               units::format_duration(l.latency), units::format_bandwidth(l.nccl_rating));
  });
}

}  // namespace strata::cli
