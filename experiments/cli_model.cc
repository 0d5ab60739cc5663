// strata model list|ops|show|sim|export
#include <filesystem>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "experiments/cli.h"
#include "experiments/cli_options.h"
#include "hw/config_error.h"
#include "hw/system_loader.h"
#include "hw/units.h"
#include "models/cost/cost_model.h"
#include "models/cost/cost_params.h"
#include "models/onnx/onnx.h"
#include "models/simulate/graph_sim.h"
#include "models/train/training.h"
#include "models/zoo/model_ref.h"
#include "models/zoo/zoo.h"
#include "sim/trace.h"
#include "util/atomic_file.h"
#include "util/parse.h"

namespace strata::cli {
namespace {

struct ModelOptions {
  std::string model, dtype = "f32", output;
  std::vector<std::string> dims;  // NAME=VALUE for symbolic ONNX dimensions
  std::int64_t batch = 0, seq = 0;
  bool nodes = false;
  // sim
  std::string hw, profile, cost_params, trace, optimizer = "adam";
  bool train = false;
  int gpu = 0, top = 15;
};

// One resolver for every --model (models/zoo/model_ref.h): zoo name, transformer:..., model YAML or ONNX
// file.
models::Graph load_model(const ModelOptions& o, std::optional<models::zoo::TransformerSpec>* spec = nullptr) {
  const auto ref = models::zoo::resolve_model_ref(o.model);
  if (spec) *spec = ref.transformer;
  models::zoo::ModelRefOptions opt;
  opt.batch = o.batch;
  opt.seq = o.seq;
  for (const auto& d : o.dims)
    for (const auto& [name, value] : util::parse_key_values(d, "--dim"))
      opt.onnx_dims[name] = util::parse_int(value, {1, kMaxModelDim}, "--dim " + name);
  if (ref.kind != models::zoo::ModelRefKind::kOnnx) {
    auto dt = models::parse_dtype(o.dtype);
    if (!dt || !models::is_float(*dt))
      throw std::invalid_argument(fmt::format("--dtype: expected f32, f16, bf16 or f64, got '{}'", o.dtype));
    opt.dtype = *dt;
  }
  return models::zoo::build_model_ref(ref, opt);
}

std::string count_str(double n) {
  if (n >= 1e15) return fmt::format("{:.2f} P", n / 1e15);
  if (n >= 1e12) return fmt::format("{:.2f} T", n / 1e12);
  if (n >= 1e9) return fmt::format("{:.2f} G", n / 1e9);
  if (n >= 1e6) return fmt::format("{:.2f} M", n / 1e6);
  if (n >= 1e3) return fmt::format("{:.2f} K", n / 1e3);
  return fmt::format("{:.0f}", n);
}

void show_model(const models::Graph& g, bool list_nodes,
                const std::optional<models::zoo::TransformerSpec>& spec) {
  using namespace models;
  std::cout << fmt::format("model: {}\n", g.name());
  if (spec) {
    const auto p = zoo::transformer_params(*spec);
    std::cout << fmt::format("transformer: {}\n", zoo::format_transformer_spec(*spec));
    std::cout << fmt::format("  parameters: {} = {} layers x {} + embedding {} + head {}{}\n",
                             count_str(p.total), spec->layers, count_str(p.per_layer), count_str(p.embedding),
                             count_str(p.head),
                             spec->moe() ? fmt::format("; active per token {}", count_str(p.active)) : "");
  }
  for (auto v : g.values_of(ValueKind::kInput))
    std::cout << fmt::format("  input   {:<28} {}\n", g.value(v).name, type_str(g.type(v)));
  for (auto v : g.outputs())
    std::cout << fmt::format("  output  {:<28} {}\n", g.value(v).name, type_str(g.type(v)));
  double macs = 0, act = 0;
  for (const auto& n : g.nodes())
    if (n.op->kind == OpKind::kContraction) macs += node_flops(g, n) / 2;
  for (const auto& v : g.values())
    if (v.kind == ValueKind::kActivation) act += v.type.bytes();
  std::cout << fmt::format("nodes: {}   parameters: {} ({})\n", g.nodes().size(), count_str(g.param_count()),
                           units::format_bytes(g.param_bytes()));
  std::cout << fmt::format("forward FLOPs: {}FLOP ({} multiply-adds in matmul/conv)\n",
                           count_str(g.total_flops()), count_str(macs));
  const auto mem = memory_profile(g);
  std::cout << fmt::format(
      "activations: {} in all; peak memory of one pass {} (parameters {} + inputs/constants {} + "
      "live activations {})\n",
      units::format_bytes(act), units::format_bytes(mem.peak()), units::format_bytes(mem.params),
      units::format_bytes(mem.inputs + mem.constants + mem.optimizer_state),
      units::format_bytes(mem.peak_transient));
  struct Row {
    int count = 0;
    double flops = 0, bytes = 0;
  };
  std::map<std::string, Row> rows;
  for (const auto& n : g.nodes()) {
    auto& r = rows[std::string(n.op->name)];
    ++r.count;
    r.flops += node_flops(g, n);
    r.bytes += node_bytes(g, n);
  }
  const double total = std::max(g.total_flops(), 1.0);
  std::cout << fmt::format("\n  {:<20} {:>6} {:>12} {:>7} {:>12}\n", "operator", "count", "FLOP", "share",
                           "bytes");
  for (const auto& [op, r] : rows)
    std::cout << fmt::format("  {:<20} {:>6} {:>12} {:>6.1f}% {:>12}\n", op, r.count, count_str(r.flops),
                             100 * r.flops / total, units::format_bytes(r.bytes));
  if (!list_nodes) return;
  std::cout << "\nnodes:\n";
  for (const auto& n : g.nodes()) {
    std::string ins, outs;
    for (auto v : n.inputs) ins += (ins.empty() ? "" : ", ") + type_str(g.type(v));
    for (auto v : n.outputs) outs += (outs.empty() ? "" : ", ") + type_str(g.type(v));
    std::cout << fmt::format("  {:<40} {:<16} ({}) -> {}{}{}\n", n.name, n.op->name, ins, outs,
                             n.attrs.items().empty() ? "" : "  ", n.attrs.str());
  }
}

models::Optimizer parse_optimizer(const std::string& name) {
  if (name == "adam") return models::Optimizer::kAdam;
  if (name == "sgd") return models::Optimizer::kSgd;
  throw std::invalid_argument(fmt::format("--optimizer: expected adam or sgd, got '{}'", name));
}

void sim_model(const ModelOptions& o) {
  using namespace models;
  if (!o.trace.empty()) util::check_output_path(o.trace);
  const auto topo = hw::load_system(o.hw);
  if (o.gpu < 0 || o.gpu >= topo.num_gpus())
    throw ConfigError(fmt::format("--gpu: {} is not a GPU of {} (0..{})", o.gpu, o.hw, topo.num_gpus() - 1));
  Graph forward = load_model(o);
  const auto batch = forward.values_of(ValueKind::kInput).empty()
                         ? 1
                         : forward.type(forward.values_of(ValueKind::kInput)[0]).shape.at(0);
  Graph g = forward;
  if (o.train) {
    g = derive_training_graph(forward, {.optimizer = parse_optimizer(o.optimizer)}).graph;
  }
  std::optional<ProfileDb> db;
  if (!o.profile.empty()) db = ProfileDb::load(o.profile);
  const CostModel cost(topo.gpu(), roofline_params_for(o.cost_params, topo.gpu().name), db ? &*db : nullptr);
  const auto r = simulate_graph(g, topo, cost, {.gpu = o.gpu, .record_timeline = !o.trace.empty()});
  const auto& gpu = topo.gpu();
  const DType dt = g.outputs().empty() ? DType::kF32 : g.type(g.outputs()[0]).dtype;
  std::cout << fmt::format("model: {} ({}, batch {}, {}) on {} GPU {} ({})\n", forward.name(),
                           o.train ? "training step, " + o.optimizer : std::string("inference"), batch,
                           dtype_name(dt), topo.name(), o.gpu, gpu.name);
  const double peak = gpu.peak_flops(to_hw(dt));
  std::cout << fmt::format(
      "step time: {}   throughput: {:.1f} samples/s   achieved: {:.1f} TFLOP/s ({:.1f}% of {} peak)\n",
      units::format_duration(r.seconds), static_cast<double>(batch) / r.seconds, r.flops / r.seconds / 1e12,
      100 * r.flops / r.seconds / peak, hw::dtype_name(to_hw(dt)));
  int views = 0, measured = 0;
  for (const auto& b : r.by_op) measured += b.measured;
  for (const auto& n : g.nodes()) views += is_view(n);
  std::cout << fmt::format("kernels: {} (+{} views without a kernel), {} timed from the profile database\n",
                           g.nodes().size() - static_cast<std::size_t>(views), views, measured);
  const auto& m = r.memory;
  std::cout << fmt::format(
      "peak memory: {} = parameters {} + optimizer state {} + inputs/constants {} + "
      "activations/gradients {} (during '{}'); HBM {}{}\n",
      units::format_bytes(m.peak()), units::format_bytes(m.params), units::format_bytes(m.optimizer_state),
      units::format_bytes(m.inputs + m.constants), units::format_bytes(m.peak_transient),
      m.peak_node >= 0 ? g.node(m.peak_node).name : std::string("-"), units::format_bytes(gpu.hbm_capacity),
      m.peak() > gpu.hbm_capacity ? " -- DOES NOT FIT on one GPU" : "");
  std::cout << fmt::format("\n  {:<20} {:>6} {:>12} {:>7} {:>12} {:>12}\n", "operator", "count", "time",
                           "share", "FLOP", "bytes");
  int shown = 0;
  for (const auto& b : r.by_op) {
    if (shown++ >= o.top) break;
    std::cout << fmt::format("  {:<20} {:>6} {:>12} {:>6.1f}% {:>12} {:>12}\n", b.op, b.count,
                             units::format_duration(b.seconds), 100 * b.seconds / r.seconds,
                             count_str(b.flops), units::format_bytes(b.bytes));
  }
  if (static_cast<int>(r.by_op.size()) > o.top)
    std::cout << fmt::format("  ... {} more operator types (--top)\n",
                             r.by_op.size() - static_cast<std::size_t>(o.top));
  if (!o.trace.empty()) {
    util::write_file_atomically(o.trace, sim::chrome_trace_json(topo, r.tasks, r.sim));
    std::cout << fmt::format("# trace written to {} (open in https://ui.perfetto.dev)\n", o.trace);
  }
}

void add_common(CLI::App* cmd, ModelOptions& o) {
  cmd->add_option(
      "--dim", o.dims,
      fmt::format("ONNX files: value of a symbolic input dimension, NAME=VALUE with VALUE in 1..{} "
                  "(repeatable, or NAME=VALUE,NAME=VALUE)",
                  kMaxModelDim));
  add_int_option(*cmd, "--batch", o.batch, {1, kMaxModelDim}, "Batch size (default: the model's)", false);
  add_int_option(*cmd, "--seq", o.seq, {1, kMaxModelDim},
                 "Sequence length for sequence models (default: the model's)", false);
  cmd->add_option("--dtype", o.dtype, "Element type of weights and activations: f32, f16, bf16")
      ->capture_default_str();
}

constexpr const char* kModelHelp =
    "Zoo model name (see `strata model list`), "
    "transformer:layers=L,hidden=H,heads=A,vocab=V,seq=S[,key=value...], "
    "a model YAML (configs/models/*.yaml) or an .onnx file";

}  // namespace

void add_model_commands(CLI::App& app) {
  auto* model =
      app.add_subcommand("model", "Computation graphs: model zoo, ONNX import/export, single-GPU simulation");
  model->require_subcommand(1);
  auto* list = model->add_subcommand("list", "List the zoo models with their parameter counts");
  list->callback([] {
    std::cout << fmt::format("{:<14} {:<12} {:>10} {:>7} {:>6}  {}\n", "name", "family", "params", "batch",
                             "seq", "description");
    for (const auto& e : models::zoo::zoo_models()) {
      const auto g = e.build({});
      std::cout << fmt::format("{:<14} {:<12} {:>10} {:>7} {:>6}  {}\n", e.name, e.family,
                               count_str(g.param_count()), e.default_batch,
                               e.default_seq ? std::to_string(e.default_seq) : "-", e.description);
    }
  });
  auto* ops =
      model->add_subcommand("ops", "List the operator table: name, verifier symbol, kind, arity, attributes");
  ops->callback([] {
    for (const auto& op : models::OpRegistry::instance().all()) {
      std::string attrs;
      for (const auto& a : op.attrs)
        attrs += fmt::format(
            "{}{}{}", attrs.empty() ? "" : ", ", a.name,
            a.default_value ? "=" + models::attr_value_str(*a.default_value) : std::string(" (required)"));
      const std::string arity = op.max_inputs < 0 ? fmt::format("{}+", op.min_inputs)
                                : op.min_inputs == op.max_inputs
                                    ? std::to_string(op.min_inputs)
                                    : fmt::format("{}-{}", op.min_inputs, op.max_inputs);
      std::cout << fmt::format("{:<20} {:<20} {:<13} {:>4} {:<4} {}\n    {}{}\n", op.name, op.symbol,
                               models::op_kind_name(op.kind), arity,
                               op.backward ? "bwd" : (op.grad ? "grad" : "-"),
                               op.onnx_op.empty() ? "" : "onnx:" + std::string(op.onnx_op), op.summary,
                               attrs.empty() ? "" : "\n    attributes: " + attrs);
    }
  });
  auto o = std::make_shared<ModelOptions>();
  auto* show =
      model->add_subcommand("show", "Show a model: inputs, outputs, operators, parameters, FLOPs, memory");
  show->add_option("model", o->model, kModelHelp)->required();
  add_common(show, *o);
  show->add_flag("--nodes", o->nodes, "List every node with its types and attributes");
  show->callback([o] {
    std::optional<models::zoo::TransformerSpec> spec;
    const auto g = load_model(*o, &spec);
    show_model(g, o->nodes, spec);
  });
  auto so = std::make_shared<ModelOptions>();
  so->dtype = "f16";
  auto* simc = model->add_subcommand(
      "sim",
      "Simulate one inference pass or training step of a model on one GPU: step time, per-operator "
      "breakdown (roofline cost model or measured profiles), peak memory");
  simc->add_option("model", so->model, kModelHelp)->required();
  simc->add_option("--hw", so->hw, "System YAML file (the GPU model comes from it)")->required();
  add_common(simc, *so);
  simc->add_flag("--train", so->train, "Simulate a training step: forward, backward, optimizer update");
  simc->add_option("--optimizer", so->optimizer, "Training optimizer: adam or sgd")->capture_default_str();
  add_int_option(*simc, "--gpu", so->gpu, {0, std::numeric_limits<int>::max()}, "GPU rank to run on");
  simc->add_option("--profile", so->profile,
                   "Measured-profile database (JSON) overriding the roofline per kernel");
  add_cost_params_option(*simc, so->cost_params);
  simc->add_option("--trace", so->trace, "Write a Chrome/Perfetto trace of the step to this JSON file");
  add_int_option(*simc, "--top", so->top, {0, 10000}, "Operator types shown in the breakdown");
  simc->callback([so] { sim_model(*so); });
  auto eo = std::make_shared<ModelOptions>();
  auto* exp =
      model->add_subcommand("export",
                            "Export a model (zoo name or .onnx) to ONNX: standard operators where ONNX "
                            "has them, domain ai.strata otherwise");
  exp->add_option("model", eo->model, kModelHelp)->required();
  exp->add_option("-o,--output", eo->output, "Output .onnx file")->required();
  add_common(exp, *eo);
  exp->add_flag("--train", eo->train,
                "Export the training step (forward, backward, optimizer update) instead");
  exp->add_option("--optimizer", eo->optimizer, "Training optimizer: adam or sgd")->capture_default_str();
  exp->callback([eo] {
    auto g = load_model(*eo);
    if (eo->train) g = models::derive_training_graph(g, {.optimizer = parse_optimizer(eo->optimizer)}).graph;
    models::export_onnx(g, eo->output);
    std::cout << fmt::format("wrote {}: {} nodes, {} parameters\n", eo->output, g.nodes().size(),
                             count_str(g.param_count()));
  });
}

}  // namespace strata::cli
