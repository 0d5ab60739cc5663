// strata-nccl-worker PLAN.json RESULT.json: runs a measurement plan (validate/plan.h) with NCCL under mpirun,
// one rank per GPU, and on rank 0 writes the timings and the correctness counts. `strata validate collectives
// --backend nccl` starts it (validate/measure_backend.h); `mpirun -np 8 strata-nccl-worker plan.json
// out.json` runs it by hand.
//
// Each rank takes GPU (local rank mod visible GPUs), local ranks numbered by MPI_Comm_split_type(SHARED).
// Rank 0's ncclGetUniqueId is broadcast over MPI and every rank joins the world communicator; each distinct
// group of the plan then gets its own communicator by ncclCommSplit (members keyed by their place in the
// group, so the group's first member is rank 0 and the root), created in the same order on every rank. Calls
// are NCCL's collectives on float32 with ncclSum, out of place as nccl-tests runs them (all-to-all and
// send/recv as grouped ncclSend/ncclRecv). Per case: one correctness pass first (each call on the values of
// validate/collective_check.h, every received element compared exactly; the wrong ones counted over ranks),
// then `warmup` untimed and `iterations` timed runs, each from a common MPI barrier, timed on the rank's
// stream by CUDA events; one timing is the slowest rank's, as the MPI worker reports.
#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "util/atomic_file.h"
#include "util/lsan_mpi.h"
#include "validate/collective_check.h"
#include "validate/mpi_worker_main.h"
#include "validate/plan.h"

namespace {

using strata::sim::CollectiveOp;
namespace v = strata::validate;

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(fmt::format("{}: {}", what, cudaGetErrorString(e)));
}
void check(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) throw std::runtime_error(fmt::format("{}: {}", what, ncclGetErrorString(r)));
}

struct Comm {
  ncclComm_t comm = nullptr;  // null: this rank is not in the group
  int size = 0, position = 0;
};

struct Device {
  cudaStream_t stream = nullptr;
  float* send = nullptr;
  float* recv = nullptr;
  std::size_t floats = 0;
};

// Enqueues one call on this rank's stream (the rank is a member of `c`).
void run_call(const v::PlanCall& call, const Comm& c, const Device& d) {
  const auto count = static_cast<std::size_t>(call.bytes / 4);
  const std::size_t share = count / static_cast<std::size_t>(c.size);
  switch (call.op) {
    case CollectiveOp::kAllReduce:
      check(ncclAllReduce(d.send, d.recv, count, ncclFloat, ncclSum, c.comm, d.stream), "ncclAllReduce");
      return;
    case CollectiveOp::kReduceScatter:
      check(ncclReduceScatter(d.send, d.recv, share, ncclFloat, ncclSum, c.comm, d.stream),
            "ncclReduceScatter");
      return;
    case CollectiveOp::kAllGather:
      check(ncclAllGather(d.send, d.recv, share, ncclFloat, c.comm, d.stream), "ncclAllGather");
      return;
    case CollectiveOp::kReduce:
      check(ncclReduce(d.send, d.recv, count, ncclFloat, ncclSum, 0, c.comm, d.stream), "ncclReduce");
      return;
    case CollectiveOp::kBroadcast:
      check(ncclBroadcast(d.send, d.recv, count, ncclFloat, 0, c.comm, d.stream), "ncclBroadcast");
      return;
    case CollectiveOp::kAllToAll:
      check(ncclGroupStart(), "ncclGroupStart");
      for (int peer = 0; peer < c.size; ++peer) {
        const std::size_t at = static_cast<std::size_t>(peer) * share;
        check(ncclSend(d.send + at, share, ncclFloat, peer, c.comm, d.stream), "ncclSend");
        check(ncclRecv(d.recv + at, share, ncclFloat, peer, c.comm, d.stream), "ncclRecv");
      }
      check(ncclGroupEnd(), "ncclGroupEnd");
      return;
    case CollectiveOp::kSendRecv:
      check(ncclGroupStart(), "ncclGroupStart");
      check(ncclSend(d.send, count, ncclFloat, (c.position + 1) % c.size, c.comm, d.stream), "ncclSend");
      check(ncclRecv(d.recv, count, ncclFloat, (c.position + c.size - 1) % c.size, c.comm, d.stream),
            "ncclRecv");
      check(ncclGroupEnd(), "ncclGroupEnd");
      return;
  }
}

// The correctness pass of one call: this member's send values uploaded, the receive buffer filled with NaN,
// the call run, the received elements compared exactly. Returns the wrong elements.
std::int64_t check_call(const v::PlanCall& call, const Comm& c, const Device& d) {
  const std::int64_t count = call.bytes / 4;
  std::vector<float> host(static_cast<std::size_t>(v::check_send_count(call.op, c.size, count, c.position)));
  for (std::size_t i = 0; i < host.size(); ++i)
    host[i] = v::check_send_value(c.position, static_cast<std::int64_t>(i));
  // On the rank's stream, so that the call sees them (the stream does not synchronize with the default one).
  check(cudaMemcpyAsync(d.send, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice, d.stream),
        "cudaMemcpy");
  check(cudaMemsetAsync(d.recv, 0xff, d.floats * sizeof(float), d.stream), "cudaMemset");  // NaN: never right
  run_call(call, c, d);
  check(cudaStreamSynchronize(d.stream), "cudaStreamSynchronize");
  host.resize(static_cast<std::size_t>(v::check_recv_count(call.op, c.size, count, c.position)));
  check(cudaMemcpy(host.data(), d.recv, host.size() * sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy");
  std::int64_t wrong = 0;
  for (std::size_t i = 0; i < host.size(); ++i)
    wrong +=
        host[i] != v::expected_recv_value(call.op, c.size, count, c.position, static_cast<std::int64_t>(i));
  return wrong;
}

// Every distinct group's communicator, split from `world` in the plan's order.
std::map<std::vector<int>, Comm> split_groups(const v::MeasurementPlan& plan, ncclComm_t world, int me) {
  std::map<std::vector<int>, Comm> comms;
  for (const auto& c : plan.cases)
    for (const auto& s : c.steps)
      for (const auto& call : s.calls) {
        if (comms.count(call.group)) continue;
        const auto at = std::find(call.group.begin(), call.group.end(), me);
        const bool member = at != call.group.end();
        Comm comm;
        comm.size = static_cast<int>(call.group.size());
        comm.position = member ? static_cast<int>(at - call.group.begin()) : 0;
        check(ncclCommSplit(world, member ? 0 : NCCL_SPLIT_NOCOLOR, comm.position, &comm.comm, nullptr),
              "ncclCommSplit");
        comms.emplace(call.group, comm);
      }
  return comms;
}

// This rank's timings of one case, and the wrong elements of its correctness pass.
std::vector<double> run_case(const v::PlanCase& c, const v::MeasurementPlan& plan,
                             const std::map<std::vector<int>, Comm>& comms, const Device& d,
                             std::int64_t& wrong) {
  for (const auto& s : c.steps)
    for (const auto& call : s.calls)
      if (const auto& comm = comms.at(call.group); comm.comm) wrong += check_call(call, comm, d);
  cudaEvent_t start{}, stop{};
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  std::vector<double> mine;
  for (int it = 0; it < plan.warmup + plan.iterations; ++it) {
    MPI_Barrier(MPI_COMM_WORLD);
    check(cudaEventRecord(start, d.stream), "cudaEventRecord");
    for (const auto& s : c.steps)
      for (const auto& call : s.calls)
        if (const auto& comm = comms.at(call.group); comm.comm) run_call(call, comm, d);
    check(cudaEventRecord(stop, d.stream), "cudaEventRecord");
    check(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    if (it >= plan.warmup) mine.push_back(static_cast<double>(ms) * 1e-3);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return mine;
}

// Rank 0's result of a case from every rank's timings (the slowest rank per iteration, each rank's median).
v::CaseResult gather_case(const v::PlanCase& c, const std::vector<double>& mine, std::int64_t wrong,
                          int world, int me) {
  std::vector<double> all(me == 0 ? mine.size() * static_cast<std::size_t>(world) : 0);
  MPI_Gather(mine.data(), static_cast<int>(mine.size()), MPI_DOUBLE, all.data(),
             static_cast<int>(mine.size()), MPI_DOUBLE, 0, MPI_COMM_WORLD);
  long long total_wrong = 0, own = wrong;
  MPI_Reduce(&own, &total_wrong, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  v::CaseResult cr;
  if (me != 0) return cr;
  cr.name = c.name;
  cr.wrong = total_wrong;
  const std::size_t iters = mine.size();
  for (std::size_t i = 0; i < iters; ++i) {
    double slowest = 0;
    for (int r = 0; r < world; ++r) slowest = std::max(slowest, all[static_cast<std::size_t>(r) * iters + i]);
    cr.seconds.push_back(slowest);
  }
  for (int r = 0; r < world; ++r) {
    const auto first = all.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(r) * iters);
    cr.rank_median_seconds.push_back(
        v::spread_of({first, first + static_cast<std::ptrdiff_t>(iters)}).median);
  }
  return cr;
}

// Chooses this rank's GPU: local rank (ranks sharing the node) mod the node's visible GPUs.
int choose_device() {
  int devices = 0;
  if (const cudaError_t e = cudaGetDeviceCount(&devices); e != cudaSuccess)
    throw std::runtime_error(fmt::format("no CUDA device (cudaGetDeviceCount: {})", cudaGetErrorString(e)));
  if (devices == 0) throw std::runtime_error("no CUDA device (cudaGetDeviceCount found 0 devices)");
  MPI_Comm local;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
  int local_rank = 0;
  MPI_Comm_rank(local, &local_rank);
  MPI_Comm_free(&local);
  const int device = local_rank % devices;
  check(cudaSetDevice(device), "cudaSetDevice");
  return device;
}

int run(int argc, char** argv) {
  int world = 0, me = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  if (argc != 3) throw std::invalid_argument("usage: strata-nccl-worker PLAN.json RESULT.json");
  // Rank 0 reads the plan and sends it to the others, so that ranks on other hosts need no copy of the file
  // (and rank 0 writes the result, on the first host).
  std::string text;
  if (me == 0) {
    std::ifstream in(argv[1]);
    if (!in) throw std::invalid_argument(std::string("cannot read ") + argv[1]);
    std::stringstream read;
    read << in.rdbuf();
    text = read.str();
    if (text.size() > (1u << 30)) throw std::invalid_argument(std::string(argv[1]) + ": a plan above 1 GiB");
  }
  long long length = static_cast<long long>(text.size());
  MPI_Bcast(&length, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
  text.resize(static_cast<std::size_t>(length));
  MPI_Bcast(text.data(), static_cast<int>(length), MPI_CHAR, 0, MPI_COMM_WORLD);
  const v::MeasurementPlan plan = v::plan_from_json(text, argv[1]);
  if (plan.ranks != world)
    throw std::invalid_argument(
        fmt::format("the plan is for {} ranks, mpirun started {}", plan.ranks, world));
  choose_device();

  ncclUniqueId id{};
  if (me == 0) check(ncclGetUniqueId(&id), "ncclGetUniqueId");
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclComm_t world_comm = nullptr;
  check(ncclCommInitRank(&world_comm, world, id, me), "ncclCommInitRank");
  auto comms = split_groups(plan, world_comm, me);

  std::int64_t largest = 4;
  for (const auto& c : plan.cases)
    for (const auto& s : c.steps)
      for (const auto& call : s.calls) largest = std::max(largest, call.bytes);
  Device d;
  d.floats = static_cast<std::size_t>(largest / 4);
  check(cudaStreamCreateWithFlags(&d.stream, cudaStreamNonBlocking), "cudaStreamCreate");
  check(cudaMalloc(reinterpret_cast<void**>(&d.send), d.floats * sizeof(float)), "cudaMalloc");
  check(cudaMalloc(reinterpret_cast<void**>(&d.recv), d.floats * sizeof(float)), "cudaMalloc");

  v::PlanResult result;
  result.ranks = world;
  int nccl_version = 0;
  check(ncclGetVersion(&nccl_version), "ncclGetVersion");
  result.library = fmt::format("NCCL {}", nccl_version);
  for (const auto& c : plan.cases) {
    std::int64_t wrong = 0;
    const auto mine = run_case(c, plan, comms, d, wrong);
    auto cr = gather_case(c, mine, wrong, world, me);
    if (me == 0) result.cases.push_back(std::move(cr));
  }
  for (auto& [group, comm] : comms)
    if (comm.comm) ncclCommDestroy(comm.comm);
  ncclCommDestroy(world_comm);
  cudaFree(d.send);
  cudaFree(d.recv);
  cudaStreamDestroy(d.stream);
  if (me == 0) strata::util::write_file_atomically(argv[2], v::result_to_json(result));
  return 0;
}

}  // namespace

// Open MPI's own allocations are not strata's leaks (util/lsan_mpi.h).
extern "C" const char* __lsan_default_suppressions() {
  return strata::util::kMpiLeakSuppressions;
}

int main(int argc, char** argv) {
  return strata::validate::mpi_worker_main(argc, argv, "strata-nccl-worker", run);
}
