// strata validate: measured ground truth for the simulator on an emulated cluster (validate/,
// docs/validate.md).
//   cluster up|down   network namespaces + tc-shaped ports + the cluster's system file
//   calibrate         exchange microbenchmarks per link class, written into the system file
//   collectives       one collective over a size range, measured beside simulated
//   synth             P2 placements x reduction programs, measured, with the simulator's ranking statistics
//   profile           a model's operators timed on the CPU with oneDNN (cli_validate_profile.cc)
//   graphs            the graph optimizers' candidates replayed and ranked (cli_validate_graphs.cc)
//   host              this CPU's peak FLOP/s, bandwidth, overhead as a system YAML (cli_validate_host.cc)
//   calibrate-cost    the cost model's efficiencies fitted on CPU microbenchmarks (cli_validate_cost.cc)
//   ring-slices       NCCL's ring handoffs on one node's GPUs, for node.fabric.nccl_ring
//   net-slices        NCCL's ring handoffs between two nodes, for node.nics.nccl_ring
//   ring-ll128        NCCL's LL128 ring steps on one node's GPUs, for node.fabric.nccl_ring_ll128
//   net-ll128         NCCL's LL128 ring steps between two nodes, for node.nics.nccl_ring_ll128
//   net-chunks        NCCL's tree chunks between two nodes, for node.nics.nccl_tree
//   net-chunks-ll128  NCCL's LL128 tree chunks between two nodes, for node.nics.nccl_tree_ll128
//   nvls-steps        NCCL's NVLS steps on one node's GPUs, for node.fabric.nccl_nvls
//                     (all seven cli_validate_nccl_steps.cc)
//   nccl-tests        a measured nccl-tests table beside strata's prediction (cli_validate_nccl_tests.cc)
#include <algorithm>
#include <cctype>
#include <iostream>
#include <optional>

#include <fmt/format.h>

#include "experiments/cli.h"
#include "experiments/cli_options.h"
#include "hw/system_loader.h"
#include "hw/units.h"
#include "sim/collective.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/interrupt.h"
#include "validate/calibrate.h"
#include "validate/cluster.h"
#include "validate/collectives.h"
#include "validate/measure_backend.h"
#include "validate/synth_check.h"

namespace strata::cli {
namespace {

namespace v = validate;

double parse_bandwidth_option(const std::string& text, const std::string& option) {
  const auto b = units::parse_bandwidth(text);
  if (!b || *b <= 0)
    throw util::InputError(fmt::format(
        "{} '{}': expected a bandwidth with a unit, e.g. 1Gbit/s, 200Mb/s, 25MB/s", option, text));
  return *b;
}

double parse_duration_option(const std::string& text, const std::string& option) {
  const auto d = units::parse_duration(text);
  if (!d || *d < 0)
    throw util::InputError(
        fmt::format("{} '{}': expected a duration with a unit, e.g. 0us, 100us, 1ms", option, text));
  return *d;
}

struct ClusterOptions {
  std::string name = "strata", dir, bandwidth = "1Gbit/s", latency = "0us", subnet = "10.213.0";
  int nodes = 2, ranks_per_node = 1, nics_per_node = 1;
};

void add_cluster_commands(CLI::App& validate) {
  auto* cluster = validate.add_subcommand("cluster", "Create or remove an emulated cluster (needs root)");
  cluster->require_subcommand(1);
  auto o = std::make_shared<ClusterOptions>();

  auto* up = cluster->add_subcommand(
      "up",
      "Create the cluster: one network namespace per node with a tc-shaped veth port to a bridge; writes "
      "the\n"
      "system file <dir>/<name>.yaml that --cluster takes (configured link figures until `calibrate`)");
  up->add_option("--name", o->name, "Prefix of everything the cluster creates ([a-z][a-z0-9]{0,7})")
      ->capture_default_str();
  up->add_option("--dir", o->dir, "State folder (default /run/strata/<name>)");
  add_int_option(*up, "--nodes", o->nodes, {1, 16}, "Emulated nodes");
  add_int_option(*up, "--ranks-per-node", o->ranks_per_node, {1, 8}, "MPI ranks per node");
  add_int_option(*up, "--nic-per-node", o->nics_per_node, {1, 8},
                 "Ports per node (at most --ranks-per-node); rank l of R uses port floor(l K / R) only");
  up->add_option("--inter-bandwidth", o->bandwidth,
                 "Line rate of each node's port, per direction (e.g. 1Gbit/s)")
      ->capture_default_str();
  up->add_option("--inter-latency", o->latency,
                 "Delay added one way on each node's egress by tc netem (kernels without netem: only 0)")
      ->capture_default_str();
  up->add_option("--subnet", o->subnet, "First three octets of the ports' /24")->capture_default_str();
  up->callback([o] {
    v::ClusterSpec s;
    s.name = o->name;
    s.nodes = o->nodes;
    s.ranks_per_node = o->ranks_per_node;
    s.nics_per_node = o->nics_per_node;
    s.inter_bandwidth = parse_bandwidth_option(o->bandwidth, "--inter-bandwidth");
    s.inter_latency = parse_duration_option(o->latency, "--inter-latency");
    s.subnet = o->subnet;
    s.dir = o->dir.empty() ? v::default_state_dir(s.name) : std::filesystem::path(o->dir);
    v::cluster_up(s);
    std::cout << fmt::format(
        "cluster '{}' is up: {} nodes x {} ranks, ports shaped to {}{}\nsystem file: {}\nnext: strata "
        "validate "
        "calibrate --cluster {}\n",
        s.name, s.nodes, s.ranks_per_node, v::format_rate(s.inter_bandwidth),
        s.inter_latency > 0 ? fmt::format(" + {} one way", units::format_duration(s.inter_latency)) : "",
        s.system_file().string(), s.system_file().string());
  });

  auto* down = cluster->add_subcommand("down", "Remove the cluster: namespaces, ports, bridge, state folder");
  down->add_option("--name", o->name, "Prefix the cluster was created with")->capture_default_str();
  down->add_option("--dir", o->dir, "State folder (default /run/strata/<name>)");
  down->callback([o] {
    v::check_can_emulate();
    const auto removed = v::cluster_down(
        o->name, o->dir.empty() ? v::default_state_dir(o->name) : std::filesystem::path(o->dir));
    if (removed.empty()) std::cout << fmt::format("nothing of cluster '{}' was left\n", o->name);
    for (const auto& r : removed) std::cout << "removed " << r << "\n";
  });
}

struct MeasureOptions {
  std::string cluster, op = "allreduce", sizes = "64KiB:4MiB:4", ranks, output;
  int warmup = 1, iterations = 5;
  // validate collectives: the measuring library (validate/measure_backend.h) and, for a GPU backend, where
  // its ranks run and the system that simulates them.
  std::string backend = "mpi", hosts, hw, algo;
  int np = 0;
  std::vector<std::string> env;  // NAME=VALUE for every rank (GPU backends), e.g. NCCL's settings
};

// --env NAME=VALUE items: a shell variable name, '=', any value.
std::vector<std::pair<std::string, std::string>> parse_env_options(const std::vector<std::string>& items) {
  std::vector<std::pair<std::string, std::string>> env;
  for (const auto& item : items) {
    const auto eq = item.find('=');
    const std::string name = item.substr(0, eq);
    const bool valid =
        eq != std::string::npos && !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0])) &&
        std::all_of(name.begin(), name.end(),
                    [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
    if (!valid)
      throw util::InputError(fmt::format(
          "--env '{}': expected NAME=VALUE with NAME of letters, digits and _ (e.g. NCCL_ALGO=Ring)", item));
    env.emplace_back(name, item.substr(eq + 1));
  }
  return env;
}

void add_calibrate_command(CLI::App& validate) {
  auto o = std::make_shared<MeasureOptions>();
  o->iterations = 10;
  auto* cmd = validate.add_subcommand(
      "calibrate",
      "Measure each link class of the cluster with MPI_Sendrecv exchanges (8 B .. 8 MiB) and write the "
      "fitted\n"
      "latency and bandwidth into its system file. Collective times are never used for calibration");
  cmd->add_option("--cluster", o->cluster, "The system file written by `cluster up`")->required();
  add_int_option(*cmd, "--warmup", o->warmup, {0, 100}, "Untimed runs per size");
  add_int_option(*cmd, "--iterations", o->iterations, {1, 1000}, "Timed runs per size");
  cmd->callback([o] {
    const v::ClusterSpec spec = v::load_cluster(o->cluster);
    std::cerr << "calibrating (MPI_Sendrecv, " << v::calibration_sizes().size()
              << " sizes per link class)...\n";
    const v::Calibration c = v::calibrate(spec, o->warmup, o->iterations);
    const auto show = [](const char* what, const std::optional<v::LinkCalibration>& m) {
      if (!m) return;
      std::cout << fmt::format("{}: {} one way, {} per direction (worst spread {:.1f}%)\n", what,
                               units::format_duration(m->figures.latency),
                               v::format_rate(m->figures.bandwidth), 100 * m->worst_spread);
      for (const auto& s : m->samples)
        std::cout << fmt::format("  {:>10}  {:>12}\n", units::format_bytes(s.bytes),
                                 units::format_duration(s.seconds));
    };
    show("shared memory (ranks of one node)", c.intra);
    show("network (ranks of two nodes)", c.inter);
    v::write_calibrated_system(spec, c);
    std::cout << "written: " << spec.system_file().string() << "\n";
  });
}

// The table and mean errors of `validate collectives`.
// The options that choose where `validate collectives` and `validate synth` measure: the library
// (validate/measure_backend.h), the emulated cluster (mpi) or the GPU ranks and the system that simulates
// them (nccl). `nccl_note` ends the --backend help.
template <class Options>
void add_backend_options(CLI::App& cmd, Options& o, std::string_view nccl_note) {
  cmd.add_option(
         "--backend", o.backend,
         fmt::format("Measuring library: {} (mpi: Open MPI on --cluster; nccl: NCCL, one rank per GPU, "
                     "--np ranks under mpirun{})",
                     v::measure_backend_names(), nccl_note))
      ->capture_default_str();
  cmd.add_option("--cluster", o.cluster, "The system file written by `cluster up` (after `calibrate`; mpi)");
  add_int_option(cmd, "--np", o.np, {1, 1 << 20}, "Ranks, one per GPU (nccl)", false);
  cmd.add_option("--hosts", o.hosts, "mpirun --host list, e.g. node1:8,node2:8 (nccl; default this machine)");
  cmd.add_option("--hw", o.hw, "System YAML that simulates the ranks, rank r on its GPU r (nccl)");
  cmd.add_option("--algo", o.algo, "Simulated collective algorithm (nccl; default ring)");
}

void print_collectives(const MeasureOptions& o, sim::CollectiveOp op, int n, const std::string& title,
                       const std::vector<v::CollectiveCheck>& rows) {
  std::cout << title;
  std::cout << v::collective_table(op, n, rows);
  double mean = 0, mean_large = 0;
  int large = 0;
  std::int64_t wrong = 0;
  for (const auto& r : rows) {
    mean += std::abs(r.error());
    if (r.bytes >= (1 << 20)) {
      mean_large += std::abs(r.error());
      ++large;
    }
    wrong += std::max<std::int64_t>(r.wrong, 0);
  }
  std::cout << fmt::format("# mean |error| {:.1f}% over {} sizes",
                           100 * mean / static_cast<double>(rows.size()), rows.size());
  if (large > 0)
    std::cout << fmt::format("; {:.1f}% over the {} sizes >= 1 MiB", 100 * mean_large / large, large);
  std::cout << "\n";
  if (!o.output.empty()) util::write_file_atomically(o.output, v::collective_csv(op, n, rows));
  if (wrong > 0)
    throw std::runtime_error(
        fmt::format("{} elements received wrong (#wrong above): the measured library "
                    "computed a wrong result",
                    wrong));
}

// One collective over a size range, measured with `o.backend` and simulated beside it.
void run_collectives(const MeasureOptions& o) {
  const auto& backend = v::find_measure_backend(o.backend);
  if (!o.output.empty()) util::check_output_path(o.output);
  v::CollectiveCheckRequest req;
  const auto op = sim::parse_op(o.op);
  if (!op) throw util::InputError(fmt::format("--op '{}': expected one of {}", o.op, sim::kOpNames));
  req.op = *op;
  for (auto b : util::parse_size_range(o.sizes, "--sizes")) req.sizes.push_back(static_cast<std::int64_t>(b));
  req.warmup = o.warmup;
  req.iterations = o.iterations;
  const auto env = parse_env_options(o.env);
  if (backend.emulated_cluster) {
    if (o.cluster.empty()) throw util::InputError(fmt::format("--backend {} needs --cluster", backend.name));
    if (!env.empty())
      throw util::InputError(
          fmt::format("--env sets the ranks' environment under mpirun on GPU hosts; "
                      "--backend {} runs on the emulated cluster",
                      backend.name));
    const v::ClusterSpec spec = v::load_cluster(o.cluster);
    const hw::Topology topo = hw::load_system(spec.system_file().string());
    if (!o.ranks.empty())
      for (auto r : parse_rank_list(o.ranks, spec.ranks(), "--ranks")) req.group.push_back(r);
    const int n = req.group.empty() ? spec.ranks() : static_cast<int>(req.group.size());
    std::cerr << fmt::format("measuring {} on {} ranks at {} sizes...\n", sim::op_name(req.op), n,
                             req.sizes.size());
    const auto rows = v::check_collectives(spec, topo, req);
    print_collectives(
        o, req.op, n,
        fmt::format("# {} on {} of {} ranks of cluster '{}'; measured: Open MPI (coll/tuned, forced "
                    "schedules); simulated: algorithm openmpi on {}\n",
                    sim::op_name(req.op), n, spec.ranks(), spec.name, spec.system_file().string()),
        rows);
    return;
  }
  // A GPU backend: ranks started by mpirun on this machine or --hosts, simulated on --hw.
  if (o.hw.empty() || o.np < 1)
    throw util::InputError(
        fmt::format("--backend {} needs --np (ranks, one per GPU) and --hw (the system that "
                    "simulates them, rank r on its GPU r)",
                    backend.name));
  const hw::Topology topo = hw::load_system(o.hw);
  if (o.np > topo.num_gpus())
    throw util::InputError(fmt::format("--np {}: the system {} has {} GPUs", o.np, o.hw, topo.num_gpus()));
  const std::string algorithm = o.algo.empty() ? std::string(backend.simulated_algorithm) : o.algo;
  if (!sim::AlgorithmRegistry::instance().find(algorithm))
    throw util::InputError(fmt::format("--algo '{}': expected one of {}", algorithm,
                                       sim::AlgorithmRegistry::instance().names()));
  if (!o.ranks.empty())
    for (auto r : parse_rank_list(o.ranks, o.np, "--ranks")) req.group.push_back(r);
  const int n = req.group.empty() ? o.np : static_cast<int>(req.group.size());
  const v::HostLaunch launch{o.np, o.hosts, 900, env};
  v::require_backend(backend, launch);
  std::cerr << fmt::format("measuring {} with {} on {} ranks at {} sizes...\n", sim::op_name(req.op),
                           backend.name, n, req.sizes.size());
  std::string settings;
  for (const auto& [name, value] : env) settings += fmt::format(" {}={}", name, value);
  const auto rows = v::check_collectives(o.np, topo, req, algorithm, [&](const v::MeasurementPlan& plan) {
    return v::measure_on_hosts(backend, launch, plan);
  });
  print_collectives(o, req.op, n,
                    fmt::format("# {} on {} of {} ranks ({}); measured: {}{}, out of place, results checked "
                                "(#wrong); simulated: algorithm {} on {}\n",
                                sim::op_name(req.op), n, o.np, o.hosts.empty() ? "this machine" : o.hosts,
                                backend.summary, settings.empty() ? "" : " with" + settings, algorithm, o.hw),
                    rows);
}

void add_collectives_command(CLI::App& validate) {
  auto o = std::make_shared<MeasureOptions>();
  auto* cmd = validate.add_subcommand("collectives",
                                      "Measure one collective over a size range (Open MPI on an emulated "
                                      "cluster, schedules forced to the ones\n"
                                      "strata models; or NCCL on GPUs with --backend nccl) and print it "
                                      "beside the simulated time in nccl-tests'\n"
                                      "columns, with the error per size");
  add_backend_options(*cmd, *o, "");
  cmd->add_option("--op", o->op, std::string("Collective: ") + std::string(sim::kOpNames))
      ->capture_default_str();
  cmd->add_option("--sizes", o->sizes, "MIN:MAX[:FACTOR] as nccl-tests' -b/-e/-f")->capture_default_str();
  cmd->add_option("--ranks", o->ranks, "MPI ranks of the group, root first (e.g. 0,2 or 0-3; default all)");
  add_int_option(*cmd, "--warmup", o->warmup, {0, 100}, "Untimed runs per size");
  add_int_option(*cmd, "--iterations", o->iterations, {1, 1000}, "Timed runs per size");
  cmd->add_option("-o,--output", o->output, "Also write the rows as CSV to this file");
  cmd->add_option("--env", o->env,
                  "NAME=VALUE for every rank (nccl; repeatable), e.g. NCCL_ALGO=Ring, NCCL_PROTO=Simple, "
                  "NCCL_MAX_NCHANNELS=1\n"
                  "for the microbenchmarks of docs/fidelity.md §6");
  cmd->callback([o] { run_collectives(*o); });
}

struct SynthOptions {
  std::string cluster, axes, reduce = "0", bytes = "1MiB", output, backend = "mpi", hosts, hw, algo;
  int np = 0;
  int max_size = 5, top = 10, sample = 10, warmup = 1, iterations = 5;
  double tolerance = 0.02;
  std::int64_t seed = 1;
};

// P2's placements x programs measured with `o.backend` and ranked against the simulator.
void run_synth(const SynthOptions& o) {
  const auto& backend = v::find_measure_backend(o.backend);
  if (!o.output.empty()) util::check_output_path(o.output);
  std::optional<v::ClusterSpec> spec;
  std::optional<hw::Topology> topo;
  int ranks = 0;
  if (backend.emulated_cluster) {
    if (o.cluster.empty()) throw util::InputError(fmt::format("--backend {} needs --cluster", backend.name));
    spec = v::load_cluster(o.cluster);
    topo = hw::load_system(spec->system_file().string());
    ranks = spec->ranks();
  } else {
    if (o.hw.empty() || o.np < 1)
      throw util::InputError(
          fmt::format("--backend {} needs --np (ranks, one per GPU) and --hw", backend.name));
    topo = hw::load_system(o.hw);
    if (o.np != topo->num_gpus())
      throw util::InputError(fmt::format("--np {}: P2's placements cover every GPU of --hw {}, which has {}",
                                         o.np, o.hw, topo->num_gpus()));
    ranks = o.np;
  }
  v::SynthCheckRequest req;
  req.tolerance = o.tolerance;
  for (auto a : util::parse_int_list(o.axes, {1, ranks}, "--axes", ','))
    req.axes.push_back(static_cast<int>(a));
  for (auto a :
       util::parse_int_list(o.reduce, {0, static_cast<std::int64_t>(req.axes.size()) - 1}, "--reduce", ','))
    req.reduce_axes.push_back(static_cast<int>(a));
  req.bytes = static_cast<double>(util::parse_size(o.bytes, "--bytes"));
  req.max_size = o.max_size;
  req.top = o.top;
  req.sample = o.sample;
  req.seed = static_cast<std::uint64_t>(o.seed);
  req.warmup = o.warmup;
  req.iterations = o.iterations;
  std::cerr << "synthesizing, simulating and measuring candidates...\n";
  v::SynthCheck check;
  if (spec) {
    check = v::check_synth(*spec, *topo, req);
    std::cout << fmt::format("# P2 synthesis on cluster '{}' ({} ranks): axes {}, reduce {}, {} per rank\n",
                             spec->name, ranks, o.axes, o.reduce, units::format_bytes(req.bytes));
  } else {
    const std::string algorithm = o.algo.empty() ? std::string(backend.simulated_algorithm) : o.algo;
    if (!sim::AlgorithmRegistry::instance().find(algorithm))
      throw util::InputError(fmt::format("--algo '{}': expected one of {}", algorithm,
                                         sim::AlgorithmRegistry::instance().names()));
    const v::HostLaunch launch{o.np, o.hosts, 900, {}};
    v::require_backend(backend, launch);
    check = v::check_synth(ranks, *topo, req, algorithm, [&](const v::MeasurementPlan& plan) {
      return v::measure_on_hosts(backend, launch, plan);
    });
    std::cout << fmt::format(
        "# P2 synthesis measured with {} on {} ranks ({}), simulated with {} on {}: axes {}, "
        "reduce {}, {} per rank\n",
        backend.name, ranks, o.hosts.empty() ? "this machine" : o.hosts, algorithm, o.hw, o.axes, o.reduce,
        units::format_bytes(req.bytes));
  }
  std::cout << v::synth_report(check);
  if (!o.output.empty()) util::write_file_atomically(o.output, v::synth_csv(check));
  std::int64_t wrong = 0;
  for (const auto& c : check.measured) wrong += std::max<std::int64_t>(c.wrong, 0);
  if (wrong > 0)
    throw std::runtime_error(
        fmt::format("{} elements received wrong in the correctness passes: the measured "
                    "library computed a wrong result",
                    wrong));
}

void add_validate_synth_command(CLI::App& validate) {
  auto o = std::make_shared<SynthOptions>();
  auto* cmd =
      validate.add_subcommand("synth",
                              "Measure P2's placements x reduction programs (as `strata synth` enumerates "
                              "them on the cluster's system\n"
                              "file, simulated with Open MPI's schedules) on the cluster and report how well "
                              "the simulator ranked them:\n"
                              "top-1/5/10 accuracy, Spearman, regret of its pick, error of its times");
  add_backend_options(*cmd, *o, ", one communicator per group by ncclCommSplit");
  cmd->add_option("--axes", o->axes, "Parallelism axis sizes, multiplying to the rank count, e.g. 2,2")
      ->required();
  cmd->add_option("--reduce", o->reduce, "Reduction axes (indices into --axes), e.g. 0 or 0,1")
      ->capture_default_str();
  cmd->add_option("--bytes", o->bytes, "Buffer each rank reduces")->capture_default_str();
  add_int_option(*cmd, "--max-size", o->max_size, {1, 8}, "Program size bound (instructions)");
  add_int_option(*cmd, "--top", o->top, {0, 1000}, "Measure the simulator's N fastest candidates ...");
  add_int_option(*cmd, "--sample", o->sample, {0, 1000}, "... and N others drawn at random (all when fewer)");
  add_int_option(*cmd, "--seed", o->seed, kSeedRange, "Seed of the random sample");
  add_int_option(*cmd, "--warmup", o->warmup, {0, 100}, "Untimed runs per candidate");
  add_int_option(*cmd, "--iterations", o->iterations, {1, 1000}, "Timed runs per candidate");
  add_real_option(*cmd, "--tolerance", o->tolerance, 0, 1,
                  "Top-k: candidates measured within this share of the best count as fastest (noise)");
  cmd->add_option("-o,--output", o->output, "Also write the candidates as CSV to this file");
  cmd->callback([o] { run_synth(*o); });
}

}  // namespace

void add_validate_profile_command(CLI::App& validate);         // cli_validate_profile.cc
void add_validate_graphs_command(CLI::App& validate);          // cli_validate_graphs.cc
void add_validate_calibrate_cost_command(CLI::App& validate);  // cli_validate_cost.cc
void add_validate_host_command(CLI::App& validate);            // cli_validate_host.cc
void add_validate_nccl_steps_commands(CLI::App& validate);     // cli_validate_nccl_steps.cc
void add_validate_nccl_tests_command(CLI::App& validate);      // cli_validate_nccl_tests.cc

void add_validate_commands(CLI::App& app) {
  auto* validate = app.add_subcommand(
      "validate",
      "Measure for real and compare with the simulator: emulated clusters (network namespaces + tc), MPI\n"
      "collectives and reduction programs, calibration from microbenchmarks (docs/validate.md)");
  validate->require_subcommand(1);
  add_cluster_commands(*validate);
  add_calibrate_command(*validate);
  add_collectives_command(*validate);
  add_validate_synth_command(*validate);
  add_validate_profile_command(*validate);
  add_validate_graphs_command(*validate);
  add_validate_calibrate_cost_command(*validate);
  add_validate_host_command(*validate);
  add_validate_nccl_steps_commands(*validate);
  add_validate_nccl_tests_command(*validate);
}

}  // namespace strata::cli
