// The ledger documents (status, runs, a single run, events, gaps, verify;
// docs/cli.md and docs/api.md), built once for both the command line's --json
// output and the HTTP API, so the two never drift. The values both take as
// input (business dates) are parsed in input_values.h.
#ifndef CRONLEDGER_OPS_LEDGER_JSON_H_
#define CRONLEDGER_OPS_LEDGER_JSON_H_

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ops/input_values.h"  // ParseBusinessDate
#include "config/config.h"
#include "cronledger/status.h"
#include "engine/gap_scanner.h"
#include "engine/status_report.h"
#include "store/store.h"

namespace cronledger::ops {

// The `status` item (docs/cli.md): name, state, last_success_at, ..., steps,
// then planned_through, in_flight, expired_leases, unknown_runs.
nlohmann::ordered_json JobStatusJson(const engine::JobStatus& status);

// A node not heard from for this long is shown as not alive (serve beats
// every 5 s).
inline constexpr std::chrono::seconds kNodeAliveWithin{30};

// Whether `node` runs at `now` (the ledger's instant): it beat within
// kNodeAliveWithin and has not stopped cleanly since.
inline bool NodeAlive(const store::NodeRecord& node, store::Instant now) {
  return !node.stopped_at && now - node.last_seen_at <= kNodeAliveWithin;
}

// The `nodes` of `status` (beside `jobs`): [{"node", "alive", "last_seen_at",
// "running", "version", "listen", "started_at"}], by name; alive when the
// node beat within kNodeAliveWithin of `now` (the ledger's instant) and has
// not stopped cleanly since.
Result<nlohmann::ordered_json> NodesJson(store::Store& store, store::Instant now);

// The `runs` item (docs/api.md): id, run_key, job, partition, period,
// business_date, scheduled_at, state, reason (null unless skipped), attempts,
// steps.
nlohmann::ordered_json RunJson(const store::RunRecord& run,
                               const std::vector<store::StepState>& steps = {});

// An attempt in the `attempt_list` of GET /v1/runs/{id} (docs/api.md), with its
// step, duration and output tail (the end of its log).
nlohmann::ordered_json AttemptJson(const store::AttemptRecord& attempt);

// The `events` item (docs/api.md): id, at, type, job, run_id, run_key, actor,
// reason, details (the stored JSON object; empty texts and absent ids null).
nlohmann::ordered_json EventJson(const store::EventRecord& event);

// The `gaps` item (docs/api.md): run_key, job, partition, business_date,
// scheduled_at, cause, waived, then run_id (null when never planned).
nlohmann::ordered_json GapJson(const engine::Gap& gap);

// Everything the ledger holds about one run.
struct RunDetail {
  store::RunRecord run;
  std::vector<store::StepState> steps;
  std::vector<store::AttemptRecord> attempts;
  std::vector<store::EffectRecord> effects;
  std::vector<bool> in_doubt;              // per effect: started by an attempt that is over
  std::vector<store::EventRecord> events;  // oldest first, the newest `max_events`
};

// kNotFound naming the id when there is no such run.
Result<RunDetail> LoadRunDetail(store::Store& store, int64_t run_id, int max_events);

// A single run: the `runs` item plus attempt_list, effects, events and
// updated_at (the run's last change).
nlohmann::ordered_json RunDetailJson(const RunDetail& detail);

// The gaps of `jobs` between business dates `from` and `to` (inclusive;
// unset: from the job's backfill horizon back from now, to tomorrow), in
// job order and then scheduled order. A failure names its job.
struct GapQuery {
  std::vector<const config::JobConfig*> jobs;
  std::optional<std::chrono::year_month_day> from;
  std::optional<std::chrono::year_month_day> to;
  bool include_waived = false;
};
// Calls `fn` for each gap as the scan finds it (none held: a ledger missing
// a whole window can have millions); stops at the first error.
Status ForEachGap(store::Store& store, const GapQuery& query, store::Instant now,
                  const std::function<Status(const engine::Gap&)>& fn);
// All of them, for an answer built whole (the HTTP API).
Result<std::vector<engine::Gap>> ScanGaps(store::Store& store, const GapQuery& query,
                                          store::Instant now);

// The `verify` document (docs/cli.md) for one business date of `job`: job,
// business_date, complete, expected, succeeded, waived, steps,
// first_scheduled_at, last_completed_at, attempts, reruns, missing.
Result<nlohmann::ordered_json> VerifyJson(store::Store& store, const config::JobConfig& job,
                                          const std::string& business_date,
                                          std::chrono::year_month_day date, store::Instant now);

}  // namespace cronledger::ops

#endif  // CRONLEDGER_OPS_LEDGER_JSON_H_
