// Collective algorithm "openmpi" (sim/algorithms/openmpi.cc): Open MPI's schedules on an emulated cluster of
// 2 nodes x 2 ranks, against closed forms worked out here from the cluster's link figures, and (step
// granularity) against a brute-force replay of the schedules' message dependencies.
//
// The cluster (emulated_cluster.h): ranks 0,1 on node 0 and 2,3 on node 1; inside a node a shared-memory wire
// of Bs = 40 GB/s and ls = 2 us; between nodes the route crosses both nodes' ports, bottleneck B = 25 MB/s,
// and its latency is the nics link's L = 100 us (the loader puts L/2 on each side of the bridge, PCIe adds
// 0). Open MPI has no library latency table (Family::kHostMpi): every hop costs its route's physical latency
// and the launch costs nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/algorithms/openmpi.h"
#include "sim/collective.h"
#include "sim/collective_runner.h"
#include "sim/nccl_model.h"
#include "sim/simulator.h"
#include "tests/validate/emulated_cluster.h"
#include "validate/measure.h"

namespace strata::sim {
namespace {

constexpr double kBs = 40e9, kLs = 2e-6;  // shared memory, one hop
constexpr double kB = 25e6, kL = 100e-6;  // between nodes, one route
constexpr double kMiB = 1 << 20;

const hw::Topology& cluster() {
  static const hw::Topology t = test::emulated_cluster();
  return t;
}

double simulate_openmpi(CollectiveOp op, std::vector<hw::Rank> group, double bytes,
                        Granularity granularity = Granularity::kFlow) {
  CollectiveSpec spec;
  spec.op = op;
  spec.group = std::move(group);
  spec.bytes = bytes;
  spec.granularity = granularity;
  TaskGraph graph;
  add_collective(cluster(), graph, spec, "openmpi");
  return simulate(cluster(), graph).seconds();
}

// The simulator's clock counts whole picoseconds, rounding every duration up: allow a few per transfer.
void expect_time(double actual, double expected) {
  EXPECT_NEAR(actual, expected, 1e-9 + 1e-9 * expected);
}

TEST(OpenMpiSchedule, TheClusterIsWhatTheFormulasAssume) {
  const auto& t = cluster();
  ASSERT_EQ(t.num_gpus(), 4);
  EXPECT_NEAR(t.route_latency(0, 1), kLs, 1e-15);
  EXPECT_NEAR(t.route_bandwidth(0, 1), kBs, kBs * 1e-12);
  for (auto [a, b] : {std::pair{1, 2}, std::pair{3, 0}, std::pair{0, 2}}) {
    EXPECT_NEAR(t.route_latency(a, b), kL, 1e-15) << a << "->" << b;
    EXPECT_NEAR(t.route_bandwidth(a, b), kB, kB * 1e-12) << a << "->" << b;
  }
}

TEST(OpenMpiSchedule, AllReduceIsARankOrderRingOfWholeBlocks) {
  // Ring 0 -> 1 -> 2 -> 3 -> 0: hops shm, net, shm, net; each directed link carries one hop, so the pipelined
  // ring moves at the slowest hop's B. 2(n-1) = 6 steps of S/n each: 6 (S/4) / B. Latency: step s of rank i
  // waits for step s-1 of rank i-1, so 6 consecutive hops add up: one lap (2 ls + 2 L) plus any two
  // neighbouring hops (ls + L): 3 (ls + L).
  for (double S : {4096.0, kMiB, 16 * kMiB}) {
    expect_time(simulate_openmpi(CollectiveOp::kAllReduce, {0, 1, 2, 3}, S),
                6 * (S / 4) / kB + 3 * (kLs + kL));
  }
}

TEST(OpenMpiSchedule, AllReduceFollowsTheCommunicatorOrderNotTheNodes) {
  // Order 0, 2, 1, 3: every hop crosses nodes, and node 0's port carries two of them (0->2 and 1->3) at once,
  // so each hop gets B/2: 6 (S/4) / (B/2) = 3 S / B; latency 6 consecutive network hops, 6 L. (strata's
  // NCCL ring would sort the ranks by node instead.)
  const double S = 4 * kMiB;
  expect_time(simulate_openmpi(CollectiveOp::kAllReduce, {0, 2, 1, 3}, S), 3 * S / kB + 6 * kL);
}

TEST(OpenMpiSchedule, ReduceScatterAndAllGatherTakeNMinusOneSteps) {
  // 3 steps of S/4; latency of the slowest 3 consecutive hops: net, shm, net = 2 L + ls.
  const double S = 8 * kMiB;
  for (auto op : {CollectiveOp::kReduceScatter, CollectiveOp::kAllGather})
    expect_time(simulate_openmpi(op, {0, 1, 2, 3}, S), 3 * (S / 4) / kB + 2 * kL + kLs);
}

// Brute force of the ring schedule at step granularity, from Open MPI's ring (each rank sends its step-s
// block once its step-(s-1) send has left and the block it forwards has arrived from its predecessor): sent =
// start + (S/n) / bandwidth of the hop, delivered = sent + the hop's latency. `hop_bw`/`hop_lat` per position
// i (hop i -> i+1). Valid where no two hops share a link, as in ring 0, 1, 2, 3 here.
double ring_replay(int steps, double block, const std::vector<double>& hop_bw,
                   const std::vector<double>& hop_lat) {
  const std::size_t n = hop_bw.size();
  std::vector<double> sent(n, 0), done(n, 0);
  for (int s = 0; s < steps; ++s) {
    std::vector<double> nsent(n), ndone(n);
    for (std::size_t i = 0; i < n; ++i) {
      const double start = s == 0 ? 0 : std::max(sent[i], done[(i + n - 1) % n]);
      nsent[i] = start + block / hop_bw[i];
      ndone[i] = nsent[i] + hop_lat[i];
    }
    sent = nsent;
    done = ndone;
  }
  return *std::max_element(done.begin(), done.end());
}

TEST(OpenMpiSchedule, StepGranularityMatchesABruteForceReplayOfTheRing) {
  const std::vector<double> bw{kBs, kB, kBs, kB}, lat{kLs, kL, kLs, kL};
  for (double S : {4096.0, 256 * 1024.0, 4 * kMiB}) {
    expect_time(simulate_openmpi(CollectiveOp::kAllReduce, {0, 1, 2, 3}, S, Granularity::kStep),
                ring_replay(6, S / 4, bw, lat));
    expect_time(simulate_openmpi(CollectiveOp::kAllGather, {0, 1, 2, 3}, S, Granularity::kStep),
                ring_replay(3, S / 4, bw, lat));
  }
  // For large blocks rank 1 (and 3) sends back to back: 6 blocks at B, then one network latency.
  const double S = 4 * kMiB;
  expect_time(ring_replay(6, S / 4, bw, lat), 6 * (S / 4) / kB + kL);
}

TEST(OpenMpiSchedule, BroadcastAndReducePipelineSegmentsAlongTheChain) {
  // Open MPI's pipeline: 128 KiB segments (coll_tuned_bcast_algorithm_segmentsize as validate sets it).
  EXPECT_EQ(algorithms::kOpenMpiSegmentBytes, 128 * 1024);
  // Chain 0 -> 1 -> 2 -> 3 (reduce: 3 -> 2 -> 1 -> 0), simulated per segment whatever the granularity: K =
  // ceil(S / 128 KiB) segments of c = S/K. The first segment crosses the shared-memory hop (ls + c/Bs), the
  // network hop then sends the K segments back to back (K c / B, its latency L once, overlapped by the
  // pipeline), and the last one crosses the other shared-memory hop (ls + c/Bs):
  // S/B + L + 2 ls + 2 c / Bs.
  const auto expected = [](double S) {
    const double K = std::max(1.0, std::ceil(S / (128 * 1024.0)));
    return S / kB + kL + 2 * kLs + 2 * (S / K) / kBs;
  };
  for (double S : {1024.0, 128 * 1024.0, 128 * 1024.0 + 4, kMiB, 3 * kMiB + 12})
    for (auto g : {Granularity::kFlow, Granularity::kStep}) {
      expect_time(simulate_openmpi(CollectiveOp::kBroadcast, {0, 1, 2, 3}, S, g), expected(S));
      expect_time(simulate_openmpi(CollectiveOp::kReduce, {0, 1, 2, 3}, S, g), expected(S));
    }
  // The flow form's common pace would charge (K + 2) segment times at B: 1.25 S / B for 1 MiB (8 segments).
  EXPECT_LT(expected(kMiB), 1.01 * kMiB / kB + kL + 2 * kLs);
}

TEST(OpenMpiSchedule, BroadcastStepGranularityMatchesABruteForcePipeline) {
  // Segment k leaves stage h once it has arrived there and segment k-1 has left stage h.
  const std::vector<double> bw{kBs, kB, kBs}, lat{kLs, kL, kLs};
  for (double S : {kMiB, 640 * 1024.0}) {
    const int K = static_cast<int>(std::ceil(S / (128 * 1024.0)));
    const double seg = S / K;
    std::vector<double> sent(3, 0), done(3, 0);
    for (int k = 0; k < K; ++k)
      for (std::size_t h = 0; h < 3; ++h) {
        const double start = std::max(h == 0 ? 0.0 : done[h - 1], k == 0 ? 0.0 : sent[h]);
        sent[h] = start + seg / bw[h];
        done[h] = sent[h] + lat[h];
      }
    expect_time(simulate_openmpi(CollectiveOp::kBroadcast, {0, 1, 2, 3}, S, Granularity::kStep), done[2]);
  }
}

TEST(OpenMpiSchedule, SendRecvIsOneTransferEachWay) {
  // {0, 2}: 0 -> 2 and 2 -> 0 at once over opposite directions of the ports: S / B + L.
  for (double S : {8.0, kMiB}) expect_time(simulate_openmpi(CollectiveOp::kSendRecv, {0, 2}, S), S / kB + kL);
  // Inside a node: S / Bs + ls.
  expect_time(simulate_openmpi(CollectiveOp::kSendRecv, {0, 1}, kMiB), kMiB / kBs + kLs);
}

TEST(OpenMpiSchedule, AllToAllPostsEveryPairAtOnce) {
  // Each rank sends S/4 to each peer. Node 0's port carries 0->2, 0->3, 1->2, 1->3: S bytes in all, shared
  // fairly, so all four finish at S / B, then L. The shared-memory pairs finish long before.
  const double S = 2 * kMiB;
  expect_time(simulate_openmpi(CollectiveOp::kAllToAll, {0, 1, 2, 3}, S), S / kB + kL);
}

TEST(OpenMpiSchedule, ForcedAlgorithmsAreTheModelledOnesInOpenMpisNumbering) {
  // coll/tuned's forced-algorithm enumerations (Open MPI v4.1.x,
  // ompi/mca/coll/tuned/coll_tuned_*_decision.c): allreduce 4 "ring", reduce_scatter 3 "ring", allgather 4
  // "ring", bcast 3 "pipeline", reduce 3 "pipeline", alltoall 1 "linear"; forcing needs
  // coll_tuned_use_dynamic_rules; segment sizes in bytes (128 KiB).
  std::map<std::string, std::string> want{
      {"coll_tuned_use_dynamic_rules", "1"},        {"coll_tuned_allreduce_algorithm", "4"},
      {"coll_tuned_reduce_scatter_algorithm", "3"}, {"coll_tuned_allgather_algorithm", "4"},
      {"coll_tuned_bcast_algorithm", "3"},          {"coll_tuned_bcast_algorithm_segmentsize", "131072"},
      {"coll_tuned_reduce_algorithm", "3"},         {"coll_tuned_reduce_algorithm_segmentsize", "131072"},
      {"coll_tuned_alltoall_algorithm", "1"}};
  std::map<std::string, std::string> got;
  for (const auto& [name, value] : algorithms::openmpi_forced_algorithms()) got[name] = value;
  EXPECT_EQ(got, want);
}

TEST(OpenMpiSchedule, OnlySimpleProtocol) {
  CollectiveSpec spec;
  spec.group = {0, 1, 2, 3};
  spec.bytes = kMiB;
  const auto* algo = AlgorithmRegistry::instance().find("openmpi");
  ASSERT_NE(algo, nullptr);
  EXPECT_EQ(algo->unsupported_reason(spec, cluster()), "");
  for (auto p : {Protocol::kLL, Protocol::kLL128}) {
    spec.protocol = p;
    EXPECT_NE(algo->unsupported_reason(spec, cluster()), "");
    TaskGraph graph;
    EXPECT_THROW(add_collective(cluster(), graph, spec, "openmpi"), std::invalid_argument);
  }
}

TEST(OpenMpiSchedule, NeverATunersPick) {
  // A cluster where Open MPI's schedule is predicted faster than everything else: small messages and
  // microsecond links, where NCCL's per-hop latencies (14 us per network hop for Ring/Simple) dominate.
  test::EmulatedCluster c;
  c.net_latency = 2e-6;
  const auto t = test::emulated_cluster(c);
  CollectiveSpec spec;
  spec.group = {0, 1, 2, 3};
  spec.bytes = 64;
  const auto own = nccl::estimate_all(t, spec, "openmpi");
  ASSERT_EQ(own.size(), 1u);  // Simple only
  EXPECT_EQ(own[0].algorithm, "openmpi");
  for (auto candidates : {nccl::Candidates::kNccl, nccl::Candidates::kAll}) {
    const auto all = nccl::estimate_all(t, spec, {}, candidates);
    ASSERT_FALSE(all.empty());
    for (const auto& e : all) EXPECT_NE(e.algorithm, "openmpi");
    EXPECT_LT(own[0].seconds, all.front().seconds);  // so leaving it out is what keeps it from winning
  }
  for (const char* choice : {"auto", "best"}) {
    CollectiveRequest req;
    req.spec = spec;
    req.algorithm = choice;
    EXPECT_NE(run_collective(t, req).algorithm, "openmpi") << choice;
  }
  // Named, it runs: its time on this cluster by the all-reduce formula above, with L = 2 us.
  CollectiveRequest named;
  named.spec = spec;
  named.algorithm = "openmpi";
  named.auto_protocol = false;
  const auto r = run_collective(t, named);
  EXPECT_EQ(r.algorithm, "openmpi");
  expect_time(r.seconds, 6 * (64.0 / 4) / kB + 3 * (kLs + 2e-6));
}

}  // namespace
}  // namespace strata::sim

namespace strata::validate {
namespace {

using sim::CollectiveOp;

TEST(OpenMpiSchedule, SimulatedPlanCaseRunsStepsInOrderAndCallsConcurrently) {
  // What `strata validate` predicts for a measured case (validate::simulate_case), on the same cluster.
  // Step 0: send/recv on {0, 2} and on {1, 3} at once; node 0's port carries 0->2 and 1->3 (node 1's the
  // replies), so each gets B/2: 2 S / B + L. Step 1, once its members are done: all-reduce on {0, 1} (a
  // 2-rank ring inside node 0: 2 steps of S/2 at Bs, latency 2 ls: S / Bs + 2 ls) beside a broadcast on
  // {2, 3} (one hop: its K segments back to back, S / Bs + ls, the shorter of the two).
  const double S = 1 << 20, B = 25e6, L = 100e-6, Bs = 40e9, ls = 2e-6;
  PlanCase c;
  c.name = "program";
  c.steps.push_back(PlanStep{{PlanCall{CollectiveOp::kSendRecv, {0, 2}, 1 << 20},
                              PlanCall{CollectiveOp::kSendRecv, {1, 3}, 1 << 20}}});
  c.steps.push_back(PlanStep{{PlanCall{CollectiveOp::kAllReduce, {0, 1}, 1 << 20},
                              PlanCall{CollectiveOp::kBroadcast, {2, 3}, 1 << 20}}});
  const double expected = 2 * S / B + L + S / Bs + 2 * ls;
  EXPECT_NEAR(simulate_case(test::emulated_cluster(), c), expected, 1e-9 + 1e-9 * expected);
}

}  // namespace
}  // namespace strata::validate
