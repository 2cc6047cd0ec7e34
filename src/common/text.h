// Small text utilities shared across modules.
#ifndef CRONLEDGER_COMMON_TEXT_H_
#define CRONLEDGER_COMMON_TEXT_H_

#include <cstddef>
#include <string_view>

namespace cronledger {

// Optimal string alignment distance (insertions, deletions, substitutions
// and adjacent transpositions), for "did you mean" suggestions.
std::size_t EditDistance(std::string_view a, std::string_view b);

}  // namespace cronledger

#endif  // CRONLEDGER_COMMON_TEXT_H_
