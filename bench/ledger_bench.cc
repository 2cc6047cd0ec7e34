// The ledger on SQLite (issue 3, Performance). Results in docs/benchmarks.md.
//
//   bench/run_ledger.sh
//
// Every figure is on a real SQLite file under /tmp with the shipped pragmas
// (WAL, synchronous = FULL unless a name says "normal"), through the same
// code `serve` and `status` use:
//
//  * PlanBusinessDate: one planner pass that plans the next daily occurrence
//    of a job with 10,000 partitions (10,000 runs and their `planned`
//    events) on an existing ledger, one successive business date per
//    iteration. run_once = Planner::RunOnce (plan, then release the 10,000
//    runs that are due), as serve does; plan_only = PlanOnce alone.
//  * Ledger1M: a ledger of 100 jobs x 100 partitions x 100 days. Built once
//    (store JobSync / PartitionSync / RunPlan, then history marked finished
//    with plain SQL, since finishing runs is a later issue's API) and cached
//    in /tmp/cronledger-bench-1m.db, keyed by the schema version; deleting
//    that file forces a rebuild. Status = engine::BuildStatus for all jobs
//    on an open store, or opening the store first as `cronledger status`
//    does; RunListDue = the dispatcher's due-run lookup.
//
// Ledger decisions use fixed simulated instants (so the cached ledger stays
// valid and results do not depend on the day they are taken); RealClock()
// only times the setup steps. Benchmark timing is Google Benchmark's.
#include <sqlite3.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "bench_util.h"
#include "config/config.h"
#include "cronledger/clock.h"
#include "cronledger/schedule.h"
#include "engine/planner.h"
#include "engine/status_report.h"
#include "store/sqlite/sqlite_store.h"

namespace cronledger {

namespace bench {
const char* const kBenchName = "ledger_bench";
}  // namespace bench

namespace {

using bench::Check;
using bench::Die;

namespace fs = std::filesystem;
using std::chrono::days;
using std::chrono::seconds;
using std::chrono::sys_seconds;

sys_seconds At(const char* rfc3339) { return *ParseRfc3339(rfc3339); }
Clock::TimePoint Tp(sys_seconds t) { return Clock::TimePoint{t.time_since_epoch()}; }

double SecondsSince(Clock::TimePoint start) {
  return std::chrono::duration<double>(RealClock().Now() - start).count();
}

double FileMb(const std::string& path) {
  std::error_code ec;
  const auto n = fs::file_size(path, ec);
  return ec ? 0.0 : static_cast<double>(n) / (1024.0 * 1024.0);
}

std::unique_ptr<store::SqliteStore> OpenSqlite(const std::string& path, bool full) {
  store::SqliteOptions o;
  o.path = path;
  o.synchronous_full = full;
  return Check(store::SqliteStore::Open(o), "opening the store");
}

config::StepConfig OneStep() {
  config::StepConfig step;
  step.name = "work";
  step.command = {"/bin/true"};
  return step;
}

// A plain SQLite connection for the setup steps the Store API does not offer
// yet (finishing runs) and for counting.
class RawDb {
 public:
  explicit RawDb(const std::string& path) {
    if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) {
      Die(fmt::format("opening {}: {}", path, sqlite3_errmsg(db_)));
    }
    sqlite3_busy_timeout(db_, 5000);
  }
  ~RawDb() { sqlite3_close(db_); }
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

 private:
  sqlite3* db_ = nullptr;
};

// ---- planning a business date for a job with 10,000 partitions ------------

constexpr int kPlanPartitions = 10000;

struct PlanningLedger {
  std::string dir;
  std::string path;
  config::Config config;
  std::unique_ptr<store::SqliteStore> store;
  std::unique_ptr<engine::Planner> planner;
  int day = 0;  // the last business date planned, in days after 2026-11-01

  explicit PlanningLedger(bool full) {
    char tmpl[] = "/tmp/cronledger-bench-XXXXXX";
    if (!mkdtemp(tmpl)) Die("mkdtemp failed");
    dir = tmpl;
    path = dir + "/ledger.db";
    config.path = dir + "/cronledger.toml";
    config.dir = dir;
    config.server.store = "sqlite:" + path;
    config.server.durability = full ? config::Durability::kFull : config::Durability::kNormal;
    config::JobConfig job;
    job.name = "wide";
    job.schedule = "0 9 * * *";
    job.timezone = "Asia/Seoul";
    for (int i = 0; i < kPlanPartitions; ++i) job.partitions.push_back(fmt::format("p{:05d}", i));
    job.steps.push_back(OneStep());
    config.jobs.push_back(std::move(job));

    store = OpenSqlite(path, full);
    planner = std::make_unique<engine::Planner>(config, *store, RealClock());
    // The day before: creates the job and its 10,000 partitions; the next
    // occurrence (tomorrow 09:00) is beyond the lookahead, so nothing is
    // planned yet.
    const auto start = RealClock().Now();
    engine::PlanPassStats stats;
    Check(planner->RunOnce(Tp(At("2026-11-01T10:00:00+09:00")), &stats), "initial pass");
    if (stats.runs_planned != 0) Die("the initial pass planned runs");
    std::fprintf(stderr, "ledger_bench: planning ledger (%s) with %d partitions set up in %.2f s: %s\n",
                 full ? "synchronous=FULL" : "synchronous=NORMAL", kPlanPartitions,
                 SecondsSince(start), path.c_str());
  }
  ~PlanningLedger() {
    planner.reset();
    store.reset();
    std::error_code ec;
    fs::remove_all(dir, ec);
  }

  // 09:00:30 KST of the next business date: one occurrence due 30 s ago.
  Clock::TimePoint NextPassAt() {
    ++day;
    return Tp(At("2026-11-01T09:00:30+09:00") + days{day});
  }
};

PlanningLedger& Planning(bool full) {
  static std::unique_ptr<PlanningLedger> ledgers[2];
  auto& l = ledgers[full ? 1 : 0];
  if (!l) l = std::make_unique<PlanningLedger>(full);
  return *l;
}

void BM_PlanBusinessDate(benchmark::State& state, bool full, bool release_in_pass) {
  PlanningLedger& l = Planning(full);
  for (auto _ : state) {
    const auto now = l.NextPassAt();
    engine::PlanPassStats stats;
    Status s = release_in_pass ? l.planner->RunOnce(now, &stats) : l.planner->PlanOnce(now, &stats);
    if (!release_in_pass) {
      // Keep the ledger what serve would leave: release outside the timing.
      state.PauseTiming();
      if (s.ok()) s = l.planner->ReleaseOnce(now, &stats);
      state.ResumeTiming();
    }
    if (!s.ok() || stats.runs_planned != kPlanPartitions || stats.released != kPlanPartitions) {
      state.SkipWithError(fmt::format("pass: {}; planned {}, released {}", s.ToString(),
                                      stats.runs_planned, stats.released)
                              .c_str());
      break;
    }
  }
  state.SetItemsProcessed(state.iterations() * kPlanPartitions);
  state.counters["db_MB"] = FileMb(l.path);
  state.counters["wal_MB"] = FileMb(l.path + "-wal");
}

BENCHMARK_CAPTURE(BM_PlanBusinessDate, full_run_once, true, true)
    ->Iterations(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_PlanBusinessDate, full_plan_only, true, false)
    ->Iterations(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_PlanBusinessDate, normal_run_once, false, true)
    ->Iterations(2)->Unit(benchmark::kMillisecond)->UseRealTime();

// ---- a ledger of 1,000,000 runs ---------------------------------------------

constexpr int kJobs = 100;
constexpr int kPartitions = 100;
constexpr int kDays = 100;
// Bump when the generator below changes what it writes.
constexpr int kGeneratorVersion = 1;
constexpr const char* kCachePath = "/tmp/cronledger-bench-1m.db";

// "Now" for every ledger decision: the last of the 100 days, mid-afternoon.
sys_seconds LedgerNow() { return At("2026-11-29T12:30:30Z"); }

// 100 daily jobs spread over the day and four zones, 100 partitions each.
config::Config LedgerConfig() {
  static const char* const kZones[] = {"UTC", "Asia/Seoul", "America/New_York",
                                       "Europe/Berlin"};
  config::Config c;
  c.path = "/tmp/cronledger-bench-1m.toml";
  c.dir = "/tmp";
  c.server.store = std::string("sqlite:") + kCachePath;
  for (int j = 0; j < kJobs; ++j) {
    config::JobConfig job;
    job.name = fmt::format("job{:03d}", j);
    job.schedule = fmt::format("{} {} * * *", (j * 7) % 60, j % 24);
    job.timezone = kZones[j % 4];
    for (int p = 0; p < kPartitions; ++p) job.partitions.push_back(fmt::format("part{:03d}", p));
    job.steps.push_back(OneStep());
    c.jobs.push_back(std::move(job));
  }
  return c;
}

std::string CacheKey() {
  return fmt::format("schema={} generator={} jobs={} partitions={} days={}",
                     store::kSqliteSchemaVersion, kGeneratorVersion, kJobs, kPartitions, kDays);
}

// Builds the ledger at `path`: every run planned through the store, history
// (runs due more than an hour ago) finished as succeeded (1 in 199 failed),
// and the last hour's runs released and left pending for the dispatcher.
void BuildLedger(const config::Config& config, const std::string& path) {
  const auto t0 = RealClock().Now();
  const sys_seconds now = LedgerNow();
  const std::string tzdata = TzdataVersion();
  int64_t runs = 0;
  {
    // Written with synchronous = NORMAL to build faster; the file is the same.
    auto store = OpenSqlite(path, /*full=*/false);
    for (const auto& job : config.jobs) {
      const Schedule schedule =
          Check(Schedule::Create(job.schedule, job.timezone, job.ScheduleOptionsFor()), "schedule");
      const PeriodKey key = job.EffectiveKey(schedule);
      std::vector<Occurrence> occs = schedule.Between(now - days{kDays + 2}, now);
      if (occs.size() < kDays) Die("too few occurrences");
      occs.erase(occs.begin(), occs.end() - kDays);
      const store::Instant created = store::ToInstant(Tp(occs.front().utc - days{1}));
      Check(store->JobSync({job.name, engine::CanonicalDefinition(job), created}), "JobSync");
      Check(store->PartitionSync({job.name, job.partitions, created}), "PartitionSync");
      store::PlanParams p;
      p.job = job.name;
      p.planned_through = now + seconds{60};
      p.now = store::ToInstant(Tp(now));
      for (const auto& occ : occs) {
        store::PlannedOccurrence o;
        o.scheduled_at = occ.utc;
        o.local_time = FormatLocal(occ);
        o.job_version = 1;
        o.tzdata = tzdata;
        const std::string period = schedule.Period(occ, key);
        const std::string date = FormatDate(schedule.BusinessDate(occ));
        for (const auto& part : job.partitions) o.runs.push_back({part, period, date});
        p.occurrences.push_back(std::move(o));
      }
      runs += Check(store->RunPlan(p), "RunPlan").runs_planned;
    }
  }
  const double plan_s = SecondsSince(t0);
  if (runs != int64_t{kJobs} * kPartitions * kDays) Die(fmt::format("planned {} runs", runs));

  const auto t1 = RealClock().Now();
  {
    const int64_t cutoff_ms = (now - seconds{3600}).time_since_epoch().count() * 1000;
    RawDb raw(path);
    raw.Exec(fmt::format(
        "BEGIN IMMEDIATE; "
        "UPDATE runs SET state = CASE WHEN id % 199 = 0 THEN 'failed' ELSE 'succeeded' END, "
        "released = 1, attempts = 1, finished_at = scheduled_at + 300000 + (id % 600) * 1000, "
        "updated_at = scheduled_at + 300000 + (id % 600) * 1000 "
        "WHERE state = 'pending' AND scheduled_at < {}; COMMIT",
        cutoff_ms));
  }
  const double history_s = SecondsSince(t1);

  const auto t2 = RealClock().Now();
  int released = 0;
  {
    auto store = OpenSqlite(path, /*full=*/true);
    for (const auto& job : config.jobs) {
      store::ReleaseParams p;
      p.job = job.name;
      p.policy.misfire_grace = job.misfire_grace;
      p.policy.catchup = job.catchup;
      p.policy.on_pause = job.on_pause;
      p.now = store::ToInstant(Tp(now));
      const auto r = Check(store->RunRelease(p), "RunRelease");
      if (r.skipped != 0) Die("release skipped runs");
      released += r.released;
    }
  }  // closing the last connection checkpoints and removes the WAL
  std::fprintf(stderr,
               "ledger_bench: built the 1,000,000-run ledger in %.1f s (plan %.1f s, history "
               "%.1f s, release %.1f s; %d runs released and pending)\n",
               SecondsSince(t0), plan_s, history_s, SecondsSince(t2), released);
}

struct BigLedger {
  config::Config config = LedgerConfig();
  std::unique_ptr<store::SqliteStore> store;
  int64_t released_pending = 0;
  int64_t runs = 0;
  int64_t events = 0;

  BigLedger() {
    const std::string meta_path = std::string(kCachePath) + ".key";
    std::string key;
    if (std::ifstream in(meta_path); in) std::getline(in, key);
    if (key != CacheKey() || !fs::exists(kCachePath)) {
      std::fprintf(stderr, "ledger_bench: building %s (%s); this takes a few minutes\n",
                   kCachePath, CacheKey().c_str());
      const std::string building = std::string(kCachePath) + ".building";
      for (const auto& f : {std::string(kCachePath), building}) {
        for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(f + suffix);
      }
      fs::remove(meta_path);
      BuildLedger(config, building);
      for (const char* suffix : {"-wal", "-shm"}) fs::remove(building + suffix);
      fs::rename(building, kCachePath);
      std::ofstream(meta_path) << CacheKey() << "\n";
    } else {
      std::fprintf(stderr, "ledger_bench: reusing %s (%s)\n", kCachePath, key.c_str());
    }
    {
      RawDb raw(kCachePath);
      runs = raw.Int("SELECT count(*) FROM runs");
      events = raw.Int("SELECT count(*) FROM events");
      released_pending =
          raw.Int("SELECT count(*) FROM runs WHERE state = 'pending' AND released = 1");
    }
    store = OpenSqlite(kCachePath, /*full=*/true);
    std::fprintf(stderr,
                 "ledger_bench: %lld runs, %lld events, %lld released pending; %.1f MB "
                 "(+ %.1f MB -wal)\n",
                 static_cast<long long>(runs), static_cast<long long>(events),
                 static_cast<long long>(released_pending), FileMb(kCachePath),
                 FileMb(std::string(kCachePath) + "-wal"));
  }

  void SizeCounters(benchmark::State& state) const {
    state.counters["db_MB"] = FileMb(kCachePath);
    state.counters["wal_MB"] = FileMb(std::string(kCachePath) + "-wal");
  }
};

BigLedger& Ledger1M() {
  static BigLedger ledger;
  return ledger;
}

// `status` for all 100 jobs on an open store (serve, the API).
void BM_Ledger1M_Status(benchmark::State& state) {
  BigLedger& l = Ledger1M();
  const auto now = Tp(LedgerNow());
  for (auto _ : state) {
    auto report = engine::BuildStatus(l.config, *l.store, now);
    if (!report.ok() || report->jobs.size() != kJobs || report->jobs[0].expected != kPartitions) {
      state.SkipWithError("BuildStatus failed or counted wrong");
      break;
    }
    benchmark::DoNotOptimize(report->jobs.data());
  }
  l.SizeCounters(state);
}
BENCHMARK(BM_Ledger1M_Status)->Unit(benchmark::kMillisecond)->UseRealTime();

// `cronledger status`: open the store (pragmas, migration check), then
// BuildStatus.
void BM_Ledger1M_StatusWithOpen(benchmark::State& state) {
  BigLedger& l = Ledger1M();
  const auto now = Tp(LedgerNow());
  for (auto _ : state) {
    auto store = OpenSqlite(kCachePath, /*full=*/true);
    auto report = engine::BuildStatus(l.config, *store, now);
    if (!report.ok() || report->jobs.size() != kJobs) {
      state.SkipWithError("BuildStatus failed");
      break;
    }
    benchmark::DoNotOptimize(report->jobs.data());
  }
  l.SizeCounters(state);
}
BENCHMARK(BM_Ledger1M_StatusWithOpen)->Unit(benchmark::kMillisecond)->UseRealTime();

// The dispatcher's due-run lookup: the 100 oldest released pending runs.
void BM_Ledger1M_RunListDue(benchmark::State& state) {
  BigLedger& l = Ledger1M();
  const auto now = store::ToInstant(Tp(LedgerNow()));
  const int64_t want = std::min<int64_t>(100, l.released_pending);
  for (auto _ : state) {
    auto due = l.store->RunListDue(now, 100);
    if (!due.ok() || static_cast<int64_t>(due->size()) != want) {
      state.SkipWithError("RunListDue failed or returned the wrong number of runs");
      break;
    }
    benchmark::DoNotOptimize(due->data());
  }
  state.counters["released_pending"] = static_cast<double>(l.released_pending);
  l.SizeCounters(state);
}
BENCHMARK(BM_Ledger1M_RunListDue)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace
}  // namespace cronledger

int main(int argc, char** argv) {
  // The planner logs each new job version and skipped runs; keep the
  // benchmark output to the figures.
  spdlog::set_level(spdlog::level::warn);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
