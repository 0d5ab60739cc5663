#include "validate/ring_slices.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <regex>
#include <stdexcept>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "hw/units.h"
#include "hw/yaml_patch.h"
#include "util/error.h"
#include "util/file.h"

namespace strata::validate {

std::vector<double> default_ring_slices() {
  std::vector<double> out;
  for (double b = 32 * 1024.0; b <= 2 * 1024.0 * 1024; b *= 2) out.push_back(b);
  return out;
}

RingSliceRun ring_slice_run(int ranks, double slice_bytes, std::span<const int> loops, int warmup,
                            int iterations) {
  if (ranks < 2) throw std::invalid_argument("a ring needs at least 2 ranks");
  const auto slice = static_cast<std::int64_t>(slice_bytes);
  if (slice <= 0 || static_cast<double>(slice) != slice_bytes || slice % 4096 != 0)
    throw std::invalid_argument(fmt::format(
        "slice {} B: expected a positive multiple of 4 KiB (NCCL_BUFFSIZE is 4 slices)", slice_bytes));
  if (loops.size() < 2) throw std::invalid_argument("expected at least two loop counts");
  for (std::size_t i = 0; i < loops.size(); ++i)
    if (loops[i] < 1 || (i > 0 && loops[i] <= loops[i - 1]))
      throw std::invalid_argument("loop counts must be positive and increasing");
  RingSliceRun run;
  run.slice_bytes = slice_bytes;
  run.env = {{"NCCL_ALGO", "Ring"},       {"NCCL_PROTO", "Simple"},
             {"NCCL_MIN_NCHANNELS", "1"}, {"NCCL_MAX_NCHANNELS", "1"},
             {"NCCL_NVLS_ENABLE", "0"},   {"NCCL_BUFFSIZE", std::to_string(4 * slice)}};
  run.plan.ranks = ranks;
  run.plan.warmup = warmup;
  run.plan.iterations = iterations;
  std::vector<int> group(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) group[static_cast<std::size_t>(r)] = r;
  for (int l : loops) {
    // A loop is N chunks of two slices on the one channel; every primitive handles a whole chunk.
    const std::int64_t bytes = static_cast<std::int64_t>(l) * ranks * 2 * slice;
    PlanCall call{sim::CollectiveOp::kAllReduce, group, bytes};
    run.plan.cases.push_back(
        {fmt::format("slice {} KiB, {} loops", slice / 1024, l), {PlanStep{{std::move(call)}}}});
    run.handoffs.push_back(2.0 * (2 * ranks - 1) * l);
  }
  check_plan(run.plan);
  return run;
}

HandoffFit fit_handoffs(std::span<const double> handoffs, std::span<const double> seconds) {
  if (handoffs.size() != seconds.size()) throw std::invalid_argument("fit_handoffs: sizes differ");
  const auto n = static_cast<double>(handoffs.size());
  double mx = 0, my = 0;
  for (std::size_t i = 0; i < handoffs.size(); ++i) {
    mx += handoffs[i] / n;
    my += seconds[i] / n;
  }
  double sxx = 0, sxy = 0;
  for (std::size_t i = 0; i < handoffs.size(); ++i) {
    sxx += (handoffs[i] - mx) * (handoffs[i] - mx);
    sxy += (handoffs[i] - mx) * (seconds[i] - my);
  }
  if (handoffs.size() < 2 || !(sxx > 0))
    throw std::invalid_argument("fit_handoffs: needs at least two different handoff counts");
  HandoffFit f;
  f.per_handoff = sxy / sxx;
  if (!(f.per_handoff > 0))
    throw std::invalid_argument("the run time does not grow with the number of handoffs; nothing to fit");
  f.intercept = my - f.per_handoff * mx;
  for (std::size_t i = 0; i < handoffs.size(); ++i)
    f.worst_residual = std::max(
        f.worst_residual, std::abs(seconds[i] - f.intercept - f.per_handoff * handoffs[i]) / seconds[i]);
  return f;
}

std::optional<int> nccl_channels_from_log(std::string_view log) {
  static const std::regex coll(R"(NCCL INFO (\d+) coll channels)");
  static const std::regex ring(R"(NCCL INFO Channel \d+/(\d+) :(\s+\d+)+\s*$)");
  std::optional<int> from_coll, from_rings;
  std::size_t begin = 0;
  while (begin < log.size()) {
    std::size_t end = log.find('\n', begin);
    if (end == std::string_view::npos) end = log.size();
    const std::string line(log.substr(begin, end - begin));
    begin = end + 1;
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

namespace {

// The channels NCCL gives `launch.ranks` ranks here at its own settings: one small all-reduce with the INFO
// log written to files of a temporary folder.
int nccl_default_channels(const MeasureBackend& backend, HostLaunch launch) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / fmt::format("strata-nccl-log-{}", ::getpid());
  fs::create_directories(dir);
  struct Cleanup {
    fs::path d;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(d, ec);
    }
  } cleanup{dir};
  launch.env.insert(launch.env.end(), {{"NCCL_DEBUG", "INFO"},
                                       {"NCCL_DEBUG_SUBSYS", "INIT"},
                                       {"NCCL_DEBUG_FILE", (dir / "nccl.%h.%p.log").string()}});
  MeasurementPlan plan;
  plan.ranks = launch.ranks;
  plan.warmup = 0;
  plan.iterations = 1;
  std::vector<int> group(static_cast<std::size_t>(launch.ranks));
  for (int r = 0; r < launch.ranks; ++r) group[static_cast<std::size_t>(r)] = r;
  plan.cases.push_back({"channels", {PlanStep{{PlanCall{sim::CollectiveOp::kAllReduce, group, 1 << 20}}}}});
  measure_on_hosts(backend, launch, plan);
  std::string log;
  for (const auto& entry : fs::directory_iterator(dir))
    log += util::read_file<util::InputError>(entry.path(), "an NCCL log");
  const auto channels = nccl_channels_from_log(log);
  if (!channels)
    throw util::InputError(
        fmt::format("NCCL's INFO log (NCCL_DEBUG_FILE in {}) names no channel count ('N coll channels' or "
                    "'Channel i/N :')",
                    dir.string()));
  return *channels;
}

}  // namespace

RingSliceMeasurement measure_ring_slices(const MeasureBackend& backend, const HostLaunch& launch,
                                         std::span<const double> slices, std::span<const int> loops,
                                         int warmup, int iterations,
                                         const std::function<void(const std::string&)>& progress) {
  if (!launch.hosts.empty())
    throw util::InputError("ring-slices measures the GPUs of this machine; run it on the node itself");
  RingSliceMeasurement m;
  std::vector<hw::SliceTime> table;
  for (std::size_t i = 0; i < slices.size(); ++i) {
    const RingSliceRun run = ring_slice_run(launch.ranks, slices[i], loops, warmup, iterations);
    progress(fmt::format("slice {} ({}/{}): one channel, NCCL_BUFFSIZE {}", units::format_bytes(slices[i]),
                         i + 1, slices.size(), 4 * static_cast<std::int64_t>(slices[i])));
    HostLaunch with = launch;
    with.env.insert(with.env.end(), run.env.begin(), run.env.end());
    const PlanResult result = measure_on_hosts(backend, with, run.plan);
    m.library = result.library;
    RingSlicePoint p;
    p.slice_bytes = slices[i];
    p.handoffs = run.handoffs;
    for (const auto& c : result.cases) {
      const Spread s = spread_of(c.seconds);
      p.median_seconds.push_back(s.median);
      p.worst_spread = std::max(p.worst_spread, s.relative_spread());
      if (c.wrong > 0)
        throw util::InputError(fmt::format("{}: NCCL computed {} elements wrong", c.name, c.wrong));
    }
    p.fit = fit_handoffs(p.handoffs, p.median_seconds);
    table.push_back({p.slice_bytes, p.fit.per_handoff});
    m.points.push_back(std::move(p));
  }
  progress("NCCL's own channel count (one all-reduce with NCCL_DEBUG=INFO)");
  m.measured.channels = nccl_default_channels(backend, launch);
  m.measured.handoffs = hw::SliceTimes(std::move(table));
  return m;
}

std::string system_with_nccl_ring(const std::string& system_yaml, const hw::NcclRingMeasured& measured) {
  YAML::Node root = YAML::Load(system_yaml);
  if (!root.IsMap() || !root["node"] || !root["node"]["fabric"] || !root["node"]["fabric"].IsMap())
    throw std::invalid_argument("the system file has no node.fabric map");
  YAML::Node ring(YAML::NodeType::Map);
  ring["channels"] = measured.channels;
  YAML::Node points(YAML::NodeType::Sequence);
  for (const auto& p : measured.handoffs.points()) {
    YAML::Node point(YAML::NodeType::Map);
    point.SetStyle(YAML::EmitterStyle::Flow);
    point["slice"] = fmt::format("{} B", static_cast<std::int64_t>(std::llround(p.bytes)));
    point["time"] = fmt::format("{:.3f} us", p.seconds * 1e6);
    points.push_back(point);
  }
  ring["handoffs"] = points;
  const std::vector<std::string> path{"node", "fabric", "nccl_ring"};
  if (const auto why = hw::set_at_path(root, path, ring); !why.empty()) throw std::invalid_argument(why);
  YAML::Emitter out;
  out << root;
  return std::string(out.c_str()) + "\n";
}

}  // namespace strata::validate
