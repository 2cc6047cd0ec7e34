// Serving throughput on SQLite (issue 4, Performance): the raw SQL ceiling
// and the dispatcher with batched claims and group-committed completions.
// Results in docs/benchmarks.md.
//
//   bench/run_serve.sh
//
// Each benchmark instance has its own fresh SQLite file in a new /tmp dir,
// created (schema, WAL, pragmas) by store::SqliteStore::Open with
// synchronous = NORMAL or FULL. Every iteration first plans and releases
// kRuns pending runs of one in-process job through the store (RunPlan +
// RunRelease, outside the timing), then times:
//
//  * BM_RawSql: the raw SQL ceiling as issue 4 defines it, on one plain
//    sqlite3 connection to the same file (same pragmas): "claim" = UPDATE
//    runs SET state = 'running', lease_token = ... + INSERT INTO attempts +
//    INSERT INTO events; "complete" = UPDATE runs ... WHERE id = ? AND
//    lease_token = ? (each row checked) + UPDATE attempts + INSERT INTO
//    events. `batch` runs are claimed in one transaction, then the same runs
//    completed in another.
//  * BM_DispatcherAhead: serve's 8 workers with server.claim_ahead = 1s and
//    claim_batch = batch (claims of up to batch + what is claimed ahead).
//  * BM_StoreCycle: the dispatcher's claims and group commits called in
//    turn from one thread, `batch` runs at a time: its serial part alone.
//  * BM_Dispatcher: engine::Dispatcher (max_workers = max(8, batch),
//    claim_batch = batch) with a registered no-op handler returning 0, run by
//    its own background loop (Start) until the counters show every run
//    succeeded (counted only after the group commit holding its completion).
//    Afterwards (outside the timing) it checks every run succeeded with one
//    closed attempt and its events, and fails otherwise. It reports the mean
//    runs per claim transaction and writes per group commit.
//
// Each ledger first runs kWarmupIterations untimed iterations of its
// benchmark's work (not BM_DispatcherWorkers'). items_per_second is runs
// per second. Timing is Google Benchmark's (UseRealTime, setup under
// PauseTiming); nothing here reads a clock other than through
// cronledger::RealClock().
#include <sqlite3.h>
#include <stdlib.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "bench_ledger.h"
#include "bench_util.h"
#include "config/config.h"
#include "cronledger/clock.h"
#include "cronledger/handler.h"
#include "cronledger/schedule.h"
#include "engine/dispatcher.h"
#include "engine/job_definition.h"
#include "engine/step_runner.h"
#include "ledger/attempt_policy.h"
#include "store/sqlite/sqlite_store.h"

namespace cronledger {

namespace bench {
const char* const kBenchName = "serve_bench";
}  // namespace bench

namespace {

using bench::Check;
using bench::Ms;
using bench::kBuildType;
using bench::kNdebug;
using bench::Die;

namespace fs = std::filesystem;
using std::chrono::seconds;
using std::chrono::sys_seconds;

constexpr int kRuns = 2048;  // runs per iteration (a multiple of 256)
// Untimed iterations on a new ledger before its first timed one. The first
// few thousand runs of a new file are 10 to 25% slower, the raw statements'
// as much as the dispatcher's: the database and its write-ahead log grow on
// the disk until the log is first reused (docs/benchmarks.md, session 15).
// The figures are a serving ledger's, so every benchmark warms up alike.
constexpr int kWarmupIterations = 4;
constexpr const char* kJob = "noop";
constexpr const char* kStep = "work";

// Occurrences are planned at fixed past instants, one second apart, so they
// are due for the dispatcher's real clock and release never misfires them.
sys_seconds OccurrenceAt(int k) {
  return *ParseRfc3339("2026-01-01T00:00:00Z") + seconds{k};
}

// A plain sqlite3 connection with a small prepared-statement cache.
class RawDb {
 public:
  RawDb(const std::string& path, bool full) {
    if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) {
      Die(fmt::format("opening {}: {}", path, sqlite3_errmsg(db_)));
    }
    // The store's pragmas (store/sqlite/sqlite_store.cc); WAL is persistent.
    Exec("PRAGMA busy_timeout = 5000");
    Exec(full ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL");
    Exec("PRAGMA foreign_keys = ON");
  }
  ~RawDb() {
    for (auto& [sql, s] : cache_) sqlite3_finalize(s);
    sqlite3_close(db_);
  }
  RawDb(const RawDb&) = delete;
  RawDb& operator=(const RawDb&) = delete;

  void Exec(const std::string& sql) {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
      const std::string msg = err ? err : "?";
      sqlite3_free(err);
      Die(fmt::format("{}: {}", sql, msg));
    }
  }
  sqlite3_stmt* Stmt(const char* sql) {
    auto it = cache_.find(sql);
    if (it != cache_.end()) {
      sqlite3_reset(it->second);
      sqlite3_clear_bindings(it->second);
      return it->second;
    }
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, &s, nullptr) != SQLITE_OK) {
      Die(fmt::format("{}: {}", sql, sqlite3_errmsg(db_)));
    }
    cache_.emplace(sql, s);
    return s;
  }
  // Runs a bound write statement; returns the rows it changed.
  int Run(sqlite3_stmt* s) {
    if (sqlite3_step(s) != SQLITE_DONE) Die(fmt::format("step: {}", sqlite3_errmsg(db_)));
    return sqlite3_changes(db_);
  }
  int64_t Int(const std::string& sql) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr) != SQLITE_OK) {
      Die(fmt::format("{}: {}", sql, sqlite3_errmsg(db_)));
    }
    int64_t v = 0;
    if (sqlite3_step(s) == SQLITE_ROW) v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return v;
  }
  std::vector<int64_t> Ids(const std::string& sql) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr) != SQLITE_OK) {
      Die(fmt::format("{}: {}", sql, sqlite3_errmsg(db_)));
    }
    std::vector<int64_t> out;
    while (sqlite3_step(s) == SQLITE_ROW) out.push_back(sqlite3_column_int64(s, 0));
    sqlite3_finalize(s);
    return out;
  }

 private:
  sqlite3* db_ = nullptr;
  std::map<std::string, sqlite3_stmt*> cache_;
};

void BindText(sqlite3_stmt* s, int i, const std::string& v) {
  sqlite3_bind_text(s, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
}

const char* SyncName(int64_t v) {
  switch (v) {
    case 0: return "OFF";
    case 1: return "NORMAL";
    case 2: return "FULL";
    case 3: return "EXTRA";
  }
  return "?";
}

// A fresh ledger with one in-process job; plans kRuns due runs on demand.
struct Ledger : bench::InprocessLedger {
  int occurrence = 0;

  Ledger(bool full_sync, const char* kind, int batch)
      : InprocessLedger("cronledger-serve-bench", full_sync, kJob, kStep, "* * * * * *") {
    Check(store->JobSync({kJob, engine::CanonicalDefinition(config.jobs[0]),
                          store::ToInstant(OccurrenceAt(-60))}),
          "JobSync");
    std::fprintf(stderr, "serve_bench: %s batch=%d synchronous=%s: %s; build %s\n", kind, batch,
                 full ? "FULL" : "NORMAL", path.c_str(), kBuildType);
  }

  // Plans and releases kRuns runs of the next occurrence; returns its
  // instant.
  sys_seconds PlanNext() {
    const sys_seconds at = OccurrenceAt(occurrence++);
    bench::PlanAndRelease(*store, kJob, at, kRuns);
    return at;
  }
};

// ---- the raw SQL ceiling ------------------------------------------------------

struct RawFixture {
  Ledger ledger;
  std::unique_ptr<RawDb> raw;
  int64_t synchronous = -1;
  int warmups = 0;  // untimed iterations done

  RawFixture(bool full, int batch) : ledger(full, "raw", batch) {
    raw = std::make_unique<RawDb>(ledger.path, full);
    synchronous = raw->Int("PRAGMA synchronous");
    std::fprintf(stderr, "serve_bench: raw connection: PRAGMA synchronous read back = %lld (%s)\n",
                 static_cast<long long>(synchronous), SyncName(synchronous));
  }
};

struct PendingRun {
  int64_t id;
  std::string run_key;
};

void RawClaim(RawDb& db, const PendingRun& r, int64_t now_ms) {
  const int64_t token = r.id;  // one attempt per run: unique
  sqlite3_stmt* s = db.Stmt(
      "UPDATE runs SET state = 'running', lease_token = ?1, lease_expires_at = ?2, "
      "lease_node = ?3, attempts = attempts + 1, budget_attempts = budget_attempts + 1, "
      "budget_started_at = coalesce(budget_started_at, ?4), next_attempt_at = NULL, "
      "updated_at = ?4 WHERE id = ?5 AND state = 'pending'");
  sqlite3_bind_int64(s, 1, token);
  sqlite3_bind_int64(s, 2, now_ms + 3600000);
  sqlite3_bind_text(s, 3, "bench", -1, SQLITE_STATIC);
  sqlite3_bind_int64(s, 4, now_ms);
  sqlite3_bind_int64(s, 5, r.id);
  if (db.Run(s) != 1) Die(fmt::format("claim of run {} changed nothing", r.id));
  s = db.Stmt(
      "INSERT INTO attempts (run_id, number, fencing_token, node, started_at) "
      "VALUES (?, 1, ?, 'bench', ?)");
  sqlite3_bind_int64(s, 1, r.id);
  sqlite3_bind_int64(s, 2, token);
  sqlite3_bind_int64(s, 3, now_ms);
  db.Run(s);
  s = db.Stmt(
      "INSERT INTO events (at, type, job, run_id, run_key, actor, details) "
      "VALUES (?, 'claimed', 'noop', ?, ?, 'bench', ?)");
  sqlite3_bind_int64(s, 1, now_ms);
  sqlite3_bind_int64(s, 2, r.id);
  BindText(s, 3, r.run_key);
  BindText(s, 4,
           fmt::format(R"({{"attempt":1,"fencing_token":{},"lease_expires_at":"2026-01-01T01:00:00Z","node":"bench"}})",
                       token));
  db.Run(s);
}

void RawComplete(RawDb& db, const PendingRun& r, int64_t now_ms) {
  const int64_t token = r.id;
  sqlite3_stmt* s = db.Stmt(
      "UPDATE runs SET state = 'succeeded', reason = NULL, lease_token = NULL, "
      "lease_expires_at = NULL, lease_node = NULL, next_attempt_at = NULL, "
      "last_end_class = 'succeeded', updated_at = ?1, finished_at = ?1, released = 1, "
      "misfire_exempt = 1 WHERE id = ?2 AND lease_token = ?3 AND state = 'running'");
  sqlite3_bind_int64(s, 1, now_ms);
  sqlite3_bind_int64(s, 2, r.id);
  sqlite3_bind_int64(s, 3, token);
  // Fenced row by row: a completion whose token is not current changes nothing.
  if (db.Run(s) != 1) Die(fmt::format("completion of run {} was fenced off", r.id));
  s = db.Stmt(
      "UPDATE attempts SET ended_at = ?, end_class = 'succeeded', exit_status = 0, step = ?, "
      "log_path = '', output_tail = '' WHERE run_id = ? AND fencing_token = ?");
  sqlite3_bind_int64(s, 1, now_ms);
  sqlite3_bind_text(s, 2, kStep, -1, SQLITE_STATIC);
  sqlite3_bind_int64(s, 3, r.id);
  sqlite3_bind_int64(s, 4, token);
  if (db.Run(s) != 1) Die(fmt::format("attempt of run {} not closed", r.id));
  s = db.Stmt(
      "INSERT INTO events (at, type, job, run_id, run_key, actor, details) "
      "VALUES (?, 'succeeded', 'noop', ?, ?, 'bench', ?)");
  sqlite3_bind_int64(s, 1, now_ms);
  sqlite3_bind_int64(s, 2, r.id);
  BindText(s, 3, r.run_key);
  BindText(s, 4, fmt::format(R"({{"attempt":1,"end_class":"succeeded","exit_status":0,"fencing_token":{},"step":"work"}})",
                             token));
  db.Run(s);
}

RawFixture& Raw(bool full, int batch) {
  static std::map<std::pair<bool, int>, std::unique_ptr<RawFixture>> fixtures;
  auto& f = fixtures[{full, batch}];
  if (!f) f = std::make_unique<RawFixture>(full, batch);
  return *f;
}

// The runs of a new occurrence, planned and released.
struct RawOccurrence {
  sys_seconds at;
  std::vector<PendingRun> runs;
};

RawOccurrence PlanRaw(RawFixture& f) {
  RawOccurrence o{f.ledger.PlanNext(), {}};
  o.runs.reserve(kRuns);
  for (int64_t id : f.raw->Ids(fmt::format(
           "SELECT id FROM runs WHERE state = 'pending' AND released = 1 AND scheduled_at = {} "
           "ORDER BY id",
           Ms(o.at)))) {
    o.runs.push_back({id, fmt::format("noop/{}", id)});
  }
  if (static_cast<int>(o.runs.size()) != kRuns) Die("the planned runs are missing");
  return o;
}

// What an iteration times: every run claimed and completed, `batch` per
// transaction.
void RawCycle(RawDb& db, const RawOccurrence& o, int batch) {
  const int64_t now_ms = Ms(o.at + seconds{2});
  for (int i = 0; i < kRuns; i += batch) {
    db.Exec("BEGIN IMMEDIATE");
    for (int j = i; j < i + batch; ++j) RawClaim(db, o.runs[j], now_ms);
    db.Exec("COMMIT");
    db.Exec("BEGIN IMMEDIATE");
    for (int j = i; j < i + batch; ++j) RawComplete(db, o.runs[j], now_ms);
    db.Exec("COMMIT");
  }
}

// Empty when every run of the occurrence succeeded.
std::string VerifyRaw(RawDb& db, sys_seconds at) {
  const int64_t done = db.Int(fmt::format(
      "SELECT count(*) FROM runs WHERE scheduled_at = {} AND state = 'succeeded'", Ms(at)));
  return done == kRuns ? "" : fmt::format("{} of {} runs succeeded", done, kRuns);
}

void BM_RawSql(benchmark::State& state) {
  const bool full = state.range(0) != 0;
  const int batch = static_cast<int>(state.range(1));
  RawFixture& f = Raw(full, batch);
  RawDb& db = *f.raw;
  for (; f.warmups < kWarmupIterations; ++f.warmups) {
    const RawOccurrence o = PlanRaw(f);
    RawCycle(db, o, batch);
    if (const std::string problem = VerifyRaw(db, o.at); !problem.empty()) Die(problem);
  }
  for (auto _ : state) {
    state.PauseTiming();
    const RawOccurrence o = PlanRaw(f);
    state.ResumeTiming();

    RawCycle(db, o, batch);

    state.PauseTiming();
    if (const std::string problem = VerifyRaw(db, o.at); !problem.empty()) {
      state.SkipWithError(problem.c_str());
      break;
    }
    state.ResumeTiming();
  }
  state.SetItemsProcessed(state.iterations() * kRuns);
  state.counters["sync_readback"] = static_cast<double>(f.synchronous);
  state.counters["ndebug"] = kNdebug ? 1 : 0;
}

// ---- the current dispatcher -------------------------------------------------------

// The dispatcher of `serve`: a new one per iteration (threads started
// outside the timing), run by its own background loop (Start), with
// max_workers = max(8, batch) so a claim can take a whole batch.
struct DispatcherFixture {
  Ledger ledger;
  HandlerRegistry handlers;
  std::unique_ptr<engine::DefaultStepRunner> runner;
  std::unique_ptr<RawDb> check;  // for verification only
  int workers;
  int batch;
  int warmups = 0;  // untimed iterations done

  std::chrono::milliseconds claim_ahead{0};

  DispatcherFixture(bool full, int claim_batch, int max_workers = 0,
                    std::chrono::milliseconds ahead = std::chrono::milliseconds{0})
      : ledger(full, "dispatcher", claim_batch),
        workers(max_workers > 0 ? max_workers : std::max(8, claim_batch)), batch(claim_batch),
        claim_ahead(ahead) {
    handlers.Register(kJob, [](const RunContext&) { return 0; });
    runner = std::make_unique<engine::DefaultStepRunner>(ledger.config, RealClock(), &handlers);
    check = std::make_unique<RawDb>(ledger.path, full);
    // synchronous is per connection and the store does not expose its own;
    // this is what SqliteStore::Open was asked to set.
    std::fprintf(stderr,
                 "serve_bench: dispatcher store opened with synchronous_full=%s (PRAGMA "
                 "synchronous = %s; the store's own connection is not reachable to read back), "
                 "max_workers=%d\n",
                 full ? "true" : "false", full ? "FULL" : "NORMAL", workers);
  }

  std::unique_ptr<engine::Dispatcher> NewDispatcher() {
    engine::DispatcherOptions o;
    o.node = "bench";
    o.max_workers = workers;
    o.claim_batch = batch;
    o.claim_ahead = claim_ahead;
    o.handlers = &handlers;
    return std::make_unique<engine::Dispatcher>(ledger.config, *ledger.store, RealClock(),
                                                *runner, o);
  }
};

// workers 0: max(8, batch), BM_Dispatcher's setting.
DispatcherFixture& Disp(bool full, int batch, int workers = 0, int ahead_ms = 0) {
  static std::map<std::tuple<bool, int, int, int>, std::unique_ptr<DispatcherFixture>> fixtures;
  auto& f = fixtures[{full, batch, workers, ahead_ms}];
  if (!f) {
    f = std::make_unique<DispatcherFixture>(full, batch, workers,
                                            std::chrono::milliseconds{ahead_ms});
  }
  return *f;
}

// Every run of the occurrence at `at`: succeeded, one attempt with start and
// end (succeeded), and its claimed, step_started, step_succeeded and
// succeeded events. Empty when all is well.
std::string VerifyDispatched(RawDb& db, sys_seconds at) {
  const int64_t t = Ms(at);
  const int64_t succeeded = db.Int(fmt::format(
      "SELECT count(*) FROM runs WHERE scheduled_at = {} AND state = 'succeeded' "
      "AND attempts = 1 AND finished_at IS NOT NULL AND lease_token IS NULL",
      t));
  const int64_t attempts = db.Int(fmt::format(
      "SELECT count(*) FROM attempts a JOIN runs r ON r.id = a.run_id WHERE r.scheduled_at = {}",
      t));
  const int64_t closed = db.Int(fmt::format(
      "SELECT count(*) FROM attempts a JOIN runs r ON r.id = a.run_id WHERE r.scheduled_at = {} "
      "AND a.number = 1 AND a.started_at IS NOT NULL AND a.ended_at IS NOT NULL "
      "AND a.end_class = 'succeeded'",
      t));
  const int64_t events = db.Int(fmt::format(
      "SELECT count(*) FROM events e JOIN runs r ON r.id = e.run_id WHERE r.scheduled_at = {} "
      "AND e.type IN ('claimed', 'step_started', 'step_succeeded', 'succeeded')",
      t));
  if (succeeded == kRuns && attempts == kRuns && closed == kRuns && events == 4 * kRuns) return "";
  return fmt::format(
      "verification failed: {} succeeded runs, {} attempts, {} closed, {} events (want {}, {}, {}, "
      "{})",
      succeeded, attempts, closed, events, kRuns, kRuns, kRuns, 4 * kRuns);
}

// Until every run started by `d` succeeded (counted after its batch
// committed).
void AwaitDispatched(engine::Dispatcher& d) {
  d.Start();
  while (d.counters().succeeded < kRuns) {
    RealClock().SleepFor(std::chrono::microseconds(200), std::stop_token{});
  }
}

// The dispatcher loop, timed until every run of an occurrence succeeded;
// shared by BM_Dispatcher, BM_DispatcherAhead and BM_DispatcherWorkers.
// `warm`: warm the ledger up first (BM_DispatcherWorkers is measured cold,
// as APScheduler is next to it in bench/apscheduler_bench.sh).
void RunDispatcher(benchmark::State& state, DispatcherFixture& f, bool warm = true) {
  const bool full = f.ledger.full;
  for (; warm && f.warmups < kWarmupIterations; ++f.warmups) {
    const sys_seconds at = f.ledger.PlanNext();
    auto d = f.NewDispatcher();
    AwaitDispatched(*d);
    d.reset();
    if (const std::string problem = VerifyDispatched(*f.check, at); !problem.empty()) Die(problem);
  }
  int64_t claims = 0, claimed = 0, commits = 0, writes = 0;
  for (auto _ : state) {
    state.PauseTiming();
    const sys_seconds at = f.ledger.PlanNext();
    auto d = f.NewDispatcher();
    state.ResumeTiming();

    AwaitDispatched(*d);

    state.PauseTiming();
    claims += d->counters().claim_transactions;
    claimed += d->counters().claimed;
    commits += d->counters().write_batches;
    writes += d->counters().writes;
    d.reset();  // stops the loop and the threads
    const std::string problem = VerifyDispatched(*f.check, at);
    if (!problem.empty()) {
      std::fprintf(stderr, "serve_bench: %s\n", problem.c_str());
      state.SkipWithError(problem.c_str());
      break;
    }
    state.ResumeTiming();
  }
  state.SetItemsProcessed(state.iterations() * kRuns);
  state.counters["sync_set"] = full ? 2 : 1;
  state.counters["ndebug"] = kNdebug ? 1 : 0;
  state.counters["workers"] = f.workers;
  state.counters["claim_batch_mean"] = claims ? static_cast<double>(claimed) / claims : 0;
  state.counters["commit_batch_mean"] = commits ? static_cast<double>(writes) / commits : 0;
}

void BM_Dispatcher(benchmark::State& state) {
  const bool full = state.range(0) != 0;
  const int batch = static_cast<int>(state.range(1));
  RunDispatcher(state, Disp(full, batch));
}

// Throughput against the worker count (docs/benchmarks.md's plot and the
// APScheduler comparison): serve's defaults otherwise, claim_batch 32.
void BM_DispatcherWorkers(benchmark::State& state) {
  const bool full = state.range(0) != 0;
  const int workers = static_cast<int>(state.range(1));
  RunDispatcher(state, Disp(full, 32, workers), /*warm=*/false);
}

// serve's 8 workers with server.claim_ahead = 1s: claims beyond the free
// workers (after the first, which shows the pace), `batch` plus what is
// claimed ahead at most.
void BM_DispatcherAhead(benchmark::State& state) {
  const bool full = state.range(0) != 0;
  const int batch = static_cast<int>(state.range(1));
  RunDispatcher(state, Disp(full, batch, 8, 1000));
}

// ---- the store alone -------------------------------------------------------------

// The dispatcher's two write transactions called in turn from one thread:
// a claim of `batch` runs (the dispatcher's ClaimParams), then a group
// commit of their step results and ends as Dispatcher::Execute writes them
// for a no-op step. No threads, no handoffs: on SQLite the claims and
// commits are the dispatcher's serial part, so this is its ceiling on this
// machine, and a steadier measure of what a store change saves than the
// dispatcher's own figure.
// What an iteration of BM_StoreCycle times: the occurrence's runs claimed
// and their ends written, `claim.limit` at a time.
void StoreCycleOnce(DispatcherFixture& f, store::ClaimParams& claim) {
  store::Store& store = *f.ledger.store;
  const config::JobConfig& job = f.ledger.config.jobs[0];
  int done = 0;
  while (done < kRuns) {
    claim.now = store::ToInstant(RealClock().Now());
    const auto claimed = Check(store.RunClaim(claim), "RunClaim");
    if (claimed.empty()) Die("nothing to claim");
    std::vector<store::WorkerWrite> writes;
    writes.reserve(claimed.size());
    for (const store::ClaimedRun& c : claimed) {
      const store::Instant now = store::ToInstant(RealClock().Now());
      store::WorkerWrite w;
      w.step = store::StepParams{c.run.id, c.token,   kStep, ledger::StepStatus::kSucceeded,
                                 now,      claim.node};
      store::FinishParams finish;
      finish.run_id = c.run.id;
      finish.token = c.token;
      finish.now = now;
      finish.node = claim.node;
      finish.exit_status = 0;
      finish.step = kStep;
      finish.log_path = fmt::format("{}/{}/{}/attempt-{}.log", f.ledger.config.server.log_dir,
                                    c.run.job, c.run.id, c.attempt);
      ledger::AttemptFacts facts;
      facts.budget_attempts = c.budget_attempts;
      facts.budget_started_at = c.budget_started_at;
      facts.now = now;
      finish.decision = ledger::DecideAfterAttempt(job.retry, facts);
      w.finish = std::move(finish);
      writes.push_back(std::move(w));
    }
    for (const Status& r : Check(store.RunApplyWrites(writes), "RunApplyWrites")) {
      if (!r.ok()) Die(r.ToString());
    }
    done += static_cast<int>(claimed.size());
  }
}

void BM_StoreCycle(benchmark::State& state) {
  const bool full = state.range(0) != 0;
  const int batch = static_cast<int>(state.range(1));
  // A ledger of its own: sharing BM_Dispatcher's would start it on a
  // bigger file than the others' (every figure is on a ledger that has run
  // kWarmupIterations, then the benchmark's repetitions).
  static std::map<std::pair<bool, int>, std::unique_ptr<DispatcherFixture>> fixtures;
  auto& owned = fixtures[{full, batch}];
  if (!owned) owned = std::make_unique<DispatcherFixture>(full, batch);
  DispatcherFixture& f = *owned;
  const config::JobConfig& job = f.ledger.config.jobs[0];
  store::ClaimParams claim;
  claim.node = "bench";
  claim.limit = batch;
  claim.rules = {engine::ClaimRuleFor(job)};
  for (; f.warmups < kWarmupIterations; ++f.warmups) {
    const sys_seconds at = f.ledger.PlanNext();
    StoreCycleOnce(f, claim);
    if (const std::string problem = VerifyDispatched(*f.check, at); !problem.empty()) Die(problem);
  }
  for (auto _ : state) {
    state.PauseTiming();
    const sys_seconds at = f.ledger.PlanNext();
    state.ResumeTiming();

    StoreCycleOnce(f, claim);

    state.PauseTiming();
    const std::string problem = VerifyDispatched(*f.check, at);
    if (!problem.empty()) {
      state.SkipWithError(problem.c_str());
      break;
    }
    state.ResumeTiming();
  }
  state.SetItemsProcessed(state.iterations() * kRuns);
  state.counters["ndebug"] = kNdebug ? 1 : 0;
}

void Args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"full", "batch"});
  for (int full : {0, 1}) {
    for (int batch : {1, 32, 256}) b->Args({full, batch});
  }
}

BENCHMARK(BM_RawSql)->Apply(Args)->Iterations(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Dispatcher)->Apply(Args)->Iterations(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_DispatcherAhead)
    ->ArgNames({"full", "batch"})
    ->ArgsProduct({{0, 1}, {256}})
    ->Iterations(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_StoreCycle)
    ->ArgNames({"full", "batch"})
    ->ArgsProduct({{0, 1}, {256}})
    ->Iterations(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_DispatcherWorkers)
    ->ArgNames({"full", "workers"})
    ->ArgsProduct({{0, 1}, {1, 2, 4, 8, 16}})
    ->Iterations(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace cronledger

int main(int argc, char** argv) {
  // The dispatcher logs every finished run at info; keep the output to the
  // figures (serve would write those lines).
  spdlog::set_level(spdlog::level::warn);
  std::fprintf(stderr, "serve_bench: build %s, SQLite %s\n", cronledger::bench::kBuildType,
               sqlite3_libversion());
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
