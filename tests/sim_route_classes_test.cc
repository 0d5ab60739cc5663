// RouteClasses keeps one link per class of equivalent links; the simulated times and per-link bytes must be
// those of the full routes, derived here by hand from max-min sharing.
#include <gtest/gtest.h>

#include "sim/route_classes.h"
#include "sim/simulator.h"
#include "test_systems.h"

namespace strata::sim {
namespace {

// One switch, 4 GPUs, 100 GB/s ports. A bundle (two hops of one step merged, as a symmetric collective's
// instances are) crosses GPU 0's uplink twice (weight 2) and the links 1-down, 2-up, 3-down once; a plain
// flow 0 -> 2 shares GPU 0's uplink. Classes: {0 up}, {1 down, 2 up, 3 down} (only the bundle, weight 1),
// {2 down} (only the flow).
struct Scene {
  hw::Topology topo = test::uniform_switch(1, 4, 100, 10);
  TaskGraph graph;
  TaskId bundle = 0, flow = 0;
  hw::LinkId up0 = 0, down1 = 0, up2 = 0, down2 = 0, down3 = 0;

  Scene() {
    const auto r01 = topo.route(0, 1), r23 = topo.route(2, 3), r02 = topo.route(0, 2);
    EXPECT_EQ(r01.size(), 2u);  // GPU -> switch, switch -> GPU
    up0 = r01[0], down1 = r01[1], up2 = r23[0], down3 = r23[1], down2 = r02[1];
    // Bundle 1 GB per hop; flow 0.5 GB. Both start at 0.
    bundle = graph.add_transfer_on({{up0, down1, up2, down3}, {2, 1, 1, 1}}, 0, 1, 1e9, 0, graph.intern("b"));
    flow = graph.add_transfer(0, 2, 0.5e9, 0, graph.intern("f"));
  }
};

TEST(RouteClasses, KeepsOneLinkPerClassOfEquivalentLinks) {
  Scene s;
  const RouteClasses classes(s.topo, s.graph);
  const auto bundle = classes.links(s.graph.task(s.bundle));
  const auto weights = classes.weights(s.graph.task(s.bundle));
  ASSERT_EQ(bundle.size(), 2u);
  EXPECT_EQ(bundle[0], s.up0);
  EXPECT_EQ(bundle[1], std::min({s.down1, s.up2, s.down3}));  // the class's lowest link id
  ASSERT_EQ(weights.size(), 2u);
  EXPECT_EQ(weights[0], 2.0);
  EXPECT_EQ(weights[1], 1.0);
  const auto flow = classes.links(s.graph.task(s.flow));
  ASSERT_EQ(flow.size(), 2u);  // nothing else crosses 2-down, and 0-up is its own class
  EXPECT_TRUE(classes.weights(s.graph.task(s.flow)).empty());
}

TEST(RouteClasses, SimulatedTimesAndBytesAreThoseOfTheFullRoutes) {
  Scene s;
  const auto r = simulate(s.topo, s.graph, SimOptions{nullptr, true});
  // GPU 0's uplink: 2 r_bundle + r_flow <= 100 GB/s, every other link allows 100 GB/s: max-min gives both
  // 33.3 GB/s. The flow's 0.5 GB is sent at 15 ms; the bundle has 0.5 GB left and then runs at 50 GB/s
  // (2 r <= 100): 10 ms more.
  EXPECT_NEAR(time_to_seconds(r.timeline[static_cast<std::size_t>(s.flow)].done), 0.015, 1e-9);
  EXPECT_NEAR(time_to_seconds(r.timeline[static_cast<std::size_t>(s.bundle)].done), 0.025, 1e-9);
  auto bytes = [&](hw::LinkId l) { return r.link_bytes[static_cast<std::size_t>(l)]; };
  EXPECT_NEAR(bytes(s.up0), 2 * 1e9 + 0.5e9, 1);
  EXPECT_NEAR(bytes(s.down1), 1e9, 1);  // every link of the class, not only its representative
  EXPECT_NEAR(bytes(s.up2), 1e9, 1);
  EXPECT_NEAR(bytes(s.down3), 1e9, 1);
  EXPECT_NEAR(bytes(s.down2), 0.5e9, 1);
  double total = 0;
  for (double b : r.link_bytes) total += b;
  EXPECT_NEAR(total, 2.5e9 + 3e9 + 0.5e9, 10);  // and nothing anywhere else
}

TEST(RouteClasses, ASharedRouteServesManyTransfers) {
  // One stored route, three transfers one after another on it: 1 GB each at 100 GB/s.
  const auto topo = test::uniform_switch(1, 2, 100, 10);
  TaskGraph g;
  const auto route = g.add_route({{topo.route(0, 1).begin(), topo.route(0, 1).end()}, {}});
  TaskId prev = g.add_transfer_via(route, 0, 1, 1e9, 0, g.intern("a"));
  for (int i = 0; i < 2; ++i) {
    const Dep after[] = {{prev}};
    prev = g.add_transfer_via(route, 0, 1, 1e9, 0, g.intern("a"), after);
  }
  EXPECT_EQ(g.num_custom_routes(), 1u);
  EXPECT_NEAR(simulate(topo, g).seconds(), 0.030, 1e-9);
  EXPECT_THROW(g.add_transfer_via(7, 0, 1, 1e9, 0, -1), std::logic_error);
}

}  // namespace
}  // namespace strata::sim
