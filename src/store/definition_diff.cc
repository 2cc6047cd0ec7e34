#include "store/definition_diff.h"

#include <set>

namespace cronledger::store {

std::vector<DefinitionChange> DiffDefinitions(std::string_view before, std::string_view after) {
  const auto a = nlohmann::json::parse(before, nullptr, false);
  const auto b = nlohmann::json::parse(after, nullptr, false);
  if (!a.is_object() || !b.is_object()) {
    return {
        {"definition", nlohmann::json(std::string(before)), nlohmann::json(std::string(after))}};
  }
  std::set<std::string> keys;
  for (const auto& [k, v] : a.items()) keys.insert(k);
  for (const auto& [k, v] : b.items()) keys.insert(k);
  std::vector<DefinitionChange> out;
  for (const auto& k : keys) {
    nlohmann::json av = a.contains(k) ? a[k] : nlohmann::json();
    nlohmann::json bv = b.contains(k) ? b[k] : nlohmann::json();
    if (av != bv) out.push_back({k, std::move(av), std::move(bv)});
  }
  return out;
}

}  // namespace cronledger::store
