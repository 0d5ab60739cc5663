// Chrome trace-event JSON (opens in Perfetto and chrome://tracing): one process per GPU, one thread per
// compute stream and per communication channel; transfers appear on their source GPU.
#pragma once

#include <string>

#include "hw/topology.h"
#include "sim/simulator.h"
#include "sim/task_graph.h"

namespace strata::sim {

// Requires a result simulated with record_timeline. Returns the JSON text.
std::string chrome_trace_json(const hw::Topology& topo, const TaskGraph& graph, const SimResult& result);

}  // namespace strata::sim
