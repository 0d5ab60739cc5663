// Collective size sweeps printed as nccl-tests tables, so simulated numbers line up with real runs.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "hw/gpu_spec.h"
#include "hw/topology.h"
#include "sim/collective_runner.h"
#include "sim/nccl_model.h"

namespace strata::experiments {

// Parses "8B:8GiB" (doubling, like nccl-tests -b 8 -e 8G -f 2) or "1MiB:1GiB:4" (factor 4) or a single size.
// Throws ConfigError naming `field` on bad input.
std::vector<double> parse_size_range(std::string_view text, std::string_view field);
// The same, returning the reason (without a field name) instead of throwing.
std::variant<std::vector<double>, std::string> read_size_range(std::string_view text);

struct SweepConfig {
  sim::CollectiveOp op = sim::CollectiveOp::kAllReduce;
  std::vector<double> sizes;
  std::string algorithm = "auto";
  std::optional<sim::Protocol> protocol;  // nullopt: auto
  hw::DType dtype = hw::DType::kFp32;
  int channels = 0;
  sim::Granularity granularity = sim::Granularity::kFlow;
  std::vector<hw::Rank> group;  // empty: every GPU of the system
};

struct SweepRow {
  double bytes;
  double count;  // elements, nccl-tests convention
  std::string algorithm;
  sim::Protocol protocol;
  double seconds, algbw, busbw;
};

// Runs the sweep; `on_row` (if set) is called as each row completes, for streaming output.
std::vector<SweepRow> run_sweep(const hw::Topology& topo, const SweepConfig& config,
                                const std::function<void(const SweepRow&)>& on_row = {});

std::string table_header(const hw::Topology& topo, const SweepConfig& config);
std::string table_row(const SweepConfig& config, const SweepRow& row);
std::string table_footer(const std::vector<SweepRow>& rows);

}  // namespace strata::experiments
