// The configuration loader: defaults, path resolution, and the exact
// problem list (file:line: key: message) for each category of mistake.
#include "config/config.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "source_dir.h"

namespace cronledger::config {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;
using ledger::Catchup;
using ledger::OnPause;
using ledger::Overlap;

std::filesystem::path SourceRoot() { return cronledger::testing::kSourceDir; }

constexpr const char* kPath = "/srv/cl/cronledger.toml";

// A valid [server] table, to put in front of job snippets.
constexpr const char* kServer = "[server]\nstore = \"sqlite:cl.db\"\n";

// A valid one-step job to put after kServer; its [[job]] is line 3.
constexpr const char* kJob =
    "[[job]]\n"                     // 3
    "name = \"j\"\n"                // 4
    "schedule = \"0 9 * * *\"\n"    // 5
    "timezone = \"UTC\"\n"          // 6
    "[[job.step]]\n"                // 7
    "name = \"s\"\n"                // 8
    "command = [\"./bin/run\"]\n";  // 9

Config MustParse(const std::string& text, const std::string& path = kPath) {
  auto result = ParseConfig(text, path);
  if (auto* errors = std::get_if<ConfigErrors>(&result)) {
    ADD_FAILURE() << "unexpected problems:\n" << errors->ToString();
    return Config{};
  }
  return std::get<Config>(std::move(result));
}

// Every problem, rendered, with the file named "c.toml".
std::vector<std::string> Problems(const std::string& text) {
  auto result = ParseConfig(text, "c.toml");
  std::vector<std::string> out;
  if (auto* errors = std::get_if<ConfigErrors>(&result)) {
    for (const auto& p : errors->problems) out.push_back(p.ToString());
  }
  return out;
}

// The single problem of a job whose extra lines follow line 9 of kJob.
std::vector<std::string> JobProblems(const std::string& job_lines,
                                     const std::string& step_lines = "") {
  std::string text = std::string(kServer) + kJob + step_lines;
  // Job keys go before the first [[job.step]] (line 7).
  const std::size_t at = text.find("[[job.step]]");
  text.insert(at, job_lines);
  return Problems(text);
}

using Lines = std::vector<std::string>;
using Env = std::vector<std::pair<std::string, std::string>>;

// ---- loading a valid file -----------------------------------------------------

TEST(ConfigLoad, ExampleConfigLoadsWithDefaultsAndResolvedPaths) {
  const auto examples = (SourceRoot() / "examples").lexically_normal();
  auto result = LoadConfig((examples / "cronledger.toml").string());
  ASSERT_TRUE(std::holds_alternative<Config>(result)) << std::get<ConfigErrors>(result).ToString();
  const Config& c = std::get<Config>(result);
  EXPECT_EQ(c.dir, examples.string());
  EXPECT_EQ(c.server.store, "sqlite:" + (examples / "cronledger.db").string());
  EXPECT_EQ(c.server.listen, "127.0.0.1:8377");
  EXPECT_EQ(c.server.node_id, "");
  EXPECT_EQ(c.server.max_workers, 8);
  EXPECT_EQ(c.server.durability, Durability::kFull);
  EXPECT_EQ(c.server.log_dir, (examples / "logs").string());
  EXPECT_EQ(c.server.output_cap, 1u << 20);
  ASSERT_EQ(c.jobs.size(), 2u);

  const JobConfig* report = c.FindJob("daily_report");
  ASSERT_NE(report, nullptr);
  EXPECT_EQ(report->schedule, "0 9 * * *");
  EXPECT_EQ(report->timezone, "Asia/Seoul");
  EXPECT_EQ(report->date_offset_days, -1);
  EXPECT_EQ(report->partitions, (Lines{"acme", "globex"}));
  ASSERT_EQ(report->steps.size(), 2u);
  EXPECT_EQ(report->steps[0].name, "generate");
  EXPECT_EQ(report->steps[0].command, (Lines{(examples / "bin/report").string(), "--customer",
                                             "{partition}", "--date", "{business_date}"}));
  EXPECT_EQ(report->steps[1].name, "deliver");
  EXPECT_EQ(report->steps[1].command[0], (examples / "bin/send-report").string());
  EXPECT_EQ(report->executor, Executor::kSubprocess);
  EXPECT_EQ(report->overlap, Overlap::kQueue);
  EXPECT_EQ(report->retry.max_attempts, 5);
  EXPECT_EQ(report->retry_exit_codes, (std::vector<int>{75}));
  EXPECT_EQ(report->fail_exit_codes, (std::vector<int>{64, 65, 66, 77, 78}));
  EXPECT_EQ(report->env, (Env{{"REPORT_BUCKET", "reports-prod"}}));
  EXPECT_EQ(report->EffectiveLeaseTtl(), minutes(15));

  const JobConfig* beat = c.FindJob("heartbeat");
  ASSERT_NE(beat, nullptr);
  EXPECT_EQ(beat->schedule, "* * * * *");
  EXPECT_EQ(beat->timezone, "UTC");
  EXPECT_TRUE(beat->partitions.empty());
  EXPECT_TRUE(beat->partitions_command.empty());
  ASSERT_EQ(beat->steps.size(), 1u);
  EXPECT_EQ(beat->steps[0].command, (Lines{(examples / "bin/heartbeat").string()}));
  // The commands it names exist and are executable.
  for (const auto* job : {report, beat}) {
    for (const auto& step : job->steps) {
      const auto perms = std::filesystem::status(step.command[0]).permissions();
      EXPECT_NE(perms & std::filesystem::perms::owner_exec, std::filesystem::perms::none)
          << step.command[0];
    }
  }
}

TEST(ConfigLoad, EveryDefaultIsApplied) {
  const Config c = MustParse(std::string(kServer) + kJob);
  EXPECT_EQ(c.path, kPath);
  EXPECT_EQ(c.dir, "/srv/cl");
  EXPECT_EQ(c.server.store, "sqlite:/srv/cl/cl.db");
  EXPECT_EQ(c.server.listen, "127.0.0.1:8377");
  EXPECT_EQ(c.server.node_id, "");
  EXPECT_EQ(c.server.max_workers, 8);
  EXPECT_EQ(c.server.durability, Durability::kFull);
  EXPECT_EQ(c.server.drain_timeout, seconds(30));
  EXPECT_EQ(c.server.log_dir, "/srv/cl/logs");
  EXPECT_EQ(c.server.log_retention, hours(24 * 30));
  EXPECT_EQ(c.server.output_cap, 1048576u);
  EXPECT_FALSE(c.server.metrics_public);
  ASSERT_EQ(c.jobs.size(), 1u);
  const JobConfig& j = c.jobs[0];
  EXPECT_EQ(j.line, 3);
  EXPECT_EQ(j.date_offset_days, 0);
  EXPECT_FALSE(j.key.has_value());
  EXPECT_EQ(j.dst_gap, DstGapPolicy::kShift);
  EXPECT_FALSE(j.dst_repeat.has_value());
  EXPECT_TRUE(j.partitions.empty());
  EXPECT_TRUE(j.partitions_command.empty());
  EXPECT_EQ(j.max_concurrency, 0);
  EXPECT_EQ(j.misfire_grace, hours(1));
  EXPECT_EQ(j.catchup, Catchup::kAll);
  EXPECT_EQ(j.on_pause, OnPause::kHold);
  EXPECT_EQ(j.backfill.auto_within, seconds(0));
  EXPECT_EQ(j.backfill.horizon, hours(24 * 30));
  EXPECT_EQ(j.alert.max_lag, hours(1));
  EXPECT_EQ(j.alert.webhook, "");
  EXPECT_EQ(j.executor, Executor::kSubprocess);
  EXPECT_FALSE(j.lease_ttl.has_value());
  EXPECT_EQ(j.overlap, Overlap::kQueue);
  EXPECT_EQ(j.retry.max_attempts, 3);
  EXPECT_EQ(j.retry.initial_backoff, seconds(30));
  EXPECT_EQ(j.retry.multiplier, 2.0);
  EXPECT_EQ(j.retry.max_backoff, minutes(10));
  EXPECT_EQ(j.retry.jitter, 0.2);
  EXPECT_EQ(j.retry.max_retry_duration, hours(6));
  EXPECT_TRUE(j.retry_exit_codes.empty());
  EXPECT_TRUE(j.fail_exit_codes.empty());
  EXPECT_TRUE(j.env.empty());
  EXPECT_TRUE(j.env_from_host.empty());
  ASSERT_EQ(j.steps.size(), 1u);
  EXPECT_EQ(j.steps[0].line, 7);
  EXPECT_EQ(j.steps[0].timeout, hours(1));
  EXPECT_FALSE(j.steps[0].idempotent);
  EXPECT_TRUE(j.steps[0].keep_inputs.empty());
  // Unset lease_ttl: three times the longest step timeout.
  EXPECT_EQ(j.EffectiveLeaseTtl(), hours(3));
  // The default key comes from the schedule: once a day means "date".
  auto schedule = Schedule::Create(j.schedule, j.timezone, j.ScheduleOptionsFor());
  ASSERT_TRUE(schedule.ok());
  EXPECT_EQ(j.EffectiveKey(*schedule), PeriodKey::kDate);
}

TEST(ConfigLoad, EveryKeyIsStored) {
  const Config c = MustParse(
      "[server]\n"
      "store = \"sqlite:/var/lib/cl/ledger.db\"\n"
      "listen = \"[::1]:9000\"\n"
      "node_id = \"web-1\"\n"
      "max_workers = 32\n"
      "durability = \"normal\"\n"
      "[[job]]\n"
      "name = \"settle.v2\"\n"
      "schedule = \"*/15 * * * *\"\n"
      "timezone = \"America/New_York\"\n"
      "date_offset_days = -1\n"
      "key = \"date\"\n"
      "dst_gap = \"skip\"\n"
      "dst_repeat = \"last\"\n"
      "partitions_command = [\"../tools/list\", \"--active\"]\n"
      "max_concurrency = 3\n"
      "misfire_grace = \"1h30m\"\n"
      "catchup = \"latest\"\n"
      "on_pause = \"skip\"\n"
      "backfill = { auto_within = \"3d\", horizon = \"60d\" }\n"
      "alert = { max_lag = \"15m\", webhook = \"https://hooks.example.com/cron\" }\n"
      "[[job.step]]\n"
      "name = \"pay\"\n"
      "command = [\"python3\", \"pay.py\", \"{partition}/{period}\", \"--key={run_key}\"]\n"
      "timeout = \"5m\"\n"
      "idempotent = true\n"
      "[[job.step]]\n"
      "name = \"notify\"\n"
      "command = [\"/usr/bin/notify\", \"{business_date}\"]\n");
  EXPECT_EQ(c.server.store, "sqlite:/var/lib/cl/ledger.db");
  EXPECT_EQ(c.server.listen, "[::1]:9000");
  EXPECT_EQ(c.server.node_id, "web-1");
  EXPECT_EQ(c.server.max_workers, 32);
  EXPECT_EQ(c.server.durability, Durability::kNormal);
  const JobConfig& j = c.jobs.at(0);
  EXPECT_EQ(j.name, "settle.v2");
  EXPECT_EQ(j.date_offset_days, -1);
  EXPECT_EQ(j.key, PeriodKey::kDate);
  EXPECT_EQ(j.dst_gap, DstGapPolicy::kSkip);
  EXPECT_EQ(j.dst_repeat, DstRepeatPolicy::kLast);
  EXPECT_EQ(j.partitions_command, (Lines{"/srv/tools/list", "--active"}));
  EXPECT_EQ(j.max_concurrency, 3);
  EXPECT_EQ(j.misfire_grace, minutes(90));
  EXPECT_EQ(j.catchup, Catchup::kLatest);
  EXPECT_EQ(j.on_pause, OnPause::kSkip);
  EXPECT_EQ(j.backfill.auto_within, hours(72));
  EXPECT_EQ(j.backfill.horizon, hours(24 * 60));
  EXPECT_EQ(j.alert.max_lag, minutes(15));
  EXPECT_EQ(j.alert.webhook, "https://hooks.example.com/cron");
  ASSERT_EQ(j.steps.size(), 2u);
  // A bare program name stays for PATH lookup; arguments are never rewritten.
  EXPECT_EQ(j.steps[0].command,
            (Lines{"python3", "pay.py", "{partition}/{period}", "--key={run_key}"}));
  EXPECT_EQ(j.steps[0].timeout, minutes(5));
  EXPECT_TRUE(j.steps[0].idempotent);
  EXPECT_EQ(j.steps[1].command, (Lines{"/usr/bin/notify", "{business_date}"}));
}

TEST(ConfigLoad, RelativePathsResolveAgainstTheConfigFolder) {
  const Config c = MustParse(
      "[server]\nstore = \"sqlite:data/../ledger.db\"\n"
      "[[job]]\nname = \"j\"\nschedule = \"@daily\"\ntimezone = \"UTC\"\n"
      "partitions_command = [\"bin/list\"]\n"
      "[[job.step]]\nname = \"a\"\ncommand = [\"./bin/a\", \"./not-a-program\"]\n"
      "[[job.step]]\nname = \"b\"\ncommand = [\"../common/b\"]\n",
      "/etc/cronledger/conf.d/../cronledger.toml");
  EXPECT_EQ(c.dir, "/etc/cronledger");
  EXPECT_EQ(c.server.store, "sqlite:/etc/cronledger/ledger.db");
  EXPECT_EQ(c.jobs[0].partitions_command, (Lines{"/etc/cronledger/bin/list"}));
  EXPECT_EQ(c.jobs[0].steps[0].command, (Lines{"/etc/cronledger/bin/a", "./not-a-program"}));
  EXPECT_EQ(c.jobs[0].steps[1].command, (Lines{"/etc/common/b"}));
}

TEST(ConfigLoad, ARelativeConfigPathResolvesAgainstTheWorkingDirectory) {
  const Config c = MustParse(std::string(kServer) + kJob, "conf/cronledger.toml");
  const auto expected = (std::filesystem::current_path() / "conf").lexically_normal().string();
  EXPECT_EQ(c.dir, expected);
  EXPECT_EQ(c.server.store, "sqlite:" + expected + "/cl.db");
}

TEST(ConfigLoad, AConfigWithoutJobsIsValid) { EXPECT_TRUE(MustParse(kServer).jobs.empty()); }

// ---- problems: reading and syntax ------------------------------------------------

TEST(ConfigProblems, UnreadableFileIsOneProblemWithTheOsError) {
  auto result = LoadConfig("/nonexistent-dir/cronledger.toml");
  ASSERT_TRUE(std::holds_alternative<ConfigErrors>(result));
  const auto& problems = std::get<ConfigErrors>(result).problems;
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].line, 0);
  EXPECT_EQ(problems[0].ToString(),
            "/nonexistent-dir/cronledger.toml: cannot read the configuration: "
            "No such file or directory");
}

TEST(ConfigProblems, ADirectoryIsUnreadable) {
  const auto dir = std::filesystem::temp_directory_path().string();
  auto result = LoadConfig(dir);
  ASSERT_TRUE(std::holds_alternative<ConfigErrors>(result));
  EXPECT_EQ(std::get<ConfigErrors>(result).ToString(),
            dir + ": cannot read the configuration: Is a directory\n");
}

TEST(ConfigProblems, SyntaxErrorIsOneProblemWithTheParsersLine) {
  const auto p = Problems("[server]\nstore = \"sqlite:x\"\nlisten = = 1\nbogus = 2\n");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0],
            "c.toml:3: TOML syntax error: Error while parsing value: could not determine "
            "value type");
}

TEST(ConfigProblems, DuplicateTomlKeyIsASyntaxError) {
  const auto p = Problems("[server]\nstore = \"sqlite:x\"\nstore = \"sqlite:y\"\n");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].rfind("c.toml:3: TOML syntax error: ", 0), 0u) << p[0];
}

// Found by config_fuzzer with toml++ compiled into it (tests/fuzz): toml++
// 3.3 has undefined behaviour on these (an assertion on a table header
// that starts with a character no key starts with, an unreachable branch
// for some non-ASCII characters where it looks for whitespace;
// marzer/tomlplusplus#190, #295, #301, fixed upstream). Debian's library,
// which cronledger links, reports each as one problem, at its line.
TEST(ConfigProblems, TomlParserEdgeCasesAreProblems) {
  const struct {
    const char* text;
    const char* starts;
  } kCases[] = {
      {"[+a]\n", "c.toml:1: TOML syntax error: "},
      {"[[[a]]]\n", "c.toml:1: TOML syntax error: "},
      {"[server]\nstore = \"sqlite:x\"\n[\xc3\x84]\n", "c.toml:3: TOML syntax error: "},
      {"[s3\xd0\x84" "erver]\nstore = 1\n", "c.toml:1: TOML syntax error: "},
      {"[server]\nstore = 1\xc2\xa7\n", "c.toml:2: TOML syntax error: "},
      // Valid TOML: a line-ending backslash, then U+00A7 (issue #190).
      {"[server]\nstore = \"\"\"\\\n\xc2\xa7.db\"\"\"\n",
       "c.toml:2: server.store: \"\xc2\xa7.db\" is not a store"},
  };
  for (const auto& c : kCases) {
    const auto p = Problems(c.text);
    ASSERT_EQ(p.size(), 1u) << c.text;
    EXPECT_EQ(p[0].rfind(c.starts, 0), 0u) << p[0];
  }
}

// ---- problems: unknown keys at every level ------------------------------------------

TEST(ConfigProblems, UnknownKeysAtEveryLevel) {
  EXPECT_EQ(Problems(std::string("jobs = 1\n") + kServer),
            (Lines{"c.toml:1: jobs: unknown key; did you mean \"job\"?"}));
  EXPECT_EQ(Problems("[server]\nstore = \"sqlite:x\"\nlisen = \"127.0.0.1:1\"\n"),
            (Lines{"c.toml:3: server.lisen: unknown key; did you mean \"listen\"?"}));
  EXPECT_EQ(JobProblems("schedul = \"0 9 * * *\"\n"),
            (Lines{"c.toml:7: job[j].schedul: unknown key; did you mean \"schedule\"?"}));
  EXPECT_EQ(JobProblems("", "timout = \"5m\"\n"),
            (Lines{"c.toml:10: job[j].step[s].timout: unknown key; did you mean \"timeout\"?"}));
  EXPECT_EQ(JobProblems("backfill = { horizn = \"30d\" }\n"),
            (Lines{"c.toml:7: job[j].backfill.horizn: unknown key; did you mean \"horizon\"?"}));
  EXPECT_EQ(JobProblems("alert = { max_lag = \"1h\", colour = \"red\" }\n"),
            (Lines{"c.toml:7: job[j].alert.colour: unknown key"}));
  // A table header for a job key is the same key, just written differently.
  EXPECT_EQ(Problems(std::string(kServer) + kJob + "[job.backfill]\nhorizon = \"1d\"\nx = 1\n"),
            (Lines{"c.toml:12: job[j].backfill.x: unknown key"}));
}

TEST(ConfigLoad, RetentionDefaultsTo400DaysAndMustBePositive) {
  EXPECT_EQ(MustParse(std::string(kServer)).server.retention, hours(24 * 400));
  EXPECT_EQ(MustParse(std::string(kServer) + "retention = \"90d\"\n").server.retention,
            hours(24 * 90));
  EXPECT_EQ(Problems(std::string(kServer) + "retention = \"0s\"\n"),
            (Lines{"c.toml:3: server.retention: must be greater than 0, got \"0s\""}));
}

TEST(ConfigLoad, APostgresqlStoreIsKeptAsWritten) {
  EXPECT_EQ(MustParse("[server]\nstore = \"postgresql://cl@db.internal:5433/cl\"\n").server.store,
            "postgresql://cl@db.internal:5433/cl");
}

TEST(ConfigLoad, MetricsPublicIsABoolean) {
  EXPECT_TRUE(MustParse(std::string(kServer) + "metrics_public = true\n").server.metrics_public);
  EXPECT_FALSE(MustParse(std::string(kServer) + "metrics_public = false\n").server.metrics_public);
  EXPECT_EQ(Problems(std::string(kServer) + "metrics_public = \"yes\"\n"),
            (Lines{"c.toml:3: server.metrics_public: expected a boolean (true or false), got a "
                   "string"}));
}

// ---- problems: types and required keys -------------------------------------------------

TEST(ConfigProblems, TypesAreChecked) {
  EXPECT_EQ(Problems("[server]\nstore = \"sqlite:x\"\nmax_workers = \"8\"\n"),
            (Lines{"c.toml:3: server.max_workers: expected an integer, got a string"}));
  EXPECT_EQ(Problems("[server]\nstore = 5\n"),
            (Lines{"c.toml:2: server.store: expected a string, got an integer"}));
  EXPECT_EQ(Problems("server = \"x\"\n"),
            (Lines{"c.toml:1: server: expected a table, got a string"}));
  EXPECT_EQ(JobProblems("", "idempotent = \"yes\"\n"),
            (Lines{"c.toml:10: job[j].step[s].idempotent: expected a boolean (true or false), "
                   "got a string"}));
  EXPECT_EQ(JobProblems("partitions = \"acme\"\n"),
            (Lines{"c.toml:7: job[j].partitions: expected an array of strings, got a string"}));
  EXPECT_EQ(JobProblems("partitions = [\"acme\", 7]\n"),
            (Lines{"c.toml:7: job[j].partitions: element 2: expected a string, got an integer"}));
  EXPECT_EQ(JobProblems("catchup = true\n"),
            (Lines{"c.toml:7: job[j].catchup: expected a string (\"all\", \"latest\" or \"none\"), "
                   "got a boolean"}));
  EXPECT_EQ(JobProblems("misfire_grace = 1.5\n"),
            (Lines{"c.toml:7: job[j].misfire_grace: expected a duration string such as \"30s\", "
                   "got a floating-point number"}));
  EXPECT_EQ(JobProblems("backfill = \"3d\"\n"),
            (Lines{"c.toml:7: job[j].backfill: expected a table, got a string"}));
  EXPECT_EQ(Problems(std::string(kServer) + "[job]\nname = \"x\"\n"),
            (Lines{"c.toml:3: job: expected an array of tables (write [[job]] sections), got a "
                   "table"}));
}

TEST(ConfigProblems, StepAsATableIsATypeError) {
  const std::string text = std::string(kServer) +
                           "[[job]]\nname = \"j\"\nschedule = \"@daily\"\ntimezone = \"UTC\"\n"
                           "step = { name = \"s\", command = [\"x\"] }\n";
  EXPECT_EQ(Problems(text), (Lines{"c.toml:7: job[j].step: expected an array of tables (write "
                                   "[[job.step]] sections), got a table"}));
}

TEST(ConfigProblems, MissingRequiredKeysPointAtTheirTable) {
  // Problems on one line come in key order (the table's, alphabetical).
  EXPECT_EQ(Problems("[[job]]\n"),
            (Lines{"c.toml:1: job[1].name: required key is missing",
                   "c.toml:1: job[1].schedule: required key is missing",
                   "c.toml:1: job[1].timezone: required key is missing",
                   "c.toml:1: job[1].step: at least one [[job.step]] section is required",
                   "c.toml:1: server: required table [server] is missing"}));
  EXPECT_EQ(Problems("[server]\nlisten = \"127.0.0.1:1\"\n"),
            (Lines{"c.toml:1: server.store: required key is missing"}));
  EXPECT_EQ(Problems(std::string(kServer) + kJob + "[[job.step]]\nidempotent = true\n"),
            (Lines{"c.toml:10: job[j].step[2].name: required key is missing",
                   "c.toml:10: job[j].step[2].command: required key is missing: steps of "
                   "executor \"subprocess\" run a command"}));
}

// ---- problems: server ---------------------------------------------------------------------

TEST(ConfigProblems, Store) {
  EXPECT_EQ(Problems("[server]\nstore = \"cronledger.db\"\n"),
            (Lines{"c.toml:2: server.store: \"cronledger.db\" is not a store; use sqlite:FILE, "
                   "e.g. \"sqlite:cronledger.db\", or postgresql://USER@HOST/DB"}));
  EXPECT_EQ(Problems("[server]\nstore = \"sqlite:\"\n"),
            (Lines{"c.toml:2: server.store: \"sqlite:\" names no file; use sqlite:FILE, e.g. "
                   "\"sqlite:cronledger.db\""}));
  // A mistyped scheme: the rest, which may hold a password, is not shown.
  for (const char* url : {"postgresq://u:pw2secret@h/db", "postgresql:/u:pw1secret@h/db"}) {
    const auto p = Problems(std::string("[server]\nstore = \"") + url + "\"\n");
    ASSERT_EQ(p.size(), 1u) << url;
    EXPECT_EQ(p[0].find("secret"), std::string::npos) << p[0];
    EXPECT_NE(p[0].find("(the rest not shown) is not a store"), std::string::npos) << p[0];
  }
  // libpq would read these as its defaults: the user's name as database.
  for (const char* url : {"postgresql://", "postgres://cl@db.internal:5432",
                          "postgresql://cl@db.internal/"}) {
    EXPECT_EQ(Problems(std::string("[server]\nstore = \"") + url + "\"\n"),
              (Lines{"c.toml:2: server.store: the PostgreSQL URL names no database; use "
                     "postgresql://USER@HOST/DB"}))
        << url;
  }
  // What libpq cannot read, without the password it may quote.
  const auto bad = Problems("[server]\nstore = \"postgresql://cl:s3cr%zzet@db/cl\"\n");
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_EQ(bad[0].rfind("c.toml:2: server.store: the PostgreSQL URL cannot be read (", 0), 0u)
      << bad[0];
  EXPECT_EQ(bad[0].find("s3cr"), std::string::npos) << bad[0];
  // Named in the path, or as a parameter; a local socket is fine.
  for (const char* url : {"postgresql://cl@db.internal/cronledger", "postgresql:///cronledger",
                          "postgresql://db.internal?dbname=cronledger"}) {
    EXPECT_EQ(Problems(std::string("[server]\nstore = \"") + url + "\"\n"), Lines{}) << url;
  }
}

TEST(ConfigProblems, ListenMustBeLoopbackWithAPort) {
  const auto listen = [](const std::string& value) {
    return Problems(std::string(kServer) + "listen = \"" + value + "\"\n");
  };
  for (const char* ok : {"127.0.0.1:8377", "127.1.2.3:1", "localhost:65535", "[::1]:8377"}) {
    EXPECT_EQ(listen(ok), Lines{}) << ok;
  }
  EXPECT_EQ(listen("0.0.0.0:8377"),
            (Lines{"c.toml:3: server.listen: host \"0.0.0.0\" is not a loopback address: "
                   "listening beyond this machine needs [[auth.token]] entries; without them "
                   "serve listens only on 127.x.x.x, ::1 or localhost"}));
  EXPECT_EQ(listen("example.com:80").size(), 1u);
  EXPECT_EQ(listen("[::]:80").size(), 1u);
  EXPECT_EQ(listen("127.0.0.1"),
            (Lines{"c.toml:3: server.listen: \"127.0.0.1\" has no port; use host:port, e.g. "
                   "\"127.0.0.1:8377\""}));
  EXPECT_EQ(listen("127.0.0.1:0"), Lines{});  // any free port
  EXPECT_EQ(listen("127.0.0.1:65536"),
            (Lines{"c.toml:3: server.listen: port \"65536\" must be a number from 0 (any free "
                   "port) to 65535"}));
  EXPECT_EQ(listen("::1:80"),
            (Lines{"c.toml:3: server.listen: \"::1:80\": write an IPv6 address in brackets, e.g. "
                   "\"[::1]:8377\""}));
}

// ---- [[auth.token]] -------------------------------------------------------------------------

// kServer, then the [[auth.token]] tables of `tokens` (line 3 on).
std::string WithTokens(const std::string& tokens) { return std::string(kServer) + tokens; }

constexpr const char* kTwoTokens =
    "[[auth.token]]\n"              // 3
    "name = \"dash\"\n"             // 4
    "role = \"read\"\n"             // 5
    "secret_env = \"CL_DASH\"\n"    // 6
    "[[auth.token]]\n"              // 7
    "name = \"oncall\"\n"           // 8
    "role = \"operate\"\n"          // 9
    "secret_env = \"CL_ONCALL\"\n";  // 10

TEST(ConfigAuth, TokensAreReadWithTheirRolesAndNoSecret) {
  const Config none = MustParse(kServer);
  EXPECT_TRUE(none.auth.tokens.empty());
  const Config c = MustParse(WithTokens(kTwoTokens) +
                             "[[auth.token]]\nname = \"w1\"\nrole = \"worker\"\n"
                             "secret_env = \"CRONLEDGER_W1\"\n");
  ASSERT_EQ(c.auth.tokens.size(), 3u);
  EXPECT_EQ(c.auth.tokens[0].name, "dash");
  EXPECT_EQ(c.auth.tokens[0].role, TokenRole::kRead);
  EXPECT_EQ(c.auth.tokens[0].secret_env, "CL_DASH");
  EXPECT_EQ(c.auth.tokens[0].line, 3);
  EXPECT_EQ(c.auth.tokens[1].role, TokenRole::kOperate);
  EXPECT_EQ(c.auth.tokens[2].role, TokenRole::kWorker);
  EXPECT_EQ(c.auth.tokens[2].secret_env, "CRONLEDGER_W1");
}

TEST(ConfigAuth, EachMistakeInATokenIsNamed) {
  EXPECT_EQ(Problems(WithTokens("[[auth.token]]\n")),
            (Lines{"c.toml:3: auth.token[1].name: required key is missing",
                   "c.toml:3: auth.token[1].role: required key is missing",
                   "c.toml:3: auth.token[1].secret_env: required key is missing"}));
  EXPECT_EQ(Problems(WithTokens("[[auth.token]]\nname = \"a\"\nrole = \"admin\"\n"
                                "secret_env = \"X_1\"\n")),
            (Lines{"c.toml:5: auth.token[a].role: \"admin\" is not allowed; use \"read\", "
                   "\"operate\" or \"worker\""}));
  EXPECT_EQ(Problems(WithTokens("[[auth.token]]\nname = \"a\"\nrole = \"read\"\n"
                                "secret_env = \"s3cr3t-value!\"\n")),
            (Lines{"c.toml:6: auth.token[a].secret_env: \"s3cr3t-value!\" is not a variable "
                   "name: use A-Z a-z 0-9 _, not starting with a digit (the secret itself goes in "
                   "that environment variable, never in this file)"}));
  EXPECT_EQ(Problems(WithTokens("[[auth.token]]\nname = \"a\"\nrole = \"read\"\n"
                                "secret_env = \"X\"\nsecret = \"abc\"\n")),
            (Lines{"c.toml:7: auth.token[a].secret: unknown key"}));
  EXPECT_EQ(Problems(WithTokens("[auth]\ntokens = []\n")),
            (Lines{"c.toml:4: auth.tokens: unknown key; did you mean \"token\"?"}));
}

TEST(ConfigAuth, NamesAndSecretVariablesAreUnique) {
  EXPECT_EQ(Problems(WithTokens(std::string(kTwoTokens) +
                                "[[auth.token]]\nname = \"dash\"\nrole = \"read\"\n"
                                "secret_env = \"CL_ONCALL\"\n")),
            (Lines{"c.toml:12: auth.token[dash].name: duplicate token name \"dash\" (first "
                   "defined at line 3)",
                   "c.toml:14: auth.token[dash].secret_env: \"CL_ONCALL\" is also the secret of "
                   "token \"oncall\": each token needs its own secret"}));
}

TEST(ConfigAuth, ANonLoopbackListenNeedsTokens) {
  const std::string wide = "[server]\nstore = \"sqlite:cl.db\"\nlisten = \"0.0.0.0:8377\"\n";
  EXPECT_EQ(Problems(wide).size(), 1u);
  const Config c = MustParse(wide + kTwoTokens);
  EXPECT_EQ(c.server.listen, "0.0.0.0:8377");
  EXPECT_EQ(ListenProblem("0.0.0.0:1", true), "");
  EXPECT_EQ(ListenProblem("127.0.0.1:1", false), "");
  EXPECT_EQ(ListenProblem("[::]:1", false),
            "host \"::\" is not a loopback address: listening beyond this machine needs "
            "[[auth.token]] entries; without them serve listens only on 127.x.x.x, ::1 or "
            "localhost");
  EXPECT_EQ(ListenProblem("10.0.0.1", true),
            "\"10.0.0.1\" has no port; use host:port, e.g. \"127.0.0.1:8377\"");
}

TEST(ConfigAuth, SecretsComeFromTheEnvironmentAndAreNeverInMessages) {
  const Config c = MustParse(WithTokens(kTwoTokens), "c.toml");
  std::map<std::string, std::string> env = {{"CL_DASH", "dash-secret-0123456789"},
                                            {"CL_ONCALL", "oncall-secret-0123456789"}};
  const auto lookup = [&](const char* name) -> const char* {
    const auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  auto ok = ResolveTokenSecrets(c, lookup);
  ASSERT_TRUE(std::holds_alternative<std::vector<TokenSecret>>(ok));
  const auto& secrets = std::get<std::vector<TokenSecret>>(ok);
  ASSERT_EQ(secrets.size(), 2u);
  EXPECT_EQ(secrets[0].token->name, "dash");
  EXPECT_EQ(secrets[0].secret, "dash-secret-0123456789");
  EXPECT_EQ(secrets[1].token->name, "oncall");

  const auto problems = [&]() {
    auto r = ResolveTokenSecrets(c, lookup);
    std::vector<std::string> out;
    if (auto* e = std::get_if<ConfigErrors>(&r)) {
      for (const auto& p : e->problems) out.push_back(p.ToString());
    }
    return out;
  };
  env.erase("CL_DASH");
  env["CL_ONCALL"] = "";
  EXPECT_EQ(problems(),
            (Lines{"c.toml:3: auth.token[dash].secret_env: environment variable \"CL_DASH\" is "
                   "not set: it must hold the secret of token \"dash\"",
                   "c.toml:7: auth.token[oncall].secret_env: environment variable \"CL_ONCALL\" "
                   "is empty: it must hold the secret of token \"oncall\""}));
  env["CL_DASH"] = "short-secret";
  env["CL_ONCALL"] = "oncall-secret-0123456789";
  EXPECT_EQ(problems(),
            (Lines{"c.toml:3: auth.token[dash].secret_env: the secret in \"CL_DASH\" is 12 bytes; "
                   "use at least 16 (e.g. `openssl rand -hex 32`)"}));
  env["CL_DASH"] = env["CL_ONCALL"];
  EXPECT_EQ(problems(),
            (Lines{"c.toml:7: auth.token[oncall].secret_env: \"CL_ONCALL\" holds the same secret "
                   "as \"CL_DASH\" (token \"dash\"): each token needs its own secret"}));
}

TEST(ConfigProblems, ServerRangesAndChoices) {
  EXPECT_EQ(Problems(std::string(kServer) + "max_workers = 0\n"),
            (Lines{"c.toml:3: server.max_workers: must be between 1 and 1024, got 0"}));
  EXPECT_EQ(Problems(std::string(kServer) + "max_workers = 1025\n"),
            (Lines{"c.toml:3: server.max_workers: must be between 1 and 1024, got 1025"}));
  EXPECT_EQ(Problems(std::string(kServer) + "durability = \"fast\"\n"),
            (Lines{"c.toml:3: server.durability: \"fast\" is not allowed; use \"full\" or "
                   "\"normal\""}));
  EXPECT_EQ(Problems(std::string(kServer) + "node_id = \"web 1\"\n"),
            (Lines{"c.toml:3: server.node_id: \"web 1\" is not a node id: use 1-128 characters "
                   "without spaces"}));
  // Characters, as the message says, not bytes: 128 two-byte ones are fine.
  std::string accented;
  for (int i = 0; i < 128; ++i) accented += "\u00e9";
  EXPECT_EQ(Problems(std::string(kServer) + "node_id = \"" + accented + "\"\n"), Lines{});
  EXPECT_EQ(Problems(std::string(kServer) + "node_id = \"" + accented + "e\"\n").size(), 1u);
}

// The API's limits (docs/api.md, Limits): defaults, values, ranges.
TEST(ConfigProblems, TheApiLimitsHaveDefaultsAndRanges) {
  const Config defaults = MustParse(kServer);
  EXPECT_EQ(defaults.server.max_body, 0u) << "unset: the API derives it from output_cap";
  EXPECT_EQ(defaults.server.request_timeout, std::chrono::seconds(30));
  EXPECT_EQ(defaults.server.max_connections, 512);
  EXPECT_EQ(defaults.server.max_connections_per_peer, 64);

  const Config set = MustParse(std::string(kServer) +
                               "max_body = \"2MiB\"\nrequest_timeout = \"10s\"\n"
                               "max_connections = 100\nmax_connections_per_peer = 4\n");
  EXPECT_EQ(set.server.max_body, 2u << 20);
  EXPECT_EQ(set.server.request_timeout, std::chrono::seconds(10));
  EXPECT_EQ(set.server.max_connections, 100);
  EXPECT_EQ(set.server.max_connections_per_peer, 4);

  EXPECT_EQ(Problems(std::string(kServer) + "max_connections = 7\n"),
            (Lines{"c.toml:3: server.max_connections: must be between 8 and 65536, got 7"}));
  EXPECT_EQ(Problems(std::string(kServer) + "max_connections_per_peer = 0\n"),
            (Lines{"c.toml:3: server.max_connections_per_peer: must be between 1 and 65536, got "
                   "0"}));
  for (const char* bad :
       {"max_body = \"512\"\n", "request_timeout = \"0s\"\n", "request_timeout = 30\n"}) {
    const Lines problems = Problems(std::string(kServer) + bad);
    ASSERT_EQ(problems.size(), 1u) << bad;
    EXPECT_EQ(problems[0].rfind("c.toml:3: server.", 0), 0u) << problems[0];
  }
}

// ---- problems: jobs -------------------------------------------------------------------------

TEST(ConfigProblems, AStartDateIsABusinessDateAsTextOrTomlsOwnDate) {
  const std::string server = kServer;
  const auto job = [&](const std::string& line) {
    return server + "[[job]]\nname = \"j\"\nschedule = \"0 9 * * *\"\ntimezone = \"UTC\"\n" + line +
           "\n[[job.step]]\nname = \"s\"\ncommand = [\"x\"]\n";
  };
  EXPECT_FALSE(MustParse(job("")).jobs[0].start_date.has_value());
  const auto want = std::chrono::year_month_day{std::chrono::year{2026}, std::chrono::November,
                                                std::chrono::day{20}};
  EXPECT_EQ(MustParse(job("start_date = \"2026-11-20\"")).jobs[0].start_date, want);
  EXPECT_EQ(MustParse(job("start_date = 2026-11-20")).jobs[0].start_date, want);
  EXPECT_EQ(Problems(job("start_date = \"2026-02-30\"")),
            (Lines{"c.toml:7: job[j].start_date: \"2026-02-30\" is not a date of the calendar"}));
  for (const char* bad :
       {"\"2026-11-20T00:00:00Z\"", "\"20261120\"", "\"1969-12-31\"", "\"yesterday\""}) {
    EXPECT_EQ(Problems(job(std::string("start_date = ") + bad)),
              (Lines{std::string("c.toml:7: job[j].start_date: ") + bad +
                     " is not a business date: write YYYY-MM-DD from 1970 on, e.g. "
                     "\"2026-11-20\""}))
        << bad;
  }
  EXPECT_EQ(Problems(job("start_date = 20261120")),
            (Lines{"c.toml:7: job[j].start_date: expected a string, got an integer"}));
}

TEST(ConfigProblems, ScheduleErrorsComeFromTheScheduleEngineVerbatim) {
  const std::string server = kServer;
  const auto job = [&](const std::string& schedule, const std::string& zone) {
    return Problems(server + "[[job]]\nname = \"j\"\nschedule = \"" + schedule +
                    "\"\ntimezone = \"" + zone +
                    "\"\n[[job.step]]\nname = \"s\"\ncommand = [\"x\"]\n");
  };
  EXPECT_EQ(job("61 9 * * *", "UTC"),
            (Lines{"c.toml:5: job[j].schedule: minute: \"61\" is out of range 0-59 (field 1, "
                   "column 1)"}));
  EXPECT_EQ(job("0 0 30 2 *", "UTC"),
            (Lines{"c.toml:5: job[j].schedule: expression \"0 0 30 2 *\" never fires: no date "
                   "matches its day and month fields"}));
  EXPECT_EQ(job("0 9 * * *", "Asia/Seol"),
            (Lines{"c.toml:6: job[j].timezone: unknown timezone \"Asia/Seol\"; did you mean "
                   "\"Asia/Seoul\" or \"Asia/Oral\"?"}));
  // Both wrong: both reported.
  const auto both = job("0 25 * * *", "Mars/Olympus");
  ASSERT_EQ(both.size(), 2u);
  EXPECT_EQ(both[0].rfind("c.toml:5: job[j].schedule: hour: \"25\" is out of range 0-23", 0), 0u)
      << both[0];
  EXPECT_EQ(both[1], "c.toml:6: job[j].timezone: unknown timezone \"Mars/Olympus\"");
}

TEST(ConfigProblems, ScheduleIsCheckedEvenWithoutATimezone) {
  EXPECT_EQ(Problems(std::string(kServer) + "[[job]]\nname = \"j\"\nschedule = \"* * *\"\n"
                                            "[[job.step]]\nname = \"s\"\ncommand = [\"x\"]\n"),
            (Lines{"c.toml:3: job[j].timezone: required key is missing",
                   "c.toml:5: job[j].schedule: expected 5 fields (minute hour day-of-month month "
                   "day-of-week) or 6 (with a leading second field), found 3"}));
}

TEST(ConfigProblems, NamesAndDuplicates) {
  const std::string server = kServer;
  EXPECT_EQ(
      Problems(server + "[[job]]\nname = \"daily report\"\nschedule = \"@daily\"\n"
                        "timezone = \"UTC\"\n[[job.step]]\nname = \"s\"\ncommand = [\"x\"]\n"),
      (Lines{"c.toml:4: job[1].name: \"daily report\" is not a valid name: use 1-64 "
             "characters from A-Z a-z 0-9 . _ -, not . or .."}));
  EXPECT_EQ(
      Problems(server + "[[job]]\nname = \"..\"\nschedule = \"@daily\"\n"
                        "timezone = \"UTC\"\n[[job.step]]\nname = \"s\"\ncommand = [\"x\"]\n"),
      (Lines{"c.toml:4: job[1].name: \"..\" is not a valid name: use 1-64 characters from A-Z "
             "a-z 0-9 . _ -, not . or .."}));
  EXPECT_EQ(Problems(server + kJob + kJob),
            (Lines{"c.toml:11: job[j].name: duplicate job name \"j\" (first defined at line 3)"}));
  EXPECT_EQ(JobProblems("", "[[job.step]]\nname = \"s\"\ncommand = [\"y\"]\n"),
            (Lines{"c.toml:11: job[j].step[s].name: duplicate step name \"s\" in this job"}));
  EXPECT_EQ(JobProblems("", "[[job.step]]\nname = \"\"\ncommand = [\"y\"]\n"),
            (Lines{"c.toml:11: job[j].step[2].name: \"\" is not a valid name: use 1-64 "
                   "characters from A-Z a-z 0-9 . _ -, not . or .."}));
  EXPECT_EQ(
      JobProblems("", "[[job.step]]\nname = \"" + std::string(65, 'a') + "\"\ncommand = [\"y\"]\n")
          .size(),
      1u);
}

TEST(ConfigProblems, JobRangesAndChoices) {
  EXPECT_EQ(JobProblems("date_offset_days = 367\n"),
            (Lines{"c.toml:7: job[j].date_offset_days: must be between -366 and 366, got 367"}));
  EXPECT_EQ(JobProblems("max_concurrency = 0\n"),
            (Lines{"c.toml:7: job[j].max_concurrency: must be between 1 and 10000, got 0"}));
  EXPECT_EQ(JobProblems("key = \"week\"\n"),
            (Lines{"c.toml:7: job[j].key: \"week\" is not allowed; use \"date\" or \"slot\""}));
  EXPECT_EQ(JobProblems("dst_gap = \"Shift\"\n"),
            (Lines{"c.toml:7: job[j].dst_gap: \"Shift\" is not allowed; use \"shift\" or "
                   "\"skip\""}));
  EXPECT_EQ(JobProblems("dst_repeat = \"all\"\n"),
            (Lines{"c.toml:7: job[j].dst_repeat: \"all\" is not allowed; use \"first\", \"last\" "
                   "or \"both\""}));
  EXPECT_EQ(JobProblems("on_pause = \"drop\"\n"),
            (Lines{"c.toml:7: job[j].on_pause: \"drop\" is not allowed; use \"hold\" or "
                   "\"skip\""}));
  EXPECT_EQ(JobProblems("alert = { webhook = \"ftp://x\" }\n"),
            (Lines{"c.toml:7: job[j].alert.webhook: \"ftp://x\" is not an http:// or https:// "
                   "URL"}));
}

TEST(ConfigProblems, Partitions) {
  EXPECT_EQ(JobProblems("partitions = [\"acme\", \"ac me\", \"acme\", \"ok:1@x.y_z-2\"]\n"),
            (Lines{"c.toml:7: job[j].partitions: \"ac me\" is not a valid partition id: use "
                   "1-128 characters from A-Z a-z 0-9 . _ - : @, not starting with - and not . "
                   "or ..",
                   "c.toml:7: job[j].partitions: duplicate partition \"acme\""}));
  EXPECT_EQ(JobProblems("partitions = []\n"),
            (Lines{"c.toml:7: job[j].partitions: must list at least one partition; omit the key "
                   "for the single partition \"default\""}));
  EXPECT_EQ(JobProblems("partitions_command = []\n"),
            (Lines{"c.toml:7: job[j].partitions_command: must not be empty: give the program and "
                   "its arguments, e.g. [\"./bin/report\"]"}));
  // Each element on its own line: the line of the bad element.
  EXPECT_EQ(JobProblems("partitions = [\n  \"a\",\n  \"b/c\",\n]\n"),
            (Lines{"c.toml:9: job[j].partitions: \"b/c\" is not a valid partition id: use 1-128 "
                   "characters from A-Z a-z 0-9 . _ - : @, not starting with - and not . or .."}));
}

// A job named ".." wrote its attempt logs beside log_dir, not in it; a
// partition "-rf" is an option to any command it is handed to.
TEST(ConfigProblems, NamesAndIdsThatArePathsOrOptionsAreRefused) {
  for (const char* id : {"..", ".", "-rf", "-"}) {
    const auto problems = JobProblems(std::string("partitions = [\"") + id + "\"]\n");
    ASSERT_EQ(problems.size(), 1u) << id;
    EXPECT_NE(problems[0].find("is not a valid partition id"), std::string::npos) << problems[0];
  }
  EXPECT_TRUE(IsValidPartitionId("a-"));
  EXPECT_TRUE(IsValidPartitionId("..a"));
  EXPECT_TRUE(IsValidPartitionId(".hidden"));
  EXPECT_FALSE(IsValidName(".."));
  EXPECT_FALSE(IsValidName("."));
  EXPECT_TRUE(IsValidName("-a"));  // a name is never an argument of its own
  EXPECT_TRUE(IsValidName("v1.2"));
}

TEST(ConfigProblems, ContradictorySettings) {
  EXPECT_EQ(JobProblems("partitions = [\"a\"]\npartitions_command = [\"./list\"]\n"),
            (Lines{"c.toml:8: job[j].partitions_command: partitions and partitions_command "
                   "cannot both be set; keep one"}));
  EXPECT_EQ(JobProblems("backfill = { auto_within = \"3d\", horizon = \"2d\" }\n"),
            (Lines{"c.toml:7: job[j].backfill.auto_within: auto_within (3d) must not exceed "
                   "horizon (2d)"}));
  // Against the default horizon (30d) too.
  EXPECT_EQ(JobProblems("backfill = { auto_within = \"31d\" }\n"),
            (Lines{"c.toml:7: job[j].backfill.auto_within: auto_within (31d) must not exceed "
                   "horizon (30d)"}));
  EXPECT_EQ(JobProblems("backfill = { auto_within = \"30d\" }\n"), Lines{});
}

TEST(ConfigProblems, StepCommands) {
  const auto step = [](const std::string& command) {
    return Problems(std::string(kServer) +
                    "[[job]]\nname = \"j\"\nschedule = \"@daily\"\ntimezone = \"UTC\"\n"
                    "[[job.step]]\nname = \"s\"\ncommand = " +
                    command + "\n");
  };
  EXPECT_EQ(step("[]"), (Lines{"c.toml:9: job[j].step[s].command: must not be empty: give the "
                               "program and its arguments, e.g. [\"./bin/report\"]"}));
  EXPECT_EQ(step("[\"./x\", \"\"]"),
            (Lines{"c.toml:9: job[j].step[s].command: element 2 is an empty string"}));
  EXPECT_EQ(step("[\"./x\", \"--date={date}\"]"),
            (Lines{"c.toml:9: job[j].step[s].command: unknown placeholder \"{date}\" in element "
                   "2; the placeholders are {partition}, {business_date}, {period} and "
                   "{run_key}"}));
  EXPECT_EQ(step("\"./x {partition}\""),
            (Lines{"c.toml:9: job[j].step[s].command: expected an array of strings, got a "
                   "string"}));
  EXPECT_EQ(step("[\"./x\", 1]"),
            (Lines{"c.toml:9: job[j].step[s].command: element 2: expected a string, got an "
                   "integer"}));
  // All four placeholders, several in one element, and a lone brace are fine.
  EXPECT_EQ(step("[\"./x\", \"{partition}/{business_date}\", \"{period}\", \"{run_key}\", "
                 "\"a{b\", \"}\"]"),
            Lines{});
}

TEST(ConfigProblems, DurationsInKeys) {
  EXPECT_EQ(JobProblems("misfire_grace = \"90\"\n"),
            (Lines{"c.toml:7: job[j].misfire_grace: \"90\" has no unit; use e.g. \"90s\""}));
  EXPECT_EQ(JobProblems("misfire_grace = 90\n"),
            (Lines{"c.toml:7: job[j].misfire_grace: expected a duration string, got the integer "
                   "90; use e.g. \"90s\""}));
  EXPECT_EQ(JobProblems("misfire_grace = \"0s\"\n"),
            (Lines{"c.toml:7: job[j].misfire_grace: must be greater than 0, got \"0s\""}));
  // A key that must be above 0 says so for a negative value too, not "0 or more".
  EXPECT_EQ(JobProblems("", "timeout = \"-5m\"\n"),
            (Lines{"c.toml:10: job[j].step[s].timeout: must be greater than 0, got \"-5m\""}));
  EXPECT_EQ(JobProblems("", "timeout = \"1500ms\"\n"),
            (Lines{"c.toml:10: job[j].step[s].timeout: \"1500ms\" is not a whole number of "
                   "seconds"}));
  EXPECT_EQ(JobProblems("alert = { max_lag = \"-5m\" }\n"),
            (Lines{"c.toml:7: job[j].alert.max_lag: must be greater than 0, got \"-5m\""}));
  EXPECT_EQ(JobProblems("backfill = { horizon = \"4w\" }\n"),
            (Lines{"c.toml:7: job[j].backfill.horizon: \"4w\" has an unknown unit \"w\"; use ms, "
                   "s, m, h or d"}));
  EXPECT_EQ(JobProblems("backfill = { auto_within = \"0s\" }\n"), Lines{});
}

TEST(ConfigProblems, EveryProblemIsReportedInFileOrder) {
  const std::string text =
      "colour = \"blue\"\n"               // 1
      "[server]\n"                        // 2
      "store = \"postgresql://db/cl\"\n"  // 3
      "listen = \"0.0.0.0:8377\"\n"       // 4
      "[[job]]\n"                         // 5
      "name = \"a\"\n"                    // 6
      "schedule = \"0 9 * * *\"\n"        // 7
      "timezone = \"Asia/Seol\"\n"        // 8
      "misfire_grace = \"2 hours\"\n"     // 9
      "[[job.step]]\n"                    // 10
      "name = \"gen\"\n"                  // 11
      "command = []\n"                    // 12
      "[[job]]\n"                         // 13
      "name = \"a\"\n"                    // 14
      "schedule = \"@hourly\"\n"          // 15
      "timezone = \"UTC\"\n"              // 16
      "[[job.step]]\n"                    // 17
      "command = [\"x\"]\n";              // 18
  EXPECT_EQ(Problems(text),
            (Lines{
                "c.toml:1: colour: unknown key",
                "c.toml:4: server.listen: host \"0.0.0.0\" is not a loopback address: "
                "listening beyond this machine needs [[auth.token]] entries; without them serve "
                "listens only on 127.x.x.x, ::1 or localhost",
                "c.toml:8: job[a].timezone: unknown timezone \"Asia/Seol\"; did you mean "
                "\"Asia/Seoul\" or \"Asia/Oral\"?",
                "c.toml:9: job[a].misfire_grace: \"2 hours\" contains a space; write e.g. "
                "\"1h30m\"",
                "c.toml:12: job[a].step[gen].command: must not be empty: give the program and its "
                "arguments, e.g. [\"./bin/report\"]",
                "c.toml:14: job[a].name: duplicate job name \"a\" (first defined at line 5)",
                "c.toml:17: job[a].step[1].name: required key is missing",
            }));
  auto result = ParseConfig(text, "c.toml");
  ASSERT_TRUE(std::holds_alternative<ConfigErrors>(result));
  const std::string all = std::get<ConfigErrors>(result).ToString();
  EXPECT_EQ(std::count(all.begin(), all.end(), '\n'), 7);
}

// ---- execution: server logs and drain, executor, lease, retry, exit codes, env -----------

TEST(ConfigExecution, EveryExecutionKeyIsStored) {
  const Config c = MustParse(
      "[server]\n"
      "store = \"sqlite:cl.db\"\n"
      "drain_timeout = \"0s\"\n"
      "log_dir = \"../var/log/cl/\"\n"
      "log_retention = \"7d\"\n"
      "output_cap = \"64KiB\"\n"
      "[[job]]\n"
      "name = \"settle\"\n"
      "schedule = \"0 9 * * *\"\n"
      "timezone = \"UTC\"\n"
      "executor = \"inprocess\"\n"
      "lease_ttl = \"15m\"\n"
      "overlap = \"skip\"\n"
      "retry = { max_attempts = 5, initial_backoff = \"500ms\", multiplier = 3, "
      "max_backoff = \"1m30s\", jitter = 0.5, max_retry_duration = \"2h\" }\n"
      "retry_exit_codes = [75, 1]\n"
      "fail_exit_codes = [64, 65, 255]\n"
      "env = { ZED = \"last letter\", ALPHA = \"\", _mid_1 = \"x=y\" }\n"
      "env_from_host = [\"SMTP_PASSWORD\", \"aws_region\"]\n"
      "[[job.step]]\n"
      "name = \"pay\"\n"
      "timeout = \"10m\"\n"
      "keep_inputs = [\"data/{business_date}/orders.csv\", "
      "\"/srv/in/{partition}-{run_key}.json\"]\n"
      "[[job.step]]\n"
      "name = \"notify\"\n"
      "command = [\"./bin/notify\", \"{period}\"]\n"
      "timeout = \"14m59s\"\n");
  EXPECT_EQ(c.server.drain_timeout, seconds(0));
  EXPECT_EQ(c.server.log_dir, "/srv/var/log/cl");
  EXPECT_EQ(c.server.log_retention, hours(24 * 7));
  EXPECT_EQ(c.server.output_cap, 64u * 1024);
  const JobConfig& j = c.jobs.at(0);
  EXPECT_EQ(j.executor, Executor::kInprocess);
  EXPECT_EQ(j.lease_ttl, minutes(15));
  EXPECT_EQ(j.EffectiveLeaseTtl(), minutes(15));
  EXPECT_EQ(j.overlap, Overlap::kSkip);
  EXPECT_EQ(j.retry.max_attempts, 5);
  EXPECT_EQ(j.retry.initial_backoff, milliseconds(500));
  EXPECT_EQ(j.retry.multiplier, 3.0);
  EXPECT_EQ(j.retry.max_backoff, seconds(90));
  EXPECT_EQ(j.retry.jitter, 0.5);
  EXPECT_EQ(j.retry.max_retry_duration, hours(2));
  EXPECT_EQ(j.retry_exit_codes, (std::vector<int>{75, 1}));
  EXPECT_EQ(j.fail_exit_codes, (std::vector<int>{64, 65, 255}));
  // In the order written, not sorted.
  EXPECT_EQ(j.env, (Env{{"ZED", "last letter"}, {"ALPHA", ""}, {"_mid_1", "x=y"}}));
  EXPECT_EQ(j.env_from_host, (Lines{"SMTP_PASSWORD", "aws_region"}));
  ASSERT_EQ(j.steps.size(), 2u);
  // An inprocess step needs no command; keep_inputs stay as written.
  EXPECT_TRUE(j.steps[0].command.empty());
  EXPECT_EQ(j.steps[0].keep_inputs,
            (Lines{"data/{business_date}/orders.csv", "/srv/in/{partition}-{run_key}.json"}));
  EXPECT_EQ(j.steps[1].command, (Lines{"/srv/cl/bin/notify", "{period}"}));
}

TEST(ConfigExecution, LogDirResolvesAgainstTheConfigFolder) {
  const auto log_dir = [](const std::string& value) {
    return MustParse(std::string(kServer) + "log_dir = \"" + value + "\"\n").server.log_dir;
  };
  EXPECT_EQ(log_dir("logs"), "/srv/cl/logs");
  EXPECT_EQ(log_dir("./a/../b/"), "/srv/cl/b");
  EXPECT_EQ(log_dir("/var/log/cronledger"), "/var/log/cronledger");
  EXPECT_EQ(MustParse(kServer, "/etc/cl/conf.d/../c.toml").server.log_dir, "/etc/cl/logs");
}

TEST(ConfigExecution, EnvKeepsFileOrderAsATableToo) {
  const Config c = MustParse(std::string(kServer) + kJob +
                             "[job.env]\n"
                             "B = \"2\"\n"
                             "A = \"1\"\n"
                             "C = \"3\"\n");
  EXPECT_EQ(c.jobs.at(0).env, (Env{{"B", "2"}, {"A", "1"}, {"C", "3"}}));
}

TEST(ConfigExecution, ServerKeyProblems) {
  const auto server = [](const std::string& line) {
    return Problems(std::string(kServer) + line + "\n");
  };
  EXPECT_EQ(
      server("drain_timeout = \"-1s\""),
      (Lines{"c.toml:3: server.drain_timeout: \"-1s\" is negative; durations are 0 or more"}));
  EXPECT_EQ(server("drain_timeout = \"1500ms\""),
            (Lines{"c.toml:3: server.drain_timeout: \"1500ms\" is not a whole number of "
                   "seconds"}));
  EXPECT_EQ(server("drain_timeout = 30"),
            (Lines{"c.toml:3: server.drain_timeout: expected a duration string, got the integer "
                   "30; use e.g. \"30s\""}));
  EXPECT_EQ(server("log_dir = \"\""),
            (Lines{"c.toml:3: server.log_dir: must not be empty; omit the key for \"logs\" beside "
                   "the config file"}));
  EXPECT_EQ(server("log_dir = 1"),
            (Lines{"c.toml:3: server.log_dir: expected a string, got an integer"}));
  EXPECT_EQ(server("log_retention = \"0s\""),
            (Lines{"c.toml:3: server.log_retention: must be greater than 0, got \"0s\""}));
  EXPECT_EQ(server("output_cap = \"512\""),
            (Lines{"c.toml:3: server.output_cap: must be between 1KiB and 1GiB, got \"512\""}));
  EXPECT_EQ(server("output_cap = \"2GiB\""),
            (Lines{"c.toml:3: server.output_cap: must be between 1KiB and 1GiB, got \"2GiB\""}));
  EXPECT_EQ(server("output_cap = \"1MB\""),
            (Lines{"c.toml:3: server.output_cap: \"1MB\" has an unknown unit \"MB\"; use KiB, MiB "
                   "or GiB, or a plain number of bytes"}));
  EXPECT_EQ(server("output_cap = 1048576"),
            (Lines{"c.toml:3: server.output_cap: expected a size string, got the integer "
                   "1048576; write e.g. \"1048576\" (bytes) or \"1MiB\""}));
  EXPECT_EQ(server("output_cap = true"),
            (Lines{"c.toml:3: server.output_cap: expected a size string such as \"1MiB\", got a "
                   "boolean"}));
  // The bounds themselves are accepted.
  EXPECT_EQ(server("output_cap = \"1024\""), Lines{});
  EXPECT_EQ(server("output_cap = \"1GiB\""), Lines{});
}

TEST(ConfigExecution, ExecutorDecidesWhetherStepsNeedACommand) {
  const auto job = [](const std::string& executor, const std::string& step) {
    return Problems(std::string(kServer) +
                    "[[job]]\nname = \"j\"\nschedule = \"@daily\"\ntimezone = \"UTC\"\n" +
                    executor + "[[job.step]]\nname = \"s\"\n" + step);
  };
  EXPECT_EQ(job("", ""),
            (Lines{"c.toml:7: job[j].step[s].command: required key is missing: steps of "
                   "executor \"subprocess\" run a command"}));
  EXPECT_EQ(job("executor = \"subprocess\"\n", ""),
            (Lines{"c.toml:8: job[j].step[s].command: required key is missing: steps of "
                   "executor \"subprocess\" run a command"}));
  EXPECT_EQ(job("executor = \"inprocess\"\n", ""), Lines{});
  EXPECT_EQ(job("executor = \"external\"\n", ""), Lines{});
  // A command that is given is checked whatever the executor.
  EXPECT_EQ(job("executor = \"external\"\n", "command = [\"./x\", \"{date}\"]\n"),
            (Lines{"c.toml:10: job[j].step[s].command: unknown placeholder \"{date}\" in element "
                   "2; the placeholders are {partition}, {business_date}, {period} and "
                   "{run_key}"}));
  EXPECT_EQ(job("executor = \"inprocess\"\n", "command = []\n"),
            (Lines{"c.toml:10: job[j].step[s].command: must not be empty: give the program and "
                   "its arguments, e.g. [\"./bin/report\"]"}));
  // An invalid executor is the one problem: nothing is required on its account.
  EXPECT_EQ(job("executor = \"http\"\n", ""),
            (Lines{"c.toml:7: job[j].executor: \"http\" is not allowed; use \"subprocess\", "
                   "\"inprocess\" or \"external\""}));
}

TEST(ConfigExecution, LeaseTtlMustOutlastEveryStep) {
  const std::string steps =
      "timeout = \"5m\"\n[[job.step]]\nname = \"t\"\ncommand = [\"y\"]\ntimeout = \"20m\"\n";
  EXPECT_EQ(JobProblems("lease_ttl = \"15m\"\n", steps),
            (Lines{"c.toml:7: job[j].lease_ttl: lease_ttl (15m) must be longer than the longest "
                   "step timeout (20m, step \"t\"): a lease shorter than a step would expire "
                   "mid-step"}));
  EXPECT_EQ(JobProblems("lease_ttl = \"20m\"\n", steps),
            (Lines{"c.toml:7: job[j].lease_ttl: lease_ttl (20m) must be longer than the longest "
                   "step timeout (20m, step \"t\"): a lease shorter than a step would expire "
                   "mid-step"}));
  // Against the default step timeout (1h) too.
  EXPECT_EQ(JobProblems("lease_ttl = \"1h\"\n"),
            (Lines{"c.toml:7: job[j].lease_ttl: lease_ttl (1h) must be longer than the longest "
                   "step timeout (1h, step \"s\"): a lease shorter than a step would expire "
                   "mid-step"}));
  EXPECT_EQ(JobProblems("lease_ttl = \"20m1s\"\n", steps), Lines{});
  EXPECT_EQ(JobProblems("lease_ttl = \"0s\"\n"),
            (Lines{"c.toml:7: job[j].lease_ttl: must be greater than 0, got \"0s\""}));
  EXPECT_EQ(JobProblems("lease_ttl = \"90500ms\"\n"),
            (Lines{"c.toml:7: job[j].lease_ttl: \"90500ms\" is not a whole number of seconds"}));
  const Config c = MustParse(std::string(kServer) + kJob + steps);
  EXPECT_EQ(c.jobs[0].EffectiveLeaseTtl(), hours(1));  // 3 x 20m
}

TEST(ConfigExecution, OverlapIsAChoice) {
  EXPECT_EQ(JobProblems("overlap = \"wait\"\n"),
            (Lines{"c.toml:7: job[j].overlap: \"wait\" is not allowed; use \"queue\", \"skip\" or "
                   "\"allow\""}));
  EXPECT_EQ(MustParse(std::string(kServer) + kJob).jobs[0].overlap, Overlap::kQueue);
}

TEST(ConfigExecution, RetryProblems) {
  const auto retry = [](const std::string& table) {
    return JobProblems("retry = { " + table + " }\n");
  };
  EXPECT_EQ(retry("max_attempt = 5"),
            (Lines{"c.toml:7: job[j].retry.max_attempt: unknown key; did you mean "
                   "\"max_attempts\"?"}));
  EXPECT_EQ(retry("backoff = \"1s\""), (Lines{"c.toml:7: job[j].retry.backoff: unknown key"}));
  EXPECT_EQ(retry("max_attempts = 0"),
            (Lines{"c.toml:7: job[j].retry.max_attempts: must be between 1 and 1000, got 0"}));
  EXPECT_EQ(retry("max_attempts = 1001"),
            (Lines{"c.toml:7: job[j].retry.max_attempts: must be between 1 and 1000, got 1001"}));
  EXPECT_EQ(retry("multiplier = 0.5"),
            (Lines{"c.toml:7: job[j].retry.multiplier: must be at least 1, got 0.5"}));
  EXPECT_EQ(retry("multiplier = \"2\""),
            (Lines{"c.toml:7: job[j].retry.multiplier: expected a number, got a string"}));
  EXPECT_EQ(retry("multiplier = inf"),
            (Lines{"c.toml:7: job[j].retry.multiplier: must be a finite number, got inf"}));
  EXPECT_EQ(retry("jitter = 1.5"),
            (Lines{"c.toml:7: job[j].retry.jitter: must be between 0 and 1, got 1.5"}));
  EXPECT_EQ(retry("jitter = -0.1"),
            (Lines{"c.toml:7: job[j].retry.jitter: must be between 0 and 1, got -0.1"}));
  EXPECT_EQ(retry("initial_backoff = \"soon\""),
            (Lines{"c.toml:7: job[j].retry.initial_backoff: \"soon\": expected a number at "
                   "\"soon\"; use e.g. \"1h30m\""}));
  EXPECT_EQ(retry("max_retry_duration = \"0s\""),
            (Lines{"c.toml:7: job[j].retry.max_retry_duration: must be greater than 0, got "
                   "\"0s\""}));
  EXPECT_EQ(retry("max_retry_duration = \"1500ms\""),
            (Lines{"c.toml:7: job[j].retry.max_retry_duration: \"1500ms\" is not a whole number "
                   "of seconds"}));
  EXPECT_EQ(retry("initial_backoff = \"5m\", max_backoff = \"1m\""),
            (Lines{"c.toml:7: job[j].retry.max_backoff: max_backoff (1m) must not be less than "
                   "initial_backoff (5m)"}));
  // Against the default max_backoff (10m) too.
  EXPECT_EQ(retry("initial_backoff = \"20m\""),
            (Lines{"c.toml:7: job[j].retry.max_backoff: max_backoff (10m) must not be less than "
                   "initial_backoff (20m)"}));
  EXPECT_EQ(retry("initial_backoff = \"1s500ms\", max_backoff = \"1500ms\""), Lines{});
  EXPECT_EQ(retry("initial_backoff = \"0s\", max_backoff = \"0s\", jitter = 0, multiplier = 1"),
            Lines{});
  // A key already wrong is not compared again.
  EXPECT_EQ(retry("initial_backoff = \"20m\", max_backoff = \"x\""),
            (Lines{"c.toml:7: job[j].retry.max_backoff: \"x\": expected a number at \"x\"; use "
                   "e.g. \"1h30m\""}));
  EXPECT_EQ(JobProblems("retry = 3\n"),
            (Lines{"c.toml:7: job[j].retry: expected a table, got an integer"}));
  // Written as a table: the line of max_backoff.
  EXPECT_EQ(Problems(std::string(kServer) + kJob +
                     "[job.retry]\ninitial_backoff = \"1m\"\nmax_backoff = \"30s\"\n"),
            (Lines{"c.toml:12: job[j].retry.max_backoff: max_backoff (30s) must not be less than "
                   "initial_backoff (1m)"}));
}

TEST(ConfigExecution, ExitCodeProblems) {
  EXPECT_EQ(JobProblems("retry_exit_codes = [0]\n"),
            (Lines{"c.toml:7: job[j].retry_exit_codes: element 1: must be between 1 and 255, got "
                   "0"}));
  EXPECT_EQ(JobProblems("fail_exit_codes = [64, 256]\n"),
            (Lines{"c.toml:7: job[j].fail_exit_codes: element 2: must be between 1 and 255, got "
                   "256"}));
  EXPECT_EQ(JobProblems("fail_exit_codes = [64, 65, 64]\n"),
            (Lines{"c.toml:7: job[j].fail_exit_codes: duplicate exit code 64"}));
  EXPECT_EQ(JobProblems("retry_exit_codes = [\"75\"]\n"),
            (Lines{"c.toml:7: job[j].retry_exit_codes: element 1: expected an integer, got a "
                   "string"}));
  EXPECT_EQ(JobProblems("retry_exit_codes = 75\n"),
            (Lines{"c.toml:7: job[j].retry_exit_codes: expected an array of integers, got an "
                   "integer"}));
  EXPECT_EQ(JobProblems("retry_exit_codes = [75, 1]\nfail_exit_codes = [\n  64,\n  75,\n  1,\n]\n"),
            (Lines{"c.toml:10: job[j].fail_exit_codes: exit code 75 is in both retry_exit_codes "
                   "and fail_exit_codes; keep it in one",
                   "c.toml:11: job[j].fail_exit_codes: exit code 1 is in both retry_exit_codes "
                   "and fail_exit_codes; keep it in one"}));
  EXPECT_EQ(JobProblems("retry_exit_codes = []\nfail_exit_codes = []\n"), Lines{});
}

TEST(ConfigExecution, EnvProblems) {
  EXPECT_EQ(JobProblems("env = { 1X = \"a\", \"A-B\" = \"b\" }\n"),
            (Lines{"c.toml:7: job[j].env.1X: \"1X\" is not a valid variable name: use A-Z a-z 0-9 "
                   "_, not starting with a digit",
                   "c.toml:7: job[j].env.A-B: \"A-B\" is not a valid variable name: use A-Z a-z "
                   "0-9 _, not starting with a digit"}));
  EXPECT_EQ(JobProblems("env = { CRONLEDGER_JOB = \"x\" }\n"),
            (Lines{"c.toml:7: job[j].env.CRONLEDGER_JOB: \"CRONLEDGER_JOB\" is reserved: "
                   "cronledger sets the CRONLEDGER_ variables of every step"}));
  for (const char* name : {"PATH", "HOME", "LANG", "TZ"}) {
    EXPECT_EQ(JobProblems(std::string("env = { ") + name + " = \"x\" }\n"),
              (Lines{std::string("c.toml:7: job[j].env.") + name + ": \"" + name +
                     "\" is reserved: cronledger sets PATH, HOME, LANG and TZ for every step"}));
  }
  EXPECT_EQ(JobProblems("env = { PORT = 8080 }\n"),
            (Lines{"c.toml:7: job[j].env.PORT: expected a string, got an integer"}));
  EXPECT_EQ(JobProblems("env = { A = \"x\\u0000y\" }\n"),
            (Lines{"c.toml:7: job[j].env.A: must not contain a NUL character"}));
  EXPECT_EQ(JobProblems("env = [\"A=1\"]\n"),
            (Lines{"c.toml:7: job[j].env: expected a table, got an array"}));
  // Names are case-sensitive: these are not reserved.
  EXPECT_EQ(JobProblems("env = { Path = \"x\", cronledger_x = \"y\", _ = \"z\" }\n"), Lines{});
}

TEST(ConfigExecution, EnvFromHostProblems) {
  EXPECT_EQ(JobProblems("env_from_host = [\"SMTP PASSWORD\", \"TZ\", \"CRONLEDGER_TOKEN\"]\n"),
            (Lines{"c.toml:7: job[j].env_from_host: \"SMTP PASSWORD\" is not a valid variable "
                   "name: use A-Z a-z 0-9 _, not starting with a digit",
                   "c.toml:7: job[j].env_from_host: \"TZ\" is reserved: cronledger sets PATH, "
                   "HOME, LANG and TZ for every step",
                   "c.toml:7: job[j].env_from_host: \"CRONLEDGER_TOKEN\" is reserved: cronledger "
                   "sets the CRONLEDGER_ variables of every step"}));
  EXPECT_EQ(JobProblems("env_from_host = [\"A\", \"B\", \"A\"]\n"),
            (Lines{"c.toml:7: job[j].env_from_host: duplicate name \"A\""}));
  EXPECT_EQ(JobProblems("env_from_host = [\"\"]\n"),
            (Lines{"c.toml:7: job[j].env_from_host: \"\" is not a valid variable name: use A-Z "
                   "a-z 0-9 _, not starting with a digit"}));
  EXPECT_EQ(JobProblems("env = { TOKEN = \"x\", B = \"y\" }\nenv_from_host = [\"A\", \"TOKEN\"]\n"),
            (Lines{"c.toml:8: job[j].env_from_host: \"TOKEN\" is also set in env; keep it in "
                   "one"}));
}

TEST(ConfigExecution, KeepInputsProblems) {
  EXPECT_EQ(JobProblems("", "keep_inputs = [\"in.csv\", \"\"]\n"),
            (Lines{"c.toml:10: job[j].step[s].keep_inputs: element 2 is an empty string"}));
  EXPECT_EQ(JobProblems("", "keep_inputs = [\"data/{date}.csv\"]\n"),
            (Lines{"c.toml:10: job[j].step[s].keep_inputs: unknown placeholder \"{date}\" in "
                   "element 1; the placeholders are {partition}, {business_date}, {period} and "
                   "{run_key}"}));
  EXPECT_EQ(JobProblems("", "keep_inputs = \"in.csv\"\n"),
            (Lines{"c.toml:10: job[j].step[s].keep_inputs: expected an array of strings, got a "
                   "string"}));
  EXPECT_EQ(JobProblems("", "keep_inputs = []\n"), Lines{});
  // Relative paths are not resolved against the config folder.
  const Config c = MustParse(std::string(kServer) + kJob + "keep_inputs = [\"./in.csv\"]\n");
  EXPECT_EQ(c.jobs[0].steps[0].keep_inputs, (Lines{"./in.csv"}));
}

// ---- values ---------------------------------------------------------------------------------

TEST(ConfigDuration, ParsesUnitsAndCompounds) {
  const std::vector<std::pair<std::string, milliseconds>> cases = {
      {"30s", seconds(30)}, {"250ms", milliseconds(250)}, {"1h30m", minutes(90)},
      {"1d", hours(24)},    {"0s", milliseconds(0)},      {"2d3h4m5s6ms", milliseconds(183845006)},
      {"90m", minutes(90)}, {"1m30s", seconds(90)},
  };
  for (const auto& [text, expected] : cases) {
    auto d = ParseDuration(text);
    ASSERT_TRUE(d.ok()) << text << ": " << d.status().ToString();
    EXPECT_EQ(*d, expected) << text;
  }
}

TEST(ConfigDuration, ErrorsSayWhatIsWrong) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "empty duration; use e.g. \"30s\" or \"1h30m\""},
      {"90", "\"90\" has no unit; use e.g. \"90s\""},
      {"-5m", "\"-5m\" is negative; durations are 0 or more"},
      {"5x", "\"5x\" has an unknown unit \"x\"; use ms, s, m, h or d"},
      {"1H", "\"1H\" has an unknown unit \"H\"; use ms, s, m, h or d"},
      {"1.5h", "\"1.5h\": use whole numbers, e.g. \"1h30m\""},
      // What the fraction is in whole units, not an unrelated example.
      {"1.5m", "\"1.5m\": use whole numbers, e.g. \"1m30s\""},
      {"2.25d", "\"2.25d\": use whole numbers, e.g. \"2d6h\""},
      {"0.5s", "\"0.5s\": use whole numbers, e.g. \"500ms\""},
      {"1,5s", "\"1,5s\": use whole numbers, e.g. \"1s500ms\""},
      // Not a whole number of milliseconds, or not a unit: the general advice.
      {"1.5ms", "\"1.5ms\": use whole numbers, e.g. \"1m30s\" for 1.5m"},
      {"0.0s", "\"0.0s\": use whole numbers, e.g. \"1m30s\" for 1.5m"},
      {"1.5x", "\"1.5x\": use whole numbers, e.g. \"1m30s\" for 1.5m"},
      {"h", "\"h\": expected a number at \"h\"; use e.g. \"1h30m\""},
      {"30m1h",
       "\"30m1h\": in a compound, each unit appears once, largest first (e.g. "
       "\"1d12h\")"},
      {"1h1h",
       "\"1h1h\": in a compound, each unit appears once, largest first (e.g. "
       "\"1d12h\")"},
      {"1h 30m", "\"1h 30m\" contains a space; write e.g. \"1h30m\""},
      {"99999999999999999999d", "\"99999999999999999999d\" is too large"},
      {"999999999999999d", "\"999999999999999d\" is too large"},
  };
  for (const auto& [text, message] : cases) {
    auto d = ParseDuration(text);
    ASSERT_FALSE(d.ok()) << text;
    EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(d.status().message(), message) << text;
  }
}

TEST(ConfigSize, ParsesBinaryUnitsAndBytes) {
  EXPECT_EQ(*ParseSize("1024"), 1024u);
  EXPECT_EQ(*ParseSize("0"), 0u);
  EXPECT_EQ(*ParseSize("512KiB"), 512u * 1024);
  EXPECT_EQ(*ParseSize("1MiB"), 1048576u);
  EXPECT_EQ(*ParseSize("2GiB"), 2ull << 30);
  const std::vector<std::pair<std::string, std::string>> errors = {
      {"", "empty size; use e.g. \"1MiB\""},
      {"1MB",
       "\"1MB\" has an unknown unit \"MB\"; use KiB, MiB or GiB, or a plain number of "
       "bytes"},
      {"-1", "\"-1\" is negative"},
      {"MiB", "\"MiB\": expected a number, e.g. \"1MiB\""},
      {"99999999999GiB", "\"99999999999GiB\" is too large"},
  };
  for (const auto& [text, message] : errors) {
    auto s = ParseSize(text);
    ASSERT_FALSE(s.ok()) << text;
    EXPECT_EQ(s.status().message(), message) << text;
  }
}

TEST(ConfigNames, PartitionIdsAndNames) {
  EXPECT_TRUE(IsValidPartitionId("acme"));
  EXPECT_TRUE(IsValidPartitionId("AZaz09._-:@"));
  EXPECT_TRUE(IsValidPartitionId(std::string(128, 'p')));
  EXPECT_FALSE(IsValidPartitionId(std::string(129, 'p')));
  EXPECT_FALSE(IsValidPartitionId(""));
  for (const char* bad : {"a b", "a/b", "a,b", "é", "a\n", "{x}"}) {
    EXPECT_FALSE(IsValidPartitionId(bad)) << bad;
  }
  EXPECT_TRUE(IsValidName("daily_report.v2-x"));
  EXPECT_TRUE(IsValidName(std::string(64, 'n')));
  EXPECT_FALSE(IsValidName(std::string(65, 'n')));
  EXPECT_FALSE(IsValidName(""));
  EXPECT_FALSE(IsValidName("a:b"));  // partition characters, not name characters
  EXPECT_FALSE(IsValidName("a@b"));
  EXPECT_FALSE(IsValidName("a/b"));
}

// ---- alerts and the heartbeat (docs/alerts.md) ---------------------------------------------

TEST(ConfigAlerts, AlertKeysAndHeartbeatUrlAreReadAndCommandsResolved) {
  const Config c = MustParse(
      "[server]\n"
      "store = \"sqlite:cl.db\"\n"
      "heartbeat_url = \"https://hc-ping.example.com/0f1e2d\"\n"
      "public_url = \"https://cron.example.com/\"\n" +
      std::string(kJob).insert(std::string(kJob).find("[[job.step]]"),
                               "alert = { max_lag = \"15m\", webhook = \"http://127.0.0.1:9/h\", "
                               "format = \"slack\", command = [\"./bin/page\", \"--team\", "
                               "\"ops\"], group_window = \"5m\" }\n"));
  EXPECT_EQ(c.server.heartbeat_url, "https://hc-ping.example.com/0f1e2d");
  EXPECT_EQ(c.server.public_url, "https://cron.example.com");  // links append "/#/run/7"
  const AlertConfig& a = c.jobs.at(0).alert;
  EXPECT_EQ(a.max_lag, minutes(15));
  EXPECT_EQ(a.webhook, "http://127.0.0.1:9/h");
  EXPECT_EQ(a.format, AlertFormat::kSlack);
  EXPECT_EQ(a.group_window, minutes(5));
  // Relative to the config's folder, like a step's command.
  EXPECT_EQ(a.command, (Lines{"/srv/cl/bin/page", "--team", "ops"}));
  EXPECT_TRUE(a.HasTargets());
}

TEST(ConfigAlerts, DefaultsAreJsonNoCommandNoHeartbeat) {
  const Config c = MustParse(std::string(kServer) + kJob);
  EXPECT_EQ(c.server.heartbeat_url, "");
  EXPECT_EQ(c.server.public_url, "");
  EXPECT_EQ(c.jobs.at(0).alert.format, AlertFormat::kJson);
  EXPECT_EQ(c.jobs.at(0).alert.group_window, minutes(1));
  EXPECT_TRUE(c.jobs.at(0).alert.command.empty());
  EXPECT_FALSE(c.jobs.at(0).alert.HasTargets());
  // A command alone is a target.
  const Config cmd = MustParse(std::string(kServer) +
                               std::string(kJob).insert(std::string(kJob).find("[[job.step]]"),
                                                        "alert = { command = [\"pager\"] }\n"));
  EXPECT_EQ(cmd.jobs.at(0).alert.command, (Lines{"pager"}));  // PATH lookup, as for steps
  EXPECT_TRUE(cmd.jobs.at(0).alert.HasTargets());
}

TEST(ConfigAlerts, ProblemsNameTheFileLineAndKey) {
  EXPECT_EQ(JobProblems("alert = { webhook = \"http://x/h\", format = \"teams\" }\n"),
            (Lines{"c.toml:7: job[j].alert.format: \"teams\" is not allowed; use \"json\" or "
                   "\"slack\""}));
  EXPECT_EQ(JobProblems("alert = { format = \"slack\", command = [\"./page\"] }\n"),
            (Lines{"c.toml:7: job[j].alert.format: format shapes the webhook's body, and there "
                   "is no webhook; set webhook (a command always gets the alert as JSON)"}));
  EXPECT_EQ(JobProblems("alert = { command = [] }\n"),
            (Lines{"c.toml:7: job[j].alert.command: must not be empty: give the program and its "
                   "arguments, e.g. [\"./bin/report\"]"}));
  EXPECT_EQ(JobProblems("alert = { command = [\"./page\", \"\"] }\n"),
            (Lines{"c.toml:7: job[j].alert.command: element 2 is an empty string"}));
  EXPECT_EQ(JobProblems("alert = { command = \"./page --now\" }\n"),
            (Lines{"c.toml:7: job[j].alert.command: expected an array of strings, got a string"}));
  EXPECT_EQ(Problems("[server]\nstore = \"sqlite:x\"\nheartbeat_url = \"hc-ping.example.com\"\n"),
            (Lines{"c.toml:3: server.heartbeat_url: \"hc-ping.example.com\" is not an http:// or "
                   "https:// URL"}));
  EXPECT_EQ(Problems("[server]\nstore = \"sqlite:x\"\nheartbeat_url = 5\n"),
            (Lines{"c.toml:3: server.heartbeat_url: expected a string, got an integer"}));
  EXPECT_EQ(Problems("[server]\nstore = \"sqlite:x\"\npublic_url = \"cron.example.com\"\n"),
            (Lines{"c.toml:3: server.public_url: \"cron.example.com\" is not an http:// or "
                   "https:// URL"}));
  EXPECT_EQ(Problems("[server]\nstore = \"sqlite:x\"\npublic_url = \"https://c.example/#/\"\n"),
            (Lines{"c.toml:3: server.public_url: \"https://c.example/#/\" has a query or "
                   "fragment; give the address the dashboard is served at, such as "
                   "\"https://cron.example.com\""}));
  EXPECT_EQ(JobProblems("alert = { command = [\"./page\"], group_window = \"-1m\" }\n").size(), 1u);
}

// ---- the documentation -----------------------------------------------------------------------

// docs/config.md holds one table row per key, as DocumentedKeys() renders it:
// a key added to the table and not to the docs (or the reverse) fails here.
TEST(ConfigDocs, EveryKeyIsDocumentedExactlyAsTheTableSays) {
  std::ifstream in(SourceRoot() / "docs" / "config.md");
  ASSERT_TRUE(in) << "docs/config.md not found";
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string doc = buffer.str();
  const auto keys = DocumentedKeys();
  ASSERT_GE(keys.size(), 30u);
  for (const auto& k : keys) {
    const std::string row =
        "| `" + k.key + "` | " + k.type + " | " + k.default_value + " | " + k.meaning + " |\n";
    EXPECT_NE(doc.find(row), std::string::npos)
        << "docs/config.md lacks the row of " << (k.section.empty() ? "" : k.section + ".") << k.key
        << ":\n"
        << row;
  }
  // And no row documents a key the table does not have: a key row is
  // "| `key` | type | default | meaning |" (four cells).
  const auto is_key_row = [](const std::string& line) {
    if (line.rfind("| `", 0) != 0 || std::count(line.begin(), line.end(), '|') != 5) return false;
    const std::size_t close = line.find('`', 3);
    return close != std::string::npos && close > 3 && line.compare(close, 3, "` |") == 0 &&
           std::all_of(line.begin() + 3, line.begin() + static_cast<std::ptrdiff_t>(close),
                       [](char c) { return (c >= 'a' && c <= 'z') || c == '_'; });
  };
  std::size_t rows = 0;
  std::istringstream lines(doc);
  for (std::string line; std::getline(lines, line);) {
    if (is_key_row(line)) ++rows;
  }
  EXPECT_EQ(rows, keys.size());
}

}  // namespace
}  // namespace cronledger::config
