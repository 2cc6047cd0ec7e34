#include "schedule/cron_parser.h"

#include <array>
#include <cctype>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace cronledger::schedule {
namespace {

enum class Field { kSecond, kMinute, kHour, kDayOfMonth, kMonth, kDayOfWeek };

struct FieldSpec {
  const char* name;
  int min;
  int max;
};

constexpr FieldSpec Spec(Field f) {
  switch (f) {
    case Field::kSecond: return {"second", 0, 59};
    case Field::kMinute: return {"minute", 0, 59};
    case Field::kHour: return {"hour", 0, 23};
    case Field::kDayOfMonth: return {"day-of-month", 1, 31};
    case Field::kMonth: return {"month", 1, 12};
    case Field::kDayOfWeek: return {"day-of-week", 0, 7};
  }
  return {"?", 0, 0};
}

constexpr std::array<const char*, 12> kMonthNames = {
    "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"};
constexpr std::array<const char*, 7> kWeekdayNames = {"SUN", "MON", "TUE", "WED",
                                                      "THU", "FRI", "SAT"};

struct Macro {
  const char* name;
  const char* expansion;
};
constexpr std::array<Macro, 7> kMacros = {{
    {"@yearly", "0 0 1 1 *"},
    {"@annually", "0 0 1 1 *"},
    {"@monthly", "0 0 1 * *"},
    {"@weekly", "0 0 * * 0"},
    {"@daily", "0 0 * * *"},
    {"@midnight", "0 0 * * *"},
    {"@hourly", "0 * * * *"},
}};

// A piece of the expression with the 1-based column where it starts.
struct Token {
  std::string_view text;
  std::size_t column;

  Token Sub(std::size_t pos, std::size_t len = std::string_view::npos) const {
    return {text.substr(pos, len), column + pos};
  }
};

bool IsDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::toupper(static_cast<unsigned char>(a[i])) !=
        std::toupper(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

uint64_t RangeBits(int lo, int hi, int step) {
  uint64_t bits = 0;
  for (int v = lo; v <= hi; v += step) bits |= uint64_t{1} << v;
  return bits;
}

// Parses one field of the expression into `out`.
class FieldParser {
 public:
  FieldParser(Field field, int number, CronFields* out)
      : field_(field), spec_(Spec(field)), number_(number), out_(out) {}

  Status Parse(Token field_text) {
    if (field_text.text == "?") {
      return Error(field_text, "\"?\" is not supported; use \"*\"");
    }
    if (field_text.text.front() == '*') {
      if (field_ == Field::kDayOfMonth) out_->days_restricted = false;
      if (field_ == Field::kDayOfWeek) out_->weekdays_restricted = false;
    } else {
      if (field_ == Field::kDayOfMonth) out_->days_restricted = true;
      if (field_ == Field::kDayOfWeek) out_->weekdays_restricted = true;
    }
    bool hour_fixed = true;
    std::size_t start = 0;
    for (;;) {
      const std::size_t comma = field_text.text.find(',', start);
      const std::size_t len =
          comma == std::string_view::npos ? std::string_view::npos : comma - start;
      Token item = field_text.Sub(start, len);
      if (item.text.empty()) return Error(item, "empty list element");
      if (!IsDigits(item.text)) hour_fixed = false;
      if (Status s = ParseItem(item); !s.ok()) return s;
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
    if (field_ == Field::kHour) out_->hour_fixed = hour_fixed;
    if (field_ == Field::kDayOfWeek) {
      // Sunday may be written 7; fold it into 0.
      if (bits_ & (uint64_t{1} << 7)) bits_ = (bits_ & ~(uint64_t{1} << 7)) | 1;
    }
    Store();
    return Status::Ok();
  }

 private:
  Status Error(Token token, std::string_view what) const {
    return InvalidArgument(fmt::format("{}: {} (field {}, column {})", spec_.name, what,
                                       number_, token.column));
  }
  Status OutOfRange(Token token, int lo, int hi) const {
    return Error(token, fmt::format("\"{}\" is out of range {}-{}", token.text, lo, hi));
  }

  // A number or, in the month and day-of-week fields, a name.
  Result<int> ParseValue(Token token, int lo, int hi) const {
    if (IsDigits(token.text)) {
      if (token.text.size() > 3) return OutOfRange(token, lo, hi);
      const int v = std::stoi(std::string(token.text));
      if (v < lo || v > hi) return OutOfRange(token, lo, hi);
      return v;
    }
    if (field_ == Field::kMonth) {
      for (std::size_t i = 0; i < kMonthNames.size(); ++i) {
        if (EqualsIgnoreCase(token.text, kMonthNames[i])) return static_cast<int>(i) + 1;
      }
      return Error(token, fmt::format("\"{}\" is not a month (1-12 or JAN-DEC)", token.text));
    }
    if (field_ == Field::kDayOfWeek) {
      for (std::size_t i = 0; i < kWeekdayNames.size(); ++i) {
        if (EqualsIgnoreCase(token.text, kWeekdayNames[i])) return static_cast<int>(i);
      }
      return Error(token,
                   fmt::format("\"{}\" is not a weekday (0-7 or SUN-SAT)", token.text));
    }
    if (token.text.empty()) return Error(token, "missing value");
    return Error(token, fmt::format("\"{}\" is not a number", token.text));
  }

  Status CheckCharacters(Token item) const {
    for (std::size_t i = 0; i < item.text.size(); ++i) {
      const unsigned char c = static_cast<unsigned char>(item.text[i]);
      if (!std::isalnum(c) && c != '*' && c != '-' && c != '/' && c != '#') {
        return Error(item.Sub(i, 1),
                     fmt::format("unexpected character \"{}\"", item.text.substr(i, 1)));
      }
    }
    return Status::Ok();
  }

  Status ParseItem(Token item) {
    if (Status s = CheckCharacters(item); !s.ok()) return s;
    if (field_ == Field::kDayOfMonth) {
      if (auto special = ParseDayOfMonthSpecial(item)) return *special;
    } else if (field_ == Field::kDayOfWeek) {
      if (auto special = ParseDayOfWeekSpecial(item)) return *special;
    }
    // base[/step] where base is *, a or a-b.
    const std::size_t slash = item.text.find('/');
    Token base = item.Sub(0, slash);
    int lo = 0;
    int hi = 0;
    int step = 1;
    const bool star = base.text == "*";
    const int field_max = field_ == Field::kDayOfWeek ? 6 : spec_.max;
    if (base.text.empty()) return Error(base, "missing value before \"/\"");
    if (star) {
      lo = spec_.min;
      hi = field_max;
    } else {
      const std::size_t dash = base.text.find('-');
      if (dash == std::string_view::npos) {
        auto v = ParseValue(base, spec_.min, spec_.max);
        if (!v.ok()) return v.status();
        lo = *v;
        hi = slash == std::string_view::npos ? *v : spec_.max;
      } else {
        Token first = base.Sub(0, dash);
        Token second = base.Sub(dash + 1);
        if (first.text.empty()) return Error(first, "range is missing its start");
        if (second.text.empty()) return Error(second, "range is missing its end");
        if (second.text.find('-') != std::string_view::npos) {
          return Error(base, fmt::format("\"{}\" is not a valid range", base.text));
        }
        auto a = ParseValue(first, spec_.min, spec_.max);
        if (!a.ok()) return a.status();
        auto b = ParseValue(second, spec_.min, spec_.max);
        if (!b.ok()) return b.status();
        if (*a > *b) {
          return Error(base, fmt::format("range \"{}\" is reversed (start is after end)",
                                         base.text));
        }
        lo = *a;
        hi = *b;
      }
    }
    if (slash != std::string_view::npos) {
      Token step_token = item.Sub(slash + 1);
      const int span = field_max - spec_.min + 1;
      if (!IsDigits(step_token.text)) {
        if (step_token.text.empty()) return Error(step_token, "missing step after \"/\"");
        return Error(step_token, fmt::format("step \"{}\" is not a number", step_token.text));
      }
      if (step_token.text.size() > 3) {
        return Error(step_token,
                     fmt::format("step \"{}\" is out of range 1-{}", step_token.text, span));
      }
      step = std::stoi(std::string(step_token.text));
      if (step < 1 || step > span) {
        return Error(step_token,
                     fmt::format("step \"{}\" is out of range 1-{}", step_token.text, span));
      }
    }
    bits_ |= RangeBits(lo, hi, step);
    return Status::Ok();
  }

  // L, L-n, LW, nW. nullopt when `item` is not one of them.
  std::optional<Status> ParseDayOfMonthSpecial(Token item) {
    const std::string_view t = item.text;
    const auto upper = [](char c) { return std::toupper(static_cast<unsigned char>(c)); };
    if (t.size() == 1 && upper(t[0]) == 'L') {
      out_->last_day = true;
      return Status::Ok();
    }
    if (t.size() == 2 && upper(t[0]) == 'L' && upper(t[1]) == 'W') {
      out_->last_weekday_of_month = true;
      return Status::Ok();
    }
    // The n of L-n or nW, 1 to `max`, as its bit of `days`.
    const auto day_bit = [&](Token n, int max, std::string_view needs, uint32_t& days) {
      if (!IsDigits(n.text)) {
        return Error(item, fmt::format("\"{}\" is not valid; {}", item.text, needs));
      }
      auto v = ParseValue(n, 1, max);
      if (!v.ok()) return v.status();
      days |= uint32_t{1} << *v;
      return Status::Ok();
    };
    if (t.size() >= 2 && upper(t[0]) == 'L' && t[1] == '-') {
      return day_bit(item.Sub(2), 30, "L-n needs a number of days", out_->days_before_last);
    }
    if (t.size() >= 2 && upper(t.back()) == 'W') {
      return day_bit(item.Sub(0, t.size() - 1), 31, "nW needs a day number, e.g. 15W",
                     out_->nearest_weekday);
    }
    if (t.find_first_of("Ll") != std::string_view::npos && !IsDigits(t)) {
      return Error(item, fmt::format("\"{}\" is not valid; use L, L-n or LW", item.text));
    }
    return std::nullopt;
  }

  // d#k, dL. nullopt when `item` is not one of them.
  std::optional<Status> ParseDayOfWeekSpecial(Token item) {
    const std::string_view t = item.text;
    const std::size_t hash = t.find('#');
    if (hash != std::string_view::npos) {
      Token day = item.Sub(0, hash);
      Token nth = item.Sub(hash + 1);
      if (day.text.empty()) return Error(day, "missing weekday before \"#\"");
      auto d = ParseValue(day, 0, 7);
      if (!d.ok()) return d.status();
      if (!IsDigits(nth.text)) {
        return Error(nth, fmt::format("\"{}\" after \"#\" is not a number 1-5", nth.text));
      }
      auto k = ParseValue(nth, 1, 5);
      if (!k.ok()) return k.status();
      out_->nth_weekday[*k] |= uint32_t{1} << (*d % 7);
      return Status::Ok();
    }
    if (t.size() == 1 && (t[0] == 'L' || t[0] == 'l')) {
      return Error(item, "\"L\" needs a weekday before it, e.g. \"5L\" for the last Friday");
    }
    if (t.size() >= 2 && (t.back() == 'L' || t.back() == 'l')) {
      Token day = item.Sub(0, t.size() - 1);
      // Not a weekday name that happens to end in L (there is none today,
      // but keep names unambiguous).
      auto d = ParseValue(day, 0, 7);
      if (!d.ok()) return d.status();
      out_->last_weekday |= uint32_t{1} << (*d % 7);
      return Status::Ok();
    }
    return std::nullopt;
  }

  void Store() {
    switch (field_) {
      case Field::kSecond: out_->seconds = bits_; break;
      case Field::kMinute: out_->minutes = bits_; break;
      case Field::kHour: out_->hours = bits_; break;
      case Field::kDayOfMonth: out_->days = static_cast<uint32_t>(bits_); break;
      case Field::kMonth: out_->months = static_cast<uint32_t>(bits_); break;
      case Field::kDayOfWeek: out_->weekdays = static_cast<uint32_t>(bits_); break;
    }
  }

  Field field_;
  FieldSpec spec_;
  int number_;
  CronFields* out_;
  uint64_t bits_ = 0;
};

std::vector<Token> SplitFields(std::string_view text) {
  std::vector<Token> fields;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
    if (i >= text.size()) break;
    const std::size_t start = i;
    while (i < text.size() && text[i] != ' ' && text[i] != '\t') ++i;
    fields.push_back({text.substr(start, i - start), start + 1});
  }
  return fields;
}

Result<CronFields> ParseFields(const std::vector<Token>& fields) {
  CronFields out;
  const bool with_seconds = fields.size() == 6;
  out.has_seconds_field = with_seconds;
  static constexpr std::array<Field, 6> kOrder = {Field::kSecond,     Field::kMinute,
                                                  Field::kHour,       Field::kDayOfMonth,
                                                  Field::kMonth,      Field::kDayOfWeek};
  const std::size_t first = with_seconds ? 0 : 1;
  for (std::size_t i = 0; i < fields.size(); ++i) {
    FieldParser parser(kOrder[first + i], static_cast<int>(i) + 1, &out);
    if (Status s = parser.Parse(fields[i]); !s.ok()) return s;
  }
  if (!with_seconds) out.seconds = 1;
  return out;
}

}  // namespace

Result<CronFields> ParseCron(std::string_view expression) {
  if (expression.size() > kMaxExpressionLength) {
    return InvalidArgument(fmt::format("expression is too long ({} characters, at most {})",
                                       expression.size(), kMaxExpressionLength));
  }
  for (std::size_t i = 0; i < expression.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(expression[i]);
    if (c < 0x20 || c >= 0x7f) {
      if (c == '\t') continue;
      return InvalidArgument(
          fmt::format("unexpected character 0x{:02x} (column {})", c, i + 1));
    }
  }
  std::vector<Token> fields = SplitFields(expression);
  if (fields.empty()) {
    return InvalidArgument(
        "empty expression; expected 5 fields (minute hour day-of-month month day-of-week) "
        "or an @macro");
  }
  if (fields[0].text.front() == '@') {
    for (const Macro& m : kMacros) {
      if (EqualsIgnoreCase(fields[0].text, m.name)) {
        if (fields.size() > 1) {
          return InvalidArgument(fmt::format("\"{}\" takes nothing after it (column {})",
                                             m.name, fields[1].column));
        }
        return ParseFields(SplitFields(m.expansion));
      }
    }
    return InvalidArgument(fmt::format(
        "unknown macro \"{}\" (column {}); expected @yearly, @annually, @monthly, @weekly, "
        "@daily, @midnight or @hourly",
        fields[0].text, fields[0].column));
  }
  if (fields.size() != 5 && fields.size() != 6) {
    return InvalidArgument(fmt::format(
        "expected 5 fields (minute hour day-of-month month day-of-week) or 6 (with a "
        "leading second field), found {}",
        fields.size()));
  }
  return ParseFields(fields);
}

}  // namespace cronledger::schedule
