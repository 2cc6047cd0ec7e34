// Values shared by the configuration and the command line: names, partition
// ids, durations and sizes.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <utility>

#include "config/config.h"
#include "config/config_internal.h"

namespace cronledger::config {

using std::chrono::milliseconds;

namespace internal {
// Here, not in config.cc: the command line's checks (and the API fuzzer)
// use these values without the config file's parser.
std::string Quote(std::string_view s) { return fmt::format("\"{}\"", s); }

std::string FormatDuration(milliseconds d) {
  if (d.count() == 0) return "0s";
  std::string out;
  int64_t left = d.count();
  for (const auto& [unit, size] : {std::pair<std::string_view, int64_t>{"d", 86'400'000},
                                   {"h", 3'600'000},
                                   {"m", 60'000},
                                   {"s", 1'000},
                                   {"ms", 1}}) {
    if (left >= size) {
      out += fmt::format("{}{}", left / size, unit);
      left %= size;
    }
  }
  return out;
}
}  // namespace internal

using internal::Quote;

std::string FormatDuration(std::chrono::milliseconds d) { return internal::FormatDuration(d); }

bool IsValidPartitionId(std::string_view id) {
  if (id.empty() || id.size() > 128 || id == "." || id == ".." || id.front() == '-') return false;
  return std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-' || c == ':' || c == '@';
  });
}

bool IsValidName(std::string_view name) {
  if (name.empty() || name.size() > 64 || name == "." || name == "..") return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
  });
}

Result<milliseconds> ParseDuration(std::string_view text) {
  struct Unit {
    std::string_view name;
    int64_t ms;
  };
  // Largest first: a compound must use them in this order, each once.
  constexpr Unit kUnits[] = {
      {"d", 86'400'000}, {"h", 3'600'000}, {"m", 60'000}, {"s", 1'000}, {"ms", 1}};
  const std::string q = Quote(text);
  if (text.empty()) return InvalidArgument("empty duration; use e.g. \"30s\" or \"1h30m\"");
  if (text.front() == '-') return InvalidArgument(q + " is negative; durations are 0 or more");
  if (text.find_first_of(" \t") != std::string_view::npos) {
    return InvalidArgument(q + " contains a space; write e.g. \"1h30m\"");
  }
  const auto is_digit = [](char c) { return c >= '0' && c <= '9'; };
  if (std::all_of(text.begin(), text.end(), is_digit)) {
    return InvalidArgument(fmt::format("{} has no unit; use e.g. \"{}s\"", q, text));
  }
  int64_t total = 0;
  std::size_t next_unit = 0;  // index into kUnits of the largest unit still allowed
  std::size_t i = 0;
  while (i < text.size()) {
    if (!is_digit(text[i])) {
      return InvalidArgument(
          fmt::format("{}: expected a number at {}; use e.g. \"1h30m\"", q, Quote(text.substr(i))));
    }
    int64_t number = 0;
    for (; i < text.size() && is_digit(text[i]); ++i) {
      if (number > (std::numeric_limits<int64_t>::max() - 9) / 10) {
        return InvalidArgument(q + " is too large");
      }
      number = number * 10 + (text[i] - '0');
    }
    const auto unit_named = [&](std::string_view name) {
      return std::find_if(std::begin(kUnits), std::end(kUnits),
                          [&](const Unit& x) { return x.name == name; });
    };
    if (i < text.size() && (text[i] == '.' || text[i] == ',')) {
      // "1.5m": say what it is in whole units ("1m30s") when it is a whole
      // number of milliseconds, as a user would write it.
      std::size_t f = i + 1;
      int64_t fraction = 0, scale = 1;
      for (; f < text.size() && is_digit(text[f]) && scale <= 1'000'000'000; ++f) {
        fraction = fraction * 10 + (text[f] - '0');
        scale *= 10;
      }
      const auto* u = unit_named(text.substr(f));
      if (u != std::end(kUnits) && scale > 1 && number < 1'000'000 &&
          fraction * u->ms % scale == 0) {
        const int64_t ms = number * u->ms + fraction * u->ms / scale;
        if (ms > 0) {
          return InvalidArgument(fmt::format("{}: use whole numbers, e.g. \"{}\"", q,
                                             internal::FormatDuration(milliseconds{ms})));
        }
      }
      return InvalidArgument(q + ": use whole numbers, e.g. \"1m30s\" for 1.5m");
    }
    std::size_t end = i;
    while (end < text.size() && !is_digit(text[end])) ++end;
    const std::string_view unit = text.substr(i, end - i);
    if (unit.empty()) return InvalidArgument(fmt::format("{} has no unit after {}", q, number));
    const auto* u = unit_named(unit);
    if (u == std::end(kUnits)) {
      return InvalidArgument(
          fmt::format("{} has an unknown unit {}; use ms, s, m, h or d", q, Quote(unit)));
    }
    const std::size_t index = static_cast<std::size_t>(u - std::begin(kUnits));
    if (index < next_unit) {
      return InvalidArgument(
          q + ": in a compound, each unit appears once, largest first (e.g. \"1d12h\")");
    }
    next_unit = index + 1;
    if (number > (std::numeric_limits<int64_t>::max() - total) / u->ms) {
      return InvalidArgument(q + " is too large");
    }
    total += number * u->ms;
    i = end;
  }
  return milliseconds{total};
}

Result<uint64_t> ParseSize(std::string_view text) {
  const std::string q = Quote(text);
  if (text.empty()) return InvalidArgument("empty size; use e.g. \"1MiB\"");
  if (text.front() == '-') return InvalidArgument(q + " is negative");
  std::size_t i = 0;
  uint64_t number = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    if (number > (std::numeric_limits<uint64_t>::max() - 9) / 10) {
      return InvalidArgument(q + " is too large");
    }
    number = number * 10 + static_cast<uint64_t>(text[i] - '0');
  }
  if (i == 0) return InvalidArgument(q + ": expected a number, e.g. \"1MiB\"");
  const std::string_view unit = text.substr(i);
  uint64_t scale = 1;
  if (unit == "KiB") {
    scale = uint64_t{1} << 10;
  } else if (unit == "MiB") {
    scale = uint64_t{1} << 20;
  } else if (unit == "GiB") {
    scale = uint64_t{1} << 30;
  } else if (!unit.empty()) {
    return InvalidArgument(
        fmt::format("{} has an unknown unit {}; use KiB, MiB or GiB, or a plain number of bytes", q,
                    Quote(unit)));
  }
  if (number > std::numeric_limits<uint64_t>::max() / scale) {
    return InvalidArgument(q + " is too large");
  }
  return number * scale;
}

}  // namespace cronledger::config
