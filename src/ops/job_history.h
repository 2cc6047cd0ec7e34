// GET /v1/jobs/{name}/history (docs/api.md): one job's expected run keys
// over its last `days` business dates, each with its run, state and timing,
// and per business date when its work was scheduled and when it finished —
// what the dashboard's grid and charts draw, in one request.
#ifndef CRONLEDGER_OPS_JOB_HISTORY_H_
#define CRONLEDGER_OPS_JOB_HISTORY_H_

#include <nlohmann/json.hpp>

#include "config/config.h"
#include "cronledger/status.h"
#include "store/store.h"

namespace cronledger::ops {

inline constexpr int kDefaultHistoryDays = 30;
inline constexpr int kMaxHistoryDays = 90;
// Keys described at most; beyond it the answer says "truncated": true.
inline constexpr int kMaxHistoryKeys = 20000;

// {"job", "from", "to", "days", "truncated", "partitions": [...],
//  "keys": [{"partition", "business_date", "scheduled_at", "run_id", "state",
//            "cause", "waived", "attempts", "started_at", "finished_at",
//            "duration_seconds"}],
//  "dates": [{"business_date", "scheduled_at", "finished_at", "complete",
//             "expected", "succeeded", ...}]}
// `to` is the business date of the job's latest due key (today's UTC date
// when it has none), `from` is days - 1 before it.
Result<nlohmann::ordered_json> JobHistoryJson(store::Store& store, const config::JobConfig& job,
                                              store::Instant now, int days);

}  // namespace cronledger::ops

#endif  // CRONLEDGER_OPS_JOB_HISTORY_H_
