// Ledger helpers shared by the benchmarks that run the engine on SQLite.
#ifndef CRONLEDGER_BENCH_BENCH_LEDGER_H_
#define CRONLEDGER_BENCH_BENCH_LEDGER_H_

#include <sqlite3.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "bench_util.h"
#include "cronledger/schedule.h"
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

// Plans one occurrence of `job` at `at` with `runs` partitions (p0000...)
// through the store and releases them, as the planner would; dies unless
// all were planned and released.
inline void PlanAndRelease(store::Store& store, const std::string& job,
                           std::chrono::sys_seconds at, int runs) {
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
  for (int i = 0; i < runs; ++i) o.runs.push_back({fmt::format("p{:04d}", i), period, "2026-01-01"});
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

}  // namespace cronledger::bench

#endif  // CRONLEDGER_BENCH_BENCH_LEDGER_H_
