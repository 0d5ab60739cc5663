// strata sim collective|algorithms
#include <algorithm>
#include <iostream>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "experiments/cli.h"
#include "experiments/cli_options.h"
#include "experiments/collective_sweep.h"
#include "experiments/system_report.h"
#include "hw/config_error.h"
#include "hw/system_loader.h"
#include "hw/units.h"
#include "sim/collective_runner.h"
#include "sim/trace.h"
#include "util/atomic_file.h"
#include "util/parse.h"

namespace strata::cli {
namespace {

struct CollectiveOptions {
  std::string hw, op = "allreduce", algo = "auto", protocol = "auto", sizes = "8B:8GiB", dtype = "fp32",
                  group, trace, granularity = "flow";
  int nodes = 0, channels = 0;
  bool nccl_rating = false;
};

void run_collective_command(const CollectiveOptions& o) {
  if (!o.trace.empty()) util::check_output_path(o.trace);  // refuse a bad --trace before the sweep runs
  const auto topo = experiments::load_cluster(o.hw, o.nodes);
  const experiments::CollectiveQuery query{o.op,    o.algo,        o.protocol, o.sizes,
                                           o.dtype, o.granularity, o.group,    o.channels};
  auto cfg = experiments::sweep_config(topo, query);
  cfg.nccl_rating = o.nccl_rating;
  // The whole sweep runs before anything is printed, so an error never follows a partial table.
  const auto rows = experiments::run_sweep(topo, cfg);
  std::cout << experiments::table_header(topo, cfg);
  for (const auto& r : rows) std::cout << experiments::table_row(cfg, r);
  std::cout << experiments::table_footer(rows) << std::flush;
  if (o.trace.empty()) return;
  const auto usage = experiments::write_collective_trace(topo, cfg, rows.back(), o.trace);
  std::cout << fmt::format("# trace of {} written to {} (open in https://ui.perfetto.dev)\n",
                           units::format_bytes(rows.back().bytes), o.trace);
  std::cout << "# busiest links:\n";
  for (std::size_t i = 0; i < std::min<std::size_t>(5, usage.size()); ++i) {
    const auto& l = topo.link(usage[i].link);
    std::cout << fmt::format("#   {} -> {}: {:.1f}% utilized, {}\n",
                             topo.vertices()[static_cast<std::size_t>(l.src)].name,
                             topo.vertices()[static_cast<std::size_t>(l.dst)].name,
                             usage[i].utilization * 100, units::format_bytes(usage[i].bytes));
  }
}

}  // namespace

void add_sim_commands(CLI::App& app) {
  auto* sim_cmd = app.add_subcommand("sim", "Simulate on the discrete-event simulator");
  sim_cmd->require_subcommand(1);
  auto o = std::make_shared<CollectiveOptions>();
  auto* coll = sim_cmd->add_subcommand(
      "collective",
      "Simulate a collective over a size sweep and print an nccl-tests style table (size, count, "
      "type, time, algbw, busbw)");
  coll->add_option("--hw", o->hw, "System YAML file")->required();
  add_int_option(*coll, "--nodes", o->nodes, {1, hw::limits::kMaxNodes},
                 "Number of nodes (overrides the file)", false);
  coll->add_option("--op", o->op, std::string("Collective: ") + std::string(sim::kOpNames))
      ->capture_default_str();
  coll->add_option("--algo", o->algo,
                   "Algorithm: " + std::string(sim::kTunerChoicesHelp) +
                       ", or one of: " + sim::AlgorithmRegistry::instance().names())
      ->capture_default_str();
  coll->add_option("--protocol", o->protocol, "Protocol: auto, simple, ll, ll128")->capture_default_str();
  coll->add_option(
          "--sizes", o->sizes,
          "Sizes MIN:MAX[:FACTOR] or SIZE like nccl-tests -b/-e/-f, e.g. 8B:8GiB, 1048576:1073741824, "
          "1k:1M:4; each size is " +
              std::string(util::kSizeRule))
      ->capture_default_str();
  coll->add_option("--dtype", o->dtype, "Element type for the count column: fp64, fp32, fp16, bf16, fp8")
      ->capture_default_str();
  add_int_option(*coll, "--channels", o->channels, {0, sim::kMaxChannels},
                 fmt::format("Parallel rings/trees, at most {} as in NCCL (0 = one per NIC across nodes)",
                             sim::kMaxChannels));
  coll->add_option("--group", o->group, "Participating GPUs, e.g. 0-7 or 0,8,16 (default: all)");
  coll->add_option("--granularity", o->granularity,
                   "flow: each pipelined ring/tree/chain of a channel is one flow bundle (fast); step: every "
                   "per-rank step and chunk is its own transfer (detailed traces, small groups)")
      ->capture_default_str();
  coll->add_option("--trace", o->trace,
                   "Write a Chrome/Perfetto trace of the largest size to this JSON file");
  coll->add_flag("--nccl-rating", o->nccl_rating,
                 "Add a column nccl_time: NCCL 2.21's own predicted time (us) of the algorithm and protocol "
                 "that ran, by its tuner's cost model on NCCL's topology graphs as strata rebuilds them "
                 "(docs/fidelity.md §6.8); a rating to hold the simulation against, not a measurement; '-' "
                 "where NCCL does not rate the pair");
  coll->callback([o] { run_collective_command(*o); });
  auto* algos = sim_cmd->add_subcommand("algorithms", "List the registered collective algorithms");
  algos->callback([] {
    for (const auto* a : sim::AlgorithmRegistry::instance().all())
      std::cout << fmt::format("  {:<14} {}\n", a->name(), a->description());
  });
}

}  // namespace strata::cli
