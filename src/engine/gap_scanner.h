// The gap scanner (DESIGN.md: gap, waived, invariant 4): recomputes the run
// keys a job was expected to have from its definition versions and
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

struct Gap {
  std::string job;
  std::string partition;
  std::string period;
  std::string business_date;  // YYYY-MM-DD
  std::chrono::sys_seconds scheduled_at;
  // never_planned, misfired, failed, unknown, awaiting_approval, stuck; or,
  // waived: coalesced, catchup_none, overlap, paused, cancelled.
  std::string cause;
  bool waived = false;
  std::optional<int64_t> run_id;  // none for never_planned

  std::string RunKey() const { return job + "/" + partition + "/" + period; }
};

struct GapScanParams {
  // Business dates, inclusive.
  std::chrono::year_month_day from;
  std::chrono::year_month_day to;
  store::Instant now;  // only keys due by now are expected
  bool include_waived = false;
};

class GapScanner {
 public:
  explicit GapScanner(store::Store& store) : store_(store) {}

  // Calls `report` for each gap of `job` in the window, in the order of the
  // keys' scheduled times. A job the ledger has never seen (no versions)
  // expects nothing.
  Status Scan(const config::JobConfig& job, const GapScanParams& p,
              const std::function<Status(const Gap&)>& report);

 private:
  store::Store& store_;
  ScheduleCache schedules_;
};

}  // namespace cronledger::engine

#endif  // CRONLEDGER_ENGINE_GAP_SCANNER_H_
