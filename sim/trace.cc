#include "sim/trace.h"

#include <cstdio>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace strata::sim {

std::string chrome_trace_json(const hw::Topology& topo, const TaskGraph& graph, const SimResult& result) {
  if (result.timeline.size() != graph.size())
    throw std::invalid_argument("trace needs a simulation run with record_timeline");
  std::string out = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
  bool first = true;
  const auto emit = [&](const std::string& ev) {
    if (!first) out += ",\n";
    first = false;
    out += ev;
  };
  for (hw::Rank r = 0; r < topo.num_gpus(); ++r)
    emit(fmt::format(
        R"({{"ph":"M","name":"process_name","pid":{},"args":{{"name":{}}}}})", r,
        nlohmann::json(topo.vertices()[static_cast<std::size_t>(topo.gpu_vertex(r))].name).dump()));
  const auto us = [](SimTime t) { return static_cast<double>(t) / 1e6; };  // ps -> us
  for (std::size_t i = 0; i < graph.size(); ++i) {
    const Task& t = graph.tasks()[i];
    const TaskTiming& tm = result.timeline[i];
    if (t.kind == TaskKind::kDelay) continue;
    const std::string name = t.label >= 0 ? graph.labels()[static_cast<std::size_t>(t.label)] : "task";
    if (t.kind == TaskKind::kCompute) {
      emit(fmt::format(R"({{"ph":"X","cat":"compute","name":{},"pid":{},"tid":{},"ts":{:.6f},"dur":{:.6f}}})",
                       nlohmann::json(name).dump(), t.rank, t.stream, us(tm.start), us(tm.done - tm.start)));
    } else {
      emit(fmt::format(
          R"({{"ph":"X","cat":"comm","name":{},"pid":{},"tid":{},"ts":{:.6f},"dur":{:.6f},"args":{{"to":{},"bytes":{:.0f},"delivered_us":{:.6f}}}}})",
          nlohmann::json(name).dump(), t.rank, 1000 + t.lane, us(tm.start), us(tm.sent - tm.start), t.peer,
          t.bytes, us(tm.done)));
    }
  }
  out += "\n]}\n";
  return out;
}

}  // namespace strata::sim
