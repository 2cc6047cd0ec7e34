#include "ops/config_impact_json.h"

#include <string>

#include "ops/json_shapes.h"
#include "cronledger/schedule.h"

namespace cronledger::ops {
namespace {

using nlohmann::ordered_json;

ordered_json InstantOrNull(const std::optional<std::chrono::sys_seconds>& t) {
  return t ? ordered_json(FormatUtc(*t)) : ordered_json(nullptr);
}

ordered_json RunFields(ordered_json item, const std::optional<int64_t>& run_id,
                       const std::optional<ledger::RunState>& state, bool planned) {
  item["run_id"] = run_id ? ordered_json(*run_id) : ordered_json(nullptr);
  item["run_state"] =
      state ? ordered_json(std::string(ledger::Name(*state))) : ordered_json(nullptr);
  item["planned"] = planned;
  return item;
}

ordered_json KeyJson(const std::string& job, const engine::ImpactKey& k) {
  return RunFields({{"run_key", job + "/" + k.partition + "/" + k.period},
                    {"partition", k.partition},
                    {"period", k.period},
                    {"business_date", k.business_date},
                    {"scheduled_at", FormatUtc(k.scheduled_at)}},
                   k.run_id, k.run_state, k.planned);
}

ordered_json RekeyedJson(const std::string& job, const engine::RekeyedOccurrence& r) {
  const auto side = [&](const std::string& period, const std::string& date) {
    return ordered_json{{"run_key", job + "/" + r.partition + "/" + period},
                        {"period", period},
                        {"business_date", date}};
  };
  return RunFields({{"scheduled_at", FormatUtc(r.scheduled_at)},
                    {"partition", r.partition},
                    {"from", side(r.from_period, r.from_business_date)},
                    {"to", side(r.to_period, r.to_business_date)}},
                   r.run_id, r.run_state, r.planned);
}

ordered_json JobJson(const engine::JobImpact& j) {
  ordered_json changes = ordered_json::object();
  for (const auto& c : j.settings) {
    changes[c.key] = {{"from", ordered_json::parse(c.from, nullptr, false)},
                      {"to", ordered_json::parse(c.to, nullptr, false)}};
  }
  ordered_json newly = ordered_json::array(), gone = ordered_json::array(),
               rekeyed = ordered_json::array();
  for (const auto& k : j.newly_expected) newly.push_back(KeyJson(j.job, k));
  for (const auto& k : j.no_longer_expected) gone.push_back(KeyJson(j.job, k));
  for (const auto& r : j.rekeyed) rekeyed.push_back(RekeyedJson(j.job, r));
  return {{"job", j.job},
          {"change", std::string(engine::Name(j.change))},
          {"changes", changes},
          {"planned_through", InstantOrNull(j.planned_through)},
          {"effective_from", InstantOrNull(j.effective_from)},
          {"window_from", FormatUtc(j.window_from)},
          {"window_to", FormatUtc(j.window_to)},
          {"partitions_added", j.partitions_added},
          {"partitions_removed", j.partitions_removed},
          {"partitions_from_command", j.partitions_from_command},
          {"orphaned_runs", j.orphaned_runs},
          {"rekeyed_runs", j.rekeyed_runs},
          {"newly_expected", newly},
          {"no_longer_expected", gone},
          {"rekeyed", rekeyed}};
}

}  // namespace

ordered_json ConfigImpactJson(const engine::ConfigImpact& impact) {
  ordered_json jobs = ordered_json::array();
  for (const auto& j : impact.jobs) jobs.push_back(JobJson(j));
  return {{"now", FormatInstant(impact.now)},
          {"unchanged", impact.Unchanged()},
          {"orphaned_runs", impact.OrphanedRuns()},
          {"rekeyed_runs", impact.RekeyedRuns()},
          {"jobs", jobs}};
}

}  // namespace cronledger::ops
