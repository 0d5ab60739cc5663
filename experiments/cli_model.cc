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
#include "experiments/model_report.h"
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

experiments::ModelQuery model_query(const ModelOptions& o) {
  return {o.model, o.dtype, o.dims, o.batch, o.seq};
}

void sim_model(const ModelOptions& o) {
  if (!o.trace.empty()) util::check_output_path(o.trace);
  const experiments::ModelSimQuery q{model_query(o), o.hw,    o.profile,        o.cost_params,
                                     o.optimizer,    o.train, !o.trace.empty(), o.gpu};
  const auto report = experiments::simulate_model(q);
  std::cout << experiments::describe_model_sim(q, report, o.top);
  if (!o.trace.empty()) {
    experiments::write_model_trace(report, o.trace);
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
                               experiments::count_str(g.param_count()), e.default_batch,
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
    const auto g = experiments::load_model(model_query(*o), &spec);
    std::cout << experiments::describe_model(g, o->nodes, spec);
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
    auto g = experiments::load_model(model_query(*eo));
    if (eo->train)
      g = models::derive_training_graph(g, {.optimizer = experiments::parse_optimizer(eo->optimizer)}).graph;
    models::export_onnx(g, eo->output);
    std::cout << fmt::format("wrote {}: {} nodes, {} parameters\n", eo->output, g.nodes().size(),
                             experiments::count_str(g.param_count()));
  });
}

}  // namespace strata::cli
