#ifndef CRONLEDGER_STORE_DEFINITION_DIFF_H_
#define CRONLEDGER_STORE_DEFINITION_DIFF_H_

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace cronledger::store {

// One top-level key of a job definition whose value differs between two
// versions; a key one side lacks is null there.
struct DefinitionChange {
  std::string key;
  nlohmann::json before;
  nlohmann::json after;
};

// The keys that differ between two definitions (JSON objects), in key
// order. When either side is not a JSON object, one change named
// "definition" whose values are the two texts as JSON strings.
std::vector<DefinitionChange> DiffDefinitions(std::string_view before, std::string_view after);

}  // namespace cronledger::store

#endif  // CRONLEDGER_STORE_DEFINITION_DIFF_H_
