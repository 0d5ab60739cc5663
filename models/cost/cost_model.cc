#include "models/cost/cost_model.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "hw/config_error.h"
#include "hw/limits.h"
#include "util/atomic_file.h"
#include "util/file.h"
#include "util/json.h"

namespace strata::models {

// Engineering priors, not measurements: large tensor-core GEMMs/convolutions reach ~80% of peak and lose
// half of that at ~2 us of ideal work; streaming kernels reach 80-90% of HBM bandwidth above a few MB;
// reductions and normalizations, with their two passes and cross-thread sums, less. Measured profiles
// (--profile) replace these where available; docs/models.md lists them.
RooflineParams RooflineParams::defaults() {
  RooflineParams p;
  auto set = [&](OpKind k, Efficiency c, Efficiency m) { p.by_kind[static_cast<std::size_t>(k)] = {c, m}; };
  set(OpKind::kContraction, {0.80, 2e-6}, {0.80, 1e-6});
  set(OpKind::kElementwise, {0.50, 1e-6}, {0.90, 1e-6});
  set(OpKind::kReduction, {0.50, 2e-6}, {0.80, 2e-6});
  set(OpKind::kDataMovement, {0.50, 1e-6}, {0.75, 1e-6});
  set(OpKind::kView, {1.0, 0}, {1.0, 0});
  set(OpKind::kConstant, {0.50, 1e-6}, {0.90, 1e-6});
  set(OpKind::kOptimizer, {0.50, 1e-6}, {0.85, 1e-6});
  return p;
}

const KindEfficiency& RooflineParams::efficiency(const OpDef& op, std::string_view variant) const {
  if (!variant.empty())
    if (auto it = by_op.find(cost_curve_name(op, variant)); it != by_op.end()) return it->second;
  if (auto it = by_op.find(op.name); it != by_op.end()) return it->second;
  return by_kind[static_cast<std::size_t>(op.kind)];
}

bool is_view(const Node& n) {
  return n.op->kind == OpKind::kView || (n.op->name == "transpose" && n.attrs.i("shuffle") == 0);
}

std::string_view cost_variant_of(const Graph& g, const Node& n) {
  return n.op->cost_variant ? n.op->cost_variant(input_types(g, n), n.attrs) : std::string_view{};
}

std::string cost_curve_name(const OpDef& op, std::string_view variant) {
  return variant.empty() ? std::string(op.name) : fmt::format("{}:{}", op.name, variant);
}

std::string cost_curve_name(const Graph& g, const Node& n) {
  return cost_curve_name(*n.op, cost_variant_of(g, n));
}

std::string profile_key(const Graph& g, const Node& n, std::string_view device) {
  std::string types;
  for (auto v : n.inputs) types += (types.empty() ? "" : ";") + type_str(g.type(v));
  return fmt::format("{}|{}|{}|{}", n.op->name, n.attrs.str(), types, device);
}

bool split_is_view(const Graph& g, const Node& n) {
  if (n.op->name != "split" || n.inputs.empty()) return false;
  const auto& s = g.type(n.inputs[0]).shape;
  auto axis = n.attrs.i("axis");
  if (axis < 0) axis += static_cast<std::int64_t>(s.size());
  bool contiguous = true;
  for (std::int64_t d = 0; d < axis && d < static_cast<std::int64_t>(s.size()); ++d)
    if (s[static_cast<std::size_t>(d)] != 1) contiguous = false;
  if (contiguous) return true;
  // Row-strided parts: fine for consumers that take strided operands (element-wise kernels, GEMM lda/ldb),
  // not for graph outputs or consumers that need contiguous memory (reshape, ...).
  for (ValueId o : n.outputs)
    if (std::find(g.outputs().begin(), g.outputs().end(), o) != g.outputs().end()) return false;
  for (const Node& c : g.nodes()) {
    const bool reads = std::any_of(c.inputs.begin(), c.inputs.end(), [&](ValueId v) {
      return std::find(n.outputs.begin(), n.outputs.end(), v) != n.outputs.end();
    });
    if (!reads) continue;
    const bool strided_ok = c.op->kind == OpKind::kElementwise || c.op->name == "matmul" ||
                            c.op->name == "batch_matmul" || c.op->name == "scalar_mul" ||
                            c.op->name == "split" || c.op->name == "concat";
    if (!strided_ok) return false;
  }
  return true;
}

double grouped_conv_tile_utilization(const Graph& g, const Node& n, const hw::GemmTile& tile) {
  if (n.op->name != "conv2d" || n.inputs.size() < 2) return 1.0;
  const std::int64_t groups = n.attrs.i("groups");
  const auto& w = g.type(n.inputs[1]).shape;  // [O, C/groups, kh, kw]
  if (groups <= 1 || w.size() != 4 || w[1] <= 1) return 1.0;
  const double per_group_n = static_cast<double>(w[0] / groups);
  const double per_group_k = static_cast<double>(w[1] * w[2] * w[3]);
  auto fill = [](double extent, double width) { return extent / (std::ceil(extent / width) * width); };
  return fill(per_group_n, tile.n) * fill(per_group_k, tile.k);
}

OpCost CostModel::node_cost(const Graph& g, const Node& n, const hw::GpuSpec& gpu) const {
  const DType dt = n.outputs.empty() ? DType::kF32 : g.type(n.outputs[0]).dtype;
  return node_cost(g, n, gpu, to_hw(dt));
}

OpCost CostModel::node_cost(const Graph& g, const Node& n, const hw::GpuSpec& gpu, hw::DType compute) const {
  OpCost c;
  c.flops = node_flops(g, n);
  c.bytes = node_bytes(g, n);
  if (is_view(n) || split_is_view(g, n)) {
    c.is_view = true;
    return c;
  }
  if (db_) {
    if (const double* s = db_->find(profile_key(g, n, gpu.name))) {
      c.seconds = *s;
      c.measured = true;
      return c;
    }
  }
  const auto& eff = params_.efficiency(*n.op, cost_variant_of(g, n));
  const double peak = gpu.peak_flops(compute);
  // With cache levels (a CPU's L2 and last-level cache), a kernel whose bytes fit in one moves them at its
  // bandwidth; a clearly larger one at the memory's, all of it: kernels sweep their operands in order, and a
  // sweep larger than a cache evicts its own lines before they are used again (a measured kernel is run
  // repeatedly, as are a model's layers on their producers' outputs). Near a level's capacity the rate lies
  // between the two (hw::GpuSpec::bandwidth_for).
  const double tc_ideal = c.flops / peak, tm_ideal = c.bytes / gpu.bandwidth_for(c.bytes);
  const double tc =
      c.flops > 0 ? tc_ideal / (eff.compute.at(tc_ideal) * grouped_conv_tile_utilization(g, n, gpu.gemm_tile))
                  : 0.0;
  const double tm = c.bytes > 0 ? tm_ideal / eff.memory.at(tm_ideal) : 0.0;
  c.compute_bound = tc >= tm;
  c.seconds = gpu.launch_overhead + std::max(tc, tm);
  return c;
}

sim::ComputeWork KernelCost::add(const Graph& g, NodeId node) {
  if (node < 0 || static_cast<std::size_t>(node) >= g.nodes().size())
    throw std::invalid_argument(fmt::format("KernelCost::add: graph '{}' has no node {} ({} nodes)", g.name(),
                                            node, g.nodes().size()));
  if (kernels_.size() >= static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()))
    throw std::length_error("KernelCost: more than 2^31 - 1 kernels");
  const Node& n = g.node(node);
  const DType dt = n.outputs.empty() ? DType::kF32 : g.type(n.outputs[0]).dtype;
  kernels_.push_back({&g, node});
  return {node_flops(g, n), node_bytes(g, n), to_hw(dt), static_cast<std::int32_t>(kernels_.size() - 1)};
}

double KernelCost::seconds(const sim::ComputeWork& work, const hw::GpuSpec& gpu) const {
  if (work.kernel < 0 || static_cast<std::size_t>(work.kernel) >= kernels_.size())
    throw std::invalid_argument(
        fmt::format("compute work with kernel {} was not registered with this KernelCost ({} kernels)",
                    work.kernel, kernels_.size()));
  const auto& k = kernels_[static_cast<std::size_t>(work.kernel)];
  return cost_.node_cost(*k.graph, k.graph->node(k.node), gpu).seconds;
}

const double* ProfileDb::find(const std::string& key) const {
  auto it = entries_.find(key);
  return it == entries_.end() ? nullptr : &it->second;
}

ProfileDb ProfileDb::load(const std::string& path) {
  return parse(util::read_file<ConfigError>(path, "a profile database (JSON)"), path);
}

ProfileDb ProfileDb::parse(std::string_view text, std::string_view source) {
  const nlohmann::json j = util::parse_json_strict<ConfigError>(text, source);
  if (!j.is_object() || !j.contains("entries") || !j["entries"].is_array())
    throw ConfigError(fmt::format("{}: expected an object with an \"entries\" array", source));
  ProfileDb db;
  std::map<std::string, std::size_t> first_index;  // key -> entries index where it first appeared
  std::size_t i = 0;
  for (const auto& e : j["entries"]) {
    auto field = [&](const char* name) -> const nlohmann::json& {
      if (!e.is_object() || !e.contains(name))
        throw ConfigError(fmt::format(
            "{}: entries[{}]: missing field \"{}\" (entries need op, attrs, inputs, device, seconds)", source,
            i, name));
      return e[name];
    };
    const auto& op = field("op");
    const auto& attrs = field("attrs");
    const auto& inputs = field("inputs");
    const auto& device = field("device");
    const auto& seconds = field("seconds");
    if (!op.is_string() || !attrs.is_string() || !device.is_string())
      throw ConfigError(fmt::format("{}: entries[{}]: op, attrs and device must be strings", source, i));
    if (!inputs.is_array())
      throw ConfigError(fmt::format(
          "{}: entries[{}].inputs: expected an array of type strings like \"f16[8,1024]\"", source, i));
    // Simulated time is int64 picoseconds; hw::limits::kMaxDuration (10^6 s) keeps every kernel time
    // convertible.
    if (!seconds.is_number() || !(seconds.get<double>() >= 0) ||
        seconds.get<double>() > hw::limits::kMaxDuration)
      throw ConfigError(fmt::format("{}: entries[{}].seconds: expected a number of seconds from 0 to {:g}",
                                    source, i, hw::limits::kMaxDuration));
    std::string types;
    for (const auto& t : inputs) {
      if (!t.is_string())
        throw ConfigError(fmt::format("{}: entries[{}].inputs: expected strings", source, i));
      types += (types.empty() ? "" : ";") + t.get<std::string>();
    }
    auto key = fmt::format("{}|{}|{}|{}", op.get<std::string>(), attrs.get<std::string>(), types,
                           device.get<std::string>());
    const auto [it, inserted] = first_index.emplace(key, i);
    if (!inserted)
      throw ConfigError(
          fmt::format("{}: entries[{}]: the same kernel as entries[{}] ({})", source, i, it->second, key));
    db.add(key, seconds.get<double>());
    ++i;
  }
  return db;
}

void ProfileDb::save(const std::string& path) const {
  nlohmann::json entries = nlohmann::json::array();
  for (const auto& [key, seconds] : entries_) {
    std::vector<std::string> parts;
    std::stringstream ss(key);
    std::string part;
    while (std::getline(ss, part, '|')) parts.push_back(part);
    parts.resize(4);
    nlohmann::json inputs = nlohmann::json::array();
    std::stringstream ts(parts[2]);
    while (std::getline(ts, part, ';')) inputs.push_back(part);
    entries.push_back({{"op", parts[0]},
                       {"attrs", parts[1]},
                       {"inputs", inputs},
                       {"device", parts[3]},
                       {"seconds", seconds}});
  }
  util::write_file_atomically(path, nlohmann::json{{"entries", entries}}.dump(2) + "\n");
}

}  // namespace strata::models
