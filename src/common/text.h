// Small text utilities shared across modules.
#ifndef CRONLEDGER_COMMON_TEXT_H_
#define CRONLEDGER_COMMON_TEXT_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace cronledger {

// Optimal string alignment distance (insertions, deletions, substitutions
// and adjacent transpositions), for "did you mean" suggestions.
std::size_t EditDistance(std::string_view a, std::string_view b);

// `n` bytes as lower-case hex, two digits each. Inline: the small step
// front links no more than it must.
inline std::string Hex(const unsigned char* bytes, std::size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(n * 2);
  for (std::size_t i = 0; i < n; ++i) {
    out += kDigits[bytes[i] >> 4];
    out += kDigits[bytes[i] & 0xf];
  }
  return out;
}

}  // namespace cronledger

#endif  // CRONLEDGER_COMMON_TEXT_H_
