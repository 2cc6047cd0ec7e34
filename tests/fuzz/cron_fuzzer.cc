// Fuzzes the cron parser and the schedule evaluation of what it accepts.
//
// Input: text, "EXPRESSION[\nZONE[\nSTART]]". The expression goes to
// ParseCron as it is (ParseCron refuses control characters, so the first
// newline ends it). ZONE, when it is one of kZones, is the schedule's zone;
// START, when it is an RFC 3339 time, is where the search starts. Otherwise
// both come from a hash of the input, so a plain expression (most of the
// seed corpus) still runs in varied zones and years.
//
// Besides crashes, sanitizer reports and uncaught exceptions, it checks
// what every accepted expression must satisfy: masks inside their fields'
// ranges, occurrences strictly increasing and after the start, wall times
// that match the expression, and occurrences whose local form parses back
// to the same instant.
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "cronledger/schedule.h"
#include "schedule/cron_parser.h"
#include "schedule/wall_search.h"

namespace {

using cronledger::DstNote;
using cronledger::Occurrence;
using cronledger::Schedule;
using cronledger::ScheduleOptions;
using std::chrono::seconds;
using std::chrono::sys_seconds;

// Zones with something to say about DST: none, ordinary, negative (Dublin),
// 30 minutes (Lord Howe), 45-minute offsets (Chatham), a skipped day
// (Apia), shifts twice a year around Ramadan (Casablanca), southern
// hemisphere (Santiago).
constexpr std::array<const char*, 12> kZones = {
    "UTC",          "America/New_York",  "Europe/London",       "Europe/Dublin",
    "Asia/Seoul",   "Asia/Kolkata",      "Australia/Lord_Howe", "Pacific/Chatham",
    "Pacific/Apia", "Africa/Casablanca", "America/Santiago",    "America/St_Johns"};

[[noreturn]] void Fail(const char* what, std::string_view input) {
  std::fprintf(stderr, "cron_fuzzer: invariant broken: %s\ninput: %.*s\n", what,
               static_cast<int>(input.size()), input.data());
  std::abort();
}

uint64_t Fnv1a(std::string_view s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::string_view NextLine(std::string_view& rest) {
  const std::size_t nl = rest.find('\n');
  const std::string_view line = rest.substr(0, nl);
  rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
  return line;
}

void CheckMasks(const cronledger::schedule::CronFields& f, std::string_view input) {
  if (f.seconds == 0 || f.seconds >> 60 != 0) Fail("seconds mask", input);
  if (f.minutes == 0 || f.minutes >> 60 != 0) Fail("minutes mask", input);
  if (f.hours == 0 || f.hours >> 24 != 0) Fail("hours mask", input);
  if (f.months == 0 || (f.months & ~uint32_t{0x1ffe}) != 0) Fail("months mask", input);
  if ((f.days & ~uint32_t{0xfffffffe}) != 0) Fail("days mask", input);
  if ((f.weekdays & ~uint32_t{0x7f}) != 0) Fail("weekdays mask", input);
  if (!f.has_seconds_field && f.seconds != 1) Fail("seconds without a seconds field", input);
}

void CheckOccurrence(const Schedule& schedule, const cronledger::schedule::CronFields& fields,
                     const Occurrence& occ, sys_seconds after, std::string_view input) {
  if (occ.utc <= after) Fail("Next() is not after its argument", input);
  if (occ.utc_offset <= -seconds{86400} || occ.utc_offset >= seconds{86400}) {
    Fail("offset of a day or more", input);
  }
  if (occ.dst == DstNote::kShifted) {
    if (occ.nominal >= occ.local()) Fail("shifted occurrence not later than its wall time", input);
  } else if (occ.nominal != occ.local()) {
    Fail("unshifted occurrence away from its wall time", input);
  }
  if (cronledger::schedule::NextWallMatch(fields, occ.nominal, occ.nominal) != occ.nominal) {
    Fail("wall time does not match the expression", input);
  }
  const std::chrono::year_month_day local_date{std::chrono::floor<std::chrono::days>(occ.local())};
  // RFC 3339 offsets have no seconds: zones kept local mean time (-4:42:46
  // in Santiago) into the 20th century. And four-digit years only.
  if (occ.utc_offset % 60 == seconds{0} && local_date.year() >= std::chrono::year{1}) {
    const auto back = cronledger::ParseRfc3339(cronledger::FormatLocal(occ));
    if (!back.ok() || *back != occ.utc) Fail("FormatLocal does not parse back", input);
  }
  if (!schedule.BusinessDate(occ).ok()) Fail("business date", input);
  if (schedule.Period(occ, schedule.DefaultKey()).empty()) Fail("empty period", input);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  std::string_view rest = input;
  const std::string_view expression = NextLine(rest);
  const std::string_view zone_line = NextLine(rest);
  const std::string_view start_line = NextLine(rest);

  auto fields = cronledger::schedule::ParseCron(expression);
  if (!fields.ok()) {
    if (fields.status().message().empty()) Fail("refusal without a message", input);
    return 0;
  }
  CheckMasks(*fields, input);

  const uint64_t h = Fnv1a(input);
  std::string zone = kZones[h % kZones.size()];
  for (const char* z : kZones) {
    if (zone_line == z) zone = z;
  }
  ScheduleOptions options;
  options.dst_gap =
      (h >> 8) & 1 ? cronledger::DstGapPolicy::kSkip : cronledger::DstGapPolicy::kShift;
  switch ((h >> 9) & 3) {
    case 0:
      break;  // the hour field's default
    case 1:
      options.dst_repeat = cronledger::DstRepeatPolicy::kFirst;
      break;
    case 2:
      options.dst_repeat = cronledger::DstRepeatPolicy::kLast;
      break;
    case 3:
      options.dst_repeat = cronledger::DstRepeatPolicy::kBoth;
      break;
  }
  options.date_offset_days = static_cast<int>((h >> 11) % 733) - 366;  // the config's range

  auto schedule = Schedule::Create(expression, zone, options);
  if (!schedule.ok()) return 0;  // e.g. "0 0 30 2 *": parses, never fires

  // 1900-01-01 to 2500-01-01 unless START says otherwise.
  constexpr int64_t kFrom = -2208988800;
  constexpr int64_t kTo = 16725225600;
  sys_seconds after{seconds{kFrom + static_cast<int64_t>((h >> 20) % uint64_t{kTo - kFrom})}};
  if (auto t = cronledger::ParseRfc3339(start_line); t.ok()) after = *t;

  for (int step = 0; step < 3; ++step) {
    const auto occ = schedule->Next(after);
    if (!occ) break;
    CheckOccurrence(*schedule, *fields, *occ, after, input);
    after = occ->utc;
  }
  return 0;
}
