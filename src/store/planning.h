// Params and results of planning: job and partition sync, plans, release, pause.
#ifndef CRONLEDGER_STORE_PLANNING_H_
#define CRONLEDGER_STORE_PLANNING_H_

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "ledger/release_policy.h"
#include "store/records.h"

namespace cronledger::store {

struct JobSyncParams {
  std::string job;
  std::string definition;  // canonical JSON
  std::optional<Instant> now;  // none: the ledger's clock (Store)
  std::string actor = "config";
};
struct JobSyncResult {
  bool created = false;          // the job was new
  bool version_added = false;    // the definition changed (or the job is new)
  std::vector<JobVersion> versions;  // all versions, oldest first
};

struct PartitionSyncParams {
  std::string job;
  std::vector<std::string> active;  // the complete current set
  std::optional<Instant> now;  // none: the ledger's clock (Store)
};
struct PartitionSyncResult {
  std::vector<std::string> added;
  std::vector<std::string> removed;
};

// One occurrence of a job's schedule and the runs it expects.
struct PlannedOccurrence {
  std::chrono::sys_seconds scheduled_at;
  std::string local_time;  // 2026-11-28T09:00:00+09:00
  std::string dst;         // "", "shifted", "repeated"
  int job_version = 0;
  std::string tzdata;
  struct Run {
    std::string partition;
    std::string period;
    std::string business_date;
  };
  std::vector<Run> runs;
};

struct PlanParams {
  std::string job;
  std::vector<PlannedOccurrence> occurrences;  // in scheduled order
  std::chrono::sys_seconds planned_through;    // the watermark after this plan
  std::optional<Instant> now;  // none: the ledger's clock (Store)
};
struct PlanResult {
  int occurrences_new = 0;  // occurrences not planned before
  int runs_planned = 0;
  int runs_deduplicated = 0;  // a later occurrence of an already planned period
};

struct ReleaseParams {
  std::string job;
  ledger::ReleasePolicy policy;  // `paused` is filled in by the store
  std::optional<Instant> now;  // none: the ledger's clock (Store)
  int limit = 10000;
};
struct ReleaseResult {
  int released = 0;
  int skipped = 0;
};

// What the release pass has to do now, and when it next has anything.
struct ReleaseOutlook {
  // Jobs with planned runs due at or before now that no release pass has
  // judged yet (held runs of a paused job stay here).
  std::vector<std::string> due_jobs;
  // The earliest planned run after now that will need judging.
  std::optional<std::chrono::sys_seconds> next_at;
};

struct PauseParams {
  std::optional<std::string> job;  // nullopt: everything
  bool paused = true;
  std::string actor;  // who called: the API token's name, locally the OS user
  std::string reason;
  std::optional<Instant> now;  // none: the ledger's clock (Store)
  // Last, so that positional initialisers keep their meaning.
  std::string on_behalf_of = {};  // the name given to act for (`--by`); empty: none
};

}  // namespace cronledger::store

#endif  // CRONLEDGER_STORE_PLANNING_H_
