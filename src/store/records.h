// What the ledger holds, as the store reads it back: jobs, their versions and
// partitions, runs, events, and the instant type every record uses.
#ifndef CRONLEDGER_STORE_RECORDS_H_
#define CRONLEDGER_STORE_RECORDS_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "ledger/names.h"

namespace cronledger::store {

using Instant = std::chrono::sys_time<std::chrono::milliseconds>;

Instant ToInstant(std::chrono::system_clock::time_point t);


struct JobRecord {
  std::string name;
  bool paused = false;  // this job's own flag; see also StoreState::paused_all
  std::optional<Instant> paused_at;
  std::string paused_by;
  std::string pause_reason;
  // Every occurrence at or before this instant has been planned.
  std::optional<std::chrono::sys_seconds> planned_through;
  int current_version = 0;
};

// A job definition in force from `effective_from` on (docs/ledger.md: the past
// is judged by the version that was in force).
struct JobVersion {
  std::string job;
  int version = 0;
  std::chrono::sys_seconds effective_from;
  std::string definition;  // canonical JSON of the schedule-defining keys
};

// Membership of a partition: active over [active_from, active_to).
struct PartitionInterval {
  std::string job;
  std::string partition;
  std::chrono::sys_seconds active_from;
  std::optional<std::chrono::sys_seconds> active_to;
};

struct RunRecord {
  int64_t id = 0;
  std::string job;
  std::string partition;
  std::string period;
  std::string business_date;  // YYYY-MM-DD
  std::chrono::sys_seconds scheduled_at;
  ledger::RunState state = ledger::RunState::kPending;
  std::optional<ledger::SkipReason> reason;
  bool released = false;
  bool misfire_exempt = false;
  int attempts = 0;
  int job_version = 0;
  Instant created_at;
  Instant updated_at;

  std::string RunKey() const { return job + "/" + partition + "/" + period; }
};

struct EventRecord {
  int64_t id = 0;  // assigned by the store
  Instant at;
  std::string type;
  std::string job;            // empty: not about one job
  std::optional<int64_t> run_id;
  std::string run_key;
  std::string actor;  // "planner", "scanner", the calling token or OS user
  // The name an operator's action was done for (`--by`, the API's `by`),
  // recorded beside the actor, who called; empty: none given.
  std::string on_behalf_of;
  std::string reason;
  std::string details = "{}";  // a JSON object
};


struct SchemaInfo {
  int version = 0;          // migrations applied
  int compatible_from = 0;  // the oldest schema version of a binary that may use it
};

}  // namespace cronledger::store

#endif  // CRONLEDGER_STORE_RECORDS_H_
