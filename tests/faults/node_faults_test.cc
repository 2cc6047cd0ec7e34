// Many nodes on one PostgreSQL database (issue 8; docs/deploy.md, several
// nodes; docs/architecture.md, Time and Invariants), with real
// `cronledger serve` processes, real steps and the fenced sink, each
// scenario in a schema of its own in the pg_server fixture's server:
//
//  - FaultNodes.ThreeNodes*: three nodes share 600+ run keys whose steps
//    deliver through `cronledger effect run` into the fenced sink; one node
//    is killed with kill -9 and one frozen with SIGSTOP past its leases,
//    each while it holds live leases, then resumed; the same with one
//    node's clock an hour ahead (libfaketime).
//  - FaultNodes.ConnectionCutAtCommit*: a proxy (pg_proxy.h) between a node
//    and the database cuts the connection at the COMMIT of chosen
//    transactions, after or instead of sending it.
//  - FaultNodes.DatabaseOutage*: the proxy refuses the node for a while.
//  - FaultNodes.NodesPlanningAtOnce*: three nodes start together on an empty
//    database.
//
// Time is read only through polling counts (WaitFor) and the database's
// clock (to tell a live lease): no wall-clock assertion; the WaitFor bounds
// are failure guards.
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cli/subprocess.h"
#include "common/serve_fixture.h"
#include "faults/invariant_checker.h"
#include "faults/pg_proxy.h"
#include "faults/scenario.h"
#include "store/pg_test_server.h"

namespace cronledger::faults {
namespace {

using testing::ServeProcess;
using testing::WaitFor;

constexpr const char* kJob = "multi";
// The database's clock in the ledger's unit (ms since the epoch).
constexpr const char* kDbNowMs = "(extract(epoch FROM clock_timestamp()) * 1000)::bigint";
constexpr const char* kLibFaketime = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1";

std::string Quote(const std::string& s) { return "'" + s + "'"; }

// The last `lines` lines of a log, for failure messages.
std::string Tail(const std::string& text, std::size_t lines = 40) {
  std::size_t at = text.size();
  for (std::size_t n = 0; n <= lines && at != std::string::npos && at > 0; ++n) {
    at = text.rfind('\n', at - 1);
  }
  return "...\n" + (at == std::string::npos ? text : text.substr(at + 1));
}

std::string Partitions(int n) {
  std::string text = "[";
  for (int i = 0; i < n; ++i) {
    char name[16];
    snprintf(name, sizeof name, "p%03d", i);
    text += std::string(i ? ", " : "") + "\"" + name + "\"";
  }
  return text + "]";
}

// The port of a postgresql://user@host:PORT/db URL; 0 when none.
int PortOf(const std::string& url) {
  const auto at = url.find('@');
  const auto colon = url.find(':', at == std::string::npos ? url.find("://") + 3 : at);
  const auto slash = url.find('/', colon == std::string::npos ? 0 : colon);
  if (colon == std::string::npos || slash == std::string::npos) return 0;
  return std::atoi(url.substr(colon + 1, slash - colon - 1).c_str());
}

// `url` with its port replaced.
std::string WithPort(const std::string& url, int port) {
  const auto at = url.find('@');
  const auto colon = url.find(':', at == std::string::npos ? url.find("://") + 3 : at);
  const auto slash = url.find('/', colon);
  return url.substr(0, colon + 1) + std::to_string(port) + url.substr(slash);
}

// GET /metrics of the serve on `port`; "" when it does not answer 200.
std::string Metrics(int port) {
  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(10, 0);
  auto r = client.Get("/metrics");
  return r && r->status == 200 ? r->body : "";
}

// GET `path` (/healthz, /livez): its status (0 for no answer) and body.
std::pair<int, std::string> Probe(int port, const std::string& path) {
  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(10, 0);
  auto r = client.Get(path);
  return r ? std::make_pair(r->status, r->body) : std::make_pair(0, std::string());
}

// The value of the sample `name` (with its labels, if any) in a scrape;
// -1 when absent.
double Sample(const std::string& scrape, const std::string& name) {
  const std::string line_start = "\n" + name + " ";
  const auto at = scrape.find(line_start);
  if (at == std::string::npos) return -1;
  return std::atof(scrape.c_str() + at + line_start.size());
}

// The time of a serve log's first line ("2026-11-30T10:21:26.881Z info
// ..."), seconds since the epoch; 0 when there is none yet.
int64_t FirstLogSecond(const std::string& log) {
  struct tm tm {};
  if (log.size() < 20 || strptime(log.c_str(), "%Y-%m-%dT%H:%M:%S", &tm) == nullptr) return 0;
  return static_cast<int64_t>(timegm(&tm));
}

// A PostgreSQL scenario with one every-second job whose step delivers its
// run key through `cronledger effect run` (the effect key is the run key;
// reconcile.sh asks the sink) into the fenced sink, and helpers to run
// nodes on it.
class Nodes {
 public:
  struct Options {
    int partitions = 50;
    int max_workers = 4;
    // Short, so a node's leases run out soon after a kill or a stop; the
    // step's timeout shorter still, but far above a step's ~100 ms: a
    // loaded machine makes that seconds, and a step timed out while its
    // `effect run` reconciles an effect in doubt leaves the run `unknown`
    // (docs/effects.md), which these tests do not expect.
    std::string lease_ttl = "10s";
    std::string timeout = "8s";
    std::string drain_timeout = "20s";
    std::string server_extra = "metrics_public = true\n";  // GET /metrics without a token
  };

  explicit Nodes(const Options& o) : sc_(Backend::kPostgres), options_(o) {
    const std::string d = sc_.dir().path();
    const std::string sink = Quote(FENCED_SINK_BIN);
    sc_.dir().WriteScript(
        "step.sh", "#!/bin/sh\nD='" + d + "'\n" + RecordStepGroupShell() + "exec " +
                       Quote(CRONLEDGER_BIN) +
                       " effect run --key \"$1\" --reconcile \"$D/reconcile.sh\" -- " + sink +
                       " --db \"$D/sink.db\" --key \"$1\" --token \"$CRONLEDGER_FENCING_TOKEN\" "
                       "--note \"run $CRONLEDGER_RUN_ID attempt $CRONLEDGER_ATTEMPT\"\n");
    sc_.dir().WriteScript("reconcile.sh",
                          "#!/bin/sh\nexec " + sink + " --db '" + d +
                              "/sink.db' --check --key \"$CRONLEDGER_EFFECT_KEY\"\n");
  }

  Scenario& sc() { return sc_; }
  Sql& ledger() { return ledger_; }

  JobSpec Job() const {
    return {.name = kJob,
            .partitions = Partitions(options_.partitions),
            .lease_ttl = options_.lease_ttl,
            .timeout = options_.timeout,
            .drain_timeout = options_.drain_timeout,
            .max_workers = options_.max_workers,
            .max_attempts = 50,
            // Leak checking at the exit of each of the thousands of `effect
            // run` processes would double their cost (as FaultEffectItems).
            .env = R"({ ASAN_OPTIONS = "detect_leaks=0:detect_odr_violation=0" })",
            .misfire_grace = "1h",
            .server_extra = options_.server_extra};
  }

  // Writes NODE.toml, whose store URL names the node (application_name:
  // the test finds its backend in pg_stat_activity), through `store` when
  // given (a proxy), and starts `serve --node-id NODE` with `env`.
  std::unique_ptr<ServeProcess> Start(const std::string& node,
                                      const std::vector<std::string>& env = {},
                                      const std::string& store = "") {
    const std::string params = "application_name=" + node;
    sc_.WriteConfig(Job(), node + ".toml",
                    store.empty() ? sc_.StoreUrl(params) : store + "&" + params);
    return serve_.Start(node, sc_.dir().File(node + ".toml"), env);
  }

  // (run id, fencing token) of the live leases `node` holds now: running
  // under its token, not yet expired by the database's clock.
  std::set<std::pair<int64_t, int64_t>> LiveLeases(const std::string& node) {
    std::set<std::pair<int64_t, int64_t>> out;
    for (const auto& r : ledger_.Rows("SELECT id, lease_token FROM runs WHERE state = 'running' "
                                      "AND lease_node = '" +
                                      node + "' AND lease_expires_at > " + kDbNowMs)) {
      out.insert({std::stoll(r[0]), std::stoll(r[1])});
    }
    return out;
  }

  // Whether every lease of `leases` was taken back: its run no longer
  // runs under that token.
  bool AllTakenBack(const std::set<std::pair<int64_t, int64_t>>& leases) {
    for (const auto& [id, token] : leases) {
      if (ledger_.Int("SELECT count(*) FROM runs WHERE id = " + std::to_string(id) +
                      " AND state = 'running' AND lease_token = " + std::to_string(token)) != 0) {
        return false;
      }
    }
    return true;
  }

  // Whether `node`'s database session is between transactions: stopped
  // now, it holds no lock (a node stopped inside a write transaction would
  // hold the write lock, and every node would wait for it).
  bool SessionIdle(const std::string& node) {
    const auto rows = ledger_.Rows(
        "SELECT state FROM pg_stat_activity WHERE application_name = '" + node + "'");
    if (rows.empty()) return false;
    for (const auto& r : rows) {
      if (r[0] != "idle") return false;
    }
    return true;
  }

  // Succeeded runs among the first `n` run keys (by scheduled time).
  int64_t FirstSucceeded(int n) {
    return ledger_.Int(
        "SELECT count(*) FROM (SELECT state FROM runs ORDER BY scheduled_at, partition LIMIT " +
        std::to_string(n) + ") t WHERE state = 'succeeded'");
  }
  int64_t Succeeded() { return ledger_.Int("SELECT count(*) FROM runs WHERE state = 'succeeded'"); }

  // Succeeded attempts per node.
  std::map<std::string, int64_t> PerNode() {
    std::map<std::string, int64_t> out;
    for (const auto& r : ledger_.Rows("SELECT node, count(*) FROM attempts WHERE end_class = "
                                      "'succeeded' GROUP BY node")) {
      out[r[0]] = std::stoll(r[1]);
    }
    return out;
  }

  // The database's clock, ms since the epoch.
  int64_t DbNowMs() { return ledger_.Int(std::string("SELECT ") + kDbNowMs); }
  // The scheduled time of the n-th run key (by scheduled time).
  int64_t NthScheduledAt(int n) {
    return ledger_.Int("SELECT scheduled_at FROM runs ORDER BY scheduled_at, partition OFFSET " +
                       std::to_string(n - 1) + " LIMIT 1");
  }
  // Runs scheduled at or before `cutoff` (ms) that were claimed and have
  // not succeeded (yet).
  int64_t ClaimedNotSucceeded(int64_t cutoff) {
    return ledger_.Int(
        "SELECT count(*) FROM runs WHERE attempts > 0 AND state <> 'succeeded' AND "
        "scheduled_at <= " +
        std::to_string(cutoff));
  }

  // Waits (bounded) for a moment when no claimed run waits for a retry, to
  // stop the nodes then: runs keep falling due, but a retry queued as they
  // stop would stay unfinished.
  void WaitForNoRetryQueued() {
    WaitFor([&] { return ledger_.Int("SELECT count(*) FROM runs WHERE attempts > 0 AND state = "
                                     "'pending'") == 0; },
            200, 50);
  }

  // The checker over every run that was ever claimed: succeeded, its effect
  // committed, delivered exactly once, no stale write accepted. Runs
  // scheduled after `cutoff` (ms) may be pending: a retry queued when the
  // nodes stopped (the test waited for every run up to the cutoff).
  std::vector<Violation> Check(std::vector<std::string>* keys, int64_t cutoff) {
    CheckInput in;
    in.effects_job = kJob;
    for (const auto& r :
         ledger_.Rows("SELECT job || '/' || partition || '/' || period, state, scheduled_at "
                      "FROM runs WHERE attempts > 0")) {
      in.expected_keys.push_back(r[0]);
      if (r[1] == "pending" && std::stoll(r[2]) > cutoff) {
        in.allowed_unfinished.insert(r[0]);
      } else {
        in.expected_deliveries.push_back(r[0]);
      }
    }
    if (keys != nullptr) *keys = in.expected_keys;
    const auto v = sc_.CheckWith(in);
    if (!in.allowed_unfinished.empty()) {
      std::cout << "[ info     ] " << in.allowed_unfinished.size()
                << " run(s) after the cutoff were waiting for a retry when the nodes stopped\n";
    }
    return v;
  }

  // Attempts by end class, for the record.
  std::string EndClasses() {
    std::string text;
    for (const auto& r : ledger_.Rows("SELECT coalesce(end_class, 'open'), count(*) FROM "
                                      "attempts GROUP BY 1 ORDER BY 1")) {
      text += " " + r[0] + " " + r[1];
    }
    return text;
  }

 private:
  Scenario sc_;
  Options options_;
  Sql ledger_{sc_.LedgerDb()};
  ServeNodes serve_{sc_};
};

// ---------------------------------------------------------------------------
// Three nodes, kill -9 and SIGSTOP, optionally one clock an hour off.

struct ThreeNodesCase {
  // The first `target` run keys must all complete. 600: above issue 9's
  // 500 run keys, and within the fault suite's share of CI (each run costs
  // the ASan build ~100 ms of CPU).
  int target = 600;
  // node-c's extra environment: libfaketime, or nothing.
  std::vector<std::string> node_c_env;
};

// Fatal assertions: call through ASSERT_NO_FATAL_FAILURE.
void RunThreeNodes(const ThreeNodesCase& c) {
  // The first kTarget run keys (50 partitions: 12 seconds of occurrences
  // for 600) must all complete; runs keep falling due meanwhile, and any
  // run that was ever claimed must have succeeded when the nodes have
  // drained.
  const int kTarget = c.target;
  Nodes nodes({});
  Sql& ledger = nodes.ledger();

  auto a = nodes.Start("node-a");
  auto b = nodes.Start("node-b");
  auto cnode = nodes.Start("node-c", c.node_c_env);
  if (!c.node_c_env.empty()) {
    // node-c's own clock (its log's timestamps) is an hour ahead of node-a's.
    int64_t a_at = 0;
    int64_t c_at = 0;
    ASSERT_TRUE(WaitFor(
        [&] {
          a_at = FirstLogSecond(a->Log());
          c_at = FirstLogSecond(cnode->Log());
          return a_at > 0 && c_at > 0;
        },
        600));
    EXPECT_NEAR(static_cast<double>(c_at - a_at), 3600, 120);
  }

  // kill -9 of node-a while it holds live leases.
  std::set<std::pair<int64_t, int64_t>> a_leases;
  ASSERT_TRUE(WaitFor(
      [&] {
        ReapZombies();
        return nodes.FirstSucceeded(kTarget) >= kTarget / 10 &&
               nodes.LiveLeases("node-a").size() >= 2;
      },
      1200, 100))
      << "succeeded " << nodes.Succeeded() << "\n"
      << Tail(a->Log());
  a->Kill9();
  // Dead, and its leases still live: it was killed holding them.
  a_leases = nodes.LiveLeases("node-a");
  ASSERT_FALSE(a_leases.empty()) << "node-a held no live lease when it was killed";

  // SIGSTOP of node-b while it holds live leases, between two transactions.
  std::set<std::pair<int64_t, int64_t>> b_leases;
  for (int i = 0; i < 100 && b_leases.empty(); ++i) {
    ASSERT_TRUE(WaitFor(
        [&] {
          ReapZombies();
          return !nodes.LiveLeases("node-b").empty();
        },
        1200))
        << Tail(b->Log());
    b->Signal(SIGSTOP);
    usleep(20 * 1000);
    if (nodes.SessionIdle("node-b")) b_leases = nodes.LiveLeases("node-b");
    if (b_leases.empty()) {
      b->Signal(SIGCONT);
      usleep(50 * 1000);
    }
  }
  ASSERT_FALSE(b_leases.empty()) << "could not stop node-b between transactions with a live lease";

  // Past their leases: node-c's reaper (or the others') takes every one of
  // them back; nothing can finish them, one node being dead and the other
  // stopped.
  ASSERT_TRUE(WaitFor(
      [&] {
        ReapZombies();
        return nodes.AllTakenBack(a_leases) && nodes.AllTakenBack(b_leases);
      },
      600, 100))
      << Tail(cnode->Log());
  b->Signal(SIGCONT);
  // node-a comes back under the same node id, so that it too completes its
  // share (each node at least 10% of the runs: it was dead for a while).
  a = nodes.Start("node-a");

  ASSERT_TRUE(WaitFor(
      [&] {
        ReapZombies();
        return nodes.FirstSucceeded(kTarget) >= kTarget;
      },
      1500, 200))
      << "succeeded " << nodes.FirstSucceeded(kTarget) << " of the first " << kTarget << "\n"
      << Tail(cnode->Log());
  // node-b, resumed, finds its leases gone: its late writes are refused.
  EXPECT_TRUE(WaitFor(
      [&] {
        return ledger.Int("SELECT count(*) FROM events WHERE type = 'stale_write_rejected' AND "
                          "actor = 'node-b'") >= 1;
      },
      400))
      << Tail(b->Log());

  if (!c.node_c_env.empty()) {
    // node-c reports the lag on the database's clock too (an hour ahead, its
    // own would make every run planned within the lookahead an hour late).
    const int port = cnode->WaitForApiPort();
    const std::string scrape = Metrics(port);
    const double lag = Sample(scrape, "cronledger_lag_seconds{job=\"multi\"}");
    EXPECT_GE(lag, 0) << scrape;
    EXPECT_LT(lag, 600) << scrape;
  }
  nodes.WaitForNoRetryQueued();
  EXPECT_EQ(StopAll({a.get(), b.get(), cnode.get()}, 400), (std::vector<int>{0, 0, 0}))
      << Tail(a->Log()) << Tail(b->Log()) << Tail(cnode->Log());

  std::vector<std::string> keys;
  const auto v = nodes.Check(&keys, nodes.NthScheduledAt(kTarget));
  EXPECT_TRUE(v.empty()) << Describe(v);
  EXPECT_GE(keys.size(), static_cast<std::size_t>(kTarget));
  EXPECT_EQ(nodes.FirstSucceeded(kTarget), kTarget);

  // The leases held at the kill and the stop ended lease_expired, and their
  // runs succeeded in a later attempt under a newer token.
  for (const auto& [id, token] : a_leases) {
    const std::string run = std::to_string(id);
    EXPECT_EQ(ledger.Text("SELECT end_class FROM attempts WHERE run_id = " + run +
                          " AND fencing_token = " + std::to_string(token)),
              "lease_expired")
        << "run " << run << " of killed node-a";
    EXPECT_EQ(ledger.Int("SELECT count(*) FROM attempts WHERE run_id = " + run +
                         " AND end_class = 'succeeded' AND fencing_token > " +
                         std::to_string(token)),
              1)
        << "run " << run;
  }
  for (const auto& [id, token] : b_leases) {
    const std::string run = std::to_string(id);
    EXPECT_EQ(ledger.Text("SELECT end_class FROM attempts WHERE run_id = " + run +
                          " AND fencing_token = " + std::to_string(token)),
              "lease_expired")
        << "run " << run << " of stopped node-b: its late writes changed nothing";
    EXPECT_EQ(ledger.Int("SELECT count(*) FROM attempts WHERE run_id = " + run +
                         " AND end_class = 'succeeded' AND fencing_token > " +
                         std::to_string(token)),
              1)
        << "run " << run;
  }

  // Planned by the database's clock: nothing beyond its lookahead (a
  // minute) of the instant it was planned at.
  EXPECT_EQ(ledger.Int("SELECT count(*) FROM runs WHERE scheduled_at > created_at + 65000"), 0)
      << "runs planned beyond the lookahead";

  // Each node completed at least 10% of the runs.
  const auto per_node = nodes.PerNode();
  int64_t total = 0;
  for (const auto& [node, n] : per_node) total += n;
  Sql sink(nodes.sc().SinkDb());
  std::cout << "[ info     ] " << keys.size() << " runs: node-a " << per_node.at("node-a")
            << ", node-b " << per_node.at("node-b") << ", node-c " << per_node.at("node-c")
            << "; leases at the kill " << a_leases.size() << ", at the stop " << b_leases.size()
            << "; attempts:" << nodes.EndClasses() << "; sink writes refused "
            << sink.Int("SELECT count(*) FROM writes WHERE accepted = 0") << "\n";
  EXPECT_EQ(total, nodes.Succeeded()) << "one succeeded attempt per succeeded run";
  for (const char* node : {"node-a", "node-b", "node-c"}) {
    EXPECT_GE(per_node.count(node) ? per_node.at(node) * 10 : 0, total) << node;
  }
  EXPECT_TRUE(nodes.sc().LiveSteps().empty());
}

TEST(FaultNodes, ThreeNodesKill9AndSigstopEveryRunKeyOnce) {
  ASSERT_NO_FATAL_FAILURE(RunThreeNodes({}));
}

// The same with node-c's clock an hour ahead (libfaketime): on PostgreSQL
// every ledger decision is on the database's clock, so nothing changes.
// The same faults and assertions over the first 400 run keys instead of
// 600: what varies here is the clock, and each run costs the ASan build
// ~100 ms of CPU (an `effect run` to start, a supervisor to fork).
TEST(FaultNodes, ThreeNodesWithOneClockAnHourAheadChangeNothing) {
  ASSERT_TRUE(std::filesystem::exists(kLibFaketime))
      << kLibFaketime << " is missing: apt-get install faketime (scripts/install-deps.sh)";
  const std::vector<std::string> faketime = {
      std::string("LD_PRELOAD=") + kLibFaketime, "FAKETIME=+1h",
      // steady_clock stays true: local waits (the only use of the node's
      // own clock) keep working.
      "FAKETIME_DONT_FAKE_MONOTONIC=1",
      // An ASan binary refuses a preloaded library ahead of its runtime.
      "ASAN_OPTIONS=verify_asan_link_order=0"};
  // libfaketime does what it says: `date` under it is an hour ahead.
  const auto real = testing::RunProcess({"/bin/date", "+%s"});
  std::vector<std::string> env = faketime;
  env.push_back("PATH=/usr/bin:/bin");
  const auto faked = testing::RunProcess({"/bin/date", "+%s"}, env);
  ASSERT_EQ(real.exit_code, 0);
  ASSERT_EQ(faked.exit_code, 0) << faked.err;
  const long ahead = std::stol(faked.out) - std::stol(real.out);
  ASSERT_GE(ahead, 3590);
  ASSERT_LE(ahead, 3610);
  ASSERT_NO_FATAL_FAILURE(RunThreeNodes({.target = 400, .node_c_env = faketime}));
}

// ---------------------------------------------------------------------------
// A connection cut at COMMIT, after or instead of sending it.

// What a cut transaction did, told by one of its statements (the store's
// SQL as the proxy sees it: parameters rewritten as $N). Claims and worker
// writes are set-based on PostgreSQL: a batch is one JSON parameter.
constexpr const char* kClaimSql = "UPDATE runs r SET state = 'running', lease_token";
// A worker's last write: its step's result and the attempt's end.
constexpr const char* kStepResultSql = "UPDATE run_steps s SET state = x.state";
// The attempts' ends: $1 [{id, token, end_class, ...}].
constexpr const char* kFinishSql = "UPDATE attempts a SET ended_at";
// A claim's attempts: $3 [{id, number, token, ...}].
constexpr const char* kAttemptSql = "INSERT INTO attempts (run_id, number, fencing_token";
constexpr const char* kEffectSettleSql = "UPDATE effects SET state = $1";

// (run id, fencing token) of every execution of `sql` in a cut transaction,
// from its parameters (1-based positions).
// The parameters of every execution of `sql` in a cut transaction (NULL as
// ""), in order.
std::vector<std::vector<std::string>> Executions(const CutRecord& cut, const std::string& sql) {
  std::vector<std::vector<std::string>> out;
  for (const auto& st : cut.transaction) {
    if (st.sql.find(sql) == std::string::npos) continue;
    std::vector<std::string> params;
    for (const auto& p : st.params) params.push_back(p.value_or(""));
    out.push_back(std::move(params));
  }
  return out;
}

// The rows of the batch (a JSON array in parameter `param`, 1-based) of
// every execution of `sql` in a cut transaction.
std::vector<nlohmann::json> BatchRows(const CutRecord& cut, const std::string& sql, int param) {
  std::vector<nlohmann::json> out;
  for (const auto& params : Executions(cut, sql)) {
    for (auto& row : nlohmann::json::parse(params.at(static_cast<std::size_t>(param - 1)))) {
      out.push_back(std::move(row));
    }
  }
  return out;
}

std::string ViaProxy(Scenario& sc, const PgProxy& proxy) {
  // Plain TCP from the start: the proxy reads the protocol.
  return WithPort(sc.StoreUrl(), proxy.port()) + "&sslmode=disable&gssencmode=disable";
}

// One node whose database connection goes through the proxy. The proxy cuts
// it at the COMMIT of a worker's last write, a claim, an effect's
// settlement and any transaction, each once after sending the COMMIT (the
// server commits, the node cannot know) and once instead of sending it (the
// server rolls back). The node resumes by itself (the store reconnects on
// its next use) and nothing is lost or doubled:
//  - a worker's last write: its attempt ends with its own outcome exactly
//    once: the node re-checks what the lost COMMIT did and applies the
//    write again only when it had not been applied (a blind repeat of an
//    applied write would be refused as stale);
//  - a claim: the runs claimed by a COMMIT that went through are not run
//    (the node does not know it holds them); their leases expire and the
//    reaper takes them back (lease_expired), and a later attempt runs them;
//    a claim that was rolled back left nothing behind: its runs succeeded
//    at their first attempt;
//  - effects and everything else: the checker's invariants.
TEST(FaultNodes, ConnectionCutAtCommitLosesNothingAndDoublesNothing) {
  Nodes nodes({.partitions = 10});
  Sql& ledger = nodes.ledger();
  PgProxy proxy(PortOf(testing::TestPostgresUrl()));
  auto p = nodes.Start("node-p", {}, ViaProxy(nodes.sc(), proxy));

  std::vector<Cut> plan;
  for (const char* match : {kStepResultSql, kClaimSql, kEffectSettleSql, ""}) {
    plan.push_back({match, true});
    plan.push_back({match, false});
  }
  for (const Cut& cut : plan) {
    // Back at work since the last cut, by itself.
    const int64_t before = nodes.Succeeded();
    ASSERT_TRUE(WaitFor(
        [&] {
          ReapZombies();
          return nodes.Succeeded() >= before + 10;
        },
        1200))
        << "stuck at " << nodes.Succeeded() << " succeeded after " << proxy.Cuts().size()
        << " cut(s)\n"
        << Tail(p->Log());
    proxy.Arm(cut);
    ASSERT_TRUE(WaitFor([&] { return !proxy.Armed(); }, 1200))
        << "no transaction matched \"" << cut.match << "\"\n"
        << Tail(p->Log());
  }
  // Works on after the last cut, and every run claimed up to it (those of
  // a claim it never heard of included) succeeds: nothing was lost.
  const int64_t cutoff = nodes.DbNowMs();
  const int64_t after_cuts = nodes.Succeeded();
  ASSERT_TRUE(WaitFor(
      [&] {
        ReapZombies();
        return nodes.Succeeded() >= after_cuts + 20 && nodes.ClaimedNotSucceeded(cutoff) == 0;
      },
      // A guard, wide: on a loaded machine the node runs a minute or more
      // behind its schedule, and every run claimed up to the cutoff waits
      // its turn (seen with other benchmarks running: load 14 on 2 cores).
      3000))
      << nodes.ClaimedNotSucceeded(cutoff) << " claimed run(s) not succeeded\n"
      << Tail(p->Log());
  nodes.WaitForNoRetryQueued();
  EXPECT_EQ(StopAll({p.get()}, 400), std::vector<int>{0}) << Tail(p->Log());

  std::vector<std::string> keys;
  const auto v = nodes.Check(&keys, cutoff);
  EXPECT_TRUE(v.empty()) << Describe(v);
  EXPECT_GT(proxy.connections(), static_cast<int>(plan.size())) << "it reconnected after each cut";

  const auto cuts = proxy.Cuts();
  ASSERT_EQ(cuts.size(), plan.size());
  const auto attempt = [&](const std::string& run, const std::string& where,
                           const std::string& column) {
    return ledger.Text("SELECT " + column + " FROM attempts WHERE run_id = " + run + " AND " +
                       where);
  };
  const auto rejected = [&](const std::string& run, const std::string& token) {
    return ledger.Int("SELECT count(*) FROM events WHERE type = 'stale_write_rejected' AND "
                      "run_id = " +
                      run + " AND details LIKE '%\"token\":" + token + "%'");
  };
  int orphaned_claims = 0;
  for (const CutRecord& cut : cuts) {
    const std::string what = "a cut " + std::string(cut.cut.forward_commit ? "after" : "instead of") +
                             " the COMMIT of \"" + cut.cut.match + "\"";
    if (cut.cut.match == kStepResultSql) {
      const auto finished = BatchRows(cut, kFinishSql, 1);
      EXPECT_FALSE(finished.empty()) << what;
      for (const auto& f : finished) {
        const std::string run = std::to_string(f.at("id").get<int64_t>());
        const std::string token_value = std::to_string(f.at("token").get<int64_t>());
        const std::string token = "fencing_token = " + token_value;
        EXPECT_EQ(attempt(run, token, "end_class"), f.at("end_class").get<std::string>())
            << what << ": run " << run << " " << token
            << " ended with its own outcome, recorded once";
        EXPECT_EQ(attempt(run, token, "node"), "node-p");
        EXPECT_EQ(rejected(run, token_value), 0)
            << what << ": run " << run << ": a write already applied was repeated";
      }
    } else if (cut.cut.match == kClaimSql) {
      const auto claimed = BatchRows(cut, kAttemptSql, 3);
      EXPECT_FALSE(claimed.empty()) << what;
      for (const auto& row : claimed) {
        const std::vector<std::string> c = {std::to_string(row.at("id").get<int64_t>()),
                                            std::to_string(row.at("number").get<int64_t>()),
                                            std::to_string(row.at("token").get<int64_t>())};
        const std::string& run = c.at(0);
        const std::string number = "number = " + c.at(1);
        if (cut.cut.forward_commit) {
          // Committed, unknown to the node: nothing ran it, its lease
          // expired and the reaper took it back; a later attempt succeeded.
          ++orphaned_claims;
          EXPECT_EQ(attempt(run, number, "end_class"), "lease_expired")
              << what << ": run " << run << " " << number;
          EXPECT_EQ(attempt(run, number, "fencing_token"), c.at(2));
          EXPECT_EQ(ledger.Int("SELECT count(*) FROM attempts WHERE run_id = " + run +
                               " AND number > " + c.at(1) + " AND end_class = 'succeeded'"),
                    1)
              << what << ": run " << run;
        } else {
          // Rolled back: a later claim made this attempt (its number and
          // tokens are issued again), and it was not left to expire.
          const std::string end = attempt(run, number, "end_class");
          EXPECT_FALSE(end.empty()) << what << ": run " << run << " " << number;
          EXPECT_NE(end, "lease_expired") << what << ": run " << run << " " << number;
        }
      }
    }
  }
  std::cout << "[ info     ] " << keys.size() << " runs, " << cuts.size() << " cuts, "
            << proxy.connections() << " connections, " << orphaned_claims
            << " run(s) claimed by a COMMIT the node never heard of; attempts:"
            << nodes.EndClasses() << "\n";
  EXPECT_TRUE(nodes.sc().LiveSteps().empty());
}

// ---------------------------------------------------------------------------
// A database outage as one node sees it.

// The proxy refuses the node past the leases it held: serve logs the outage
// once, counts the failed store calls (cronledger_store_errors_total) and
// says the store is down on /metrics (cronledger_store_up 0, still
// answered: the node itself is up) and on its readiness probe (/healthz
// 503 "degraded" within a minute, while /livez stays 200); then the
// database is back and serve resumes by itself, ready again, nothing lost
// or doubled.
TEST(FaultNodes, DatabaseOutageIsLoggedCountedAndServeResumes) {
  Nodes nodes({.partitions = 5});
  Sql& ledger = nodes.ledger();
  PgProxy proxy(PortOf(testing::TestPostgresUrl()));
  auto p = nodes.Start("node-p", {}, ViaProxy(nodes.sc(), proxy));
  const int port = testing::WaitUntilListening(*p);
  ASSERT_GT(port, 0);
  ASSERT_TRUE(WaitFor(
      [&] {
        ReapZombies();
        return nodes.Succeeded() >= 20;
      },
      1200))
      << Tail(p->Log());
  std::string scrape = Metrics(port);
  EXPECT_EQ(Sample(scrape, "cronledger_store_up"), 1) << scrape;
  EXPECT_EQ(Sample(scrape, "cronledger_store_errors_total"), 0) << scrape;
  std::pair<int, std::string> ready = Probe(port, "/healthz");
  EXPECT_EQ(ready.first, 200) << ready.second;
  EXPECT_NE(ready.second.find("\"status\":\"ok\""), std::string::npos) << ready.second;

  // Down while the node holds live leases, and past them: its steps' effect
  // calls, its workers' writes and its reaper all meet the outage.
  std::set<std::pair<int64_t, int64_t>> leases;
  ASSERT_TRUE(WaitFor(
      [&] {
        leases = nodes.LiveLeases("node-p");
        return !leases.empty();
      },
      600))
      << Tail(p->Log());
  proxy.SetDown(true);
  const int64_t before = nodes.Succeeded();
  EXPECT_TRUE(WaitFor([&] {
    return p->Log().find("the store is unavailable") != std::string::npos;
  }, 400)) << Tail(p->Log());
  // Down for a while: a few passes fail, and /metrics says so.
  EXPECT_TRUE(WaitFor(
      [&] {
        scrape = Metrics(port);
        return Sample(scrape, "cronledger_store_up") == 0 &&
               Sample(scrape, "cronledger_store_errors_total") >= 5;
      },
      400))
      << scrape << Tail(p->Log());
  EXPECT_EQ(Sample(scrape, "cronledger_runs{job=\"multi\",state=\"succeeded\"}"), -1)
      << "no ledger series while the ledger cannot be read";
  // Not ready, within a minute of the database going away (1200 x 50 ms);
  // alive all the same, so that a liveness probe does not restart it.
  EXPECT_TRUE(WaitFor(
      [&] {
        ready = Probe(port, "/healthz");
        return ready.first == 503;
      },
      1200))
      << ready.first << " " << ready.second;
  EXPECT_NE(ready.second.find("\"status\":\"degraded\""), std::string::npos) << ready.second;
  EXPECT_NE(ready.second.find("the store refuses writes"), std::string::npos) << ready.second;
  EXPECT_EQ(Probe(port, "/livez").first, 200);
  EXPECT_TRUE(WaitFor(
      [&] {
        for (const auto& [id, token] : leases) {
          if (ledger.Int("SELECT count(*) FROM runs WHERE id = " + std::to_string(id) +
                         " AND lease_token = " + std::to_string(token) +
                         " AND lease_expires_at >= " + kDbNowMs) != 0) {
            return false;
          }
        }
        return true;
      },
      400))
      << "the leases held when the database went away did not expire";
  proxy.SetDown(false);

  EXPECT_TRUE(WaitFor([&] {
    return p->Log().find("the store is available again") != std::string::npos;
  }, 400)) << Tail(p->Log());
  // Every run claimed before it came back succeeds (those whose leases it
  // outlasted included), and new ones too.
  const int64_t cutoff = nodes.DbNowMs();
  ASSERT_TRUE(WaitFor(
      [&] {
        ReapZombies();
        return nodes.Succeeded() >= before + 20 && nodes.ClaimedNotSucceeded(cutoff) == 0;
      },
      1200))
      << Tail(p->Log());
  EXPECT_TRUE(WaitFor(
      [&] {
        scrape = Metrics(port);
        return Sample(scrape, "cronledger_store_up") == 1;
      },
      200))
      << scrape;
  EXPECT_GE(Sample(scrape, "cronledger_store_errors_total"), 5) << scrape;
  EXPECT_TRUE(WaitFor(
      [&] {
        ready = Probe(port, "/healthz");
        return ready.first == 200;
      },
      1200))
      << ready.first << " " << ready.second;
  // One line when it went away, one when it came back, not one per failure.
  const std::string log = p->Log();
  std::size_t outages = 0;
  for (std::size_t at = 0; (at = log.find("the store is unavailable", at)) != std::string::npos;
       ++at) {
    ++outages;
  }
  EXPECT_EQ(outages, 1u) << Tail(log, 80);

  nodes.WaitForNoRetryQueued();
  EXPECT_EQ(StopAll({p.get()}, 400), std::vector<int>{0}) << Tail(p->Log());
  const auto v = nodes.Check(nullptr, cutoff);
  EXPECT_TRUE(v.empty()) << Describe(v);
  EXPECT_TRUE(nodes.sc().LiveSteps().empty());
}

// ---------------------------------------------------------------------------
// Nodes planning at once.

// Three nodes start together on an empty database (its schema is migrated by
// one of them) with a job of 200 partitions every second: each plans what
// it finds unplanned, at the same moments as the others. Every run key is
// created once (one runs row, one `planned` event), and no occurrence of
// the planned span lacks any of its runs. The job is `external` and has no
// worker: nothing runs, so planning is all there is.
TEST(FaultNodes, NodesPlanningAtOnceCreateEachRunOnce) {
  constexpr int kPartitions = 200;
  Scenario sc(Backend::kPostgres);
  const JobSpec job{.name = "fan",
                    .partitions = Partitions(kPartitions),
                    .lease_ttl = "",
                    .timeout = "10s",
                    .command = R"(["true"])",
                    .executor = "external",
                    .server_extra = "metrics_public = true\n"};
  std::vector<std::unique_ptr<ServeProcess>> nodes;
  for (const char* node : {"node-a", "node-b", "node-c"}) {
    sc.WriteConfig(job, std::string(node) + ".toml",
                   sc.StoreUrl(std::string("application_name=") + node));
  }
  // Started back to back: they reach the empty database together.
  for (const char* node : {"node-a", "node-b", "node-c"}) {
    nodes.push_back(std::make_unique<ServeProcess>(
        sc.dir().File(std::string(node) + ".toml"), sc.dir().File(std::string(node) + ".log"),
        std::vector<std::string>{"--node-id", node}));
  }
  // Each has passed its planner at least twice (a pass after another
  // node's).
  for (auto& n : nodes) {
    const int port = testing::WaitUntilListening(*n);
    ASSERT_GT(port, 0);
    double first = -1;
    ASSERT_TRUE(WaitFor(
        [&] {
          const double at =
              Sample(Metrics(port), "cronledger_planner_last_pass_timestamp_seconds");
          if (first < 0) first = at;
          return first > 0 && at > first;
        },
        600))
        << Tail(n->Log());
  }
  std::vector<ServeProcess*> all;
  for (auto& n : nodes) all.push_back(n.get());
  EXPECT_EQ(StopAll(all, 400), (std::vector<int>{0, 0, 0}));

  Sql ledger(sc.LedgerDb());
  const int64_t runs = ledger.Int("SELECT count(*) FROM runs");
  const int64_t occurrences = ledger.Int("SELECT count(*) FROM occurrences");
  std::cout << "[ info     ] " << runs << " runs planned over " << occurrences
            << " occurrences; deduplicated events "
            << ledger.Int("SELECT count(*) FROM events WHERE type = 'deduplicated'") << "\n";
  EXPECT_GE(occurrences, 60) << "the first pass plans the lookahead (a minute)";
  // One run per partition and occurrence, each key once.
  EXPECT_EQ(runs, occurrences * kPartitions);
  EXPECT_EQ(ledger.Int("SELECT count(*) FROM (SELECT 1 FROM runs GROUP BY job, partition, period "
                       "HAVING count(*) > 1) t"),
            0);
  EXPECT_EQ(ledger.Int("SELECT count(DISTINCT job || '/' || partition || '/' || period) FROM runs"),
            runs);
  // Consecutive seconds: no occurrence of the span is missing.
  EXPECT_EQ(ledger.Int("SELECT (max(scheduled_at) - min(scheduled_at)) / 1000 + 1 FROM occurrences"),
            occurrences);
  // Exactly one `planned` event per run, and none for a run that is not there.
  EXPECT_EQ(ledger.Int("SELECT count(*) FROM events WHERE type = 'planned'"), runs);
  EXPECT_EQ(ledger.Int("SELECT count(*) FROM (SELECT run_id FROM events WHERE type = 'planned' "
                       "GROUP BY run_id HAVING count(*) <> 1) t"),
            0);
  EXPECT_EQ(ledger.Int("SELECT count(*) FROM runs r WHERE NOT EXISTS (SELECT 1 FROM events e "
                       "WHERE e.type = 'planned' AND e.run_id = r.id)"),
            0);
  CheckInput in;
  const auto v = sc.CheckWith(in);
  EXPECT_TRUE(v.empty()) << Describe(v);
}

}  // namespace
}  // namespace cronledger::faults
