// Flow-level network model. A transfer is a flow along a route of directed links; all flows active on a
// link share its bandwidth max-min fairly (MaxMinSolver). A flow first moves its bytes (the bandwidth
// phase, during which it loads its links), then is delivered after its latency. Rates are recomputed only
// for the flows coupled (through shared links) to a flow that started or finished, once per timestamp.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "hw/topology.h"
#include "sim/engine.h"
#include "sim/maxmin.h"

namespace strata::sim {

using FlowId = std::int32_t;

class FlowListener {
 public:
  // The flow's bytes have left its source (its links are free of it).
  virtual void on_flow_sent(FlowId flow, std::uint64_t user) = 0;
  // The flow's data has arrived (sent + latency).
  virtual void on_flow_delivered(FlowId flow, std::uint64_t user) = 0;

 protected:
  ~FlowListener() = default;
};

class NetworkModel final : public EventHandler {
 public:
  // `capacities` gives bytes/s per directed link id. Links with shared[l] == false are fat pipes (SimGrid's
  // FATPIPE sharing policy): flows do not divide their bandwidth, but each flow's rate is capped at it.
  NetworkModel(Engine& engine, std::vector<double> capacities, std::vector<char> shared,
               FlowListener& listener);

  // Starts a flow now. `route` (and `weights`) must stay valid until the flow is sent (Topology routes and
  // TaskGraph custom routes are). `weights` is empty or parallel to `route`: a bundle of hops moving at one
  // common rate loads link l with weights[l] x rate and carries weights[l] x bytes over it.
  // `max_rate` (bytes/s, 0 = none) caps the flow's own rate, as a fat pipe on its route would.
  FlowId start_flow(std::span<const hw::LinkId> route, double bytes, double latency_seconds,
                    std::uint64_t user, std::span<const double> weights = {}, double max_rate = 0);

  // Bytes each link has carried so far (for utilization).
  std::span<const double> link_bytes() const { return link_bytes_; }
  std::uint64_t rate_solves() const { return solves_; }

  void on_event(std::uint64_t tag) override;

 private:
  struct Flow {
    std::span<const hw::LinkId> route;
    std::span<const double> weights;  // empty: 1 per link
    double remaining = 0;             // bytes still to send
    double bytes = 0;
    double rate = 0;  // bytes/s
    double cap = 0;   // the flow's own rate cap (fat-pipe links on its route, its max_rate); +inf when none
    bool coupled = false;  // crosses at least one shared link (its rate comes from the max-min solve)
    SimTime last_update = 0;
    SimTime latency = 0;
    std::uint32_t version = 0;
    std::uint64_t user = 0;
    bool active = false;
  };
  static constexpr std::uint64_t kDeliveredBit = 1ULL << 63;
  static constexpr std::uint64_t kResolveTag = ~0ULL;
  // Relative change below which a re-solved rate counts as unchanged (rounding in the max-min solve).
  static constexpr double kRateTolerance = 1e-12;

  void mark_dirty(std::span<const hw::LinkId> route);
  void resolve();
  void settle(Flow& f, SimTime now);
  void schedule_completion(FlowId id);
  void finish_bandwidth_phase(FlowId id);

  Engine& engine_;
  FlowListener& listener_;
  std::vector<double> capacity_;
  std::vector<char> shared_;
  std::vector<double> link_bytes_;
  std::vector<std::vector<FlowId>> link_flows_;
  std::vector<Flow> flows_;
  std::vector<FlowId> free_ids_;
  std::uint64_t solves_ = 0;

  // Dirty-link batching and component-gathering scratch.
  std::vector<hw::LinkId> dirty_links_;
  std::vector<std::uint32_t> link_mark_, flow_mark_;
  std::uint32_t epoch_ = 0;
  bool resolve_pending_ = false;
  std::vector<FlowId> comp_flows_;
  std::vector<hw::LinkId> comp_links_;
  std::vector<std::int32_t> local_index_;
  std::vector<double> comp_caps_, comp_rates_;
  std::vector<std::int32_t> comp_offsets_, comp_constraints_;
  std::vector<double> comp_weights_;
  MaxMinSolver solver_;
};

}  // namespace strata::sim
