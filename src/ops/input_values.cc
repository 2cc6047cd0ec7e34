#include "ops/input_values.h"

namespace cronledger::ops {

using std::chrono::year_month_day;

std::optional<year_month_day> ParseBusinessDate(const std::string& text) {
  if (text.size() != 10 || text[4] != '-' || text[7] != '-') return std::nullopt;
  for (std::size_t i : {0, 1, 2, 3, 5, 6, 8, 9}) {
    if (text[i] < '0' || text[i] > '9') return std::nullopt;
  }
  const year_month_day d{std::chrono::year{std::stoi(text.substr(0, 4))},
                         std::chrono::month{static_cast<unsigned>(std::stoi(text.substr(5, 2)))},
                         std::chrono::day{static_cast<unsigned>(std::stoi(text.substr(8, 2)))}};
  if (!d.ok()) return std::nullopt;
  return d;
}

std::string_view Name(RerunScope scope) {
  switch (scope) {
    case RerunScope::kFailed: return "failed";
    case RerunScope::kUnknown: return "unknown";
    case RerunScope::kMissing: return "missing";
    case RerunScope::kAll: return "all";
  }
  return "all";
}

std::optional<RerunScope> ParseRerunScope(std::string_view text) {
  if (text == "failed") return RerunScope::kFailed;
  if (text == "unknown") return RerunScope::kUnknown;
  if (text == "missing") return RerunScope::kMissing;
  if (text == "all") return RerunScope::kAll;
  return std::nullopt;
}

}  // namespace cronledger::ops
