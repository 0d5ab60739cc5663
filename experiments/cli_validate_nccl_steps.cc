// strata validate ring-slices | net-slices | ring-ll128 | net-ll128 | tree-chunks | net-chunks |
// net-chunks-ll128 | nvls-steps: NCCL on one channel, per size of the unit it moves per step
// (validate/nccl_steps.h): the time per ring slice handoff on one node's GPUs (node.fabric.nccl_ring) or
// between two nodes (node.nics.nccl_ring), the same per LL128 step (node.fabric.nccl_ring_ll128,
// node.nics.nccl_ring_ll128), per tree chunk through one node's chain (node.fabric.nccl_tree) or between
// two nodes (node.nics.nccl_tree, node.nics.nccl_tree_ll128), each with NCCL's own channel count, or per NVLS
// step (node.fabric.nccl_nvls), that the simulator charges where a system file gives them
// (docs/fidelity.md §6.3, §6.4, §6.6). Each writes a copy of --hw with its table.
#include <iostream>
#include <regex>
#include <utility>

#include <fmt/format.h>

#include "experiments/cli.h"
#include "experiments/cli_options.h"
#include "hw/system_loader.h"
#include "hw/units.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/file.h"
#include "util/parse.h"
#include "validate/nccl_steps.h"

namespace strata::cli {
namespace {

// One microbenchmark: the table it measures (its command, place and keys: hw::nccl_tables()), its options,
// and how its runs are built.
struct UnitBenchmark {
  hw::NcclTableId table;
  std::string_view unit, sizes, count;  // "slice", "slices", "loops": the unit and the option names
  std::string_view default_sizes, default_counts;
  validate::UnitRun (*run)(int ranks, double unit_bytes, std::span<const int> counts, int warmup,
                           int iterations);
};

struct UnitOptions {
  std::string hw, output, sizes, counts, hosts;
  int np = 0, warmup = 2, iterations = 10;
};

std::vector<int> parse_counts(const std::string& text, std::string_view option) {
  std::vector<int> counts;
  for (auto c : util::parse_int_list(text, {1, 1 << 20}, option)) {
    if (!counts.empty() && c <= counts.back())
      throw util::InputError(fmt::format("{} '{}': expected increasing counts", option, text));
    counts.push_back(static_cast<int>(c));
  }
  if (counts.size() < 2) throw util::InputError(fmt::format("{}: expected at least two counts", option));
  return counts;
}

// --hosts A,B: two different host names as mpirun takes them.
std::pair<std::string, std::string> parse_two_hosts(const std::string& text) {
  static const std::regex host(R"([A-Za-z0-9][A-Za-z0-9._-]*)");
  const auto comma = text.find(',');
  const std::string a = text.substr(0, comma), b = comma == std::string::npos ? "" : text.substr(comma + 1);
  if (comma == std::string::npos || !std::regex_match(a, host) || !std::regex_match(b, host) || a == b)
    throw util::InputError(
        fmt::format("--hosts '{}': expected two different host names, e.g. node1,node2 (letters, digits, "
                    "'.', '_', '-'; no slot counts: the command sets them)",
                    text));
  return {a, b};
}

// Where the ranks run: one per GPU of this node, or (across nodes) one on each of two hosts for the
// handoffs and every GPU of both for NCCL's channel count.
struct UnitLaunches {
  validate::HostLaunch units, channels;
  std::string where;
};

UnitLaunches unit_launches(const hw::NcclTableInfo& table, const UnitOptions& o, const hw::Topology& topo) {
  const int g = topo.gpus_per_node();
  if (table.across_nodes) {
    if (topo.nics_per_node() == 0)
      throw util::InputError(
          fmt::format("--hw {}: the node has no NICs (node.nics); the table goes there", o.hw));
    const auto [a, c] = parse_two_hosts(o.hosts);
    return {{2, fmt::format("{}:1,{}:1", a, c), 900, {}},
            {2 * g, fmt::format("{}:{},{}:{}", a, g, c, g), 900, {}},
            fmt::format("one GPU on each of {} and {}", a, c)};
  }
  // The table describes the node's whole GPU set, as the simulator applies it.
  if (o.np != g)
    throw util::InputError(
        fmt::format("--np {}: expected {}, every GPU of a node of {} (describe this machine "
                    "in --hw)",
                    o.np, g, o.hw));
  const validate::HostLaunch here{o.np, "", 900, {}};
  return {here, here, fmt::format("{} GPUs of this machine", o.np)};
}

void run_units(const UnitBenchmark& b, const UnitOptions& o) {
  const auto& table = hw::nccl_table_info(b.table);
  util::check_output_path(o.output);
  const hw::Topology topo = hw::load_system(o.hw);
  const auto launches = unit_launches(table, o, topo);
  const int ranks = launches.units.ranks;
  const std::string size_option = fmt::format("--{}", b.sizes), count_option = fmt::format("--{}", b.count);
  const auto counts = parse_counts(o.counts, count_option);
  std::vector<validate::UnitRun> runs;
  for (auto bytes : util::parse_size_range(o.sizes, size_option)) {
    try {
      runs.push_back(b.run(ranks, static_cast<double>(bytes), counts, o.warmup, o.iterations));
    } catch (const std::invalid_argument& e) {
      throw util::InputError(fmt::format("{} / {}: {}", size_option, count_option, e.what()));
    }
  }
  const auto& backend = validate::find_measure_backend("nccl");
  if (const auto why = validate::unavailable_for(backend, launches.units); !why.empty())
    throw util::InputError(fmt::format("validate {} runs NCCL on {}: {}", table.command,
                                       table.across_nodes ? "the hosts' GPUs" : "this machine's GPUs", why));
  std::cerr << fmt::format(
      "measuring NCCL on {}, one channel: {} {} sizes x {} {}, {} warm-up + {} timed runs each\n",
      launches.where, runs.size(), b.unit, counts.size(), b.count, o.warmup, o.iterations);
  const auto progress = [](const std::string& what) { std::cerr << what << "\n"; };
  const auto m = validate::measure_units(backend, launches.units, runs, progress);
  hw::NcclMeasured measured{0, m.table()};
  if (table.channels) {
    progress(fmt::format("NCCL's own channel count on {} ranks (one all-reduce with NCCL_DEBUG=INFO)",
                         launches.channels.ranks));
    measured.channels = validate::nccl_default_channels(backend, launches.channels);
    std::cout << fmt::format("# validate {}, one channel, {} ({}); NCCL's own channels on {} ranks: {}\n",
                             table.command, launches.where, m.library, launches.channels.ranks,
                             measured.channels);
  } else {
    std::cout << fmt::format("# validate {}, one channel, {} ({})\n", table.command, launches.where,
                             m.library);
  }
  std::cout << fmt::format("# {:>10} {:>8} {:>12}  {:>12} {:>12} {:>9} {:>8}\n", b.unit, b.count, "median",
                           fmt::format("per {}", table.unit), "intercept", "residual", "spread");
  for (const auto& p : m.points)
    for (std::size_t i = 0; i < p.counts.size(); ++i) {
      const bool first = i == 0;
      std::cout << fmt::format("  {:>10} {:>8} {:>12}  {:>12} {:>12} {:>8.1f}% {:>7.1f}%\n",
                               units::format_bytes(p.unit_bytes), counts[i],
                               units::format_duration(p.median_seconds[i]),
                               first ? units::format_duration(p.fit.per_unit) : "",
                               first ? units::format_duration(p.fit.intercept) : "",
                               first ? 100 * p.fit.worst_residual : 0.0, first ? 100 * p.worst_spread : 0.0);
    }
  const std::string yaml = validate::system_with_nccl_table(
      util::read_file<util::InputError>(o.hw, "a system YAML file"), b.table, measured);
  util::write_file_atomically(o.output, yaml);
  // The file must load as any system YAML does; a failure here is a bug in system_with_nccl_table.
  hw::load_system(o.output);
  std::cout << fmt::format("written: {} ({}: {} {} sizes)\n", o.output, table.path, m.points.size(), b.unit);
}

void add_unit_command(CLI::App& validate, const UnitBenchmark& b, const std::string& help,
                      const std::string& sizes_help, const std::string& counts_help) {
  auto o = std::make_shared<UnitOptions>();
  o->sizes = b.default_sizes;
  o->counts = b.default_counts;
  const auto& table = hw::nccl_table_info(b.table);
  auto* cmd = validate.add_subcommand(std::string(table.command), help);
  if (table.across_nodes) {
    cmd->add_option("--hw", o->hw, "System YAML of the hosts' nodes (the copy gets the table)")->required();
    cmd->add_option("--hosts", o->hosts,
                    "Two hosts A,B (mpirun names): one rank on each for the handoffs, every GPU of both "
                    "(node.gpus of --hw) for NCCL's channel count")
        ->required();
  } else {
    cmd->add_option("--hw", o->hw, "System YAML of this node (the copy gets the table)")->required();
    add_int_option(*cmd, "--np", o->np, {2, 1024}, "Ranks, one per GPU: every GPU of the node --hw describes",
                   false)
        ->required();
  }
  cmd->add_option(fmt::format("--{}", b.sizes), o->sizes, sizes_help)->capture_default_str();
  cmd->add_option(fmt::format("--{}", b.count), o->counts, counts_help)->capture_default_str();
  add_int_option(*cmd, "--warmup", o->warmup, {0, 100}, "Untimed runs per message size");
  add_int_option(*cmd, "--iterations", o->iterations, {1, 1000}, "Timed runs per message size (median)");
  cmd->add_option("--output", o->output, fmt::format("System YAML to write: --hw with {}", table.path))
      ->required();
  cmd->callback([o, b] { run_units(b, *o); });
}

}  // namespace

void add_validate_nccl_steps_commands(CLI::App& validate) {
  // ring-slices and net-slices run the same ring (validate::ring_slice_run), on one node or between two.
  const std::string slice_sizes_help =
      "Slice sizes MIN:MAX[:FACTOR], multiples of 4 KiB up to 64 MiB (NCCL's slices are 32 KiB to 1 MiB)";
  add_unit_command(
      validate,
      {hw::NcclTableId::kRing, "slice", "slices", "loops", "32KiB:2MiB:2", "2,4,8,16",
       validate::ring_slice_run},
      "Measure NCCL's ring on this machine's GPUs (one channel, Simple, NCCL_BUFFSIZE = 4 x slice): the "
      "time\n"
      "per slice handoff (slope of run time over handoffs) and NCCL's own channel count, written into a "
      "copy\n"
      "of --hw as node.fabric.nccl_ring for the simulator's rings (docs/fidelity.md §6.3). Needs the GPU\n"
      "build, strata-nccl-worker and 2+ GPUs",
      slice_sizes_help, "Whole loops per slice size (N chunks of 2 slices each), increasing");
  add_unit_command(
      validate,
      {hw::NcclTableId::kNetRing, "slice", "slices", "loops", "32KiB:1MiB:2", "2,4,8,16",
       validate::ring_slice_run},
      "Measure NCCL's ring between two hosts (one GPU on each, one channel, Simple, NCCL_BUFFSIZE = 4 x\n"
      "slice, so every handoff crosses the network and its proxy): the time per slice handoff, and NCCL's\n"
      "own ring channels over both hosts' GPUs, written into a copy of --hw as node.nics.nccl_ring for\n"
      "the simulator's rings across nodes (docs/fidelity.md §6.6). Needs the GPU build and\n"
      "strata-nccl-worker on both hosts, and mpirun that reaches them",
      slice_sizes_help, "Whole loops per slice size (2 chunks of 2 slices each), increasing");
  // ring-ll128 and net-ll128: the same ring under LL128 (validate::ring_ll128_run).
  const std::string step_sizes_help =
      "LL128 step payloads MIN:MAX[:FACTOR], multiples of 9600 B up to 576000 B (NCCL's step carries 576000 "
      "B)";
  add_unit_command(
      validate,
      {hw::NcclTableId::kRingLl128, "step", "steps", "loops", "144000:576000:2", "2,4,8,16",
       validate::ring_ll128_run},
      "Measure NCCL's ring under the LL128 protocol on this machine's GPUs (one channel,\n"
      "NCCL_LL128_BUFFSIZE = 8 steps): the time per step (slope of run time over steps) and NCCL's own\n"
      "channel count, written into a copy of --hw as node.fabric.nccl_ring_ll128 for the simulator's LL128\n"
      "rings (docs/fidelity.md §6.3). Needs the GPU build, strata-nccl-worker and 2+ GPUs on NVLink",
      step_sizes_help, "Whole loops per step size (N steps each), increasing");
  add_unit_command(
      validate,
      {hw::NcclTableId::kNetRingLl128, "step", "steps", "loops", "144000:576000:2", "2,4,8,16",
       validate::ring_ll128_run},
      "Measure NCCL's ring under the LL128 protocol between two hosts (one GPU on each, one channel,\n"
      "NCCL_LL128_BUFFSIZE = 8 steps, so every step crosses the network and its proxy): the time per step,\n"
      "and NCCL's own ring channels over both hosts' GPUs, written into a copy of --hw as\n"
      "node.nics.nccl_ring_ll128 for the simulator's LL128 rings across nodes (docs/fidelity.md §6.6).\n"
      "Needs the GPU build and strata-nccl-worker on both hosts, and mpirun that reaches them",
      step_sizes_help, "Whole loops per step size (2 steps each), increasing");
  // tree-chunks and net-chunks run the same one-channel tree (validate::tree_chunk_run), on one node or
  // between two.
  const std::string chunk_sizes_help =
      "Chunk sizes MIN:MAX[:FACTOR], multiples of 4 KiB up to 4 MiB (NCCL's tree chunk is 512 KiB";
  const std::string lengths_help =
      "Message lengths in chunks, per chunk size (the whole message on the one channel), at least 8, "
      "increasing";
  const auto tree_chunks = [](hw::NcclTableId table) {
    return UnitBenchmark{
        table, "chunk", "chunks", "lengths", "32KiB:512KiB:2", "16,32,64,128", validate::tree_chunk_run};
  };
  add_unit_command(
      validate, tree_chunks(hw::NcclTableId::kNetTree),
      "Measure NCCL's tree between two hosts (one GPU on each, one channel, Simple, NCCL_BUFFSIZE = 8 x\n"
      "chunk, so every chunk crosses the network up to the root and back down): the time per chunk, and\n"
      "NCCL's own channels over both hosts' GPUs, written into a copy of --hw as node.nics.nccl_tree for\n"
      "the simulator's trees and NVLS-Tree across nodes (docs/fidelity.md §6.6). Needs the GPU build and\n"
      "strata-nccl-worker on both hosts, and mpirun that reaches them",
      chunk_sizes_help + ", NVLS-Tree's 32 to 128 KiB)", lengths_help);
  add_unit_command(
      validate, tree_chunks(hw::NcclTableId::kTree),
      "Measure NCCL's tree on this machine's GPUs (one channel, Simple, NCCL_BUFFSIZE = 8 x chunk: one\n"
      "chain through every GPU of the node, up and back down): the time per chunk (slope of run time over\n"
      "chunks) and NCCL's own channel count, written into a copy of --hw as node.fabric.nccl_tree for the\n"
      "simulator's trees on one node (docs/fidelity.md §4.1, §6.6). Needs the GPU build, strata-nccl-worker\n"
      "and 2+ GPUs",
      chunk_sizes_help + ")", lengths_help);
  add_unit_command(
      validate,
      {hw::NcclTableId::kNetTreeLl128, "chunk", "chunks", "lengths", "144000:576000:2", "135,270,540,1080",
       validate::tree_ll128_chunk_run},
      "Measure NCCL's tree under the LL128 protocol between two hosts (one GPU on each, one channel,\n"
      "NCCL_LL128_BUFFSIZE = 8 chunks): the time per chunk, and NCCL's own channels over both hosts' GPUs,\n"
      "written into a copy of --hw as node.nics.nccl_tree_ll128 for the simulator's LL128 trees across\n"
      "nodes (docs/fidelity.md §6.6). Needs the GPU build and strata-nccl-worker on both hosts, and mpirun\n"
      "that reaches them",
      "LL128 chunk payloads MIN:MAX[:FACTOR], multiples of 9600 B up to 576000 B (NCCL's chunk carries "
      "576000 "
      "B at most)",
      "Message lengths in chunks, per chunk size, increasing: at least 135 above 128 KiB and 34 above 32 KiB "
      "(fewer and NCCL halves the chunk), at least 8");
  add_unit_command(
      validate,
      {hw::NcclTableId::kNvls, "chunk", "chunks", "steps", "16KiB:128KiB:2", "64,128,256,512",
       validate::nvls_step_run},
      "Measure NCCL's NVLS all-reduce on this machine's GPUs (one channel, NCCL_NVLS_CHUNKSIZE = chunk): "
      "the\n"
      "time per step (slope of run time over steps), written into a copy of --hw as node.fabric.nccl_nvls "
      "for\n"
      "the simulator's NVLS (docs/fidelity.md §6.4). Needs the GPU build, strata-nccl-worker and an "
      "NVSwitch\n"
      "that reduces (Hopper and later)",
      "Chunk sizes MIN:MAX[:FACTOR], multiples of 4 KiB up to 512 KiB (NCCL's are 16 to 128 KiB)",
      "Steps per chunk size (one chunk per GPU each), at least 64 (NCCL keeps the chunk), increasing");
}

}  // namespace strata::cli
