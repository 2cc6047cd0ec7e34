// Params and results of recovery: the gap scanner's and operators' backfill,
// reruns, triggers and approvals.
#ifndef CRONLEDGER_STORE_RECOVERY_H_
#define CRONLEDGER_STORE_RECOVERY_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ledger/names.h"
#include "store/records.h"

namespace cronledger::store {

// An expected key to queue, with the run (and occurrence) it would have had:
// a backfilled run keeps its run key, business date and scheduled time.
struct QueueKey {
  std::string partition;
  std::string period;
  std::string business_date;
  std::chrono::sys_seconds scheduled_at;
  int job_version = 0;
  std::string local_time;  // of the occurrence, recorded if it was never planned
  std::string tzdata;
};

struct QueueKeysParams {
  std::string job;
  std::vector<QueueKey> keys;
  // kPending (released, misfire-exempt) or kAwaitingApproval.
  ledger::RunState as = ledger::RunState::kPending;
  // Also requeue keys skipped on purpose (coalesced, catchup_none, overlap,
  // paused), not only never-planned and misfired ones.
  bool include_waived = false;
  std::string event_type = "backfill";  // one event per queued key; "" for none
  std::string actor;                    // who called: the API token's name, locally the OS user
  std::string reason;
  std::optional<Instant> now;  // none: the ledger's clock (Store)
  // Last, so that positional initialisers keep their meaning.
  std::string on_behalf_of = {};  // the name given to act for (`--by`); empty: none
};

struct QueueKeysResult {
  std::vector<int64_t> queued;            // run ids, in key order
  std::vector<std::string> left_alone;    // run keys in a state this does not move
};

// One key of an operator's action over many keys (backfill, rerun,
// trigger), with what the operator's preview saw of it: the action is
// refused, whole, when the ledger no longer matches.
struct RequeueKey {
  QueueKey key;
  std::optional<ledger::RunState> seen;  // none: the preview saw no run
};

struct RequeueParams {
  std::string job;
  std::vector<RequeueKey> keys;
  // Queued runs start again at their first step (a forced rerun), not at
  // the first step not succeeded. A succeeded run is always restarted so.
  bool from_first_step = false;
  std::string event_type;  // backfill, rerun, trigger
  std::string actor;       // who called: the API token's name, locally the OS user
  std::string reason;
  std::string details = "{}";  // a JSON object; the store adds run_keys and run_ids
  std::optional<Instant> now;  // none: the ledger's clock (Store)
  // Last, so that positional initialisers keep their meaning.
  std::string on_behalf_of = {};  // the name given to act for (`--by`); empty: none
};

struct RequeueResult {
  int64_t event_id = 0;
  std::vector<int64_t> queued;  // run ids, in key order
};

struct ApproveParams {
  std::string job;
  std::optional<int64_t> run_id;          // one run, or
  std::optional<std::string> from, to;    // business dates, inclusive
  std::string actor;                      // who called: the API token's name, locally the OS user
  std::string reason;
  std::optional<Instant> now;  // none: the ledger's clock (Store)
  // Last, so that positional initialisers keep their meaning.
  std::string on_behalf_of = {};  // the name given to act for (`--by`); empty: none
};

}  // namespace cronledger::store

#endif  // CRONLEDGER_STORE_RECOVERY_H_
