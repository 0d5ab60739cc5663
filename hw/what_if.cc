#include "hw/what_if.h"

#include <array>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "hw/gpu_spec.h"
#include "hw/link_kind.h"
#include "hw/units.h"
#include "hw/yaml_patch.h"
#include "hw/yaml_reader.h"

namespace strata::hw {
namespace {

constexpr std::array kScaleFactors{
    ScaleFactorInfo{"nic_bandwidth", "bandwidth of node.nics.link (the inter-node network)"},
    ScaleFactorInfo{"nic_latency", "latency of node.nics.link"},
    ScaleFactorInfo{"fabric_bandwidth",
                    "bandwidth of node.fabric.link (NVLink or the node's scale-up fabric)"},
    ScaleFactorInfo{"fabric_latency", "latency of node.fabric.link"},
    ScaleFactorInfo{"pcie_bandwidth", "bandwidth of node.host.pcie"},
    ScaleFactorInfo{"link_latency", "latency of every link of the system (fabric, PCIe, CPU link, NICs)"},
    ScaleFactorInfo{"gpu_flops", "every peak FLOP/s figure of the GPU (fp64 .. fp8)"},
    ScaleFactorInfo{"hbm_bandwidth", "the GPU's HBM bandwidth"},
};

double parse_bandwidth_or_zero(std::string_view t) {
  return units::parse_bandwidth(t).value_or(0);
}
double parse_duration_or_negative(std::string_view t) {
  return units::parse_duration(t).value_or(-1);
}
double parse_flops_or_zero(std::string_view t) {
  return units::parse_flops(t).value_or(0);
}

std::string bandwidth_text(double v) {
  return exact_quantity_text(v, 1, "B/s", &parse_bandwidth_or_zero);
}
std::string duration_text(double v) {
  return exact_quantity_text(v, 1, "s", &parse_duration_or_negative);
}
std::string flops_text(double v) {
  return exact_quantity_text(v, 1e9, "GFLOPS", &parse_flops_or_zero);
}

// The node at `path` (keys below root), or an undefined node when a key is missing.
YAML::Node find(YAML::Node root, std::initializer_list<std::string_view> path) {
  YAML::Node n = root;
  for (auto key : path) {
    if (!n.IsMap() || !n[std::string(key)]) return YAML::Node(YAML::NodeType::Undefined);
    n.reset(n[std::string(key)]);  // never `n = ...`: YAML::Node's operator= writes through
  }
  return n;
}

// Scales the bandwidth or latency of the link at `path`.`key`, which must exist.
void scale_link(YAML::Node root, const std::string& file, std::initializer_list<std::string_view> path,
                std::string_view key, bool bandwidth, double factor) {
  std::string field;
  for (auto p : path) field += std::string(p) + ".";
  field += key;
  std::vector<std::string_view> full(path.begin(), path.end());
  full.push_back(key);
  YAML::Node link = root;
  for (auto k : full) {
    if (!link.IsMap() || !link[std::string(k)])
      throw ConfigError(fmt::format("{}: {}: the system has no such link to scale", file, field));
    link.reset(link[std::string(k)]);
  }
  const YamlReader r(file, link, field);
  const YamlReader kind_node = r.is_map() ? r.at("kind") : r;
  const LinkKind* kind = find_link_kind(kind_node.as_string());
  if (!kind) throw kind_node.error("unknown link kind (see `strata hw list`)");
  YAML::Node scaled = r.is_map() ? shallow_copy(link) : YAML::Node(YAML::NodeType::Map);
  if (!r.is_map()) scaled["kind"] = YAML::Node(kind->name);
  if (bandwidth) {
    const double base = r.is_map() && r.has("bandwidth") ? r.at("bandwidth").as_bandwidth() : kind->bandwidth;
    scaled["bandwidth"] = YAML::Node(bandwidth_text(base * factor));
  } else {
    const double base = r.is_map() && r.has("latency") ? r.at("latency").as_duration() : kind->latency;
    scaled["latency"] = YAML::Node(duration_text(base * factor));
  }
  std::vector<std::string> keys(full.begin(), full.end());
  const std::string why = set_at_path(root, keys, scaled);
  if (!why.empty()) throw ConfigError(fmt::format("{}: {}: {}", file, field, why));
}

void scale_gpu(YAML::Node root, const std::string& file, bool flops, double factor) {
  if (!root.IsMap() || !root["gpu"]) throw ConfigError(fmt::format("{}: gpu: missing", file));
  const YAML::Node gpu = root["gpu"];
  const YamlReader r(file, gpu, "gpu");
  const YamlReader model_node = r.is_map() ? r.at("model") : r;
  const GpuSpec* base = find_gpu(model_node.as_string());
  if (!base) throw model_node.error("unknown GPU model (see `strata hw list`)");
  YAML::Node scaled = r.is_map() ? shallow_copy(gpu) : YAML::Node(YAML::NodeType::Map);
  if (!r.is_map()) scaled["model"] = YAML::Node(base->name);
  if (!flops) {
    const double hbm =
        r.is_map() && r.has("hbm_bandwidth") ? r.at("hbm_bandwidth").as_bandwidth() : base->hbm_bandwidth;
    scaled["hbm_bandwidth"] = YAML::Node(bandwidth_text(hbm * factor));
  } else {
    const std::optional<YamlReader> written = r.is_map() ? r.maybe("peak") : std::nullopt;
    YAML::Node peak = written ? shallow_copy(written->node()) : YAML::Node(YAML::NodeType::Map);
    const std::array<std::pair<std::string_view, double>, 6> catalogue{{{"fp64", base->peak_fp64},
                                                                        {"fp32", base->peak_fp32},
                                                                        {"tf32", base->peak_tf32},
                                                                        {"fp16", base->peak_fp16},
                                                                        {"bf16", base->peak_bf16},
                                                                        {"fp8", base->peak_fp8}}};
    for (const auto& [dtype, value] : catalogue) {
      const std::string key(dtype);
      const double v = written && written->has(key) ? written->at(key).as_flops() : value;
      if (v > 0) peak[key] = YAML::Node(flops_text(v * factor));  // a dtype the GPU lacks stays absent
    }
    scaled["peak"] = peak;
  }
  root["gpu"] = scaled;  // the root belongs to this tree alone
}

}  // namespace

std::span<const ScaleFactorInfo> scale_factors() {
  return kScaleFactors;
}

std::string scale_factor_names() {
  std::string names;
  for (const auto& f : kScaleFactors) names += fmt::format("{}{}", names.empty() ? "" : ", ", f.name);
  return names;
}

bool is_scale_factor(std::string_view name) {
  for (const auto& f : kScaleFactors)
    if (f.name == name) return true;
  return false;
}

std::string exact_quantity_text(double value, double unit_size, std::string_view unit,
                                double (*parse)(std::string_view)) {
  double written = value / unit_size;
  std::string text = fmt::format("{} {}", written, unit);
  for (int step = 0; step < 8; ++step) {
    const double back = parse(text);
    if (back == value) break;
    written = std::nextafter(written, back < value ? HUGE_VAL : -HUGE_VAL);
    text = fmt::format("{} {}", written, unit);
  }
  return text;
}

void apply_scale(YAML::Node root, const std::string& file, std::string_view name, double factor) {
  if (!(factor > 0) || !std::isfinite(factor))
    throw ConfigError(fmt::format("scale {}: expected a factor > 0, got {}", name, factor));
  if (name == "nic_bandwidth" || name == "nic_latency") {
    if (!find(root, {"node", "nics", "link"}))
      throw ConfigError(
          fmt::format("{}: node.nics: the system has no NICs, so scale {} has nothing to scale", file, name));
    scale_link(root, file, {"node", "nics"}, "link", name == "nic_bandwidth", factor);
  } else if (name == "fabric_bandwidth" || name == "fabric_latency") {
    if (!find(root, {"node", "fabric", "link"}))
      throw ConfigError(fmt::format(
          "{}: node.fabric.link: the node has no scale-up fabric link, so scale {} has nothing to scale",
          file, name));
    scale_link(root, file, {"node", "fabric"}, "link", name == "fabric_bandwidth", factor);
  } else if (name == "pcie_bandwidth") {
    scale_link(root, file, {"node", "host"}, "pcie", true, factor);
  } else if (name == "link_latency") {
    if (find(root, {"node", "fabric", "link"}))
      scale_link(root, file, {"node", "fabric"}, "link", false, factor);
    if (find(root, {"node", "host", "pcie"})) scale_link(root, file, {"node", "host"}, "pcie", false, factor);
    if (find(root, {"node", "host", "cpu_link"}))
      scale_link(root, file, {"node", "host"}, "cpu_link", false, factor);
    if (find(root, {"node", "nics", "link"})) scale_link(root, file, {"node", "nics"}, "link", false, factor);
  } else if (name == "gpu_flops" || name == "hbm_bandwidth") {
    scale_gpu(root, file, name == "gpu_flops", factor);
  } else {
    throw ConfigError(
        fmt::format("scale: unknown scale factor '{}' (expected one of: {})", name, scale_factor_names()));
  }
}

}  // namespace strata::hw
