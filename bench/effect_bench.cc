// In-process effects (issue 5, Performance): committed ctx.Effect calls per
// second through the real dispatcher, on SQLite with durability full and
// normal, with 1 and 16 concurrent handlers. Results in docs/benchmarks.md.
//
//   bench/run.sh effect
//
// Each repetition has a fresh SQLite file in a new /tmp dir, created (schema,
// WAL, pragmas) by store::SqliteStore::Open with synchronous = FULL or
// NORMAL. Untimed: one in-process job is planned and released with one run
// per handler (bench::PlanAndRelease) and a new engine::Dispatcher is built
// (max_workers = claim_batch = handlers). Timed: Start(), the loop `serve`
// runs, until every run is decided. Each run's handler calls ctx.Effect
// kEffects / handlers times in a loop, each with a key of its own and a
// trivial effect function, so each call is a durable begin (the key is
// `started` before the function runs) and a durable commit; the handler
// fails the run on any answer but 0. The runs' claims and completions are in
// the timing too (one claim transaction and one or two group commits for the
// lot: a few ms).
//
// Afterwards (untimed) the ledger is checked: every run succeeded, every key
// is `committed` with the function's output, settled by its run's attempt,
// with one effect_started and one effect_committed event each; any mismatch
// fails the benchmark. items_per_second is committed effects per second;
// `batch_mean` is the mean ops per effect-writer transaction (a begin or a
// commit is one op; an effect is two), `batches` the transactions per
// iteration, `batch_max` the largest.
//
// Before and after the benchmarks it prints the disk's own fsync latency
// (200 fdatasync calls of 16 KiB under /tmp): with durability full every
// batch waits for one, and on a shared machine that cost moves from minute
// to minute.
#include <fcntl.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
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
#include "store/sqlite/sqlite_store.h"

namespace cronledger {

namespace bench {
const char* const kBenchName = "effect_bench";
}  // namespace bench

namespace {

using bench::Check;
using bench::Die;
using bench::kBuildType;
using bench::kNdebug;
using bench::QueryInt;

namespace fs = std::filesystem;
using std::chrono::seconds;
using std::chrono::sys_seconds;

constexpr int kEffects = 8000;  // committed effects per iteration, over all handlers
constexpr const char* kJob = "effects";
constexpr const char* kStep = "work";

// One fresh ledger: a folder, the store, the config of one in-process job.
struct Ledger : bench::InprocessLedger {
  explicit Ledger(bool full)
      : InprocessLedger("cronledger-effect-bench", full, kJob, kStep, "0 0 * * *") {
    config.jobs[0].overlap = ledger::Overlap::kAllow;
  }
};

// What the handlers saw; a run with any answer but 0 fails.
struct Problems {
  std::mutex mu;
  std::vector<std::string> list;
  void Add(std::string p) {
    std::lock_guard lock(mu);
    if (list.size() < 10) list.push_back(std::move(p));
  }
};

// Every key committed once by its own run, with its events. Empty when so.
std::string Verify(const std::string& path, int handlers, int per_handler) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    Die("opening the ledger to check it");
  }
  const int64_t want = static_cast<int64_t>(handlers) * per_handler;
  const int64_t runs = QueryInt(
      db, "SELECT count(*) FROM runs WHERE state = 'succeeded' AND attempts = 1");
  const int64_t committed = QueryInt(
      db, "SELECT count(*) FROM effects e JOIN runs r ON r.id = e.run_id "
          "WHERE e.state = 'committed' AND e.result = 'sent' AND e.exit_status = 0 "
          "AND e.settled_token = e.started_token AND e.started_attempt = 1 "
          "AND e.key LIKE 'mail/' || r.partition || '/%'");
  const int64_t all = QueryInt(db, "SELECT count(*) FROM effects");
  const int64_t started = QueryInt(db, "SELECT count(*) FROM events WHERE type = 'effect_started'");
  const int64_t settled = QueryInt(db, "SELECT count(*) FROM events WHERE type = 'effect_committed'");
  sqlite3_close(db);
  if (runs == handlers && committed == want && all == want && started == want && settled == want) {
    return "";
  }
  return fmt::format(
      "verification failed: {} succeeded runs (want {}), {} committed effects of {} (want {}), "
      "{} effect_started and {} effect_committed events",
      runs, handlers, committed, all, want, started, settled);
}

void BM_Effects(benchmark::State& state) {
  const bool full = state.range(0) != 0;
  const int handlers = static_cast<int>(state.range(1));
  const int per_handler = kEffects / handlers;
  int64_t batches = 0, ops = 0, largest = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto ledger = std::make_unique<Ledger>(full);
    Check(ledger->store->JobSync({kJob, engine::CanonicalDefinition(ledger->config.jobs[0]),
                                  store::ToInstant(*ParseRfc3339("2026-01-01T00:00:00Z"))}),
          "JobSync");
    bench::PlanAndRelease(*ledger->store, kJob, *ParseRfc3339("2026-01-02T00:00:00Z"), handlers);
    Problems problems;
    HandlerRegistry registry;
    registry.Register(kJob, [&](const RunContext& ctx) {
      const EffectFn send = [] { return EffectResult{0, "sent"}; };
      for (int i = 0; i < per_handler; ++i) {
        const int rc = ctx.Effect(fmt::format("mail/{}/{}", ctx.partition, i), "v1", send);
        if (rc != 0) {
          problems.Add(fmt::format("{} effect {}: {}", ctx.run_key, i, rc));
          return 1;
        }
      }
      return 0;
    });
    engine::DefaultStepRunner runner(ledger->config, RealClock(), &registry);
    engine::DispatcherOptions o;
    o.node = "bench";
    o.max_workers = handlers;
    o.claim_batch = handlers;
    o.handlers = &registry;
    auto d = std::make_unique<engine::Dispatcher>(ledger->config, *ledger->store, RealClock(),
                                                  runner, o);
    state.ResumeTiming();

    d->Start();
    while (d->counters().succeeded + d->counters().failed + d->counters().retried +
               d->counters().unknown <
           handlers) {
      RealClock().SleepFor(std::chrono::microseconds(200), std::stop_token{});
    }

    state.PauseTiming();
    const auto& w = d->effect_writer().counters();
    batches += w.batches;
    ops += w.ops;
    largest = std::max<int64_t>(largest, w.largest_batch);
    d.reset();
    std::string problem;
    {
      std::lock_guard lock(problems.mu);
      for (const auto& p : problems.list) problem += p + "; ";
    }
    if (problem.empty()) problem = Verify(ledger->path, handlers, per_handler);
    if (!problem.empty()) {
      std::fprintf(stderr, "effect_bench: %s\n", problem.c_str());
      state.SkipWithError(problem.c_str());
      break;
    }
    state.ResumeTiming();
  }
  state.SetItemsProcessed(state.iterations() * per_handler * handlers);
  state.counters["sync_set"] = full ? 2 : 1;
  state.counters["ndebug"] = kNdebug ? 1 : 0;
  state.counters["batch_mean"] = batches ? static_cast<double>(ops) / batches : 0;
  state.counters["batches"] =
      state.iterations() ? static_cast<double>(batches) / static_cast<double>(state.iterations())
                         : 0;
  state.counters["batch_max"] = static_cast<double>(largest);
}

void Args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"full", "handlers"});
  for (int full : {1, 0}) {
    for (int handlers : {1, 16}) b->Args({full, handlers});
  }
}

BENCHMARK(BM_Effects)->Apply(Args)->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();

// With durability full every batch waits for an fsync, so the figures
// follow the disk. On a shared machine that varies from minute to minute
// (other processes' writes ride in the same ext4 journal commits): print
// what an fsync costs right now, before and after the benchmarks.
void ProbeFsync(const char* when) {
  char tmpl[] = "/tmp/cronledger-effect-bench-XXXXXX";
  if (!mkdtemp(tmpl)) Die("mkdtemp failed");
  const std::string path = std::string(tmpl) + "/probe";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT, 0600);
  if (fd < 0) Die("opening " + path);
  const std::vector<char> page(16384, 'x');
  std::vector<double> us;
  for (int i = 0; i < 200; ++i) {
    if (::pwrite(fd, page.data(), page.size(), static_cast<off_t>(i % 64) * 16384) < 0) {
      Die("pwrite failed");
    }
    const auto t0 = RealClock().Now();
    if (::fdatasync(fd) != 0) Die("fdatasync failed");
    us.push_back(std::chrono::duration<double, std::micro>(RealClock().Now() - t0).count());
  }
  ::close(fd);
  std::error_code ec;
  fs::remove_all(tmpl, ec);
  std::sort(us.begin(), us.end());
  std::fprintf(stderr,
               "effect_bench: disk %s: fdatasync of 16 KiB under /tmp, 200 calls: median %.0f us, "
               "p90 %.0f us, p99 %.0f us\n",
               when, us[100], us[180], us[198]);
}

}  // namespace
}  // namespace cronledger

int main(int argc, char** argv) {
  // The dispatcher logs every finished run at info; keep the output to the
  // figures.
  spdlog::set_level(spdlog::level::warn);
  std::fprintf(stderr, "effect_bench: build %s, SQLite %s, %d effects per iteration\n",
               cronledger::bench::kBuildType, sqlite3_libversion(), cronledger::kEffects);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  cronledger::ProbeFsync("before");
  benchmark::RunSpecifiedBenchmarks();
  cronledger::ProbeFsync("after");
  benchmark::Shutdown();
  return 0;
}
