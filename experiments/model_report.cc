#include "experiments/model_report.h"

#include <algorithm>
#include <map>
#include <stdexcept>

#include <fmt/format.h>

#include "hw/config_error.h"
#include "hw/system_loader.h"
#include "hw/units.h"
#include "models/cost/cost_model.h"
#include "models/cost/cost_params.h"
#include "models/zoo/model_ref.h"
#include "sim/trace.h"
#include "util/atomic_file.h"
#include "util/parse.h"

namespace strata::experiments {

namespace {

// A batch or sequence length: 0 (the model's default) or 1..kMaxModelDim. The command line has checked it
// already; a caller from Python gets the same message.
std::int64_t checked_dim(std::int64_t value, const char* option) {
  return value == 0 ? 0 : check_int(value, {1, kMaxModelDim}, option);
}

}  // namespace

models::Graph load_model(const ModelQuery& q, std::optional<models::zoo::TransformerSpec>* spec) {
  const auto ref = models::zoo::resolve_model_ref(q.model);
  if (spec) *spec = ref.transformer;
  models::zoo::ModelRefOptions opt;
  opt.batch = checked_dim(q.batch, "--batch");
  opt.seq = checked_dim(q.seq, "--seq");
  for (const auto& d : q.dims)
    for (const auto& [name, value] : util::parse_key_values(d, "--dim"))
      opt.onnx_dims[name] = util::parse_int(value, {1, kMaxModelDim}, "--dim " + name);
  if (ref.kind != models::zoo::ModelRefKind::kOnnx) {
    auto dt = models::parse_dtype(q.dtype);
    if (!dt || !models::is_float(*dt))
      throw std::invalid_argument(fmt::format("--dtype: expected f32, f16, bf16 or f64, got '{}'", q.dtype));
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

ModelSummary summarize_model(const models::Graph& g) {
  using namespace models;
  ModelSummary s;
  s.name = g.name();
  s.nodes = g.nodes().size();
  s.parameters = g.param_count();
  s.parameter_bytes = g.param_bytes();
  s.flops = g.total_flops();
  for (const auto& n : g.nodes())
    if (n.op->kind == OpKind::kContraction) s.matmul_macs += node_flops(g, n) / 2;
  for (const auto& v : g.values())
    if (v.kind == ValueKind::kActivation) s.activation_bytes += v.type.bytes();
  s.memory = memory_profile(g);
  std::map<std::string, OperatorTotals> rows;
  for (const auto& n : g.nodes()) {
    auto& r = rows[std::string(n.op->name)];
    r.op = n.op->name;
    ++r.count;
    r.flops += node_flops(g, n);
    r.bytes += node_bytes(g, n);
  }
  for (auto& [name, r] : rows) s.operators.push_back(std::move(r));
  return s;
}

std::string describe_model(const models::Graph& g, bool list_nodes,
                           const std::optional<models::zoo::TransformerSpec>& spec) {
  using namespace models;
  std::string out = fmt::format("model: {}\n", g.name());
  if (spec) {
    const auto p = zoo::transformer_params(*spec);
    out += fmt::format("transformer: {}\n", zoo::format_transformer_spec(*spec));
    out += fmt::format("  parameters: {} = {} layers x {} + embedding {} + head {}{}\n", count_str(p.total),
                       spec->layers, count_str(p.per_layer), count_str(p.embedding), count_str(p.head),
                       spec->moe() ? fmt::format("; active per token {}", count_str(p.active)) : "");
  }
  for (auto v : g.values_of(ValueKind::kInput))
    out += fmt::format("  input   {:<28} {}\n", g.value(v).name, type_str(g.type(v)));
  for (auto v : g.outputs())
    out += fmt::format("  output  {:<28} {}\n", g.value(v).name, type_str(g.type(v)));
  const auto s = summarize_model(g);
  out += fmt::format("nodes: {}   parameters: {} ({})\n", s.nodes, count_str(s.parameters),
                     units::format_bytes(s.parameter_bytes));
  out += fmt::format("forward FLOPs: {}FLOP ({} multiply-adds in matmul/conv)\n", count_str(s.flops),
                     count_str(s.matmul_macs));
  const auto& mem = s.memory;
  out += fmt::format(
      "activations: {} in all; peak memory of one pass {} (parameters {} + inputs/constants {} + "
      "live activations {})\n",
      units::format_bytes(s.activation_bytes), units::format_bytes(mem.peak()),
      units::format_bytes(mem.params), units::format_bytes(mem.inputs + mem.constants + mem.optimizer_state),
      units::format_bytes(mem.peak_transient));
  const double total = std::max(s.flops, 1.0);
  out += fmt::format("\n  {:<20} {:>6} {:>12} {:>7} {:>12}\n", "operator", "count", "FLOP", "share", "bytes");
  for (const auto& r : s.operators)
    out += fmt::format("  {:<20} {:>6} {:>12} {:>6.1f}% {:>12}\n", r.op, r.count, count_str(r.flops),
                       100 * r.flops / total, units::format_bytes(r.bytes));
  if (!list_nodes) return out;
  out += "\nnodes:\n";
  for (const auto& n : g.nodes()) {
    std::string ins, outs;
    for (auto v : n.inputs) ins += (ins.empty() ? "" : ", ") + type_str(g.type(v));
    for (auto v : n.outputs) outs += (outs.empty() ? "" : ", ") + type_str(g.type(v));
    out += fmt::format("  {:<40} {:<16} ({}) -> {}{}{}\n", n.name, n.op->name, ins, outs,
                       n.attrs.items().empty() ? "" : "  ", n.attrs.str());
  }
  return out;
}

models::Optimizer parse_optimizer(const std::string& name) {
  if (name == "adam") return models::Optimizer::kAdam;
  if (name == "sgd") return models::Optimizer::kSgd;
  throw std::invalid_argument(fmt::format("--optimizer: expected adam or sgd, got '{}'", name));
}

ModelSimReport simulate_model(const ModelSimQuery& q) {
  using namespace models;
  auto topo = hw::load_system(q.hw);
  if (q.gpu < 0 || q.gpu >= topo.num_gpus())
    throw ConfigError(fmt::format("--gpu: {} is not a GPU of {} (0..{})", q.gpu, q.hw, topo.num_gpus() - 1));
  Graph forward = load_model(q.model);
  const std::int64_t batch = forward.values_of(ValueKind::kInput).empty()
                                 ? 1
                                 : forward.type(forward.values_of(ValueKind::kInput)[0]).shape.at(0);
  Graph g = forward;
  if (q.train) g = derive_training_graph(forward, {.optimizer = parse_optimizer(q.optimizer)}).graph;
  std::optional<ProfileDb> db;
  if (!q.profile.empty()) db = ProfileDb::load(q.profile);
  const CostModel cost(topo.gpu(), roofline_params_for(q.cost_params, topo.gpu().name), db ? &*db : nullptr);
  auto r = simulate_graph(g, topo, cost, {.gpu = q.gpu, .record_timeline = q.record_timeline});
  return ModelSimReport{std::move(topo), std::move(forward), std::move(g), batch, std::move(r)};
}

void write_model_trace(const ModelSimReport& report, const std::string& path) {
  util::write_file_atomically(path,
                              sim::chrome_trace_json(report.topo, report.result.tasks, report.result.sim));
}

std::string describe_model_sim(const ModelSimQuery& q, const ModelSimReport& report, int top) {
  using namespace models;
  const auto& g = report.graph;
  const auto& r = report.result;
  const auto& gpu = report.topo.gpu();
  const DType dt = g.outputs().empty() ? DType::kF32 : g.type(g.outputs()[0]).dtype;
  std::string out = fmt::format("model: {} ({}, batch {}, {}) on {} GPU {} ({})\n", report.forward.name(),
                                q.train ? "training step, " + q.optimizer : std::string("inference"),
                                report.batch, dtype_name(dt), report.topo.name(), q.gpu, gpu.name);
  const double peak = gpu.peak_flops(to_hw(dt));
  out += fmt::format(
      "step time: {}   throughput: {:.1f} samples/s   achieved: {:.1f} TFLOP/s ({:.1f}% of {} peak)\n",
      units::format_duration(r.seconds), static_cast<double>(report.batch) / r.seconds,
      r.flops / r.seconds / 1e12, 100 * r.flops / r.seconds / peak, hw::dtype_name(to_hw(dt)));
  int views = 0, measured = 0;
  for (const auto& b : r.by_op) measured += b.measured;
  for (const auto& n : g.nodes()) views += is_view(n);
  out += fmt::format("kernels: {} (+{} views without a kernel), {} timed from the profile database\n",
                     g.nodes().size() - static_cast<std::size_t>(views), views, measured);
  const auto& m = r.memory;
  out += fmt::format(
      "peak memory: {} = parameters {} + optimizer state {} + inputs/constants {} + "
      "activations/gradients {} (during '{}'); HBM {}{}\n",
      units::format_bytes(m.peak()), units::format_bytes(m.params), units::format_bytes(m.optimizer_state),
      units::format_bytes(m.inputs + m.constants), units::format_bytes(m.peak_transient),
      m.peak_node >= 0 ? g.node(m.peak_node).name : std::string("-"), units::format_bytes(gpu.hbm_capacity),
      m.peak() > gpu.hbm_capacity ? " -- DOES NOT FIT on one GPU" : "");
  out += fmt::format("\n  {:<20} {:>6} {:>12} {:>7} {:>12} {:>12}\n", "operator", "count", "time", "share",
                     "FLOP", "bytes");
  int shown = 0;
  for (const auto& b : r.by_op) {
    if (shown++ >= top) break;
    out += fmt::format("  {:<20} {:>6} {:>12} {:>6.1f}% {:>12} {:>12}\n", b.op, b.count,
                       units::format_duration(b.seconds), 100 * b.seconds / r.seconds, count_str(b.flops),
                       units::format_bytes(b.bytes));
  }
  if (static_cast<int>(r.by_op.size()) > top)
    out +=
        fmt::format("  ... {} more operator types (--top)\n", r.by_op.size() - static_cast<std::size_t>(top));
  return out;
}

}  // namespace strata::experiments
