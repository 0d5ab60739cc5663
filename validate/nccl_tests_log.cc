#include "validate/nccl_tests_log.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <regex>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "sim/collective_runner.h"
#include "util/error.h"
#include "util/parse.h"

namespace strata::validate {
namespace {

std::vector<std::string_view> tokens_of(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    const std::size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    if (i > start) out.push_back(line.substr(start, i - start));
  }
  return out;
}

// Where a row's columns are: size first, then the times of the out-of-place and in-place results.
struct Layout {
  std::size_t out_time = 5,
              in_time = 9;  // nccl-tests >= 2.10: size count type redop root time algbw busbw #wrong
  bool in_place = true;
  std::size_t columns() const { return (in_place ? in_time : out_time) + 1; }
};

// "# size count type redop [root] time algbw busbw #wrong|error [i_min ...] time ..." -> the time columns.
std::optional<Layout> header_layout(std::string_view line) {
  auto t = tokens_of(line.substr(1));
  if (t.size() < 3 || t[0] != "size" || t[1] != "count") return std::nullopt;
  std::vector<std::size_t> times;
  for (std::size_t i = 0; i < t.size(); ++i)
    if (t[i] == "time" || t[i] == "cputime") times.push_back(i);
  if (times.empty()) return std::nullopt;
  return Layout{times[0], times.size() > 1 ? times[1] : 0, times.size() > 1};
}

double parse_time(std::string_view text) {
  const std::string s(text);
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || !std::isfinite(v) || v < 0) return NAN;
  return v;
}

// The program's own name where the log gives its path (mpirun prints what it was asked to run).
std::string_view program_name(std::string_view program) {
  const auto slash = program.rfind('/');
  return slash == std::string_view::npos ? program : program.substr(slash + 1);
}

std::string nccl_version_of(long code) {  // 22105: major x 10000 + minor x 100 + patch
  return fmt::format("{}.{}.{}", code / 10000, code / 100 % 100, code % 100);
}

// nccl-tests' JSON report (-J FILE; src/util.cu jsonRankInfo, writeBenchmarkLine*): {"args": [program, ...],
// "nccl_version": 22105, "config": {"devices": [{"rank", "hostname", "device", ...}], ...}, "results":
// [{"size", "out_of_place": {"time" | "cpu_time", ...} | null, "in_place": {...}}, ...]}. A row's `line` is
// its 1-based place in "results".
NcclTestsLog parse_nccl_tests_json(std::string_view text, std::string_view file) {
  nlohmann::json root;
  try {
    root = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw util::InputError(fmt::format("{}: not nccl-tests' JSON report: {}", file, e.what()));
  }
  const auto field_error = [&](const std::string& where, std::string_view expected) {
    return util::InputError(fmt::format("{}: {}: expected {}", file, where, expected));
  };
  if (!root.is_object()) throw field_error("the top level", "an object");
  NcclTestsLog log;
  if (const auto args = root.find("args");
      args != root.end() && args->is_array() && !args->empty() && args->front().is_string()) {
    log.program = program_name(args->front().get<std::string>());
  }
  if (const auto v = root.find("nccl_version"); v != root.end() && v->is_number_integer())
    log.nccl = nccl_version_of(v->get<long>());
  if (const auto config = root.find("config"); config != root.end() && config->is_object())
    if (const auto devices = config->find("devices"); devices != config->end() && devices->is_array())
      for (std::size_t i = 0; i < devices->size(); ++i) {
        const auto& d = (*devices)[i];
        const std::string where = fmt::format("config.devices[{}]", i);
        if (!d.is_object() || !d.contains("rank") || !d["rank"].is_number_integer() ||
            !d.contains("hostname") || !d["hostname"].is_string() || !d.contains("device") ||
            !d["device"].is_number_integer())
          throw field_error(where, "an object with an integer rank and device and a string hostname");
        log.ranks.push_back({d["rank"].get<int>(), d["hostname"].get<std::string>(), d["device"].get<int>()});
      }
  const auto results = root.find("results");
  if (results == root.end() || !results->is_array())
    throw field_error("results", "a list of results (one per size)");
  // A result's time: "time" (or "cpu_time" with -C) of its out_of_place / in_place object; NaN when absent.
  const auto time_of = [](const nlohmann::json& r, const char* place) {
    const auto p = r.find(place);
    if (p == r.end() || !p->is_object()) return static_cast<double>(NAN);
    for (const char* key : {"time", "cpu_time"})
      if (const auto t = p->find(key); t != p->end() && t->is_number() && t->get<double>() >= 0)
        return t->get<double>();
    return static_cast<double>(NAN);
  };
  for (std::size_t i = 0; i < results->size(); ++i) {
    const auto& r = (*results)[i];
    const std::string where = fmt::format("results[{}]", i);
    if (!r.is_object() || !r.contains("size") || !r["size"].is_number_unsigned())
      throw field_error(where, "an object with the size in bytes");
    NcclTestsRow row;
    row.bytes = static_cast<std::int64_t>(std::min<std::uint64_t>(r["size"].get<std::uint64_t>(), INT64_MAX));
    row.line = static_cast<int>(i) + 1;
    row.out_of_place_us = time_of(r, "out_of_place");
    row.in_place_us = time_of(r, "in_place");
    if (std::isnan(row.out_of_place_us) && std::isnan(row.in_place_us))
      throw field_error(where, "an out_of_place or in_place time in microseconds");
    log.rows.push_back(row);
  }
  if (log.rows.empty()) throw field_error("results", "at least one result");
  return log;
}

}  // namespace

NcclTestsLog parse_nccl_tests_log(std::string_view text, std::string_view file) {
  if (const auto first = text.find_first_not_of(" \t\r\n");
      first != std::string_view::npos && text[first] == '{')
    return parse_nccl_tests_json(text, file);
  static const std::regex rank_line(
      R"(^#\s+Rank\s+(\d+)(?:\s+Group\s+\d+)?\s+Pid\s+\d+\s+on\s+(\S+)\s+device\s+(\d+))");
  static const std::regex program_line(R"(^# Collective test starting: (\S+))");
  static const std::regex version_line(R"(nccl-library=(\d+))");
  NcclTestsLog log;
  Layout layout;
  int header_line = 0;
  for (const auto& text_line : util::split_lines(text)) {
    // Named copies, not structured bindings: clang 14 does not let the lambda below capture those.
    const std::string_view line = text_line.text;
    const int number = text_line.number;
    const auto where = [&] { return fmt::format("{}:{}", file, number); };
    if (line.starts_with('#')) {
      const std::string s(line);
      std::smatch m;
      if (std::regex_search(s, m, rank_line)) {
        log.ranks.push_back({std::atoi(m[1].str().c_str()), m[2].str(), std::atoi(m[3].str().c_str())});
      } else if (std::regex_search(s, m, program_line)) {
        log.program = program_name(m[1].str());
      } else if (std::regex_search(s, m, version_line)) {
        log.nccl = nccl_version_of(std::atol(m[1].str().c_str()));
      } else if (auto l = header_layout(line)) {
        if (header_line > 0)
          throw util::InputError(fmt::format(
              "{}: a second nccl-tests result header (the first at line {}): expected one run per file",
              where(), header_line));
        layout = *l;
        header_line = number;
      }
      continue;
    }
    const auto t = tokens_of(line);
    // nccl-tests' rows start with the size; mpirun's and NCCL's lines ("host:pid:tid [0] NCCL INFO ...",
    // "[host:pid] ...") do not.
    if (t.empty() || !util::try_parse_int(t[0], {0, INT64_MAX})) continue;
    if (t.size() < layout.columns())
      throw util::InputError(fmt::format(
          "{}: expected an nccl-tests row of at least {} columns (size, count, type, redop{}, time, algbw, "
          "busbw, #wrong{}), got {}",
          where(), layout.columns(), layout.out_time == 5 ? ", root" : "",
          layout.in_place ? ", then the in-place time ..." : "", t.size()));
    NcclTestsRow row;
    row.bytes = *util::try_parse_int(t[0], {0, INT64_MAX});
    row.line = number;
    row.out_of_place_us = parse_time(t[layout.out_time]);
    if (layout.in_place) row.in_place_us = parse_time(t[layout.in_time]);
    if (std::isnan(row.out_of_place_us) && std::isnan(row.in_place_us))
      throw util::InputError(fmt::format("{}: expected a time in microseconds in column {}, got '{}'",
                                         where(), layout.out_time + 1, t[layout.out_time]));
    log.rows.push_back(row);
  }
  if (log.rows.empty())
    throw util::InputError(fmt::format(
        "{}: no nccl-tests rows (lines that start with the size in bytes, as all_reduce_perf prints them)",
        file));
  return log;
}

std::optional<sim::CollectiveOp> nccl_tests_op(std::string_view program) {
  static const std::map<std::string_view, sim::CollectiveOp> ops{
      {"all_reduce_perf", sim::CollectiveOp::kAllReduce},
      {"all_gather_perf", sim::CollectiveOp::kAllGather},
      {"reduce_scatter_perf", sim::CollectiveOp::kReduceScatter},
      {"broadcast_perf", sim::CollectiveOp::kBroadcast},
      {"reduce_perf", sim::CollectiveOp::kReduce},
      {"alltoall_perf", sim::CollectiveOp::kAllToAll},
      {"sendrecv_perf", sim::CollectiveOp::kSendRecv}};
  const auto it = ops.find(program_name(program));
  if (it == ops.end()) return std::nullopt;
  return it->second;
}

sim::CollectiveOp nccl_tests_collective(const NcclTestsLog& log, std::string_view op,
                                        std::string_view log_name, std::string_view option) {
  const std::string named_as = option.empty() ? "" : std::string(option) + " ";
  std::optional<sim::CollectiveOp> given;
  if (!op.empty()) {
    given = sim::parse_op(op);
    if (!given)
      throw util::InputError(fmt::format("{}'{}': expected one of: {}", named_as, op, sim::kOpNames));
  }
  const auto named = nccl_tests_op(log.program);
  if (named && given && *named != *given)
    throw util::InputError(fmt::format("{}'{}': {} ran {} ('# Collective test starting: {}')", named_as, op,
                                       log_name, sim::op_name(*named), log.program));
  if (named) return *named;
  if (given) return *given;
  throw util::InputError(
      fmt::format("{} does not say which collective it ran ({}); give {}", log_name,
                  log.program.empty() ? "no '# Collective test starting:' line" : "program " + log.program,
                  option.empty() ? "op" : option));
}

std::vector<std::string> nccl_tests_hosts(std::span<const NcclTestsRank> ranks) {
  std::vector<std::string> hosts;
  for (const auto& r : ranks)
    if (std::find(hosts.begin(), hosts.end(), r.host) == hosts.end()) hosts.push_back(r.host);
  return hosts;
}

std::optional<int> nccl_tests_nodes(const NcclTestsLog& log, std::optional<int> given) {
  if (given) return given;
  const auto hosts = nccl_tests_hosts(log.ranks);
  if (hosts.empty()) return std::nullopt;
  return static_cast<int>(hosts.size());
}

std::vector<hw::Rank> gpus_of_ranks(const hw::Topology& topo, std::span<const NcclTestsRank> ranks) {
  if (ranks.empty()) return topo.all_ranks();
  std::vector<const NcclTestsRank*> ordered;
  for (const auto& r : ranks) ordered.push_back(&r);
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const NcclTestsRank* a, const NcclTestsRank* b) { return a->rank < b->rank; });
  const auto hosts = nccl_tests_hosts(ranks);
  if (static_cast<int>(hosts.size()) > topo.nodes())
    throw util::InputError(fmt::format("the log's ranks run on {} hosts, the system has {} node(s) (--nodes)",
                                       hosts.size(), topo.nodes()));
  std::vector<hw::Rank> gpus;
  std::set<hw::Rank> seen;
  for (const NcclTestsRank* r : ordered) {
    if (r->device < 0 || r->device >= topo.gpus_per_node())
      throw util::InputError(fmt::format("rank {} runs on device {} of {}, the node has {} GPUs", r->rank,
                                         r->device, r->host, topo.gpus_per_node()));
    const auto node = std::find(hosts.begin(), hosts.end(), r->host) - hosts.begin();
    const hw::Rank gpu = static_cast<hw::Rank>(node) * topo.gpus_per_node() + r->device;
    if (!seen.insert(gpu).second)
      throw util::InputError(
          fmt::format("rank {} runs on device {} of {}, as another rank does", r->rank, r->device, r->host));
    gpus.push_back(gpu);
  }
  return gpus;
}

NcclTestsComparison compare_nccl_tests(const hw::Topology& topo, sim::CollectiveOp op,
                                       std::vector<hw::Rank> group, std::span<const NcclTestsRow> rows,
                                       bool in_place, const std::string& algorithm) {
  NcclTestsComparison c;
  c.op = op;
  c.group = std::move(group);
  const double factor = sim::busbw_factor(op, static_cast<int>(c.group.size()));
  for (const auto& row : rows) {
    const double us = in_place ? row.in_place_us : row.out_of_place_us;
    if (row.bytes < 1 || !(us > 0)) continue;
    sim::CollectiveRequest req;
    req.spec.op = op;
    req.spec.group = c.group;
    req.spec.bytes = static_cast<double>(row.bytes);
    req.algorithm = algorithm;
    const auto sim = sim::run_collective(topo, req);
    NcclTestsPoint p;
    p.bytes = row.bytes;
    p.measured_s = us * 1e-6;
    p.simulated_s = sim.seconds;
    p.measured_busbw = factor * static_cast<double>(row.bytes) / p.measured_s;
    p.simulated_busbw = sim.busbw;
    p.algorithm = sim.algorithm;
    p.protocol = sim.protocol;
    c.points.push_back(std::move(p));
  }
  constexpr double MiB = 1024.0 * 1024;
  c.bands = {{"< 1 MiB", 0, MiB}, {"1 MiB - 64 MiB", MiB, 64 * MiB}, {">= 64 MiB", 64 * MiB, INFINITY}};
  for (auto& band : c.bands) {
    for (const auto& p : c.points) {
      const auto b = static_cast<double>(p.bytes);
      if (b < band.min_bytes || b >= band.max_bytes) continue;
      const double e = p.busbw_error();
      ++band.points;
      band.mean_abs += std::abs(e);
      band.mean += e;
      if (std::abs(e) > std::abs(band.worst)) band.worst = e;
    }
    if (band.points > 0) {
      band.mean_abs /= band.points;
      band.mean /= band.points;
    }
  }
  return c;
}

}  // namespace strata::validate
