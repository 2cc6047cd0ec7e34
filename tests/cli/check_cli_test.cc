// `cronledger check`, run as a real subprocess.
#include <gtest/gtest.h>

#include "source_dir.h"
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli/subprocess.h"

namespace cronledger {
namespace {

using testing::Cronledger;
using testing::Lines;
using testing::ProcessResult;
using testing::RunProcess;

std::filesystem::path SourceRoot() { return cronledger::testing::kSourceDir; }

// With exactly `env` (plus a PATH) and the working directory `cwd`.
ProcessResult CronledgerWith(std::vector<std::string> args, std::vector<std::string> env,
                             const std::string& cwd) {
  args.insert(args.begin(), CRONLEDGER_BIN);
  env.push_back("PATH=/usr/bin:/bin");
  return RunProcess(args, env, cwd);
}

constexpr const char* kValid =
    "[server]\n"
    "store = \"sqlite:ledger.db\"\n"
    "[[job]]\n"
    "name = \"sync\"\n"
    "schedule = \"*/5 * * * *\"\n"
    "timezone = \"Europe/Berlin\"\n"
    "partitions_command = [\"./bin/list\"]\n"
    "[[job.step]]\n"
    "name = \"pull\"\n"
    "command = [\"./bin/pull\", \"{partition}\", \"{period}\"]\n";

class CheckCli : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "check_cli.XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  std::string Write(const std::string& name, const std::string& text) {
    const auto path = dir_ / name;
    std::ofstream(path) << text;
    return path.string();
  }

  std::filesystem::path dir_;
};

TEST_F(CheckCli, TheExampleConfigPasses) {
  const std::string path = (SourceRoot() / "examples" / "cronledger.toml").string();
  const auto r = Cronledger({"check", "--config", path});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, path + ": ok (2 jobs, 3 partitions, 3 steps)\n");
  EXPECT_EQ(r.err, "");
}

TEST_F(CheckCli, ValidConfigPrintsAOneLineSummary) {
  const std::string path = Write("c.toml", kValid);
  const auto r = Cronledger({"check", "--config", path});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, path + ": ok (1 job, partitions from 1 command, 1 step)\n");
  EXPECT_EQ(r.err, "");
}

// Valid, so exit 0; but the scanner would never look that far back.
TEST_F(CheckCli, AStartDateOlderThanTheBackfillHorizonIsWarnedAbout) {
  std::string text = kValid;
  text.insert(text.find("[[job.step]]"), "start_date = \"2000-01-03\"\n");
  const std::string path = Write("c.toml", text);
  const auto r = Cronledger({"check", "--config", path});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, path + ": ok (1 job, partitions from 1 command, 1 step)\n");
  EXPECT_EQ(r.err.rfind(path + ":3: warning: job[sync].start_date: 2000-01-03 is older than "
                               "backfill.horizon (30d) reaches (back to ",
                        0),
            0u)
      << r.err;
  EXPECT_NE(r.err.find("`cronledger backfill --job sync --from 2000-01-03 --to ...`"),
            std::string::npos)
      << r.err;

  text = kValid;
  text.insert(text.find("[[job.step]]"), "start_date = \"2999-01-04\"\n");
  const auto later = Cronledger({"check", "--config", Write("c.toml", text)});
  EXPECT_EQ(later.exit_code, 0) << later.err;
  EXPECT_EQ(later.err, "");
}

TEST_F(CheckCli, InvalidConfigListsEveryProblemOnStderrOnly) {
  const std::string path = Write("bad.toml",
                                 "[server]\n"                           // 1
                                 "store = \"sqlite:x.db\"\n"            // 2
                                 "max_workers = 0\n"                    // 3
                                 "[[job]]\n"                            // 4
                                 "name = \"report\"\n"                  // 5
                                 "schedul = \"0 9 * * *\"\n"            // 6
                                 "timezone = \"Asia/Seoul\"\n"          // 7
                                 "partitions = [\"acme\", \"acme\"]\n"  // 8
                                 "[[job.step]]\n"                       // 9
                                 "name = \"gen\"\n"                     // 10
                                 "command = [\"./gen\", \"{day}\"]\n"   // 11
                                 "timeout = \"5\"\n");                  // 12
  const auto r = Cronledger({"check", "--config", path});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err,
            path + ":3: server.max_workers: must be between 1 and 1024, got 0\n" +  //
                path + ":4: job[report].schedule: required key is missing\n" +      //
                path + ":6: job[report].schedul: unknown key; did you mean \"schedule\"?\n" + path +
                ":8: job[report].partitions: duplicate partition \"acme\"\n" + path +
                ":11: job[report].step[gen].command: unknown placeholder \"{day}\" in element 2; "
                "the placeholders are {partition}, {business_date}, {period} and {run_key}\n" +
                path + ":12: job[report].step[gen].timeout: \"5\" has no unit; use e.g. \"5s\"\n");
}

TEST_F(CheckCli, SyntaxErrorIsOneLine) {
  const std::string path = Write("syntax.toml", "[server]\nstore = \"sqlite:x.db\n");
  const auto r = Cronledger({"check", "--config", path});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err.rfind(path + ":2: TOML syntax error: ", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST_F(CheckCli, MissingFileNamesThePathAndTheOsError) {
  const std::string path = (dir_ / "nope.toml").string();
  const auto r = Cronledger({"check", "--config", path});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, path + ": cannot read the configuration: No such file or directory\n");
}

TEST_F(CheckCli, ConfigDefaultsToTheEnvironmentVariable) {
  const std::string path = Write("from-env.toml", kValid);
  const auto r = CronledgerWith({"check"}, {"CRONLEDGER_CONFIG=" + path}, dir_.string());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, path + ": ok (1 job, partitions from 1 command, 1 step)\n");
}

TEST_F(CheckCli, TheFlagWinsOverTheEnvironmentVariable) {
  const std::string good = Write("good.toml", kValid);
  const auto r =
      CronledgerWith({"check", "--config", good},
                     {"CRONLEDGER_CONFIG=" + (dir_ / "missing.toml").string()}, dir_.string());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind(good + ": ok", 0), 0u) << r.out;
}

TEST_F(CheckCli, WithoutFlagOrVariableItReadsCronledgerTomlInTheWorkingDirectory) {
  const auto missing = CronledgerWith({"check"}, {}, dir_.string());
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_EQ(missing.err,
            "cronledger.toml: cannot read the configuration: No such file or directory\n");

  Write("cronledger.toml", kValid);
  const auto found = CronledgerWith({"check"}, {"CRONLEDGER_CONFIG="}, dir_.string());
  EXPECT_EQ(found.exit_code, 0) << found.err;
  EXPECT_EQ(found.out, "cronledger.toml: ok (1 job, partitions from 1 command, 1 step)\n");
}

}  // namespace
}  // namespace cronledger
