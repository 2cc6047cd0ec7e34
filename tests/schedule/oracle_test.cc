// An independent brute-force oracle for Schedule::Next.
//
// Random cron expressions are generated together with the structured sets
// they mean (so the oracle needs no parser of its own). For a window of local
// wall time the oracle walks every wall-clock minute (or second, for 6-field
// expressions), tests it with its own matcher, maps each match to instants
// with date::time_zone::get_info(local_seconds) and the DST rules of
// docs/schedule.md, and compares the result with chained Schedule::Next()
// calls (and one Between() call) over a safe inner part of the window.
//
// Nothing here uses the engine's helpers: only date/tz and the public API.
//
// Seed: printed at start; override with CRONLEDGER_ORACLE_SEED. The number
// of expressions can be raised with CRONLEDGER_ORACLE_COUNT for a deeper run.
#include <date/date.h>
#include <date/tz.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <bitset>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "cronledger/schedule.h"

namespace cronledger {
namespace {

// date::sys_seconds and std::chrono::sys_seconds are the same type;
// date::local_seconds and std::chrono::local_seconds are not.
using SysSec = std::chrono::sys_seconds;
using LocalSec = date::local_seconds;
using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;

// ---------------------------------------------------------------------------
// Syntax element categories: every one must be drawn at least once.

enum Cat {
  kFiveFields,
  kSixFields,
  kStar,
  kSingle,
  kList,
  kRange,
  kStepStar,
  kStepRange,
  kStepFrom,
  kMonthName,
  kMonthNameRange,
  kDowName,
  kDowNameRange,
  kNameNotUpper,
  kSunday7,
  kSunday7Range,
  kMacroYearly,
  kMacroAnnually,
  kMacroMonthly,
  kMacroWeekly,
  kMacroDaily,
  kMacroMidnight,
  kMacroHourly,
  kDomAndDowRestricted,
  kDomOnlyRestricted,
  kDowOnlyRestricted,
  kDomL,
  kDomLMinus,
  kDomNW,
  kDomLW,
  kDowHash,
  kDowHashName,
  kDowL,
  kSpecialInList,
  kHourFixedSingle,
  kHourFixedList,
  kHourNotFixed,
  kCatCount
};

constexpr std::array<const char*, kCatCount> kCatNames = {
    "five fields",       "six fields (seconds)",   "*",
    "single value",      "list",                   "range a-b",
    "step */n",          "step a-b/n",             "step a/n",
    "month name",        "month name range",       "weekday name",
    "weekday name range", "name not upper case",   "Sunday as 7",
    "range ending at 7", "@yearly",                "@annually",
    "@monthly",          "@weekly",                "@daily",
    "@midnight",         "@hourly",                "dom and dow restricted",
    "only dom restricted", "only dow restricted",  "L",
    "L-n",               "nW",                     "LW",
    "d#k",               "NAME#k",                 "dL",
    "special in a list", "hour fixed (number)",    "hour fixed (list)",
    "hour not fixed",
};

// ---------------------------------------------------------------------------
// The structured meaning of an expression.

enum class FieldKind { kSec, kMin, kHour, kDom, kMon, kDow };

struct FieldSpec {
  std::string text;
  bool star = false;         // exactly "*"
  bool plain_numbers = true;  // every element is a single number
  std::bitset<64> values;    // dow: 0..7, 7 = Sunday
  // day-of-month extensions
  bool last = false;
  std::vector<int> last_minus;  // L-n
  std::vector<int> nearest;     // nW
  bool last_weekday = false;    // LW
  // day-of-week extensions
  std::vector<std::pair<int, int>> nth;  // (weekday 0..6, k)
  std::vector<int> last_dow;             // dL, weekday 0..6
};

struct Expr {
  std::string text;
  bool has_seconds = false;
  FieldSpec sec, min, hour, dom, mon, dow;
};

FieldSpec AllOf(int lo, int hi, const char* text = "*") {
  FieldSpec f;
  f.text = text;
  f.star = std::string(text) == "*";
  for (int v = lo; v <= hi; ++v) f.values.set(v);
  return f;
}

FieldSpec Only(int v) {
  FieldSpec f;
  f.text = std::to_string(v);
  f.values.set(v);
  return f;
}

// ---------------------------------------------------------------------------
// The oracle's own calendar matcher.

unsigned LastDay(date::year y, date::month m) {
  return static_cast<unsigned>((y / m / date::last).day());
}

unsigned WeekdayOf(const date::year_month_day& ymd) {
  return date::weekday{date::sys_days{ymd}}.c_encoding();  // 0 = Sunday
}

bool DomMatches(const FieldSpec& f, const date::year_month_day& ymd) {
  const unsigned d = static_cast<unsigned>(ymd.day());
  const unsigned last = LastDay(ymd.year(), ymd.month());
  if (f.values.test(d)) return true;
  if (f.last && d == last) return true;
  for (int n : f.last_minus) {
    if (static_cast<int>(last) - n >= 1 && d == last - n) return true;
  }
  auto wd_of = [&](unsigned day) {
    return WeekdayOf(ymd.year() / ymd.month() / date::day{day});
  };
  for (int n : f.nearest) {
    if (static_cast<unsigned>(n) > last) continue;  // day n does not exist
    unsigned target = n;
    unsigned w = wd_of(n);
    if (w == 6) target = (n == 1) ? 3 : n - 1;
    if (w == 0) target = (static_cast<unsigned>(n) == last) ? n - 2 : n + 1;
    if (d == target) return true;
  }
  if (f.last_weekday) {
    unsigned target = last;
    unsigned w = wd_of(last);
    if (w == 6) target = last - 1;
    if (w == 0) target = last - 2;
    if (d == target) return true;
  }
  return false;
}

bool DowMatches(const FieldSpec& f, const date::year_month_day& ymd) {
  const unsigned w = WeekdayOf(ymd);
  const unsigned d = static_cast<unsigned>(ymd.day());
  const unsigned last = LastDay(ymd.year(), ymd.month());
  if (f.values.test(w) || (w == 0 && f.values.test(7))) return true;
  for (auto [wd, k] : f.nth) {
    if (static_cast<unsigned>(wd) == w && (d - 1) / 7 + 1 == static_cast<unsigned>(k)) return true;
  }
  for (int wd : f.last_dow) {
    if (static_cast<unsigned>(wd) == w && d + 7 > last) return true;
  }
  return false;
}

// The classic cron rule as Vixie cron and cronie implement it (and
// docs/schedule.md documents): a day field that begins with "*" (such as
// "*/2") is unrestricted, and then both day fields must match; only when
// neither begins with "*" does either one suffice.
constexpr bool kVixieStarPrefix = true;

bool DayMatches(const Expr& e, const date::year_month_day& ymd) {
  if (!e.mon.values.test(static_cast<unsigned>(ymd.month()))) return false;
  if (kVixieStarPrefix && (e.dom.text[0] == '*' || e.dow.text[0] == '*')) {
    return DomMatches(e.dom, ymd) && DowMatches(e.dow, ymd);
  }
  if (e.dom.star && e.dow.star) return true;
  if (e.dom.star) return DowMatches(e.dow, ymd);
  if (e.dow.star) return DomMatches(e.dom, ymd);
  return DomMatches(e.dom, ymd) || DowMatches(e.dow, ymd);
}

bool HourFixed(const Expr& e) { return !e.hour.star && e.hour.plain_numbers; }

DstRepeatPolicy EffectiveRepeat(const Expr& e, const ScheduleOptions& o) {
  if (o.dst_repeat) return *o.dst_repeat;
  return HourFixed(e) ? DstRepeatPolicy::kFirst : DstRepeatPolicy::kBoth;
}

// ---------------------------------------------------------------------------
// Expected occurrences of one window.

struct Expected {
  SysSec utc;
  DstNote note = DstNote::kNone;
  seconds offset{0};  // UTC offset in force at utc
  LocalSec local;     // utc + offset
  // The wall times that fired here (several when shifted ones collapsed).
  LocalSec first_nominal, last_nominal;
  int nominal_count = 1;
  bool ambiguous = false;  // local exists twice (first or second instant)
};

using ExpectedList = std::vector<Expected>;  // sorted by utc, unique

struct OracleStats {
  long wall_matches = 0;
  long shifted = 0;
  long skipped_in_gap = 0;
  long repeated_second = 0;
  long ambiguous_first = 0;
  long collapsed = 0;
  long real_wins = 0;  // a real match at the instant of shifted ones
};

// Resolves wall times with date::time_zone::get_info(local_seconds), caching
// the last sys_info for wall times far (a day) from its ends, where they
// cannot have another interpretation.
class WallResolver {
 public:
  explicit WallResolver(const date::time_zone* zone) : zone_(zone) {}

  date::local_info Resolve(LocalSec wall) {
    if (cached_) {
      const SysSec utc = SysSec{wall.time_since_epoch()} - cache_.offset;
      if (utc - cache_.begin >= date::days{1} && cache_.end - utc >= date::days{1}) {
        return date::local_info{date::local_info::unique, cache_, {}};
      }
    }
    date::local_info info = zone_->get_info(wall);
    if (info.result == date::local_info::unique) {
      cache_ = info.first;
      cached_ = true;
    }
    return info;
  }

 private:
  const date::time_zone* zone_;
  date::sys_info cache_;
  bool cached_ = false;
};

// Maps one matching wall time to its instants.
void MapWallTime(WallResolver& resolver, LocalSec wall, const ScheduleOptions& o,
                 DstRepeatPolicy repeat, ExpectedList& out, OracleStats& st) {
  ++st.wall_matches;
  const date::local_info info = resolver.Resolve(wall);
  const SysSec as_sys{wall.time_since_epoch()};
  auto add = [&](SysSec utc, seconds offset, DstNote note, bool ambiguous) {
    Expected x;
    x.utc = utc;
    x.note = note;
    x.offset = offset;
    x.local = LocalSec{utc.time_since_epoch() + offset};
    x.first_nominal = x.last_nominal = wall;
    x.ambiguous = ambiguous;
    out.push_back(x);
  };
  switch (info.result) {
    case date::local_info::unique:
      add(as_sys - info.first.offset, info.first.offset, DstNote::kNone, false);
      break;
    case date::local_info::nonexistent:
      if (o.dst_gap == DstGapPolicy::kShift) {
        ++st.shifted;
        add(info.second.begin, info.second.offset, DstNote::kShifted, false);
      } else {
        ++st.skipped_in_gap;
      }
      break;
    case date::local_info::ambiguous:
      if (repeat != DstRepeatPolicy::kLast) {
        ++st.ambiguous_first;
        add(as_sys - info.first.offset, info.first.offset, DstNote::kNone, true);
      }
      if (repeat != DstRepeatPolicy::kFirst) {
        ++st.repeated_second;
        add(as_sys - info.second.offset, info.second.offset, DstNote::kRepeated, true);
      }
      break;
  }
}

// Sorts by instant and merges occurrences at the same instant (shifted wall
// times collapse; a real match there makes the occurrence unshifted).
ExpectedList SortAndMerge(ExpectedList raw, OracleStats& st) {
  std::sort(raw.begin(), raw.end(), [](const Expected& a, const Expected& b) {
    return a.utc != b.utc ? a.utc < b.utc : a.first_nominal < b.first_nominal;
  });
  ExpectedList out;
  for (const Expected& x : raw) {
    if (out.empty() || out.back().utc != x.utc) {
      out.push_back(x);
      continue;
    }
    Expected& m = out.back();
    ++st.collapsed;
    if (x.note == DstNote::kNone || m.note == DstNote::kNone) ++st.real_wins;
    if (x.note == DstNote::kNone) m.note = DstNote::kNone;
    m.first_nominal = std::min(m.first_nominal, x.first_nominal);
    m.last_nominal = std::max(m.last_nominal, x.last_nominal);
    m.nominal_count += x.nominal_count;
    m.ambiguous |= x.ambiguous;
  }
  return out;
}

// Every matching wall time in [start, end), minute by minute (second by
// second for 6-field expressions).
ExpectedList RunOracle(const Expr& e, const date::time_zone* zone, const ScheduleOptions& o,
                       LocalSec start, LocalSec end, OracleStats& st) {
  ExpectedList out;
  WallResolver resolver(zone);
  const DstRepeatPolicy repeat = EffectiveRepeat(e, o);
  for (date::local_days day = date::floor<date::days>(start); day < end; day += date::days{1}) {
    const date::year_month_day ymd{day};
    if (!DayMatches(e, ymd)) continue;
    for (int h = 0; h < 24; ++h) {
      if (!e.hour.values.test(h)) continue;
      for (int m = 0; m < 60; ++m) {
        if (!e.min.values.test(m)) continue;
        for (int s = 0; s < 60; ++s) {
          if (!e.sec.values.test(s)) continue;
          const LocalSec wall = LocalSec{day} + hours{h} + minutes{m} + seconds{s};
          if (wall < start || wall >= end) continue;
          MapWallTime(resolver, wall, o, repeat, out, st);
        }
      }
    }
  }
  return SortAndMerge(std::move(out), st);
}

// ---------------------------------------------------------------------------
// The generator: an expression string and the sets it means.

class Generator {
 public:
  Generator(std::mt19937_64& rng, std::array<long, kCatCount>& cats) : rng_(rng), cats_(cats) {}

  int Uniform(int a, int b) { return std::uniform_int_distribution<int>(a, b)(rng_); }
  bool Chance(double p) { return std::bernoulli_distribution(p)(rng_); }
  template <typename T>
  const T& Pick(const std::vector<T>& v) {
    return v[static_cast<size_t>(Uniform(0, static_cast<int>(v.size()) - 1))];
  }

  Expr Generate() {
    if (Chance(0.06)) return Macro();
    Expr e;
    e.has_seconds = Chance(0.18);
    cats_[e.has_seconds ? kSixFields : kFiveFields]++;
    if (e.has_seconds) {
      e.sec = Field(FieldKind::kSec, 0.15);
    } else {
      e.sec = Only(0);
    }
    e.min = Field(FieldKind::kMin, 0.12);
    e.hour = Field(FieldKind::kHour, 0.3);
    e.dom = Field(FieldKind::kDom, 0.5);
    e.mon = Field(FieldKind::kMon, 0.6);
    e.dow = Field(FieldKind::kDow, 0.55);
    if (!e.dom.star && !e.dow.star) cats_[kDomAndDowRestricted]++;
    if (!e.dom.star && e.dow.star) cats_[kDomOnlyRestricted]++;
    if (e.dom.star && !e.dow.star) cats_[kDowOnlyRestricted]++;
    if (e.hour.star || !e.hour.plain_numbers) {
      cats_[kHourNotFixed]++;
    } else {
      cats_[e.hour.text.find(',') == std::string::npos ? kHourFixedSingle : kHourFixedList]++;
    }
    std::ostringstream os;
    if (e.has_seconds) os << e.sec.text << ' ';
    os << e.min.text << ' ' << e.hour.text << ' ' << e.dom.text << ' ' << e.mon.text << ' '
       << e.dow.text;
    e.text = os.str();
    return e;
  }

 private:
  Expr Macro() {
    static const std::array<std::pair<const char*, Cat>, 7> kMacros = {{
        {"@yearly", kMacroYearly},
        {"@annually", kMacroAnnually},
        {"@monthly", kMacroMonthly},
        {"@weekly", kMacroWeekly},
        {"@daily", kMacroDaily},
        {"@midnight", kMacroMidnight},
        {"@hourly", kMacroHourly},
    }};
    const auto& [text, cat] = kMacros[macro_index_++ % kMacros.size()];
    cats_[cat]++;
    Expr e;
    e.text = text;
    e.sec = Only(0);
    e.min = Only(0);
    e.hour = Only(0);
    e.dom = AllOf(1, 31);
    e.mon = AllOf(1, 12);
    e.dow = AllOf(0, 7);
    switch (cat) {
      case kMacroYearly:
      case kMacroAnnually:
        e.dom = Only(1);
        e.mon = Only(1);
        break;
      case kMacroMonthly:
        e.dom = Only(1);
        break;
      case kMacroWeekly:
        e.dow = Only(0);
        break;
      case kMacroHourly:
        e.hour = AllOf(0, 23);
        break;
      default:
        break;
    }
    return e;
  }

  static void Bounds(FieldKind k, int& lo, int& hi, int& max_step) {
    switch (k) {
      case FieldKind::kSec: lo = 0; hi = 59; max_step = 30; return;
      case FieldKind::kMin: lo = 0; hi = 59; max_step = 30; return;
      case FieldKind::kHour: lo = 0; hi = 23; max_step = 12; return;
      case FieldKind::kDom: lo = 1; hi = 31; max_step = 15; return;
      case FieldKind::kMon: lo = 1; hi = 12; max_step = 6; return;
      case FieldKind::kDow: lo = 0; hi = 7; max_step = 3; return;
    }
  }

  // A value biased towards the interesting ones (DST hours, Sundays).
  int Value(FieldKind k) {
    int lo, hi, step;
    Bounds(k, lo, hi, step);
    switch (k) {
      case FieldKind::kSec:
        if (Chance(0.5)) return Pick(std::vector<int>{0, 1, 30, 59});
        break;
      case FieldKind::kMin:
        if (Chance(0.6)) return Pick(std::vector<int>{0, 15, 29, 30, 45, 59});
        break;
      case FieldKind::kHour:
        if (Chance(0.7)) return Pick(std::vector<int>{0, 1, 1, 2, 2, 3, 23});
        break;
      case FieldKind::kDom:
        if (Chance(0.3)) return Pick(std::vector<int>{1, 8, 28, 29, 30, 31});
        break;
      case FieldKind::kDow:
        if (Chance(0.35)) return Pick(std::vector<int>{0, 7});
        break;
      case FieldKind::kMon:
        if (Chance(0.4)) return Pick(std::vector<int>{2, 3, 4, 10, 11});
        break;
    }
    return Uniform(lo, hi);
  }

  std::string Name(FieldKind k, int v) {
    static const char* kMonths[] = {"", "JAN", "FEB", "MAR", "APR", "MAY", "JUN",
                                    "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"};
    static const char* kDays[] = {"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"};
    std::string s = (k == FieldKind::kMon) ? kMonths[v] : kDays[v];
    int style = Uniform(0, 2);
    if (style == 1) {
      for (char& c : s) c = static_cast<char>(c - 'A' + 'a');
    } else if (style == 2) {
      for (size_t i = 1; i < s.size(); ++i) s[i] = static_cast<char>(s[i] - 'A' + 'a');
    }
    if (style != 0) cats_[kNameNotUpper]++;
    return s;
  }

  bool CanName(FieldKind k, int v) {
    return (k == FieldKind::kMon) || (k == FieldKind::kDow && v <= 6);
  }

  std::string Element(FieldKind k, FieldSpec& f, bool& special) {
    int lo, hi, max_step;
    Bounds(k, lo, hi, max_step);
    if (k == FieldKind::kDom && Chance(0.25)) {
      special = true;
      f.plain_numbers = false;
      switch (Uniform(0, 3)) {
        case 0:
          cats_[kDomL]++;
          f.last = true;
          return "L";
        case 1: {
          cats_[kDomLMinus]++;
          int n = Uniform(1, 10);
          f.last_minus.push_back(n);
          return "L-" + std::to_string(n);
        }
        case 2: {
          cats_[kDomNW]++;
          int n = Chance(0.5) ? Pick(std::vector<int>{1, 2, 15, 28, 29, 30, 31}) : Uniform(1, 31);
          f.nearest.push_back(n);
          return std::to_string(n) + "W";
        }
        default:
          cats_[kDomLW]++;
          f.last_weekday = true;
          return "LW";
      }
    }
    if (k == FieldKind::kDow && Chance(0.25)) {
      special = true;
      f.plain_numbers = false;
      int d = Chance(0.4) ? 0 : Uniform(0, 6);
      if (d == 0 && Chance(0.2)) d = 7;
      if (Chance(0.6)) {
        cats_[kDowHash]++;
        int kth = Chance(0.3) ? 5 : Uniform(1, 4);
        f.nth.emplace_back(d % 7, kth);
        std::string name = std::to_string(d);
        if (d <= 6 && Chance(0.4)) {
          cats_[kDowHashName]++;
          name = Name(k, d);
        }
        return name + "#" + std::to_string(kth);
      }
      cats_[kDowL]++;
      f.last_dow.push_back(d % 7);
      return std::to_string(d) + "L";
    }
    const int r = Uniform(0, 99);
    if (r < 45) {  // single value
      cats_[kSingle]++;
      int v = Value(k);
      f.values.set(v);
      if (k == FieldKind::kDow && v == 7) cats_[kSunday7]++;
      if (CanName(k, v) && Chance(0.4)) {
        f.plain_numbers = false;
        cats_[k == FieldKind::kMon ? kMonthName : kDowName]++;
        return Name(k, v);
      }
      return std::to_string(v);
    }
    f.plain_numbers = false;
    if (r < 70) {  // range a-b
      cats_[kRange]++;
      int a = Value(k);
      if (k == FieldKind::kDow && a == 7) a = Uniform(0, 6);
      int b = Uniform(a, std::min(hi, a + (k == FieldKind::kMin || k == FieldKind::kSec ? 20 : 6)));
      for (int v = a; v <= b; ++v) f.values.set(v);
      if (k == FieldKind::kDow && b == 7) cats_[kSunday7Range]++;
      if (CanName(k, a) && CanName(k, b) && Chance(0.4)) {
        cats_[k == FieldKind::kMon ? kMonthNameRange : kDowNameRange]++;
        return Name(k, a) + "-" + Name(k, b);
      }
      return std::to_string(a) + "-" + std::to_string(b);
    }
    if (r < 80) {  // */n
      cats_[kStepStar]++;
      int n = Uniform(2, max_step);
      int top = (k == FieldKind::kDow) ? 6 : hi;
      for (int v = lo; v <= top; v += n) f.values.set(v);
      return "*/" + std::to_string(n);
    }
    if (r < 90) {  // a-b/n
      cats_[kStepRange]++;
      int a = Uniform(lo, hi - 1);
      int b = Uniform(a + 1, hi);
      int n = Uniform(1, max_step);
      for (int v = a; v <= b; v += n) f.values.set(v);
      if (k == FieldKind::kDow && b == 7) cats_[kSunday7Range]++;
      return std::to_string(a) + "-" + std::to_string(b) + "/" + std::to_string(n);
    }
    // a/n = a-max/n. For weekdays, "max" might be read as 6 or 7; draw only
    // values for which both readings agree.
    cats_[kStepFrom]++;
    int a, n;
    do {
      a = Uniform(lo, k == FieldKind::kDow ? 6 : hi);
      n = Uniform(1, max_step);
    } while (k == FieldKind::kDow && (7 - a) % n == 0);
    int top = (k == FieldKind::kDow) ? 6 : hi;
    for (int v = a; v <= top; v += n) f.values.set(v);
    return std::to_string(a) + "/" + std::to_string(n);
  }

  FieldSpec Field(FieldKind k, double p_star) {
    int lo, hi, step;
    Bounds(k, lo, hi, step);
    if (Chance(p_star)) {
      cats_[kStar]++;
      return AllOf(lo, hi);
    }
    FieldSpec f;
    int count = Chance(0.6) ? 1 : (Chance(0.75) ? 2 : 3);
    bool any_special = false;
    for (int i = 0; i < count; ++i) {
      if (i) f.text += ',';
      bool special = false;
      f.text += Element(k, f, special);
      any_special |= special;
    }
    if (count > 1) cats_[kList]++;
    if (count > 1 && any_special) cats_[kSpecialInList]++;
    return f;
  }

  std::mt19937_64& rng_;
  std::array<long, kCatCount>& cats_;
  size_t macro_index_ = 0;
};

// ---------------------------------------------------------------------------
// Helpers for messages and zones.

std::string Utc(SysSec t) { return date::format("%FT%TZ", t); }
std::string Wall(LocalSec t) { return date::format("%F %T", t); }
const char* NoteName(DstNote n) {
  switch (n) {
    case DstNote::kNone: return "none";
    case DstNote::kShifted: return "shifted";
    case DstNote::kRepeated: return "repeated";
  }
  return "?";
}

std::string OptionsText(const ScheduleOptions& o) {
  std::string s = o.dst_gap == DstGapPolicy::kShift ? "gap=shift" : "gap=skip";
  s += " repeat=";
  if (!o.dst_repeat) {
    s += "default";
  } else {
    s += *o.dst_repeat == DstRepeatPolicy::kFirst  ? "first"
         : *o.dst_repeat == DstRepeatPolicy::kLast ? "last"
                                                    : "both";
  }
  s += " date_offset_days=" + std::to_string(o.date_offset_days);
  return s;
}

std::string Describe(SysSec utc, DstNote note, seconds offset, LocalSec local) {
  std::ostringstream os;
  os << "{utc=" << Utc(utc) << " local=" << Wall(local) << " offset=" << offset.count()
     << "s dst=" << NoteName(note) << "}";
  return os.str();
}

std::string Describe(const Occurrence& o) {
  std::ostringstream os;
  os << "{utc=" << Utc(o.utc) << " local=" << Wall(LocalSec{o.local().time_since_epoch()})
     << " offset=" << o.utc_offset.count() << "s dst=" << NoteName(o.dst)
     << " nominal=" << Wall(LocalSec{o.nominal.time_since_epoch()}) << "}";
  return os.str();
}

// Instants where the UTC offset changes, in [from, to).
std::vector<SysSec> Transitions(const date::time_zone* zone, SysSec from, SysSec to) {
  std::vector<SysSec> out;
  date::sys_info info = zone->get_info(from);
  while (info.end < to) {
    date::sys_info next = zone->get_info(info.end);
    if (next.offset != info.offset) out.push_back(info.end);
    info = next;
  }
  return out;
}

SysSec ApproxUtc(const date::time_zone* zone, LocalSec wall) {
  const date::local_info info = zone->get_info(wall);
  return SysSec{wall.time_since_epoch()} - info.first.offset;
}

LocalSec Days(int y, unsigned m, unsigned d) {
  return LocalSec{date::local_days{date::year{y} / date::month{m} / date::day{d}}};
}

struct Window {
  LocalSec start, end;  // wall time enumerated by the oracle
  seconds margin;       // compared: [utc(start) + margin, utc(end) - margin]
  std::string label;
};

struct ZoneInfo {
  std::string name;
  const date::time_zone* zone;
  std::vector<SysSec> transitions;
  int weight;
  size_t next_transition = 0;
};

long EnvLong(const char* name, long fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  return std::strtol(v, nullptr, 10);
}

uint64_t Seed() {
  const char* v = std::getenv("CRONLEDGER_ORACLE_SEED");
  if (v == nullptr || *v == '\0') return 20260308;
  return std::strtoull(v, nullptr, 0);
}

// ---------------------------------------------------------------------------
// The comparison of one window.

struct CompareStats {
  long windows = 0;
  long compared = 0;
  long compared_shifted = 0;
  long compared_repeated = 0;
  long compared_ambiguous_first = 0;
  long failures = 0;
};

constexpr long kMaxReportedFailures = 25;

void CompareWindow(const Schedule& s, const Expr& e, const ZoneInfo& z,
                   const ScheduleOptions& o, const Window& w, OracleStats& ost,
                   CompareStats& cst) {
  ++cst.windows;
  const ExpectedList expected = RunOracle(e, z.zone, o, w.start, w.end, ost);
  const SysSec lo = ApproxUtc(z.zone, w.start) + w.margin;
  const SysSec hi = ApproxUtc(z.zone, w.end) - w.margin;
  auto it = std::lower_bound(expected.begin(), expected.end(), lo,
                             [](const Expected& x, SysSec t) { return x.utc < t; });
  SysSec after = lo - seconds{1};
  auto ctx = [&] {
    return "expr=\"" + e.text + "\" zone=" + z.name + " " + OptionsText(o) +
           " window=" + w.label;
  };
  auto fail = [&](const std::string& what) {
    ++cst.failures;
    if (cst.failures <= kMaxReportedFailures) {
      ADD_FAILURE() << ctx() << "\n  Next(after=" << Utc(after) << "): " << what;
    }
  };
  std::vector<Occurrence> chain;
  for (int guard = 0; guard < 200000; ++guard) {
    const std::optional<Occurrence> got = s.Next(after);
    const bool got_in = got && got->utc <= hi;
    const bool exp_in = it != expected.end() && it->utc <= hi;
    if (!got_in && !exp_in) break;
    if (got && got->utc <= after) {
      fail("not strictly after: got " + Describe(*got));
      return;
    }
    if (!exp_in) {
      fail("unexpected occurrence " + Describe(*got) + "; oracle has none until " + Utc(hi));
      return;
    }
    const Expected& x = *it;
    auto want = [&] { return Describe(x.utc, x.note, x.offset, x.local); };
    if (!got_in) {
      fail("expected " + want() + " got " + (got ? Describe(*got) : std::string("nullopt")));
      return;
    }
    if (got->utc != x.utc || got->dst != x.note || got->utc_offset != x.offset) {
      fail("expected " + want() + " got " + Describe(*got));
      return;
    }
    const LocalSec got_local{got->local().time_since_epoch()};
    const LocalSec got_nominal{got->nominal.time_since_epoch()};
    if (got_local != x.local) {
      fail("local() != utc + offset: expected " + want() + " got " + Describe(*got));
      return;
    }
    if (x.note == DstNote::kShifted) {
      if (got_nominal < x.first_nominal || got_nominal > x.last_nominal ||
          z.zone->get_info(got_nominal).result != date::local_info::nonexistent) {
        fail("nominal is not one of the shifted wall times (" + Wall(x.first_nominal) + " .. " +
             Wall(x.last_nominal) + "): got " + Describe(*got));
        return;
      }
    } else if (got_nominal != x.local) {
      fail("nominal != local for an unshifted occurrence: expected " + want() + " got " +
           Describe(*got));
      return;
    }
    const date::year_month_day want_day{date::floor<date::days>(x.local) +
                                        date::days{o.date_offset_days}};
    const std::chrono::year_month_day got_day = s.BusinessDate(*got);
    if (static_cast<int>(got_day.year()) != static_cast<int>(want_day.year()) ||
        static_cast<unsigned>(got_day.month()) != static_cast<unsigned>(want_day.month()) ||
        static_cast<unsigned>(got_day.day()) != static_cast<unsigned>(want_day.day())) {
      fail("BusinessDate: expected " + date::format("%F", want_day) + " for " + Describe(*got));
      return;
    }
    ++cst.compared;
    if (x.note == DstNote::kShifted) ++cst.compared_shifted;
    if (x.note == DstNote::kRepeated) ++cst.compared_repeated;
    if (x.note == DstNote::kNone && x.ambiguous) ++cst.compared_ambiguous_first;
    chain.push_back(*got);
    after = got->utc;
    ++it;
  }
  // Between() must agree with the chained Next() calls.
  const std::vector<Occurrence> between = s.Between(lo - seconds{1}, hi);
  if (between != chain) {
    ++cst.failures;
    if (cst.failures <= kMaxReportedFailures) {
      std::string first_diff;
      for (size_t i = 0; i < std::max(between.size(), chain.size()); ++i) {
        if (i >= between.size() || i >= chain.size() || !(between[i] == chain[i])) {
          first_diff = "index " + std::to_string(i) + ": Between " +
                       (i < between.size() ? Describe(between[i]) : "<end>") + " vs Next " +
                       (i < chain.size() ? Describe(chain[i]) : "<end>");
          break;
        }
      }
      ADD_FAILURE() << ctx() << "\n  Between(" << Utc(lo - seconds{1}) << ", " << Utc(hi)
                    << ") has " << between.size() << " occurrences, chained Next() "
                    << chain.size() << "; first difference at " << first_diff;
    }
  }
}

// ---------------------------------------------------------------------------

std::vector<ZoneInfo> LoadZones() {
  const SysSec y2026{date::sys_days{date::year{2026} / 1 / 1}};
  const SysSec y2027{date::sys_days{date::year{2027} / 1 / 1}};
  std::vector<ZoneInfo> zones;
  for (auto [name, weight] : std::vector<std::pair<const char*, int>>{
           {"UTC", 1},
           {"Asia/Seoul", 1},
           {"America/New_York", 3},
           {"Europe/London", 3},
           {"Australia/Lord_Howe", 3},
           {"America/Sao_Paulo", 2}}) {
    ZoneInfo z;
    z.name = name;
    z.zone = date::locate_zone(name);
    z.weight = weight;
    z.transitions = Transitions(z.zone, y2026, y2027);
    if (z.name == "America/Sao_Paulo") {
      // DST was abolished in 2019: 2026 has none, so test its last ones.
      z.transitions = Transitions(z.zone, SysSec{date::sys_days{date::year{2018} / 1 / 1}},
                                  SysSec{date::sys_days{date::year{2020} / 1 / 1}});
    }
    zones.push_back(z);
  }
  return zones;
}

TEST(Oracle, TransitionsFoundForEachZone) {
  std::vector<ZoneInfo> zones = LoadZones();
  std::map<std::string, size_t> counts;
  for (const ZoneInfo& z : zones) counts[z.name] = z.transitions.size();
  EXPECT_EQ(counts["UTC"], 0u);
  EXPECT_EQ(counts["Asia/Seoul"], 0u);
  EXPECT_EQ(counts["America/New_York"], 2u);
  EXPECT_EQ(counts["Europe/London"], 2u);
  EXPECT_EQ(counts["Australia/Lord_Howe"], 2u);
  // 2018-02-18 fall back, 2018-11-04 spring forward, 2019-02-17 fall back.
  EXPECT_EQ(counts["America/Sao_Paulo"], 3u);
  const date::time_zone* sp = date::locate_zone("America/Sao_Paulo");
  EXPECT_TRUE(Transitions(sp, SysSec{date::sys_days{date::year{2020} / 1 / 1}},
                          SysSec{date::sys_days{date::year{2027} / 1 / 1}})
                  .empty());
}

// The oracle checked against hand-computed facts, so that a mismatch with the
// engine points at the engine.
TEST(Oracle, OracleSelfCheck) {
  OracleStats st;
  ScheduleOptions shift;
  const date::time_zone* ny = date::locate_zone("America/New_York");
  auto daily = [](int h, int m) {
    Expr e;
    e.sec = Only(0);
    e.min = Only(m);
    e.hour = Only(h);
    e.dom = AllOf(1, 31);
    e.mon = AllOf(1, 12);
    e.dow = AllOf(0, 7);
    return e;
  };
  // 02:30 does not exist in New York on 2026-03-08: shifted to 07:00Z.
  {
    ExpectedList m = RunOracle(daily(2, 30), ny, shift, Days(2026, 3, 8), Days(2026, 3, 9), st);
    ASSERT_EQ(m.size(), 1u);
    EXPECT_EQ(Utc(m.front().utc), "2026-03-08T07:00:00Z");
    EXPECT_EQ(m.front().note, DstNote::kShifted);
    EXPECT_EQ(Wall(m.front().local), "2026-03-08 03:00:00");
    ScheduleOptions skip;
    skip.dst_gap = DstGapPolicy::kSkip;
    EXPECT_TRUE(RunOracle(daily(2, 30), ny, skip, Days(2026, 3, 8), Days(2026, 3, 9), st).empty());
  }
  // 2-3 every 30 minutes: 02:00 and 02:30 collapse with the real 03:00.
  {
    Expr e = daily(2, 0);
    e.hour.values.set(3);
    e.hour.plain_numbers = false;
    e.min.values.set(30);
    ExpectedList m = RunOracle(e, ny, shift, Days(2026, 3, 8), Days(2026, 3, 9), st);
    ASSERT_EQ(m.size(), 2u);
    EXPECT_EQ(Utc(m.front().utc), "2026-03-08T07:00:00Z");
    EXPECT_EQ(m.front().note, DstNote::kNone);
    EXPECT_EQ(m.front().nominal_count, 3u);
  }
  // 01:30 exists twice on 2026-11-01: default for a fixed hour is the first.
  {
    ExpectedList m = RunOracle(daily(1, 30), ny, shift, Days(2026, 11, 1), Days(2026, 11, 2), st);
    ASSERT_EQ(m.size(), 1u);
    EXPECT_EQ(Utc(m.front().utc), "2026-11-01T05:30:00Z");
    ScheduleOptions last;
    last.dst_repeat = DstRepeatPolicy::kLast;
    m = RunOracle(daily(1, 30), ny, last, Days(2026, 11, 1), Days(2026, 11, 2), st);
    ASSERT_EQ(m.size(), 1u);
    EXPECT_EQ(Utc(m.front().utc), "2026-11-01T06:30:00Z");
    EXPECT_EQ(m.front().note, DstNote::kRepeated);
    EXPECT_EQ(m.front().offset, seconds{-5 * 3600});
    Expr star = daily(1, 30);
    star.hour = AllOf(0, 23);
    m = RunOracle(star, ny, shift, Days(2026, 11, 1), Days(2026, 11, 2), st);
    EXPECT_EQ(m.size(), 25u);
  }
  // Lord Howe: 02:00-02:29 do not exist on 2026-10-04 (+10:30 -> +11).
  {
    const date::time_zone* lh = date::locate_zone("Australia/Lord_Howe");
    Expr e = daily(2, 0);
    e.min = AllOf(0, 59);
    ExpectedList m = RunOracle(e, lh, shift, Days(2026, 10, 4), Days(2026, 10, 5), st);
    ASSERT_EQ(m.size(), 30u);  // the gap collapsed into 02:30, then 02:31..02:59
    EXPECT_EQ(m.front().note, DstNote::kNone);  // 02:30 is real
    EXPECT_EQ(Wall(m.front().local), "2026-10-04 02:30:00");
    EXPECT_EQ(m.front().nominal_count, 31u);
  }
  // Day-of-month extensions, in 2026.
  auto dom_days = [](const FieldSpec& dom, int y, unsigned mo) {
    Expr e;
    e.mon = AllOf(1, 12);
    e.dom = dom;
    e.dow = AllOf(0, 7);
    std::vector<unsigned> out;
    for (unsigned d = 1; d <= LastDay(date::year{y}, date::month{mo}); ++d) {
      if (DayMatches(e, date::year{y} / date::month{mo} / date::day{d})) out.push_back(d);
    }
    return out;
  };
  FieldSpec w1;
  w1.text = "1W";
  w1.nearest = {1};
  EXPECT_EQ(dom_days(w1, 2026, 8), std::vector<unsigned>{3});   // Aug 1 is a Saturday
  FieldSpec w31;
  w31.text = "31W";
  w31.nearest = {31};
  EXPECT_EQ(dom_days(w31, 2026, 5), std::vector<unsigned>{29});  // May 31 is a Sunday
  EXPECT_EQ(dom_days(w31, 2026, 4), std::vector<unsigned>{});    // no April 31
  FieldSpec w15;
  w15.nearest = {15};
  EXPECT_EQ(dom_days(w15, 2026, 2), std::vector<unsigned>{16});  // Feb 15 is a Sunday
  FieldSpec w14;
  w14.nearest = {14};
  EXPECT_EQ(dom_days(w14, 2026, 3), std::vector<unsigned>{13});  // Mar 14 is a Saturday
  FieldSpec lw;
  lw.last_weekday = true;
  EXPECT_EQ(dom_days(lw, 2026, 1), std::vector<unsigned>{30});   // Jan 31 is a Saturday
  FieldSpec lm;
  lm.last_minus = {3};
  EXPECT_EQ(dom_days(lm, 2026, 2), std::vector<unsigned>{25});
  // Day-of-week: third Friday, last Sunday, and the OR rule.
  Expr e;
  e.mon = AllOf(1, 12);
  e.dom = Only(13);
  e.dow.nth = {{5, 3}};
  e.dow.last_dow = {0};
  std::vector<unsigned> got;
  for (unsigned d = 1; d <= 31; ++d) {
    if (DayMatches(e, date::year{2026} / 3 / date::day{d})) got.push_back(d);
  }
  EXPECT_EQ(got, (std::vector<unsigned>{13, 20, 29}));
}

TEST(Oracle, NextMatchesBruteForce) {
  const uint64_t seed = Seed();
  const long count = EnvLong("CRONLEDGER_ORACLE_COUNT", 360);
  std::printf("[ Oracle   ] seed=%llu expressions=%ld (override with CRONLEDGER_ORACLE_SEED, "
              "CRONLEDGER_ORACLE_COUNT)\n",
              static_cast<unsigned long long>(seed), count);
  SCOPED_TRACE("CRONLEDGER_ORACLE_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  std::array<long, kCatCount> cats{};
  Generator gen(rng, cats);
  std::vector<ZoneInfo> zones = LoadZones();
  std::vector<size_t> zone_bag;
  for (size_t i = 0; i < zones.size(); ++i) {
    for (int k = 0; k < zones[i].weight; ++k) zone_bag.push_back(i);
  }

  OracleStats ost;
  CompareStats cst;
  long created = 0, rejected_never = 0, transition_windows = 0;
  std::map<std::string, long> transition_days_covered;

  for (long i = 0; i < count; ++i) {
    const Expr e = gen.Generate();
    ZoneInfo& z = zones[gen.Pick(zone_bag)];
    ScheduleOptions o;
    o.dst_gap = gen.Chance(0.7) ? DstGapPolicy::kShift : DstGapPolicy::kSkip;
    switch (gen.Uniform(0, 5)) {
      case 0: o.dst_repeat = DstRepeatPolicy::kFirst; break;
      case 1: o.dst_repeat = DstRepeatPolicy::kLast; break;
      case 2: o.dst_repeat = DstRepeatPolicy::kBoth; break;
      default: break;
    }
    o.date_offset_days = gen.Pick(std::vector<int>{-1, 0, 0, 0, 1});

    // Days matching in 28 years (the day pattern repeats within 1901-2099).
    std::vector<date::local_days> matching_2026;
    for (date::local_days d{date::year{2026} / 1 / 1}; d < date::local_days{date::year{2027} / 1 / 1};
         d += date::days{1}) {
      if (DayMatches(e, date::year_month_day{d})) matching_2026.push_back(d);
    }
    bool ever = !matching_2026.empty();
    for (date::local_days d{date::year{2024} / 1 / 1};
         !ever && d < date::local_days{date::year{2052} / 1 / 1}; d += date::days{1}) {
      ever = DayMatches(e, date::year_month_day{d});
    }

    Result<Schedule> created_or = Schedule::Create(e.text, z.name, o);
    if (!created_or.ok()) {
      if (ever) {
        if (++cst.failures > kMaxReportedFailures) continue;
        ADD_FAILURE() << "Create rejected a satisfiable expression: expr=\"" << e.text
                      << "\" zone=" << z.name << ": " << created_or.status().ToString();
      } else {
        ++rejected_never;
      }
      continue;
    }
    ++created;
    const Schedule& s = created_or.value();
    if (!ever) {
      if (++cst.failures > kMaxReportedFailures) continue;
      ADD_FAILURE() << "Create accepted an expression that never fires: expr=\"" << e.text
                    << "\"";
      continue;
    }
    EXPECT_EQ(s.has_seconds_field(), e.has_seconds) << e.text;
    EXPECT_EQ(s.EffectiveDstRepeat(), EffectiveRepeat(e, o))
        << "expr=\"" << e.text << "\" " << OptionsText(o);

    std::vector<Window> windows;
    const bool secs = e.has_seconds;
    // Windows: 3 local days (day-1 .. day+1), compared with a 3h margin; for
    // 6-field expressions 8 hours compared with a 2h margin.
    auto day_window = [&](date::local_days day, const std::string& label) {
      windows.push_back({LocalSec{day - date::days{1}}, LocalSec{day + date::days{2}}, hours{3},
                         label + " " + date::format("%F", day) + " +-1 day"});
    };
    auto hour_window = [&](LocalSec center, const std::string& label) {
      windows.push_back({center - hours{4}, center + hours{4}, hours{2},
                         label + " " + Wall(center) + " +-4h"});
    };
    // Two transition windows (cycling so each transition is covered).
    for (int t = 0; t < 2 && !z.transitions.empty(); ++t) {
      const SysSec tr = z.transitions[z.next_transition++ % z.transitions.size()];
      const seconds before = z.zone->get_info(tr - seconds{1}).offset;
      const seconds after_off = z.zone->get_info(tr).offset;
      const LocalSec wall_before{tr.time_since_epoch() + before};
      const LocalSec wall_low{tr.time_since_epoch() + std::min(before, after_off)};
      ++transition_windows;
      transition_days_covered[z.name + " " + Utc(tr)]++;
      if (secs) {
        hour_window(wall_before, "transition");
      } else {
        day_window(date::floor<date::days>(wall_low), "transition");
      }
    }
    // A sample day (one on which the expression matches, when possible).
    {
      date::local_days day =
          (!matching_2026.empty() && gen.Chance(0.8))
              ? gen.Pick(matching_2026)
              : date::local_days{date::year{2026} / 1 / 1} + date::days{gen.Uniform(0, 364)};
      if (secs) {
        hour_window(LocalSec{day} + hours{gen.Uniform(0, 23)}, "sample");
      } else {
        day_window(day, "sample");
      }
    }
    // A month end (L, W, #5, dL), for 5-field expressions and zones without
    // transitions.
    if (!secs || z.transitions.empty()) {
      const unsigned mo = static_cast<unsigned>(gen.Uniform(1, 12));
      const date::year y{gen.Chance(0.5) ? 2026 : 2028};
      const date::local_days last{y / date::month{mo} / date::last};
      if (secs) {
        hour_window(LocalSec{last} + hours{gen.Uniform(0, 23)}, "month-end");
      } else {
        day_window(last, "month-end");
      }
    }
    for (const Window& w : windows) CompareWindow(s, e, z, o, w, ost, cst);
  }

  std::printf(
      "[ Oracle   ] created=%ld rejected(never fires)=%ld windows=%ld transition-windows=%ld "
      "compared=%ld (shifted=%ld repeated=%ld ambiguous-first=%ld) wall-matches=%ld "
      "gap-shifted=%ld gap-skipped=%ld collapsed=%ld real-wins=%ld failures=%ld\n",
      created, rejected_never, cst.windows, transition_windows, cst.compared,
      cst.compared_shifted, cst.compared_repeated, cst.compared_ambiguous_first,
      ost.wall_matches, ost.shifted, ost.skipped_in_gap, ost.collapsed, ost.real_wins,
      cst.failures);

  for (int c = 0; c < kCatCount; ++c) {
    EXPECT_GT(cats[c], 0) << "syntax element never drawn: " << kCatNames[c];
  }
  EXPECT_LT(rejected_never * 20, count) << "too many expressions that never fire";
  for (const ZoneInfo& z : zones) {
    for (SysSec tr : z.transitions) {
      EXPECT_GT(transition_days_covered[z.name + " " + Utc(tr)], 0)
          << "transition not covered: " << z.name << " " << Utc(tr);
    }
  }
  // The DST paths were really exercised.
  EXPECT_GT(cst.compared_shifted, 0);
  EXPECT_GT(cst.compared_repeated, 0);
  EXPECT_GT(cst.compared_ambiguous_first, 0);
  EXPECT_GT(ost.skipped_in_gap, 0);
  EXPECT_GT(ost.collapsed, 0);
  EXPECT_GT(ost.real_wins, 0);
}

}  // namespace
}  // namespace cronledger
