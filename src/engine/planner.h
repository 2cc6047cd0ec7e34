// The planner: turns job definitions into run keys in the ledger.
//
// Each pass, for each configured job: records a new definition version when
// the schedule-defining settings changed, refreshes the partition set
// (static, or the output of partitions_command), plans every occurrence up
// to now + lookahead with one pending run per active partition and period,
// and releases due runs (misfire, catch-up, pause). Every step is a store
// transaction, so a crash anywhere leaves no duplicate and no hole: the next
// pass resumes from the watermark.
#ifndef CRONLEDGER_ENGINE_PLANNER_H_
#define CRONLEDGER_ENGINE_PLANNER_H_

#include <chrono>
#include <map>
#include <optional>
#include <string>

#include "config/config.h"
#include "cronledger/clock.h"
#include "engine/expected_runs.h"
#include "engine/job_definition.h"
#include "store/store.h"

namespace cronledger::engine {

struct PlannerOptions {
  // How far ahead of now occurrences are planned.
  std::chrono::seconds lookahead{60};
  // At most this many runs per planning transaction; a long downtime is
  // caught up in several transactions.
  int max_runs_per_transaction = 20000;
  // A job whose planning failed (store error, partitions never known) is
  // tried again after this.
  std::chrono::seconds retry_after{10};
  std::chrono::milliseconds partitions_timeout{60000};
};

struct PlanPassStats {
  int runs_planned = 0;
  int runs_deduplicated = 0;
  int released = 0;
  int skipped = 0;
};

// Not thread-safe: one pass at a time.
class Planner {
 public:
  // `config`, `store` and `clock` must outlive the planner. `clock` times
  // the partitions command; every ledger decision uses the `now` passed in.
  Planner(const config::Config& config, store::Store& store, Clock& clock,
          PlannerOptions options = {});

  // Plans every job whose next occurrence has come within the lookahead
  // (sync, partitions, plan); a job is planned on the first pass, then again
  // only when it has something new to plan. Keeps going after a job's error
  // (that job is tried again after `retry_after`) and returns the first one.
  Status PlanOnce(Clock::TimePoint now, PlanPassStats* stats = nullptr);

  // Releases the due runs of the jobs that have any (Store::RunReleaseOutlook).
  Status ReleaseOnce(Clock::TimePoint now, PlanPassStats* stats = nullptr);

  // When PlanOnce next has work: the earliest instant a job's next
  // occurrence enters the lookahead, or a failed job is retried.
  std::chrono::sys_seconds NextPlanAt() const;
  // The earliest planned run after the last ReleaseOnce (nullopt: none).
  std::optional<std::chrono::sys_seconds> NextReleaseAt() const { return next_release_at_; }

  // PlanOnce then ReleaseOnce.
  Status RunOnce(Clock::TimePoint now, PlanPassStats* stats = nullptr);

 private:
  // Plans `job` and sets `*next_plan_at` to when it next needs planning.
  Status PlanJob(const config::JobConfig& job, const std::string& definition, store::Instant now,
                 PlanPassStats* stats, std::chrono::sys_seconds* next_plan_at);
  // The current partition set, or nullopt when the command failed (already
  // reported).
  std::optional<std::vector<std::string>> Partitions(const config::JobConfig& job,
                                                     store::Instant now);

  const config::Config& config_;
  store::Store& store_;
  Clock& clock_;
  PlannerOptions options_;
  ScheduleCache schedules_;
  std::map<std::string, std::string> last_partition_failure_;
  struct PlanState {
    std::chrono::sys_seconds next_at;  // when the job next needs planning
    std::string definition;            // as planned; a change plans it at once
  };
  std::map<std::string, PlanState> plan_state_;  // per job
  std::optional<std::chrono::sys_seconds> next_release_at_;
};

}  // namespace cronledger::engine

#endif  // CRONLEDGER_ENGINE_PLANNER_H_
