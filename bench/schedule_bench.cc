// Schedule engine throughput (issue: foundation). Results in docs/benchmarks.md.
//
//   scripts/build.sh bench && bench/run.sh
#include <string>

#include <benchmark/benchmark.h>

#include "cronledger/schedule.h"

namespace cronledger {
namespace {

std::chrono::sys_seconds At(const char* t) { return *ParseRfc3339(t); }

// next() chained over 2026 (which has DST days in New York): each `after`
// is the previous result.
void BM_NextChained(benchmark::State& state, const char* expr, const char* zone) {
  const Schedule s = *Schedule::Create(expr, zone);
  const auto start = At("2026-01-01T00:00:00Z");
  const auto end = At("2027-01-01T00:00:00Z");
  int64_t total = 0;
  for (auto _ : state) {
    auto t = start;
    int64_t n = 0;
    while (auto occ = s.Next(t)) {
      if (occ->utc >= end) break;
      t = occ->utc;
      ++n;
    }
    benchmark::DoNotOptimize(t);
    total += n;
  }
  state.SetItemsProcessed(total);
  state.counters["per_year"] = static_cast<double>(total) / static_cast<double>(state.iterations());
}

#define CHAINED(name, expr)                                                   \
  BENCHMARK_CAPTURE(BM_NextChained, name##_Seoul, expr, "Asia/Seoul");        \
  BENCHMARK_CAPTURE(BM_NextChained, name##_NewYork, expr, "America/New_York")

CHAINED(every_minute, "* * * * *");
CHAINED(every_15_minutes, "*/15 * * * *");
CHAINED(hourly, "0 * * * *");
CHAINED(daily_0230, "30 2 * * *");
CHAINED(weekdays_0900, "0 9 * * MON-FRI");
CHAINED(third_friday, "0 9 * * 5#3");
CHAINED(last_weekday, "0 17 LW * *");
CHAINED(every_10_seconds, "*/10 * * * * *");

// A whole year of "* * * * *" in New York through Between() (~525,600).
void BM_EnumerateYearEveryMinute(benchmark::State& state) {
  const Schedule s = *Schedule::Create("* * * * *", "America/New_York");
  const auto start = At("2026-01-01T05:00:00Z");
  const auto end = At("2027-01-01T05:00:00Z");
  std::size_t n = 0;
  for (auto _ : state) {
    const auto occs = s.Between(start, end);
    n = occs.size();
    benchmark::DoNotOptimize(occs.data());
  }
  state.counters["occurrences"] = static_cast<double>(n);
}
BENCHMARK(BM_EnumerateYearEveryMinute)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace cronledger

BENCHMARK_MAIN();
