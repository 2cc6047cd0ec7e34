#include "exec/subprocess_executor.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string_view>
#include <system_error>
#include <utility>

#include "cronledger/schedule.h"

namespace cronledger::exec {
namespace {

// The longest the supervisor waits without looking at the clock, the cancel
// token and the child.
constexpr std::chrono::milliseconds kPollSlice{50};
// After the SIGKILL, how long to wait for the pipes to close. Only a process
// that left the group (setsid) and kept the pipe can hold them open longer.
constexpr std::chrono::milliseconds kAfterKillLinger{2000};
constexpr int kAfterKillMaxRounds = 100;
constexpr std::chrono::milliseconds kLongestTimeout = std::chrono::hours(24 * 365 * 100);
constexpr const char* kDefaultPath = "/usr/local/bin:/usr/bin:/bin";
constexpr std::size_t kReadChunk = 64 * 1024;

std::string ErrnoText(int err) { return std::generic_category().message(err); }

// Owns a file descriptor.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) {
      Reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  ~Fd() { Reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  void Reset() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

// Moves `fd` to a number above 2 so that the child's dup2 onto 0, 1, 2
// cannot clobber it (possible when the supervisor runs with a standard
// stream closed). Keeps O_CLOEXEC.
bool KeepAboveStdio(Fd& fd) {
  if (fd.get() > STDERR_FILENO) return true;
  const int moved = fcntl(fd.get(), F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
  if (moved < 0) return false;
  fd = Fd(moved);
  return true;
}

bool MakePipe(Fd& read_end, Fd& write_end) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) return false;
  read_end = Fd(p[0]);
  write_end = Fd(p[1]);
  return KeepAboveStdio(read_end) && KeepAboveStdio(write_end);
}

void WriteAll(int fd, const char* data, std::size_t n, bool* failed) {
  while (n > 0 && !*failed) {
    const ssize_t w = write(fd, data, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      *failed = true;
      return;
    }
    data += w;
    n -= static_cast<std::size_t>(w);
  }
}

// Where output goes: the log (capped per stream, truncation noted once per
// stream) and the tail kept for the ledger.
class OutputSink {
 public:
  OutputSink(int log_fd, uint64_t cap, std::size_t tail_bytes)
      : log_fd_(log_fd), cap_(cap), tail_bytes_(tail_bytes) {}

  // stream: 0 stdout, 1 stderr.
  void Append(int stream, const char* data, std::size_t n) {
    uint64_t& seen = seen_[static_cast<std::size_t>(stream)];
    if (seen < cap_) {
      const auto take = static_cast<std::size_t>(std::min<uint64_t>(n, cap_ - seen));
      Emit(data, take);
    }
    seen += n;
    bool& noted = noted_[static_cast<std::size_t>(stream)];
    if (seen > cap_ && !noted) {
      noted = true;
      std::string note = last_char_ != '\n' && last_char_ != 0 ? "\n" : "";
      note += std::string("[") + (stream == 0 ? "stdout" : "stderr") + ": output truncated at " +
              std::to_string(cap_) + " bytes]\n";
      Emit(note.data(), note.size());
    }
  }

  // A line of the supervisor's own (header, trailer, spawn error): log only.
  void LogLine(const std::string& line) {
    std::string text = last_char_ != '\n' && last_char_ != 0 ? "\n" : "";
    text += line;
    text += '\n';
    Log(text.data(), text.size());
  }

  std::string Tail() const {
    if (tail_.size() <= tail_bytes_) return tail_;
    return tail_.substr(tail_.size() - tail_bytes_);
  }

 private:
  void Emit(const char* data, std::size_t n) {
    if (n == 0) return;
    Log(data, n);
    if (tail_bytes_ == 0) return;
    if (n >= tail_bytes_) {
      tail_.assign(data + (n - tail_bytes_), tail_bytes_);
    } else {
      tail_.append(data, n);
      if (tail_.size() > 2 * tail_bytes_) tail_.erase(0, tail_.size() - tail_bytes_);
    }
  }

  void Log(const char* data, std::size_t n) {
    if (n == 0) return;
    last_char_ = data[n - 1];
    if (log_fd_ >= 0) WriteAll(log_fd_, data, n, &log_failed_);
  }

  int log_fd_;
  uint64_t cap_;
  std::size_t tail_bytes_;
  std::array<uint64_t, 2> seen_{};
  std::array<bool, 2> noted_{};
  std::string tail_;
  char last_char_ = 0;
  bool log_failed_ = false;
};

// What the child reports through the CLOEXEC pipe when it cannot exec.
enum class ChildStage : int { kSetup = 1, kChdir = 2, kExec = 3 };
struct ChildReport {
  int stage;
  int err;
};

// Everything the child needs, prepared before fork: after fork in a
// multithreaded process the child may only make async-signal-safe calls.
struct ChildPlan {
  const char* path;
  char* const* argv;
  char* const* envp;
  const char* cwd;  // null: inherit
  int stdin_fd;
  int stdout_fd;
  int stderr_fd;
  int report_fd;
  pid_t parent;
  int max_fd;  // for the fallback when close_range is unavailable
};

// Marks the code the command runs before its exec (StartCommand): on a
// stack of its own while it shares the shim's memory. AddressSanitizer's
// bookkeeping assumes a thread's own stack (it would warn into the step's
// stderr), so test builds leave this code uninstrumented.
#define CRONLEDGER_BORROWED_STACK [[gnu::no_sanitize_address]]

CRONLEDGER_BORROWED_STACK [[noreturn]] void ChildFail(int report_fd, ChildStage stage) {
  const ChildReport report{static_cast<int>(stage), errno};
  (void)!write(report_fd, &report, sizeof report);
  _exit(127);
}

// The step's supervisor shim (see RunChild): on the death of serve it kills
// the whole process group, descendants included.
void KillGroupOnParentDeath(int) { kill(-getpgrp(), SIGKILL); }

volatile sig_atomic_t g_child_changed = 0;
void NoteChildChanged(int) { g_child_changed = 1; }

// Resets signals and descriptors and execs the command. Runs in the
// command's own process (the shim's child, started by StartCommand) while it
// still shares the shim's memory; only async-signal-safe calls.
CRONLEDGER_BORROWED_STACK [[noreturn]] void ExecCommand(const ChildPlan& p) {
  // Ignored signals, handlers and the signal mask survive exec (handlers
  // reset to default there, but the shim's ignored ones would not); start
  // the command clean.
  struct sigaction dfl;
  std::memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) sigaction(sig, &dfl, nullptr);
  }
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  // Whatever else the supervisor has open (its own or opened by a library
  // without O_CLOEXEC) must not reach the command.
  if (close_range(STDERR_FILENO + 1, ~0U, CLOSE_RANGE_CLOEXEC) != 0) {
    for (int fd = STDERR_FILENO + 1; fd < p.max_fd; ++fd) {
      const int flags = fcntl(fd, F_GETFD);
      if (flags >= 0 && !(flags & FD_CLOEXEC)) fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
    }
  }
  if (p.cwd != nullptr && chdir(p.cwd) != 0) ChildFail(p.report_fd, ChildStage::kChdir);
  execve(p.path, p.argv, p.envp);
  ChildFail(p.report_fd, ChildStage::kExec);
}

// The command's stack while it shares the shim's memory (StartCommand). Only
// ever used inside a shim, where the one thread waits for the exec; each
// shim is its own process with its own copy.
alignas(64) char g_command_stack[64 * 1024];

CRONLEDGER_BORROWED_STACK int CommandEntry(void* plan) {
  ExecCommand(*static_cast<const ChildPlan*>(plan));
}

// Starts the command as posix_spawn does: a vfork-style clone that shares
// the shim's memory, on a stack of its own, until its execve (or _exit), so
// nothing of the shim's address space (a copy of serve's) is copied again.
// Every signal is blocked across the clone, so no handler of the shim runs in
// the command before ExecCommand has reset them all; the shim's mask is then
// restored.
pid_t StartCommand(const ChildPlan& p) {
  sigset_t all;
  sigset_t before;
  sigfillset(&all);
  sigprocmask(SIG_SETMASK, &all, &before);
  const pid_t pid = clone(CommandEntry, g_command_stack + sizeof g_command_stack,
                          CLONE_VM | CLONE_VFORK | SIGCHLD, const_cast<ChildPlan*>(&p));
  const int err = errno;
  sigprocmask(SIG_SETMASK, &before, nullptr);
  errno = err;
  return pid;
}

// The forked child is a small supervisor shim, not the command: it leads
// the step's process group, forks the command into it and reports the
// command's end as its own. Why: PR_SET_PDEATHSIG reaches only the process
// that set it, so a kill -9 of serve used to leave the command's own
// children running unsupervised (and free to deliver twice). The shim's
// death signal is caught and kills the whole group, and as a child
// subreaper it keeps double-forked descendants in reach. It ignores the
// SIGTERM that a timeout or cancel sends to the group, so the command's
// grace period is unchanged; the SIGKILL after it takes the shim too.
[[noreturn]] void RunChild(const ChildPlan& p) {
  setpgid(0, 0);
  struct sigaction on_parent_death;
  std::memset(&on_parent_death, 0, sizeof on_parent_death);
  on_parent_death.sa_handler = KillGroupOnParentDeath;
  sigemptyset(&on_parent_death.sa_mask);
  sigaction(SIGUSR1, &on_parent_death, nullptr);
  if (prctl(PR_SET_PDEATHSIG, SIGUSR1) != 0) ChildFail(p.report_fd, ChildStage::kSetup);
  // The supervisor may have died before the line above: then nobody would
  // send the death signal.
  if (getppid() != p.parent) {
    kill(-getpgrp(), SIGKILL);
    _exit(127);
  }
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  struct sigaction ignore;
  std::memset(&ignore, 0, sizeof ignore);
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGPIPE}) sigaction(sig, &ignore, nullptr);
  struct sigaction on_child;
  std::memset(&on_child, 0, sizeof on_child);
  on_child.sa_handler = NoteChildChanged;
  sigemptyset(&on_child.sa_mask);
  sigaction(SIGCHLD, &on_child, nullptr);
  // SIGCHLD stays blocked except inside sigsuspend, so none is missed.
  sigset_t with_chld;
  sigemptyset(&with_chld);
  sigaddset(&with_chld, SIGCHLD);
  sigset_t waiting;
  sigprocmask(SIG_BLOCK, &with_chld, &waiting);
  sigdelset(&waiting, SIGCHLD);
  sigdelset(&waiting, SIGUSR1);

  if (dup2(p.stdin_fd, STDIN_FILENO) < 0 || dup2(p.stdout_fd, STDOUT_FILENO) < 0 ||
      dup2(p.stderr_fd, STDERR_FILENO) < 0) {
    ChildFail(p.report_fd, ChildStage::kSetup);
  }
  const pid_t command = StartCommand(p);
  if (command < 0) ChildFail(p.report_fd, ChildStage::kSetup);

  // The shim keeps nothing of the supervisor's: not its files, sockets or
  // the command's pipes (their readers see EOF when the command is done).
  if (close_range(0, ~0U, 0) != 0) {
    for (int fd = 0; fd < p.max_fd; ++fd) close(fd);
  }
  int status = 0;
  for (;;) {
    while (!g_child_changed) sigsuspend(&waiting);
    g_child_changed = 0;
    bool done = false;
    for (;;) {
      int st = 0;
      const pid_t reaped = waitpid(-1, &st, WNOHANG);
      if (reaped <= 0) break;
      if (reaped == command) {
        status = st;
        done = true;
      }
    }
    if (done) break;
  }
  if (WIFSIGNALED(status)) {
    // End the same way, so the supervisor sees the command's signal.
    const int sig = WTERMSIG(status);
    struct sigaction dfl;
    std::memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, nullptr);
    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    sigset_t only;
    sigemptyset(&only);
    sigprocmask(SIG_SETMASK, &only, nullptr);
    kill(getpid(), sig);
    _exit(128 + sig);
  }
  _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 127);
}

// Sets NAME=value, replacing an earlier entry of the same name in place.
void SetVar(std::vector<std::string>& env, std::string_view name, std::string_view value) {
  if (name.empty() || name.find('=') != std::string_view::npos) return;
  std::string entry;
  entry.reserve(name.size() + 1 + value.size());
  entry.append(name).append("=").append(value);
  for (auto& e : env) {
    if (e.size() > name.size() && e[name.size()] == '=' && e.compare(0, name.size(), name) == 0) {
      e = std::move(entry);
      return;
    }
  }
  env.push_back(std::move(entry));
}

std::string_view FindVar(const std::vector<std::string>& env, std::string_view name) {
  for (const auto& e : env) {
    if (e.size() > name.size() && e[name.size()] == '=' && e.compare(0, name.size(), name) == 0) {
      return std::string_view(e).substr(name.size() + 1);
    }
  }
  return {};
}

// The file to execve for argv[0]: as given when it contains a '/' (relative
// to the step's cwd, where the child execs), else searched in `path_var`
// like execvp does. Returns the errno of the search on failure.
std::string ResolveExecutable(const std::string& name, std::string_view path_var,
                              const std::string& cwd, int* err) {
  *err = 0;
  if (name.find('/') != std::string::npos) return name;
  bool denied = false;
  std::size_t start = 0;
  while (start <= path_var.size()) {
    std::size_t end = path_var.find(':', start);
    if (end == std::string_view::npos) end = path_var.size();
    std::string dir(path_var.substr(start, end - start));
    start = end + 1;
    if (dir.empty()) dir = ".";
    if (dir.front() != '/' && !cwd.empty()) dir = cwd + "/" + dir;
    std::string candidate = dir + "/" + name;
    struct stat st;
    if (stat(candidate.c_str(), &st) != 0) {
      if (errno == EACCES) denied = true;
      continue;
    }
    if (!S_ISREG(st.st_mode) || access(candidate.c_str(), X_OK) != 0) {
      denied = true;
      continue;
    }
    return candidate;
  }
  *err = denied ? EACCES : ENOENT;
  return {};
}

// True once the child has ended. Does not reap it: while it is a zombie its
// pid cannot be reused, so kill(-pid) still reaches only its own group.
bool LeaderExited(pid_t pid) {
  for (;;) {
    siginfo_t info;
    std::memset(&info, 0, sizeof info);
    if (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0) {
      return info.si_pid != 0;
    }
    if (errno != EINTR) return true;  // ECHILD: reaped behind our back
  }
}

int ReapStatus(pid_t pid, bool* ok) {
  int status = 0;
  for (;;) {
    if (waitpid(pid, &status, 0) == pid) {
      *ok = true;
      return status;
    }
    if (errno != EINTR) {
      *ok = false;
      return 0;
    }
  }
}

std::string SignalName(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

int RemainingMs(Clock::SteadyPoint now, Clock::SteadyPoint until) {
  if (until <= now) return 0;
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(until - now);
  return static_cast<int>(std::min<std::chrono::milliseconds::rep>(ms.count(), kPollSlice.count()));
}

}  // namespace

std::vector<std::string> SubstitutePlaceholders(const std::vector<std::string>& argv,
                                                const StepContext& ctx) {
  const std::array<std::pair<std::string_view, const std::string*>, 4> table{{
      {"{partition}", &ctx.partition},
      {"{business_date}", &ctx.business_date},
      {"{period}", &ctx.period},
      {"{run_key}", &ctx.run_key},
  }};
  std::vector<std::string> out;
  out.reserve(argv.size());
  for (const auto& element : argv) {
    const std::string_view in(element);
    std::string result;
    result.reserve(in.size());
    std::size_t i = 0;
    while (i < in.size()) {
      bool replaced = false;
      if (in[i] == '{') {
        for (const auto& [token, value] : table) {
          if (in.substr(i, token.size()) == token) {
            result += *value;  // values are not themselves scanned
            i += token.size();
            replaced = true;
            break;
          }
        }
      }
      if (!replaced) result += in[i++];
    }
    out.push_back(std::move(result));
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> RunKeyEnvironment(const StepContext& ctx) {
  return {
      {"CRONLEDGER_JOB", ctx.job},
      {"CRONLEDGER_PARTITION", ctx.partition},
      {"CRONLEDGER_BUSINESS_DATE", ctx.business_date},
      {"CRONLEDGER_PERIOD", ctx.period},
      {"CRONLEDGER_SCHEDULED_AT", FormatUtc(ctx.scheduled_at)},
      {"CRONLEDGER_RUN_KEY", ctx.run_key},
      {"CRONLEDGER_RUN_ID", std::to_string(ctx.run_id)},
      {"CRONLEDGER_ATTEMPT", std::to_string(ctx.attempt)},
      {"CRONLEDGER_STEP", ctx.step},
      {"CRONLEDGER_FENCING_TOKEN", std::to_string(ctx.fencing_token)},
  };
}

std::vector<std::string> StepEnvironment(const SubprocessSpec& spec, const StepContext& ctx) {
  std::vector<std::string> env;
  const char* path = std::getenv("PATH");
  SetVar(env, "PATH", path ? path : kDefaultPath);
  if (const char* home = std::getenv("HOME")) SetVar(env, "HOME", home);
  const char* lang = std::getenv("LANG");
  SetVar(env, "LANG", lang ? lang : "C.UTF-8");
  SetVar(env, "TZ", "UTC");
  for (const auto& [name, value] : spec.env) SetVar(env, name, value);
  for (const auto& name : spec.env_from_host) {
    if (const char* value = std::getenv(name.c_str())) SetVar(env, name, value);
  }
  // Last, so that nothing above can stand in for them.
  for (const auto& [name, value] : RunKeyEnvironment(ctx)) SetVar(env, name, value);
  for (const auto& [name, value] : spec.attempt_env) SetVar(env, name, value);
  // `cronledger effect run` and `cronledger checkpoint` work from any step:
  // the node's own program is found first, whatever serve's PATH was.
  const std::string bin(FindVar(env, "CRONLEDGER_BIN"));
  const std::string bin_dir = std::filesystem::path(bin).parent_path().string();
  if (!bin_dir.empty()) {
    const std::string_view path = FindVar(env, "PATH");
    SetVar(env, "PATH", path.empty() ? bin_dir : bin_dir + ":" + std::string(path));
  }
  return env;
}

StepOutcome RunSubprocessStep(const StepContext& ctx, const SubprocessSpec& spec, Clock& clock,
                              std::stop_token cancel) {
  StepOutcome outcome;

  Fd log;
  if (!spec.log_path.empty()) {
    const std::filesystem::path parent = std::filesystem::path(spec.log_path).parent_path();
    std::error_code ec;
    if (!parent.empty()) std::filesystem::create_directories(parent, ec);
    if (ec) {
      outcome.end = StepEnd::kSpawnFailed;
      outcome.error = "cannot create the log folder " + parent.string() + ": " + ec.message();
      return outcome;
    }
    log = Fd(open(spec.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640));
    if (!log.valid()) {
      outcome.end = StepEnd::kSpawnFailed;
      outcome.error = "cannot open the log " + spec.log_path + ": " + ErrnoText(errno);
      return outcome;
    }
  }
  OutputSink sink(log.get(), spec.output_cap, spec.tail_bytes);
  sink.LogLine("== step " + ctx.step + " attempt " + std::to_string(ctx.attempt) + " token " +
               std::to_string(ctx.fencing_token) + " ==");

  auto spawn_failed = [&](std::string why) {
    outcome.end = StepEnd::kSpawnFailed;
    outcome.error = std::move(why);
    sink.LogLine("== step " + ctx.step + " not started: " + outcome.error + " ==");
    return outcome;
  };

  if (spec.command.empty() || spec.command[0].empty()) return spawn_failed("empty command");
  const std::vector<std::string> args = SubstitutePlaceholders(spec.command, ctx);
  const std::vector<std::string> env = StepEnvironment(spec, ctx);
  int search_err = 0;
  const std::string exec_path =
      ResolveExecutable(args[0], FindVar(env, "PATH"), spec.cwd, &search_err);
  if (search_err != 0) {
    return spawn_failed("cannot run " + args[0] + ": " + ErrnoText(search_err) +
                        " (searched PATH)");
  }
  if (cancel.stop_requested()) {
    outcome.end = StepEnd::kCancelled;
    sink.LogLine("== step " + ctx.step + " cancelled before it started ==");
    return outcome;
  }

  Fd out_r, out_w, err_r, err_w, report_r, report_w;
  if (!MakePipe(out_r, out_w) || !MakePipe(err_r, err_w) || !MakePipe(report_r, report_w)) {
    return spawn_failed("cannot create pipes: " + ErrnoText(errno));
  }
  Fd devnull(open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!devnull.valid() || !KeepAboveStdio(devnull)) {
    return spawn_failed("cannot open /dev/null: " + ErrnoText(errno));
  }

  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  envp.reserve(env.size() + 1);
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  int max_fd = 1 << 16;
  struct rlimit lim;
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY) {
    max_fd = static_cast<int>(std::min<rlim_t>(lim.rlim_cur, static_cast<rlim_t>(max_fd)));
  }
  const ChildPlan plan{
      exec_path.c_str(), argv.data(), envp.data(), spec.cwd.empty() ? nullptr : spec.cwd.c_str(),
      devnull.get(),     out_w.get(), err_w.get(), report_w.get(),
      getpid(),          max_fd};

  const pid_t pid = fork();
  if (pid == 0) RunChild(plan);
  const int fork_errno = errno;
  out_w.Reset();
  err_w.Reset();
  report_w.Reset();
  devnull.Reset();
  if (pid < 0) return spawn_failed("cannot start " + args[0] + ": " + ErrnoText(fork_errno));
  // Also here, so that the group exists before any kill below. Fails with
  // EACCES only once the child has exec'd, after doing it itself.
  setpgid(pid, pid);

  // Blocks until the exec (the pipe closes on exec) or the child's report.
  ChildReport report{0, 0};
  ssize_t got;
  do {
    got = read(report_r.get(), &report, sizeof report);
  } while (got < 0 && errno == EINTR);
  report_r.Reset();
  if (got == static_cast<ssize_t>(sizeof report)) {
    bool reaped = false;
    ReapStatus(pid, &reaped);
    switch (static_cast<ChildStage>(report.stage)) {
      case ChildStage::kChdir:
        return spawn_failed("cannot change to the working directory " + spec.cwd + ": " +
                            ErrnoText(report.err));
      case ChildStage::kExec:
        return spawn_failed("cannot run " + args[0] + ": " + ErrnoText(report.err));
      case ChildStage::kSetup:
      default:
        return spawn_failed("cannot set up the process for " + args[0] + ": " +
                            ErrnoText(report.err));
    }
  }

  // A pidfd wakes the poll below the moment the child ends; without one
  // (old kernels) the poll slice bounds the delay.
  Fd pidfd(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));
  for (Fd* fd : {&out_r, &err_r}) {
    fcntl(fd->get(), F_SETFL, fcntl(fd->get(), F_GETFL) | O_NONBLOCK);
  }

  enum class Reason { kNone, kTimeout, kCancelled };
  Reason reason = Reason::kNone;
  // Bounded so that the deadline cannot overflow the clock's range.
  const Clock::SteadyPoint deadline =
      clock.SteadyNow() + std::min<std::chrono::milliseconds>(spec.timeout, kLongestTimeout);
  std::optional<Clock::SteadyPoint> term_at;
  std::optional<Clock::SteadyPoint> kill_at;
  int after_kill_rounds = 0;
  bool leader_exited = false;
  std::string buf(kReadChunk, '\0');
  std::array<Fd*, 2> streams{&out_r, &err_r};

  // The child is never reaped before the loop ends, so its pid (the group
  // id) cannot be taken by another process while we signal the group.
  auto signal_group = [pid](int sig) { kill(-pid, sig); };

  for (;;) {
    if (!leader_exited) leader_exited = LeaderExited(pid);
    const Clock::SteadyPoint now = clock.SteadyNow();
    const bool pipes_open = out_r.valid() || err_r.valid();

    if (!term_at) {
      if (leader_exited) {
        // Ended on its own; whatever it left in its group goes with it.
        signal_group(SIGTERM);
        term_at = now;
      } else if (now >= deadline) {
        reason = Reason::kTimeout;
        signal_group(SIGTERM);
        term_at = now;
      } else if (cancel.stop_requested()) {
        reason = Reason::kCancelled;
        signal_group(SIGTERM);
        term_at = now;
      }
    }
    if (term_at && !kill_at &&
        (now >= *term_at + spec.kill_grace || (leader_exited && !pipes_open))) {
      signal_group(SIGKILL);
      kill_at = now;
    }
    if (kill_at && leader_exited &&
        (!pipes_open || ++after_kill_rounds > kAfterKillMaxRounds ||
         now >= *kill_at + kAfterKillLinger)) {
      break;
    }

    int wait_ms = static_cast<int>(kPollSlice.count());
    if (!term_at) {
      wait_ms = std::min(wait_ms, RemainingMs(now, deadline));
    } else if (!kill_at) {
      wait_ms = std::min(wait_ms, RemainingMs(now, *term_at + spec.kill_grace));
    }
    std::array<pollfd, 3> fds{};
    nfds_t nfds = 0;
    std::array<int, 3> which{};
    for (int s = 0; s < 2; ++s) {
      if (!streams[static_cast<std::size_t>(s)]->valid()) continue;
      fds[nfds] = pollfd{streams[static_cast<std::size_t>(s)]->get(), POLLIN, 0};
      which[nfds++] = s;
    }
    if (pidfd.valid() && !leader_exited) {
      fds[nfds] = pollfd{pidfd.get(), POLLIN, 0};
      which[nfds++] = 2;
    }
    const int ready = poll(fds.data(), nfds, wait_ms);
    if (ready <= 0) continue;  // timeout or EINTR
    for (nfds_t i = 0; i < nfds; ++i) {
      if (which[i] == 2 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      Fd& stream = *streams[static_cast<std::size_t>(which[i])];
      const ssize_t n = read(stream.get(), buf.data(), buf.size());
      if (n > 0) {
        sink.Append(which[i], buf.data(), static_cast<std::size_t>(n));
      } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        stream.Reset();
      }
    }
  }
  out_r.Reset();
  err_r.Reset();

  bool reaped = false;
  const int status = ReapStatus(pid, &reaped);
  if (reaped && WIFEXITED(status)) {
    outcome.exit_status = WEXITSTATUS(status);
  } else if (reaped && WIFSIGNALED(status)) {
    outcome.signal = WTERMSIG(status);
  }

  std::string how;
  switch (reason) {
    case Reason::kTimeout:
      outcome.end = StepEnd::kTimeout;
      how = "timed out after " + std::to_string(spec.timeout.count()) + " ms";
      break;
    case Reason::kCancelled:
      outcome.end = StepEnd::kCancelled;
      how = "cancelled";
      break;
    case Reason::kNone:
      if (!reaped) {
        // Someone else reaped it (a SIGCHLD handler or waitpid(-1)): the
        // status is lost; report it as an end nobody here caused.
        outcome.end = StepEnd::kSignal;
        outcome.error = "the exit status of the step was lost (reaped elsewhere)";
        how = outcome.error;
      } else if (WIFSIGNALED(status)) {
        outcome.end = StepEnd::kSignal;
        how = "killed by " + SignalName(outcome.signal);
      } else {
        outcome.end = StepEnd::kExited;
        how = "exit status " + std::to_string(outcome.exit_status);
        // A shell's own codes for a command it could not run: the step's
        // program is there, a command it runs is not (docs/execution.md).
        if (outcome.exit_status == 126 || outcome.exit_status == 127) {
          outcome.error =
              how + ": " +
              (outcome.exit_status == 127 ? "a command the step runs was not found"
                                          : "a command the step runs is not executable") +
              " (the shell's code); permanent, not retried";
          how = outcome.error;
        }
      }
      break;
  }
  sink.LogLine("== step " + ctx.step + " ended: " + how + " ==");
  outcome.output_tail = sink.Tail();
  return outcome;
}

}  // namespace cronledger::exec
