// Reads of the ledger: run and event queries, a job's stats, ledger-wide metrics.
#ifndef CRONLEDGER_STORE_QUERIES_H_
#define CRONLEDGER_STORE_QUERIES_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ledger/names.h"
#include "store/records.h"

namespace cronledger::store {

struct RunQuery {
  std::optional<std::string> job;
  std::optional<std::string> business_date;
  std::optional<ledger::RunState> state;
  std::optional<std::string> partition;
  std::optional<int64_t> before_id;  // cursor: ids < before_id (newest first)
  int limit = 100;
};

// The runs of one job over a range of business dates, in (business_date, id)
// order, a page at a time: how the gap scanner reads a whole window without
// holding it. The next page starts after the last row of the previous one.
struct RunDateQuery {
  std::string job;
  std::string from_date;  // YYYY-MM-DD, inclusive
  std::string to_date;    // YYYY-MM-DD, inclusive
  // Cursor: only rows after this (business_date, id).
  std::optional<std::pair<std::string, int64_t>> after;
  int limit = 1000;
};

struct EventQuery {
  std::optional<std::string> job;
  std::optional<int64_t> run_id;
  std::optional<Instant> since;
  std::optional<std::string> type;
  int limit = 100;  // newest `limit` events, returned oldest first
  // Who acted: the actor or the name it acted on behalf of.
  std::optional<std::string> actor = {};
};

struct StatsParams {
  std::string job;
  std::string business_date;  // the date to count
  std::optional<Instant> now;  // none: the ledger's clock (Store)
  std::chrono::sys_seconds horizon_from;  // lag considers runs scheduled at or after this
};
struct JobStats {
  std::string job;
  std::map<std::string, int> by_state;   // run state name -> count, for business_date
  std::map<std::string, int> by_reason;  // skip reason -> count, for business_date
  std::optional<Instant> last_success_at;
  std::string last_success_business_date;
  // The oldest due run in the horizon that is neither succeeded nor waived.
  std::optional<std::chrono::sys_seconds> oldest_open_scheduled_at;
  int in_flight = 0;  // pending or running, any date
  int unknown_total = 0;   // runs in `unknown`, any date
  int expired_leases = 0;  // running runs whose lease expired before now
  // step name -> step state -> count, for business_date's due runs.
  std::map<std::string, std::map<std::string, int>> steps;
};


// Ledger-wide aggregates (GET /metrics).


struct LedgerMetricsParams {
  // Upper bounds (inclusive, ascending) of the attempt-duration histogram.
  std::vector<std::chrono::milliseconds> duration_bounds;
  // The event types that count as manual recoveries.
  std::vector<std::string> recovery_events;
  // Events by this actor are automatic, not manual ("scanner").
  std::string automatic_actor;
};
struct DurationHistogram {
  std::vector<int64_t> cumulative;  // attempts at or under each bound, in order
  int64_t count = 0;                // every ended attempt
  int64_t sum_ms = 0;
};
// Everything counted over the whole ledger (every date), by job.
struct LedgerMetrics {
  std::map<std::string, std::map<std::string, int64_t>> runs;      // job -> run state -> runs
  std::map<std::string, std::map<std::string, int64_t>> attempts;  // job -> end class -> ended
  // job -> succeeded attempts whose previous attempt did not succeed.
  std::map<std::string, int64_t> retry_successes;
  std::map<std::string, std::map<std::string, int64_t>> recoveries;  // job -> event type -> events
  std::map<std::string, DurationHistogram> durations;  // job -> ended attempts' durations
};

}  // namespace cronledger::store

#endif  // CRONLEDGER_STORE_QUERIES_H_
