// Subprocess steps (issue 4, Performance): "Subprocess steps running `true`:
// at least 500 runs/s with 8 workers, reported next to the raw fork+exec
// rate." Results in docs/benchmarks.md.
//
//   bench/run.sh subprocess
//
//  * BM_RawForkExec: the ceiling. Starting /bin/true and waiting for it, from
//    1 or 8 threads at once (Google Benchmark threads), by posix_spawn (which
//    glibc does with a vfork-style clone; fork:0) or by fork + execv +
//    waitpid (fork:1). items_per_second is processes per second, summed over
//    the threads.
//  * BM_SubprocessDispatcher: a fresh SQLite ledger (WAL, synchronous =
//    FULL, serve's default) in its own dir under one mkdtemp dir in /tmp,
//    one subprocess job whose one step runs `true`, engine::DefaultStepRunner
//    and engine::Dispatcher with serve's options (8 workers, claim_batch 32,
//    100 ms poll). Each iteration plans and releases kRuns due runs and
//    builds a new dispatcher (untimed), then times dispatcher.Start(), the
//    background loop `serve` runs, until every run has been decided. Each step goes through
//    exec::RunSubprocessStep as in serve: its log file, pipes, the supervisor
//    shim and the command. Afterwards (untimed) every run must have
//    succeeded with one closed attempt (exit status 0) and its claimed,
//    step_started, step_succeeded and succeeded events, or the benchmark
//    fails. items_per_second is runs per second.
//
// Timing is Google Benchmark's (UseRealTime); nothing here reads a clock
// other than through cronledger::RealClock().
#include <sqlite3.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>

#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "bench_ledger.h"
#include "bench_util.h"
#include "config/config.h"
#include "cronledger/clock.h"
#include "cronledger/schedule.h"
#include "engine/dispatcher.h"
#include "engine/job_definition.h"
#include "engine/step_runner.h"
#include "store/sqlite/sqlite_store.h"

extern char** environ;

namespace cronledger {

namespace bench {
const char* const kBenchName = "subprocess_bench";
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

constexpr int kRuns = 512;  // runs per iteration
constexpr const char* kJob = "truejob";
constexpr const char* kStep = "run";
constexpr const char* kTrue = "/bin/true";

// ---- the raw ceiling -------------------------------------------------------------

// Starts /bin/true and waits for it; dies unless it exits 0.
void SpawnTrue(bool use_fork) {
  static char arg0[] = "true";
  static char* const argv[] = {arg0, nullptr};
  pid_t pid = -1;
  if (use_fork) {
    pid = fork();
    if (pid == 0) {
      execv(kTrue, argv);
      _exit(127);
    }
    if (pid < 0) Die(fmt::format("fork: {}", std::strerror(errno)));
  } else {
    const int err = posix_spawn(&pid, kTrue, nullptr, nullptr, argv, environ);
    if (err != 0) Die(fmt::format("posix_spawn {}: {}", kTrue, std::strerror(err)));
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) Die(fmt::format("waitpid: {}", std::strerror(errno)));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    Die(fmt::format("{} ended with status {:#x}", kTrue, status));
  }
}

void BM_RawForkExec(benchmark::State& state) {
  const bool use_fork = state.range(0) != 0;
  for (auto _ : state) SpawnTrue(use_fork);
  state.SetItemsProcessed(state.iterations());  // summed over the threads
  state.counters["ndebug"] = benchmark::Counter(kNdebug ? 1 : 0, benchmark::Counter::kAvgThreads);
}

// ---- the dispatcher ----------------------------------------------------------------

// Occurrences are planned at fixed past instants, one second apart, so they
// are due for the dispatcher's real clock and release never misfires them.
sys_seconds OccurrenceAt(int k) { return *ParseRfc3339("2026-01-01T00:00:00Z") + seconds{k}; }

// Every ledger of this process lives in one mkdtemp dir under /tmp, removed
// when the process ends (also after Die), not after each repetition: a
// removed folder's thousands of just-freed inodes make the next
// repetition's folder and log creation slower on ext4 without a journal,
// which skips recently deleted inodes when it allocates.
const char* RootDir() {
  static char root[] = "/tmp/cronledger-subprocess-bench-XXXXXX";  // no destructor
  static const bool made = [] {
    if (!mkdtemp(root)) Die("mkdtemp failed");
    std::atexit([] {
      std::error_code ec;
      fs::remove_all(root, ec);
    });
    return true;
  }();
  (void)made;
  return root;
}


// A fresh ledger with one subprocess job running `true`; plans kRuns due
// runs on demand.
struct Ledger {
  std::string dir;
  std::string path;
  config::Config config;
  std::unique_ptr<store::SqliteStore> store;
  sqlite3* check = nullptr;
  int occurrence = 0;

  Ledger() {
    std::string tmpl = std::string(RootDir()) + "/ledger-XXXXXX";
    if (!mkdtemp(tmpl.data())) Die("mkdtemp failed");
    dir = tmpl;
    path = dir + "/ledger.db";
    config.path = dir + "/cronledger.toml";
    config.dir = dir;
    config.server.store = "sqlite:" + path;
    config.server.durability = config::Durability::kFull;
    config.server.log_dir = dir + "/logs";
    config::JobConfig job;
    job.name = kJob;
    job.schedule = "* * * * * *";
    job.timezone = "UTC";
    job.executor = config::Executor::kSubprocess;
    config::StepConfig step;
    step.name = kStep;
    // argv, never a shell; a bare name is searched in the step's PATH.
    step.command = {"true"};
    job.steps.push_back(step);
    config.jobs.push_back(std::move(job));

    store::SqliteOptions o;
    o.path = path;
    o.synchronous_full = true;
    store = Check(store::SqliteStore::Open(o), "opening the store");
    Check(store->JobSync({kJob, engine::CanonicalDefinition(config.jobs[0]),
                          store::ToInstant(OccurrenceAt(-60))}),
          "JobSync");
    if (sqlite3_open_v2(path.c_str(), &check, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
      Die(fmt::format("opening {}: {}", path, sqlite3_errmsg(check)));
    }
    sqlite3_busy_timeout(check, 5000);
    std::fprintf(stderr, "subprocess_bench: dispatcher: %s; build %s\n", path.c_str(),
                 kBuildType);
  }
  ~Ledger() {
    sqlite3_close(check);
    store.reset();  // the files stay until the process ends (RootDir)
  }
  Ledger(const Ledger&) = delete;
  Ledger& operator=(const Ledger&) = delete;

  // Plans and releases kRuns runs of the next occurrence; returns its
  // instant.
  sys_seconds PlanNext() {
    const sys_seconds at = OccurrenceAt(occurrence++);
    bench::PlanAndRelease(*store, kJob, at, kRuns);
    return at;
  }

  // Every run of the occurrence at `at`: succeeded, one attempt closed as
  // succeeded with exit status 0, and its four events. Empty when all is well.
  std::string Verify(sys_seconds at) {
    const int64_t t = Ms(at);
    const int64_t succeeded = bench::QueryInt(
        check, fmt::format("SELECT count(*) FROM runs WHERE scheduled_at = {} AND state = "
                           "'succeeded' AND attempts = 1 AND finished_at IS NOT NULL AND "
                           "lease_token IS NULL",
                           t));
    const int64_t attempts = bench::QueryInt(
        check, fmt::format("SELECT count(*) FROM attempts a JOIN runs r ON r.id = a.run_id "
                           "WHERE r.scheduled_at = {}",
                           t));
    const int64_t closed = bench::QueryInt(
        check, fmt::format("SELECT count(*) FROM attempts a JOIN runs r ON r.id = a.run_id "
                           "WHERE r.scheduled_at = {} AND a.number = 1 AND a.started_at IS NOT "
                           "NULL AND a.ended_at IS NOT NULL AND a.end_class = 'succeeded' AND "
                           "a.exit_status = 0",
                           t));
    const int64_t events = bench::QueryInt(
        check, fmt::format("SELECT count(*) FROM events e JOIN runs r ON r.id = e.run_id WHERE "
                           "r.scheduled_at = {} AND e.type IN ('claimed', 'step_started', "
                           "'step_succeeded', 'succeeded')",
                           t));
    if (succeeded == kRuns && attempts == kRuns && closed == kRuns && events == 4 * kRuns) {
      return "";
    }
    return fmt::format(
        "verification failed: {} succeeded runs, {} attempts, {} closed with exit 0, {} events "
        "(want {}, {}, {}, {})",
        succeeded, attempts, closed, events, kRuns, kRuns, kRuns, 4 * kRuns);
  }
};

int64_t Ended(const engine::DispatcherCounters& c) {
  return c.succeeded + c.failed + c.unknown + c.retried;
}

std::unique_ptr<engine::Dispatcher> NewDispatcher(Ledger& ledger, engine::StepRunner& runner) {
  engine::DispatcherOptions o;  // serve's: claim_batch 32, poll 100 ms
  o.node = "bench";
  o.max_workers = 8;
  o.claim_batch = 32;
  return std::make_unique<engine::Dispatcher>(ledger.config, *ledger.store, RealClock(), runner,
                                              o);
}

void BM_SubprocessDispatcher(benchmark::State& state) {
  Ledger ledger;
  engine::DefaultStepRunner runner(ledger.config, RealClock(), nullptr);
  for (auto _ : state) {
    state.PauseTiming();
    const sys_seconds at = ledger.PlanNext();
    auto d = NewDispatcher(ledger, runner);
    state.ResumeTiming();

    d->Start();
    // WaitIdle alone may return before the first claim; the counters say
    // when every run has been decided.
    while (Ended(d->counters()) < kRuns) {
      d->WaitIdle();
      if (Ended(d->counters()) < kRuns) RealClock().SleepFor(std::chrono::milliseconds(1), {});
    }

    state.PauseTiming();
    const int64_t succeeded = d->counters().succeeded;
    d.reset();  // stops the loop and joins the workers
    std::string problem;
    if (succeeded != kRuns) {
      problem = fmt::format("{} of {} runs succeeded (counters)", succeeded, kRuns);
    } else {
      problem = ledger.Verify(at);
    }
    if (!problem.empty()) {
      std::fprintf(stderr, "subprocess_bench: %s\n", problem.c_str());
      state.SkipWithError(problem.c_str());
      break;
    }
    state.ResumeTiming();
  }
  state.SetItemsProcessed(state.iterations() * kRuns);
  state.counters["ndebug"] = kNdebug ? 1 : 0;
}

BENCHMARK(BM_RawForkExec)
    ->ArgName("fork")
    ->Arg(0)
    ->Arg(1)
    ->Threads(1)
    ->Threads(8)
    ->MinTime(0.5)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SubprocessDispatcher)
    ->Iterations(3)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace cronledger

int main(int argc, char** argv) {
  // The dispatcher logs every finished run at info; keep the output to the
  // figures.
  spdlog::set_level(spdlog::level::warn);
  std::fprintf(stderr, "subprocess_bench: build %s, SQLite %s\n", cronledger::bench::kBuildType,
               sqlite3_libversion());
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
