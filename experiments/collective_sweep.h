// Collective size sweeps printed as nccl-tests tables, so simulated numbers line up with real runs.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hw/gpu_spec.h"
#include "hw/topology.h"
#include "sim/collective_runner.h"
#include "sim/nccl_model.h"

namespace strata::experiments {

// A size sweep "MIN:MAX[:FACTOR]" or a single SIZE, by the one size rule of util/parse.h (plain integers are
// bytes; K/M/G/T and KiB/MiB/GiB/TiB powers of 1024 as in nccl-tests; KB/MB/GB/TB powers of 1000). Throws
// util::InputError whose message starts with `field`.
std::vector<double> parse_size_range(std::string_view text, std::string_view field);

struct SweepConfig {
  sim::CollectiveOp op = sim::CollectiveOp::kAllReduce;
  std::vector<double> sizes;
  std::string algorithm = "auto";
  std::optional<sim::Protocol> protocol;  // nullopt: auto
  hw::DType dtype = hw::DType::kFp32;
  int channels = 0;
  sim::Granularity granularity = sim::Granularity::kFlow;
  std::vector<hw::Rank> group;  // empty: every GPU of the system
  // Add NCCL 2.21's own predicted time of what ran (its tuner's cost model on NCCL's topology graphs as
  // strata rebuilds them, sim/nccl_tuner.h): a rating to hold the simulation against, not a measurement.
  bool nccl_rating = false;
};

struct SweepRow {
  double bytes;
  double count;  // elements, nccl-tests convention
  std::string algorithm;
  sim::Protocol protocol;
  double seconds, algbw, busbw;
  // NCCL's own rating of the row's algorithm and protocol (SweepConfig::nccl_rating), seconds; nullopt where
  // it was not asked for or NCCL does not rate the pair (strata's own schedules, graphs not rebuilt).
  std::optional<double> nccl_seconds = std::nullopt;
};

// A collective sweep as the command line and the Python API name it (`strata sim collective` options):
// text values checked and turned into a SweepConfig by sweep_config.
struct CollectiveQuery {
  std::string op = "allreduce", algo = "auto", protocol = "auto", sizes = "8B:8GiB", dtype = "fp32",
              granularity = "flow";
  std::string group;  // "0-7", "0,8,16" (util::parse_rank_set); empty: every GPU
  int channels = 0;
};

// The sweep `query` names on `topo`. Throws ConfigError or util::InputError naming the option (--op, --algo,
// --protocol, --granularity, --dtype, --sizes, --group) and what was expected.
SweepConfig sweep_config(const hw::Topology& topo, const CollectiveQuery& query);

// Runs the sweep; `on_row` (if set) is called as each row completes, for streaming output.
std::vector<SweepRow> run_sweep(const hw::Topology& topo, const SweepConfig& config,
                                const std::function<void(const SweepRow&)>& on_row = {});

// nccl-tests' redop and root columns for `op`: "sum" for reductions, "none" otherwise; root 0 for Reduce
// and Broadcast, -1 otherwise.
std::string_view redop_column(sim::CollectiveOp op);
int root_column(sim::CollectiveOp op);

// `--trace`: the sweep's largest size simulated again with the algorithm and protocol that ran (`last`, the
// sweep's last row) and a timeline, written to `path` as a Chrome/Perfetto trace. Returns every link's use,
// busiest first.
std::vector<sim::LinkUsage> write_collective_trace(const hw::Topology& topo, const SweepConfig& config,
                                                   const SweepRow& last, const std::string& path);

std::string table_header(const hw::Topology& topo, const SweepConfig& config);
std::string table_row(const SweepConfig& config, const SweepRow& row);
std::string table_footer(const std::vector<SweepRow>& rows);

}  // namespace strata::experiments
