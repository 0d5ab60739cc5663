// Sharing a sweep's points between MPI ranks (docs/experiments.md, "Sweeps on a cluster (MPI)"). The one
// file of strata that includes mpi.h is sweep_mpi.cc; it is built with MPI when CMake finds Open MPI
// (find_package(MPI COMPONENTS CXX)) and without it otherwise.
//
// `mpirun -np N strata run sweep.yaml`: rank 0 hands out the indices of the points to compute, one per
// request (MPI_Send/MPI_Recv), in index order; every rank (rank 0 too, on its main thread while a second
// thread serves the requests) computes the points it is given into the shared result store and asks for the
// next one. A rank that finishes a point early asks again early: uneven points balance themselves. Rank 0
// then reads the store and writes the outputs exactly as one process does.
//
// MPI is started only when the process was launched by an MPI launcher (its environment says so) and strata
// was built with MPI; a plain `strata run` never initialises MPI.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace strata::experiments {

// How this process was started, read from the launcher's environment: Open MPI's OMPI_COMM_WORLD_SIZE and
// OMPI_COMM_WORLD_RANK, PMI_SIZE and PMI_RANK (MPICH's hydra, Slurm's PMI), PMIX_RANK (PMIx launchers).
struct MpiLaunch {
  bool launched = false;  // started by mpirun or another MPI launcher
  int rank = 0;
  int size = 1;  // 0: launched, but the environment does not say how many ranks there are
};
MpiLaunch mpi_launch();

// The message of a stopped distributed sweep, the same on every rank that prints it (mpirun may end the other
// ranks first): "the sweep stopped: rank R failed on point I: <why>[; ...]. The points finished before are
// kept in the store: ...". point_failure gives one "rank R failed on point I: <why>".
std::string point_failure(int rank, std::size_t index, std::string_view message);
std::string sweep_stopped(const std::vector<std::string>& failures);
bool built_with_mpi();

// One point to compute: its index in the sweep and the store key rank 0 derived for it (a rank that derives
// another key from its own files refuses the point).
struct PointWork {
  std::size_t index = 0;
  std::string key;
};
// A finished point, as rank 0 learns of it.
struct PointDone {
  std::size_t index = 0;
  int rank = 0;
  double seconds = 0;
};

// The ranks of one `strata run`: MPI_Init_thread in the constructor when launched by an MPI launcher (and
// built with MPI), MPI_Finalize in the destructor. Not launched, or launched with one rank: a single process.
class SweepRanks {
 public:
  using Compute =
      std::function<void(const PointWork&)>;  // computes one point into the store; throws on failure
  using Done = std::function<void(const PointDone&)>;

  // Throws ConfigError when launched with several ranks by a strata built without MPI.
  SweepRanks();
  ~SweepRanks();
  SweepRanks(const SweepRanks&) = delete;
  SweepRanks& operator=(const SweepRanks&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  bool distributed() const { return size_ > 1; }

  // Rank 0: hands out `work` in order, one point per request, and computes points itself between requests;
  // calls done() for every finished point, one call at a time. Returns when every rank has stopped asking.
  // After a failure no new point is handed out; once every rank has stopped, throws ConfigError naming each
  // rank that failed, its point and its message.
  void serve(const std::vector<PointWork>& work, const Compute& compute, const Done& done);
  // Other ranks: asks rank 0 for points until none is left and computes them. A point that fails is
  // reported to rank 0 and then thrown here. Returns how many points this rank computed.
  std::size_t work(const Compute& compute);
  // Collective, after serve()/work(): rank 0 says whether the outputs were written; every rank returns it.
  bool agree(bool ok);
  // For a rank that fails outside serve()/work()/agree() (the others would wait for it): prints `why` and
  // stops every rank (MPI_Abort).
  [[noreturn]] void abort(const std::string& why);
  bool finished() const { return finished_; }

 private:
  int rank_ = 0, size_ = 1;
  bool started_mpi_ = false, finished_ = false;
  bool threads_ = false;  // MPI lets a second thread of rank 0 serve while its main thread computes
};

}  // namespace strata::experiments
