#include <cctype>
#include <chrono>
#include <string>

#include <date/date.h>
#include <fmt/format.h>

#include "cronledger/schedule.h"

namespace cronledger {
namespace {

std::string FormatOffset(std::chrono::seconds offset) {
  const long long total = offset.count();
  const char sign = total < 0 ? '-' : '+';
  const long long abs = total < 0 ? -total : total;
  return fmt::format("{}{:02}:{:02}", sign, abs / 3600, abs / 60 % 60);
}

std::string FormatCivil(std::chrono::seconds since_epoch) {
  const auto days = date::floor<date::days>(date::sys_seconds{since_epoch});
  const date::year_month_day ymd{days};
  const auto sod = (date::sys_seconds{since_epoch} - days).count();
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}", static_cast<int>(ymd.year()),
                     static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()),
                     sod / 3600, sod / 60 % 60, sod % 60);
}

// Reads exactly `n` digits at `pos`.
bool ReadDigits(std::string_view s, std::size_t& pos, std::size_t n, int& out) {
  if (pos + n > s.size()) return false;
  int v = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const char c = s[pos + i];
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    v = v * 10 + (c - '0');
  }
  pos += n;
  out = v;
  return true;
}

bool Expect(std::string_view s, std::size_t& pos, char c) {
  if (pos >= s.size() || s[pos] != c) return false;
  ++pos;
  return true;
}

}  // namespace

std::string FormatUtc(std::chrono::sys_seconds t) {
  return FormatCivil(t.time_since_epoch()) + "Z";
}

std::string FormatLocal(const Occurrence& occurrence) {
  return FormatCivil(occurrence.local().time_since_epoch()) +
         FormatOffset(occurrence.utc_offset);
}

std::string FormatDate(std::chrono::year_month_day d) {
  return fmt::format("{:04}-{:02}-{:02}", static_cast<int>(d.year()),
                     static_cast<unsigned>(d.month()), static_cast<unsigned>(d.day()));
}

Result<std::chrono::sys_seconds> ParseRfc3339(std::string_view text) {
  const auto bad = [&] {
    return InvalidArgument(fmt::format(
        "\"{}\" is not an RFC 3339 time such as 2026-11-29T09:00:00Z or "
        "2026-11-29T09:00:00+09:00",
        text));
  };
  std::size_t pos = 0;
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0;
  if (!ReadDigits(text, pos, 4, y) || !Expect(text, pos, '-') || !ReadDigits(text, pos, 2, mo) ||
      !Expect(text, pos, '-') || !ReadDigits(text, pos, 2, d)) {
    return bad();
  }
  if (pos >= text.size() || (text[pos] != 'T' && text[pos] != 't' && text[pos] != ' ')) {
    return bad();
  }
  ++pos;
  if (!ReadDigits(text, pos, 2, h) || !Expect(text, pos, ':') || !ReadDigits(text, pos, 2, mi) ||
      !Expect(text, pos, ':') || !ReadDigits(text, pos, 2, s)) {
    return bad();
  }
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    const std::size_t start = pos;
    while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) ++pos;
    if (pos == start) return bad();
  }
  int offset_seconds = 0;
  if (pos < text.size() && (text[pos] == 'Z' || text[pos] == 'z')) {
    ++pos;
  } else if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
    const int sign = text[pos] == '-' ? -1 : 1;
    ++pos;
    int oh = 0, om = 0;
    if (!ReadDigits(text, pos, 2, oh) || !Expect(text, pos, ':') ||
        !ReadDigits(text, pos, 2, om) || oh > 23 || om > 59) {
      return bad();
    }
    offset_seconds = sign * (oh * 3600 + om * 60);
  } else {
    return bad();
  }
  if (pos != text.size()) return bad();
  const date::year_month_day ymd{date::year{y}, date::month{static_cast<unsigned>(mo)},
                                 date::day{static_cast<unsigned>(d)}};
  // RFC 3339 allows second 60 (a leap second); cronledger does not model them.
  if (!ymd.ok() || h > 23 || mi > 59 || s > 59) return bad();
  const auto local = date::sys_days{ymd}.time_since_epoch() + std::chrono::hours{h} +
                     std::chrono::minutes{mi} + std::chrono::seconds{s};
  return std::chrono::sys_seconds{local - std::chrono::seconds{offset_seconds}};
}

}  // namespace cronledger
