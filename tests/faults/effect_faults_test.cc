// Faults around `cronledger effect run` (docs/effects.md: in doubt,
// reconciliation, the end of an attempt), with real `serve`
// processes, real steps and the fenced sink as the external system:
//
//  - FaultEffectKill.*: a real `effect run` is SIGKILLed between its begin
//    and its commit (synchronised through a fifo: the kill lands there every
//    time), and the retry reconciles the effect in doubt, or, without a
//    reconcile program, the run becomes `unknown` until an operator
//    resolves the effect either way;
//  - FaultEffectItems.*: 1,000 items, each one `effect run` with a partition
//    watermark, while `serve` is kill -9'd at random moments and restarted.
//
// Each ends with the invariant checker. Time only through polling counts
// (WaitFor); every process is behind an RAII guard (scenario.h).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "cli/subprocess.h"
#include "common/serve_process.h"
#include "faults/invariant_checker.h"
#include "faults/scenario.h"
#include "faults/seed.h"

namespace cronledger::faults {
namespace {

using Json = nlohmann::json;
using testing::Cronledger;
using testing::ServeProcess;
using testing::WaitFor;

// A named pipe the test reads without ever blocking. A step script writes a
// line into it at the moment the test must act on; its `echo > fifo` opens
// at once (the test holds the read end from the start).
class Fifo {
 public:
  explicit Fifo(std::string path) : path_(std::move(path)) {
    if (mkfifo(path_.c_str(), 0600) != 0) throw std::runtime_error("mkfifo " + path_);
    fd_ = open(path_.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd_ < 0) throw std::runtime_error("open " + path_);
  }
  ~Fifo() { close(fd_); }
  Fifo(const Fifo&) = delete;
  Fifo& operator=(const Fifo&) = delete;

  // The first line written, once it has come within `tries` polls.
  std::optional<std::string> ReadLine(int tries) {
    const bool got = WaitFor(
        [&] {
          char buf[256];
          const ssize_t n = read(fd_, buf, sizeof buf);
          if (n > 0) text_.append(buf, static_cast<std::size_t>(n));
          return text_.find('\n') != std::string::npos;
        },
        tries, 20);
    if (!got) return std::nullopt;
    return text_.substr(0, text_.find('\n'));
  }
  // Drops the first line read, so that ReadLine waits for the next one.
  void Consume() {
    const auto nl = text_.find('\n');
    text_ = nl == std::string::npos ? "" : text_.substr(nl + 1);
  }

 private:
  std::string path_;
  int fd_ = -1;
  std::string text_;
};

std::string Quote(const std::string& path) { return "'" + path + "'"; }

// The events of `type` among a run's events.
std::vector<Json> EventsOf(const Json& events, const std::string& type) {
  std::vector<Json> out;
  for (const auto& e : events) {
    if (e.value("type", "") == type) out.push_back(e);
  }
  return out;
}

// The sink's writes for `key`, in order: {token, accepted, note}.
std::vector<std::vector<std::string>> SinkWrites(Sql& sink, const std::string& key) {
  return sink.Rows("SELECT token, accepted, note FROM writes WHERE key = '" + key +
                   "' ORDER BY id");
}

// ---------------------------------------------------------------------------
// a. SIGKILL of `effect run` between begin and commit.

struct KillCase {
  bool reconcile;              // the step passes --reconcile
  bool delivered_before_kill;  // CMD delivered before it blocked and was killed
};

// One run (key = "date" on an every-second schedule: later occurrences of
// the day are deduplicated) whose one idempotent step is
//   cronledger effect run --key mail/RUN_KEY [--reconcile reconcile.sh] -- deliver.sh KEY
// The first deliver.sh ever started records its pids, delivers or not,
// writes a line into sync.fifo and blocks until it is killed; every later
// one delivers. reconcile.sh asks the sink whether the key was accepted.
class EffectKillScenario {
 public:
  explicit EffectKillScenario(const KillCase& c) : fifo_(sc_.dir().File("sync.fifo")) {
    sc_.WriteConfig({.name = "mail",
                     .partitions = "",
                     .lease_ttl = "",
                     .timeout = "30s",
                     .command = R"(["./step.sh"])",
                     .key = "date"});
    const std::string d = sc_.dir().path();
    const std::string sink = Quote(FENCED_SINK_BIN);
    sc_.dir().WriteScript("step.sh", "#!/bin/sh\nD='" + d + "'\n" + RecordStepGroupShell() +
                                         "K=\"mail/$CRONLEDGER_RUN_KEY\"\n"
                                         // exec: the step's command is `effect run` itself.
                                         "exec " +
                                         Quote(CRONLEDGER_BIN) + " effect run --key \"$K\" " +
                                         (c.reconcile ? "--reconcile \"$D/reconcile.sh\" " : "") +
                                         "-- \"$D/deliver.sh\" \"$K\"\n");
    std::string deliver = "#!/bin/sh\nD='" + d + "'\n" +
                          "if mkdir \"$D/first.lock\" 2>/dev/null; then\n"
                          "  echo \"$CRONLEDGER_RUN_ID\" > \"$D/first.run\"\n"
                          "  echo $$ > \"$D/cmd.pid\"\n"
                          "  echo $PPID > \"$D/effect.pid\"\n";
    if (c.delivered_before_kill) {
      deliver += "  " + sink +
                 " --db \"$D/sink.db\" --key \"$1\" --token \"$CRONLEDGER_FENCING_TOKEN\" "
                 "--note 'before the kill' || exit 1\n";
    }
    deliver +=
        "  echo 'between begin and commit' > \"$D/sync.fifo\"\n"
        "  exec sleep 300\n"
        "fi\n"
        "exec " +
        sink +
        " --db \"$D/sink.db\" --key \"$1\" --token \"$CRONLEDGER_FENCING_TOKEN\" "
        "--note \"run $CRONLEDGER_RUN_ID attempt $CRONLEDGER_ATTEMPT\"\n";
    sc_.dir().WriteScript("deliver.sh", deliver);
    sc_.dir().WriteScript("reconcile.sh",
                          "#!/bin/sh\nD='" + d + "'\n" +
                              "echo \"$CRONLEDGER_EFFECT_KEY attempt $CRONLEDGER_ATTEMPT\" >> "
                              "\"$D/reconcile.calls\"\n"
                              "exec " +
                              sink +
                              " --db \"$D/sink.db\" --check --key \"$CRONLEDGER_EFFECT_KEY\"\n");
  }

  Scenario& sc() { return sc_; }
  const std::string& key() const { return key_; }
  int64_t run_id() const { return run_id_; }

  // Starts serve, waits until the first `effect run` is between its begin
  // and its commit, checks that it is, and SIGKILLs it and its CMD (fatal
  // assertions: wrap in ASSERT_NO_FATAL_FAILURE).
  void StartAndKillBetweenBeginAndCommit() {
    serve_ = std::make_unique<ServeProcess>(sc_.Config(), sc_.dir().File("serve.log"),
                                            std::vector<std::string>{"--node-id", "node-a"});
    const auto line = fifo_.ReadLine(1500);
    ASSERT_TRUE(line.has_value()) << "the first deliver.sh never reached its fifo\n"
                                  << serve_->Log();
    run_id_ = ReadPid(sc_.dir().File("first.run"));
    const pid_t effect_run = ReadPid(sc_.dir().File("effect.pid"));
    const pid_t cmd = ReadPid(sc_.dir().File("cmd.pid"));
    ASSERT_GT(run_id_, 0);
    ASSERT_GT(effect_run, 1);
    ASSERT_GT(cmd, 1);

    // Between begin and commit: the `started` record is durable (another
    // connection reads it), `effect run` waits for its CMD, CMD is blocked.
    Sql ledger(sc_.LedgerDb());
    const auto effects = ledger.Rows(
        "SELECT key, state, started_attempt, settled_attempt FROM effects WHERE run_id = " +
        std::to_string(run_id_));
    ASSERT_EQ(effects.size(), 1u);
    key_ = effects[0][0];
    ASSERT_EQ(effects[0], (std::vector<std::string>{key_, "started", "1", ""}));
    ASSERT_TRUE(Alive(effect_run));
    ASSERT_NE(CommandLineOf(effect_run).find(" effect run --key " + key_), std::string::npos)
        << CommandLineOf(effect_run);
    ASSERT_TRUE(Alive(cmd));
    ASSERT_EQ(StatOf(cmd)->ppid, effect_run);

    ASSERT_EQ(kill(effect_run, SIGKILL), 0);
    ASSERT_EQ(kill(cmd, SIGKILL), 0);
    EXPECT_TRUE(WaitFor([&] { return !Alive(effect_run) && !Alive(cmd); }, 200));
  }

  // Waits for the run to reach `state`.
  bool WaitForState(const std::string& state) {
    return WaitFor([&] { return sc_.StateOf(run_id_) == state; }, 1500);
  }

  std::string ServeLog() const { return serve_ ? serve_->Log() : ""; }
  int StopServe() { return serve_->Stop(); }

  std::vector<std::string> ReconcileCalls() const {
    return testing::Lines(ReadFile(sc_.dir().File("reconcile.calls")));
  }

  // The fencing tokens of the run's attempts, by number (1-based).
  std::vector<int64_t> Tokens(const Json& run) const {
    std::vector<int64_t> tokens;
    for (const auto& a : run["attempt_list"]) tokens.push_back(a["fencing_token"].get<int64_t>());
    return tokens;
  }

  // The invariant checker: the run's effect is committed and delivered
  // exactly once; so is any other run's (a run of the next date, should
  // the test cross midnight UTC).
  std::vector<Violation> Check() {
    CheckInput in;
    in.runs_deliver_run_keys = false;
    in.effects_job = "mail";
    Sql ledger(sc_.LedgerDb());
    for (const auto& row : ledger.Rows("SELECT job || '/' || partition || '/' || period, "
                                       "'mail/' || job || '/' || partition || '/' || period "
                                       "FROM runs WHERE attempts > 0")) {
      in.expected_keys.push_back(row[0]);
      in.expected_deliveries.push_back(row[1]);
    }
    return sc_.CheckWith(in);
  }

 private:
  Scenario sc_;
  Fifo fifo_;
  std::unique_ptr<ServeProcess> serve_;
  std::string key_;
  int64_t run_id_ = 0;
};

// CMD delivered, then `effect run` was killed before it could commit: the
// retry finds the key in doubt, the reconcile program finds the delivery in
// the sink, the effect is committed with its answer, and CMD does not run
// again: no delivery after the kill.
TEST(FaultEffectKill, ReconcileSaysItHappenedNoSecondDelivery) {
  EffectKillScenario s({.reconcile = true, .delivered_before_kill = true});
  ASSERT_NO_FATAL_FAILURE(s.StartAndKillBetweenBeginAndCommit());
  ASSERT_TRUE(s.WaitForState("succeeded")) << s.sc().StateOf(s.run_id()) << "\n" << s.ServeLog();
  EXPECT_EQ(s.StopServe(), 0) << s.ServeLog();

  const Json run = s.sc().Run(s.run_id());
  ASSERT_EQ(run["attempt_list"].size(), 2u) << run.dump(2);
  EXPECT_EQ(run["attempt_list"][0]["end_class"], "signal") << run.dump(2);
  EXPECT_EQ(run["attempt_list"][1]["end_class"], "succeeded") << run.dump(2);
  const auto tokens = s.Tokens(run);

  Sql sink(s.sc().SinkDb());
  EXPECT_EQ(
      SinkWrites(sink, s.key()),
      (std::vector<std::vector<std::string>>{{std::to_string(tokens[0]), "1", "before the kill"}}))
      << "exactly the delivery made before the kill, none after it";
  EXPECT_EQ(s.ReconcileCalls(), std::vector<std::string>{s.key() + " attempt 2"});

  Sql ledger(s.sc().LedgerDb());
  const auto effect = ledger.Rows(
      "SELECT state, settled_attempt, result FROM effects WHERE key = '" + s.key() + "'");
  ASSERT_EQ(effect.size(), 1u);
  EXPECT_EQ(effect[0][0], "committed");
  EXPECT_EQ(effect[0][1], "2");
  EXPECT_EQ(effect[0][2], "fenced_sink: " + s.key() + " was accepted, token " +
                              std::to_string(tokens[0]) + " (before the kill)\n")
      << "the reconcile program's answer is the stored result";

  const Json events = s.sc().Events(s.run_id());
  EXPECT_EQ(EventsOf(events, "effect_started").size(), 1u) << events.dump(2);
  EXPECT_EQ(EventsOf(events, "effect_committed").size(), 0u) << events.dump(2);
  const auto doubt = EventsOf(events, "effect_in_doubt");
  ASSERT_EQ(doubt.size(), 1u) << events.dump(2);
  EXPECT_EQ(doubt[0]["details"]["attempt"], 2);
  const auto reconciled = EventsOf(events, "effect_reconciled");
  ASSERT_EQ(reconciled.size(), 1u) << events.dump(2);
  EXPECT_EQ(reconciled[0]["details"]["as"], "committed") << reconciled[0].dump();

  const auto v = s.Check();
  EXPECT_TRUE(v.empty()) << Describe(v);
  EXPECT_TRUE(s.sc().LiveSteps().empty());
}

// CMD was killed before it delivered: the reconcile program finds nothing,
// the effect is recorded failed, `effect run` begins it again and runs CMD:
// exactly one delivery in all, by the retry.
TEST(FaultEffectKill, ReconcileSaysItDidNotHappenExactlyOneDelivery) {
  EffectKillScenario s({.reconcile = true, .delivered_before_kill = false});
  ASSERT_NO_FATAL_FAILURE(s.StartAndKillBetweenBeginAndCommit());
  ASSERT_TRUE(s.WaitForState("succeeded")) << s.sc().StateOf(s.run_id()) << "\n" << s.ServeLog();
  EXPECT_EQ(s.StopServe(), 0) << s.ServeLog();

  const Json run = s.sc().Run(s.run_id());
  ASSERT_EQ(run["attempt_list"].size(), 2u) << run.dump(2);
  EXPECT_EQ(run["attempt_list"][0]["end_class"], "signal");
  EXPECT_EQ(run["attempt_list"][1]["end_class"], "succeeded");
  const auto tokens = s.Tokens(run);

  Sql sink(s.sc().SinkDb());
  EXPECT_EQ(
      SinkWrites(sink, s.key()),
      (std::vector<std::vector<std::string>>{
          {std::to_string(tokens[1]), "1", "run " + std::to_string(s.run_id()) + " attempt 2"}}));
  EXPECT_EQ(s.ReconcileCalls(), std::vector<std::string>{s.key() + " attempt 2"});

  Sql ledger(s.sc().LedgerDb());
  EXPECT_EQ(ledger.Rows("SELECT state, started_attempt, settled_attempt FROM effects WHERE key "
                        "= '" +
                        s.key() + "'"),
            (std::vector<std::vector<std::string>>{{"committed", "2", "2"}}));

  const Json events = s.sc().Events(s.run_id());
  const auto reconciled = EventsOf(events, "effect_reconciled");
  ASSERT_EQ(reconciled.size(), 1u) << events.dump(2);
  EXPECT_EQ(reconciled[0]["details"]["as"], "failed") << reconciled[0].dump();
  const auto started = EventsOf(events, "effect_started");
  ASSERT_EQ(started.size(), 2u) << events.dump(2);
  EXPECT_EQ(started[1]["details"].value("again", false), true) << started[1].dump();
  EXPECT_EQ(EventsOf(events, "effect_committed").size(), 1u) << events.dump(2);

  const auto v = s.Check();
  EXPECT_TRUE(v.empty()) << Describe(v);
  EXPECT_TRUE(s.sc().LiveSteps().empty());
}

// Without a reconcile program the retry cannot tell: `effect run` exits 69
// without running CMD and the server makes the run `unknown` (end class
// in_doubt).
void ExpectUnknownAfterTheRetry(EffectKillScenario& s) {
  EXPECT_TRUE(s.WaitForState("unknown")) << s.sc().StateOf(s.run_id()) << "\n" << s.ServeLog();
  const Json run = s.sc().Run(s.run_id());
  EXPECT_EQ(run["state"], "unknown");
  EXPECT_EQ(run["attempt_list"].size(), 2u) << run.dump(2);
  if (run["attempt_list"].size() == 2) {
    EXPECT_EQ(run["attempt_list"][0]["end_class"], "signal");
    EXPECT_EQ(run["attempt_list"][1]["end_class"], "in_doubt");
    EXPECT_EQ(run["attempt_list"][1]["exit_status"], 69);
  }
  EXPECT_EQ(run["effects"].size(), 1u) << run.dump(2);
  if (run["effects"].size() == 1) {
    EXPECT_EQ(run["effects"][0]["key"], s.key());
    EXPECT_EQ(run["effects"][0]["state"], "started");
    EXPECT_EQ(run["effects"][0]["in_doubt"], true);
  }
  EXPECT_TRUE(s.ReconcileCalls().empty());
}

// ... and an operator who knows it did not happen resolves it `failed`: the
// run goes back to pending, the next attempt does it: one delivery in all.
TEST(FaultEffectKill, NoReconcileRunUnknownThenResolvedFailedDeliversOnce) {
  EffectKillScenario s({.reconcile = false, .delivered_before_kill = false});
  ASSERT_NO_FATAL_FAILURE(s.StartAndKillBetweenBeginAndCommit());
  ExpectUnknownAfterTheRetry(s);
  Sql sink(s.sc().SinkDb());
  EXPECT_TRUE(SinkWrites(sink, s.key()).empty());

  const auto resolved = Cronledger(
      {"resolve", std::to_string(s.run_id()), "--config", s.sc().Config(), "--effect", s.key(),
       "--as", "failed", "--reason", "the mail server has no such message", "--by", "tester"});
  ASSERT_EQ(resolved.exit_code, 0) << resolved.out << resolved.err;
  EXPECT_NE(resolved.out.find("queued for a new attempt"), std::string::npos) << resolved.out;

  ASSERT_TRUE(s.WaitForState("succeeded")) << s.sc().StateOf(s.run_id()) << "\n" << s.ServeLog();
  EXPECT_EQ(s.StopServe(), 0) << s.ServeLog();
  const Json run = s.sc().Run(s.run_id());
  ASSERT_EQ(run["attempt_list"].size(), 3u) << run.dump(2);
  EXPECT_EQ(run["attempt_list"][2]["end_class"], "succeeded");
  const auto tokens = s.Tokens(run);
  EXPECT_EQ(
      SinkWrites(sink, s.key()),
      (std::vector<std::vector<std::string>>{
          {std::to_string(tokens[2]), "1", "run " + std::to_string(s.run_id()) + " attempt 3"}}));

  Sql ledger(s.sc().LedgerDb());
  EXPECT_EQ(ledger.Rows("SELECT state, started_attempt, settled_attempt FROM effects WHERE key "
                        "= '" +
                        s.key() + "'"),
            (std::vector<std::vector<std::string>>{{"committed", "3", "3"}}));
  const Json events = s.sc().Events(s.run_id());
  const auto resolve = EventsOf(events, "resolve");
  ASSERT_EQ(resolve.size(), 1u) << events.dump(2);
  EXPECT_EQ(resolve[0]["on_behalf_of"], "tester");
  EXPECT_EQ(resolve[0]["details"]["as"], "failed") << resolve[0].dump();
  EXPECT_EQ(resolve[0]["details"]["to"], "pending") << resolve[0].dump();

  const auto v = s.Check();
  EXPECT_TRUE(v.empty()) << Describe(v);
  EXPECT_TRUE(s.sc().LiveSteps().empty());
}

// ... and an operator who knows it happened resolves it `committed`: the
// next attempt replays it (CMD does not run) and the run succeeds, with the
// one delivery made before the kill.
TEST(FaultEffectKill, NoReconcileRunUnknownThenResolvedCommittedNoFurtherDelivery) {
  EffectKillScenario s({.reconcile = false, .delivered_before_kill = true});
  ASSERT_NO_FATAL_FAILURE(s.StartAndKillBetweenBeginAndCommit());
  ExpectUnknownAfterTheRetry(s);
  Sql sink(s.sc().SinkDb());
  ASSERT_EQ(SinkWrites(sink, s.key()).size(), 1u);

  const auto resolved = Cronledger({"resolve", std::to_string(s.run_id()), "--config",
                                    s.sc().Config(), "--effect", s.key(), "--as", "committed",
                                    "--reason", "the customer has the mail", "--by", "tester"});
  ASSERT_EQ(resolved.exit_code, 0) << resolved.out << resolved.err;

  ASSERT_TRUE(s.WaitForState("succeeded")) << s.sc().StateOf(s.run_id()) << "\n" << s.ServeLog();
  EXPECT_EQ(s.StopServe(), 0) << s.ServeLog();
  const Json run = s.sc().Run(s.run_id());
  ASSERT_EQ(run["attempt_list"].size(), 3u) << run.dump(2);
  EXPECT_EQ(run["attempt_list"][2]["end_class"], "succeeded");
  const auto tokens = s.Tokens(run);
  EXPECT_EQ(
      SinkWrites(sink, s.key()),
      (std::vector<std::vector<std::string>>{{std::to_string(tokens[0]), "1", "before the kill"}}))
      << "no delivery after the kill";
  // The third attempt replayed the effect instead of running CMD.
  const std::string log = ReadFile(run["attempt_list"][2]["log_path"].get<std::string>());
  const passwd* pw = getpwuid(geteuid());
  ASSERT_NE(pw, nullptr);
  const std::string os_user = pw->pw_name;  // who ran resolve: the actor
  EXPECT_NE(
      log.find(s.key() + ": already committed (resolved committed by " + os_user + "); replayed"),
      std::string::npos)
      << log;

  Sql ledger(s.sc().LedgerDb());
  EXPECT_EQ(ledger.Rows("SELECT state, settled_attempt, settled_by FROM effects WHERE key = '" +
                        s.key() + "'"),
            (std::vector<std::vector<std::string>>{{"committed", "", os_user}}));
  const Json events = s.sc().Events(s.run_id());
  const auto resolve = EventsOf(events, "resolve");
  ASSERT_EQ(resolve.size(), 1u) << events.dump(2);
  EXPECT_EQ(resolve[0]["details"]["as"], "committed") << resolve[0].dump();
  EXPECT_EQ(EventsOf(events, "effect_started").size(), 1u) << events.dump(2);

  const auto v = s.Check();
  EXPECT_TRUE(v.empty()) << Describe(v);
  EXPECT_TRUE(s.sc().LiveSteps().empty());
}

// ---------------------------------------------------------------------------
// c. 20 kills between begin and commit, each case drawn from the seed.

// One job every second (`key = "slot"`: a run a second), whose step is
//   cronledger effect run --key mail/RUN_KEY [--reconcile reconcile.sh] -- deliver.sh KEY
// 20 times the test arms the next run with a case drawn from the seed:
// with or without a reconcile program, CMD delivered before the kill or
// not. The first step that finds the arm takes it (an atomic rename); its
// deliver.sh delivers or not, says so through the fifo and blocks; the
// test checks the effect is `started` and SIGKILLs `effect run` and CMD.
// Then: with a reconcile program the retry settles the doubt by itself;
// without one the run becomes `unknown` and the test resolves the effect
// as what really happened (committed when CMD delivered, else failed).
// Each time the run succeeds with exactly one accepted write for its
// key, the checker finds nothing; other runs go on meanwhile.
TEST(FaultEffectKill, TwentyKillsBetweenBeginAndCommitInRandomCases) {
  FaultSeed seed;
  constexpr int kKills = 20;
  Scenario sc;
  Fifo fifo(sc.dir().File("sync.fifo"));
  sc.WriteConfig({.name = "mail",
                  .partitions = "",
                  .lease_ttl = "",
                  .timeout = "30s",
                  .command = R"(["./step.sh"])",
                  .max_attempts = 20,
                  .env = R"({ ASAN_OPTIONS = "detect_leaks=0:detect_odr_violation=0" })",
                  .misfire_grace = "1h"});
  const std::string d = sc.dir().path();
  const std::string sink = Quote(FENCED_SINK_BIN);
  // The case of a run: taken from `arm` by its first attempt.
  sc.dir().WriteScript(
      "step.sh", "#!/bin/sh\nD='" + d + "'\n" + RecordStepGroupShell() +
                     "R=$CRONLEDGER_RUN_ID\n"
                     "[ \"$CRONLEDGER_ATTEMPT\" = 1 ] && mv \"$D/arm\" \"$D/case.$R\" 2>/dev/null\n"
                     "K=\"mail/$CRONLEDGER_RUN_KEY\"\n"
                     "if [ -e \"$D/case.$R\" ] && grep -q noreconcile \"$D/case.$R\"; then\n"
                     "  exec " + Quote(CRONLEDGER_BIN) +
                     " effect run --key \"$K\" -- \"$D/deliver.sh\" \"$K\"\n"
                     "fi\n"
                     "exec " + Quote(CRONLEDGER_BIN) +
                     " effect run --key \"$K\" --reconcile \"$D/reconcile.sh\" -- "
                     "\"$D/deliver.sh\" \"$K\"\n");
  sc.dir().WriteScript(
      "deliver.sh",
      "#!/bin/sh\nD='" + d + "'\nR=$CRONLEDGER_RUN_ID\n" +
          "if [ -e \"$D/case.$R\" ] && mkdir \"$D/blocked.$R\" 2>/dev/null; then\n"
          "  echo $$ > \"$D/cmd.$R\"\n"
          "  echo $PPID > \"$D/effect.$R\"\n"
          "  if grep -q ' delivered' \"$D/case.$R\"; then\n    " +
          sink +
          " --db \"$D/sink.db\" --key \"$1\" --token \"$CRONLEDGER_FENCING_TOKEN\" "
          "--note 'before the kill' || exit 1\n"
          "  fi\n"
          "  echo \"$R\" > \"$D/sync.fifo\"\n"
          "  exec sleep 300\n"
          "fi\n"
          "exec " +
          sink +
          " --db \"$D/sink.db\" --key \"$1\" --token \"$CRONLEDGER_FENCING_TOKEN\" "
          "--note \"run $CRONLEDGER_RUN_ID attempt $CRONLEDGER_ATTEMPT\"\n");
  sc.dir().WriteScript("reconcile.sh",
                       "#!/bin/sh\nexec " + sink +
                           " --db '" + d + "/sink.db' --check --key \"$CRONLEDGER_EFFECT_KEY\"\n");

  ServeProcess serve(sc.Config(), sc.dir().File("serve.log"), {"--node-id", "node-a"},
                     ServeEnv());
  Sql ledger(sc.LedgerDb());
  Sql sink_db(sc.SinkDb());
  std::string plan;
  std::map<std::string, int> cases;
  for (int i = 1; i <= kKills; ++i) {
    const bool reconcile = seed.Coin();
    const bool delivered = seed.Coin();
    const std::string name = std::string(reconcile ? "reconcile" : "noreconcile") +
                             (delivered ? " delivered" : " undelivered");
    ++cases[name];
    // A random moment to arm: the kill lands in whichever run comes next.
    usleep(static_cast<useconds_t>(seed.Uniform(0, 1000)) * 1000);
    sc.dir().Write("arm.tmp", name + "\n");
    std::filesystem::rename(sc.dir().File("arm.tmp"), sc.dir().File("arm"));
    std::string line;
    for (int n = 0; n < 1500 && line.empty(); ++n) {
      const auto got = fifo.ReadLine(1);
      if (got) line = *got;
    }
    ASSERT_FALSE(line.empty()) << "kill " << i << ": no run reached the fifo\n" << Tail(serve.Log());
    fifo.Consume();
    const std::string run = line;
    const int64_t run_id = std::stoll(run);
    const pid_t effect_run = ReadPid(sc.dir().File("effect." + run));
    const pid_t cmd = ReadPid(sc.dir().File("cmd." + run));
    const std::string key =
        ledger.Text("SELECT key FROM effects WHERE run_id = " + run + " AND job = 'mail'");
    ASSERT_FALSE(key.empty()) << "kill " << i << ": run " << run << " has no effect";
    ASSERT_EQ(ledger.Rows("SELECT state, started_attempt FROM effects WHERE key = '" + key + "'"),
              (std::vector<std::vector<std::string>>{{"started", "1"}}))
        << "kill " << i;
    ASSERT_TRUE(Alive(effect_run) && Alive(cmd)) << "kill " << i;
    ASSERT_EQ(StatOf(cmd)->ppid, effect_run);
    ASSERT_EQ(kill(effect_run, SIGKILL), 0);
    ASSERT_EQ(kill(cmd, SIGKILL), 0);
    ASSERT_TRUE(WaitFor([&] { return !Alive(effect_run) && !Alive(cmd); }, 200));
    plan += " " + name;

    auto state = [&] { return ledger.Text("SELECT state FROM runs WHERE id = " + run); };
    if (!reconcile) {
      ASSERT_TRUE(WaitFor([&] { return state() == "unknown"; }, 1200))
          << "kill " << i << ": run " << run << " is " << state() << "\n"
          << Tail(serve.Log());
      const auto resolved = Cronledger(
          {"resolve", run, "--config", sc.Config(), "--effect", key, "--as",
           delivered ? "committed" : "failed", "--reason", "checked the sink", "--by", "tester"});
      ASSERT_EQ(resolved.exit_code, 0) << resolved.out << resolved.err;
    }
    ASSERT_TRUE(WaitFor([&] { return state() == "succeeded"; }, 1200))
        << "kill " << i << ": run " << run << " is " << state() << "\n"
        << Tail(serve.Log());
    const auto writes = SinkWrites(sink_db, key);
    int accepted = 0;
    for (const auto& w : writes) accepted += w[1] == "1" ? 1 : 0;
    EXPECT_EQ(accepted, 1) << "kill " << i << " (" << name << "): run " << run;
    if (delivered && !writes.empty()) {
      EXPECT_EQ(writes[0][2], "before the kill") << "kill " << i << ": delivered again";
    }
    EXPECT_EQ(ledger.Text("SELECT state FROM effects WHERE key = '" + key + "'"), "committed");
    (void)run_id;
    const auto v = sc.CheckNow();
    ASSERT_TRUE(v.empty()) << "after kill " << i << ":\n" << Describe(v);
  }
  std::cout << "[ info     ] cases:" << plan << "\n";

  const int64_t cutoff = ledger.Int("SELECT max(scheduled_at) FROM runs WHERE attempts > 0");
  ASSERT_TRUE(WaitFor(
      [&] {
        ReapZombies();
        return ledger.Int("SELECT count(*) FROM runs WHERE attempts > 0 AND scheduled_at <= " +
                          std::to_string(cutoff) + " AND state <> 'succeeded'") == 0;
      },
      1200))
      << Tail(serve.Log());
  WaitFor([&] { return ledger.Int("SELECT count(*) FROM runs WHERE attempts > 0 AND state = "
                                  "'pending'") == 0; },
          200);
  EXPECT_EQ(serve.Stop(), 0) << Tail(serve.Log());
  CheckInput in;
  in.runs_deliver_run_keys = false;
  in.effects_job = "mail";
  for (const auto& row : ledger.Rows("SELECT job || '/' || partition || '/' || period, "
                                     "'mail/' || job || '/' || partition || '/' || period, "
                                     "state, scheduled_at FROM runs WHERE attempts > 0")) {
    in.expected_keys.push_back(row[0]);
    if (row[2] == "pending" && std::stoll(row[3]) > cutoff) {
      in.allowed_unfinished.insert(row[0]);
    } else {
      in.expected_deliveries.push_back(row[1]);
    }
  }
  const auto v = sc.CheckWith(in);
  EXPECT_TRUE(v.empty()) << Describe(v);
  // Each kill left one effect in doubt, found by the next attempt; settled
  // by the reconcile program or by the operator, once.
  EXPECT_EQ(ledger.Int("SELECT count(*) FROM events WHERE type = 'effect_in_doubt'"), kKills);
  EXPECT_EQ(ledger.Int("SELECT count(*) FROM events WHERE type = 'effect_reconciled'"),
            static_cast<int64_t>(cases["reconcile delivered"] + cases["reconcile undelivered"]));
  EXPECT_EQ(ledger.Int("SELECT count(*) FROM events WHERE type = 'resolve'"),
            static_cast<int64_t>(cases["noreconcile delivered"] + cases["noreconcile undelivered"]));
  EXPECT_TRUE(sc.LiveSteps().empty());
}

// ---------------------------------------------------------------------------
// b. 1,000 items through effect run, serve killed at random moments.

// One job, four partitions that share out items 1..1000 (p1 has 1..250, p2
// 251..500, ...); one run per partition (key = "date"). The step resumes
// after $CRONLEDGER_CHECKPOINT_PARTITION and delivers each item with
//   cronledger effect run --key item-I --reconcile reconcile.sh
//       --checkpoint I --checkpoint-scope partition -- fenced_sink ... --key item-I
// Leases are short (6 s) so that the reaper of a restarted serve takes
// them back soon; the step timeout must then be shorter still (5 s), so the
// step works in slices: it starts no item after 1 s (but at least one) and
// exits 75 to be retried from the watermark. A timeout that still strikes
// is one more uncertain end, settled the same way — unless it strikes while
// `effect run` reconciles an effect in doubt, which leaves the run
// `unknown` (docs/effects.md): with 3 s and 2 s, a machine at load 10 (other
// benchmarks on the 2 cores) timed out 92 slices and left two runs unknown.
TEST(FaultEffectItems, ThousandItemsExactlyOnceWhileServeIsKilledAndRestarted) {
  constexpr int kItems = 1000;
  constexpr int kPartitions = 4;
  constexpr int kKills = 4;
  FaultSeed seed;
  std::mt19937_64& rng = seed.rng();

  Scenario sc;
  sc.WriteConfig({.name = "items",
                  .partitions = R"(["p1", "p2", "p3", "p4"])",
                  .lease_ttl = "6s",
                  .timeout = "5s",
                  .max_workers = kPartitions,
                  .command = R"(["./items.sh", "{partition}"])",
                  .key = "date",
                  .max_attempts = 1000,
                  // Leak checking at the exit of each of the thousands of
                  // `effect run` processes would double their cost, the ODR
                  // check at their start adds a fifth; the FaultEffectKill
                  // tests keep both.
                  .env = R"({ ASAN_OPTIONS = "detect_leaks=0:detect_odr_violation=0" })"});
  const std::string d = sc.dir().path();
  const std::string sink = Quote(FENCED_SINK_BIN);
  std::string ranges;
  for (int p = 1; p <= kPartitions; ++p) {
    const int per = kItems / kPartitions;
    ranges += "  p" + std::to_string(p) + ") lo=" + std::to_string((p - 1) * per + 1) +
              " hi=" + std::to_string(p * per) + " ;;\n";
  }
  sc.dir().WriteScript(
      "items.sh", "#!/bin/sh\nD='" + d + "'\n" + RecordStepGroupShell() + "case $1 in\n" + ranges +
                      "  *) exit 64 ;;\nesac\n"
                      "i=$(( ${CRONLEDGER_CHECKPOINT_PARTITION:-$((lo - 1))} + 1 ))\n"
                      // Centiseconds since boot, read without starting a process.
                      "read -r up _ < /proc/uptime\nstart=${up%.*}${up#*.}\nfirst=$i\n"
                      "while [ $i -le $hi ]; do\n"
                      // At least one item per slice: on a loaded machine the
                      // script's own start can take the whole second, and
                      // a slice that never begins an item makes no progress.
                      "  read -r up _ < /proc/uptime\n"
                      "  [ $i -gt $first ] && [ $(( ${up%.*}${up#*.} - start )) -ge 100 ] && exit 75\n"
                      "  " +
                      Quote(CRONLEDGER_BIN) +
                      " effect run --key item-$i --reconcile \"$D/reconcile.sh\" --checkpoint $i "
                      "--checkpoint-scope partition -- " +
                      sink +
                      " --db \"$D/sink.db\" --key item-$i --token \"$CRONLEDGER_FENCING_TOKEN\" "
                      "--note \"run $CRONLEDGER_RUN_ID attempt $CRONLEDGER_ATTEMPT\" || exit $?\n"
                      "  i=$((i + 1))\n"
                      "done\n");
  sc.dir().WriteScript(
      "reconcile.sh", "#!/bin/sh\nD='" + d + "'\n" +
                          "echo \"$CRONLEDGER_EFFECT_KEY\" >> \"$D/reconcile.calls\"\n"
                          "exec " +
                          sink + " --db \"$D/sink.db\" --check --key \"$CRONLEDGER_EFFECT_KEY\"\n");

  // Kill points: after a random number of accepted items; then, by a coin
  // toss, either after a random pause of up to 300 ms (anywhere in an
  // item's life: begin, CMD, commit, between items, between attempts) or
  // as soon as the ledger holds a `started` effect (between a begin and its
  // commit, so the restarted serve has a doubt to reconcile).
  // At least kGap items apart, so that steps are back at work each time.
  constexpr int kGap = 50;
  std::vector<int> kill_after;
  std::uniform_int_distribution<int> point(0, kItems - kGap * (kKills + 1));
  for (int k = 0; k < kKills; ++k) kill_after.push_back(point(rng));
  std::sort(kill_after.begin(), kill_after.end());
  for (int k = 0; k < kKills; ++k) kill_after[k] += kGap * (k + 1);
  std::uniform_int_distribution<int> pause_ms(0, 300);
  std::bernoulli_distribution mid_effect(0.5);

  Sql sink_db(sc.SinkDb());
  auto accepted = [&] { return sink_db.Int("SELECT count(*) FROM writes WHERE accepted = 1"); };
  int node = 0;
  auto start_serve = [&] {
    ++node;
    return std::make_unique<ServeProcess>(
        sc.Config(), sc.dir().File("serve-" + std::to_string(node) + ".log"),
        std::vector<std::string>{"--node-id", "node-" + std::to_string(node)});
  };
  Sql ledger(sc.LedgerDb());
  auto started_keys = [&] {
    std::set<std::string> keys;
    for (const auto& row :
         ledger.Rows("SELECT key FROM effects WHERE job = 'items' AND state = 'started'")) {
      keys.insert(row[0]);
    }
    return keys;
  };
  std::set<std::string> in_doubt;  // effects left started by a kill
  std::string plan;
  std::unique_ptr<ServeProcess> serve = start_serve();
  for (int threshold : kill_after) {
    ASSERT_TRUE(WaitFor([&] { return accepted() >= threshold; }, 9000, 20))
        << "stuck at " << accepted() << " accepted items\n"
        << serve->Log();
    if (mid_effect(rng)) {
      plan += " " + std::to_string(threshold) + " (mid-effect)";
      WaitFor([&] { return !started_keys().empty(); }, 500, 2);
    } else {
      const int pause = pause_ms(rng);
      plan += " " + std::to_string(threshold) + " (+" + std::to_string(pause) + " ms)";
      usleep(static_cast<useconds_t>(pause) * 1000);
    }
    ASSERT_TRUE(serve->Running()) << serve->Log();
    serve->Kill9();
    // Every step of the killed node dies with it (its supervisor shims).
    ASSERT_TRUE(WaitFor(
        [&] {
          ReapZombies();
          return sc.LiveSteps().empty();
        },
        200))
        << "steps outlived their killed serve";
    // What is `started` now is in doubt: its attempt is gone.
    for (const auto& key : started_keys()) in_doubt.insert(key);
    serve = start_serve();
  }
  std::cout << "[ info     ] kill -9 of serve after accepted items:" << plan << "; in doubt "
            << in_doubt.size() << "\n";

  auto runs_done = [&] {
    return ledger.Int("SELECT count(*) FROM runs WHERE state IN ('pending', 'running')") == 0 &&
           ledger.Int("SELECT count(*) FROM runs") >= kPartitions;
  };
  // Done: no run pending or running (a run that failed or became unknown
  // is done too, and reported below).
  ASSERT_TRUE(WaitFor(runs_done, 3000, 50)) << accepted() << " accepted items\n" << serve->Log();
  EXPECT_EQ(serve->Stop(), 0) << serve->Log();

  // Every run succeeded: with a reconcile program no doubt is left.
  std::vector<std::string> run_keys;
  for (const auto& row :
       ledger.Rows("SELECT job || '/' || partition || '/' || period, state, attempts FROM runs "
                   "ORDER BY id")) {
    run_keys.push_back(row[0]);
    EXPECT_EQ(row[1], "succeeded") << row[0] << " after " << row[2] << " attempts";
  }
  CheckInput in;
  in.expected_keys = run_keys;
  in.runs_deliver_run_keys = false;
  in.effects_job = "items";
  for (int i = 1; i <= kItems; ++i) in.expected_deliveries.push_back("item-" + std::to_string(i));
  const auto v = sc.CheckWith(in);
  EXPECT_TRUE(v.empty()) << Describe(v);
  EXPECT_EQ(accepted(), kItems);
  EXPECT_EQ(sink_db.Int("SELECT count(*) FROM writes WHERE accepted = 0"), 0)
      << "no stale write even reached the sink";

  // Each partition's watermark is its last item.
  std::map<std::string, std::string> watermarks;
  for (const auto& row : ledger.Rows("SELECT partition, value FROM checkpoints WHERE scope = "
                                     "'partition' AND job = 'items'")) {
    watermarks[row[0]] = row[1];
  }
  EXPECT_EQ(watermarks, (std::map<std::string, std::string>{
                            {"p1", "250"}, {"p2", "500"}, {"p3", "750"}, {"p4", "1000"}}));

  // What the faults did, for the record.
  std::map<std::string, int64_t> ends;
  for (const auto& row :
       ledger.Rows("SELECT coalesce(end_class, 'open'), count(*) FROM attempts GROUP BY 1")) {
    ends[row[0]] = std::stoll(row[1]);
  }
  std::string end_text;
  for (const auto& [cls, n] : ends) end_text += " " + cls + " " + std::to_string(n);
  std::cout << "[ info     ] attempts by end class:" << end_text << "; effects reconciled: "
            << ledger.Int("SELECT count(*) FROM events WHERE type = 'effect_reconciled'")
            << " (reconcile program runs: "
            << testing::Lines(ReadFile(sc.dir().File("reconcile.calls"))).size() << ")\n";
  EXPECT_GE(ends["lease_expired"], 1) << "no kill landed while a step ran";
  // Each effect a kill left in doubt was reconciled by a later attempt.
  for (const auto& key : in_doubt) {
    EXPECT_EQ(ledger.Int("SELECT count(*) FROM events WHERE type = 'effect_reconciled' AND "
                         "json_extract(details, '$.key') = '" +
                         key + "'"),
              1)
        << key << " was in doubt after a kill";
  }
  EXPECT_TRUE(sc.LiveSteps().empty());
}

}  // namespace
}  // namespace cronledger::faults
