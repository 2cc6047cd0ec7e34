// `cronledger serve` as a background process for tests, and polling without
// a clock. Header-only; the including test target defines CRONLEDGER_BIN.
#ifndef CRONLEDGER_TESTS_COMMON_SERVE_PROCESS_H_
#define CRONLEDGER_TESTS_COMMON_SERVE_PROCESS_H_

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace cronledger::testing {

// Polls `done` every `sleep_ms`, at most `tries` times. No clock is read.
template <typename Done>
bool WaitFor(Done done, int tries, int sleep_ms = 50) {
  for (int i = 0; i < tries; ++i) {
    if (done()) return true;
    usleep(static_cast<useconds_t>(sleep_ms) * 1000);
  }
  return done();
}

// The port in serve's "API listening on http://HOST:PORT" log line; 0
// until it is there.
inline int ApiPortIn(const std::string& log) {
  const std::string marker = "API listening on http://";
  const std::size_t at = log.find(marker);
  if (at == std::string::npos) return 0;
  const std::size_t colon = log.find(':', at + marker.size());
  const std::size_t end = log.find_first_not_of("0123456789", colon + 1);
  if (colon == std::string::npos || end == std::string::npos) return 0;
  return std::stoi(log.substr(colon + 1, end - colon - 1));
}

// `cronledger serve --config CONFIG [EXTRA...]` in the background, stdout
// and stderr in `log` (stdout in `stdout_log` instead when one is given),
// with this process's environment plus `env` ("NAME=value" entries, which
// replace inherited ones of the same name).
// The destructor SIGKILLs (after a SIGCONT, were it stopped) and reaps it,
// so no test, not even a failing one, leaves it behind.
class ServeProcess {
 public:
  ServeProcess(const std::string& config, const std::string& log,
               const std::vector<std::string>& extra = {},
               const std::vector<std::string>& env = {}, const std::string& stdout_log = "")
      : log_(log) {
    // Everything the child needs is built before fork: it only execs.
    std::vector<std::string> argv = {CRONLEDGER_BIN, "serve", "--config", config};
    argv.insert(argv.end(), extra.begin(), extra.end());
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    std::vector<std::string> environment = env;
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string entry = *e;
      const std::string name = entry.substr(0, entry.find('=') + 1);
      bool replaced = false;
      for (const auto& given : env) replaced = replaced || given.rfind(name, 0) == 0;
      if (!replaced) environment.push_back(entry);
    }
    std::vector<char*> envp;
    for (auto& e : environment) envp.push_back(e.data());
    envp.push_back(nullptr);
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    const int out_fd = stdout_log.empty()
                           ? fd
                           : open(stdout_log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    pid_ = fork();
    if (pid_ == 0) {
      if (fd >= 0 && out_fd >= 0) {
        dup2(out_fd, STDOUT_FILENO);
        dup2(fd, STDERR_FILENO);
      }
      execve(args[0], args.data(), envp.data());
      _exit(127);
    }
    if (fd >= 0) close(fd);
    if (out_fd >= 0 && out_fd != fd) close(out_fd);
    if (pid_ < 0) throw std::runtime_error("fork failed");
  }
  ~ServeProcess() { Kill9(); }
  ServeProcess(const ServeProcess&) = delete;
  ServeProcess& operator=(const ServeProcess&) = delete;

  pid_t pid() const { return pid_; }
  // The exit code once Running() saw serve exit; -1 while it runs or when
  // it ended by a signal.
  int exit_code() const { return exit_code_; }

  std::string Log() const {
    std::ifstream in(log_);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  // Polls until serve has logged the port its API listens on: the port, or
  // 0 when serve exited first or never said.
  int WaitForApiPort() {
    int port = 0;
    WaitFor(
        [&] {
          if (!Running()) return true;
          port = ApiPortIn(Log());
          return port > 0;
        },
        600);
    return port;
  }

  bool Running() {
    if (pid_ <= 0) return false;
    int status = 0;
    const pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_ || (r < 0 && errno == ECHILD)) {
      exit_code_ = r == pid_ && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      pid_ = -1;
      return false;
    }
    return true;
  }

  void Signal(int sig) {
    if (pid_ > 0) kill(pid_, sig);
  }

  // kill -9 and reap at once.
  void Kill9() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    kill(pid_, SIGCONT);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
    exit_code_ = -1;
  }

  // SIGTERM, then up to ~20 s of polling for a clean exit (SIGKILL after
  // that). The exit code, -1 when it ended by a signal.
  int Stop() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      WaitFor([&] { return !Running(); }, 400);
      if (pid_ > 0) Kill9();
    }
    return exit_code_;
  }

 private:
  std::string log_;
  pid_t pid_ = -1;
  int exit_code_ = -1;
};

}  // namespace cronledger::testing

#endif  // CRONLEDGER_TESTS_COMMON_SERVE_PROCESS_H_
