// The command runner against real processes.
#include "exec/command_runner.h"
#include "common/wrong_wall_clock.h"

#include <unistd.h>

#include <cstdlib>

#include <gtest/gtest.h>

namespace cronledger::exec {
namespace {

CommandResult Exec(std::vector<std::string> argv, std::chrono::milliseconds timeout =
                                                     std::chrono::milliseconds{10000}) {
  CommandSpec spec;
  spec.argv = std::move(argv);
  spec.environment = BaseEnvironment();
  spec.timeout = timeout;
  return RunCommand(spec, RealClock());
}

// The timeout is measured on the steady clock, whatever the wall clock does.
TEST(CommandRunner, TheTimeoutIsMeasuredOnTheSteadyClock) {
  CommandSpec spec;
  spec.environment = BaseEnvironment();
  spec.timeout = std::chrono::milliseconds{10000};
  spec.argv = {"/bin/sh", "-c", "sleep 0.2; echo done"};
  WrongWallClock jumping(std::chrono::hours(1));
  auto r = RunCommand(spec, jumping);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "done\n");

  spec.timeout = std::chrono::milliseconds{300};
  spec.argv = {"/bin/sh", "-c", "sleep 30"};
  WrongWallClock still(Clock::Duration::zero());
  r = RunCommand(spec, still);
  EXPECT_TRUE(r.timed_out);
}

TEST(CommandRunner, CapturesOutputAndExitStatus) {
  const auto r = Exec({"/bin/sh", "-c", "echo out; echo err >&2; exit 7"});
  EXPECT_FALSE(r.spawn_failed);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 7);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err, "err\n");
}

TEST(CommandRunner, ArgvReachesTheCommandLiterally) {
  const auto r = Exec({"/usr/bin/printf", "%s|", "$(touch pwned)", ";", "*", "a b"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "$(touch pwned)|;|*|a b|");
}

TEST(CommandRunner, CleanEnvironment) {
  setenv("CRONLEDGER_TEST_SECRET", "hunter2", 1);
  const auto r = Exec({"/usr/bin/env"});
  unsetenv("CRONLEDGER_TEST_SECRET");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out.find("hunter2"), std::string::npos);
  EXPECT_NE(r.out.find("TZ=UTC\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("PATH="), std::string::npos);
}

TEST(CommandRunner, InputReachesStdinAndIsClosed) {
  CommandSpec spec;
  spec.argv = {"/bin/cat"};
  spec.environment = BaseEnvironment();
  spec.input = std::string(300000, 'x') + "{\"alert\": \"lag\"}";  // beyond a pipe's buffer
  const auto r = RunCommand(spec, RealClock());
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out.size(), spec.input->size());
  EXPECT_EQ(r.out, *spec.input);
}

TEST(CommandRunner, ACommandThatIgnoresItsInputIsNotAnError) {
  CommandSpec spec;
  spec.argv = {"/bin/true"};
  spec.environment = BaseEnvironment();
  spec.input = std::string(1 << 20, 'x');
  const auto r = RunCommand(spec, RealClock());  // and no SIGPIPE kills the test
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_FALSE(r.timed_out);
  // Without input, stdin is /dev/null: cat ends at once.
  EXPECT_EQ(Exec({"/bin/cat"}).out, "");
}

TEST(CommandRunner, MissingAndNonExecutableCommands) {
  const auto missing = Exec({"/nonexistent/cmd"});
  EXPECT_TRUE(missing.spawn_failed);
  EXPECT_NE(missing.err.find("No such file or directory"), std::string::npos) << missing.err;
  char tmpl[] = "/tmp/cronledger-noexec-XXXXXX";
  const int fd = mkstemp(tmpl);
  ASSERT_GE(fd, 0);
  close(fd);  // mode 0600: not executable, even for root
  const auto not_exec = Exec({tmpl});
  unlink(tmpl);
  EXPECT_TRUE(not_exec.spawn_failed);
  EXPECT_NE(not_exec.err.find("Permission denied"), std::string::npos) << not_exec.err;
  EXPECT_TRUE(Exec({}).spawn_failed);
}

TEST(CommandRunner, TimeoutKillsTheWholeGroup) {
  // The child's own child holds the pipe open; killing the group ends both.
  const auto r = Exec({"/bin/sh", "-c", "sleep 30 & sleep 30"}, std::chrono::milliseconds{200});
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.signal, SIGKILL);
}

TEST(CommandRunner, OutputIsCapped) {
  CommandSpec spec;
  spec.argv = {"/bin/sh", "-c", "head -c 100000 /dev/zero"};
  spec.environment = BaseEnvironment();
  spec.output_cap = 1000;
  const auto r = RunCommand(spec, RealClock());
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out.size(), 1000u);
  EXPECT_TRUE(r.out_truncated);
}

}  // namespace
}  // namespace cronledger::exec
