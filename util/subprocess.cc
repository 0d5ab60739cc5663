#include "util/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

#include "util/interrupt.h"

extern char** environ;

namespace strata::util {
namespace {

struct Pipe {
  int fd[2] = {-1, -1};
  bool open() { return pipe2(fd, O_CLOEXEC) == 0; }
  void close_end(int i) {
    if (fd[i] >= 0) ::close(fd[i]);
    fd[i] = -1;
  }
  ~Pipe() {
    close_end(0);
    close_end(1);
  }
};

// Reads both outputs and feeds stdin until the child closes its ends (poll, so neither pipe can fill up and
// block the child while we wait on the other).
void pump(Pipe& in, Pipe& out, Pipe& err, const std::string& input, ProcessResult& r) {
  std::size_t written = 0;
  if (input.empty()) in.close_end(1);
  std::array<char, 65536> buf;
  while (out.fd[0] >= 0 || err.fd[0] >= 0 || in.fd[1] >= 0) {
    std::array<pollfd, 3> fds{};
    nfds_t n = 0;
    const auto add = [&](int fd, short events) {
      if (fd >= 0) fds[n++] = pollfd{fd, events, 0};
    };
    add(out.fd[0], POLLIN);
    add(err.fd[0], POLLIN);
    add(in.fd[1], POLLOUT);
    if (poll(fds.data(), n, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (nfds_t i = 0; i < n; ++i) {
      if (fds[i].revents == 0) continue;
      if (fds[i].fd == in.fd[1]) {
        const ssize_t k = ::write(in.fd[1], input.data() + written, input.size() - written);
        if (k > 0) written += static_cast<std::size_t>(k);
        if (k < 0 || written == input.size()) in.close_end(1);
        continue;
      }
      Pipe& p = fds[i].fd == out.fd[0] ? out : err;
      std::string& text = fds[i].fd == out.fd[0] ? r.out : r.err;
      const ssize_t k = ::read(p.fd[0], buf.data(), buf.size());
      if (k > 0)
        text.append(buf.data(), static_cast<std::size_t>(k));
      else if (k == 0 || errno != EINTR)
        p.close_end(0);
    }
  }
}

}  // namespace

ProcessResult run_process(std::span<const std::string> argv, const ProcessOptions& options) {
  ProcessResult r;
  if (argv.empty()) {
    r.error = "no program given";
    return r;
  }
  std::vector<std::string> args(argv.begin(), argv.end());
  std::vector<char*> cargv;
  for (auto& a : args) cargv.push_back(a.data());
  cargv.push_back(nullptr);

  Pipe in, out, err;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (options.capture) {
    if (!in.open() || !out.open() || !err.open()) {
      r.error = std::string("pipe: ") + std::strerror(errno);
      posix_spawn_file_actions_destroy(&actions);
      return r;
    }
    posix_spawn_file_actions_adddup2(&actions, in.fd[0], 0);
    posix_spawn_file_actions_adddup2(&actions, out.fd[1], 1);
    posix_spawn_file_actions_adddup2(&actions, err.fd[1], 2);
  }
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attributes, &none);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK);
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, cargv[0], &actions, &attributes, cargv.data(), environ);
  posix_spawnattr_destroy(&attributes);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) {
    r.error = std::string(std::strerror(spawned));
    return r;
  }
  r.started = true;
  int status = 0;
  {
    const ForwardInterruptTo forward(pid);
    if (options.capture) {
      in.close_end(0);
      out.close_end(1);
      err.close_end(1);
      pump(in, out, err, options.stdin_text, r);
    }
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) {
    r.signal = WTERMSIG(status);
    if (r.signal == SIGINT || r.signal == SIGTERM) exit_interrupted(r.signal);
  }
  return r;
}

std::string shell_quote(std::span<const std::string> argv) {
  std::string s;
  for (const auto& a : argv) {
    if (!s.empty()) s += ' ';
    const bool plain = !a.empty() && a.find_first_of(" \t\n'\"\\$`*?&;|<>()") == std::string::npos;
    if (plain) {
      s += a;
      continue;
    }
    s += '\'';
    for (char c : a) s += c == '\'' ? std::string("'\\''") : std::string(1, c);
    s += '\'';
  }
  return s;
}

}  // namespace strata::util
