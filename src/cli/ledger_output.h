// What the ledger commands print: aligned text tables, and the JSON documents
// of docs/cli.md, which are built in ops/ledger_json.h for the command line and
// the HTTP API alike. Shared by `runs`, `events`, `status` and the rest.
#ifndef CRONLEDGER_CLI_LEDGER_OUTPUT_H_
#define CRONLEDGER_CLI_LEDGER_OUTPUT_H_

#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "cronledger/status.h"
#include "ops/json_shapes.h"
#include "ops/ledger_json.h"
#include "schedule/time_zone.h"
#include "store/store.h"

namespace cronledger::cli {

using ops::AttemptJson;
using ops::EventJson;
using ops::FormatInstant;
using ops::ParseBusinessDate;
using ops::RunJson;
using ops::StringOrNull;

// The usage error for a date flag's value, worded alike by every command:
// `--date "2026-1-1" is not a date; use YYYY-MM-DD, e.g. 2026-11-28`.
std::string NotADate(std::string_view flag, std::string_view value);

// The exit code for a failed store operation: 1 when the ledger's state
// refused it (conflict, not found), 2 for an invalid argument, else 3.
int ExitCodeFor(const Status& status);

// Prints what the ledger refused (or why it could not answer) as
// "cronledger COMMAND: MESSAGE"; answers ExitCodeFor(s).
int Refused(std::string_view command, const Status& s, std::ostream& err);

// An aligned table: a header row, then the rows; every column but the last
// is padded to its widest cell and columns are separated by two spaces.
class TextTable {
 public:
  explicit TextTable(std::vector<std::string> header);
  void AddRow(std::vector<std::string> row);
  void Print(std::ostream& out) const;

  // Prints the rows added since the last Flush (and the header, the first
  // time) and forgets them, so that a long listing is not held in memory.
  // Columns are as wide as their widest cell so far: all of one block is
  // aligned, and a wider cell in a later block widens only what follows.
  void Flush(std::ostream& out);
  // Rows added since the last Flush.
  std::size_t pending_rows() const { return rows_.size() - 1; }

 private:
  void PrintRows(std::size_t first, const std::vector<std::size_t>& widths,
                 std::ostream& out) const;

  std::vector<std::vector<std::string>> rows_;  // rows_[0] is the header
  std::vector<std::size_t> flushed_widths_;     // empty until the first Flush
};

// Reading a ledger document (the JSON of docs/cli.md, built locally or
// answered by a server) to print it as text. A missing key reads as null.
const nlohmann::ordered_json& Field(const nlohmann::ordered_json& object, std::string_view key);
// A string as it is, a number or boolean as JSON writes it, null as "".
std::string Text(const nlohmann::ordered_json& object, std::string_view key);
// An RFC 3339 UTC instant with the wall time of `zone` (a job's) beside it:
// "2026-11-29T00:00:00Z (09:00:00+09:00)", the local date too when it is
// not the UTC one. As it is for UTC, no zone, or text that is not an
// instant.
std::string WithLocalTime(const std::string& utc, const std::string& zone);
// WithLocalTime for the rows of a table of many jobs' runs: each job's zone
// from a Jobs() document ({"jobs": [{"name", "timezone"}, ...]}), each zone
// loaded once. A job it does not name shows UTC alone.
class LocalTimes {
 public:
  explicit LocalTimes(const nlohmann::ordered_json& jobs);
  std::string Of(const std::string& job, const std::string& utc);

 private:
  std::map<std::string, std::string> zone_of_;
  std::map<std::string, std::optional<schedule::TimeZone>> loaded_;
};
// An integer field; 0 when it is not one.
int64_t Integer(const nlohmann::ordered_json& object, std::string_view key);

// Prints the items of an `events` document as a table (ID AT TYPE JOB
// RUN_KEY ACTOR REASON DETAILS).
void PrintEventTable(const nlohmann::ordered_json& events, std::ostream& out);

}  // namespace cronledger::cli

#endif  // CRONLEDGER_CLI_LEDGER_OUTPUT_H_
