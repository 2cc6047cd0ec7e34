#include "cli/ledger_output.h"

#include <algorithm>
#include <chrono>

#include "cli/exit_codes.h"
#include "cronledger/schedule.h"
#include "ledger/names.h"

namespace cronledger::cli {
namespace {

using nlohmann::ordered_json;

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

std::optional<std::chrono::year_month_day> ParseBusinessDate(const std::string& text) {
  if (text.size() != 10 || text[4] != '-' || text[7] != '-') return std::nullopt;
  for (std::size_t i : {0, 1, 2, 3, 5, 6, 8, 9}) {
    if (text[i] < '0' || text[i] > '9') return std::nullopt;
  }
  const std::chrono::year_month_day d{
      std::chrono::year{std::stoi(text.substr(0, 4))},
      std::chrono::month{static_cast<unsigned>(std::stoi(text.substr(5, 2)))},
      std::chrono::day{static_cast<unsigned>(std::stoi(text.substr(8, 2)))}};
  if (!d.ok()) return std::nullopt;
  return d;
}

ordered_json RunJson(const store::RunRecord& run, const std::vector<store::StepState>& steps) {
  ordered_json j;
  j["id"] = run.id;
  j["run_key"] = run.RunKey();
  j["job"] = run.job;
  j["partition"] = run.partition;
  j["period"] = run.period;
  j["business_date"] = run.business_date;
  j["scheduled_at"] = FormatUtc(run.scheduled_at);
  j["state"] = std::string(ledger::Name(run.state));
  j["reason"] =
      run.reason ? ordered_json(std::string(ledger::Name(*run.reason))) : ordered_json(nullptr);
  j["attempts"] = run.attempts;
  ordered_json list = ordered_json::array();
  for (const auto& step : steps) list.push_back({{"name", step.name}, {"state", step.state}});
  j["steps"] = std::move(list);
  return j;
}

ordered_json AttemptJson(const store::AttemptRecord& a) {
  ordered_json j;
  j["number"] = a.number;
  j["fencing_token"] = a.token;
  j["node"] = a.node;
  j["started_at"] = FormatInstant(a.started_at);
  j["ended_at"] = a.ended_at ? ordered_json(FormatInstant(*a.ended_at)) : ordered_json(nullptr);
  j["end_class"] = StringOrNull(a.end_class);
  j["exit_status"] = a.exit_status ? ordered_json(*a.exit_status) : ordered_json(nullptr);
  j["log_path"] = StringOrNull(a.log_path);
  j["step"] = StringOrNull(a.step);
  if (a.ended_at) {
    j["duration_seconds"] =
        std::chrono::duration_cast<std::chrono::seconds>(*a.ended_at - a.started_at).count();
  }
  j["output_tail"] = StringOrNull(a.output_tail);
  j["action_event_id"] =
      a.action_event_id ? ordered_json(*a.action_event_id) : ordered_json(nullptr);
  return j;
}

ordered_json EventJson(const store::EventRecord& event) {
  ordered_json j;
  j["id"] = event.id;
  j["at"] = FormatInstant(event.at);
  j["type"] = event.type;
  j["job"] = StringOrNull(event.job);
  j["run_id"] = event.run_id ? ordered_json(*event.run_id) : ordered_json(nullptr);
  j["run_key"] = StringOrNull(event.run_key);
  j["actor"] = event.actor;
  j["reason"] = StringOrNull(event.reason);
  // Stored as a JSON object; a value that does not parse (never written by
  // cronledger) is shown as the text it is rather than dropped.
  auto details = ordered_json::parse(event.details, nullptr, /*allow_exceptions=*/false);
  if (details.is_discarded()) {
    j["details"] = event.details;
  } else {
    j["details"] = std::move(details);
  }
  return j;
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

void PrintEventTable(const std::vector<store::EventRecord>& events, std::ostream& out) {
  TextTable table({"ID", "AT", "TYPE", "JOB", "RUN_KEY", "ACTOR", "REASON", "DETAILS"});
  for (const auto& e : events) {
    table.AddRow({std::to_string(e.id), FormatInstant(e.at), e.type, e.job, e.run_key, e.actor,
                  e.reason, e.details == "{}" ? "" : e.details});
  }
  table.Print(out);
}

}  // namespace cronledger::cli
