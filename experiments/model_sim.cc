// The `model-sim` experiment kind (configs/experiments/model_zoo.yaml; docs/experiments.md, "model-sim"):
// `strata model sim` for a list of models on one system's GPU, an inference pass or a training step each,
// with the per-operator breakdown. With a `sweep:` over `hw` or the `scale.gpu_flops` / `scale.hbm_bandwidth`
// what-if factors it answers "how much faster is this model on that GPU?".
//   models.csv  a row per model: step time, throughput, achieved TFLOP/s and share of peak, peak memory
//   ops.csv     a row per model x operator type: count, time, share of the step, FLOP, bytes
//   summary.md, step_time.png (time per model, split by operator type; achieved share of peak)
#include <algorithm>
#include <iostream>
#include <optional>

#include <fmt/format.h>

#include "experiments/experiment.h"
#include "experiments/option_ranges.h"
#include "experiments/sweep_report.h"
#include "hw/units.h"
#include "models/cost/cost_model.h"
#include "models/cost/cost_params.h"
#include "models/simulate/graph_sim.h"
#include "models/train/training.h"
#include "models/zoo/model_ref.h"
#include "util/error.h"

namespace strata::experiments {
namespace {

namespace zoo = models::zoo;

struct ModelEntry {
  std::string label;  // "resnet50 batch 64"
  std::string ref;    // as written (files: resolved)
  std::int64_t batch = 0, seq = 0;
  models::Graph graph;  // the forward graph, or the training step's
};

struct Config {
  std::string name, description, hw_text, cost_label = "the built-in priors", profile_label;
  std::optional<hw::Topology> topology;  // set by parse (no default topology)
  models::DType dtype = models::DType::kF32;
  bool train = false;
  models::Optimizer optimizer = models::Optimizer::kAdam;
  models::RooflineParams roofline = models::RooflineParams::defaults();
  std::optional<models::ProfileDb> profile;
  std::vector<ModelEntry> models;
};

struct ModelResult {
  models::GraphSimResult sim;
  std::int64_t batch = 1;
};

struct Results {
  std::vector<ModelResult> models;
};

models::DType read_dtype(const YamlReader& field) {
  const auto dt = models::parse_dtype(field.as_string());
  if (!dt || !models::is_float(*dt))
    throw field.error(fmt::format("expected f32, f16, bf16 or f64, got '{}'", field.as_string()));
  return *dt;
}

// A model reference: zoo name or transformer:... as written; model YAML and ONNX files relative to the
// experiment file. `dims` sets symbolic ONNX input dimensions.
ModelEntry read_model(const ExperimentFile& file, const Config& c, const YamlReader& m) {
  m.expect_map({"model", "batch", "seq", "dims", "label"});
  const YamlReader field = m.at("model");
  ModelEntry e;
  e.ref = file.model_reference(field);
  const std::string text = field.is_map() ? e.ref : field.as_string();
  zoo::ModelRefOptions mo;
  if (auto b = m.maybe("batch")) e.batch = mo.batch = b->as_int_in(1, kMaxModelDim);
  if (auto s = m.maybe("seq")) e.seq = mo.seq = s->as_int_in(1, kMaxModelDim);
  if (auto d = m.maybe("dims")) {
    if (!d->is_map()) throw d->error("expected a mapping of symbolic ONNX dimensions, e.g. {N: 8}");
    for (const auto& kv : d->node()) {
      const auto key = kv.first.as<std::string>();
      mo.onnx_dims[key] = d->at(key).as_int_in(1, kMaxModelDim);
    }
  }
  zoo::ModelRef ref;
  try {
    ref = zoo::resolve_model_ref(e.ref);
  } catch (const ConfigError& err) {
    throw field.error(fmt::format("in the model it names: {}", err.what()));
  } catch (const std::exception& err) {
    throw field.error(err.what());
  }
  try {
    if (ref.kind != zoo::ModelRefKind::kOnnx) mo.dtype = c.dtype;
    models::Graph forward = zoo::build_model_ref(ref, mo);
    e.graph = c.train ? models::derive_training_graph(forward, {.optimizer = c.optimizer}).graph
                      : std::move(forward);
  } catch (const ConfigError& err) {
    throw field.error(fmt::format("in the model it names: {}", err.what()));
  } catch (const std::exception& err) {
    throw m.error(err.what());
  }
  e.label = m.has("label") ? m.at("label").as_string()
                           : text + (e.batch ? fmt::format(" batch {}", e.batch) : "") +
                                 (e.seq ? fmt::format(" seq {}", e.seq) : "");
  return e;
}

void read_cost(const ExperimentFile& file, Config& c) {
  const YamlReader& root = file.root();
  if (auto p = root.maybe("cost_params")) {
    try {
      const auto params = models::load_cost_params(file.resolve_path(*p));
      if (params.device != c.topology->gpu().name)
        throw ConfigError(fmt::format("the parameters were fitted on '{}', the system's device is '{}'",
                                      params.device, c.topology->gpu().name));
      c.roofline = params.roofline;
    } catch (const ConfigError& e) {
      throw p->error(e.what());
    }
    c.cost_label = p->as_string();
  }
  if (auto p = root.maybe("profile")) {
    try {
      c.profile = models::ProfileDb::load(file.resolve_path(*p));
    } catch (const ConfigError& e) {
      throw p->error(e.what());
    }
    c.profile_label = p->as_string();
  }
}

Config parse(const ExperimentFile& file) {
  file.expect_keys({"hw", "models", "dtype", "mode", "optimizer", "cost_params", "profile"});
  const YamlReader& root = file.root();
  Config c;
  c.name = file.name();
  c.description = file.description();
  c.hw_text = root.at("hw").as_string();
  c.topology = file.load_system(root.at("hw"));
  if (auto d = root.maybe("dtype")) c.dtype = read_dtype(*d);
  if (auto m = root.maybe("mode")) {
    const std::string mode = m->as_string();
    if (mode != "inference" && mode != "training")
      throw m->error(fmt::format("expected inference or training, got '{}'", mode));
    c.train = mode == "training";
  }
  if (auto o = root.maybe("optimizer")) {
    if (!c.train) throw o->error("an optimizer applies to mode: training only");
    const std::string name = o->as_string();
    if (name != "adam" && name != "sgd") throw o->error(fmt::format("expected adam or sgd, got '{}'", name));
    c.optimizer = name == "adam" ? models::Optimizer::kAdam : models::Optimizer::kSgd;
  }
  read_cost(file, c);
  const YamlReader list = root.at("models");
  list.expect_sequence();
  if (list.size() == 0) throw list.error("expected at least one model");
  for (std::size_t i = 0; i < list.size(); ++i) c.models.push_back(read_model(file, c, list.at(i)));
  return c;
}

Results run(const Config& c) {
  const models::CostModel cost(c.topology->gpu(), c.roofline, c.profile ? &*c.profile : nullptr);
  Results results;
  for (std::size_t i = 0; i < c.models.size(); ++i) {
    const auto& m = c.models[i];
    std::cerr << fmt::format("[{}/{}] {} ({} nodes)\n", i + 1, c.models.size(), m.label,
                             m.graph.nodes().size());
    ModelResult r{models::simulate_graph(m.graph, *c.topology, cost), 1};
    const auto inputs = m.graph.values_of(models::ValueKind::kInput);
    if (!inputs.empty() && !m.graph.type(inputs[0]).shape.empty())
      r.batch = m.graph.type(inputs[0]).shape.at(0);
    results.models.push_back(std::move(r));
  }
  return results;
}

void report(const Config& c, const Results& results, ResultsDir& out, const RunOptions& options) {
  const auto& gpu = c.topology->gpu();
  const double peak = gpu.peak_flops(models::to_hw(c.dtype));
  const std::string mode = c.train ? "training step" : "inference";
  std::string models_csv =
      "model,batch,mode,dtype,gpu,step_s,samples_per_s,flops,achieved_tflops,peak_fraction,kernels,"
      "measured_kernels,peak_memory_bytes,hbm_capacity_bytes,fits\n";
  std::string ops_csv = "model,op,count,seconds,share,flops,bytes\n";
  std::string md = fmt::format(
      "# {}\n\n{}\n\nEvery model simulated on one **{}** of `{}` ({}, {}), kernels timed by the roofline "
      "cost "
      "model ({}{}) on the discrete-event engine (`strata model sim`; docs/models.md).\n\n",
      c.name, c.description, gpu.name, c.hw_text, mode, models::dtype_name(c.dtype), c.cost_label,
      c.profile ? fmt::format(", measured times from {}", c.profile_label) : "");
  md +=
      "| model | batch | step time | samples/s | achieved TFLOP/s | share of peak | peak memory | largest "
      "operator type |\n|---|---|---|---|---|---|---|---|\n";
  for (std::size_t i = 0; i < c.models.size(); ++i) {
    const auto& m = c.models[i];
    const auto& r = results.models[i];
    const auto& s = r.sim;
    int kernels = 0, measured = 0;
    for (const auto& n : m.graph.nodes()) kernels += !models::is_view(n);
    for (const auto& b : s.by_op) measured += b.measured;
    const double tflops = s.seconds > 0 ? s.flops / s.seconds / 1e12 : 0;
    const bool fits = s.memory.peak() <= gpu.hbm_capacity;
    models_csv += fmt::format(
        "{},{},{},{},{},{:.9g},{:.6g},{:.6g},{:.4f},{:.5f},{},{},{:.0f},{:.0f},{}\n", csv_field(m.label),
        r.batch, c.train ? "training" : "inference", models::dtype_name(c.dtype), gpu.name, s.seconds,
        static_cast<double>(r.batch) / s.seconds, s.flops, tflops, tflops * 1e12 / peak, kernels, measured,
        static_cast<double>(s.memory.peak()), static_cast<double>(gpu.hbm_capacity), fits);
    for (const auto& b : s.by_op)
      ops_csv += fmt::format("{},{},{},{:.9g},{:.5f},{:.6g},{:.6g}\n", csv_field(m.label), b.op, b.count,
                             b.seconds, s.seconds > 0 ? b.seconds / s.seconds : 0, b.flops, b.bytes);
    const std::string largest = s.by_op.empty()
                                    ? "-"
                                    : fmt::format("{} ({:.0f}%)", s.by_op.front().op,
                                                  100 * s.by_op.front().seconds / std::max(s.seconds, 1e-30));
    md += fmt::format("| {} | {} | {} | {:.1f} | {:.1f} | {:.1f}% | {}{} | {} |\n", m.label, r.batch,
                      units::format_duration(s.seconds), static_cast<double>(r.batch) / s.seconds, tflops,
                      100 * tflops * 1e12 / peak, units::format_bytes(static_cast<double>(s.memory.peak())),
                      fits ? "" : " (does not fit)", largest);
  }
  out.write("models.csv", models_csv);
  out.write("ops.csv", ops_csv);
  md += fmt::format(
      "\nPeak: {:.1f} TFLOP/s {}, HBM {} at {:.0f} GB/s. Files: `models.csv`, `ops.csv` (a row per model x "
      "operator type), `step_time.png` (time per model split by operator type, and the share of peak).\n",
      peak / 1e12, hw::dtype_name(models::to_hw(c.dtype)), units::format_bytes(gpu.hbm_capacity),
      gpu.hbm_bandwidth / 1e9);
  draw_figures(md, options, "model_sim.py",
               {out.staged("models.csv").string(), out.staged("ops.csv").string(),
                out.staged("step_time.png").string(), c.name});
  out.write("summary.md", md);
}

}  // namespace

ExperimentKind model_sim_kind() {
  return make_kind("model-sim",
                   "models of the zoo or ONNX files simulated on one GPU of a system: step time, throughput, "
                   "operator breakdown",
                   &parse, &run, &report);
}

}  // namespace strata::experiments
