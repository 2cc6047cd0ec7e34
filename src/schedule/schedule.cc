// Occurrence search: cron fields matched against wall-clock time, mapped to
// UTC through the zone's segments of constant offset.
//
// Why segments: within one segment wall time moves in lockstep with UTC, so
// the next wall-clock match inside it is the next occurrence inside it. What
// DST adds lives only at segment boundaries: a spring-forward boundary is a
// range of wall times that never happen (shifted to the boundary instant or
// skipped), and a fall-back boundary makes the wall times at the end of one
// segment appear again at the start of the next (fired first, last or both).
// Walking segments in UTC order therefore yields occurrences in UTC order,
// including the repeated hour, without ever scanning minute by minute.
#include "cronledger/schedule.h"

#include <bit>

#include <date/date.h>
#include <fmt/format.h>

#include "schedule/cron_parser.h"
#include "schedule/time_zone.h"
#include "schedule/wall_search.h"

namespace cronledger {

using std::chrono::local_seconds;
using std::chrono::seconds;
using std::chrono::sys_seconds;

struct Schedule::Impl {
  std::string expression;
  std::string timezone;
  ScheduleOptions options;
  schedule::CronFields fields;
  schedule::TimeZone zone;
  DstRepeatPolicy repeat;
};

namespace {

// Occurrences are searched up to the end of the year 9999.
constexpr local_seconds kLastWallTime{
    date::local_days{date::year{9999} / 12 / 31}.time_since_epoch() + seconds{86399}};
constexpr sys_seconds kLastInstant{
    date::sys_days{date::year{10000} / 1 / 1}.time_since_epoch()};
// No DST transition moves clocks by a day or more; within this distance of a
// segment boundary a wall time may also belong to the neighbouring segment.
constexpr seconds kMaxShift{86400};

local_seconds ToWall(sys_seconds t, seconds offset) {
  return local_seconds{t.time_since_epoch() + offset};
}
sys_seconds ToUtc(local_seconds w, seconds offset) {
  return sys_seconds{w.time_since_epoch() - offset};
}

}  // namespace

Result<Schedule> Schedule::Create(std::string_view expression, std::string_view timezone,
                                  ScheduleOptions options) {
  auto fields = schedule::ParseCron(expression);
  if (!fields.ok()) return fields.status();
  // The Gregorian calendar repeats every 400 years, so an expression with no
  // match in 401 years has none at all (February 30, April 31, ...).
  const local_seconds from{date::local_days{date::year{2000} / 1 / 1}.time_since_epoch()};
  const local_seconds to{date::local_days{date::year{2401} / 1 / 1}.time_since_epoch()};
  if (!schedule::NextWallMatch(*fields, from, to)) {
    return InvalidArgument(
        fmt::format("expression \"{}\" never fires: no date matches its day and month fields",
                    expression));
  }
  auto zone = schedule::TimeZone::Load(timezone);
  if (!zone.ok()) return zone.status();

  DstRepeatPolicy repeat = fields->hour_fixed ? DstRepeatPolicy::kFirst : DstRepeatPolicy::kBoth;
  if (options.dst_repeat) repeat = *options.dst_repeat;
  auto impl = std::make_shared<const Impl>(Impl{std::string(expression), std::string(timezone),
                                                options, std::move(*fields),
                                                std::move(*zone), repeat});
  return Schedule(std::move(impl));
}

std::optional<Occurrence> Schedule::Next(sys_seconds after) const {
  const Impl& s = *impl_;
  if (after >= kLastInstant) return std::nullopt;
  auto seg = s.zone.SegmentAt(after);
  sys_seconds t = after + seconds{1};
  for (;;) {
    if (seg.begin >= kLastInstant) return std::nullopt;
    const seconds o = seg.offset;
    const local_seconds seg_last_wall = std::min(ToWall(seg.end, o) - seconds{1}, kLastWallTime);
    const local_seconds seg_first_wall = ToWall(seg.begin, o);
    local_seconds from = ToWall(t, o);

    // The neighbours, looked up only when a match is close to a boundary.
    std::optional<schedule::TimeZone::Segment> prev;
    std::optional<schedule::TimeZone::Segment> next;

    while (from <= seg_last_wall) {
      const auto w = schedule::NextWallMatch(s.fields, from, seg_last_wall);
      if (!w) break;
      from = *w + seconds{1};
      DstNote note = DstNote::kNone;
      if (*w - seg_first_wall < kMaxShift) {
        if (!prev) prev = s.zone.SegmentAt(seg.begin - seconds{1});
        if (prev->offset > o && *w < ToWall(seg.begin, prev->offset)) {
          // The second time this wall time happens.
          if (s.repeat == DstRepeatPolicy::kFirst) continue;
          note = DstNote::kRepeated;
        }
      }
      if (note == DstNote::kNone && seg_last_wall - *w < kMaxShift &&
          seg.end < kLastInstant) {
        if (!next) next = s.zone.SegmentAt(seg.end);
        if (next->offset < o && *w >= ToWall(seg.end, next->offset)) {
          // The first of two: it happens again in the next segment.
          if (s.repeat == DstRepeatPolicy::kLast) continue;
        }
      }
      return Occurrence{ToUtc(*w, o), o, *w, note};
    }

    if (seg.end >= kLastInstant) return std::nullopt;
    if (!next) next = s.zone.SegmentAt(seg.end);
    if (next->offset > o && s.options.dst_gap == DstGapPolicy::kShift) {
      // Spring forward: wall times in [gap_begin, gap_end) never happen.
      const local_seconds gap_begin = ToWall(seg.end, o);
      const local_seconds gap_end = ToWall(seg.end, next->offset);
      const auto w = schedule::NextWallMatch(s.fields, gap_begin, gap_end - seconds{1});
      if (w) {
        // Shifted times collapse into one occurrence at the end of the gap,
        // which is a plain occurrence when the wall time there matches too.
        const bool real = schedule::NextWallMatch(s.fields, gap_end, gap_end).has_value();
        return Occurrence{seg.end, next->offset, real ? gap_end : *w,
                          real ? DstNote::kNone : DstNote::kShifted};
      }
    }
    t = seg.end;
    seg = *next;
  }
}

std::vector<Occurrence> Schedule::Between(sys_seconds after, sys_seconds until) const {
  std::vector<Occurrence> out;
  for (auto occ = Next(after); occ && occ->utc <= until; occ = Next(occ->utc)) {
    out.push_back(*occ);
  }
  return out;
}

std::chrono::year_month_day Schedule::BusinessDate(const Occurrence& occurrence) const {
  const auto day = std::chrono::floor<std::chrono::days>(occurrence.local());
  const auto shifted = day + std::chrono::days{impl_->options.date_offset_days};
  return std::chrono::year_month_day{std::chrono::sys_days{shifted.time_since_epoch()}};
}

std::string Schedule::Period(const Occurrence& occurrence, PeriodKey key) const {
  if (key == PeriodKey::kDate) return FormatDate(BusinessDate(occurrence));
  std::string local = FormatLocal(occurrence);  // 2026-11-28T09:00:00+09:00
  if (!impl_->fields.has_seconds_field) local.erase(16, 3);
  return local;
}

PeriodKey Schedule::DefaultKey() const {
  const auto& f = impl_->fields;
  const bool once_a_day = std::popcount(f.seconds) == 1 && std::popcount(f.minutes) == 1 &&
                          std::popcount(f.hours) == 1 &&
                          impl_->repeat != DstRepeatPolicy::kBoth;
  return once_a_day ? PeriodKey::kDate : PeriodKey::kSlot;
}

DstRepeatPolicy Schedule::EffectiveDstRepeat() const { return impl_->repeat; }
const std::string& Schedule::expression() const { return impl_->expression; }
const std::string& Schedule::timezone() const { return impl_->timezone; }
const ScheduleOptions& Schedule::options() const { return impl_->options; }
bool Schedule::has_seconds_field() const { return impl_->fields.has_seconds_field; }

std::string TzdataVersion() {
  static const std::string version = schedule::ReadTzdataVersion();
  return version;
}

}  // namespace cronledger
