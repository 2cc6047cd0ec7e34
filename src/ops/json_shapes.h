// JSON shapes shared by the command line's --json output and the HTTP API
// (docs/cli.md, docs/api.md): one definition of each, so the two never drift.
#ifndef CRONLEDGER_OPS_JSON_SHAPES_H_
#define CRONLEDGER_OPS_JSON_SHAPES_H_

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "store/store.h"

namespace cronledger::ops {

// "2026-11-28T09:00:00Z": an instant floored to the second.
std::string FormatInstant(store::Instant t);

// The text as a JSON string, or null when it is empty.
nlohmann::ordered_json StringOrNull(const std::string& text);

// An effect of a run: key, state, fingerprint, exit_status, result,
// in_doubt, run_id, started_attempt, settled_attempt, settled_by,
// started_at, updated_at.
nlohmann::ordered_json EffectJson(const store::EffectRecord& e, bool in_doubt);

// At most `max_bytes` of `text`, cut before a UTF-8 sequence that would not
// fit, so a capped result stays valid text.
std::string Utf8Prefix(std::string_view text, std::size_t max_bytes);

// dump() that never throws on bytes that are not UTF-8 (a command's output
// may hold any): they become U+FFFD.
std::string Dump(const nlohmann::ordered_json& j, int indent = -1);

}  // namespace cronledger::ops

#endif  // CRONLEDGER_OPS_JSON_SHAPES_H_
