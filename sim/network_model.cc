#include "sim/network_model.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace strata::sim {

NetworkModel::NetworkModel(Engine& engine, std::vector<double> capacities, std::vector<char> shared,
                           FlowListener& listener)
    : engine_(engine),
      listener_(listener),
      capacity_(std::move(capacities)),
      shared_(std::move(shared)),
      link_bytes_(capacity_.size(), 0.0),
      link_flows_(capacity_.size()),
      link_mark_(capacity_.size(), 0),
      local_index_(capacity_.size(), -1) {}

FlowId NetworkModel::start_flow(std::span<const hw::LinkId> route, double bytes, double latency_seconds,
                                std::uint64_t user, std::span<const double> weights, double max_rate) {
  FlowId id;
  if (!free_ids_.empty()) {
    id = free_ids_.back();
    free_ids_.pop_back();
  } else {
    id = static_cast<FlowId>(flows_.size());
    flows_.emplace_back();
    flow_mark_.push_back(0);
  }
  Flow& f = flows_[static_cast<std::size_t>(id)];
  f.route = route;
  f.weights = weights;
  f.bytes = f.remaining = std::max(0.0, bytes);
  f.rate = 0;
  f.last_update = engine_.now();
  f.latency = seconds_to_time(latency_seconds);
  ++f.version;
  f.user = user;
  f.active = true;
  if (route.empty() || f.remaining <= 0) {
    // Nothing to share (local copy or empty message): done with its bandwidth phase right away.
    engine_.schedule(engine_.now(), *this,
                     (static_cast<std::uint64_t>(f.version) << 32) | static_cast<std::uint32_t>(id));
    return id;
  }
  f.cap = max_rate > 0 ? max_rate : std::numeric_limits<double>::infinity();
  f.coupled = false;
  for (hw::LinkId l : route) {
    const auto li = static_cast<std::size_t>(l);
    if (shared_[li]) {
      link_flows_[li].push_back(id);
      f.coupled = true;
    } else {
      f.cap = std::min(f.cap, capacity_[li]);
    }
  }
  if (!f.coupled) {
    // Only fat pipes: nothing to share with, the flow runs at its own cap.
    f.rate = f.cap;
    schedule_completion(id);
    return id;
  }
  mark_dirty(route);
  return id;
}

void NetworkModel::mark_dirty(std::span<const hw::LinkId> route) {
  dirty_links_.insert(dirty_links_.end(), route.begin(), route.end());
  if (!resolve_pending_) {
    resolve_pending_ = true;
    engine_.schedule(engine_.now(), *this, kResolveTag);
  }
}

void NetworkModel::settle(Flow& f, SimTime now) {
  if (now > f.last_update) {
    f.remaining -= f.rate * time_to_seconds(now - f.last_update);
    if (f.remaining < 0) f.remaining = 0;
    f.last_update = now;
  }
}

void NetworkModel::schedule_completion(FlowId id) {
  Flow& f = flows_[static_cast<std::size_t>(id)];
  ++f.version;
  const std::uint64_t tag = (static_cast<std::uint64_t>(f.version) << 32) | static_cast<std::uint32_t>(id);
  if (f.rate <= 0) return;  // starved; rescheduled when rates change
  const double seconds = f.remaining / f.rate;
  engine_.schedule(time_after(engine_.now(), seconds), *this, tag);
}

void NetworkModel::resolve() {
  resolve_pending_ = false;
  if (dirty_links_.empty()) return;
  ++epoch_;
  comp_flows_.clear();
  comp_links_.clear();
  // Gather every flow and link coupled to the dirty links (breadth-first over shared links).
  for (hw::LinkId l : dirty_links_) {
    if (!shared_[static_cast<std::size_t>(l)] || link_mark_[static_cast<std::size_t>(l)] == epoch_) continue;
    link_mark_[static_cast<std::size_t>(l)] = epoch_;
    comp_links_.push_back(l);
  }
  dirty_links_.clear();
  for (std::size_t li = 0; li < comp_links_.size(); ++li) {
    for (FlowId fid : link_flows_[static_cast<std::size_t>(comp_links_[li])]) {
      if (flow_mark_[static_cast<std::size_t>(fid)] == epoch_) continue;
      flow_mark_[static_cast<std::size_t>(fid)] = epoch_;
      comp_flows_.push_back(fid);
      for (hw::LinkId l2 : flows_[static_cast<std::size_t>(fid)].route) {
        if (!shared_[static_cast<std::size_t>(l2)] || link_mark_[static_cast<std::size_t>(l2)] == epoch_)
          continue;
        link_mark_[static_cast<std::size_t>(l2)] = epoch_;
        comp_links_.push_back(l2);
      }
    }
  }
  if (comp_flows_.empty()) return;
  // Deterministic order regardless of how the component was discovered.
  std::sort(comp_flows_.begin(), comp_flows_.end());
  std::sort(comp_links_.begin(), comp_links_.end());
  comp_caps_.resize(comp_links_.size());
  for (std::size_t i = 0; i < comp_links_.size(); ++i) {
    local_index_[static_cast<std::size_t>(comp_links_[i])] = static_cast<std::int32_t>(i);
    comp_caps_[i] = capacity_[static_cast<std::size_t>(comp_links_[i])];
  }
  comp_offsets_.assign(1, 0);
  comp_constraints_.clear();
  comp_weights_.clear();
  const SimTime now = engine_.now();
  for (FlowId fid : comp_flows_) {
    Flow& f = flows_[static_cast<std::size_t>(fid)];
    settle(f, now);
    for (std::size_t k = 0; k < f.route.size(); ++k) {
      const auto l = static_cast<std::size_t>(f.route[k]);
      if (!shared_[l]) continue;
      comp_constraints_.push_back(local_index_[l]);
      comp_weights_.push_back(f.weights.empty() ? 1.0 : f.weights[k]);
    }
    if (std::isfinite(f.cap)) {
      // The flow's private fat-pipe constraint: every hop of a bundle crosses the fat pipe as its own flow,
      // so the cap applies to the common rate with weight 1.
      comp_constraints_.push_back(static_cast<std::int32_t>(comp_caps_.size()));
      comp_caps_.push_back(f.cap);
      comp_weights_.push_back(1.0);
    }
    comp_offsets_.push_back(static_cast<std::int32_t>(comp_constraints_.size()));
  }
  solver_.solve_csr(comp_caps_, comp_offsets_, comp_constraints_, comp_rates_, 0.0, comp_weights_);
  ++solves_;
  for (std::size_t i = 0; i < comp_flows_.size(); ++i) {
    Flow& f = flows_[static_cast<std::size_t>(comp_flows_[i])];
    const bool fresh = f.rate == 0;  // never scheduled yet (or starved)
    // Rates that differ only by rounding in the solve keep their scheduled completion.
    if (fresh || std::abs(comp_rates_[i] - f.rate) > kRateTolerance * f.rate) {
      f.rate = comp_rates_[i];
      schedule_completion(comp_flows_[i]);
    }
  }
}

void NetworkModel::finish_bandwidth_phase(FlowId id) {
  // No reference into flows_ may live across listener_.on_flow_sent: the listener starts new flows, and
  // flows_.emplace_back may reallocate.
  Flow& f = flows_[static_cast<std::size_t>(id)];
  for (std::size_t k = 0; k < f.route.size(); ++k) {
    const hw::LinkId l = f.route[k];
    link_bytes_[static_cast<std::size_t>(l)] += f.bytes * (f.weights.empty() ? 1.0 : f.weights[k]);
    if (!shared_[static_cast<std::size_t>(l)]) continue;
    auto& users = link_flows_[static_cast<std::size_t>(l)];
    users.erase(std::find(users.begin(), users.end(), id));
  }
  if (!f.route.empty() && f.bytes > 0) mark_dirty(f.route);
  f.remaining = 0;
  f.rate = 0;
  ++f.version;
  const std::uint64_t user = f.user;
  const SimTime delivered_at = checked_add(engine_.now(), f.latency);
  listener_.on_flow_sent(id, user);
  engine_.schedule(delivered_at, *this, kDeliveredBit | static_cast<std::uint32_t>(id));
}

void NetworkModel::on_event(std::uint64_t tag) {
  if (tag == kResolveTag) {
    resolve();
    return;
  }
  const auto id = static_cast<FlowId>(tag & 0xffffffffULL);
  Flow& f = flows_[static_cast<std::size_t>(id)];
  if (tag & kDeliveredBit) {
    f.active = false;
    const std::uint64_t user = f.user;
    free_ids_.push_back(id);
    listener_.on_flow_delivered(id, user);
    return;
  }
  if (static_cast<std::uint32_t>(tag >> 32) != f.version || !f.active) return;  // superseded prediction
  finish_bandwidth_phase(id);
}

}  // namespace strata::sim
