#include "store/sql/json_text.h"

#include <algorithm>

#include <nlohmann/json.hpp>

namespace cronledger::store::sql {

void AppendJsonString(std::string& out, std::string_view s, NulBytes nul) {
  const bool printable = std::all_of(s.begin(), s.end(), [](char ch) {
    const auto byte = static_cast<unsigned char>(ch);
    return byte >= 0x20 && byte < 0x7f;
  });
  if (printable) {
    out += '"';
    for (const char ch : s) {
      if (ch == '"' || ch == '\\') out += '\\';
      out += ch;
    }
    out += '"';
    return;
  }
  std::string text(s);
  if (nul == NulBytes::kDrop) std::erase(text, '\0');
  out += nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace cronledger::store::sql
