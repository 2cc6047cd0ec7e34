// External workers end to end: a real `cronledger serve` on a real SQLite
// ledger, and the real example worker, `node examples/worker.js`, in Node.js
// processes of their own. Two workers at once complete every run exactly
// once; a worker stopped (SIGSTOP) past its lease is fenced off: the reaper
// takes the lease back, another worker completes the run, and nothing the
// stalled one writes when it wakes up is applied.
//
// The ledger is planned in this process by the real planner on a fake clock
// (leap days only, schedule "0 9 29 2 *") and its runs of 2024-02-29
// released, so serve (on the real clock) has them due at once and nothing
// else to plan. Node.js is required: without `node` on PATH the tests fail.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "common/raw_socket.h"
#include "common/serve_fixture.h"
#include "common/temp_dir.h"
#include "config/config.h"
#include "cronledger/clock.h"
#include "cronledger/schedule.h"
#include "engine/planner.h"
#include "source_dir.h"
#include "store/sqlite/sqlite_store.h"

namespace cronledger {
namespace {

using testing::ReadFile;
using testing::TempDir;
using testing::WaitFor;

constexpr const char* kWorkerSecret = "worker-e2e-secret-0123456789abcdef";

Clock::TimePoint At(const std::string& rfc3339) {
  return Clock::TimePoint{ParseRfc3339(rfc3339)->time_since_epoch()};
}

std::string ConfigText(const std::string& partitions, const std::string& lease_ttl) {
  return R"([server]
store = "sqlite:ledger.db"
listen = "127.0.0.1:0"
max_workers = 2
metrics_public = true

[[job]]
name = "export"
schedule = "0 9 29 2 *"
timezone = "UTC"
partitions = [)" +
         partitions + R"(]
executor = "external"
backfill = { horizon = "1d" }
lease_ttl = ")" +
         lease_ttl + R"("
retry = { max_attempts = 3, initial_backoff = "100ms", jitter = 0.0 }

  [[job.step]]
  name = "generate"
  timeout = "1s"
  idempotent = true

  [[job.step]]
  name = "deliver"
  timeout = "1s"
  idempotent = true

[[auth.token]]
name = "w"
role = "worker"
secret_env = "CL_E2E_WORKER"
)";
}

// Plans 2024-02-29 09:00 on a fake clock and releases its runs.
void Seed(const std::string& config_path, const std::string& db) {
  auto loaded = config::LoadConfig(config_path);
  ASSERT_TRUE(std::holds_alternative<config::Config>(loaded));
  const config::Config config = std::get<config::Config>(loaded);
  store::SqliteOptions o;
  o.path = db;
  o.synchronous_full = false;
  auto opened = store::SqliteStore::Open(o);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  FakeClock clock(At("2024-02-28T00:00:00Z"));
  engine::Planner planner(config, **opened, clock);
  ASSERT_TRUE(planner.PlanOnce(At("2024-02-28T00:00:00Z")).ok());
  ASSERT_TRUE(planner.PlanOnce(At("2024-02-29T08:59:30Z")).ok());
  store::ReleaseParams release;
  release.job = "export";
  release.now = store::ToInstant(At("2024-02-29T09:00:01Z"));
  auto released = (*opened)->RunRelease(release);
  ASSERT_TRUE(released.ok()) << released.status().ToString();
  ASSERT_GT(released->released, 0);
}

// Rows of a query on the ledger, each row's columns joined by '|'.
std::vector<std::string> Query(const std::string& db_path, const std::string& sql) {
  sqlite3* db = nullptr;
  std::vector<std::string> rows;
  if (sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    ADD_FAILURE() << "cannot open " << db_path;
    sqlite3_close(db);
    return rows;
  }
  sqlite3_busy_timeout(db, 5000);
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr) != SQLITE_OK) {
    ADD_FAILURE() << sql << ": " << sqlite3_errmsg(db);
  } else {
    while (sqlite3_step(s) == SQLITE_ROW) {
      std::string row;
      for (int i = 0; i < sqlite3_column_count(s); ++i) {
        const auto* text = sqlite3_column_text(s, i);
        row += (i ? "|" : "") + std::string(text ? reinterpret_cast<const char*>(text) : "NULL");
      }
      rows.push_back(row);
    }
  }
  sqlite3_finalize(s);
  sqlite3_close(db);
  return rows;
}

std::string One(const std::string& db, const std::string& sql) {
  const auto rows = Query(db, sql);
  return rows.empty() ? "" : rows[0];
}

// `node` on PATH, or "".
std::string FindNode() {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/node";
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) out.push_back(line);
  }
  return out;
}

// `node examples/worker.js ARGS` in the background, its output in `log`.
// The destructor kills (after a SIGCONT) and reaps it.
class NodeWorker {
 public:
  NodeWorker(const std::string& node, const std::vector<std::string>& args,
             const std::string& log) {
    std::vector<std::string> argv = {node, std::string(testing::kSourceDir) + "/examples/worker.js"};
    argv.insert(argv.end(), args.begin(), args.end());
    const char* path = std::getenv("PATH");
    std::vector<std::string> env = {std::string("PATH=") + (path ? path : "/usr/bin:/bin"),
                                    std::string("CRONLEDGER_AUTH_TOKEN=") + kWorkerSecret,
                                    "HOME=/tmp"};
    std::vector<char*> args_c;
    for (auto& a : argv) args_c.push_back(a.data());
    args_c.push_back(nullptr);
    std::vector<char*> env_c;
    for (auto& e : env) env_c.push_back(e.data());
    env_c.push_back(nullptr);
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    pid_ = fork();
    if (pid_ == 0) {
      if (fd >= 0) {
        dup2(fd, STDOUT_FILENO);
        dup2(fd, STDERR_FILENO);
      }
      execve(args_c[0], args_c.data(), env_c.data());
      _exit(127);
    }
    if (fd >= 0) close(fd);
  }
  ~NodeWorker() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    kill(pid_, SIGCONT);
    waitpid(pid_, nullptr, 0);
  }
  NodeWorker(const NodeWorker&) = delete;
  NodeWorker& operator=(const NodeWorker&) = delete;

  void Signal(int sig) {
    if (pid_ > 0) kill(pid_, sig);
  }
  bool Exited() {
    if (pid_ <= 0) return true;
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) != pid_) return false;
    exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    pid_ = -1;
    return true;
  }
  // Polls until it exited (about 2 minutes at most): its exit code, or -2
  // when it is still running.
  int Wait() {
    WaitFor([&] { return Exited(); }, 2400);
    return pid_ > 0 ? -2 : exit_code_;
  }

 private:
  pid_t pid_ = -1;
  int exit_code_ = -1;
};

class WorkerServe : public ::testing::Test {
 protected:
  void SetUp() override {
    node_ = FindNode();
    ASSERT_FALSE(node_.empty())
        << "node is not on PATH: these tests run examples/worker.js and need Node.js 20 "
           "(scripts/install-deps.sh installs Debian's nodejs)";
    setenv("CL_E2E_WORKER", kWorkerSecret, 1);
  }

  // Writes the config, seeds the ledger and starts serve; false on failure.
  bool Start(const std::string& partitions, const std::string& lease_ttl,
             testing::ServeOptions options = {}) {
    config_ = serve_.WriteConfig(ConfigText(partitions, lease_ttl));
    db_ = dir_.File("ledger.db");
    Seed(config_, db_);
    if (::testing::Test::HasFatalFailure()) return false;
    if (!serve_.Start(std::move(options))) return false;
    port_ = serve_.port();
    return true;
  }

  std::vector<std::string> WorkerArgs(const std::string& id, const std::string& out,
                                      const std::vector<std::string>& more = {}) const {
    std::vector<std::string> args = {"--server", "http://127.0.0.1:" + std::to_string(port_),
                                     "--jobs",   "export",
                                     "--worker", id,
                                     "--out",    out};
    args.insert(args.end(), more.begin(), more.end());
    return args;
  }

  std::string Logs(const std::vector<std::string>& names) const {
    std::string all = "serve:\n" + ReadFile(dir_.File("serve.log"));
    for (const auto& n : names) all += "\n" + n + ":\n" + ReadFile(dir_.File(n));
    return all;
  }

  testing::ServeFixture serve_{"cronledger-workers"};
  const TempDir& dir_ = serve_.dir();
  std::string node_;
  std::string config_;
  std::string db_;
  int port_ = 0;
};

TEST_F(WorkerServe, TwoExampleWorkersCompleteEveryRunExactlyOnce) {
  ASSERT_TRUE(Start(R"("acme", "globex", "initech", "hooli", "umbrella", "stark")", "30s"));
  const std::string out = dir_.File("exports.txt");
  NodeWorker a(node_, WorkerArgs("w-a", out, {"--wait", "2", "--exit-when-idle"}),
               dir_.File("a.log"));
  NodeWorker b(node_, WorkerArgs("w-b", out, {"--wait", "2", "--exit-when-idle"}),
               dir_.File("b.log"));
  EXPECT_EQ(a.Wait(), 0) << Logs({"a.log", "b.log"});
  EXPECT_EQ(b.Wait(), 0) << Logs({"a.log", "b.log"});

  // Every run key succeeded, at its first attempt, by one of the workers.
  const auto runs = Query(db_, "SELECT partition, state, attempts FROM runs ORDER BY partition");
  ASSERT_EQ(runs.size(), 6u) << Logs({"a.log", "b.log"});
  for (const auto& r : runs) EXPECT_NE(r.find("|succeeded|1"), std::string::npos) << r;
  const auto nodes = Query(db_, "SELECT DISTINCT node FROM attempts ORDER BY node");
  for (const auto& n : nodes) EXPECT_TRUE(n == "external:w-a" || n == "external:w-b") << n;
  EXPECT_EQ(One(db_, "SELECT count(*) FROM attempts WHERE end_class = 'succeeded'"), "6");
  // Each step's effect once, committed; each line once in the file.
  EXPECT_EQ(One(db_, "SELECT count(*), count(DISTINCT key) FROM effects WHERE state = 'committed'"),
            "12|12");
  EXPECT_EQ(One(db_, "SELECT count(*) FROM effects"), "12");
  const auto lines = Lines(ReadFile(out));
  EXPECT_EQ(lines.size(), 12u) << ReadFile(out);
  std::set<std::string> keys;
  for (const auto& line : lines) keys.insert(line.substr(0, line.find(" attempt=")));
  EXPECT_EQ(keys.size(), 12u) << ReadFile(out);
  EXPECT_TRUE(keys.contains("export/stark/2024-02-29 deliver")) << ReadFile(out);
  EXPECT_EQ(One(db_, "SELECT count(*) FROM events WHERE type = 'stale_write_rejected'"), "0");
}

TEST_F(WorkerServe, AStalledWorkerIsFencedOffAndNothingItWritesLaterIsApplied) {
  ASSERT_TRUE(Start(R"("acme")", "4s"));
  const std::string run_id = One(db_, "SELECT id FROM runs");
  ASSERT_FALSE(run_id.empty());
  // The first worker claims the run and is stopped while it "works" (3 s
  // before its first effect), so its heartbeats stop and its lease (4 s)
  // runs out.
  const std::string stalled_out = dir_.File("stalled.txt");
  NodeWorker stalled(node_,
                     WorkerArgs("stalled", stalled_out,
                                {"--wait", "1", "--exit-when-idle", "--step-ms", "3000"}),
                     dir_.File("stalled.log"));
  ASSERT_TRUE(WaitFor(
      [&] { return ReadFile(dir_.File("stalled.log")).find("claimed run") != std::string::npos; },
      1200))
      << Logs({"stalled.log"});
  stalled.Signal(SIGSTOP);
  const std::string stalled_token =
      One(db_, "SELECT fencing_token FROM attempts WHERE run_id = " + run_id + " AND number = 1");
  ASSERT_FALSE(stalled_token.empty());

  // The reaper takes the lease back (generate is idempotent: a retry).
  ASSERT_TRUE(WaitFor(
      [&] {
        return One(db_, "SELECT end_class FROM attempts WHERE run_id = " + run_id +
                            " AND number = 1") == "lease_expired";
      },
      1200))
      << Logs({"stalled.log"});

  // A second worker completes the run.
  const std::string fresh_out = dir_.File("fresh.txt");
  NodeWorker fresh(node_, WorkerArgs("fresh", fresh_out, {"--wait", "5", "--exit-when-idle"}),
                   dir_.File("fresh.log"));
  ASSERT_EQ(fresh.Wait(), 0) << Logs({"stalled.log", "fresh.log"});
  EXPECT_EQ(One(db_, "SELECT state, attempts FROM runs WHERE id = " + run_id), "succeeded|2");
  EXPECT_EQ(Lines(ReadFile(fresh_out)).size(), 2u) << ReadFile(fresh_out);

  // The stalled worker wakes up: its first write is refused (409
  // stale_lease), it drops the run, finds nothing more and exits.
  stalled.Signal(SIGCONT);
  ASSERT_EQ(stalled.Wait(), 0) << Logs({"stalled.log", "fresh.log"});
  const std::string stalled_log = ReadFile(dir_.File("stalled.log"));
  EXPECT_NE(stalled_log.find("fenced off (409 stale_lease)"), std::string::npos) << stalled_log;
  EXPECT_FALSE(std::filesystem::exists(stalled_out)) << ReadFile(stalled_out);

  // The ledger: the stalled attempt ended lease_expired, the second
  // succeeded; each effect committed once, by the second attempt; the
  // stalled worker's writes were rejected and recorded.
  EXPECT_EQ(Query(db_, "SELECT number, node, end_class FROM attempts WHERE run_id = " + run_id +
                           " ORDER BY number"),
            (std::vector<std::string>{"1|external:stalled|lease_expired",
                                      "2|external:fresh|succeeded"}));
  EXPECT_EQ(One(db_, "SELECT count(*) FROM effects WHERE state = 'committed'"), "2");
  EXPECT_EQ(One(db_, "SELECT count(*) FROM effects"), "2");
  EXPECT_GE(std::stoi(One(db_, "SELECT count(*) FROM events WHERE type = 'stale_write_rejected' "
                               "AND json_extract(details, '$.token') = " +
                               stalled_token)),
            1)
      << Logs({"stalled.log", "fresh.log"});
  EXPECT_EQ(One(db_, "SELECT state FROM runs WHERE id = " + run_id), "succeeded");
  // The node's metric counts every refusal it recorded, though none of
  // them was a write of its own executor.
  httplib::Client client("127.0.0.1", port_);
  const auto scrape = client.Get("/metrics");
  ASSERT_TRUE(scrape) << httplib::to_string(scrape.error());
  const std::string recorded =
      One(db_, "SELECT count(*) FROM events WHERE type = 'stale_write_rejected'");
  EXPECT_NE(scrape->body.find("\ncronledger_stale_writes_rejected_total " + recorded + "\n"),
            std::string::npos)
      << recorded << " recorded; scrape:\n"
      << scrape->body;
}

// ---- the API under attack (docs/api.md, Limits) ---------------------------

// A kB figure of /proc/PID/status ("VmRSS", "VmHWM").
int64_t StatusKb(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(field + ":", 0) == 0) return std::stoll(line.substr(field.size() + 1));
  }
  return -1;
}

// 200 connections that send nothing and 50 that send a header byte every
// 4 s (a slowloris), held open for the whole of an external worker's run
// whose lease is 5 s and whose two steps take 4 s each: every heartbeat,
// claim and effect call is answered in time (no lease is lost), and so is
// /healthz, all along.
TEST_F(WorkerServe, IdleAndSlowSocketsStarveNeitherHeartbeatsNorEffectsNorHealth) {
  ASSERT_TRUE(Start(R"("acme")", "5s"));
  std::vector<testing::RawSocket> idle, slow;
  for (int i = 0; i < 200; ++i) idle.emplace_back(port_);
  for (int i = 0; i < 50; ++i) {
    slow.emplace_back(port_);
    slow.back().Send("P");
  }
  for (const auto& s : idle) ASSERT_TRUE(s.connected());
  std::atomic<bool> done{false};
  std::thread trickle([&] {
    for (int tick = 1; !done; ++tick) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      if (tick % 40 == 0) {
        for (auto& s : slow) s.Send("O");
      }
    }
  });

  const std::string out = dir_.File("exports.txt");
  NodeWorker worker(node_,
                    WorkerArgs("w", out, {"--wait", "1", "--exit-when-idle", "--step-ms", "4000"}),
                    dir_.File("w.log"));
  int answered = 0, unanswered = 0;
  while (!worker.Exited()) {
    (testing::HealthAnswers(port_) ? answered : unanswered) += 1;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  done = true;
  trickle.join();
  EXPECT_EQ(worker.Wait(), 0) << Logs({"w.log"});
  EXPECT_EQ(unanswered, 0) << answered << " answered";
  EXPECT_GT(answered, 10);

  // The run succeeded at its first attempt: the lease never lapsed.
  EXPECT_EQ(One(db_, "SELECT state, attempts FROM runs"), "succeeded|1") << Logs({"w.log"});
  EXPECT_EQ(Query(db_, "SELECT number, end_class FROM attempts"),
            (std::vector<std::string>{"1|succeeded"}));
  EXPECT_EQ(One(db_, "SELECT count(*) FROM events WHERE type = 'stale_write_rejected'"), "0");
  EXPECT_EQ(One(db_, "SELECT count(*) FROM effects WHERE state = 'committed'"), "2");
  // The attack is still there: the slow sockets are within request_timeout.
  for (auto& s : slow) EXPECT_TRUE(s.Send("S"));
}

// 50 parallel compressed and chunked bodies without a token, and 50
// chunked ones with a worker token (each 4 MiB, as fast as the socket
// takes them): serve refuses the first at their headers and caps the
// others at the worker routes' limit, so its peak memory grows by far less
// than 64 MiB.
TEST_F(WorkerServe, FiftyParallelCompressedOrChunkedBodiesCannotExhaustMemory) {
  // Memory the program holds, not freed memory that AddressSanitizer keeps
  // aside (its quarantine) to catch late uses: that would count every
  // buffer a refused request ever had.
  const char* asan = std::getenv("ASAN_OPTIONS");
  testing::ServeOptions options;
  options.env = {std::string("ASAN_OPTIONS=") + (asan ? asan : "") + ":quarantine_size_mb=1"};
  ASSERT_TRUE(Start(R"("acme")", "30s", options));
  const pid_t pid = serve_.process().pid();
  ASSERT_TRUE(testing::HealthAnswers(port_));
  const int64_t before = StatusKb(pid, "VmRSS");
  ASSERT_GT(before, 0);
  const int64_t peak_before = StatusKb(pid, "VmHWM");

  const std::string chunk = "10000\r\n" + std::string(64 * 1024, '\x1f') + "\r\n";
  std::vector<std::thread> attackers;
  std::atomic<int> refused{0};
  const auto attack = [&](const std::string& headers) {
    testing::RawSocket s(port_);
    if (!s.connected()) return;
    s.Send("POST /v1/claims HTTP/1.1\r\nHost: x\r\n" + headers +
           "Transfer-Encoding: chunked\r\n\r\n");
    // As a client would: until the server answers (its refusal).
    for (int i = 0; i < 64; ++i) {
      if (s.Readable() || !s.Send(chunk)) break;
    }
    const int status = testing::StatusOf(s.ReadUntilClosed());
    if (status == 401 || status == 413 || status == 415) ++refused;
  };
  for (int i = 0; i < 50; ++i) {
    attackers.emplace_back(attack, i % 2 == 0 ? "Content-Encoding: gzip\r\n" : "");
    attackers.emplace_back(attack, std::string("Authorization: Bearer ") + kWorkerSecret + "\r\n");
  }
  for (auto& t : attackers) t.join();
  const int64_t peak = StatusKb(pid, "VmHWM");
  std::printf(
      "serve: VmRSS %lld kB and VmHWM %lld kB before, VmHWM %lld kB after 100 attacking "
      "requests\n",
      static_cast<long long>(before), static_cast<long long>(peak_before),
      static_cast<long long>(peak));
  EXPECT_GE(refused.load(), 90) << "of 100 attacking requests";
  EXPECT_LE(peak - before, 64 * 1024)
      << "serve grew from " << before << " kB to a peak of " << peak << " kB";
  EXPECT_TRUE(testing::HealthAnswers(port_));
}

}  // namespace
}  // namespace cronledger
