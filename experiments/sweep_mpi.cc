// The MPI side of a sweep (sweep_mpi.h). Compiled with STRATA_HAVE_MPI=1 and linked to MPI::MPI_CXX when
// CMake finds Open MPI; without it a launch with several ranks is refused.
#include "experiments/sweep_mpi.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>
#include <mutex>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "hw/config_error.h"
#include "util/parse.h"
#include "util/timer.h"

#if STRATA_HAVE_MPI
#include <mpi.h>
#endif

namespace strata::experiments {
namespace {

std::optional<int> env_int(const char* name) {
  const char* text = std::getenv(name);
  if (text == nullptr) return std::nullopt;
  const auto value = util::try_parse_int(text, {0, 1 << 30});
  if (!value) return std::nullopt;
  return static_cast<int>(*value);
}

}  // namespace

std::string point_failure(int rank, std::size_t index, std::string_view message) {
  return fmt::format("rank {} failed on point {}: {}", rank, index, message);
}

std::string sweep_stopped(const std::vector<std::string>& failures) {
  std::string text = "the sweep stopped: ";
  for (std::size_t i = 0; i < failures.size(); ++i) text += (i ? "; " : "") + failures[i];
  return text + ". The points finished before are kept in the store: a re-run computes only the missing ones";
}

MpiLaunch mpi_launch() {
  MpiLaunch launch;
  for (const auto& [size_name, rank_name] :
       {std::pair{"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK"}, std::pair{"PMI_SIZE", "PMI_RANK"}}) {
    const auto size = env_int(size_name);
    const auto rank = env_int(rank_name);
    if (size || rank) {
      launch.launched = true;
      launch.size = size.value_or(0);
      launch.rank = rank.value_or(0);
      return launch;
    }
  }
  if (const auto rank = env_int("PMIX_RANK")) {
    launch.launched = true;
    launch.rank = *rank;
    launch.size = 0;
  }
  return launch;
}

#if STRATA_HAVE_MPI

bool built_with_mpi() {
  return true;
}

namespace {

constexpr int kRequestTag = 1601, kAssignTag = 1602;

// A rank's request for a point, carrying the outcome of its previous one (index -1: none yet).
struct Request {
  std::int64_t finished = -1;
  double seconds = 0;
  std::int32_t failed = 0;
  char message[1024] = {};
};
// Rank 0's answer: the point to compute (index -1: none left, stop).
struct Assign {
  std::int64_t index = -1;
  char key[64] = {};
};

void copy_text(char* to, std::size_t capacity, std::string_view text) {
  const std::size_t n = std::min(capacity - 1, text.size());
  std::memcpy(to, text.data(), n);
  to[n] = '\0';
}

// Waits for a non-blocking operation by polling with short sleeps: a blocking MPI call spins a core, which
// the computing thread of the same rank needs.
MPI_Status wait_for(MPI_Request& request) {
  MPI_Status status{};
  auto pause = std::chrono::microseconds(20);
  for (int flag = 0;;) {
    MPI_Test(&request, &flag, &status);
    if (flag) return status;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(2000));
  }
}

// The points not yet handed out, shared by rank 0's serving thread and its computing thread.
class Queue {
 public:
  Queue(const std::vector<PointWork>& work, const SweepRanks::Done& done) : work_(work), done_(done) {}
  std::optional<PointWork> next() {
    const std::lock_guard lock(mutex_);
    if (!failures_.empty() || next_ == work_.size()) return std::nullopt;
    return work_[next_++];
  }
  void finished(const PointDone& point) {
    const std::lock_guard lock(mutex_);
    done_(point);
  }
  void failed(int rank, std::size_t index, std::string_view message) {
    const std::lock_guard lock(mutex_);
    failures_.push_back(point_failure(rank, index, message));
  }
  const std::vector<std::string>& failures() const { return failures_; }

 private:
  const std::vector<PointWork>& work_;
  const SweepRanks::Done& done_;
  std::mutex mutex_;
  std::size_t next_ = 0;
  std::vector<std::string> failures_;
};

// Rank 0's server: answers every request until each other rank has been told to stop.
void serve_requests(int size, Queue& queue) {
  for (int active = size - 1; active > 0;) {
    Request request;
    MPI_Request pending{};
    MPI_Irecv(&request, sizeof request, MPI_BYTE, MPI_ANY_SOURCE, kRequestTag, MPI_COMM_WORLD, &pending);
    const int from = wait_for(pending).MPI_SOURCE;
    if (request.finished >= 0) {
      const auto index = static_cast<std::size_t>(request.finished);
      request.message[sizeof request.message - 1] = '\0';
      if (request.failed != 0)
        queue.failed(from, index, request.message);
      else
        queue.finished({index, from, request.seconds});
    }
    Assign answer;
    if (const auto point = queue.next()) {
      answer.index = static_cast<std::int64_t>(point->index);
      copy_text(answer.key, sizeof answer.key, point->key);
    } else {
      --active;
    }
    MPI_Send(&answer, sizeof answer, MPI_BYTE, from, kAssignTag, MPI_COMM_WORLD);
  }
}

void compute_here(Queue& queue, const SweepRanks::Compute& compute) {
  while (const auto point = queue.next()) {
    const util::Stopwatch clock;
    try {
      compute(*point);
    } catch (const std::exception& e) {
      queue.failed(0, point->index, e.what());
      return;
    }
    queue.finished({point->index, 0, clock.seconds()});
  }
}

}  // namespace

SweepRanks::SweepRanks() {
  if (!mpi_launch().launched) return;
  int provided = MPI_THREAD_SINGLE;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
  started_mpi_ = true;
  threads_ = provided >= MPI_THREAD_SERIALIZED;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

SweepRanks::~SweepRanks() {
  if (started_mpi_) MPI_Finalize();
}

void SweepRanks::serve(const std::vector<PointWork>& work, const Compute& compute, const Done& done) {
  Queue queue(work, done);
  if (distributed()) {
    if (threads_) {
      // Only the serving thread calls MPI until it is joined (MPI_THREAD_SERIALIZED is enough).
      std::thread server(serve_requests, size_, std::ref(queue));
      compute_here(queue, compute);
      server.join();
    } else {
      serve_requests(size_, queue);  // rank 0 only serves
    }
  }
  compute_here(queue, compute);  // what is left (all of it in a single process)
  if (!queue.failures().empty()) throw ConfigError(sweep_stopped(queue.failures()));
}

std::size_t SweepRanks::work(const Compute& compute) {
  std::size_t computed = 0;
  std::exception_ptr failure;
  Request request;
  for (;;) {
    MPI_Send(&request, sizeof request, MPI_BYTE, 0, kRequestTag, MPI_COMM_WORLD);
    Assign answer;
    MPI_Request pending{};
    MPI_Irecv(&answer, sizeof answer, MPI_BYTE, 0, kAssignTag, MPI_COMM_WORLD, &pending);
    wait_for(pending);
    if (answer.index < 0) break;
    answer.key[sizeof answer.key - 1] = '\0';
    request = Request{};
    request.finished = answer.index;
    const util::Stopwatch clock;
    try {
      compute({static_cast<std::size_t>(answer.index), answer.key});
      ++computed;
      request.seconds = clock.seconds();
    } catch (const std::exception& e) {
      failure = std::current_exception();
      request.failed = 1;
      copy_text(request.message, sizeof request.message, e.what());
    }
  }
  if (failure) std::rethrow_exception(failure);
  return computed;
}

bool SweepRanks::agree(bool ok) {
  finished_ = true;
  if (!distributed()) return ok;
  int value = ok ? 1 : 0;
  MPI_Request pending{};
  MPI_Ibcast(&value, 1, MPI_INT, 0, MPI_COMM_WORLD, &pending);
  wait_for(pending);
  return value != 0;
}

void SweepRanks::abort(const std::string& why) {
  std::cerr << fmt::format("strata: error: rank {} of {}: {}; stopping every rank\n", rank_, size_, why)
            << std::flush;
  if (started_mpi_) MPI_Abort(MPI_COMM_WORLD, 1);
  std::exit(1);
}

#else  // built without MPI

bool built_with_mpi() {
  return false;
}

SweepRanks::SweepRanks() {
  const MpiLaunch launch = mpi_launch();
  if (launch.launched && (launch.size != 1 || launch.rank != 0))
    throw ConfigError(fmt::format(
        "this strata was built without MPI (CMake found no MPI; install Open MPI's development files, "
        "libopenmpi-dev, and build again), so it cannot share a sweep between the {} ranks its launcher "
        "started (rank {} here); run `strata run` without mpirun, or with one rank",
        launch.size > 0 ? std::to_string(launch.size) : std::string("several"), launch.rank));
}

SweepRanks::~SweepRanks() = default;

void SweepRanks::serve(const std::vector<PointWork>& work, const Compute& compute, const Done& done) {
  std::vector<std::string> failures;
  for (const auto& point : work) {
    const util::Stopwatch clock;
    try {
      compute(point);
    } catch (const std::exception& e) {
      failures.push_back(point_failure(0, point.index, e.what()));
      break;
    }
    done({point.index, 0, clock.seconds()});
  }
  if (!failures.empty()) throw ConfigError(sweep_stopped(failures));
}

std::size_t SweepRanks::work(const Compute&) {
  return 0;
}

bool SweepRanks::agree(bool ok) {
  finished_ = true;
  return ok;
}

void SweepRanks::abort(const std::string& why) {
  std::cerr << fmt::format("strata: error: {}\n", why) << std::flush;
  std::exit(1);
}

#endif

}  // namespace strata::experiments
