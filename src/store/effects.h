// Params and records of effects and checkpoints (docs/effects.md), and the
// ops of their group commit.
#ifndef CRONLEDGER_STORE_EFFECTS_H_
#define CRONLEDGER_STORE_EFFECTS_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "cronledger/status.h"
#include "ledger/names.h"
#include "store/records.h"

namespace cronledger::store {

// One external side effect under an idempotency key, scoped to its job.
struct EffectRecord {
  int64_t id = 0;
  std::string job;
  std::string key;
  std::string fingerprint;  // "" by default
  ledger::EffectState state = ledger::EffectState::kStarted;
  // What the effect's command answered when it was settled (committed:
  // exit 0 and its stdout, capped by the caller; failed: its status).
  std::optional<int> exit_status;
  std::string result;
  // The run and attempt that (last) started it: a failed effect that a
  // later attempt does again is started anew by that attempt.
  int64_t run_id = 0;
  std::string run_key;
  int started_attempt = 0;
  int64_t started_token = 0;
  // Who settled it: the attempt that committed or failed it, or the
  // operator (settled_by) who resolved it.
  std::optional<int> settled_attempt;
  std::optional<int64_t> settled_token;
  std::string settled_by;
  // The run and attempt that last found it in doubt (another run of the job
  // may find it: keys are per job).
  std::optional<int64_t> doubt_run_id;
  std::optional<int64_t> doubt_token;
  std::string started_request;  // see EffectBeginParams::request
  Instant started_at;
  Instant updated_at;
};

// A worker's begin, fenced by its attempt's token. The job is the run's.
struct EffectBeginParams {
  int64_t run_id = 0;
  int64_t token = 0;
  std::string key;          // 1 to kMaxEffectKeyBytes bytes
  std::string fingerprint;  // what the effect is about; "" by default
  std::optional<Instant> now;  // none: the ledger's clock (Store)
  std::string node;         // actor of the events
  // Names one call of the caller (`effect run` invocation, ctx.Effect call):
  // the same request asking again goes on; a different request of the same
  // attempt finds the key in doubt. "" counts as the same request.
  std::string request;
};
inline constexpr std::size_t kMaxEffectKeyBytes = 1024;

enum class EffectBeginOutcome {
  // Do the effect now: the key is recorded `started` by this attempt
  // (durable before the answer), first time, or again after `failed`, or
  // this attempt began it already.
  kProceed,
  // Already committed: do not do it again; `effect` holds the stored exit
  // status and result. Nothing was written.
  kReplay,
  // `started` by an attempt that is over without settling it: it may or may
  // not have happened. Reconcile, then EffectCommit (it happened) or
  // EffectFail and begin again (it did not), or stop: the run must become
  // `unknown`. The finding is recorded (doubt_run_id/doubt_token, an
  // effect_in_doubt event).
  kInDoubt,
};

struct EffectBeginResult {
  EffectBeginOutcome outcome = EffectBeginOutcome::kProceed;
  EffectRecord effect;  // as stored after the begin
};

// A watermark to write with an effect's commit, in the same transaction.
struct CheckpointWrite {
  ledger::CheckpointScope scope = ledger::CheckpointScope::kRun;
  std::string value;
};

struct EffectCommitParams {
  int64_t run_id = 0;
  int64_t token = 0;
  std::string key;
  std::optional<int> exit_status;  // normally 0
  std::string result;              // stdout, capped by the caller
  std::optional<CheckpointWrite> checkpoint;
  std::optional<Instant> now;  // none: the ledger's clock (Store)
  std::string node;
};

struct EffectFailParams {
  int64_t run_id = 0;
  int64_t token = 0;
  std::string key;
  std::optional<int> exit_status;
  std::string result;
  std::optional<Instant> now;  // none: the ledger's clock (Store)
  std::string node;
};

// Operator: settle an effect in doubt of an `unknown` run by their word.
struct EffectResolveParams {
  int64_t run_id = 0;
  std::string key;
  ledger::EffectState as = ledger::EffectState::kCommitted;  // committed | failed
  std::string actor;  // who called: the API token's name, locally the OS user
  std::string reason;
  std::optional<Instant> now;  // none: the ledger's clock (Store)
  // Last, so that positional initialisers keep their meaning.
  std::string on_behalf_of = {};  // the name given to act for (`--by`); empty: none
};
struct EffectResolveResult {
  // kPending when no effect of the run is in doubt any more; kUnknown while
  // others still are (listed in still_in_doubt, to be resolved in turn).
  ledger::RunState run_state = ledger::RunState::kPending;
  std::vector<std::string> still_in_doubt;
};

// Operator: settle an `unknown` run that has no effect in doubt.
enum class RunResolution { kSucceeded, kFailed, kRetry };
std::string_view Name(RunResolution r);
std::optional<RunResolution> ParseRunResolution(std::string_view s);

struct RunResolveParams {
  int64_t run_id = 0;
  RunResolution as = RunResolution::kRetry;
  std::string actor;  // who called: the API token's name, locally the OS user
  std::string reason;
  std::optional<Instant> now;  // none: the ledger's clock (Store)
  // Last, so that positional initialisers keep their meaning.
  std::string on_behalf_of = {};  // the name given to act for (`--by`); empty: none
};

struct CheckpointRecord {
  ledger::CheckpointScope scope = ledger::CheckpointScope::kRun;
  std::string job;
  std::string partition;
  std::optional<int64_t> run_id;  // scope run only
  std::string value;
  Instant updated_at;
  int64_t writer_run_id = 0;  // the attempt that wrote this value
  int64_t writer_token = 0;
};

// The watermarks a run sees: its own, and its job+partition's.
struct Checkpoints {
  std::optional<CheckpointRecord> run;
  std::optional<CheckpointRecord> partition;
};

struct CheckpointSetParams {
  int64_t run_id = 0;
  int64_t token = 0;
  ledger::CheckpointScope scope = ledger::CheckpointScope::kRun;
  std::string value;
  std::optional<Instant> now;  // none: the ledger's clock (Store)
  std::string node;
};


// One worker write of the effect ledger for RunEffectBatch: the request,
// and its answer, filled in by the store. The answers are those of the call
// of the same params (EffectBegin, EffectCommit, EffectFail, CheckpointSet).
struct EffectOp {
  std::variant<EffectBeginParams, EffectCommitParams, EffectFailParams, CheckpointSetParams>
      request;
  Status status;             // the op's own answer: ok, kStaleLease, kConflict, ...
  EffectBeginResult begun;   // a begin's answer, when `status` is ok
};

// Where RunEffectBatch takes its ops from: the store asks for more until it
// gets none, applying each lot as it comes, then commits. A group committer
// hands over what was queued when it started and then, lot by lot, what
// queued while the store was applying the earlier ones, so that callers
// arriving during a batch's work join it instead of waiting for the next
// commit. The ops stay the source's: each span must stay valid, and its
// ops in place, until RunEffectBatch returns; their answers are written
// there.
class EffectOpSource {
 public:
  virtual ~EffectOpSource() = default;
  // The next ops to apply in the same transaction; empty: no more.
  virtual std::span<EffectOp> Next() = 0;
};

}  // namespace cronledger::store

#endif  // CRONLEDGER_STORE_EFFECTS_H_
