// cli::Run, the command line in process: the same parse and commands as the
// cronledger-core program, on a FakeClock and string streams.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "cli/command_table.h"
#include "cli/ledger_output.h"
#include "common/temp_dir.h"
#include "cronledger/clock.h"
#include "ops/actor_text.h"
#include "store/sqlite/sqlite_store.h"

namespace cronledger {
namespace {

using Json = nlohmann::ordered_json;
using namespace std::chrono_literals;

// 2026-11-30T12:00:00Z, a Monday.
const Clock::TimePoint kNoon = Clock::TimePoint(1796040000s);

struct Result {
  int exit_code;
  std::string out;
  std::string err;
};

Result RunCli(std::vector<std::string> args, Clock& clock) {
  args.insert(args.begin(), "cronledger");
  std::ostringstream out;
  std::ostringstream err;
  const int code = cli::Run(args, clock, out, err);
  return {code, out.str(), err.str()};
}

// A config of one daily job, `report`, on the SQLite ledger `db`.
std::string ReportConfig(testing::TempDir& dir, const std::string& db) {
  return dir.Write("cronledger.toml", R"([server]
store = "sqlite:)" + db + R"("

[[job]]
name = "report"
schedule = "0 9 * * *"
timezone = "UTC"

  [[job.step]]
  name = "export"
  command = ["/bin/true"]
)");
}

TEST(CliRun, HelpListsEveryCommandOfTheTable) {
  FakeClock clock(kNoon);
  const Result r = RunCli({"help"}, clock);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out.rfind("cronledger runs scheduled work", 0), 0u) << r.out;
  const auto commands = cli::DescribeCommands();
  ASSERT_GE(commands.size(), 20u);
  for (const auto& c : commands) {
    if (c.name.find(' ') != std::string::npos) continue;  // a subcommand: under its command
    EXPECT_NE(r.out.find("\n  " + c.name + " "), std::string::npos) << c.name << " in\n" << r.out;
    EXPECT_NE(r.out.find(c.summary), std::string::npos) << c.summary;
  }
  // The same text as --help, which CLI11 prints itself.
  EXPECT_EQ(RunCli({"--help"}, clock).out, r.out);
}

TEST(CliRun, HelpOfOneCommandIsItsHelpFlag) {
  FakeClock clock(kNoon);
  const Result r = RunCli({"help", "runs"}, clock);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("List the ledger's runs", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("Usage: cronledger runs [OPTIONS]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  --server TEXT "), std::string::npos) << r.out;
  EXPECT_EQ(RunCli({"runs", "--help"}, clock).out, r.out);

  const Result unknown = RunCli({"help", "nosuch"}, clock);
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_EQ(unknown.out, "");
  EXPECT_EQ(unknown.err, "cronledger help: no command \"nosuch\"; `cronledger help` lists them\n");
}

TEST(CliRun, UsageErrorsExit2NamingTheCommand) {
  FakeClock clock(kNoon);
  Result r = RunCli({"next", "--tz", "UTC"}, clock);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "cronledger next: EXPR is required\nRun with --help for more information.\n");

  r = RunCli({"pause", "--job", "a", "--all", "--reason", "x"}, clock);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.rfind("cronledger pause: ", 0), 0u) << r.err;

  // No command at all: the command list, on stderr.
  r = RunCli({}, clock);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err.rfind("cronledger runs scheduled work", 0), 0u) << r.err;

  // The commands a step calls answer in sysexits: 64, EX_USAGE.
  r = RunCli({"effect", "run", "--key", "k"}, clock);
  EXPECT_EQ(r.exit_code, 64);
  EXPECT_EQ(r.err.rfind("cronledger effect run: ", 0), 0u) << r.err;
}

TEST(CliRun, VersionGoesToOut) {
  FakeClock clock(kNoon);
  const Result r = RunCli({"--version"}, clock);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out.rfind("cronledger ", 0), 0u) << r.out;
  EXPECT_EQ(r.err, "");
}

TEST(CliRun, NextStartsAfterTheClocksNow) {
  FakeClock clock(kNoon);
  const Result r = RunCli({"next", "0 9 * * *", "--tz", "UTC", "-n", "2", "--json"}, clock);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json next = Json::parse(r.out);
  ASSERT_EQ(next.size(), 2u) << r.out;
  EXPECT_EQ(next[0]["utc"], "2026-12-01T09:00:00Z") << r.out;
  EXPECT_EQ(next[1]["utc"], "2026-12-02T09:00:00Z") << r.out;
  // As given --from that instant.
  EXPECT_EQ(RunCli({"next", "0 9 * * *", "--tz", "UTC", "-n", "2", "--json", "--from",
                    "2026-11-30T12:00:00Z"},
                   clock)
                .out,
            r.out);
  clock.Advance(24h);
  const Json later =
      Json::parse(RunCli({"next", "0 9 * * *", "--tz", "UTC", "-n", "1", "--json"}, clock).out);
  EXPECT_EQ(later[0]["utc"], "2026-12-02T09:00:00Z");
}

// pause and resume on a SQLite ledger, recorded at the fake clock's
// instants with the shared --by and --reason; events and status read them.
TEST(CliRun, PauseResumeAndEventsOnASqliteLedger) {
  testing::TempDir dir;
  const std::string db = dir.File("ledger.db");
  store::SqliteOptions options;
  options.path = db;
  ASSERT_TRUE(store::SqliteStore::Open(options).ok());  // the ledger serve would create
  const std::string config = ReportConfig(dir, db);
  FakeClock clock(kNoon);
  Result r = RunCli({"pause", "--config", config, "--job", "report", "--reason", "quarter close",
                     "--by", "alice", "--server", ""},
                    clock);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "paused job report\n");
  EXPECT_EQ(r.err, "");
  r = RunCli({"pause", "--config", config, "--job", "report", "--reason", "again"}, clock);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "cronledger pause: job \"report\" is already paused\n");

  r = RunCli({"status", "--config", config, "--json"}, clock);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json jobs = Json::parse(r.out)["jobs"];
  ASSERT_EQ(jobs.size(), 1u) << r.out;
  EXPECT_EQ(jobs[0]["name"], "report") << r.out;
  EXPECT_EQ(jobs[0]["state"], "paused") << r.out;
  EXPECT_EQ(jobs[0]["next_at"], "2026-12-01T09:00:00Z") << r.out;

  clock.Advance(1h);
  r = RunCli({"resume", "--config", config, "--job", "report", "--reason", "closed"}, clock);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "resumed job report\n");

  r = RunCli({"events", "--config", config, "--job", "report", "--json"}, clock);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> seen;
  const Json events = Json::parse(r.out)["events"];
  for (const auto& e : events) {
    if (e["type"] != "paused" && e["type"] != "resumed") continue;
    seen.push_back(e["type"].get<std::string>() + " " + e["at"].get<std::string>() + " " +
                   e["reason"].get<std::string>());
    // --by is recorded beside the OS user, who acted.
    if (e["type"] == "paused") {
      EXPECT_EQ(e["on_behalf_of"], "alice");
    } else {
      EXPECT_NE(e["actor"], "") << e.dump();
    }
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"paused 2026-11-30T12:00:00Z quarter close",
                                            "resumed 2026-11-30T13:00:00Z closed"}))
      << r.out;

  // --type keeps one type; --actor the events done by or for that name.
  r = RunCli({"events", "--config", config, "--type", "resumed", "--json"}, clock);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(Json::parse(r.out)["events"].size(), 1u) << r.out;
  EXPECT_EQ(Json::parse(r.out)["events"][0]["reason"], "closed");
  r = RunCli({"events", "--config", config, "--actor", "alice", "--json"}, clock);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(Json::parse(r.out)["events"].size(), 1u) << r.out;
  EXPECT_EQ(Json::parse(r.out)["events"][0]["type"], "paused");
  // A type no event can have is a usage error naming the ones there are.
  r = RunCli({"events", "--config", config, "--type", "pasued"}, clock);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.rfind("cronledger events: --type \"pasued\" is not an event type; one of: "
                        "planned, ",
                        0),
            0u)
      << r.err;
  EXPECT_EQ(r.out, "");
}

// Every command that changes the ledger checks the actor alike, before it
// opens the ledger: a missing or blank --reason and a blank --by exit 2
// naming the command, and nothing is written (the ledger file is never
// created).
TEST(ActorText, UnicodeNamesAndMultiLineReasonsAreRecordedAsTheyAre) {
  EXPECT_EQ(ops::ActorTextProblem(ops::ActorField::kBy, "김민준"), "");
  EXPECT_EQ(ops::ActorTextProblem(ops::ActorField::kBy, "Zoë O'Brien"), "");
  EXPECT_EQ(ops::ActorTextProblem(ops::ActorField::kReason, "INC-42:\n\tcarrier outage"), "");
  EXPECT_EQ(ops::ActorTextProblem(ops::ActorField::kBy, std::string("a\0b", 3)),
            "holds the control character U+0000 at byte 2");
  EXPECT_EQ(ops::ActorTextProblem(ops::ActorField::kBy, "a\tb"),
            "holds the control character U+0009 at byte 2");
  EXPECT_EQ(ops::ActorTextProblem(ops::ActorField::kBy, "del\x7f"),
            "holds the control character U+007F at byte 4");
  // Overlong and surrogate encodings are not UTF-8.
  EXPECT_EQ(ops::ActorTextProblem(ops::ActorField::kBy, "\xc0\xaf"),
            "is not valid UTF-8 at byte 1");
  EXPECT_EQ(ops::ActorTextProblem(ops::ActorField::kBy, "x\xed\xa0\x80"),
            "is not valid UTF-8 at byte 2");
  EXPECT_EQ(ops::ActorTextProblem(ops::ActorField::kBy, std::string(256, 'b')), "");
}

TEST(CliRun, EveryActingCommandRefusesABlankReasonOrActorAlike) {
  testing::TempDir dir;
  const std::string db = dir.File("ledger.db");
  const std::string config = ReportConfig(dir, db);
  const std::vector<std::vector<std::string>> commands = {
      {"pause", "--job", "report"},
      {"resume", "--job", "report"},
      {"retry", "7"},
      {"cancel", "7"},
      {"resolve", "7", "--as", "failed"},
      {"approve", "--job", "report"},
      {"trigger", "--job", "report"},
      // Acting: a preview (without --yes) needs no reason.
      {"backfill", "--job", "report", "--from", "2026-11-01", "--to", "2026-11-02", "--yes"},
      {"rerun", "--job", "report", "--date", "2026-11-02", "--yes"},
  };
  FakeClock clock(kNoon);
  for (const auto& command : commands) {
    const std::string name = command.front();
    std::vector<std::string> base = command;
    base.insert(base.end(), {"--config", config});
    for (const auto& [extra, problem] :
         std::vector<std::pair<std::vector<std::string>, std::string>>{
             {{}, "--reason TEXT is required: say why, it is recorded in the ledger"},
             {{"--reason", " \t"},
              "--reason TEXT is required: say why, it is recorded in the ledger"},
             {{"--reason", "why", "--by", "  "}, "--by needs a name"},
             {{"--reason", "why", "--by", "eve\x1b[2J"},
              "--by holds the control character U+001B at byte 4"},
             {{"--reason", "why", "--by", "mallory\r\nINFO forged"},
              "--by holds the control character U+000D at byte 8"},
             {{"--reason", "why\xff", "--by", "x"}, "--reason is not valid UTF-8 at byte 4"},
             {{"--reason", "why\xc2\x85", "--by", "x"},
              "--reason holds the control character U+0085 at byte 4 (newlines and tabs are "
              "allowed)"},
             {{"--reason", std::string(4097, 'r'), "--by", "x"},
              "--reason is 4097 bytes; at most 4096"},
             {{"--reason", "why", "--by", std::string(257, 'b')}, "--by is 257 bytes; at most 256"},
         }) {
      std::vector<std::string> args = base;
      args.insert(args.end(), extra.begin(), extra.end());
      const Result r = RunCli(args, clock);
      EXPECT_EQ(r.exit_code, 2) << name << " " << problem << ": " << r.err;
      EXPECT_EQ(r.out, "") << name;
      EXPECT_EQ(r.err, "cronledger " + name + ": " + problem + "\n") << name;
    }
  }
  EXPECT_FALSE(std::filesystem::exists(db)) << "a refused action created the ledger";
}

// Text output puts a job's wall time beside each UTC instant it prints.
TEST(LedgerOutput, AnInstantGetsTheJobsWallTimeBeside) {
  EXPECT_EQ(cli::WithLocalTime("2026-11-29T00:00:00Z", "Asia/Seoul"),
            "2026-11-29T00:00:00Z (09:00:00+09:00)");
  EXPECT_EQ(cli::WithLocalTime("2026-11-28T23:30:00Z", "Asia/Seoul"),
            "2026-11-28T23:30:00Z (2026-11-29T08:30:00+09:00)");
  EXPECT_EQ(cli::WithLocalTime("2026-11-29T14:00:00Z", "America/New_York"),
            "2026-11-29T14:00:00Z (09:00:00-05:00)");
  EXPECT_EQ(cli::WithLocalTime("2026-11-29T00:00:00Z", "UTC"), "2026-11-29T00:00:00Z");
  EXPECT_EQ(cli::WithLocalTime("", "Asia/Seoul"), "");
  EXPECT_EQ(cli::WithLocalTime("2026-11-29T00:00:00Z", "Not/AZone"), "2026-11-29T00:00:00Z");
}

}  // namespace
}  // namespace cronledger
