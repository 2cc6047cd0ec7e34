// Fault scenarios with real `cronledger serve` processes on one SQLite file,
// real subprocess steps writing to the fenced sink (fenced_sink.cc), each
// ending with the invariant checker (invariant_checker.h). The scenario kit
// (folder, processes, SQL reads, the sweeper) is in scenario.h.
//
// Time is read only through polling counts (WaitFor): no clock, no
// wall-clock assertion. Every process a test starts is killed and reaped by
// an RAII guard, even when an assertion fails: serve by ServeProcess, steps
// and anything they left behind by ProcessSweeper, which also makes this
// process the subreaper of everything below it (orphans come back to us).
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/subprocess.h"
#include "common/serve_process.h"
#include "faults/invariant_checker.h"
#include "faults/scenario.h"

namespace cronledger::faults {
namespace {

using Json = nlohmann::json;
using testing::Cronledger;
using testing::ServeProcess;
using testing::WaitFor;

// Any free port: the nodes are named by --node-id.
std::string Listen(int) { return "127.0.0.1:0"; }

// ---------------------------------------------------------------------------
// a. kill -9 of serve mid-step, then restart.

TEST(FaultKill9, ServeKilledMidStepThenRestartedRunSucceedsExactlyOnce) {
  Scenario sc;
  sc.WriteConfig({.name = "kill9", .partitions = "", .lease_ttl = "4s", .timeout = "3s"});
  // The first step ever started hangs (the step process itself becomes
  // `sleep`) until it is killed; its retry delivers at once.
  sc.WriteStep("  exec sleep 60");

  ServeProcess first(sc.Config(), sc.dir().File("serve-a.log"), {"--node-id", "node-a", "--listen", Listen(0)});
  ASSERT_TRUE(WaitFor([&] { return Exists(sc.dir().File("slow.pid")); }, 600)) << first.Log();
  const pid_t step = ReadPid(sc.dir().File("slow.pid"));
  const pid_t group = ReadPid(sc.dir().File("slow.pgid"));
  const int64_t run_id = ReadPid(sc.dir().File("slow.run"));
  ASSERT_GT(step, 1);
  ASSERT_TRUE(Alive(step));
  // The group is led by serve's supervisor shim, and the step is in it.
  ASSERT_GT(group, 1);
  ASSERT_NE(group, step);
  ASSERT_EQ(StatOf(step)->pgrp, group);
  ASSERT_FALSE(LiveGroupMembers(group).empty());
  first.Kill9();

  // The orphaned step does not keep running unsupervised: it dies with its
  // supervisor (PR_SET_PDEATHSIG), and its group is empty.
  EXPECT_TRUE(WaitFor(
      [&] {
        ReapZombies();
        return !Alive(step);
      },
      100))
      << "step " << step << " outlived its killed supervisor";
  EXPECT_TRUE(WaitFor(
      [&] {
        ReapZombies();
        return LiveGroupMembers(group).empty();
      },
      100));

  // Nothing closed the attempt: the run is still running under node-a.
  Json run = sc.Run(run_id);
  ASSERT_TRUE(run.is_object());
  EXPECT_EQ(run["state"], "running") << run.dump(2);
  const std::string run_key = run["run_key"];

  // The restarted serve's reaper takes the expired lease back; the retry
  // (idempotent step) succeeds.
  ServeProcess second(sc.Config(), sc.dir().File("serve-b.log"), {"--node-id", "node-b", "--listen", Listen(1)});
  ASSERT_TRUE(WaitFor([&] { return sc.StateOf(run_id) == "succeeded"; }, 600))
      << "state " << sc.StateOf(run_id) << "\n"
      << second.Log();
  EXPECT_EQ(second.Stop(), 0) << second.Log();

  run = sc.Run(run_id);
  ASSERT_EQ(run["attempt_list"].size(), 2u) << run.dump(2);
  const Json& lost = run["attempt_list"][0];
  const Json& retry = run["attempt_list"][1];
  EXPECT_EQ(lost["node"], "node-a");
  EXPECT_EQ(lost["end_class"], "lease_expired") << "killed before its 3 s timeout: " << run.dump(2);
  EXPECT_FALSE(lost["ended_at"].is_null());
  EXPECT_EQ(retry["node"], "node-b");
  EXPECT_EQ(retry["end_class"], "succeeded");
  EXPECT_GT(retry["fencing_token"].get<int64_t>(), lost["fencing_token"].get<int64_t>());

  Sql sink(sc.SinkDb());
  const auto writes = sink.Rows("SELECT token, accepted FROM writes WHERE key = '" + run_key + "'");
  ASSERT_EQ(writes.size(), 1u) << "one write, by the retry";
  EXPECT_EQ(writes[0][0], std::to_string(retry["fencing_token"].get<int64_t>()));
  EXPECT_EQ(writes[0][1], "1");

  const auto v = sc.Check({run_key});
  EXPECT_TRUE(v.empty()) << Describe(v);
  EXPECT_TRUE(sc.LiveSteps().empty());
}

// The bug this caught: PR_SET_PDEATHSIG reaches only the process that set
// it, so after kill -9 of serve the step's own children kept running
// unsupervised; here such an orphan delivered with the dead attempt's token
// before the retry did, and the key was delivered twice. Each step now runs
// under a small supervisor shim that kills its whole process group when
// serve dies (src/exec/subprocess_executor.cc, RunChild).
TEST(FaultKill9, StepDescendantsDieWithKilledServe) {
  Scenario sc;
  sc.WriteConfig({.name = "kill9", .partitions = "", .lease_ttl = "4s", .timeout = "3s"});
  // The first step ever started does its work in a child process of its own
  // group (as a step that calls a program does), which delivers a little later.
  sc.WriteStep(std::string("  ( sleep 2; exec '") + FENCED_SINK_BIN +
               "' --db \"$D/sink.db\" --key \"$1\" --token \"$CRONLEDGER_FENCING_TOKEN\" "
               "--note orphan ) &\n  echo $! > \"$D/slow.child.tmp\" && mv \"$D/slow.child.tmp\" "
               "\"$D/slow.child\"\n  wait\n  exit 0");

  ServeProcess first(sc.Config(), sc.dir().File("serve-a.log"), {"--node-id", "node-a", "--listen", Listen(0)});
  ASSERT_TRUE(WaitFor([&] { return Exists(sc.dir().File("slow.child")); }, 600)) << first.Log();
  const pid_t step = ReadPid(sc.dir().File("slow.pid"));
  const pid_t group = ReadPid(sc.dir().File("slow.pgid"));
  const pid_t child = ReadPid(sc.dir().File("slow.child"));
  const int64_t run_id = ReadPid(sc.dir().File("slow.run"));
  ASSERT_GT(group, 1);
  ASSERT_TRUE(Alive(child));
  ASSERT_EQ(StatOf(child)->pgrp, group);
  first.Kill9();

  EXPECT_TRUE(WaitFor(
      [&] {
        ReapZombies();
        return !Alive(step);
      },
      100));
  EXPECT_TRUE(WaitFor(
      [&] {
        ReapZombies();
        return LiveGroupMembers(group).empty();
      },
      20))
      << "the step's child " << child << " outlived its killed supervisor";
  // Whatever the orphan does, it does before the restart.
  ASSERT_TRUE(WaitFor(
      [&] {
        ReapZombies();
        return LiveGroupMembers(group).empty();
      },
      200));

  ServeProcess second(sc.Config(), sc.dir().File("serve-b.log"), {"--node-id", "node-b", "--listen", Listen(1)});
  ASSERT_TRUE(WaitFor([&] { return sc.StateOf(run_id) == "succeeded"; }, 600)) << second.Log();
  EXPECT_EQ(second.Stop(), 0) << second.Log();
  const std::string run_key = sc.Run(run_id)["run_key"];
  const auto v = sc.Check({run_key});
  EXPECT_TRUE(v.empty()) << Describe(v);
}

// ---------------------------------------------------------------------------
// b. SIGSTOP of the serve holding a lease, past its TTL.

TEST(FaultSigstop, StalledLeaseHolderIsFencedOffAfterTakeover) {
  Scenario sc;
  sc.WriteConfig({.name = "stall", .partitions = "", .lease_ttl = "4s", .timeout = "3s"});
  // The first step ever started waits (bounded) for `go`, then delivers with
  // its old token: the late write of a worker that stalled.
  sc.WriteStep(
      "  i=0\n  while [ ! -e \"$D/go\" ]; do\n    i=$((i+1)); [ $i -gt 600 ] && exit 75\n"
      "    sleep 0.1\n  done");

  ServeProcess a(sc.Config(), sc.dir().File("serve-a.log"), {"--node-id", "node-a", "--listen", Listen(0)});
  ASSERT_TRUE(WaitFor([&] { return Exists(sc.dir().File("slow.pid")); }, 600)) << a.Log();
  const int64_t run_id = ReadPid(sc.dir().File("slow.run"));

  // Stop node-a at a moment it does not hold SQLite's write lock (a process
  // stopped inside a transaction would block every node: SQLite, not the
  // scenario). Bounded: resume and try again a few times.
  Sql ledger(sc.LedgerDb());
  bool stopped = false;
  for (int i = 0; i < 20 && !stopped; ++i) {
    a.Signal(SIGSTOP);
    usleep(20 * 1000);
    stopped = ledger.WriteLockFree(300);
    if (!stopped) {
      a.Signal(SIGCONT);
      usleep(30 * 1000);
    }
  }
  ASSERT_TRUE(stopped) << "node-a kept the write lock";

  // It held a live lease when stopped: running, under node-a's token, attempt open.
  Json run = sc.Run(run_id);
  ASSERT_TRUE(run.is_object());
  ASSERT_EQ(run["state"], "running") << run.dump(2);
  ASSERT_EQ(run["attempt_list"].size(), 1u) << run.dump(2);
  EXPECT_EQ(run["attempt_list"][0]["node"], "node-a");
  EXPECT_TRUE(run["attempt_list"][0]["ended_at"].is_null());
  const int64_t old_token = run["attempt_list"][0]["fencing_token"];
  const std::string run_key = run["run_key"];
  const auto lease =
      ledger.Rows("SELECT lease_node, lease_token FROM runs WHERE id = " + std::to_string(run_id));
  ASSERT_EQ(lease.size(), 1u);
  EXPECT_EQ(lease[0], (std::vector<std::string>{"node-a", std::to_string(old_token)}));

  // node-b on the same file takes the run over once the lease expires.
  ServeProcess b(sc.Config(), sc.dir().File("serve-b.log"), {"--node-id", "node-b", "--listen", Listen(1)});
  ASSERT_TRUE(WaitFor([&] { return sc.StateOf(run_id) == "succeeded"; }, 600))
      << "state " << sc.StateOf(run_id) << "\n"
      << b.Log();
  run = sc.Run(run_id);
  ASSERT_EQ(run["attempt_list"].size(), 2u) << run.dump(2);
  EXPECT_EQ(run["attempt_list"][0]["end_class"], "lease_expired");
  EXPECT_EQ(run["attempt_list"][1]["node"], "node-b");
  EXPECT_EQ(run["attempt_list"][1]["end_class"], "succeeded");
  const int64_t new_token = run["attempt_list"][1]["fencing_token"];
  EXPECT_GT(new_token, old_token);

  // The stalled worker's step wakes and writes late: the sink refuses it.
  Sql sink(sc.SinkDb());
  const std::string old_write = "SELECT accepted FROM writes WHERE key = '" + run_key +
                                "' AND token = " + std::to_string(old_token);
  sc.dir().Write("go", "");
  EXPECT_TRUE(WaitFor([&] { return !sink.Rows(old_write).empty(); }, 200));
  EXPECT_EQ(sink.Int(old_write), 0) << "the late write was accepted";

  // node-a resumes: its writes under the old token are rejected.
  a.Signal(SIGCONT);
  auto stale_rejections = [&] {
    int n = 0;
    for (const auto& e : sc.Events(run_id)) n += e["type"] == "stale_write_rejected" ? 1 : 0;
    return n;
  };
  EXPECT_TRUE(WaitFor([&] { return stale_rejections() >= 1; }, 100, 100)) << a.Log();
  for (const auto& e : sc.Events(run_id)) {
    if (e["type"] == "stale_write_rejected") {
      EXPECT_EQ(e["actor"], "node-a") << e.dump();
      EXPECT_EQ(e["details"]["token"], old_token) << e.dump();
    }
  }
  // ... and changed nothing.
  EXPECT_EQ(a.Stop(), 0) << a.Log();
  EXPECT_EQ(b.Stop(), 0) << b.Log();
  const Json after = sc.Run(run_id);
  EXPECT_EQ(after["state"], "succeeded");
  EXPECT_EQ(after["attempt_list"], run["attempt_list"]) << after.dump(2);
  EXPECT_EQ(after["steps"], Json::parse(R"([{"name": "deliver", "state": "succeeded"}])"));
  const auto writes =
      sink.Rows("SELECT token, accepted FROM writes WHERE key = '" + run_key + "' ORDER BY id");
  EXPECT_EQ(writes, (std::vector<std::vector<std::string>>{{std::to_string(new_token), "1"},
                                                           {std::to_string(old_token), "0"}}));

  const auto v = sc.Check({run_key});
  EXPECT_TRUE(v.empty()) << Describe(v);
  EXPECT_TRUE(sc.LiveSteps().empty());
}

// ---------------------------------------------------------------------------
// c. Two serve processes sharing one SQLite file over a few hundred runs.

TEST(FaultTwoNodes, ShareTheLedgerWithoutExecutingAnyRunTwice) {
  Scenario sc;
  sc.WriteConfig({.name = "pair",
                  .partitions = R"(["p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8", "p9"])",
                  .lease_ttl = "",
                  .timeout = "20s",
                  .drain_timeout = "20s"});
  sc.WriteStep("");
  constexpr int kTarget = 200;

  ServeProcess a(sc.Config(), sc.dir().File("serve-a.log"), {"--node-id", "node-a", "--listen", Listen(0)});
  ServeProcess b(sc.Config(), sc.dir().File("serve-b.log"), {"--node-id", "node-b", "--listen", Listen(1)});
  Sql ledger(sc.LedgerDb());
  const bool reached = WaitFor(
      [&] {
        return a.Running() && b.Running() &&
               ledger.Int("SELECT count(*) FROM runs WHERE state = 'succeeded'") >= kTarget;
      },
      400, 100);
  EXPECT_TRUE(a.Running()) << a.Log();
  EXPECT_TRUE(b.Running()) << b.Log();
  ASSERT_TRUE(reached) << "succeeded: "
                       << ledger.Int("SELECT count(*) FROM runs WHERE state = 'succeeded'");
  // Both drain: what they claimed finishes.
  EXPECT_EQ(a.Stop(), 0) << a.Log();
  EXPECT_EQ(b.Stop(), 0) << b.Log();

  std::vector<std::string> expected;
  for (const auto& row : ledger.Rows("SELECT job || '/' || partition || '/' || period FROM runs "
                                     "WHERE attempts > 0")) {
    expected.push_back(row[0]);
  }
  EXPECT_GE(expected.size(), static_cast<std::size_t>(kTarget));
  const auto v = sc.Check(expected);
  EXPECT_TRUE(v.empty()) << Describe(v);

  // None executed twice: one attempt per claimed run, one sink write per key.
  EXPECT_EQ(ledger.Int("SELECT count(*) FROM runs WHERE attempts > 1"), 0);
  Sql sink(sc.SinkDb());
  EXPECT_EQ(sink.Int("SELECT count(*) FROM (SELECT key FROM writes GROUP BY key "
                     "HAVING count(*) > 1)"),
            0);
  EXPECT_EQ(sink.Int("SELECT count(*) FROM writes"), static_cast<int64_t>(expected.size()));

  // Each node completed at least 10% of them.
  std::map<std::string, int64_t> per_node;
  for (const auto& row : ledger.Rows("SELECT node, count(*) FROM attempts WHERE "
                                     "end_class = 'succeeded' GROUP BY node")) {
    per_node[row[0]] = std::stoll(row[1]);
  }
  const auto total = static_cast<int64_t>(expected.size());
  std::cout << "[ info     ] " << total << " runs: node-a " << per_node["node-a"] << ", node-b "
            << per_node["node-b"] << "\n";
  EXPECT_GE(per_node["node-a"] * 10, total) << "node-a " << per_node["node-a"] << " of " << total;
  EXPECT_GE(per_node["node-b"] * 10, total) << "node-b " << per_node["node-b"] << " of " << total;
  EXPECT_EQ(per_node.size(), 2u);
  EXPECT_TRUE(sc.LiveSteps().empty());
}

}  // namespace
}  // namespace cronledger::faults
