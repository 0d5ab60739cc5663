// Ctrl-C (SIGINT) and SIGTERM stop strata cleanly: folders of unfinished output are removed, a child process
// (a plot script) is stopped, one line says what happened, and the exit status is 128 + the signal number
// (130 for SIGINT, 143 for SIGTERM, as a shell reports a program stopped by them).
//
// The signals are taken by a thread of their own that waits for them with sigwait(), not by a signal handler,
// so the clean-up may use ordinary (not async-signal-safe) code: the signals are blocked in the thread that
// calls handle_interrupts() and so in every thread started after it (TBB's workers), and sigwait() in the
// interrupt thread is the only place they are delivered. SIGKILL cannot be handled; what it leaves behind is
// for the next run to clean up (experiments/experiment.cc, ResultsDir).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <mutex>
#include <string>

namespace strata::util {

// From now on SIGINT and SIGTERM stop the process as described above. Call it before other threads start (the
// signal mask is inherited by threads created later). A signal that was ignored when strata started (`nohup`,
// `cmd &` in a non-interactive shell) stays ignored. Calling it again does nothing.
void handle_interrupts();

// What an interrupt does, for code that learns of one itself (a plot child stopped by SIGINT): stops the
// registered child, removes the registered folders, prints the line and exits with 128 + `signal`.
[[noreturn]] void exit_interrupted(int signal);

// While alive, `folder` is removed (with everything in it) if an interrupt arrives; `note` completes the
// message ("strata: interrupted by SIGINT; <note>").
class RemovedOnInterrupt {
 public:
  RemovedOnInterrupt(std::filesystem::path folder, std::string note);
  ~RemovedOnInterrupt();
  RemovedOnInterrupt(const RemovedOnInterrupt&) = delete;
  RemovedOnInterrupt& operator=(const RemovedOnInterrupt&) = delete;

 private:
  std::uint64_t id_;
};

// While alive, an interrupt first sends the same signal to the child process `pid` (a child started alone
// does not get the terminal's SIGINT when strata alone is sent SIGTERM).
class ForwardInterruptTo {
 public:
  explicit ForwardInterruptTo(pid_t pid);
  ~ForwardInterruptTo();
  ForwardInterruptTo(const ForwardInterruptTo&) = delete;
  ForwardInterruptTo& operator=(const ForwardInterruptTo&) = delete;
};

// While the returned lock is held, an interrupt waits: for steps that must not be cut in two, such as putting
// a result set in place with two renames. Do not call exit_interrupted() while holding it.
std::unique_lock<std::mutex> hold_interrupts();

}  // namespace strata::util
