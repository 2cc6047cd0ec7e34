#include "ops/actor_text.h"

#include <fmt/format.h>

#include <cstdint>

namespace cronledger::ops {
namespace {

// The code point at `text[i]` and its length in bytes; length 0 when the
// bytes there are not well-formed UTF-8 (overlong forms and surrogates
// included).
std::pair<uint32_t, std::size_t> Decode(std::string_view text, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char b = byte(i);
  if (b < 0x80) return {b, 1};
  std::size_t n = 0;
  uint32_t cp = 0, min = 0;
  if ((b & 0xE0) == 0xC0) {
    n = 2, cp = b & 0x1F, min = 0x80;
  } else if ((b & 0xF0) == 0xE0) {
    n = 3, cp = b & 0x0F, min = 0x800;
  } else if ((b & 0xF8) == 0xF0) {
    n = 4, cp = b & 0x07, min = 0x10000;
  } else {
    return {0, 0};
  }
  if (i + n > text.size()) return {0, 0};
  for (std::size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return {0, 0};
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return {0, 0};
  return {cp, n};
}

}  // namespace

std::string ActorTextProblem(ActorField field, std::string_view text) {
  const bool reason = field == ActorField::kReason;
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    return reason ? "is blank: say why, it is recorded in the ledger"
                  : "is blank: name who acts, or leave it out";
  }
  const std::size_t max = reason ? kMaxReasonBytes : kMaxActorBytes;
  if (text.size() > max) return fmt::format("is {} bytes; at most {}", text.size(), max);
  for (std::size_t i = 0; i < text.size();) {
    const auto [cp, n] = Decode(text, i);
    if (n == 0) return fmt::format("is not valid UTF-8 at byte {}", i + 1);
    const bool layout = reason && (cp == '\n' || cp == '\t' || cp == '\r');
    if ((cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp <= 0x9F)) && !layout) {
      return fmt::format("holds the control character U+{:04X} at byte {}{}", cp, i + 1,
                         reason ? " (newlines and tabs are allowed)" : "");
    }
    i += n;
  }
  return "";
}

}  // namespace cronledger::ops
