// Impact first (docs/gaps.md): what a backfill or a rerun of a window would
// find and queue, with a digest of the ledger it saw, and the action itself,
// which is refused whole when the ledger moved since. The command line and the
// HTTP API share it.
#ifndef CRONLEDGER_OPS_IMPACT_PREVIEW_H_
#define CRONLEDGER_OPS_IMPACT_PREVIEW_H_

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "cronledger/status.h"
#include "ops/actor_text.h"
#include "ops/input_values.h"  // RerunScope
#include "store/store.h"

namespace cronledger::ops {

enum class ImpactAction { kBackfill, kRerun };

struct ImpactRequest {
  ImpactAction action = ImpactAction::kBackfill;
  std::chrono::year_month_day from;  // business dates, inclusive
  std::chrono::year_month_day to;
  std::vector<std::string> partitions;  // empty: every expected partition
  // Also waived keys: skipped and cancelled ones.
  bool include_waived = false;
  RerunScope only = RerunScope::kAll;
  // Rerun: succeeded runs too, and every queued run starts again at its
  // first step. Committed effects are replayed, never sent again.
  bool force = false;
};

struct ImpactPreview {
  ImpactAction action = ImpactAction::kBackfill;
  int expected = 0, succeeded = 0, failed = 0, unknown = 0, missing = 0, waived = 0,
      in_progress = 0, effects_committed = 0;
  // Rerun without force: succeeded runs in scope that stay as they are.
  int succeeded_left_alone = 0;
  std::vector<store::RequeueKey> keys;  // what it would queue, and the state seen
  std::vector<std::string> would_queue;  // their run keys
  // Backfill: of would_queue, the keys awaiting approval it approves.
  int awaiting_approval = 0;
  // Keys in the window it leaves alone (succeeded ones aside), each with
  // why and the command that would queue it (empty: none needed, e.g. in
  // flight); the first kNotQueuedListed of not_queued_total.
  struct NotQueued {
    std::string run_key;
    std::string why;
    std::string command;
  };
  std::vector<NotQueued> not_queued;
  int not_queued_total = 0;
  std::string digest;  // sha256 over every expected key's state and the request

  // The preview document (docs/api.md); a rerun's adds succeeded_left_alone.
  nlohmann::ordered_json Json() const;
};

Result<ImpactPreview> PreviewImpact(store::Store& store, const config::JobConfig& job,
                                    const ImpactRequest& request, store::Instant now);

struct ImpactOutcome {
  enum class Kind {
    kDone,          // queued: result
    kStale,         // the ledger no longer matches the preview: preview is the new one
    kNothingToDo,   // the preview queues nothing
  };
  Kind kind = Kind::kDone;
  store::RequeueResult result;
  ImpactPreview preview;  // the one acted on, or the new one when stale
};

// Acts: recomputes the preview, refuses (kStale) when `preview_digest` is
// given and differs, then queues its keys as one action event; a ledger
// moving between the preview and the write is also kStale (the store
// compares every key's state in the same transaction).
Result<ImpactOutcome> ApplyImpact(store::Store& store, const config::JobConfig& job,
                                  const ImpactRequest& request,
                                  const std::optional<std::string>& preview_digest,
                                  const Actor& who, store::Instant now);

}  // namespace cronledger::ops

#endif  // CRONLEDGER_OPS_IMPACT_PREVIEW_H_
