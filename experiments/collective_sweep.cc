#include "experiments/collective_sweep.h"

#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "hw/config_error.h"
#include "hw/units.h"
#include "sim/nccl_tuner.h"
#include "sim/trace.h"
#include "util/atomic_file.h"
#include "util/parse.h"

namespace strata::experiments {

std::vector<double> parse_size_range(std::string_view text, std::string_view field) {
  const auto bytes = util::parse_size_range(text, field);
  return {bytes.begin(), bytes.end()};
}

SweepConfig sweep_config(const hw::Topology& topo, const CollectiveQuery& q) {
  SweepConfig cfg;
  auto op = sim::parse_op(q.op);
  if (!op)
    throw ConfigError(
        fmt::format("--op: unknown collective '{}' (expected one of: {})", q.op, sim::kOpNames));
  cfg.op = *op;
  if (const auto why = sim::unknown_algorithm_reason(q.algo); !why.empty())
    throw ConfigError("--algo: " + why);
  cfg.algorithm = q.algo;
  if (q.protocol != "auto") {
    auto p = sim::parse_protocol(q.protocol);
    if (!p)
      throw ConfigError(fmt::format("--protocol: expected auto, simple, ll or ll128, got '{}'", q.protocol));
    cfg.protocol = *p;
  }
  auto g = sim::parse_granularity(q.granularity);
  if (!g) throw ConfigError(fmt::format("--granularity: expected flow or step, got '{}'", q.granularity));
  cfg.granularity = *g;
  auto dt = hw::parse_dtype(q.dtype);
  if (!dt)
    throw ConfigError(
        fmt::format("--dtype: expected fp64, fp32, tf32, fp16, bf16 or fp8, got '{}'", q.dtype));
  cfg.dtype = *dt;
  cfg.sizes = parse_size_range(q.sizes, "--sizes");
  // The command line has checked the range already; a caller from Python gets the same message.
  cfg.channels =
      static_cast<int>(util::parse_int(std::to_string(q.channels), {0, sim::kMaxChannels}, "--channels"));
  cfg.group = q.group.empty() ? topo.all_ranks() : util::parse_rank_set(q.group, topo.num_gpus(), "--group");
  return cfg;
}

std::vector<SweepRow> run_sweep(const hw::Topology& topo, const SweepConfig& config,
                                const std::function<void(const SweepRow&)>& on_row) {
  const std::vector<hw::Rank> group = config.group.empty() ? topo.all_ranks() : config.group;
  const int n = static_cast<int>(group.size());
  const bool per_rank = config.op == sim::CollectiveOp::kAllGather ||
                        config.op == sim::CollectiveOp::kReduceScatter ||
                        config.op == sim::CollectiveOp::kAllToAll;
  // NCCL's graphs for the group, once per sweep: only what NCCL's tuner rates gets a rating.
  const auto model = config.nccl_rating ? sim::nccl::tuner_model(topo, group) : std::nullopt;
  std::vector<SweepRow> rows;
  for (double bytes : config.sizes) {
    sim::CollectiveRequest req;
    req.spec.op = config.op;
    req.spec.group = group;
    req.spec.bytes = bytes;
    req.spec.channels = config.channels;
    req.spec.granularity = config.granularity;
    req.spec.protocol = config.protocol.value_or(sim::Protocol::kSimple);
    req.algorithm = config.algorithm;
    req.auto_protocol = !config.protocol.has_value();
    if (!sim::is_tuner_choice(config.algorithm) && !config.protocol) {
      // Explicit algorithm, automatic protocol: the tuner's best protocol for that algorithm.
      sim::Protocol best = sim::Protocol::kSimple;
      double best_t = 1e300;
      for (const auto& e : sim::nccl::estimate_all(topo, req.spec, config.algorithm))
        if (e.algorithm == config.algorithm && e.seconds < best_t) {
          best_t = e.seconds;
          best = e.protocol;
        }
      req.spec.protocol = best;
    }
    const auto result = sim::run_collective(topo, req);
    SweepRow row{bytes,
                 bytes / hw::dtype_bytes(config.dtype) / (per_rank ? n : 1),
                 result.algorithm,
                 result.protocol,
                 result.seconds,
                 result.algbw,
                 result.busbw};
    if (const auto* algo = sim::AlgorithmRegistry::instance().find(result.algorithm); model && algo) {
      sim::CollectiveSpec ran = req.spec;
      ran.protocol = result.protocol;
      if (algo->nccl_unsupported_reason(ran, topo).empty())
        if (const auto t = sim::nccl::tuner_time(*model, algo->family(), result.protocol, config.op, bytes);
            t && std::isfinite(*t))
          row.nccl_seconds = *t;
    }
    rows.push_back(row);
    if (on_row) on_row(row);
  }
  return rows;
}

std::string table_header(const hw::Topology& topo, const SweepConfig& config) {
  const int n = config.group.empty() ? topo.num_gpus() : static_cast<int>(config.group.size());
  // Say when measured NCCL tables change what is simulated, and where to read how.
  const auto measured = topo.nccl_tables().given();
  const std::string tables =
      measured.empty() ? ""
                       : fmt::format(
                             "# measured NCCL tables, charged where they apply (docs/fidelity.md §6.3, "
                             "§6.4, §6.6): {}\n",
                             fmt::join(measured, ", "));
  return fmt::format(
      "# strata sim collective: {} on {} ({} GPUs: {} node(s) x {} {}), algorithm {}\n"
      "{}#\n"
      "#                                                              out-of-place\n"
      "#       size         count      type   redop    root       time   algbw   busbw  algo          "
      "proto{}\n"
      "#        (B)    (elements)                                 (us)  (GB/s)  (GB/s){}\n",
      sim::op_name(config.op), topo.name(), n, topo.nodes(), topo.gpus_per_node(), topo.gpu().name,
      config.algorithm, tables, config.nccl_rating ? "    nccl_time" : "",
      config.nccl_rating ? std::string(30, ' ') + "(us)" : "");
}

std::vector<sim::LinkUsage> write_collective_trace(const hw::Topology& topo, const SweepConfig& config,
                                                   const SweepRow& last, const std::string& path) {
  sim::CollectiveRequest req;
  req.spec.op = config.op;
  req.spec.group = config.group;
  req.spec.bytes = last.bytes;
  req.spec.channels = config.channels;
  req.spec.granularity = config.granularity;
  req.algorithm = last.algorithm;
  req.spec.protocol = last.protocol;
  req.auto_protocol = false;
  req.record_timeline = true;
  const auto result = sim::run_collective(topo, req);
  util::write_file_atomically(path, sim::chrome_trace_json(topo, result.graph, result.sim));
  return result.sim.link_usage(topo);
}

std::string_view redop_column(sim::CollectiveOp op) {
  const bool reduces = op == sim::CollectiveOp::kAllReduce || op == sim::CollectiveOp::kReduce ||
                       op == sim::CollectiveOp::kReduceScatter;
  return reduces ? "sum" : "none";
}

int root_column(sim::CollectiveOp op) {
  return op == sim::CollectiveOp::kReduce || op == sim::CollectiveOp::kBroadcast ? 0 : -1;
}

std::string table_row(const SweepConfig& config, const SweepRow& row) {
  // Times with nccl-tests' precision rule (2 decimals below 100 us, 1 below 10,000 us, none above) in a
  // column wide enough for 10^9 us, so columns never shift.
  const auto micros = [](double seconds) {
    const double us = seconds * 1e6;
    return us >= 1e4 ? fmt::format("{:.0f}", us) : fmt::format("{:.{}f}", us, us >= 100 ? 1 : 2);
  };
  const std::string protocol = !config.nccl_rating
                                   ? std::string(sim::protocol_name(row.protocol))
                                   : fmt::format("{:<6} {:>11}", sim::protocol_name(row.protocol),
                                                 row.nccl_seconds ? micros(*row.nccl_seconds) : "-");
  return fmt::format("{:>12.0f}  {:>12.0f}  {:>8}  {:>6}  {:>6}  {:>9}  {:>6.2f}  {:>6.2f}  {:<13} {}\n",
                     row.bytes, row.count, hw::dtype_name(config.dtype), redop_column(config.op),
                     root_column(config.op), micros(row.seconds), row.algbw / 1e9, row.busbw / 1e9,
                     row.algorithm, protocol);
}

std::string table_footer(const std::vector<SweepRow>& rows) {
  double sum = 0;
  for (const auto& r : rows) sum += r.busbw;
  return fmt::format("# Avg bus bandwidth    : {:.3f}\n#\n", rows.empty() ? 0.0 : sum / rows.size() / 1e9);
}

}  // namespace strata::experiments
