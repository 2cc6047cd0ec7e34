// The gap scanner (docs/gaps.md; docs/architecture.md, invariant 4): recomputes
// the run keys a job was expected to have from its definition versions and
// partition history alone, compares them with the ledger, and reports every
// due key that is neither succeeded nor in flight (unless stuck), and, when
// asked, every waived key.
#ifndef CRONLEDGER_ENGINE_GAP_SCANNER_H_
#define CRONLEDGER_ENGINE_GAP_SCANNER_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "config/config.h"
#include "cronledger/status.h"
#include "engine/expected_runs.h"
#include "store/store.h"

namespace cronledger::engine {

// An expected run key of a job: the run it should have.
struct KeyAt {
  std::string partition;
  std::string period;
  std::string business_date;  // YYYY-MM-DD
  std::chrono::sys_seconds scheduled_at;
  int job_version = 0;     // the version in force at scheduled_at
  std::string local_time;  // RFC 3339 with the zone's offset
  // Dated from start_date, scheduled before the job was first recorded: an
  // operator's to run (ExpectedOccurrence::before_recorded).
  bool before_recorded = false;

  // The run it would have had, to queue (backfill, trigger).
  store::QueueKey ToQueueKey(const std::string& tzdata) const {
    return {partition, period, business_date, scheduled_at, job_version, local_time, tzdata};
  }
};

struct Gap : KeyAt {
  std::string job;
  // never_planned, misfired, failed, unknown, awaiting_approval, stuck; or,
  // waived: coalesced, catchup_none, overlap, paused, cancelled.
  std::string cause;
  bool waived = false;
  std::optional<int64_t> run_id;  // none for never_planned

  std::string RunKey() const { return job + "/" + partition + "/" + period; }
};

// One expected run key and what the ledger holds for it.
struct ExpectedKey : KeyAt {
  bool due = true;                        // scheduled at or before now
  const store::RunRecord* run = nullptr;  // valid during the call; null: never planned
  // As Gap::cause (never_planned, ..., or a waiver); empty when the key
  // succeeded, is in flight and not stuck, or is not due yet.
  std::string cause;
  bool waived = false;
};

struct GapScanParams {
  // Business dates, inclusive.
  std::chrono::year_month_day from;
  std::chrono::year_month_day to;
  store::Instant now;  // only keys due by now are expected
  bool include_waived = false;
  // ForEachKey: also the keys of the window scheduled after now (due false).
  bool include_not_due = false;
};

class GapScanner {
 public:
  explicit GapScanner(store::Store& store) : store_(store) {}

  // Calls `report` for each gap of `job` in the window, in the order of the
  // keys' scheduled times. A job the ledger has never seen (no versions)
  // expects nothing.
  Status Scan(const config::JobConfig& job, const GapScanParams& p,
              const std::function<Status(const Gap&)>& report);

  // Calls `fn` for every expected key of the window (due ones, and the
  // others with include_not_due), gap or not, in scheduled order.
  Status ForEachKey(const config::JobConfig& job, const GapScanParams& p,
                    const std::function<Status(const ExpectedKey&)>& fn);

 private:
  store::Store& store_;
  ScheduleCache schedules_;
};

}  // namespace cronledger::engine

#endif  // CRONLEDGER_ENGINE_GAP_SCANNER_H_
