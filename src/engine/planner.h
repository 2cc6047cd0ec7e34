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
#include <string>

#include "config/config.h"
#include "cronledger/clock.h"
#include "engine/job_definition.h"
#include "store/store.h"

namespace cronledger::engine {

struct PlannerOptions {
  // How far ahead of now occurrences are planned.
  std::chrono::seconds lookahead{60};
  // At most this many runs per planning transaction; a long downtime is
  // caught up in several transactions.
  int max_runs_per_transaction = 20000;
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

  // Plans every job (sync, partitions, plan). Keeps going after a job's
  // error and returns the first one.
  Status PlanOnce(Clock::TimePoint now, PlanPassStats* stats = nullptr);

  // Releases every job's due runs.
  Status ReleaseOnce(Clock::TimePoint now, PlanPassStats* stats = nullptr);

  // PlanOnce then ReleaseOnce.
  Status RunOnce(Clock::TimePoint now, PlanPassStats* stats = nullptr);

 private:
  Status PlanJob(const config::JobConfig& job, store::Instant now, PlanPassStats* stats);
  // The current partition set, or nullopt when the command failed (already
  // reported).
  std::optional<std::vector<std::string>> Partitions(const config::JobConfig& job,
                                                     store::Instant now);
  Result<const VersionedSchedule*> ScheduleOf(const store::JobVersion& v);

  const config::Config& config_;
  store::Store& store_;
  Clock& clock_;
  PlannerOptions options_;
  std::map<std::pair<std::string, int>, VersionedSchedule> schedules_;
  std::map<std::string, std::string> last_partition_failure_;
};

}  // namespace cronledger::engine

#endif  // CRONLEDGER_ENGINE_PLANNER_H_
