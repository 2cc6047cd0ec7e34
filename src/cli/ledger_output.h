// What the ledger commands print: aligned text tables, and the JSON shapes
// of DESIGN.md, which are built in api/ledger_json.h for the command line
// and the HTTP API alike. Shared by `runs`, `events`, `status` and the rest.
#ifndef CRONLEDGER_CLI_LEDGER_OUTPUT_H_
#define CRONLEDGER_CLI_LEDGER_OUTPUT_H_

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "api/json_shapes.h"
#include "api/ledger_json.h"
#include "cronledger/status.h"
#include "store/store.h"

namespace cronledger::cli {

using api::AttemptJson;
using api::EventJson;
using api::FormatInstant;
using api::ParseBusinessDate;
using api::RunJson;
using api::StringOrNull;

// The exit code for a failed store operation: 1 when the ledger's state
// refused it (conflict, not found), 2 for an invalid argument, else 3.
int ExitCodeFor(const Status& status);

// An aligned table: a header row, then the rows; every column but the last
// is padded to its widest cell and columns are separated by two spaces.
class TextTable {
 public:
  explicit TextTable(std::vector<std::string> header);
  void AddRow(std::vector<std::string> row);
  void Print(std::ostream& out) const;

 private:
  std::vector<std::vector<std::string>> rows_;  // rows_[0] is the header
};

// Prints `events` as a table (ID AT TYPE JOB RUN_KEY ACTOR REASON DETAILS).
void PrintEventTable(const std::vector<store::EventRecord>& events, std::ostream& out);

}  // namespace cronledger::cli

#endif  // CRONLEDGER_CLI_LEDGER_OUTPUT_H_
