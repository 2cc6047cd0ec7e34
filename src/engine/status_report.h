// Where each job stands: the `status` shape of docs/cli.md, computed from the
// configuration (schedules) and the ledger. Used by `cronledger status`,
// serve's start-up log and (later) the API.
#ifndef CRONLEDGER_ENGINE_STATUS_REPORT_H_
#define CRONLEDGER_ENGINE_STATUS_REPORT_H_

#include <map>
#include <optional>
#include <utility>
#include <string>
#include <vector>

#include "config/config.h"
#include "cronledger/clock.h"
#include "store/store.h"

namespace cronledger::engine {

struct JobStatus {
  std::string name;
  std::string state;  // "active" | "paused"
  std::string last_success_at;             // RFC 3339, empty when none
  std::string last_success_business_date;  // empty when none
  std::string business_date;  // of the latest occurrence at or before now (else the next)
  // Counts for business_date (docs/cli.md, cronledger status).
  int expected = 0;
  int succeeded = 0;
  int failed = 0;
  int unknown = 0;
  int waived = 0;
  int in_progress = 0;
  int missing = 0;
  int64_t lag_seconds = 0;
  std::string next_at;  // RFC 3339, empty when the schedule has ended
  // Per step, in the job's order: step state -> count, for business_date.
  std::vector<std::pair<std::string, std::map<std::string, int>>> steps;
  // Beyond the contract shape: for serve's start-up log and operators.
  std::string planned_through;  // RFC 3339, empty before the first plan
  int in_flight = 0;            // pending (due) or running, any date
  int unknown_total = 0;        // runs in `unknown`, any date
  int expired_leases = 0;       // running runs whose lease has expired (the reaper's work)
  bool in_ledger = false;       // serve has planned it at least once
  // The IANA zone its schedule and business dates are in: the dashboard
  // shows times in it, UTC beside.
  std::string timezone = {};
};

struct StatusReport {
  std::vector<JobStatus> jobs;
};

// REQUIRES: every job in `config` has a valid schedule (LoadConfig checked).
Result<StatusReport> BuildStatus(const config::Config& config, store::Store& store,
                                 Clock::TimePoint now);

// The most recent occurrence at or before `t`, if any within five years.
std::optional<Occurrence> PreviousOccurrence(const Schedule& schedule,
                                             std::chrono::sys_seconds t);

}  // namespace cronledger::engine

#endif  // CRONLEDGER_ENGINE_STATUS_REPORT_H_
