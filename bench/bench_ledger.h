// Ledger helpers shared by the benchmarks that run the engine on SQLite.
#ifndef CRONLEDGER_BENCH_BENCH_LEDGER_H_
#define CRONLEDGER_BENCH_BENCH_LEDGER_H_

#include <sqlite3.h>

#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <cstdint>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "bench_util.h"
#include "config/config.h"
#include "cronledger/schedule.h"
#include "store/sqlite/sqlite_store.h"
#include "store/store.h"

namespace cronledger::bench {

// An instant as the ledger stores it: milliseconds since the epoch.
inline int64_t Ms(std::chrono::sys_seconds t) { return t.time_since_epoch().count() * 1000; }

// One number from a plain sqlite3 connection, for verification only.
inline int64_t QueryInt(sqlite3* db, const std::string& sql) {
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr) != SQLITE_OK) {
    Die(fmt::format("{}: {}", sql, sqlite3_errmsg(db)));
  }
  int64_t v = -1;
  if (sqlite3_step(s) == SQLITE_ROW) v = sqlite3_column_int64(s, 0);
  sqlite3_finalize(s);
  return v;
}

// Plans one occurrence of `job` at `at` with `runs` partitions (p0000...,
// or from p{first_partition}) through the store and releases them, as the
// planner would; dies unless all were planned and released.
inline void PlanAndRelease(store::Store& store, const std::string& job,
                           std::chrono::sys_seconds at, int runs, int first_partition = 0) {
  store::PlanParams p;
  p.job = job;
  p.planned_through = at;
  p.now = store::ToInstant(at);
  store::PlannedOccurrence o;
  o.scheduled_at = at;
  o.local_time = FormatUtc(at);
  o.job_version = 1;
  o.tzdata = "bench";
  const std::string period = FormatUtc(at);
  for (int i = first_partition; i < first_partition + runs; ++i) {
    o.runs.push_back({fmt::format("p{:04d}", i), period, "2026-01-01"});
  }
  p.occurrences.push_back(std::move(o));
  const auto planned = Check(store.RunPlan(p), "RunPlan");
  store::ReleaseParams r;
  r.job = job;
  r.now = store::ToInstant(at + std::chrono::seconds{1});
  r.limit = runs;
  const auto released = Check(store.RunRelease(r), "RunRelease");
  if (planned.runs_planned != runs || released.released != runs) {
    Die(fmt::format("planned {}, released {} of {}", planned.runs_planned, released.released,
                    runs));
  }
}

// A fresh SQLite ledger in its own /tmp folder, removed afterwards, with a
// config of one in-process job `job` (one step, `step`) on `schedule`.
struct InprocessLedger {
  bool full;
  std::string dir;
  std::string path;
  config::Config config;
  std::unique_ptr<store::SqliteStore> store;

  InprocessLedger(const char* prefix, bool full_sync, const std::string& job_name,
                  const std::string& step_name, const std::string& schedule)
      : full(full_sync) {
    std::string tmpl = std::string("/tmp/") + prefix + "-XXXXXX";
    if (!mkdtemp(tmpl.data())) Die("mkdtemp failed");
    dir = tmpl;
    path = dir + "/ledger.db";
    config.path = dir + "/cronledger.toml";
    config.dir = dir;
    config.server.store = "sqlite:" + path;
    config.server.durability = full ? config::Durability::kFull : config::Durability::kNormal;
    config.server.log_dir = dir + "/logs";
    config::JobConfig job;
    job.name = job_name;
    job.schedule = schedule;
    job.timezone = "UTC";
    job.executor = config::Executor::kInprocess;
    config::StepConfig step;
    step.name = step_name;
    job.steps.push_back(step);
    config.jobs.push_back(std::move(job));
    store::SqliteOptions o;
    o.path = path;
    o.synchronous_full = full;
    store = Check(store::SqliteStore::Open(o), "opening the store");
  }
  ~InprocessLedger() {
    store.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  InprocessLedger(const InprocessLedger&) = delete;
  InprocessLedger& operator=(const InprocessLedger&) = delete;
};

}  // namespace cronledger::bench

#endif  // CRONLEDGER_BENCH_BENCH_LEDGER_H_
