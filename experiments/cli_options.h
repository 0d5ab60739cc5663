// Command-line values read by util's strict parsers (util/parse.h), so every integer, size and rank list
// follows one rule and a bad value ends the run with "strata: error: <option>: expected ..." (exit 2)
// instead of CLI11's conversion messages or a silent default.
#pragma once

#include <concepts>
#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "experiments/option_ranges.h"
#include "hw/topology.h"
#include "util/parse.h"

namespace strata::cli {

// An integer option `name` (e.g. "--nodes") stored in `target`, which must outlive parsing. The whole value
// must be a decimal integer in `range`; the help text gets the range appended, and the default (the value
// of `target` now) is shown when `show_default`.
template <std::integral T>
CLI::Option* add_int_option(CLI::App& cmd, const std::string& name, T& target, util::IntRange range,
                            const std::string& help, bool show_default = true) {
  auto* opt = cmd.add_option_function<std::string>(
      name,
      [&target, range, name](const std::string& text) {
        target = static_cast<T>(util::parse_int(text, range, name));
      },
      fmt::format("{} ({}..{})", help, range.min, range.max));
  opt->type_name("INT");
  if (show_default) opt->default_str(std::to_string(target));
  return opt;
}

// A floating-point option `name` stored in `target`: the whole value must be a finite number in [min, max]
// (util::parse_real; "nan" and "inf" are refused).
inline CLI::Option* add_real_option(CLI::App& cmd, const std::string& name, double& target, double min,
                                    double max, const std::string& help) {
  auto* opt = cmd.add_option_function<std::string>(
      name,
      [&target, min, max, name](const std::string& text) { target = util::parse_real(text, min, max, name); },
      fmt::format("{} ({}..{})", help, min, max));
  opt->type_name("NUMBER");
  opt->default_str(fmt::format("{}", target));
  return opt;
}

// --min-gain PERCENT for both graph optimizers (search/subst/min_gain.h), stored in `percent`.
inline CLI::Option* add_min_gain_option(CLI::App& cmd, double& percent) {
  return add_real_option(cmd, "--min-gain", percent, 0, 100,
                         "Both optimizers: percent of the input graph's predicted time their best graph must "
                         "save to be returned instead of the input (0: any cheaper graph, as TASO; "
                         "docs/subst.md)");
}

// The largest batch size, sequence length or symbolic ONNX dimension accepted (experiments/option_ranges.h).
using experiments::kMaxModelDim;
// Seeds: any non-negative 64-bit signed integer.
inline constexpr util::IntRange kSeedRange{0, INT64_MAX};

// --cost-params FILE: efficiency parameters for the roofline cost model (models/cost/cost_params.h), e.g.
// written by `strata validate calibrate-cost`; without it the engineering priors are used. The command turns
// the path into parameters with models::roofline_params_for(path, gpu name), which checks the device.
inline CLI::Option* add_cost_params_option(CLI::App& cmd, std::string& target) {
  return cmd.add_option("--cost-params", target,
                        "Cost-model efficiencies (JSON from `strata validate calibrate-cost`, fitted on the "
                        "system's GPU); default: the built-in priors");
}

// The GPUs named by `text` ("0-7", "0,8,16", see util::parse_rank_set) among `num_gpus`; "" means every GPU.
std::vector<hw::Rank> parse_rank_list(const std::string& text, int num_gpus, const std::string& option);

}  // namespace strata::cli
