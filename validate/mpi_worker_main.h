// The main() of strata's MPI worker executables (strata-mpi-worker, strata-nccl-worker), declared once: MPI
// initialised around the worker's `run`, and an error printed with the worker's name and rank, then
// MPI_Abort(2) so that mpirun stops every rank instead of leaving the others waiting in a collective.
#pragma once

#include <mpi.h>

#include <exception>
#include <iostream>
#include <string_view>

namespace strata::validate {

template <class Run>
int mpi_worker_main(int argc, char** argv, std::string_view name, Run run) {
  MPI_Init(&argc, &argv);
  int status = 0;
  try {
    status = run(argc, argv);
  } catch (const std::exception& e) {
    int me = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    std::cerr << name << " (rank " << me << "): " << e.what() << "\n";
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  MPI_Finalize();
  return status;
}

}  // namespace strata::validate
