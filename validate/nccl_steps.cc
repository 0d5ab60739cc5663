#include "validate/nccl_steps.h"

#include <algorithm>
#include <cmath>
#include <regex>
#include <stdexcept>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "hw/units.h"
#include "hw/yaml_patch.h"
#include "sim/algorithms/algorithms.h"
#include "sim/nccl_model.h"
#include "util/error.h"
#include "util/parse.h"

namespace strata::validate {
namespace {

// `align` bytes: the unit's granularity (4 KiB, or 9,600 B for an LL128 step).
void check_unit_run(int ranks, double unit_bytes, std::int64_t align, double max_bytes,
                    std::span<const int> counts, int min_count, std::string_view unit,
                    std::string_view count) {
  if (ranks < 2) throw std::invalid_argument("an NCCL all-reduce microbenchmark needs at least 2 ranks");
  const auto whole = static_cast<std::int64_t>(unit_bytes);
  // Sizes in whole KiB as KiB, others in bytes (an LL128 step: 9600 B, 576000 B).
  const std::string multiple =
      align % 1024 == 0 ? fmt::format("{} KiB", align / 1024) : fmt::format("{} B", align);
  const std::string most = std::fmod(max_bytes, 1024) == 0
                               ? units::format_bytes(max_bytes)
                               : fmt::format("{} B", static_cast<std::int64_t>(max_bytes));
  if (whole <= 0 || static_cast<double>(whole) != unit_bytes || whole % align != 0 || unit_bytes > max_bytes)
    throw std::invalid_argument(
        fmt::format("{} of {} B: expected a multiple of {} up to {}", unit, unit_bytes, multiple, most));
  if (counts.size() < 2) throw std::invalid_argument(fmt::format("expected at least two {} counts", count));
  for (std::size_t i = 0; i < counts.size(); ++i)
    if (counts[i] < min_count || (i > 0 && counts[i] <= counts[i - 1]))
      throw std::invalid_argument(
          fmt::format("{} counts must be at least {} and increasing", count, min_count));
}

// One all-reduce of `bytes` over every rank.
PlanCase all_reduce_case(std::string name, int ranks, std::int64_t bytes) {
  std::vector<int> group(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) group[static_cast<std::size_t>(r)] = r;
  return {std::move(name), {PlanStep{{PlanCall{sim::CollectiveOp::kAllReduce, std::move(group), bytes}}}}};
}

// One unit size's runs: NCCL's settings, and per count c one all-reduce over every rank of bytes(c) bytes
// that makes units(c) units on the one channel, named "<unit> <size> KiB, <c> <counted>".
template <class Bytes, class Units>
UnitRun unit_run(int ranks, double unit_bytes, std::vector<EnvVar> env, std::span<const int> counts,
                 std::string_view unit, std::string_view counted, int warmup, int iterations, Bytes bytes,
                 Units units) {
  UnitRun run;
  run.unit_bytes = unit_bytes;
  run.env = std::move(env);
  run.plan.ranks = ranks;
  run.plan.warmup = warmup;
  run.plan.iterations = iterations;
  for (int c : counts) {
    run.plan.cases.push_back(all_reduce_case(
        fmt::format("{} {} KiB, {} {}", unit, static_cast<std::int64_t>(unit_bytes) / 1024, c, counted),
        ranks, bytes(static_cast<std::int64_t>(c))));
    run.counts.push_back(units(c));
  }
  check_plan(run.plan);
  return run;
}

// NCCL's `algo` on one channel with `protocol` and a buffer of `buffsize` bytes (8 steps), NVLS off. The
// buffer's variable is the protocol's: NCCL_BUFFSIZE for Simple, NCCL_LL128_BUFFSIZE for LL128.
std::vector<EnvVar> one_channel(std::string algo, std::string protocol, std::int64_t buffsize) {
  std::string buffer = protocol == "LL128" ? "NCCL_LL128_BUFFSIZE" : "NCCL_BUFFSIZE";
  return {{"NCCL_ALGO", std::move(algo)}, {"NCCL_PROTO", std::move(protocol)},
          {"NCCL_MIN_NCHANNELS", "1"},    {"NCCL_MAX_NCHANNELS", "1"},
          {"NCCL_NVLS_ENABLE", "0"},      {std::move(buffer), std::to_string(buffsize)}};
}

// `algo` under LL128 on one channel, its buffer 8 steps that carry `payload` bytes each: a step is payload x
// 128/120 bytes of the buffer (sim::nccl::kLl128StepBytes / kLl128StepPayload).
std::vector<EnvVar> one_ll128_channel(std::string algo, double payload) {
  return one_channel(std::move(algo), "LL128",
                     std::llround(payload * (sim::nccl::kLl128StepBytes / sim::nccl::kLl128StepPayload)) * 8);
}

}  // namespace

UnitRun ring_slice_run(int ranks, double slice_bytes, std::span<const int> loops, int warmup,
                       int iterations) {
  check_unit_run(ranks, slice_bytes, 4096, 64.0 * 1024 * 1024, loops, 1, "a slice", "loop");
  const auto slice = static_cast<std::int64_t>(slice_bytes);
  // A loop is N chunks of two slices on the one channel; every primitive handles a whole chunk.
  return unit_run(
      ranks, slice_bytes, one_channel("Ring", "Simple", 4 * slice), loops, "slice", "loops", warmup,
      iterations, [&](std::int64_t l) { return l * ranks * 2 * slice; },
      [&](int l) { return 2.0 * (2 * ranks - 1) * l; });
}

UnitRun ring_ll128_run(int ranks, double step_bytes, std::span<const int> loops, int warmup, int iterations) {
  // Payloads up to NCCL's default step, in whole chunk alignments, keep every loop's chunk exactly one step.
  check_unit_run(ranks, step_bytes, static_cast<std::int64_t>(sim::nccl::kLl128ChunkAlign),
                 sim::nccl::kLl128StepPayload, loops, 1, "an LL128 step", "loop");
  const auto step = static_cast<std::int64_t>(step_bytes);
  // A loop is N chunks of one step; every primitive moves one.
  return unit_run(
      ranks, step_bytes, one_ll128_channel("Ring", step_bytes), loops, "step", "loops", warmup, iterations,
      [&](std::int64_t l) { return l * ranks * step; }, [&](int l) { return (2.0 * ranks - 1) * l; });
}

UnitRun tree_ll128_chunk_run(int ranks, double chunk_bytes, std::span<const int> chunks, int warmup,
                             int iterations) {
  // NCCL halves an LL128 tree chunk while the channel carries too few of them (the simulator's rule,
  // sim::algorithms::ll128_tree_chunk_bytes, with one rank on each of `ranks` nodes): the fewest chunks, from
  // 8 on, that keep it whole.
  int fewest = 8;
  while (fewest < 1 << 20 &&
         sim::algorithms::ll128_tree_chunk_bytes(fewest * chunk_bytes, ranks, 1, chunk_bytes) != chunk_bytes)
    ++fewest;
  check_unit_run(ranks, chunk_bytes, static_cast<std::int64_t>(sim::nccl::kLl128ChunkAlign),
                 sim::nccl::kLl128StepPayload, chunks, fewest, "an LL128 chunk", "chunk");
  const auto chunk = static_cast<std::int64_t>(chunk_bytes);
  // The one channel carries the whole message, one chunk per step of its buffer.
  return unit_run(
      ranks, chunk_bytes, one_ll128_channel("Tree", chunk_bytes), chunks, "chunk", "chunks", warmup,
      iterations, [&](std::int64_t k) { return k * chunk; }, [](int k) { return static_cast<double>(k); });
}

UnitRun tree_chunk_run(int ranks, double chunk_bytes, std::span<const int> chunks, int warmup,
                       int iterations) {
  check_unit_run(ranks, chunk_bytes, 4096, 4.0 * 1024 * 1024, chunks, 8, "a chunk", "chunk");
  const auto chunk = static_cast<std::int64_t>(chunk_bytes);
  // The one channel carries the whole message, one chunk per step of its buffer.
  return unit_run(
      ranks, chunk_bytes, one_channel("Tree", "Simple", 8 * chunk), chunks, "chunk", "chunks", warmup,
      iterations, [&](std::int64_t k) { return k * chunk; }, [](int k) { return static_cast<double>(k); });
}

UnitRun nvls_step_run(int ranks, double chunk_bytes, std::span<const int> steps, int warmup, int iterations) {
  check_unit_run(ranks, chunk_bytes, 4096, 512.0 * 1024, steps, 64, "a chunk", "step");
  const auto chunk = static_cast<std::int64_t>(chunk_bytes);
  // Every GPU is a head; a step moves one chunk per head.
  return unit_run(
      ranks, chunk_bytes,
      {{"NCCL_ALGO", "NVLS"}, {"NCCL_NVLS_NCHANNELS", "1"}, {"NCCL_NVLS_CHUNKSIZE", std::to_string(chunk)}},
      steps, "chunk", "steps", warmup, iterations, [&](std::int64_t n) { return n * ranks * chunk; },
      [](int n) { return static_cast<double>(n); });
}

UnitFit fit_units(std::span<const double> counts, std::span<const double> seconds) {
  if (counts.size() != seconds.size()) throw std::invalid_argument("fit_units: sizes differ");
  const auto n = static_cast<double>(counts.size());
  double mx = 0, my = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    mx += counts[i] / n;
    my += seconds[i] / n;
  }
  double sxx = 0, sxy = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    sxx += (counts[i] - mx) * (counts[i] - mx);
    sxy += (counts[i] - mx) * (seconds[i] - my);
  }
  if (counts.size() < 2 || !(sxx > 0))
    throw std::invalid_argument("fit_units: needs at least two different counts");
  UnitFit f;
  f.per_unit = sxy / sxx;
  if (!(f.per_unit > 0))
    throw std::invalid_argument("the run time does not grow with the count; nothing to fit");
  f.intercept = my - f.per_unit * mx;
  for (std::size_t i = 0; i < counts.size(); ++i)
    f.worst_residual =
        std::max(f.worst_residual, std::abs(seconds[i] - f.intercept - f.per_unit * counts[i]) / seconds[i]);
  return f;
}

std::optional<int> nccl_channels_from_log(std::string_view log) {
  static const std::regex coll(R"(NCCL INFO (\d+) coll channels)");
  static const std::regex ring(R"(NCCL INFO Channel \d+/(\d+) :(\s+\d+)+\s*$)");
  std::optional<int> from_coll, from_rings;
  for (const auto& text_line : util::split_lines(log)) {
    const std::string line(text_line.text);
    std::smatch m;
    const auto keep = [&](std::optional<int>& into) {
      const int c = std::stoi(m[1].str());
      if (c > 0 && c <= 1024) into = std::max(into.value_or(0), c);
    };
    if (std::regex_search(line, m, coll))
      keep(from_coll);
    else if (std::regex_search(line, m, ring))
      keep(from_rings);
  }
  return from_coll ? from_coll : from_rings;
}

hw::SizeTimes UnitMeasurement::table() const {
  std::vector<hw::SizeTime> t;
  for (const auto& p : points) t.push_back({p.unit_bytes, p.fit.per_unit});
  return hw::SizeTimes(std::move(t));
}

UnitMeasurement measure_units(const MeasureBackend& backend, const HostLaunch& launch,
                              std::span<const UnitRun> runs,
                              const std::function<void(const std::string&)>& progress) {
  UnitMeasurement m;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const UnitRun& run = runs[i];
    std::string settings;
    for (const auto& [name, value] : run.env) settings += fmt::format(" {}={}", name, value);
    progress(fmt::format("{} ({}/{}):{}", units::format_bytes(run.unit_bytes), i + 1, runs.size(), settings));
    HostLaunch with = launch;
    with.env.insert(with.env.end(), run.env.begin(), run.env.end());
    const PlanResult result = measure_on_hosts(backend, with, run.plan);
    m.library = result.library;
    UnitPoint p;
    p.unit_bytes = run.unit_bytes;
    p.counts = run.counts;
    for (const auto& c : result.cases) {
      if (c.wrong > 0)
        throw util::InputError(fmt::format("{}: NCCL computed {} elements wrong", c.name, c.wrong));
      const Spread s = spread_of(c.seconds);
      p.median_seconds.push_back(s.median);
      p.worst_spread = std::max(p.worst_spread, s.relative_spread());
    }
    p.fit = fit_units(p.counts, p.median_seconds);
    m.points.push_back(std::move(p));
  }
  return m;
}

int nccl_default_channels(const MeasureBackend& backend, HostLaunch launch) {
  // NCCL writes its log to each rank's standard output, which mpirun forwards from every host.
  launch.env.insert(launch.env.end(), {{"NCCL_DEBUG", "INFO"}, {"NCCL_DEBUG_SUBSYS", "INIT"}});
  MeasurementPlan plan;
  plan.ranks = launch.ranks;
  plan.warmup = 0;
  plan.iterations = 1;
  plan.cases.push_back(all_reduce_case("channels", launch.ranks, 1 << 20));
  const auto channels = nccl_channels_from_log(run_on_hosts(backend, launch, plan).output);
  if (!channels)
    throw util::InputError(
        "NCCL's INFO log (NCCL_DEBUG=INFO, the ranks' output) names no channel count ('N coll channels' or "
        "'Channel i/N :')");
  return *channels;
}

namespace {

// [{<size_key>: 32768 B, time: 7.250 us}, ...], one point per line.
std::string size_times_yaml(const hw::SizeTimes& t, std::string_view size_key) {
  std::string out = "[";
  for (const auto& p : t.points())
    out += fmt::format("{}{{{}: {} B, time: {:.3f} us}}", out.size() > 1 ? ", " : "", size_key,
                       static_cast<std::int64_t>(std::llround(p.bytes)), p.seconds * 1e6);
  return out + "]";
}

}  // namespace

std::string nccl_table_yaml(hw::NcclTableId id, const hw::NcclMeasured& measured) {
  const auto& info = hw::nccl_table_info(id);
  const std::string points = size_times_yaml(measured.times, info.size_key);
  return info.channels ? fmt::format("{{channels: {}, {}: {}}}", measured.channels, info.list_key, points)
                       : fmt::format("{{{}: {}}}", info.list_key, points);
}

std::string system_with_nccl_table(const std::string& system_yaml, hw::NcclTableId id,
                                   const hw::NcclMeasured& measured) {
  const auto& info = hw::nccl_table_info(id);
  const std::string section(info.section);
  YAML::Node root = YAML::Load(system_yaml);
  if (!root.IsMap() || !root["node"] || !root["node"][section] || !root["node"][section].IsMap())
    throw std::invalid_argument(fmt::format("the system file has no node.{} map", section));
  const std::vector<std::string> path{"node", section, std::string(info.key)};
  if (const auto why = hw::set_at_path(root, path, YAML::Load(nccl_table_yaml(id, measured))); !why.empty())
    throw std::invalid_argument(why);
  YAML::Emitter out;
  out << root;
  return std::string(out.c_str()) + "\n";
}

}  // namespace strata::validate
