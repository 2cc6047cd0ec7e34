// The subprocess executor against real processes: /bin/sh scripts written
// into a temporary folder.
#include "exec/subprocess_executor.h"
#include "common/wrong_wall_clock.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

namespace cronledger::exec {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "cronledger-step-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) std::abort();
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void WriteFile(const std::string& path, const std::string& text, mode_t mode) {
  fs::create_directories(fs::path(path).parent_path());
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
  }
  chmod(path.c_str(), mode);
}

// Writes an executable /bin/sh script and returns its path.
std::string Script(const TempDir& dir, const std::string& name, const std::string& body) {
  const std::string path = dir / name;
  WriteFile(path, "#!/bin/sh\n" + body + "\n", 0755);
  return path;
}

StepContext Context() {
  StepContext ctx;
  ctx.job = "billing";
  ctx.partition = "eu-west";
  ctx.business_date = "2026-11-28";
  ctx.period = "2026-W48";
  ctx.run_key = "billing/eu-west/2026-11-28";
  ctx.scheduled_at = std::chrono::sys_days{std::chrono::year{2026} / 11 / 28} + 9h;
  ctx.run_id = 42;
  ctx.attempt = 2;
  ctx.fencing_token = 17;
  ctx.step = "generate";
  return ctx;
}

SubprocessSpec Spec(const TempDir& dir, std::vector<std::string> command) {
  SubprocessSpec spec;
  spec.command = std::move(command);
  spec.cwd = dir.path();
  spec.timeout = 20s;
  spec.kill_grace = 200ms;
  spec.log_path = dir / "logs/run-42/attempt-2.log";
  spec.tail_bytes = 64 * 1024;
  return spec;
}

StepOutcome RunStep(const SubprocessSpec& spec, std::stop_token cancel = {}) {
  return RunSubprocessStep(Context(), spec, RealClock(), std::move(cancel));
}

// No child of this process is left, not even a zombie.
bool NoChildrenLeft() { return waitpid(-1, nullptr, WNOHANG) == -1 && errno == ECHILD; }

bool Exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

// Waits (a few seconds at most) until `path` exists.
bool WaitForFile(const std::string& path) {
  for (int i = 0; i < 500 && !Exists(path); ++i) std::this_thread::sleep_for(10ms);
  return Exists(path);
}

pid_t ReadPid(const std::string& path) {
  std::istringstream in(ReadFile(path));
  pid_t pid = 0;
  in >> pid;
  return pid;
}

// True when `pid` is gone (or a zombie waiting for init). Polls briefly:
// after a kill the kernel needs a moment.
bool ProcessGone(pid_t pid) {
  for (int i = 0; i < 300; ++i) {
    if (kill(pid, 0) != 0 && errno == ESRCH) return true;
    const std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
    const auto close_paren = stat.rfind(')');
    if (close_paren != std::string::npos && close_paren + 2 < stat.size() &&
        stat[close_paren + 2] == 'Z') {
      return true;
    }
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

std::size_t Count(const std::string& text, char c) {
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), c));
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// --- pure parts -------------------------------------------------------------

TEST(SubprocessStepPlaceholders, SubstitutedInsideEachElement) {
  const auto ctx = Context();
  const auto out = SubstitutePlaceholders(
      {"report", "--part={partition}", "{business_date}/{period}/{partition}.csv", "{run_key}",
       "{unknown} {partition {PARTITION} {{partition}}", "plain", ""},
      ctx);
  const std::vector<std::string> want{"report",
                                      "--part=eu-west",
                                      "2026-11-28/2026-W48/eu-west.csv",
                                      "billing/eu-west/2026-11-28",
                                      "{unknown} {partition {PARTITION} {eu-west}",
                                      "plain",
                                      ""};
  EXPECT_EQ(out, want);
}

TEST(SubprocessStepPlaceholders, ValuesAreNotScannedAgain) {
  auto ctx = Context();
  ctx.partition = "{run_key}";
  EXPECT_EQ(SubstitutePlaceholders({"{partition}-{run_key}"}, ctx),
            std::vector<std::string>{"{run_key}-billing/eu-west/2026-11-28"});
}

TEST(SubprocessStepEnvironment, ExactlyTheContractAndNothingElse) {
  setenv("CL_STEP_TEST_SECRET", "hunter2", 1);
  setenv("CL_STEP_TEST_PASSED", "from host", 1);
  unsetenv("CL_STEP_TEST_UNSET");
  SubprocessSpec spec;
  spec.env = {{"JOB_A", "1"}, {"JOB_B", "two words=x"}};
  spec.env_from_host = {"CL_STEP_TEST_PASSED", "CL_STEP_TEST_UNSET"};
  const auto env = StepEnvironment(spec, Context());
  unsetenv("CL_STEP_TEST_SECRET");
  unsetenv("CL_STEP_TEST_PASSED");

  const char* path = std::getenv("PATH");
  const char* lang = std::getenv("LANG");
  std::vector<std::string> want{std::string("PATH=") +
                                (path ? path : "/usr/local/bin:/usr/bin:/bin")};
  if (const char* home = std::getenv("HOME")) want.push_back(std::string("HOME=") + home);
  want.push_back(std::string("LANG=") + (lang ? lang : "C.UTF-8"));
  want.insert(want.end(),
              {"TZ=UTC", "JOB_A=1", "JOB_B=two words=x", "CL_STEP_TEST_PASSED=from host",
               "CRONLEDGER_JOB=billing", "CRONLEDGER_PARTITION=eu-west",
               "CRONLEDGER_BUSINESS_DATE=2026-11-28", "CRONLEDGER_PERIOD=2026-W48",
               "CRONLEDGER_SCHEDULED_AT=2026-11-28T09:00:00Z",
               "CRONLEDGER_RUN_KEY=billing/eu-west/2026-11-28", "CRONLEDGER_RUN_ID=42",
               "CRONLEDGER_ATTEMPT=2", "CRONLEDGER_STEP=generate", "CRONLEDGER_FENCING_TOKEN=17"});
  EXPECT_EQ(env, want);
}

TEST(SubprocessStepEnvironment, JobEnvOverridesBaseButNotTheContext) {
  SubprocessSpec spec;
  spec.env = {{"PATH", "/opt/tools/bin"}, {"CRONLEDGER_RUN_ID", "999"}, {"TZ", "Asia/Seoul"}};
  const auto env = StepEnvironment(spec, Context());
  EXPECT_EQ(env.front(), "PATH=/opt/tools/bin");
  EXPECT_EQ(std::count(env.begin(), env.end(), "TZ=Asia/Seoul"), 1);
  EXPECT_EQ(std::count(env.begin(), env.end(), "CRONLEDGER_RUN_ID=42"), 1);
  EXPECT_EQ(std::count_if(env.begin(), env.end(),
                          [](const std::string& e) { return e.starts_with("CRONLEDGER_RUN_ID="); }),
            1);
}

TEST(SubprocessStepEnvironment, TheNodesOwnProgramIsFoundFirst) {
  SubprocessSpec spec;
  spec.env = {{"PATH", "/opt/tools/bin"}};
  spec.attempt_env = {{"CRONLEDGER_BIN", "/opt/cronledger/bin/cronledger"}};
  const auto env = StepEnvironment(spec, Context());
  EXPECT_EQ(env.front(), "PATH=/opt/cronledger/bin:/opt/tools/bin");
  EXPECT_EQ(std::count(env.begin(), env.end(), "CRONLEDGER_BIN=/opt/cronledger/bin/cronledger"), 1);
  // Without it (an embedding program that sets none) PATH is left alone.
  spec.attempt_env.clear();
  EXPECT_EQ(StepEnvironment(spec, Context()).front(), "PATH=/opt/tools/bin");
}

// --- real processes -----------------------------------------------------------

TEST(SubprocessStepRun, SuccessWritesTheLogAndTheTail) {
  TempDir dir;
  const auto spec = Spec(dir, {Script(dir, "ok.sh", "echo out line; echo err line >&2")});
  const auto r = RunStep(spec);
  EXPECT_EQ(r.end, StepEnd::kExited) << r.error;
  EXPECT_EQ(r.exit_status, 0);
  EXPECT_EQ(r.signal, 0);
  EXPECT_TRUE(r.error.empty());
  EXPECT_TRUE(Contains(r.output_tail, "out line\n")) << r.output_tail;
  EXPECT_TRUE(Contains(r.output_tail, "err line\n")) << r.output_tail;
  EXPECT_FALSE(Contains(r.output_tail, "== step")) << "header and trailer stay out of the tail";
  const std::string log = ReadFile(spec.log_path);
  EXPECT_TRUE(log.starts_with("== step generate attempt 2 token 17 ==\n")) << log;
  EXPECT_TRUE(Contains(log, "out line\n")) << log;
  EXPECT_TRUE(Contains(log, "err line\n")) << log;
  EXPECT_TRUE(Contains(log, "ended: exit status 0")) << log;
  EXPECT_TRUE(NoChildrenLeft());

  // A second attempt appends to the same log.
  RunStep(spec);
  const std::string again = ReadFile(spec.log_path);
  EXPECT_TRUE(again.starts_with(log));
  EXPECT_GT(again.size(), log.size());
}

TEST(SubprocessStepRun, TailKeepsTheEnd) {
  TempDir dir;
  auto spec =
      Spec(dir, {"/bin/sh", "-c", "i=0; while [ $i -lt 200 ]; do echo line $i; i=$((i+1)); done"});
  spec.tail_bytes = 18;
  const auto r = RunStep(spec);
  EXPECT_EQ(r.end, StepEnd::kExited);
  EXPECT_EQ(r.output_tail, "line 198\nline 199\n");
}

TEST(SubprocessStepRun, ExitCodesAreReported) {
  TempDir dir;
  for (int code : {75, 65, 1}) {
    const auto r = RunStep(Spec(dir, {"/bin/sh", "-c", "exit " + std::to_string(code)}));
    EXPECT_EQ(r.end, StepEnd::kExited);
    EXPECT_EQ(r.exit_status, code);
    EXPECT_EQ(r.signal, 0);
  }
  EXPECT_TRUE(NoChildrenLeft());
}

TEST(SubprocessStepRun, PlaceholdersAndContextReachTheCommand) {
  TempDir dir;
  const auto spec =
      Spec(dir, {Script(dir, "show.sh", "printf 'arg=%s\\n' \"$@\"; env"), "{partition}",
                 "{business_date}/{period}", "key={run_key}", "{other}"});
  const auto r = RunStep(spec);
  ASSERT_EQ(r.end, StepEnd::kExited) << r.error;
  const std::string& out = r.output_tail;
  for (const char* line :
       {"arg=eu-west\n", "arg=2026-11-28/2026-W48\n", "arg=key=billing/eu-west/2026-11-28\n",
        "arg={other}\n", "CRONLEDGER_JOB=billing\n", "CRONLEDGER_PARTITION=eu-west\n",
        "CRONLEDGER_BUSINESS_DATE=2026-11-28\n", "CRONLEDGER_PERIOD=2026-W48\n",
        "CRONLEDGER_SCHEDULED_AT=2026-11-28T09:00:00Z\n",
        "CRONLEDGER_RUN_KEY=billing/eu-west/2026-11-28\n", "CRONLEDGER_RUN_ID=42\n",
        "CRONLEDGER_ATTEMPT=2\n", "CRONLEDGER_STEP=generate\n", "CRONLEDGER_FENCING_TOKEN=17\n",
        "TZ=UTC\n"}) {
    EXPECT_TRUE(Contains(out, line)) << line << " missing from:\n" << out;
  }
}

TEST(SubprocessStepRun, EnvAndEnvFromHost) {
  TempDir dir;
  setenv("CL_STEP_TEST_SECRET", "hunter2", 1);
  setenv("CL_STEP_TEST_PASSED", "visible value", 1);
  auto spec = Spec(dir, {"env"});  // found through PATH
  spec.env = {{"JOB_VAR", "a b"}};
  spec.env_from_host = {"CL_STEP_TEST_PASSED", "CL_STEP_TEST_NOT_SET"};
  const auto r = RunStep(spec);
  const auto want = StepEnvironment(spec, Context());
  unsetenv("CL_STEP_TEST_SECRET");
  unsetenv("CL_STEP_TEST_PASSED");
  ASSERT_EQ(r.end, StepEnd::kExited) << r.error;
  EXPECT_TRUE(Contains(r.output_tail, "JOB_VAR=a b\n")) << r.output_tail;
  EXPECT_TRUE(Contains(r.output_tail, "CL_STEP_TEST_PASSED=visible value\n")) << r.output_tail;
  EXPECT_FALSE(Contains(r.output_tail, "hunter2")) << r.output_tail;
  EXPECT_FALSE(Contains(r.output_tail, "CL_STEP_TEST_SECRET")) << r.output_tail;
  EXPECT_FALSE(Contains(r.output_tail, "CL_STEP_TEST_NOT_SET")) << r.output_tail;
  // Exactly the variables StepEnvironment promises.
  std::set<std::string> seen;
  std::istringstream lines(r.output_tail);
  for (std::string line; std::getline(lines, line);) seen.insert(line);
  EXPECT_EQ(seen, std::set<std::string>(want.begin(), want.end()));
}

TEST(SubprocessStepRun, ShellSyntaxReachesTheCommandLiterally) {
  TempDir dir;
  const std::vector<std::string> hostile{"$(touch pwned)",
                                         ";",
                                         "touch pwned2",
                                         "*",
                                         "a b",
                                         "`touch pwned3`",
                                         "> redirected",
                                         "&& touch pwned4",
                                         "|",
                                         "'",
                                         "\""};
  std::vector<std::string> command{"printf", "%s|"};
  command.insert(command.end(), hostile.begin(), hostile.end());
  const auto r = RunStep(Spec(dir, command));
  ASSERT_EQ(r.end, StepEnd::kExited) << r.error;
  std::string want;
  for (const auto& h : hostile) want += h + "|";
  EXPECT_EQ(r.output_tail, want);
  std::vector<std::string> created;
  for (const auto& entry : fs::directory_iterator(dir.path())) {
    created.push_back(entry.path().filename().string());
  }
  EXPECT_EQ(created, std::vector<std::string>{"logs"});
}

TEST(SubprocessStepRun, RelativeCommandRunsFromCwd) {
  TempDir dir;
  Script(dir, "bin/report", "echo report ran in \"$(pwd)\"");
  const auto r = RunStep(Spec(dir, {"./bin/report"}));
  ASSERT_EQ(r.end, StepEnd::kExited) << r.error;
  EXPECT_EQ(r.output_tail, "report ran in " + dir.path() + "\n");
}

TEST(SubprocessStepRun, MissingCommandFailsToSpawn) {
  TempDir dir;
  const auto spec = Spec(dir, {"./bin/report", "x"});
  const auto relative = RunStep(spec);
  EXPECT_EQ(relative.end, StepEnd::kSpawnFailed);
  EXPECT_EQ(relative.error, "cannot run ./bin/report: No such file or directory");
  EXPECT_TRUE(Contains(ReadFile(spec.log_path), relative.error));

  const auto absolute = RunStep(Spec(dir, {"/nonexistent/cmd"}));
  EXPECT_EQ(absolute.end, StepEnd::kSpawnFailed);
  EXPECT_EQ(absolute.error, "cannot run /nonexistent/cmd: No such file or directory");

  const auto searched = RunStep(Spec(dir, {"cronledger-no-such-command"}));
  EXPECT_EQ(searched.end, StepEnd::kSpawnFailed);
  EXPECT_TRUE(searched.error.starts_with(
      "cannot run cronledger-no-such-command: No such file or directory"))
      << searched.error;

  const auto empty = RunStep(Spec(dir, {}));
  EXPECT_EQ(empty.end, StepEnd::kSpawnFailed);
  EXPECT_FALSE(empty.error.empty());
  EXPECT_TRUE(NoChildrenLeft());
}

TEST(SubprocessStepRun, NonExecutableFileFailsToSpawn) {
  TempDir dir;
  WriteFile(dir / "tools/data.sh", "#!/bin/sh\necho should not run\n", 0644);
  const auto direct = RunStep(Spec(dir, {dir / "tools/data.sh"}));
  EXPECT_EQ(direct.end, StepEnd::kSpawnFailed);
  EXPECT_EQ(direct.error, "cannot run " + (dir / "tools/data.sh") + ": Permission denied");

  auto spec = Spec(dir, {"data.sh"});
  spec.env = {{"PATH", dir / "tools"}};
  const auto searched = RunStep(spec);
  EXPECT_EQ(searched.end, StepEnd::kSpawnFailed);
  EXPECT_TRUE(searched.error.starts_with("cannot run data.sh: Permission denied"))
      << searched.error;

  // A directory is not a command either.
  const auto folder = RunStep(Spec(dir, {dir / "tools"}));
  EXPECT_EQ(folder.end, StepEnd::kSpawnFailed);
  EXPECT_TRUE(Contains(folder.error, "Permission denied")) << folder.error;
  EXPECT_TRUE(NoChildrenLeft());
}

// A step whose program runs but whose shell cannot find or execute a
// command ends with the shell's 127 or 126, said in words in its log and
// its outcome.
TEST(SubprocessStepRun, TheShellsNotFoundAndNotExecutableAreNamed) {
  TempDir dir;
  WriteFile(dir / "data.sh", "echo data\n", 0644);
  const auto missing =
      RunStep(Spec(dir, {"/bin/sh", "-c", "echo before; cronledger-no-such-tool"}));
  EXPECT_EQ(missing.end, StepEnd::kExited);
  EXPECT_EQ(missing.exit_status, 127);
  EXPECT_EQ(missing.error,
            "exit status 127: a command the step runs was not found (the shell's code); "
            "permanent, not retried");
  const auto spec = Spec(dir, {"/bin/sh", "-c", "./data.sh"});
  const auto denied = RunStep(spec);
  EXPECT_EQ(denied.exit_status, 126);
  EXPECT_EQ(denied.error,
            "exit status 126: a command the step runs is not executable (the shell's code); "
            "permanent, not retried");
  EXPECT_TRUE(Contains(ReadFile(spec.log_path), "ended: " + denied.error))
      << ReadFile(spec.log_path);
  // Any other code is the step's own: nothing is said for it.
  EXPECT_EQ(RunStep(Spec(dir, {"/bin/sh", "-c", "exit 3"})).error, "");
  EXPECT_TRUE(NoChildrenLeft());
}

// `cronledger effect run` from a step, with serve's PATH not naming the
// folder of cronledger: found through CRONLEDGER_BIN's folder.
TEST(SubprocessStepRun, ACommandBesideTheNodesProgramIsFoundWithoutItsFolderOnPath) {
  TempDir dir;
  Script(dir, "bin/cronledger", "echo \"cronledger $*\"");
  auto spec = Spec(dir, {"cronledger", "effect", "run"});
  spec.env = {{"PATH", "/usr/bin:/bin"}};
  spec.attempt_env = {{"CRONLEDGER_BIN", dir / "bin/cronledger"}};
  const auto r = RunStep(spec);
  EXPECT_EQ(r.end, StepEnd::kExited) << r.error;
  EXPECT_EQ(r.exit_status, 0);
  EXPECT_EQ(r.output_tail, "cronledger effect run\n");
}

TEST(SubprocessStepRun, MissingCwdFailsToSpawn) {
  TempDir dir;
  auto spec = Spec(dir, {"/bin/true"});
  spec.cwd = dir / "no/such/folder";
  const auto r = RunStep(spec);
  EXPECT_EQ(r.end, StepEnd::kSpawnFailed);
  EXPECT_EQ(r.error,
            "cannot change to the working directory " + spec.cwd + ": No such file or directory");
  EXPECT_TRUE(NoChildrenLeft());
}

TEST(SubprocessStepRun, TimeoutKillsTheWholeGroup) {
  TempDir dir;
  auto spec = Spec(dir, {Script(dir, "slow.sh",
                                "sleep 30 &\n"
                                "echo $! > grandchild.pid.tmp && mv grandchild.pid.tmp "
                                "grandchild.pid\n"
                                "sleep 30")});
  spec.timeout = 300ms;
  const auto r = RunStep(spec);
  EXPECT_EQ(r.end, StepEnd::kTimeout);
  EXPECT_EQ(r.signal, SIGTERM);
  ASSERT_TRUE(Exists(dir / "grandchild.pid"));
  const pid_t grandchild = ReadPid(dir / "grandchild.pid");
  ASSERT_GT(grandchild, 0);
  EXPECT_TRUE(ProcessGone(grandchild));
  EXPECT_TRUE(Contains(ReadFile(spec.log_path), "timed out after 300 ms"));
  EXPECT_TRUE(NoChildrenLeft());
}

// A step's timeout is measured on the steady clock: a wall clock stepped
// forward does not time a step out early, and one standing still (or
// stepped back) does not let it run past its timeout.
TEST(SubprocessStepRun, TheTimeoutIsMeasuredOnTheSteadyClock) {
  TempDir dir;
  {
    WrongWallClock jumping(std::chrono::hours(1));
    const auto r = RunSubprocessStep(Context(), Spec(dir, {"/bin/sh", "-c", "sleep 0.2"}),
                                     jumping, {});
    EXPECT_EQ(r.end, StepEnd::kExited);
    EXPECT_EQ(r.exit_status, 0);
  }
  {
    WrongWallClock still(Clock::Duration::zero());
    auto spec = Spec(dir, {"/bin/sh", "-c", "sleep 30"});
    spec.timeout = 300ms;
    const auto r = RunSubprocessStep(Context(), spec, still, {});
    EXPECT_EQ(r.end, StepEnd::kTimeout);
    EXPECT_EQ(r.signal, SIGTERM);
  }
  EXPECT_TRUE(NoChildrenLeft());
}

TEST(SubprocessStepRun, StepIgnoringTermIsKilledAfterTheGrace) {
  TempDir dir;
  auto spec = Spec(dir, {Script(dir, "stubborn.sh",
                                "trap '' TERM\n"
                                "sleep 30 &\n"
                                "echo $! > grandchild.pid.tmp && mv grandchild.pid.tmp "
                                "grandchild.pid\n"
                                "sleep 30")});
  spec.timeout = 300ms;
  spec.kill_grace = 200ms;
  const auto r = RunStep(spec);
  EXPECT_EQ(r.end, StepEnd::kTimeout);
  EXPECT_EQ(r.signal, SIGKILL);
  ASSERT_TRUE(Exists(dir / "grandchild.pid"));
  EXPECT_TRUE(ProcessGone(ReadPid(dir / "grandchild.pid")));
  EXPECT_TRUE(NoChildrenLeft());
}

TEST(SubprocessStepRun, CancelFromAnotherThread) {
  TempDir dir;
  const auto spec = Spec(dir, {Script(dir, "wait.sh", "echo started > started; sleep 30")});
  std::stop_source stop;
  std::jthread canceller([&] {
    if (WaitForFile(dir / "started")) stop.request_stop();
  });
  const auto r = RunStep(spec, stop.get_token());
  canceller.join();
  EXPECT_EQ(r.end, StepEnd::kCancelled);
  EXPECT_TRUE(Contains(ReadFile(spec.log_path), "ended: cancelled"));
  EXPECT_TRUE(NoChildrenLeft());
}

TEST(SubprocessStepRun, CancelledBeforeStartRunsNothing) {
  TempDir dir;
  std::stop_source stop;
  stop.request_stop();
  const auto r = RunStep(Spec(dir, {"/bin/sh", "-c", "touch ran"}), stop.get_token());
  EXPECT_EQ(r.end, StepEnd::kCancelled);
  EXPECT_FALSE(Exists(dir / "ran"));
}

TEST(SubprocessStepRun, LeftoverChildrenDieWithTheStep) {
  TempDir dir;
  // One holds the output pipe, one does not; the step itself succeeds.
  const auto spec = Spec(dir, {Script(dir, "leaves.sh",
                                      "sleep 30 &\n"
                                      "echo $! > holder.pid\n"
                                      "sleep 30 >/dev/null 2>&1 &\n"
                                      "echo $! > detached.pid\n"
                                      "echo done")});
  const auto r = RunStep(spec);
  EXPECT_EQ(r.end, StepEnd::kExited);
  EXPECT_EQ(r.exit_status, 0);
  EXPECT_EQ(r.output_tail, "done\n");
  EXPECT_TRUE(ProcessGone(ReadPid(dir / "holder.pid")));
  EXPECT_TRUE(ProcessGone(ReadPid(dir / "detached.pid")));
  EXPECT_TRUE(NoChildrenLeft());
}

TEST(SubprocessStepRun, OutputFarPastTheCapIsDrainedAndTruncated) {
  TempDir dir;
  auto spec = Spec(dir, {"/bin/sh", "-c",
                         "head -c 5000000 /dev/zero | tr '\\0' Q; "
                         "head -c 5000000 /dev/zero | tr '\\0' W >&2; echo finished"});
  spec.output_cap = 64 * 1024;
  spec.tail_bytes = 100;
  const auto r = RunStep(spec);
  EXPECT_EQ(r.end, StepEnd::kExited);
  EXPECT_EQ(r.exit_status, 0);
  const std::string log = ReadFile(spec.log_path);
  EXPECT_EQ(Count(log, 'Q'), 64u * 1024u);
  EXPECT_EQ(Count(log, 'W'), 64u * 1024u);
  EXPECT_LT(log.size(), 3u * 64u * 1024u);
  EXPECT_TRUE(Contains(log, "\n[stdout: output truncated at 65536 bytes]\n")) << log.substr(0, 200);
  EXPECT_TRUE(Contains(log, "\n[stderr: output truncated at 65536 bytes]\n"));
  EXPECT_FALSE(Contains(log, "finished")) << "stdout past the cap is dropped";
  EXPECT_TRUE(Contains(r.output_tail, "[stderr: output truncated at 65536 bytes]\n"))
      << r.output_tail;
}

TEST(SubprocessStepRun, SignalNobodySentIsReported) {
  TempDir dir;
  const auto r = RunStep(Spec(dir, {"/bin/sh", "-c", "ulimit -c 0; kill -SEGV $$"}));
  EXPECT_EQ(r.end, StepEnd::kSignal);
  EXPECT_EQ(r.signal, SIGSEGV);
  EXPECT_TRUE(NoChildrenLeft());
}

TEST(SubprocessStepRun, OnlyStandardStreamsReachTheCommand) {
  TempDir dir;
  // A descriptor of the supervisor opened without O_CLOEXEC.
  const int leaky = open("/dev/null", O_RDONLY);
  ASSERT_GE(leaky, 3);
  const auto spec = Spec(
      dir, {"/bin/sh", "-c", "echo $$ > leader.tmp && mv leader.tmp leader.pid && exec sleep 30"});
  std::stop_source stop;
  std::set<std::string> fds;
  std::string stdin_target;
  std::jthread inspector([&] {
    if (WaitForFile(dir / "leader.pid")) {
      const std::string proc = "/proc/" + std::to_string(ReadPid(dir / "leader.pid"));
      // Wait until `sleep` is asleep: right after the exec the dynamic
      // loader briefly holds the libraries it maps open as fd 3.
      const auto asleep = [&] {
        const std::string stat = ReadFile(proc + "/stat");
        const auto paren = stat.rfind(')');
        return ReadFile(proc + "/comm") == "sleep\n" && paren != std::string::npos &&
               paren + 2 < stat.size() && stat[paren + 2] == 'S';
      };
      for (int i = 0; i < 500 && !asleep(); ++i) std::this_thread::sleep_for(10ms);
      std::error_code ec;
      for (const auto& entry : fs::directory_iterator(proc + "/fd", ec)) {
        fds.insert(entry.path().filename().string());
      }
      stdin_target = fs::read_symlink(proc + "/fd/0", ec).string();
    }
    stop.request_stop();
  });
  const auto r = RunStep(spec, stop.get_token());
  inspector.join();
  close(leaky);
  EXPECT_EQ(r.end, StepEnd::kCancelled);
  EXPECT_EQ(fds, (std::set<std::string>{"0", "1", "2"}));
  EXPECT_EQ(stdin_target, "/dev/null");
}

TEST(SubprocessStepRun, StepsRunConcurrently) {
  TempDir dir;
  constexpr int kSteps = 8;
  std::vector<StepOutcome> results(kSteps);
  {
    std::vector<std::jthread> threads;
    for (int i = 0; i < kSteps; ++i) {
      threads.emplace_back([&, i] {
        auto spec = Spec(dir, {"/bin/sh", "-c", "echo step $0; exit $1", std::to_string(i),
                               std::to_string(i + 10)});
        spec.log_path = dir / ("logs/" + std::to_string(i) + ".log");
        results[static_cast<std::size_t>(i)] = RunStep(spec);
      });
    }
  }
  for (int i = 0; i < kSteps; ++i) {
    const auto& r = results[static_cast<std::size_t>(i)];
    EXPECT_EQ(r.end, StepEnd::kExited);
    EXPECT_EQ(r.exit_status, i + 10);
    EXPECT_EQ(r.output_tail, "step " + std::to_string(i) + "\n");
  }
  EXPECT_TRUE(NoChildrenLeft());
}

}  // namespace
}  // namespace cronledger::exec
