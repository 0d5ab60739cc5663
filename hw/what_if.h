// What-if scale factors for hardware studies ("what if the NIC were 4x faster?"): multiply one figure of a
// system YAML tree (configs/hw/*.yaml, docs/hardware.md) by a factor before hw/system_loader parses it. A
// link written as a catalogue name becomes a mapping {kind, bandwidth|latency} holding the catalogue value x
// factor; a GPU written as a model name becomes {model, peak|hbm_bandwidth} the same way; figures already
// overridden in the file are scaled from the written value. Used by experiment sweeps (`scale:`,
// docs/experiments.md).
#pragma once

#include <span>
#include <string>
#include <string_view>

#include <yaml-cpp/yaml.h>

namespace strata::hw {

struct ScaleFactorInfo {
  std::string_view name;         // as written under `scale:`, e.g. "nic_bandwidth"
  std::string_view description;  // which figures it multiplies
};

// Every scale factor, in documentation order.
std::span<const ScaleFactorInfo> scale_factors();
std::string scale_factor_names();  // "nic_bandwidth, nic_latency, ..."
bool is_scale_factor(std::string_view name);

// Multiplies the figure `name` of the system tree `root` (read from `file`) by `factor` (> 0, finite). The
// tree is rewritten by replacing nodes, never by writing through one: value nodes shared with other trees
// stay as they were. Throws ConfigError naming `file` and the field when the system has no such figure (no
// NICs, a node without a fabric) or the figure in the file is malformed.
void apply_scale(YAML::Node root, const std::string& file, std::string_view name, double factor);

// The text "<number> <unit>" that `parse` reads back as exactly `value` (a quantity in base units), written
// in `unit` (whose size in base units is `unit_size`): the shortest round-trip decimal of value / unit_size,
// nudged by one ulp at a time when the division and the parser's multiplication do not round back.
std::string exact_quantity_text(double value, double unit_size, std::string_view unit,
                                double (*parse)(std::string_view));

}  // namespace strata::hw
