// The storage seam. Every method is one whole transaction: it either
// happens completely or not at all.
//
// One instant per call. Every decision of a call (what is due, which lease
// has lapsed, the timestamps it writes, the instants it answers) is made at
// one instant, its `now`:
// - A `now` given in the params (or as a read's argument) pins it. Tests pin
//   it; SQLite, one machine, has no clock of its own and needs it (a write
//   without one is kInvalidArgument): callers pass their Clock's now.
// - PostgreSQL with PostgresOptions::database_clock (production) ignores the
//   caller's `now` and reads the server's clock once, inside the call's own
//   transaction, in the round trip that begins it (a read of one statement:
//   in that statement), so that nodes whose clocks disagree still agree on
//   what is due and which lease lapsed. Callers pass their now all the same,
//   so that one caller's code runs on both engines. Without database_clock
//   a given `now` is used and a missing one is the server's.
// An event given to EventAppend(All) is stamped the same way (its `at` is
// the pin). LedgerNow reads the instant a pass should plan by.
//
// Not a stable API: embedders use include/cronledger, not this.
// Implementations: SqliteStore (store/sqlite), PostgresStore (store/postgres).
// Every behaviour here is tested by the conformance suite in tests/store,
// on PostgreSQL both pinned and on the database's clock.
#ifndef CRONLEDGER_STORE_STORE_H_
#define CRONLEDGER_STORE_STORE_H_

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cronledger/status.h"
#include "store/effects.h"
#include "store/execution.h"
#include "store/nodes.h"
#include "store/planning.h"
#include "store/queries.h"
#include "store/records.h"
#include "store/recovery.h"

namespace cronledger::store {

class Store {
 public:
  virtual ~Store() = default;

  // "sqlite", "postgresql".
  virtual std::string_view Name() const = 0;
  virtual Result<SchemaInfo> GetSchemaInfo() = 0;

  // The instant the ledger's decisions are made at: `local` (the caller's
  // clock) on SQLite, the database server's clock on PostgreSQL with
  // database_clock (docs/architecture.md, Time): what a pass plans
  // occurrences up to and sleeps until the next of. One round trip; the
  // calls themselves do not need it.
  virtual Result<Instant> LedgerNow(Instant local) = 0;

  // Creates the job if new and records a new version when `definition`
  // differs from the current one, effective from max(now, planned_through +
  // 1s) so nothing already planned is judged by it; appends config_changed
  // with the difference.
  virtual Result<JobSyncResult> JobSync(const JobSyncParams& p) = 0;
  virtual Result<std::vector<JobRecord>> JobList() = 0;
  virtual Result<JobRecord> JobGet(std::string_view job) = 0;
  virtual Result<std::vector<JobVersion>> JobVersionList(std::string_view job) = 0;

  // Makes `active` the partition set: new members start, missing ones end,
  // both at max(now, planned_through + 1s). Appends partitions_changed when
  // anything changed.
  virtual Result<PartitionSyncResult> PartitionSync(const PartitionSyncParams& p) = 0;
  virtual Result<std::vector<PartitionInterval>> PartitionHistory(std::string_view job) = 0;

  // Records occurrences not recorded before, one pending run per (partition,
  // period) not present before (a `planned` event each) and a `deduplicated`
  // event for a period that already has a run; then advances the job's
  // watermark to max(old, planned_through). Idempotent.
  virtual Result<PlanResult> RunPlan(const PlanParams& p) = 0;

  // Judges the job's pending, unreleased runs scheduled at or before now
  // (ledger::DecideRelease): released ones become claimable, the others
  // skipped with a reason and a `skipped` event.
  virtual Result<ReleaseResult> RunRelease(const ReleaseParams& p) = 0;

  // Which jobs RunRelease has work for at `now`, and when it next will: so
  // an idle server wakes when something falls due instead of asking every
  // job every second.
  virtual Result<ReleaseOutlook> RunReleaseOutlook(std::optional<Instant> now) = 0;

  // Pause or resume a job or everything, with a paused/resumed event.
  // kConflict when it is already in that state; kNotFound for an unknown
  // job. (Runs held while paused were marked exempt by RunRelease.)
  virtual Status JobSetPaused(const PauseParams& p) = 0;
  virtual Result<bool> IsPausedAll() = 0;

  virtual Result<std::vector<RunRecord>> RunList(const RunQuery& q) = 0;
  virtual Result<RunRecord> RunGet(int64_t id) = 0;
  // Replaces `page` with the next rows of q (at most q.limit; none: the end),
  // reusing its records' storage: a scan of a million runs reads them
  // through one page without an allocation per row.
  virtual Status RunListByDate(const RunDateQuery& q, std::vector<RunRecord>* page) = 0;
  // Released pending runs that are due, oldest first: what a dispatcher
  // claims from.
  virtual Result<std::vector<RunRecord>> RunListDue(std::optional<Instant> now, int limit) = 0;

  virtual Status EventAppend(const EventRecord& e) = 0;
  // Every event in one transaction, in order: all or none.
  virtual Status EventAppendAll(const std::vector<EventRecord>& events) = 0;
  virtual Result<std::vector<EventRecord>> EventList(const EventQuery& q) = 0;
  // The stale_write_rejected events this Store committed since it was
  // opened (a worker's, an effect's, a checkpoint's, an external worker's
  // write refused): this process's share of the ledger's rejections, for
  // cronledger_stale_writes_rejected_total. Safe from any thread.
  virtual int64_t StaleWritesRejected() const = 0;

  virtual Result<JobStats> StatsGet(const StatsParams& p) = 0;
  // Aggregates over the whole ledger for GET /metrics: a handful of GROUP BY
  // queries, one read transaction.
  virtual Result<LedgerMetrics> MetricsGet(const LedgerMetricsParams& p) = 0;

  // ---- execution ----

  // Claims up to `limit` claimable runs (released, pending, due, past any
  // backoff, of a job not paused and with everything not paused — a run
  // released before a pause waits too) of the jobs in `rules`, oldest first, honouring each job's
  // max_concurrency and overlap (queue: wait while an earlier run of the
  // partition is pending or running; skip: skip it (overlap) while one is
  // running; allow). Each claim takes the next fencing token, sets the
  // lease, opens an attempt and appends `claimed`, and starts the first step
  // not yet succeeded (`running`, step_started): the claimant begins at once.
  // One transaction.
  virtual Result<std::vector<ClaimedRun>> RunClaim(const ClaimParams& p) = 0;

  // Extends the lease to now + lease_ttl. kStaleLease (and a
  // stale_write_rejected event) when `token` is not the run's current one.
  virtual Status RunHeartbeat(const HeartbeatParams& p) = 0;

  // Records a step's state for the attempt holding `token`; fenced like
  // RunHeartbeat. Appends step_started / step_succeeded / step_failed.
  virtual Status StepUpdate(const StepParams& p) = 0;

  // Closes attempts and applies their decisions, each fenced by its own
  // token (a stale one changes nothing: kStaleLease in its slot and a
  // stale_write_rejected event). All in one transaction: nothing in the
  // batch is acknowledged before it commits.
  virtual Result<std::vector<Status>> RunFinishAttempts(const std::vector<FinishParams>& p) = 0;

  // Group commit of many workers' writes: each applied as StepUpdate then
  // RunFinishAttempts would, fenced by its own token, with its own answer in
  // its slot (a refused write changes nothing of its own but does not stop
  // the others). One transaction: nothing is acknowledged before it
  // commits, and a database failure fails them all.
  virtual Result<std::vector<Status>> RunApplyWrites(const std::vector<WorkerWrite>& writes) = 0;

  // Running runs whose lease expired before `now`.
  virtual Result<std::vector<ExpiredLease>> RunListExpiredLeases(std::optional<Instant> now, int limit) = 0;

  // The lease of a running run (whether or not it has expired). kNotFound
  // for no such run; kFailedPrecondition naming the state for a run that is
  // not running. A read: a write based on it is still fenced by its token.
  virtual Result<RunLease> RunGetLease(int64_t run_id) = 0;

  // Operator: a failed or unknown run back to pending as a new attempt on
  // the same run key, with a fresh retry budget; appends `retry`.
  // kConflict for a run in another state, kNotFound for no such run.
  virtual Status RunRetry(const OperatorParams& p) = 0;

  virtual Result<std::vector<AttemptRecord>> AttemptList(int64_t run_id) = 0;
  virtual Result<std::vector<StepState>> StepList(int64_t run_id) = 0;

  // ---- effects and checkpoints (docs/effects.md) ----
  //
  // Worker writes name the attempt's token and are fenced like StepUpdate: a
  // token that is not the run's current one changes nothing, appends
  // stale_write_rejected and answers kStaleLease. kNotFound for no such run,
  // kInvalidArgument for an empty or oversized key. Each is one transaction.

  // Begins the effect `key` of the run's job:
  // - no record: records it `started` by this attempt (effect_started),
  //   kProceed;
  // - a different fingerprint, whatever the state: kFailedPrecondition
  //   naming both fingerprints, nothing changes;
  // - `committed`: kReplay with the stored result, nothing written;
  // - `failed`: started again by this attempt (effect_started), kProceed;
  // - `started` by this attempt: kProceed again, nothing written;
  // - `started` by another attempt that still holds its run's lease (two
  //   runs of the job racing on the key): kConflict ("in progress"), nothing
  //   written: exactly one proceeds;
  // - `started` by an attempt that is over: kInDoubt (effect_in_doubt, the
  //   finder recorded on the effect).
  virtual Result<EffectBeginResult> EffectBegin(const EffectBeginParams& p) = 0;

  // Settles a `started` effect as committed, storing the result, and writes
  // `checkpoint` in the same transaction. Allowed for an effect started by
  // this attempt (effect_committed) or one this attempt found in doubt
  // (effect_reconciled, `as: committed`: its reconciliation said it
  // happened). Committing again by the same attempt is a no-op. kNotFound
  // for an unknown key; kConflict when it is settled otherwise, in progress
  // elsewhere, or in doubt but not begun by this attempt.
  virtual Status EffectCommit(const EffectCommitParams& p) = 0;

  // Settles a `started` effect as failed (it did not happen; a later begin
  // does it again): effect_failed, or effect_reconciled (`as: failed`) for
  // one this attempt found in doubt. Same answers as EffectCommit.
  virtual Status EffectFail(const EffectFailParams& p) = 0;

  // Operator (no token): for an `unknown` run and a `started` effect of its
  // job that is in doubt for it (started by the run or found in doubt by
  // it), settles the effect as committed or failed (settled_by = actor) and,
  // when none of the run's effects is in doubt any more, puts the run back
  // to pending as RunRetry does (released, misfire-exempt, fresh budget).
  // One `resolve` event with actor and reason. kNotFound for no such run or
  // effect; kConflict for a run not unknown or an effect not in doubt.
  virtual Result<EffectResolveResult> EffectResolve(const EffectResolveParams& p) = 0;

  // Operator: an `unknown` run with no effect in doubt becomes succeeded,
  // failed or (retry) pending as RunRetry does; a `resolve` event.
  // kConflict when the run is not unknown or an effect is still in doubt
  // for it (the message names them); kNotFound for no such run.
  virtual Status RunResolve(const RunResolveParams& p) = 0;

  // The effects a run started or found in doubt, oldest first.
  virtual Result<std::vector<EffectRecord>> EffectList(int64_t run_id) = 0;
  // kNotFound when the job has no effect with that key.
  virtual Result<EffectRecord> EffectGet(std::string_view job, std::string_view key) = 0;

  // The run's watermark and its partition's (each absent until written).
  // kNotFound for no such run.
  virtual Result<Checkpoints> CheckpointGet(int64_t run_id) = 0;
  // Writes a watermark, fenced by the token. No event (watermarks move
  // often; effect_committed records one written with an effect).
  virtual Status CheckpointSet(const CheckpointSetParams& p) = 0;

  // Queues expected keys that were never planned (a new run) or were
  // skipped as misfired (or, with include_waived, skipped on purpose) as
  // `as`, in one transaction, appending `event_type` (unless empty) per
  // queued key with actor and reason. Keys in any other state are left alone and listed.
  // kNotFound for a job the ledger does not know.
  virtual Result<QueueKeysResult> RunQueueKeys(const QueueKeysParams& p) = 0;

  // Operator: puts every key back to work in one transaction as one event
  // (`event_type`, with the run keys and ids in its details; each run's
  // history shows it) that the runs' next attempts link to. A key never
  // planned becomes a new run; a run in an end state (succeeded, failed,
  // unknown, skipped, cancelled, awaiting_approval) becomes pending
  // (released, misfire-exempt, fresh retry budget). kFailedPrecondition,
  // with nothing written, when a key's run is not in the state `seen` says
  // (the message names the key and both states); kConflict for a key in
  // flight; kInvalidArgument for no keys; kNotFound for an unknown job.
  virtual Result<RequeueResult> RunRequeue(const RequeueParams& p) = 0;

  // awaiting_approval → pending (released, misfire-exempt) for one run or
  // the job's runs of a date range; one `approve` event per run. Returns
  // the approved run ids. kNotFound / kConflict for a run id that does not
  // exist / is not awaiting approval.
  virtual Result<std::vector<int64_t>> RunApprove(const ApproveParams& p) = 0;

  // Operator: a pending, awaiting_approval, failed or unknown run becomes
  // cancelled (waived); a `cancel` event. kConflict for a run in another
  // state (a running one finishes or is fenced first), kNotFound for none.
  virtual Status RunCancel(const OperatorParams& p) = 0;

  // Group commit of many workers' effect writes (engine::EffectWriter): the
  // ops `source` hands over, each applied in order as the call of its params
  // would apply it alone, fenced by its own token, with its own answer in
  // `status` (and `begun`). A refused op does not stop the others and
  // leaves nothing of its own behind but what the call alone would keep (a
  // stale op's stale_write_rejected event); a later op sees what earlier
  // ones wrote. One transaction: nothing is acknowledged before it commits.
  // A database failure (at any statement or at the commit) rolls the whole
  // batch back, answers every op taken from `source` with it (a malformed
  // op, e.g. an empty key, keeps its kInvalidArgument) and is returned;
  // otherwise ok.
  virtual Status RunEffectBatch(EffectOpSource& source) = 0;
  // The same for ops all known at the call.
  Status RunEffectBatch(std::span<EffectOp> ops);

  // ---- nodes and retention ----

  // Calls `wake`, from a thread of the store's, whenever another process
  // may have made runs claimable (PostgreSQL: LISTEN/NOTIFY on the releases,
  // retries and requeues of every node), so that an idle dispatcher claims
  // at once instead of at its next poll. Once per store; stops when the
  // store is destroyed. SQLite: never called (one node; its passes poll).
  // Whether WatchForWork wakes on other writers' work (then a caller's
  // polling is only a safety net and may be slow).
  virtual bool NotifiesWork() const { return false; }
  // Whether worker writes committed through a second store on the same
  // database run beside this one's claims instead of waiting for them
  // (PostgreSQL: sql::WriteKind). SQLite has one writer; a second
  // connection would only queue.
  virtual bool WritesBesideClaims() const { return false; }
  virtual void WatchForWork(std::function<void()> wake) { (void)wake; }

  // Records that `node` is alive now (inserting it the first time).
  virtual Status NodeHeartbeat(const NodeBeat& b) = 0;
  // Records that `node` stopped cleanly now: its last beat. Only the
  // process that beats as it (the same started_at) is marked; another one
  // with that name since is left alone.
  virtual Status NodeStopped(const NodeBeat& b) = 0;
  // Every node that ever beat, by name, with the runs it holds leases on.
  virtual Result<std::vector<NodeRecord>> NodeList() = 0;
  // Takes the role for `node` when nobody holds it or its holder's lease
  // has expired (before `now`), renews it when `node` holds it; in one
  // statement, so two nodes asking at once never both get it. Returns
  // whether `node` holds it now.
  virtual Result<bool> RoleHold(const RoleParams& p) = 0;
  // Gives `role` up when `node` holds it (a clean shutdown), so that the
  // next node to ask takes it at once instead of after the lease.
  virtual Status RoleRelease(const std::string& role, const std::string& node) = 0;

  // Dashboard sessions and login codes. GrantPut records `g` and forgets
  // grants expired by `now`; of sessions it keeps at most `max_sessions`,
  // ending the oldest. GrantGet finds one not expired at `now`. GrantTake
  // spends a login code: it is deleted, and returned when it was not
  // expired (so two nodes redeeming one code at once never both get it).
  virtual Status GrantPut(const DashboardGrant& g, Instant now, std::size_t max_sessions) = 0;
  virtual Result<std::optional<DashboardGrant>> GrantGet(std::string_view digest, Instant now) = 0;
  virtual Result<std::optional<DashboardGrant>> GrantTake(std::string_view digest, Instant now) = 0;
  virtual Status GrantDelete(std::string_view digest) = 0;

  // Ledger retention: deletes up to `limit` finished runs (succeeded,
  // failed, skipped, cancelled) last changed before `before`, oldest first,
  // with their attempts, steps, events, effects (those they started) and
  // run checkpoints, in one transaction; then, when fewer than `limit` were
  // left, events about no run older than `before` that no remaining run
  // refers to. Never a run in any other state, and never the run that wrote
  // a partition's current watermark (the watermark is the partition's).
  virtual Result<PurgeResult> RunPurge(const PurgeParams& p) = 0;
};

inline Status Store::RunEffectBatch(std::span<EffectOp> ops) {
  struct Once final : EffectOpSource {
    std::span<EffectOp> ops;
    std::span<EffectOp> Next() override { return std::exchange(ops, {}); }
  } once;
  once.ops = ops;
  return RunEffectBatch(once);
}

}  // namespace cronledger::store

#endif  // CRONLEDGER_STORE_STORE_H_
