// The JSON shape of a configuration's impact on the ledger (`cronledger
// check --against-store --json`, docs/cli.md), here so that the HTTP API
// can answer the same question with the same shape.
#ifndef CRONLEDGER_OPS_CONFIG_IMPACT_JSON_H_
#define CRONLEDGER_OPS_CONFIG_IMPACT_JSON_H_

#include <nlohmann/json.hpp>

#include "engine/config_impact.h"

namespace cronledger::ops {

// {"now", "unchanged", "orphaned_runs", "rekeyed_runs", "jobs": [{"job",
// "change", "changes", "planned_through", "effective_from", "window_from",
// "window_to", "partitions_added", "partitions_removed",
// "partitions_from_command", "orphaned_runs", "rekeyed_runs",
// "newly_expected", "no_longer_expected", "rekeyed"}]}; docs/cli.md has
// every field.
nlohmann::ordered_json ConfigImpactJson(const engine::ConfigImpact& impact);

}  // namespace cronledger::ops

#endif  // CRONLEDGER_OPS_CONFIG_IMPACT_JSON_H_
