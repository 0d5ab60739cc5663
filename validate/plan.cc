#include "validate/plan.h"

#include <algorithm>
#include <climits>
#include <limits>
#include <set>
#include <stdexcept>
#include <type_traits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "util/json.h"

namespace strata::validate {
namespace {

using nlohmann::json;

bool splits(sim::CollectiveOp op) {
  return op == sim::CollectiveOp::kReduceScatter || op == sim::CollectiveOp::kAllGather ||
         op == sim::CollectiveOp::kAllToAll;
}

[[noreturn]] void fail(std::string_view source, const std::string& what) {
  throw std::invalid_argument(fmt::format("{}: {}", source, what));
}

// A whole number within T's range: JSON has one number type, and get<int>() would truncate 1.9 to 1 and wrap
// 2^32 to 0.
template <class T>
T whole(const json& v, std::string_view source, const std::string& path) {
  const bool fits = v.is_number_unsigned()
                        ? v.get<std::uint64_t>() <= static_cast<std::uint64_t>(std::numeric_limits<T>::max())
                        : v.is_number_integer() && v.get<std::int64_t>() >= std::numeric_limits<T>::min() &&
                              v.get<std::int64_t>() <= std::numeric_limits<T>::max();
  if (!fits)
    fail(source, fmt::format("{}: expected an integer in {}..{}, got {}", path, std::numeric_limits<T>::min(),
                             std::numeric_limits<T>::max(), v.dump()));
  return static_cast<T>(v.is_number_unsigned() ? static_cast<std::int64_t>(v.get<std::uint64_t>())
                                               : v.get<std::int64_t>());
}

template <class T>
T field(const json& j, const char* key, std::string_view source, const std::string& where) {
  if (!j.is_object() || !j.contains(key)) fail(source, fmt::format("{}: missing field '{}'", where, key));
  const json& v = j.at(key);
  const std::string path = fmt::format("{}.{}", where, key);
  if constexpr (std::is_integral_v<T>) {
    return whole<T>(v, source, path);
  } else if constexpr (std::is_same_v<T, std::vector<int>>) {
    if (!v.is_array()) fail(source, path + ": expected a list of integers");
    std::vector<int> out;
    for (std::size_t i = 0; i < v.size(); ++i)
      out.push_back(whole<int>(v[i], source, fmt::format("{}[{}]", path, i)));
    return out;
  } else {
    try {
      return v.get<T>();
    } catch (const json::exception&) {
      fail(source, path + ": wrong type");
    }
  }
}

json parse(std::string_view text, std::string_view source) {
  return util::parse_json_strict<std::invalid_argument>(text, source);
}

}  // namespace

std::int64_t byte_granularity(sim::CollectiveOp op, int group_size) {
  return splits(op) ? 4 * static_cast<std::int64_t>(std::max(group_size, 1)) : 4;
}

std::int64_t round_bytes(sim::CollectiveOp op, int group_size, std::int64_t bytes) {
  const std::int64_t g = byte_granularity(op, group_size);
  return std::max(g, bytes / g * g);
}

void check_plan(const MeasurementPlan& plan) {
  if (plan.ranks < 1) throw std::invalid_argument("plan: ranks must be at least 1");
  if (plan.warmup < 0 || plan.iterations < 1)
    throw std::invalid_argument("plan: warmup must be >= 0 and iterations >= 1");
  for (const auto& c : plan.cases)
    for (std::size_t s = 0; s < c.steps.size(); ++s) {
      std::set<int> used;
      for (std::size_t k = 0; k < c.steps[s].calls.size(); ++k) {
        const auto& call = c.steps[s].calls[k];
        const std::string where = fmt::format("case '{}' step {} call {}", c.name, s, k);
        if (call.group.empty()) throw std::invalid_argument(where + ": empty group");
        std::set<int> members;
        for (int r : call.group) {
          if (!members.insert(r).second)
            throw std::invalid_argument(fmt::format("{}: rank {} appears twice in the group", where, r));
          if (r < 0 || r >= plan.ranks)
            throw std::invalid_argument(fmt::format("{}: rank {} outside 0..{}", where, r, plan.ranks - 1));
          if (!used.insert(r).second)
            throw std::invalid_argument(fmt::format("{}: rank {} is in two calls of one step", where, r));
        }
        const auto g = byte_granularity(call.op, static_cast<int>(call.group.size()));
        if (call.bytes <= 0 || call.bytes % g != 0)
          throw std::invalid_argument(
              fmt::format("{}: {} bytes is not a positive multiple of {}", where, call.bytes, g));
        if (call.bytes / 4 > INT_MAX)
          throw std::invalid_argument(
              fmt::format("{}: {} bytes exceeds MPI's int element count", where, call.bytes));
      }
    }
}

std::string plan_to_json(const MeasurementPlan& plan) {
  json cases = json::array();
  for (const auto& c : plan.cases) {
    json steps = json::array();
    for (const auto& s : c.steps) {
      json calls = json::array();
      for (const auto& call : s.calls)
        calls.push_back({{"op", sim::op_name(call.op)}, {"group", call.group}, {"bytes", call.bytes}});
      steps.push_back(calls);
    }
    cases.push_back({{"name", c.name}, {"steps", steps}});
  }
  return json{
      {"ranks", plan.ranks}, {"warmup", plan.warmup}, {"iterations", plan.iterations}, {"cases", cases}}
      .dump(1);
}

MeasurementPlan plan_from_json(std::string_view text, std::string_view source) {
  const json j = parse(text, source);
  MeasurementPlan plan;
  plan.ranks = field<int>(j, "ranks", source, "plan");
  plan.warmup = field<int>(j, "warmup", source, "plan");
  plan.iterations = field<int>(j, "iterations", source, "plan");
  const auto cases = field<json>(j, "cases", source, "plan");
  if (!cases.is_array()) fail(source, "plan.cases: expected a list");
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const std::string where = fmt::format("cases[{}]", i);
    PlanCase c;
    c.name = field<std::string>(cases[i], "name", source, where);
    const auto steps = field<json>(cases[i], "steps", source, where);
    if (!steps.is_array()) fail(source, where + ".steps: expected a list");
    for (std::size_t s = 0; s < steps.size(); ++s) {
      if (!steps[s].is_array()) fail(source, fmt::format("{}.steps[{}]: expected a list of calls", where, s));
      PlanStep step;
      for (std::size_t k = 0; k < steps[s].size(); ++k) {
        const std::string cw = fmt::format("{}.steps[{}][{}]", where, s, k);
        PlanCall call;
        const auto op = sim::parse_op(field<std::string>(steps[s][k], "op", source, cw));
        if (!op) fail(source, fmt::format("{}.op: expected one of {}", cw, sim::kOpNames));
        call.op = *op;
        call.group = field<std::vector<int>>(steps[s][k], "group", source, cw);
        call.bytes = field<std::int64_t>(steps[s][k], "bytes", source, cw);
        step.calls.push_back(std::move(call));
      }
      c.steps.push_back(std::move(step));
    }
    plan.cases.push_back(std::move(c));
  }
  try {
    check_plan(plan);
  } catch (const std::invalid_argument& e) {
    fail(source, e.what());
  }
  return plan;
}

std::string result_to_json(const PlanResult& result) {
  json cases = json::array();
  for (const auto& c : result.cases) {
    json jc{{"name", c.name}, {"seconds", c.seconds}, {"rank_median_seconds", c.rank_median_seconds}};
    if (c.wrong >= 0) jc["wrong"] = c.wrong;
    cases.push_back(std::move(jc));
  }
  return json{{"ranks", result.ranks}, {"library", result.library}, {"cases", cases}}.dump(1);
}

PlanResult result_from_json(std::string_view text, std::string_view source) {
  const json j = parse(text, source);
  PlanResult r;
  r.ranks = field<int>(j, "ranks", source, "result");
  r.library = field<std::string>(j, "library", source, "result");
  const auto cases = field<json>(j, "cases", source, "result");
  if (!cases.is_array()) fail(source, "result.cases: expected a list");
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const std::string where = fmt::format("cases[{}]", i);
    CaseResult c;
    c.name = field<std::string>(cases[i], "name", source, where);
    c.seconds = field<std::vector<double>>(cases[i], "seconds", source, where);
    c.rank_median_seconds = field<std::vector<double>>(cases[i], "rank_median_seconds", source, where);
    if (cases[i].contains("wrong")) c.wrong = field<std::int64_t>(cases[i], "wrong", source, where);
    r.cases.push_back(std::move(c));
  }
  return r;
}

Spread spread_of(std::vector<double> values) {
  Spread s;
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  s.median = n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
  s.min = values.front();
  s.max = values.back();
  return s;
}

}  // namespace strata::validate
