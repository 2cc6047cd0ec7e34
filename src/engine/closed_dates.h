// Missing run keys on a job's closed business dates (docs/alerts.md): a
// date is closed once its last occurrence is older than the job's
// alert.max_lag, and a key that is then never planned, misfired or awaiting
// approval is missing. GET /metrics counts them (cronledger_missing_runs)
// and the alerter raises one missing_runs alert per job and date.
#ifndef CRONLEDGER_ENGINE_CLOSED_DATES_H_
#define CRONLEDGER_ENGINE_CLOSED_DATES_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "config/config.h"
#include "cronledger/clock.h"
#include "cronledger/status.h"
#include "store/store.h"

namespace cronledger::engine {

struct MissingOnDate {
  int64_t missing = 0;
  std::map<std::string, int64_t> causes;  // never_planned, misfired, awaiting_approval
  std::vector<std::string> run_keys;      // the first `max_keys`, in scheduled order
};

// The missing keys of `job` on its closed business dates within
// backfill.horizon, by business date (YYYY-MM-DD); dates with none are
// absent. `max_keys` bounds each date's run_keys.
Result<std::map<std::string, MissingOnDate>> MissingByClosedDate(const config::JobConfig& job,
                                                                 store::Store& store,
                                                                 Clock::TimePoint now,
                                                                 std::size_t max_keys = 0);

}  // namespace cronledger::engine

#endif  // CRONLEDGER_ENGINE_CLOSED_DATES_H_
