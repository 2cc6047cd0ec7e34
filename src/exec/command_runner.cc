#include "exec/command_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace cronledger::exec {
namespace {

void AppendCapped(std::string& sink, const char* data, std::size_t n, std::size_t cap,
                  bool* truncated) {
  if (sink.size() >= cap) {
    if (n > 0 && truncated) *truncated = true;
    return;
  }
  const std::size_t room = cap - sink.size();
  if (n > room && truncated) *truncated = true;
  sink.append(data, std::min(n, room));
}

}  // namespace

std::vector<std::string> BaseEnvironment() {
  std::vector<std::string> env;
  const char* path = std::getenv("PATH");
  env.push_back(std::string("PATH=") +
                (path ? path : "/usr/local/bin:/usr/bin:/bin"));
  if (const char* home = std::getenv("HOME")) env.push_back(std::string("HOME=") + home);
  const char* lang = std::getenv("LANG");
  env.push_back(std::string("LANG=") + (lang ? lang : "C.UTF-8"));
  env.push_back("TZ=UTC");
  return env;
}

CommandResult RunCommand(const CommandSpec& spec, Clock& clock) {
  CommandResult result;
  if (spec.argv.empty() || spec.argv[0].empty()) {
    result.spawn_failed = true;
    result.err = "empty command";
    return result;
  }
  int out_pipe[2];
  int err_pipe[2];
  int exec_pipe[2];  // reports an exec failure from the child
  if (pipe2(out_pipe, O_CLOEXEC) != 0) {
    result.spawn_failed = true;
    result.err = std::strerror(errno);
    return result;
  }
  if (pipe2(err_pipe, O_CLOEXEC) != 0 || pipe2(exec_pipe, O_CLOEXEC) != 0) {
    result.spawn_failed = true;
    result.err = std::strerror(errno);
    close(out_pipe[0]);
    close(out_pipe[1]);
    return result;
  }
  // stdin is a socket, not a pipe: send() with MSG_NOSIGNAL cannot raise
  // SIGPIPE in serve when the command exits without reading its input.
  int in_pair[2] = {-1, -1};
  if (spec.input && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in_pair) != 0) {
    result.spawn_failed = true;
    result.err = std::strerror(errno);
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1], exec_pipe[0], exec_pipe[1]}) {
      close(fd);
    }
    return result;
  }
  std::vector<char*> argv;
  for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const auto& e : spec.environment) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    dup2(out_pipe[1], STDOUT_FILENO);
    dup2(err_pipe[1], STDERR_FILENO);
    if (in_pair[1] >= 0) {
      dup2(in_pair[1], STDIN_FILENO);
    } else {
      const int devnull = open("/dev/null", O_RDONLY);
      if (devnull >= 0) dup2(devnull, STDIN_FILENO);
    }
    if (!spec.cwd.empty() && chdir(spec.cwd.c_str()) != 0) {
      const int e = errno;
      (void)!write(exec_pipe[1], &e, sizeof e);
      _exit(127);
    }
    execve(argv[0], argv.data(), envp.data());
    const int e = errno;
    (void)!write(exec_pipe[1], &e, sizeof e);
    _exit(127);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  close(exec_pipe[1]);
  if (in_pair[1] >= 0) close(in_pair[1]);
  if (pid < 0) {
    result.spawn_failed = true;
    result.err = std::strerror(errno);
    close(out_pipe[0]);
    close(err_pipe[0]);
    close(exec_pipe[0]);
    if (in_pair[0] >= 0) close(in_pair[0]);
    return result;
  }
  setpgid(pid, pid);  // also from the parent, so the kill below cannot miss

  int exec_errno = 0;
  if (read(exec_pipe[0], &exec_errno, sizeof exec_errno) == sizeof exec_errno) {
    result.spawn_failed = true;
    result.err = std::string("cannot run ") + spec.argv[0] + ": " + std::strerror(exec_errno);
  }
  close(exec_pipe[0]);

  const auto deadline = clock.SteadyNow() + spec.timeout;
  // [2] is stdin while input remains to be written.
  std::array<pollfd, 3> fds{{{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}, {-1, POLLOUT, 0}}};
  std::size_t input_sent = 0;
  if (in_pair[0] >= 0) {
    fcntl(in_pair[0], F_SETFL, fcntl(in_pair[0], F_GETFL) | O_NONBLOCK);
    if (spec.input->empty()) {
      close(in_pair[0]);
    } else {
      fds[2].fd = in_pair[0];
    }
  }
  int open_fds = 2;
  char buf[8192];
  while (open_fds > 0) {
    if (clock.SteadyNow() >= deadline) {
      result.timed_out = true;
      kill(-pid, SIGKILL);
      break;
    }
    const int n = poll(fds.data(), fds.size(), 100);
    if (n < 0 && errno != EINTR) break;
    if (fds[2].fd >= 0 && (fds[2].revents & (POLLOUT | POLLHUP | POLLERR))) {
      const ssize_t sent = send(fds[2].fd, spec.input->data() + input_sent,
                                spec.input->size() - input_sent, MSG_NOSIGNAL);
      if (sent > 0) input_sent += static_cast<std::size_t>(sent);
      if ((sent < 0 && errno != EAGAIN && errno != EINTR) || input_sent == spec.input->size()) {
        close(fds[2].fd);  // written, or the command will not read it
        fds[2].fd = -1;
      }
    }
    for (std::size_t i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t got = read(fds[i].fd, buf, sizeof buf);
      if (got > 0) {
        if (i == 0) {
          AppendCapped(result.out, buf, static_cast<std::size_t>(got), spec.output_cap,
                       &result.out_truncated);
        } else {
          AppendCapped(result.err, buf, static_cast<std::size_t>(got), spec.output_cap,
                       nullptr);
        }
      } else if (got == 0 || errno != EINTR) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (auto& f : fds) {
    if (f.fd >= 0) close(f.fd);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
  }
  return result;
}

}  // namespace cronledger::exec
