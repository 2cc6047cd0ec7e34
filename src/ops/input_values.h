// Values the command line and the HTTP API both take as input, parsed one
// way: business dates and rerun scopes. Apart from the ledger documents
// (ledger_json.h) and the impact preview, whose callers include this, so
// that the request validators link without the store and the engine (the
// API fuzzer, tests/fuzz).
#ifndef CRONLEDGER_OPS_INPUT_VALUES_H_
#define CRONLEDGER_OPS_INPUT_VALUES_H_

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace cronledger::ops {

// A real calendar date written YYYY-MM-DD (a business date), or nullopt.
std::optional<std::chrono::year_month_day> ParseBusinessDate(const std::string& text);

// Which keys a rerun queues (`--only`): failed runs, unknown ones, missing
// keys (never planned, misfired, awaiting approval), or all three.
enum class RerunScope { kFailed, kUnknown, kMissing, kAll };

std::string_view Name(RerunScope scope);
// "failed", "unknown", "missing", "all"; nullopt for anything else.
std::optional<RerunScope> ParseRerunScope(std::string_view text);

}  // namespace cronledger::ops

#endif  // CRONLEDGER_OPS_INPUT_VALUES_H_
