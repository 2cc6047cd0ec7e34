// Fire latency (issue 4, Performance): 1,000 runs due at the same instant,
// in-process handlers, the real clock, and the code `serve` runs
// (engine::ServeLoop, Planner, Reaper, Dispatcher) on a fresh SQLite ledger.
// For every run: the time from its scheduled instant to its handler's start.
// Target: p99 under 50 ms. Results in docs/benchmarks.md.
//
//   bench/run.sh fire [--occurrences N] [--workers N] [--batch N] [--full]
//                     [--claim-ahead-ms MS]
//
// One in-process job fires every 10 seconds (`*/10 * * * * *`, UTC) for
// 1,000 partitions. The first occurrence is a warm-up; each later one is a
// repetition reporting min, p50, p90, p99 and max over its 1,000 runs. The summary is
// the median of the repetitions. Afterwards the ledger is checked: every run
// of a measured occurrence succeeded, and no `claimed` event is earlier than
// its run's scheduled instant (nothing was claimed before it was due).
#include <sqlite3.h>
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
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
#include "engine/planner.h"
#include "engine/reaper.h"
#include "engine/serve_loop.h"
#include "engine/step_runner.h"
#include "store/sqlite/sqlite_store.h"

namespace cronledger {
namespace bench {
const char* const kBenchName = "fire_latency_bench";
}  // namespace bench

namespace {

using bench::Check;
using bench::kBuildType;
using bench::Die;
using std::chrono::duration;
using std::chrono::milliseconds;
using std::chrono::sys_seconds;

constexpr int kPartitions = 1000;
constexpr const char* kJob = "fire";

struct Options {
  int occurrences = 6;  // measured, after one warm-up
  int workers = 256;
  int batch = 256;
  bool full = false;
  int claim_ahead_ms = 0;  // server.claim_ahead; 0: off, serve's default
};

Options ParseArgs(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto value = [&]() -> int {
      if (i + 1 >= argc) Die(a + " needs a number");
      return std::atoi(argv[++i]);
    };
    if (a == "--occurrences") {
      o.occurrences = value();
    } else if (a == "--workers") {
      o.workers = value();
    } else if (a == "--batch") {
      o.batch = value();
    } else if (a == "--full") {
      o.full = true;
    } else if (a == "--claim-ahead-ms") {
      o.claim_ahead_ms = value();
    } else {
      Die("unknown argument " + a +
          " (--occurrences N, --workers N, --batch N, --full, --claim-ahead-ms MS)");
    }
  }
  if (o.occurrences < 1 || o.workers < 1 || o.batch < 1) Die("counts must be positive");
  return o;
}

// Start-to-handler latencies, by scheduled instant.
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


int Main(int argc, char** argv) {
  const Options opt = ParseArgs(argc, argv);
  spdlog::set_level(getenv("FIRE_BENCH_DEBUG") ? spdlog::level::debug : spdlog::level::warn);
  Clock& clock = RealClock();

  char tmpl[] = "/tmp/cronledger-fire-bench-XXXXXX";
  if (!mkdtemp(tmpl)) Die("mkdtemp failed");
  const std::string dir = tmpl;

  config::Config config;
  config.path = dir + "/cronledger.toml";
  config.dir = dir;
  config.server.store = "sqlite:" + dir + "/ledger.db";
  config.server.durability = opt.full ? config::Durability::kFull : config::Durability::kNormal;
  config.server.log_dir = dir + "/logs";
  config::JobConfig job;
  job.name = kJob;
  job.schedule = "*/10 * * * * *";
  job.timezone = "UTC";
  job.executor = config::Executor::kInprocess;
  for (int i = 0; i < kPartitions; ++i) job.partitions.push_back(fmt::format("p{:04d}", i));
  config::StepConfig step;
  step.name = "work";
  job.steps.push_back(step);
  config.jobs.push_back(job);

  store::SqliteOptions so;
  so.path = dir + "/ledger.db";
  so.synchronous_full = opt.full;
  auto store = Check(store::SqliteStore::Open(so), "opening the store");

  Recorder recorder;
  HandlerRegistry handlers;
  handlers.Register(kJob, [&](const RunContext& ctx) {
    const duration<double, std::milli> late = clock.Now() - ctx.scheduled_at;
    recorder.Add(ctx.scheduled_at, late.count());
    return 0;
  });
  engine::DefaultStepRunner runner(config, clock, &handlers);
  engine::DispatcherOptions d;
  d.node = "bench";
  d.max_workers = opt.workers;
  d.claim_batch = opt.batch;
  d.claim_ahead = std::chrono::milliseconds{opt.claim_ahead_ms};
  d.handlers = &handlers;
  engine::Planner planner(config, *store, clock);
  engine::Reaper reaper(config, *store);
  engine::Dispatcher dispatcher(config, *store, clock, runner, d);
  engine::ServeLoop loop(config, planner, reaper, dispatcher, clock);

  std::fprintf(stderr,
               "fire_latency_bench: build %s, SQLite %s, synchronous %s, %d partitions, "
               "max_workers %d, claim_batch %d, claim_ahead %d ms, ledger %s\n",
               kBuildType, sqlite3_libversion(), opt.full ? "FULL" : "NORMAL", kPartitions,
               opt.workers, opt.batch, opt.claim_ahead_ms, so.path.c_str());

  // The first occurrence at least 15 s away is the warm-up (the job is new
  // and the planner's first pass plans the lookahead).
  const sys_seconds start = std::chrono::ceil<std::chrono::seconds>(clock.Now());
  sys_seconds first = start + std::chrono::seconds(15);
  first += std::chrono::seconds((10 - first.time_since_epoch().count() % 10) % 10);
  const sys_seconds last = first + std::chrono::seconds(10 * opt.occurrences);

  dispatcher.Start();
  std::stop_source stop;
  std::jthread serve([&] { loop.Run(stop.get_token()); });
  while (recorder.Count(last) < static_cast<size_t>(kPartitions)) {
    clock.SleepFor(milliseconds(100), stop.get_token());
    if (clock.Now() > last + std::chrono::seconds(30)) Die("the last occurrence never completed");
  }
  dispatcher.WaitIdle();
  stop.request_stop();
  serve.join();
  dispatcher.Drain(std::chrono::milliseconds{0});

  // Check the ledger: measured occurrences all succeeded, nothing claimed
  // before it was due.
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(so.path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    Die("opening the ledger to check it");
  }
  const int64_t first_ms = first.time_since_epoch().count() * 1000;
  const int64_t last_ms = last.time_since_epoch().count() * 1000;
  const int64_t succeeded = bench::QueryInt(
      db, fmt::format("SELECT count(*) FROM runs WHERE scheduled_at BETWEEN {} AND {} AND "
                      "state = 'succeeded' AND attempts = 1",
                      first_ms, last_ms));
  const int64_t early = bench::QueryInt(
      db, "SELECT count(*) FROM events e JOIN runs r ON r.id = e.run_id "
          "WHERE e.type = 'claimed' AND e.at < r.scheduled_at");
  sqlite3_close(db);
  const int64_t want = static_cast<int64_t>(kPartitions) * (opt.occurrences + 1);
  if (succeeded != want) Die(fmt::format("{} of {} runs succeeded", succeeded, want));
  if (early != 0) Die(fmt::format("{} run(s) claimed before they were due", early));

  std::vector<double> mins, p50s, p90s, p99s, maxes;
  std::printf("%-22s %6s %9s %9s %9s %9s %9s\n", "occurrence", "runs", "min ms", "p50 ms",
              "p90 ms", "p99 ms", "max ms");
  for (auto& [at, v] : recorder.Take()) {
    if (at < first || at > last) continue;
    const bool warmup = at == first;
    std::printf("%-22s %6zu %9.2f %9.2f %9.2f %9.2f %9.2f%s\n", FormatUtc(at).c_str(), v.size(),
                *std::min_element(v.begin(), v.end()), Percentile(v, 0.50), Percentile(v, 0.90),
                Percentile(v, 0.99), *std::max_element(v.begin(), v.end()),
                warmup ? "  (warm-up)" : "");
    if (warmup) continue;
    mins.push_back(*std::min_element(v.begin(), v.end()));
    p50s.push_back(Percentile(v, 0.50));
    p90s.push_back(Percentile(v, 0.90));
    p99s.push_back(Percentile(v, 0.99));
    maxes.push_back(*std::max_element(v.begin(), v.end()));
  }
  std::printf("median of %zu occurrences: p50 %.2f ms, p99 %.2f ms, max %.2f ms (target p99 < 50 ms)\n",
              p99s.size(), Median(p50s), Median(p99s), Median(maxes));
  // One line for scripts (bench/apscheduler_bench.sh, bench/plots): the
  // medians over the measured occurrences.
  std::printf(
      "{\"bench\": \"cronledger-fire\", \"store\": \"sqlite\", \"synchronous\": \"%s\", "
      "\"partitions\": %d, \"workers\": %d, \"batch\": %d, \"occurrences\": %zu, "
      "\"min_ms\": %.2f, \"p50_ms\": %.2f, \"p90_ms\": %.2f, \"p99_ms\": %.2f, "
      "\"max_ms\": %.2f}\n",
      opt.full ? "FULL" : "NORMAL", kPartitions, opt.workers, opt.batch, p99s.size(),
      Median(mins), Median(p50s), Median(p90s), Median(p99s), Median(maxes));
  std::printf("checked: %lld runs succeeded with one attempt, none claimed before due\n",
              static_cast<long long>(succeeded));
  store.reset();
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return 0;
}

}  // namespace
}  // namespace cronledger

int main(int argc, char** argv) { return cronledger::Main(argc, argv); }
