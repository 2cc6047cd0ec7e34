#include "cli/ledger_output.h"

#include <fmt/format.h>

#include <algorithm>

#include "cli/exit_codes.h"
#include "cronledger/schedule.h"
#include "schedule/time_zone.h"

namespace cronledger::cli {
namespace {

// Display width of UTF-8 text: its code points (continuation bytes don't count).
std::size_t Width(std::string_view text) {
  return static_cast<std::size_t>(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

// One table cell: "-" for nothing, control characters (a newline in a
// reason) as spaces so that a row stays one line.
std::string Cell(std::string text) {
  if (text.empty()) return "-";
  for (char& c : text) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  }
  return text;
}

}  // namespace

std::string NotADate(std::string_view flag, std::string_view value) {
  return fmt::format("{} \"{}\" is not a date; use YYYY-MM-DD, e.g. 2026-11-28", flag, value);
}

int ExitCodeFor(const Status& status) {
  switch (status.code()) {
    case StatusCode::kConflict:
    case StatusCode::kNotFound:
      return kExitFound;
    case StatusCode::kInvalidArgument:
      return kExitUsage;
    default:
      return kExitUnavailable;
  }
}

int Refused(std::string_view command, const Status& s, std::ostream& err) {
  err << "cronledger " << command << ": " << s.message() << "\n";
  return ExitCodeFor(s);
}

TextTable::TextTable(std::vector<std::string> header) { rows_.push_back(std::move(header)); }

void TextTable::AddRow(std::vector<std::string> row) {
  for (auto& cell : row) cell = Cell(std::move(cell));
  row.resize(rows_.front().size(), "-");
  rows_.push_back(std::move(row));
}

void TextTable::Print(std::ostream& out) const {
  std::vector<std::size_t> widths(rows_.front().size(), 0);
  for (const auto& row : rows_) {
    for (std::size_t c = 0; c < widths.size(); ++c) widths[c] = std::max(widths[c], Width(row[c]));
  }
  PrintRows(0, widths, out);
}

void TextTable::Flush(std::ostream& out) {
  const bool first = flushed_widths_.empty();
  flushed_widths_.resize(rows_.front().size(), 0);
  for (const auto& row : rows_) {
    for (std::size_t c = 0; c < row.size(); ++c) {
      flushed_widths_[c] = std::max(flushed_widths_[c], Width(row[c]));
    }
  }
  PrintRows(first ? 0 : 1, flushed_widths_, out);
  rows_.resize(1);
}

void TextTable::PrintRows(std::size_t first, const std::vector<std::size_t>& widths,
                          std::ostream& out) const {
  const std::size_t columns = widths.size();
  for (std::size_t r = first; r < rows_.size(); ++r) {
    const auto& row = rows_[r];
    std::string line;
    for (std::size_t c = 0; c < columns; ++c) {
      line += row[c];
      if (c + 1 < columns) line.append(widths[c] - Width(row[c]) + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << "\n";
  }
}

const nlohmann::ordered_json& Field(const nlohmann::ordered_json& object, std::string_view key) {
  static const nlohmann::ordered_json kNull;
  if (!object.is_object()) return kNull;
  const auto it = object.find(key);
  return it == object.end() ? kNull : *it;
}

std::string Text(const nlohmann::ordered_json& object, std::string_view key) {
  const nlohmann::ordered_json& v = Field(object, key);
  if (v.is_null()) return "";
  if (v.is_string()) return v.get<std::string>();
  return ops::Dump(v);
}

namespace {

bool IsUtc(const std::string& zone) { return zone.empty() || zone == "UTC" || zone == "Etc/UTC"; }

std::string WithLocalTimeIn(const std::string& utc, const schedule::TimeZone* tz) {
  if (tz == nullptr) return utc;
  const auto t = ParseRfc3339(utc);
  if (!t.ok()) return utc;
  Occurrence o;
  o.utc = *t;
  o.utc_offset = tz->SegmentAt(*t).offset;
  const std::string local = FormatLocal(o);  // 2026-11-29T09:00:00+09:00
  const bool same_date = local.compare(0, 10, utc, 0, 10) == 0;
  return fmt::format("{} ({})", utc, same_date ? local.substr(11) : local);
}

}  // namespace

std::string WithLocalTime(const std::string& utc, const std::string& zone) {
  if (IsUtc(zone)) return utc;
  const auto tz = schedule::TimeZone::Load(zone);
  return tz.ok() ? WithLocalTimeIn(utc, &*tz) : utc;
}

LocalTimes::LocalTimes(const nlohmann::ordered_json& jobs) {
  for (const auto& j : Field(jobs, "jobs")) zone_of_[Text(j, "name")] = Text(j, "timezone");
}

std::string LocalTimes::Of(const std::string& job, const std::string& utc) {
  const auto zone = zone_of_.find(job);
  if (zone == zone_of_.end() || IsUtc(zone->second)) return utc;
  auto [it, fresh] = loaded_.try_emplace(zone->second);
  if (fresh) {
    auto tz = schedule::TimeZone::Load(zone->second);
    if (tz.ok()) it->second = std::move(*tz);
  }
  return WithLocalTimeIn(utc, it->second ? &*it->second : nullptr);
}

int64_t Integer(const nlohmann::ordered_json& object, std::string_view key) {
  const nlohmann::ordered_json& v = Field(object, key);
  return v.is_number_integer() ? v.get<int64_t>() : 0;
}

void PrintEventTable(const nlohmann::ordered_json& events, std::ostream& out) {
  TextTable table(
      {"ID", "AT", "TYPE", "JOB", "RUN_KEY", "ACTOR", "ON_BEHALF_OF", "REASON", "DETAILS"});
  for (const auto& e : events) {
    // Details are a JSON object (or, never written by cronledger, text).
    const nlohmann::ordered_json& details = Field(e, "details");
    table.AddRow({Text(e, "id"), Text(e, "at"), Text(e, "type"), Text(e, "job"), Text(e, "run_key"),
                  Text(e, "actor"), Text(e, "on_behalf_of"), Text(e, "reason"),
                  details.is_object() && details.empty() ? "" : Text(e, "details")});
  }
  table.Print(out);
}

}  // namespace cronledger::cli
