#include "ops/json_shapes.h"

#include <chrono>

#include "cronledger/schedule.h"
#include "ledger/names.h"

namespace cronledger::ops {

using nlohmann::ordered_json;

std::string FormatInstant(store::Instant t) {
  return FormatUtc(std::chrono::floor<std::chrono::seconds>(t));
}

ordered_json StringOrNull(const std::string& text) {
  return text.empty() ? ordered_json(nullptr) : ordered_json(text);
}

ordered_json EffectJson(const store::EffectRecord& e, bool in_doubt) {
  const auto opt = [](const auto& v) { return v ? ordered_json(*v) : ordered_json(nullptr); };
  return {{"key", e.key},
          {"state", std::string(ledger::Name(e.state))},
          {"fingerprint", e.fingerprint},
          {"exit_status", opt(e.exit_status)},
          {"result", e.result},
          {"in_doubt", in_doubt},
          {"run_id", e.run_id},
          {"started_attempt", e.started_attempt},
          {"settled_attempt", opt(e.settled_attempt)},
          {"settled_by", StringOrNull(e.settled_by)},
          {"started_at", FormatInstant(e.started_at)},
          {"updated_at", FormatInstant(e.updated_at)}};
}

std::string Utf8Prefix(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  std::size_t end = max_bytes;
  // Back up over continuation bytes to the start of the cut sequence, and
  // drop it: it would be incomplete.
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return std::string(text.substr(0, end));
}

std::string Dump(const ordered_json& j, int indent) {
  return j.dump(indent, ' ', false, ordered_json::error_handler_t::replace);
}

}  // namespace cronledger::ops
