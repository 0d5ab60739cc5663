// The flow-level network model against an independent oracle and hand-derived cases: fat-pipe links
// (SimGrid's FATPIPE), incremental re-solves versus a from-scratch fluid simulation, flows started from the
// listener, and durations outside the picosecond clock.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>

#include "sim/engine.h"
#include "sim/network_model.h"
#include "sim/simulator.h"
#include "test_systems.h"

namespace strata::sim {
namespace {

struct FlowSpec {
  double start = 0;  // seconds
  std::vector<hw::LinkId> route;
  std::vector<double> weights;  // empty or parallel to route
  double bytes = 0;
  double latency = 0;
  double max_rate = 0;  // the flow's own cap, bytes/s (0: none)
};

// Runs `flows` on a NetworkModel, each started at its start time; returns the time each was sent.
class Harness final : public EventHandler, public FlowListener {
 public:
  Harness(std::vector<double> caps, std::vector<char> shared, const std::vector<FlowSpec>& flows)
      : flows_(flows),
        net_(engine_, std::move(caps), std::move(shared), *this),
        sent_(flows.size(), -1),
        delivered_(flows.size(), -1) {}
  void run() {
    for (std::size_t i = 0; i < flows_.size(); ++i)
      engine_.schedule(seconds_to_time(flows_[i].start), *this, i);
    engine_.run();
  }
  void on_event(std::uint64_t i) override {
    const auto& f = flows_[i];
    net_.start_flow(f.route, f.bytes, f.latency, i, f.weights, f.max_rate);
  }
  void on_flow_sent(FlowId, std::uint64_t user) override { sent_[user] = time_to_seconds(engine_.now()); }
  void on_flow_delivered(FlowId, std::uint64_t user) override {
    delivered_[user] = time_to_seconds(engine_.now());
  }

  const std::vector<FlowSpec>& flows_;
  Engine engine_;
  NetworkModel net_;
  std::vector<double> sent_, delivered_;
};

// The oracle: a fluid simulation that solves every active flow's rate from scratch at every event (flow
// start or finish), with fat-pipe links as per-flow caps. Returns each flow's send-completion time.
std::vector<double> from_scratch(const std::vector<double>& caps, const std::vector<char>& shared,
                                 const std::vector<FlowSpec>& flows) {
  const std::size_t n = flows.size();
  std::vector<double> remaining(n), done(n, -1);
  std::vector<char> started(n, 0);
  for (std::size_t i = 0; i < n; ++i) remaining[i] = flows[i].bytes;
  double now = 0;
  MaxMinSolver solver;
  while (true) {
    std::vector<std::size_t> active;
    for (std::size_t i = 0; i < n; ++i)
      if (started[i] && done[i] < 0) active.push_back(i);
    // Solve: constraints = every shared link, plus one private constraint per flow crossing a fat pipe.
    std::vector<double> cs(caps.begin(), caps.end());
    std::vector<std::int32_t> offsets{0}, cons;
    std::vector<double> ws;
    for (std::size_t i : active) {
      double cap = std::numeric_limits<double>::infinity();
      for (std::size_t k = 0; k < flows[i].route.size(); ++k) {
        const auto l = static_cast<std::size_t>(flows[i].route[k]);
        if (shared[l]) {
          cons.push_back(static_cast<std::int32_t>(l));
          ws.push_back(flows[i].weights.empty() ? 1.0 : flows[i].weights[k]);
        } else {
          cap = std::min(cap, caps[l]);
        }
      }
      if (std::isfinite(cap)) {
        cons.push_back(static_cast<std::int32_t>(cs.size()));
        cs.push_back(cap);
        ws.push_back(1.0);
      }
      offsets.push_back(static_cast<std::int32_t>(cons.size()));
    }
    std::vector<double> rates;
    solver.solve_csr(cs, offsets, cons, rates, 0.0, ws);
    double next = std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < n; ++i)
      if (!started[i]) next = std::min(next, flows[i].start);
    for (std::size_t k = 0; k < active.size(); ++k)
      if (rates[k] > 0) next = std::min(next, now + remaining[active[k]] / rates[k]);
    if (!std::isfinite(next)) break;
    for (std::size_t k = 0; k < active.size(); ++k) {
      const std::size_t i = active[k];
      remaining[i] -= rates[k] * (next - now);
      if (remaining[i] <= 1e-9 * flows[i].bytes) done[i] = next;
    }
    now = next;
    for (std::size_t i = 0; i < n; ++i)
      if (!started[i] && flows[i].start <= now) started[i] = 1;
  }
  return done;
}

}  // namespace

TEST(NetworkModel, FlowOverOnlyFatPipesFinishesAtTheSlowestPipe) {
  // Regression: a flow whose route has no shared link was dropped from the sharing system and never
  // finished. Fat pipes of 10 and 20 B/s: 100 B take 10 s, and a second such flow does not slow it.
  const std::vector<FlowSpec> flows{{0, {0, 1}, {}, 100, 0}, {0, {0, 1}, {}, 100, 0}};
  Harness h({10, 20}, {0, 0}, flows);
  h.run();
  EXPECT_NEAR(h.sent_[0], 10.0, 1e-9);
  EXPECT_NEAR(h.sent_[1], 10.0, 1e-9);
}

TEST(NetworkModel, FatPipeCapsEachFlowButIsNotDivided) {
  // Link 0 is a 10 B/s fat pipe, link 1 a shared 100 B/s link. Two flows over both run at 10 B/s each (the
  // fat pipe caps each, and 2 x 10 fits the shared link); a third flow over link 1 alone gets the other 80.
  const std::vector<FlowSpec> flows{{0, {0, 1}, {}, 100, 0}, {0, {0, 1}, {}, 100, 0}, {0, {1}, {}, 800, 0}};
  Harness h({10, 100}, {0, 1}, flows);
  h.run();
  EXPECT_NEAR(h.sent_[0], 10.0, 1e-9);
  EXPECT_NEAR(h.sent_[1], 10.0, 1e-9);
  EXPECT_NEAR(h.sent_[2], 10.0, 1e-9);
}

TEST(NetworkModel, AFlowsOwnRateCapLeavesTheRestOfTheLinkToOthers) {
  // One shared 100 B/s link. Flow 0 may move at most 20 B/s, flow 1 is uncapped: max-min gives 20 and 80.
  // Flow 0 (200 B) is sent at 10 s; flow 1 (1,000 B) has sent 800 B by then and its last 200 B at 100 B/s
  // take 2 s more: 12 s. A capped flow alone (flow 2 over its own link, 2 B/s cap) takes bytes / cap plus
  // its latency: 10 B / 2 B/s + 0.5 s delivered at 5.5 s.
  std::vector<FlowSpec> flows{{0, {0}, {}, 200, 0}, {0, {0}, {}, 1000, 0}, {0, {1}, {}, 10, 0.5}};
  flows[0].max_rate = 20;
  flows[2].max_rate = 2;
  Harness h({100, 100}, {1, 1}, flows);
  h.run();
  EXPECT_NEAR(h.sent_[0], 10.0, 1e-9);
  EXPECT_NEAR(h.sent_[1], 12.0, 1e-9);
  EXPECT_NEAR(h.sent_[2], 5.0, 1e-9);
  EXPECT_NEAR(h.delivered_[2], 5.5, 1e-9);
}

TEST(NetworkModel, IncrementalResolveMatchesFromScratchOnRandomWorkloads) {
  for (unsigned seed = 1; seed <= 20; ++seed) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(0, 1);
    const int links = 12;
    std::vector<double> caps;
    std::vector<char> shared;
    for (int l = 0; l < links; ++l) {
      caps.push_back(10 + 90 * u(rng));
      shared.push_back(u(rng) < 0.75 ? 1 : 0);
    }
    std::vector<FlowSpec> flows;
    for (int i = 0; i < 40; ++i) {
      FlowSpec f;
      f.start = std::floor(u(rng) * 20) * 0.5;  // shared start times exercise same-timestamp batching
      std::vector<hw::LinkId> all(links);
      std::iota(all.begin(), all.end(), 0);
      std::shuffle(all.begin(), all.end(), rng);
      f.route.assign(all.begin(), all.begin() + 1 + static_cast<int>(u(rng) * 4));
      if (u(rng) < 0.4)  // a weighted flow bundle: several hops per link
        for (std::size_t k = 0; k < f.route.size(); ++k) f.weights.push_back(1 + std::floor(u(rng) * 3));
      f.bytes = 50 + 1000 * u(rng);
      f.latency = u(rng) < 0.5 ? 0.0 : 0.25;
      flows.push_back(std::move(f));
    }
    Harness h(caps, shared, flows);
    h.run();
    const auto oracle = from_scratch(caps, shared, flows);
    for (std::size_t i = 0; i < flows.size(); ++i) {
      ASSERT_GE(h.sent_[i], 0) << "seed " << seed << " flow " << i << " never finished";
      EXPECT_NEAR(h.sent_[i], oracle[i], 1e-6 * oracle[i] + 1e-9) << "seed " << seed << " flow " << i;
      EXPECT_NEAR(h.delivered_[i], h.sent_[i] + flows[i].latency, 1e-9) << "seed " << seed << " flow " << i;
    }
  }
}

namespace {
// Starts the next flow of a chain from inside on_flow_sent, so the model's flow table grows (and may move)
// while it is still finishing the previous flow.
class ChainListener final : public FlowListener {
 public:
  ChainListener(Engine& e, std::size_t length) : engine(e), length_(length) {}
  void on_flow_sent(FlowId, std::uint64_t user) override {
    sent.push_back(time_to_seconds(engine.now()));
    // Several flows at once so the table reallocates at least once per step.
    if (user + 1 < length_)
      for (int k = 0; k < 3; ++k) net->start_flow(route, 10, latency(user + 1), k == 0 ? user + 1 : kExtra);
  }
  void on_flow_delivered(FlowId, std::uint64_t user) override {
    if (user != kExtra) delivered.emplace_back(user, time_to_seconds(engine.now()));
  }
  static double latency(std::uint64_t i) { return 0.001 * static_cast<double>(i + 1); }
  static constexpr std::uint64_t kExtra = 1'000'000;
  Engine& engine;
  NetworkModel* net = nullptr;
  std::vector<hw::LinkId> route{0};
  std::vector<double> sent;
  std::vector<std::pair<std::uint64_t, double>> delivered;

 private:
  std::size_t length_;
};
}  // namespace

TEST(NetworkModel, FlowsStartedFromTheSentCallbackKeepTheFinishingFlowsLatency) {
  // Regression (heap-use-after-free, seen under AddressSanitizer): finish_bandwidth_phase held a reference
  // into the flow table while the listener started new flows, then read the finished flow's latency
  // through it. Each chain flow i must be delivered exactly latency(i) after it was sent.
  Engine engine;
  ChainListener listener(engine, 40);
  NetworkModel net(engine, {1000.0}, {1}, listener);
  listener.net = &net;
  net.start_flow(listener.route, 10, ChainListener::latency(0), 0);
  engine.run();
  ASSERT_EQ(listener.delivered.size(), 40u);
  std::map<std::uint64_t, double> when;
  for (const auto& [user, t] : listener.delivered) when[user] = t;
  // Flow 0 alone: 10 B at 1000 B/s. Flow i >= 1 shares the link with two others: 10 B at 333.3 B/s.
  double sent = 0.01;
  for (std::uint64_t i = 0; i < 40; ++i) {
    EXPECT_NEAR(when[i], sent + ChainListener::latency(i), 1e-9) << i;
    sent += 0.03;
  }
}

TEST(SimTime, DurationsOutsideThePicosecondClockAreInputErrors) {
  EXPECT_EQ(seconds_to_time(1.0), kPicosPerSecond);
  EXPECT_THROW(seconds_to_time(1e7), std::invalid_argument);  // > 2^63 ps (about 106 days)
  EXPECT_THROW(seconds_to_time(std::numeric_limits<double>::quiet_NaN()), std::invalid_argument);
  EXPECT_THROW(seconds_to_time(std::numeric_limits<double>::infinity()), std::invalid_argument);
  EXPECT_THROW(seconds_to_time(-1.0), std::invalid_argument);
  EXPECT_THROW(checked_add(kNever - 5, 10), std::invalid_argument);
  // A transfer of 1e99 bytes used to surface as "internal error: event scheduled in the past".
  const auto topo = test::uniform_switch(1, 2, 100, 10);
  TaskGraph g;
  g.add_transfer(0, 1, 1e99, 0, g.intern("huge"));
  try {
    simulate(topo, g);
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("outside the simulator's range"), std::string::npos) << e.what();
  }
}

}  // namespace strata::sim
