// Strings written as JSON text by hand: the hot events' details and
// PostgreSQL's batch parameters, where building nlohmann::json values cost
// more than the rest of the work.
#ifndef CRONLEDGER_STORE_SQL_JSON_TEXT_H_
#define CRONLEDGER_STORE_SQL_JSON_TEXT_H_

#include <string>
#include <string_view>

namespace cronledger::store::sql {

enum class NulBytes { kKeep, kDrop };

// `s` as a JSON string appended to `out`, as nlohmann writes it: printable
// ASCII is escaped in place; anything else goes through nlohmann, with
// bytes that are not UTF-8 replaced by U+FFFD. kDrop leaves NUL bytes out
// (PostgreSQL's text cannot hold them); kKeep writes them as \u0000.
void AppendJsonString(std::string& out, std::string_view s, NulBytes nul);

}  // namespace cronledger::store::sql

#endif  // CRONLEDGER_STORE_SQL_JSON_TEXT_H_
