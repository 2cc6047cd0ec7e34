// cronledger on PostgreSQL (issue 8, Performance), driven by bench/pg_bench.sh
// which starts the server (durable settings), gives every measurement a
// fresh database and runs the peers. Results in docs/benchmarks.md.
//
//   pg_bench prepare    --url URL --runs N
//       Migrates the (empty) database and plans + releases N due runs of
//       one in-process job `noop` (for the raw SQL ceiling's pgbench script).
//   pg_bench throughput --url URL --runs N --nodes K --workers W [--claim-batch B]
//                       [--claim-ahead-ms MS]
//                       [--profile] [--label NAME] [--setup-sql SQL]
//       The same N runs, then K dispatchers (engine::Dispatcher, what `serve`
//       runs), each with its own PostgresStores (one for claims, one for
//       group commits, the database clock on, as in production) and max_workers W, with a
//       registered no-op handler, started together and timed until every
//       run's completion committed. Then the ledger is checked (every run
//       succeeded with one closed attempt and its claimed, step_started,
//       step_succeeded and succeeded events; each node ran some) and the
//       server's counters are read (commits and WAL flushes per run).
//       --profile counts and times every round trip (bench/pg_trace.h).
//       --setup-sql SQL runs SQL on the database after planning (what-if
//       experiments, e.g. an index the store does not have).
//   pg_bench fire       --url URL [--occurrences N] [--workers W] [--batch B] [--claim-ahead-ms MS] [--profile]
//                       [--label NAME] [--setup-sql SQL (run after the warm-up)]
//       bench/fire_latency_bench.cc on PostgreSQL: 1,000 runs due at one
//       instant every 10 s through ServeLoop, Planner, Reaper and Dispatcher
//       with the real clock; for each run the time from its scheduled
//       instant to its handler's start. The first occurrence is a warm-up.
//
// Figures go to stdout as `RESULT <tab> name <tab> value <tab> unit` lines;
// everything else to stderr.
#include <libpq-fe.h>
#include <stdlib.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

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
#include "engine/planner.h"
#include "engine/reaper.h"
#include "engine/serve_loop.h"
#include "engine/step_runner.h"
#include "pg_trace.h"
#include "store/postgres/postgres_store.h"

namespace cronledger {
namespace bench {
const char* const kBenchName = "pg_bench";
}  // namespace bench

namespace {

using bench::Check;
using bench::Die;
using bench::kBuildType;
using std::chrono::milliseconds;
using std::chrono::seconds;
using std::chrono::sys_seconds;

constexpr const char* kJob = "noop";
constexpr const char* kStep = "work";

struct Options {
  std::string command;
  std::string url;
  std::string label;
  std::string setup_sql;
  int runs = 20000;
  int nodes = 1;
  int workers = 8;
  int claim_batch = 0;  // 0: the dispatcher's default, as serve runs it
  int claim_ahead_ms = 0;  // server.claim_ahead; 0: off, serve's default
  bool profile = false;
  int occurrences = 3;
  int fire_workers = 256;
  int fire_batch = 256;
};

Options ParseArgs(int argc, char** argv) {
  Options o;
  if (argc < 2) Die("usage: pg_bench prepare|throughput|fire --url URL [options]");
  o.command = argv[1];
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    const auto text = [&]() -> std::string {
      if (i + 1 >= argc) Die(a + " needs a value");
      return argv[++i];
    };
    const auto number = [&]() -> int { return std::atoi(text().c_str()); };
    if (a == "--url") {
      o.url = text();
    } else if (a == "--setup-sql") {
      o.setup_sql = text();
    } else if (a == "--label") {
      o.label = text();
    } else if (a == "--runs") {
      o.runs = number();
    } else if (a == "--nodes") {
      o.nodes = number();
    } else if (a == "--workers") {
      o.workers = number();
      o.fire_workers = o.workers;
    } else if (a == "--claim-batch") {
      o.claim_batch = number();
    } else if (a == "--claim-ahead-ms") {
      o.claim_ahead_ms = number();
    } else if (a == "--batch") {
      o.fire_batch = number();
    } else if (a == "--occurrences") {
      o.occurrences = number();
    } else if (a == "--profile") {
      o.profile = true;
    } else {
      Die("unknown argument " + a);
    }
  }
  if (o.url.empty()) Die("--url is required");
  if (o.runs < 1 || o.nodes < 1 || o.workers < 1 || o.occurrences < 1) {
    Die("counts must be positive");
  }
  return o;
}

// ---- a plain libpq connection, for checks and the server's counters ----------

class Conn {
 public:
  explicit Conn(const std::string& url) : c_(PQconnectdb(url.c_str())) {
    if (PQstatus(c_) != CONNECTION_OK) Die(fmt::format("connecting: {}", PQerrorMessage(c_)));
  }
  ~Conn() { PQfinish(c_); }
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;

  std::vector<std::vector<std::string>> Rows(const std::string& sql) {
    PGresult* r = PQexec(c_, sql.c_str());
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
      const std::string msg = PQresultErrorMessage(r);
      PQclear(r);
      Die(fmt::format("{}: {}", sql, msg));
    }
    std::vector<std::vector<std::string>> out;
    for (int i = 0; i < PQntuples(r); ++i) {
      std::vector<std::string> row;
      for (int j = 0; j < PQnfields(r); ++j) row.emplace_back(PQgetvalue(r, i, j));
      out.push_back(std::move(row));
    }
    PQclear(r);
    return out;
  }
  void Exec(const std::string& sql) {
    PGresult* r = PQexec(c_, sql.c_str());
    const bool ok = PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK;
    const std::string msg = PQresultErrorMessage(r);
    PQclear(r);
    if (!ok) Die(fmt::format("{}: {}", sql, msg));
  }
  int64_t Int(const std::string& sql) {
    auto rows = Rows(sql);
    if (rows.empty() || rows[0].empty()) Die(sql + ": no row");
    return std::atoll(rows[0][0].c_str());
  }

 private:
  PGconn* c_;
};

// Server-wide counters (nothing else uses this server during a measurement).
struct ServerCounters {
  int64_t commits = 0;  // this database's committed transactions
  int64_t wal_records = 0;
  int64_t wal_bytes = 0;
  int64_t wal_syncs = 0;  // WAL flushes (fsync / fdatasync)
};

ServerCounters ReadCounters(Conn& c) {
  // pg_stat_* are snapshotted per transaction: clear the snapshot first.
  c.Rows("SELECT pg_stat_clear_snapshot()");
  ServerCounters s;
  s.commits = c.Int("SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()");
  auto w = c.Rows("SELECT wal_records, wal_bytes, wal_sync FROM pg_stat_wal");
  s.wal_records = std::atoll(w[0][0].c_str());
  s.wal_bytes = std::atoll(w[0][1].c_str());
  s.wal_syncs = std::atoll(w[0][2].c_str());
  return s;
}

void Emit(const std::string& name, double value, const char* unit) {
  std::printf("RESULT\t%s\t%.3f\t%s\n", name.c_str(), value, unit);
  std::fflush(stdout);
}

// ---- the ledger --------------------------------------------------------------

config::Config MakeConfig(const std::string& url, const std::string& job_name,
                          const std::string& schedule, int partitions) {
  config::Config config;
  config.path = "/nonexistent/cronledger.toml";
  config.dir = "/tmp";
  config.server.store = url;
  config.server.log_dir = "/tmp/cronledger-pg-bench-logs";
  config::JobConfig job;
  job.name = job_name;
  job.schedule = schedule;
  job.timezone = "UTC";
  job.executor = config::Executor::kInprocess;
  for (int i = 0; i < partitions; ++i) job.partitions.push_back(fmt::format("p{:04d}", i));
  config::StepConfig step;
  step.name = kStep;
  job.steps.push_back(step);
  config.jobs.push_back(std::move(job));
  return config;
}

std::unique_ptr<store::PostgresStore> OpenStore(const std::string& url, bool database_clock) {
  store::PostgresOptions o;
  o.url = url;
  o.database_clock = database_clock;
  return Check(store::PostgresStore::Open(o), "opening the PostgreSQL store");
}

sys_seconds Occurrence() { return *ParseRfc3339("2026-01-01T00:00:00Z"); }

// Migrates the database and plans + releases `runs` due runs of `noop`
// (fixed past instants, so they are due whatever the clock says).
void Prepare(const std::string& url, const config::Config& config, int runs) {
  auto store = OpenStore(url, /*database_clock=*/false);
  Check(store->JobSync({kJob, engine::CanonicalDefinition(config.jobs[0]),
                        store::ToInstant(Occurrence() - seconds{60})}),
        "JobSync");
  const auto t0 = RealClock().Now();
  // One occurrence per 2,000 runs keeps each planning transaction modest.
  // Each run has a partition of its own: the jobs of the peers are
  // independent, and so are these (with overlap = "queue", a partition's
  // next period would wait for its previous one).
  constexpr int kPerOccurrence = 2000;
  for (int done = 0, k = 0; done < runs; ++k) {
    const int n = std::min(kPerOccurrence, runs - done);
    bench::PlanAndRelease(*store, kJob, Occurrence() + seconds{k}, n, done);
    done += n;
  }
  const std::chrono::duration<double> took = RealClock().Now() - t0;
  std::fprintf(stderr, "pg_bench: planned and released %d runs in %.1f s\n", runs, took.count());
}

// ---- throughput ------------------------------------------------------------------

struct Node {
  std::unique_ptr<store::PostgresStore> store;
  std::unique_ptr<store::PostgresStore> write_store;  // the committer's, as serve opens it
  HandlerRegistry handlers;
  std::unique_ptr<engine::DefaultStepRunner> runner;
  std::unique_ptr<engine::Dispatcher> dispatcher;
};

int Throughput(const Options& opt) {
  const config::Config config = MakeConfig(opt.url, kJob, "* * * * * *", 0);
  Prepare(opt.url, config, opt.runs);
  Conn check(opt.url);
  if (!opt.setup_sql.empty()) {
    check.Exec(opt.setup_sql);
    std::fprintf(stderr, "pg_bench: ran the setup SQL: %s\n", opt.setup_sql.c_str());
  }

  std::vector<std::unique_ptr<Node>> nodes;
  for (int i = 0; i < opt.nodes; ++i) {
    auto n = std::make_unique<Node>();
    n->store = OpenStore(opt.url, /*database_clock=*/true);
    n->write_store = OpenStore(opt.url, /*database_clock=*/true);
    n->handlers.Register(kJob, [](const RunContext&) { return 0; });
    n->runner = std::make_unique<engine::DefaultStepRunner>(config, RealClock(), &n->handlers);
    engine::DispatcherOptions d;
    d.node = fmt::format("bench-{}", i + 1);
    d.max_workers = opt.workers;
    if (opt.claim_batch > 0) d.claim_batch = opt.claim_batch;
    d.claim_ahead = std::chrono::milliseconds{opt.claim_ahead_ms};
    d.handlers = &n->handlers;
    d.write_store = n->write_store.get();
    n->dispatcher = std::make_unique<engine::Dispatcher>(config, *n->store, RealClock(),
                                                         *n->runner, d);
    nodes.push_back(std::move(n));
  }
  const std::string label =
      opt.label.empty() ? fmt::format("cronledger-{}x{}", opt.nodes, opt.workers) : opt.label;
  std::fprintf(stderr,
               "pg_bench: %s: %d runs, %d node(s) x %d workers, claim_batch %d, claim_ahead %d ms, "
               "build %s, libpq %d\n",
               label.c_str(), opt.runs, opt.nodes, opt.workers,
               opt.claim_batch > 0 ? opt.claim_batch : engine::DispatcherOptions{}.claim_batch,
               opt.claim_ahead_ms, kBuildType, PQlibVersion());

  const ServerCounters before = ReadCounters(check);
  rusage ru0{};
  getrusage(RUSAGE_SELF, &ru0);
  if (opt.profile) {
    bench::pgtrace::Reset();
    bench::pgtrace::Enable(true);
  }
  const auto t0 = RealClock().Now();
  for (auto& n : nodes) n->dispatcher->Start();
  const auto finished = [&] {
    int64_t done = 0;
    for (auto& n : nodes) done += n->dispatcher->counters().succeeded;
    return done;
  };
  while (finished() < opt.runs) {
    std::this_thread::sleep_for(std::chrono::microseconds(500));
    if (RealClock().Now() - t0 > std::chrono::minutes(20)) {
      Die(fmt::format("only {} of {} runs finished in 20 minutes", finished(), opt.runs));
    }
  }
  const auto t1 = RealClock().Now();
  bench::pgtrace::Enable(false);
  rusage ru1{};
  getrusage(RUSAGE_SELF, &ru1);
  const double wall = std::chrono::duration<double>(t1 - t0).count();
  int64_t claims = 0, claimed = 0, commits = 0, writes = 0;
  for (auto& n : nodes) {
    claims += n->dispatcher->counters().claim_transactions;
    claimed += n->dispatcher->counters().claimed;
    commits += n->dispatcher->counters().write_batches;
    writes += n->dispatcher->counters().writes;
    n->dispatcher.reset();  // stops its loop and threads
  }
  const ServerCounters after = ReadCounters(check);
  const auto cpu = [](const rusage& r) {
    return static_cast<double>(r.ru_utime.tv_sec + r.ru_stime.tv_sec) +
           static_cast<double>(r.ru_utime.tv_usec + r.ru_stime.tv_usec) / 1e6;
  };

  // The ledger, checked.
  const int64_t n = opt.runs;
  const int64_t succeeded = check.Int(
      "SELECT count(*) FROM runs WHERE state = 'succeeded' AND attempts = 1 "
      "AND finished_at IS NOT NULL AND lease_token IS NULL");
  const int64_t attempts = check.Int("SELECT count(*) FROM attempts");
  const int64_t closed = check.Int(
      "SELECT count(*) FROM attempts WHERE number = 1 AND ended_at IS NOT NULL "
      "AND end_class = 'succeeded'");
  const int64_t events = check.Int(
      "SELECT count(*) FROM events WHERE type IN ('claimed', 'step_started', "
      "'step_succeeded', 'succeeded')");
  const int64_t stale = check.Int("SELECT count(*) FROM events WHERE type = 'stale_write_rejected'");
  if (succeeded != n || attempts != n || closed != n || events != 4 * n || stale != 0) {
    Die(fmt::format("verification failed: {} succeeded runs, {} attempts, {} closed, {} events, "
                    "{} stale writes (want {}, {}, {}, {}, 0)",
                    succeeded, attempts, closed, events, stale, n, n, n, 4 * n));
  }
  std::string per_node;
  for (const auto& row :
       check.Rows("SELECT node, count(*) FROM attempts GROUP BY node ORDER BY node")) {
    per_node += fmt::format(" {}={}", row[0], row[1]);
    if (std::atoll(row[1].c_str()) == 0) Die("a node ran nothing");
  }
  if (static_cast<int>(check.Rows("SELECT DISTINCT node FROM attempts").size()) != opt.nodes) {
    Die("not every node ran runs");
  }
  const double per_run = 1.0 / static_cast<double>(n);
  std::fprintf(stderr,
               "pg_bench: %s: %.0f runs/s (%.2f s); checked: %lld runs succeeded, one closed "
               "attempt and 4 events each; runs per node:%s\n",
               label.c_str(), n / wall, wall, static_cast<long long>(succeeded), per_node.c_str());
  std::fprintf(stderr,
               "pg_bench: %s: claim transactions %lld (%.1f runs each), group commits %lld (%.1f "
               "writes each); server: %.2f commits, %.2f WAL flushes, %.1f WAL records, %.0f WAL "
               "bytes per run; bench process CPU %.2f s (%.0f%% of one core)\n",
               label.c_str(), static_cast<long long>(claims),
               claims ? static_cast<double>(claimed) / claims : 0.0,
               static_cast<long long>(commits), commits ? static_cast<double>(writes) / commits : 0.0,
               (after.commits - before.commits) * per_run,
               (after.wal_syncs - before.wal_syncs) * per_run,
               (after.wal_records - before.wal_records) * per_run,
               (after.wal_bytes - before.wal_bytes) * per_run, cpu(ru1) - cpu(ru0),
               100 * (cpu(ru1) - cpu(ru0)) / wall);
  if (opt.profile) bench::pgtrace::Report(stderr, static_cast<long>(n), wall);
  Emit(label, n / wall, "runs/s");
  return 0;
}

// ---- fire latency ------------------------------------------------------------------

class Recorder {
 public:
  void Add(sys_seconds scheduled, double ms) {
    std::lock_guard lock(mu_);
    by_occurrence_[scheduled].push_back(ms);
  }
  std::map<sys_seconds, std::vector<double>> Take() {
    std::lock_guard lock(mu_);
    return by_occurrence_;
  }
  size_t Count(sys_seconds scheduled) {
    std::lock_guard lock(mu_);
    auto it = by_occurrence_.find(scheduled);
    return it == by_occurrence_.end() ? 0 : it->second.size();
  }

 private:
  std::mutex mu_;
  std::map<sys_seconds, std::vector<double>> by_occurrence_;
};

double Percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
  return v[i];
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int Fire(const Options& opt) {
  constexpr int kPartitions = 1000;
  constexpr const char* kFireJob = "fire";
  Clock& clock = RealClock();
  const config::Config config = MakeConfig(opt.url, kFireJob, "*/10 * * * * *", kPartitions);
  auto store = OpenStore(opt.url, /*database_clock=*/true);  // as serve opens it
  auto write_store = OpenStore(opt.url, /*database_clock=*/true);

  Recorder recorder;
  HandlerRegistry handlers;
  handlers.Register(kFireJob, [&](const RunContext& ctx) {
    const std::chrono::duration<double, std::milli> late = clock.Now() - ctx.scheduled_at;
    recorder.Add(ctx.scheduled_at, late.count());
    return 0;
  });
  engine::DefaultStepRunner runner(config, clock, &handlers);
  engine::DispatcherOptions d;
  d.node = "bench";
  d.max_workers = opt.fire_workers;
  d.claim_batch = opt.fire_batch;
  d.claim_ahead = std::chrono::milliseconds{opt.claim_ahead_ms};
  d.handlers = &handlers;
  d.write_store = write_store.get();
  engine::Planner planner(config, *store, clock);
  engine::Reaper reaper(config, *store);
  engine::Dispatcher dispatcher(config, *store, clock, runner, d);
  // As serve wires them: the loop on the ledger's (database) clock, and
  // LISTEN/NOTIFY waking the dispatcher.
  engine::ServeLoopOptions loop_options;
  loop_options.store = store.get();
  loop_options.node.node = "bench";
  engine::ServeLoop loop(config, planner, reaper, dispatcher, clock, loop_options);
  struct WakeTarget {
    std::mutex mu;
    engine::Dispatcher* dispatcher = nullptr;
  };
  auto wake_target = std::make_shared<WakeTarget>();
  wake_target->dispatcher = &dispatcher;
  store->WatchForWork([wake_target] {
    std::lock_guard lock(wake_target->mu);
    if (wake_target->dispatcher != nullptr) wake_target->dispatcher->Wake();
  });
  std::fprintf(stderr,
               "pg_bench: fire: build %s, %d partitions, max_workers %d, claim_batch %d, "
               "claim_ahead %d ms, %d measured occurrences\n",
               kBuildType, kPartitions, opt.fire_workers, opt.fire_batch, opt.claim_ahead_ms,
               opt.occurrences);

  const sys_seconds start = std::chrono::ceil<seconds>(clock.Now());
  sys_seconds first = start + seconds(15);
  first += seconds((10 - first.time_since_epoch().count() % 10) % 10);
  const sys_seconds last = first + seconds(10 * opt.occurrences);

  dispatcher.Start();
  std::stop_source stop;
  std::jthread serve([&] { loop.Run(stop.get_token()); });
  bool tracing = false;
  while (recorder.Count(last) < static_cast<size_t>(kPartitions)) {
    if (!tracing && recorder.Count(first) >= static_cast<size_t>(kPartitions)) {
      // After the warm-up: what-if SQL, and the profile of every pass of
      // the measured occurrences.
      tracing = true;
      if (!opt.setup_sql.empty()) {
        Conn(opt.url).Exec(opt.setup_sql);
        std::fprintf(stderr, "pg_bench: fire: ran the setup SQL after the warm-up: %s\n",
                     opt.setup_sql.c_str());
      }
      if (opt.profile) {
        bench::pgtrace::Reset();
        bench::pgtrace::Enable(true);
      }
    }
    clock.SleepFor(milliseconds(100), stop.get_token());
    if (clock.Now() > last + seconds(60)) Die("the last occurrence never completed");
  }
  dispatcher.WaitIdle();
  bench::pgtrace::Enable(false);
  stop.request_stop();
  serve.join();
  {
    std::lock_guard lock(wake_target->mu);
    wake_target->dispatcher = nullptr;
  }
  dispatcher.Drain(std::chrono::milliseconds{0});
  if (opt.profile) {
    bench::pgtrace::Report(stderr, static_cast<long>(kPartitions) * opt.occurrences,
                           10.0 * opt.occurrences);
  }

  Conn check(opt.url);
  const int64_t first_ms = first.time_since_epoch().count() * 1000;
  const int64_t last_ms = last.time_since_epoch().count() * 1000;
  const int64_t succeeded = check.Int(fmt::format(
      "SELECT count(*) FROM runs WHERE scheduled_at BETWEEN {} AND {} AND state = 'succeeded' "
      "AND attempts = 1",
      first_ms, last_ms));
  const int64_t early = check.Int(
      "SELECT count(*) FROM events e JOIN runs r ON r.id = e.run_id "
      "WHERE e.type = 'claimed' AND e.at < r.scheduled_at");
  const int64_t want = static_cast<int64_t>(kPartitions) * (opt.occurrences + 1);
  if (succeeded != want) Die(fmt::format("{} of {} runs succeeded", succeeded, want));
  if (early != 0) Die(fmt::format("{} run(s) claimed before they were due", early));

  std::vector<double> p50s, p99s, maxes, mins;
  std::fprintf(stderr, "%-22s %6s %9s %9s %9s %9s\n", "occurrence", "runs", "min ms", "p50 ms",
               "p99 ms", "max ms");
  for (auto& [at, v] : recorder.Take()) {
    if (at < first || at > last) continue;
    const bool warmup = at == first;
    std::fprintf(stderr, "%-22s %6zu %9.2f %9.2f %9.2f %9.2f%s\n", FormatUtc(at).c_str(),
                 v.size(), *std::min_element(v.begin(), v.end()), Percentile(v, 0.50),
                 Percentile(v, 0.99), *std::max_element(v.begin(), v.end()),
                 warmup ? "  (warm-up)" : "");
    if (warmup) continue;
    mins.push_back(*std::min_element(v.begin(), v.end()));
    p50s.push_back(Percentile(v, 0.50));
    p99s.push_back(Percentile(v, 0.99));
    maxes.push_back(*std::max_element(v.begin(), v.end()));
  }
  std::fprintf(stderr,
               "pg_bench: fire: median of %zu occurrences: min %.2f ms, p50 %.2f ms, p99 %.2f ms, "
               "max %.2f ms; checked: %lld runs succeeded with one attempt, none claimed early\n",
               p99s.size(), Median(mins), Median(p50s), Median(p99s), Median(maxes),
               static_cast<long long>(succeeded));
  const std::string label = opt.label.empty() ? "cronledger-fire" : opt.label;
  Emit(label + "-p50", Median(p50s), "ms");
  Emit(label + "-p99", Median(p99s), "ms");
  return 0;
}

int Main(int argc, char** argv) {
  const Options opt = ParseArgs(argc, argv);
  spdlog::set_level(getenv("PG_BENCH_DEBUG") ? spdlog::level::debug : spdlog::level::warn);
  if (opt.command == "prepare") {
    Prepare(opt.url, MakeConfig(opt.url, kJob, "* * * * * *", 0), opt.runs);
    return 0;
  }
  if (opt.command == "throughput") return Throughput(opt);
  if (opt.command == "fire") return Fire(opt);
  Die("unknown command " + opt.command + " (prepare, throughput or fire)");
}

}  // namespace
}  // namespace cronledger

int main(int argc, char** argv) { return cronledger::Main(argc, argv); }
