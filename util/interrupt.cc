#include "util/interrupt.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstring>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>

namespace strata::util {
namespace fs = std::filesystem;
namespace {

struct Registered {
  std::uint64_t id;
  fs::path folder;
  std::string note;
};

struct InterruptState {
  std::mutex mutex;  // held by the interrupt thread from the signal to _exit, and by hold_interrupts()
  std::vector<Registered> folders;
  std::uint64_t next_id = 1;
  pid_t child = 0;
  bool handling = false;
};

// Never destroyed: the interrupt thread may still use it while static objects are torn down at exit.
InterruptState& state() {
  static auto* s = new InterruptState;
  return *s;
}

const char* signal_name(int signal) {
  switch (signal) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    default:
      return "a signal";
  }
}

// Removes `folder`; a file another thread writes into it at the same moment makes one pass fail with "not
// empty", so it tries a few times.
void remove_folder(const fs::path& folder) {
  std::error_code ec;
  for (int attempt = 0; attempt < 5; ++attempt) {
    fs::remove_all(folder, ec);
    if (!ec && !fs::exists(fs::symlink_status(folder, ec))) return;
  }
}

[[noreturn]] void stop_locked(int signal, InterruptState& s) {
  if (s.child > 0) ::kill(s.child, signal);
  std::string message = fmt::format("strata: interrupted by {}", signal_name(signal));
  for (const auto& r : s.folders) {
    remove_folder(r.folder);
    message += "; " + r.note;
  }
  message += "\n";
  // write(2) and _exit(2): nothing buffered by stdio or torn down by exit handlers can get in the way.
  [[maybe_unused]] const auto written = ::write(STDERR_FILENO, message.data(), message.size());
  ::_exit(128 + signal);
}

}  // namespace

void handle_interrupts() {
  InterruptState& s = state();
  {
    std::lock_guard lock(s.mutex);
    if (s.handling) return;
    s.handling = true;
  }
  sigset_t set;
  sigemptyset(&set);
  for (int signal : {SIGINT, SIGTERM}) {
    struct sigaction current {};
    if (sigaction(signal, nullptr, &current) == 0 && current.sa_handler == SIG_IGN) continue;
    sigaddset(&set, signal);
  }
  if (sigisemptyset(&set)) return;  // both ignored: nothing to wait for
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::thread([set] {
    int signal = 0;
    while (sigwait(&set, &signal) != 0) {
    }
    InterruptState& st = state();
    st.mutex.lock();  // waits for a hold_interrupts() section to end; released by _exit
    stop_locked(signal, st);
  }).detach();
}

void exit_interrupted(int signal) {
  InterruptState& s = state();
  s.mutex.lock();
  stop_locked(signal, s);
}

RemovedOnInterrupt::RemovedOnInterrupt(fs::path folder, std::string note) {
  InterruptState& s = state();
  std::lock_guard lock(s.mutex);
  id_ = s.next_id++;
  s.folders.push_back(Registered{id_, std::move(folder), std::move(note)});
}

RemovedOnInterrupt::~RemovedOnInterrupt() {
  InterruptState& s = state();
  std::lock_guard lock(s.mutex);
  std::erase_if(s.folders, [this](const Registered& r) { return r.id == id_; });
}

ForwardInterruptTo::ForwardInterruptTo(pid_t pid) {
  std::lock_guard lock(state().mutex);
  state().child = pid;
}

ForwardInterruptTo::~ForwardInterruptTo() {
  std::lock_guard lock(state().mutex);
  state().child = 0;
}

std::unique_lock<std::mutex> hold_interrupts() {
  return std::unique_lock(state().mutex);
}

}  // namespace strata::util
