// strata model list|show|sim|export
#include <iostream>
#include <map>
#include <memory>

#include <fmt/format.h>

#include "experiments/cli.h"
#include "hw/units.h"
#include "models/zoo/zoo.h"

namespace strata::cli {
namespace {

struct ModelOptions {
  std::string model, dtype = "f32";
  std::int64_t batch = 0, seq = 0;
  bool nodes = false;
};

models::Graph load_model(const ModelOptions& o) {
  auto dt = models::parse_dtype(o.dtype);
  if (!dt || !models::is_float(*dt))
    throw std::invalid_argument(fmt::format("--dtype: expected f32, f16, bf16 or f64, got '{}'", o.dtype));
  return models::zoo::build_model(o.model, {.batch = o.batch, .seq_len = o.seq, .dtype = *dt});
}

std::string count_str(double n) {
  if (n >= 1e9) return fmt::format("{:.2f} G", n / 1e9);
  if (n >= 1e6) return fmt::format("{:.2f} M", n / 1e6);
  if (n >= 1e3) return fmt::format("{:.2f} K", n / 1e3);
  return fmt::format("{:.0f}", n);
}

void show_model(const models::Graph& g, bool list_nodes) {
  using namespace models;
  std::cout << fmt::format("model: {}\n", g.name());
  for (auto v : g.values_of(ValueKind::kInput))
    std::cout << fmt::format("  input   {:<28} {}\n", g.value(v).name, type_str(g.type(v)));
  for (auto v : g.outputs()) std::cout << fmt::format("  output  {:<28} {}\n", g.value(v).name, type_str(g.type(v)));
  double macs = 0, act = 0;
  for (const auto& n : g.nodes())
    if (n.op->kind == OpKind::kContraction) macs += node_flops(g, n) / 2;
  for (const auto& v : g.values())
    if (v.kind == ValueKind::kActivation) act += v.type.bytes();
  std::cout << fmt::format("nodes: {}   parameters: {} ({})\n", g.nodes().size(), count_str(g.param_count()),
                           units::format_bytes(g.param_bytes()));
  std::cout << fmt::format("forward FLOPs: {}FLOP ({} multiply-adds in matmul/conv)\n", count_str(g.total_flops()),
                           count_str(macs));
  std::cout << fmt::format("activations (all forward tensors): {}\n", units::format_bytes(act));
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
  std::cout << fmt::format("\n  {:<20} {:>6} {:>12} {:>7} {:>12}\n", "operator", "count", "FLOP", "share", "bytes");
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

void add_common(CLI::App* cmd, ModelOptions& o) {
  cmd->add_option("--batch", o.batch, "Batch size (default: the model's)")->check(CLI::PositiveNumber);
  cmd->add_option("--seq", o.seq, "Sequence length for sequence models (default: the model's)")->check(CLI::PositiveNumber);
  cmd->add_option("--dtype", o.dtype, "Element type of weights and activations: f32, f16, bf16")->capture_default_str();
}

}  // namespace

void add_model_commands(CLI::App& app) {
  auto* model = app.add_subcommand("model", "Computation graphs: model zoo, ONNX import/export, single-GPU simulation");
  model->require_subcommand(1);
  auto* list = model->add_subcommand("list", "List the zoo models with their parameter counts");
  list->callback([] {
    std::cout << fmt::format("{:<14} {:<12} {:>10} {:>7} {:>6}  {}\n", "name", "family", "params", "batch", "seq",
                             "description");
    for (const auto& e : models::zoo::zoo_models()) {
      const auto g = e.build({});
      std::cout << fmt::format("{:<14} {:<12} {:>10} {:>7} {:>6}  {}\n", e.name, e.family, count_str(g.param_count()),
                               e.default_batch, e.default_seq ? std::to_string(e.default_seq) : "-", e.description);
    }
  });
  auto o = std::make_shared<ModelOptions>();
  auto* show = model->add_subcommand("show", "Show a model: inputs, outputs, operators, parameters, FLOPs, memory");
  show->add_option("model", o->model, "Zoo model name (see `strata model list`)")->required();
  add_common(show, *o);
  show->add_flag("--nodes", o->nodes, "List every node with its types and attributes");
  show->callback([o] { show_model(load_model(*o), o->nodes); });
}

}  // namespace strata::cli
