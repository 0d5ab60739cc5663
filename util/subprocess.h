// Running another program (a plot script, `ip`, `tc`, `mpirun`) the one way strata does it: posix_spawn with
// no signal blocked in the child (strata blocks SIGINT/SIGTERM for its interrupt thread, util/interrupt.h,
// and a spawned process would inherit the mask), an interrupt forwarded to the child while it runs, and the
// child's stdout/stderr either passed through or captured.
#pragma once

#include <span>
#include <string>
#include <vector>

namespace strata::util {

struct ProcessResult {
  bool started = false;  // false: the program could not be started (error names why)
  int exit_code = -1;    // when it exited normally
  int signal = 0;        // when a signal stopped it
  std::string out, err;  // captured output (empty when passed through)
  std::string error;     // why it could not be started
  bool ok() const { return started && signal == 0 && exit_code == 0; }
};

struct ProcessOptions {
  bool capture = true;     // capture stdout and stderr; otherwise the child writes to strata's
  std::string stdin_text;  // written to the child's stdin (capture mode only), then closed
};

// Runs argv[0] (searched in PATH when it has no '/') with `argv` and waits for it. A SIGINT/SIGTERM that
// stops the child stops strata too (util::exit_interrupted), so a Ctrl-C during a long child is not
// mistaken for the child's failure.
ProcessResult run_process(std::span<const std::string> argv, const ProcessOptions& options = {});

// "a b 'c d'": argv as a shell would need it typed, for messages.
std::string shell_quote(std::span<const std::string> argv);

}  // namespace strata::util
