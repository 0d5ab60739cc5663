#include "experiments/experiment.h"

#include <cstdlib>
#include <filesystem>
#include <iostream>

#include <fmt/format.h>

#include "experiments/collective_sweep.h"
#include "experiments/optimizer_compare.h"
#include "experiments/p2_reproduction.h"
#include "hw/system_loader.h"
#include "hw/units.h"
#include "hw/yaml_reader.h"
#include "sim/trace.h"
#include "util/path.h"

namespace strata::experiments {
namespace {

std::string resolve(const std::string& path, const std::string& experiment_file) {
  if (std::filesystem::exists(path)) return path;
  const auto beside = std::filesystem::path(experiment_file).parent_path() / path;
  if (std::filesystem::exists(beside)) return beside.string();
  return path;  // the loader reports the missing file
}

struct SystemRun {
  std::string label;
  std::string hw;
  std::optional<int> nodes;
};

}  // namespace

bool run_plot_script(const std::string& script, const std::vector<std::string>& args) {
  std::string cmd =
      fmt::format("/usr/bin/python3 '{}'", util::find_data_file("experiments/plots/" + script).string());
  for (const auto& a : args) cmd += fmt::format(" '{}'", a);
  if (std::system(cmd.c_str()) == 0) return true;
  std::cerr
      << "warning: plotting failed (needs /usr/bin/python3 with matplotlib); CSV and summary are written\n";
  return false;
}

std::string run_experiment(const std::string& path, const RunOptions& options) {
  const YamlReader root = YamlReader::from_file(path);
  if (root.has("kind") && root.at("kind").as_string() == "p2-reproduction")
    return run_p2_reproduction(root, path, options);
  if (root.has("kind") && root.at("kind").as_string() == "subst-optimizers")
    return run_subst_optimizers(root, path, options);
  root.expect_map({"experiment", "description", "kind", "systems", "op", "sizes", "algorithms", "dtype"});
  const std::string name = root.at("experiment").as_string();
  if (name.empty() || name.find('/') != std::string::npos || name.find("..") != std::string::npos)
    throw root.at("experiment").error("expected a plain name (it becomes the results folder)");
  const YamlReader kind = root.at("kind");
  if (kind.as_string() != "collective-sweep")
    throw kind.error(fmt::format(
        "unknown experiment kind '{}' (expected: collective-sweep, p2-reproduction, subst-optimizers)",
        kind.as_string()));
  const std::string description = root.has("description") ? root.at("description").as_string() : "";

  SweepConfig base;
  const YamlReader op_node = root.at("op");
  if (auto op = sim::parse_op(op_node.as_string()))
    base.op = *op;
  else
    throw op_node.error(
        fmt::format("unknown collective '{}' (expected one of: {})", op_node.as_string(), sim::kOpNames));
  const YamlReader sizes_node = root.at("sizes");
  try {
    base.sizes = parse_size_range(sizes_node.as_string(), "sizes");
  } catch (const ConfigError& e) {
    throw sizes_node.error(e.what());
  }
  if (auto d = root.maybe("dtype")) {
    auto t = hw::parse_dtype(d->as_string());
    if (!t) throw d->error("expected one of fp64, fp32, tf32, fp16, bf16, fp8");
    base.dtype = *t;
  }
  std::vector<std::string> algorithms{"auto"};
  if (auto a = root.maybe("algorithms")) {
    a->expect_sequence();
    algorithms.clear();
    for (std::size_t i = 0; i < a->size(); ++i) {
      const auto item = a->at(i);
      const std::string algo = item.as_string();
      if (algo != "auto" && !sim::AlgorithmRegistry::instance().find(algo))
        throw item.error(fmt::format("unknown algorithm '{}' (expected auto or one of: {})", algo,
                                     sim::AlgorithmRegistry::instance().names()));
      algorithms.push_back(algo);
    }
  }
  std::vector<SystemRun> systems;
  const YamlReader sys = root.at("systems");
  sys.expect_sequence();
  for (std::size_t i = 0; i < sys.size(); ++i) {
    const auto s = sys.at(i);
    s.expect_map({"hw", "nodes", "label"});
    SystemRun run{"", resolve(s.at("hw").as_string(), path), std::nullopt};
    if (auto n = s.maybe("nodes")) run.nodes = static_cast<int>(n->as_positive_int());
    run.label = s.has("label") ? s.at("label").as_string() : "";
    systems.push_back(run);
  }

  const std::filesystem::path out_dir = std::filesystem::path(options.output_root) / name;
  std::string csv =
      "system,nodes,gpus,op,algorithm_requested,algorithm,protocol,bytes,time_us,algbw_GBps,busbw_GBps\n";
  std::string md = fmt::format(
      "# {}\n\n{}\n\nCollective: **{}**, sizes {}, dtype {}. Simulated by strata (flow-level "
      "network model, NCCL cost constants; see docs/fidelity.md).\n\n",
      name, description, sim::op_name(base.op), sizes_node.as_string(), hw::dtype_name(base.dtype));
  md +=
      "| system | GPUs | algorithm | peak busbw (GB/s) | at size | busbw at largest size (GB/s) | time at "
      "smallest size (us) |\n";
  md += "|---|---|---|---|---|---|---|\n";
  const std::size_t total = systems.size() * algorithms.size();
  std::size_t done = 0;
  for (const auto& s : systems) {
    const hw::Topology topo = hw::load_system(s.hw, hw::LoadOptions{s.nodes});
    const std::string label = s.label.empty() ? fmt::format("{} x{}", topo.name(), topo.nodes()) : s.label;
    for (const auto& algo : algorithms) {
      ++done;
      std::cerr << fmt::format("[{}/{}] {} {} {}\n", done, total, label, sim::op_name(base.op), algo);
      SweepConfig cfg = base;
      cfg.algorithm = algo;
      std::vector<SweepRow> rows;
      try {
        rows = run_sweep(topo, cfg);
      } catch (const std::invalid_argument& e) {
        md += fmt::format("| {} | {} | {} | not applicable: {} | | | |\n", label, topo.num_gpus(), algo,
                          e.what());
        continue;
      }
      const SweepRow* peak = &rows.front();
      for (const auto& r : rows) {
        if (r.busbw > peak->busbw) peak = &r;
        csv += fmt::format("{},{},{},{},{},{},{},{:.0f},{:.3f},{:.3f},{:.3f}\n", label, topo.nodes(),
                           topo.num_gpus(), sim::op_name(base.op), algo, r.algorithm,
                           sim::protocol_name(r.protocol), r.bytes, r.seconds * 1e6, r.algbw / 1e9,
                           r.busbw / 1e9);
      }
      md += fmt::format("| {} | {} | {} | {:.1f} | {} | {:.1f} | {:.1f} |\n", label, topo.num_gpus(), algo,
                        peak->busbw / 1e9, units::format_bytes(peak->bytes), rows.back().busbw / 1e9,
                        rows.front().seconds * 1e6);
    }
  }
  std::filesystem::create_directories(out_dir);
  const auto csv_path = (out_dir / "collectives.csv").string();
  sim::write_file_atomically(csv_path, csv);
  md += "\nFiles: `collectives.csv` (every size), `busbw.png` (bus bandwidth against size).\n";
  if (options.plots &&
      !run_plot_script("collective_sweep.py", {csv_path, (out_dir / "busbw.png").string(), name}))
    md += "\n(The figure could not be drawn: /usr/bin/python3 with matplotlib is needed.)\n";
  sim::write_file_atomically((out_dir / "summary.md").string(), md);
  return out_dir.string();
}

}  // namespace strata::experiments
