#include "models/cost/cost_params.h"

#include <algorithm>

#include <fmt/format.h>

#include "hw/config_error.h"
#include "models/ir/op_def.h"
#include "util/atomic_file.h"
#include "util/file.h"
#include "util/json.h"

namespace strata::models {
namespace {

using nlohmann::json;

constexpr std::string_view kFormat = "strata-cost-params";
constexpr int kVersion = 1;
constexpr double kMaxEfficiency = 16;

struct Reader {
  std::string_view source;
  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw ConfigError(fmt::format("{}: {}: {}", source, field, what));
  }
  void expect_object(const json& j, const std::string& field,
                     std::initializer_list<std::string_view> keys) const {
    if (!j.is_object()) fail(field, "expected an object");
    for (const auto& [key, value] : j.items()) {
      bool known = false;
      for (auto k : keys) known = known || key == k;
      if (!known) {
        std::string list;
        for (auto k : keys) list += fmt::format("{}{}", list.empty() ? "" : ", ", k);
        fail(field.empty() ? key : field + "." + key,
             fmt::format("unknown field (expected one of: {})", list));
      }
    }
  }
  double number(const json& j, const std::string& field, double min, double max, bool min_open) const {
    if (!j.is_number()) fail(field, fmt::format("expected a number, got {}", j.dump()));
    const double v = j.get<double>();
    if (!(min_open ? v > min : v >= min) || !(v <= max))
      fail(field, fmt::format("expected a number in {}{}, {}], got {}", min_open ? "(" : "[", min, max, v));
    return v;
  }
  Efficiency efficiency(const json& j, const std::string& field) const {
    expect_object(j, field, {"max", "half_seconds"});
    for (const char* k : {"max", "half_seconds"})
      if (!j.contains(k)) fail(field, fmt::format("missing field \"{}\"", k));
    return {number(j["max"], field + ".max", 0, kMaxEfficiency, true),
            number(j["half_seconds"], field + ".half_seconds", 0, 1, false)};
  }
  KindEfficiency kind_efficiency(const json& j, const std::string& field, const KindEfficiency& base) const {
    expect_object(j, field, {"compute", "memory"});
    KindEfficiency k = base;
    if (j.contains("compute")) k.compute = efficiency(j["compute"], field + ".compute");
    if (j.contains("memory")) k.memory = efficiency(j["memory"], field + ".memory");
    return k;
  }
};

constexpr OpKind kKinds[] = {OpKind::kContraction,  OpKind::kElementwise, OpKind::kReduction,
                             OpKind::kDataMovement, OpKind::kView,        OpKind::kConstant,
                             OpKind::kOptimizer};

json efficiency_json(const KindEfficiency& k) {
  auto one = [](const Efficiency& e) { return json{{"max", e.max}, {"half_seconds", e.half_seconds}}; };
  return json{{"compute", one(k.compute)}, {"memory", one(k.memory)}};
}

}  // namespace

CostParams parse_cost_params(std::string_view text, std::string_view source) {
  const json j = util::parse_json_strict<ConfigError>(text, source);
  const Reader r{source};
  r.expect_object(j, "", {"format", "version", "device", "kinds", "ops", "fit"});
  if (!j.contains("format") || j["format"] != kFormat)
    r.fail("format",
           fmt::format("expected \"{}\" (a file written by strata validate calibrate-cost)", kFormat));
  if (!j.contains("version") || j["version"] != kVersion)
    r.fail("version", fmt::format("expected {}, got {}", kVersion, j.value("version", json()).dump()));
  if (!j.contains("device") || !j["device"].is_string() || j["device"].get<std::string>().empty())
    r.fail("device", "expected the GPU catalogue name the parameters were fitted on, e.g. \"host-cpu\"");
  CostParams p;
  p.device = j["device"].get<std::string>();
  p.roofline = RooflineParams::defaults();
  if (j.contains("kinds")) {
    const json& kinds = j["kinds"];
    if (!kinds.is_object()) r.fail("kinds", "expected an object keyed by operator kind");
    for (const auto& [name, value] : kinds.items()) {
      const OpKind* kind = nullptr;
      for (const auto& k : kKinds)
        if (op_kind_name(k) == name) kind = &k;
      if (!kind) {
        std::string list;
        for (auto k : kKinds) list += fmt::format("{}{}", list.empty() ? "" : ", ", op_kind_name(k));
        r.fail("kinds." + name, fmt::format("unknown operator kind (expected one of: {})", list));
      }
      auto& slot = p.roofline.by_kind[static_cast<std::size_t>(*kind)];
      slot = r.kind_efficiency(value, "kinds." + name, slot);
    }
  }
  if (j.contains("ops")) {
    const json& ops = j["ops"];
    if (!ops.is_object()) r.fail("ops", "expected an object keyed by operator name");
    for (const auto& [name, value] : ops.items()) {
      // "<operator>" or "<operator>:<variant>" (models/cost/cost_model.h, cost_curve_name).
      const auto colon = name.find(':');
      const std::string op_name = name.substr(0, colon);
      const OpDef* op = OpRegistry::instance().find(op_name);
      if (!op)
        r.fail("ops." + name, fmt::format("unknown operator '{}' (expected one of: {})", op_name,
                                          OpRegistry::instance().names()));
      if (colon != std::string::npos) {
        const std::string_view variant = std::string_view(name).substr(colon + 1);
        if (std::find(op->cost_variants.begin(), op->cost_variants.end(), variant) == op->cost_variants.end())
          r.fail("ops." + name,
                 op->cost_variants.empty()
                     ? fmt::format("{} has no kernel variants with curves of their own (expected \"{}\")",
                                   op_name, op_name)
                     : fmt::format("unknown variant '{}' of {} (expected one of: {})", variant, op_name,
                                   fmt::join(op->cost_variants, ", ")));
      }
      p.roofline.by_op[name] =
          r.kind_efficiency(value, "ops." + name, p.roofline.by_kind[static_cast<std::size_t>(op->kind)]);
    }
  }
  if (j.contains("fit")) p.fit = j["fit"];
  return p;
}

CostParams load_cost_params(const std::string& path) {
  return parse_cost_params(util::read_file<ConfigError>(path, "cost parameters (JSON)"), path);
}

std::string cost_params_json(const CostParams& p) {
  json kinds = json::object(), ops = json::object();
  for (auto k : kKinds)
    kinds[std::string(op_kind_name(k))] = efficiency_json(p.roofline.by_kind[static_cast<std::size_t>(k)]);
  for (const auto& [name, e] : p.roofline.by_op) ops[name] = efficiency_json(e);
  json j{{"format", kFormat}, {"version", kVersion}, {"device", p.device}, {"kinds", kinds}, {"ops", ops}};
  if (!p.fit.is_null()) j["fit"] = p.fit;
  return j.dump(2) + "\n";
}

void save_cost_params(const std::string& path, const CostParams& p) {
  util::write_file_atomically(path, cost_params_json(p));
}

RooflineParams roofline_params_for(const std::string& path, std::string_view gpu) {
  if (path.empty()) return RooflineParams::defaults();
  auto p = load_cost_params(path);
  if (p.device != gpu)
    throw ConfigError(fmt::format(
        "{}: device: the cost parameters were fitted on '{}' but the system's GPU is '{}' (efficiencies of "
        "one device do not carry over to another)",
        path, p.device, gpu));
  return std::move(p.roofline);
}

}  // namespace strata::models
