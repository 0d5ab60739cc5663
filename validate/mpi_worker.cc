// strata-mpi-worker PLAN.json RESULT.json: runs a measurement plan (validate/plan.h) under mpirun and, on
// rank 0, writes the timings. `strata validate` starts it; it is not meant to be run by hand, but it can be
// (`mpirun -np 4 strata-mpi-worker plan.json out.json`). Each distinct group gets its own communicator
// (MPI_Comm_split, members keep the group's order, so the group's first member is rank 0 and the root), and
// each call runs the MPI collective of its op on float32 data with MPI_SUM, out of place as nccl-tests does.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "util/atomic_file.h"
#include "util/lsan_mpi.h"
#include "validate/mpi_worker_main.h"
#include "validate/plan.h"

namespace {

using strata::sim::CollectiveOp;
namespace v = strata::validate;

struct Buffers {
  std::vector<float> send, recv;
};

// Runs one call on `comm` (this rank is a member).
void run_call(const v::PlanCall& call, MPI_Comm comm, Buffers& b) {
  int n = 0, me = 0;
  MPI_Comm_size(comm, &n);
  MPI_Comm_rank(comm, &me);
  const int count = static_cast<int>(call.bytes / 4);
  const int share = count / n;
  float* s = b.send.data();
  float* r = b.recv.data();
  switch (call.op) {
    case CollectiveOp::kAllReduce:
      MPI_Allreduce(s, r, count, MPI_FLOAT, MPI_SUM, comm);
      return;
    case CollectiveOp::kReduceScatter: {
      const std::vector<int> counts(static_cast<std::size_t>(n), share);
      MPI_Reduce_scatter(s, r, counts.data(), MPI_FLOAT, MPI_SUM, comm);
      return;
    }
    case CollectiveOp::kAllGather:
      MPI_Allgather(s, share, MPI_FLOAT, r, share, MPI_FLOAT, comm);
      return;
    case CollectiveOp::kReduce:
      MPI_Reduce(s, r, count, MPI_FLOAT, MPI_SUM, 0, comm);
      return;
    case CollectiveOp::kBroadcast:
      MPI_Bcast(me == 0 ? s : r, count, MPI_FLOAT, 0, comm);
      return;
    case CollectiveOp::kAllToAll:
      MPI_Alltoall(s, share, MPI_FLOAT, r, share, MPI_FLOAT, comm);
      return;
    case CollectiveOp::kSendRecv:
      MPI_Sendrecv(s, count, MPI_FLOAT, (me + 1) % n, 0, r, count, MPI_FLOAT, (me + n - 1) % n, 0, comm,
                   MPI_STATUS_IGNORE);
      return;
  }
}

std::string library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  MPI_Get_library_version(text, &len);
  std::string s(text, static_cast<std::size_t>(std::max(len, 0)));
  const auto end = s.find_first_of("\r\n,");
  return end == std::string::npos ? s : s.substr(0, end);
}

int run(int argc, char** argv) {
  int world = 0, me = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  if (argc != 3) throw std::invalid_argument("usage: strata-mpi-worker PLAN.json RESULT.json");
  std::ifstream in(argv[1]);
  if (!in) throw std::invalid_argument(std::string("cannot read ") + argv[1]);
  std::stringstream text;
  text << in.rdbuf();
  const v::MeasurementPlan plan = v::plan_from_json(text.str(), argv[1]);
  if (plan.ranks != world)
    throw std::invalid_argument("the plan is for " + std::to_string(plan.ranks) + " ranks, mpirun started " +
                                std::to_string(world));

  // One communicator per distinct group, created in the same order on every rank.
  std::map<std::vector<int>, MPI_Comm> comms;
  std::int64_t largest = 4;
  for (const auto& c : plan.cases)
    for (const auto& s : c.steps)
      for (const auto& call : s.calls) {
        largest = std::max(largest, call.bytes);
        if (comms.count(call.group)) continue;
        const auto at = std::find(call.group.begin(), call.group.end(), me);
        const bool member = at != call.group.end();
        MPI_Comm comm = MPI_COMM_NULL;
        MPI_Comm_split(MPI_COMM_WORLD, member ? 0 : MPI_UNDEFINED,
                       member ? static_cast<int>(at - call.group.begin()) : 0, &comm);
        comms.emplace(call.group, comm);
      }
  Buffers b;
  b.send.assign(static_cast<std::size_t>(largest / 4), 1.0f);
  b.recv.assign(static_cast<std::size_t>(largest / 4), 0.0f);

  v::PlanResult result;
  result.ranks = world;
  result.library = library_version();
  for (const auto& c : plan.cases) {
    std::vector<double> mine;
    for (int it = 0; it < plan.warmup + plan.iterations; ++it) {
      MPI_Barrier(MPI_COMM_WORLD);
      const double t0 = MPI_Wtime();
      for (const auto& s : c.steps)
        for (const auto& call : s.calls) {
          const MPI_Comm comm = comms.at(call.group);
          if (comm != MPI_COMM_NULL) run_call(call, comm, b);
        }
      const double dt = MPI_Wtime() - t0;
      if (it >= plan.warmup) mine.push_back(dt);
    }
    std::vector<double> all(me == 0 ? mine.size() * static_cast<std::size_t>(world) : 0);
    MPI_Gather(mine.data(), static_cast<int>(mine.size()), MPI_DOUBLE, all.data(),
               static_cast<int>(mine.size()), MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (me != 0) continue;
    v::CaseResult cr;
    cr.name = c.name;
    const std::size_t iters = mine.size();
    for (std::size_t i = 0; i < iters; ++i) {
      double slowest = 0;
      for (int r = 0; r < world; ++r)
        slowest = std::max(slowest, all[static_cast<std::size_t>(r) * iters + i]);
      cr.seconds.push_back(slowest);
    }
    for (int r = 0; r < world; ++r) {
      const auto first = all.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(r) * iters);
      cr.rank_median_seconds.push_back(
          v::spread_of({first, first + static_cast<std::ptrdiff_t>(iters)}).median);
    }
    result.cases.push_back(std::move(cr));
  }
  for (auto& [group, comm] : comms)
    if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
  if (me == 0) strata::util::write_file_atomically(argv[2], v::result_to_json(result));
  return 0;
}

}  // namespace

// Open MPI's own allocations are not strata's leaks (util/lsan_mpi.h).
extern "C" const char* __lsan_default_suppressions() {
  return strata::util::kMpiLeakSuppressions;
}

int main(int argc, char** argv) {
  return strata::validate::mpi_worker_main(argc, argv, "strata-mpi-worker", run);
}
