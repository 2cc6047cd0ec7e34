// The storage seam. Every method is one whole transaction: it either
// happens completely or not at all, and it takes the instant it should
// consider "now" as a parameter (tests pin it; on PostgreSQL production
// passes nullopt and the database clock decides).
//
// Not a stable API: embedders use include/cronledger, not this.
// Implementations: SqliteStore (store/sqlite), PostgreSQL (a later issue).
// Every behaviour here is tested by the conformance suite in tests/store.
#ifndef CRONLEDGER_STORE_STORE_H_
#define CRONLEDGER_STORE_STORE_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "cronledger/status.h"
#include "config/config.h"
#include "ledger/attempt_policy.h"
#include "ledger/names.h"
#include "ledger/release_policy.h"

namespace cronledger::store {

using Instant = std::chrono::sys_time<std::chrono::milliseconds>;

Instant ToInstant(std::chrono::system_clock::time_point t);

// ---- records ------------------------------------------------------------

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
  std::string actor;          // "planner", "scanner", an operator's name
  std::string reason;
  std::string details = "{}";  // a JSON object
};

// ---- params and results ---------------------------------------------------

struct JobSyncParams {
  std::string job;
  std::string definition;  // canonical JSON
  Instant now;
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
  Instant now;
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
  Instant now;
};
struct PlanResult {
  int occurrences_new = 0;  // occurrences not planned before
  int runs_planned = 0;
  int runs_deduplicated = 0;  // a later occurrence of an already planned period
};

struct ReleaseParams {
  std::string job;
  ledger::ReleasePolicy policy;  // `paused` is filled in by the store
  Instant now;
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
  std::string actor;
  std::string reason;
  Instant now;
};

struct RunQuery {
  std::optional<std::string> job;
  std::optional<std::string> business_date;
  std::optional<ledger::RunState> state;
  std::optional<std::string> partition;
  std::optional<int64_t> before_id;  // cursor: ids < before_id (newest first)
  int limit = 100;
};

// The runs of one job over a range of business dates, in (business_date, id)
// order, a page at a time: how the gap scanner reads a whole window without
// holding it. The next page starts after the last row of the previous one.
struct RunDateQuery {
  std::string job;
  std::string from_date;  // YYYY-MM-DD, inclusive
  std::string to_date;    // YYYY-MM-DD, inclusive
  // Cursor: only rows after this (business_date, id).
  std::optional<std::pair<std::string, int64_t>> after;
  int limit = 1000;
};

struct EventQuery {
  std::optional<std::string> job;
  std::optional<int64_t> run_id;
  std::optional<Instant> since;
  std::optional<std::string> type;
  int limit = 100;  // newest `limit` events, returned oldest first
};

struct StatsParams {
  std::string job;
  std::string business_date;  // the date to count
  Instant now;
  std::chrono::sys_seconds horizon_from;  // lag considers runs scheduled at or after this
};
struct JobStats {
  std::string job;
  std::map<std::string, int> by_state;   // run state name -> count, for business_date
  std::map<std::string, int> by_reason;  // skip reason -> count, for business_date
  std::optional<Instant> last_success_at;
  std::string last_success_business_date;
  // The oldest due run in the horizon that is neither succeeded nor waived.
  std::optional<std::chrono::sys_seconds> oldest_open_scheduled_at;
  int in_flight = 0;  // pending or running, any date
  int unknown_total = 0;   // runs in `unknown`, any date
  int expired_leases = 0;  // running runs whose lease expired before now
  // step name -> step state -> count, for business_date's due runs.
  std::map<std::string, std::map<std::string, int>> steps;
};

// ---- metrics: ledger-wide aggregates (GET /metrics) --------------------------

struct LedgerMetricsParams {
  // Upper bounds (inclusive, ascending) of the attempt-duration histogram.
  std::vector<std::chrono::milliseconds> duration_bounds;
  // The event types that count as manual recoveries.
  std::vector<std::string> recovery_events;
  // Events by this actor are automatic, not manual ("scanner").
  std::string automatic_actor;
};
struct DurationHistogram {
  std::vector<int64_t> cumulative;  // attempts at or under each bound, in order
  int64_t count = 0;                // every ended attempt
  int64_t sum_ms = 0;
};
// Everything counted over the whole ledger (every date), by job.
struct LedgerMetrics {
  std::map<std::string, std::map<std::string, int64_t>> runs;      // job -> run state -> runs
  std::map<std::string, std::map<std::string, int64_t>> attempts;  // job -> end class -> ended
  // job -> succeeded attempts whose previous attempt did not succeed.
  std::map<std::string, int64_t> retry_successes;
  std::map<std::string, std::map<std::string, int64_t>> recoveries;  // job -> event type -> events
  std::map<std::string, DurationHistogram> durations;  // job -> ended attempts' durations
};

// ---- execution: claims, leases, attempts, steps -----------------------------

// How the runs of one job may be claimed by the caller.
struct ClaimRule {
  std::string job;
  std::chrono::milliseconds lease_ttl{3600000};
  int max_concurrency = 0;  // running runs of the job at most; 0: no limit
  config::Overlap overlap = config::Overlap::kQueue;
  std::vector<std::string> steps;  // the job's steps, in order
};

struct ClaimParams {
  Instant now;
  std::string node;
  int limit = 1;
  std::vector<ClaimRule> rules;  // only these jobs are claimed
};

struct StepState {
  std::string name;
  ledger::StepStatus state = ledger::StepStatus::kPending;
  friend bool operator==(const StepState&, const StepState&) = default;
};

struct ClaimedRun {
  RunRecord run;
  int attempt = 0;          // this attempt's number (1 for the first)
  int64_t token = 0;        // its fencing token
  Instant lease_expires_at;
  int budget_attempts = 0;  // attempts in the retry budget, this one included
  Instant budget_started_at;
  std::vector<StepState> steps;  // in order; a retry resumes at the first not succeeded
};

struct HeartbeatParams {
  int64_t run_id = 0;
  int64_t token = 0;
  Instant now;
  std::chrono::milliseconds lease_ttl{3600000};
  std::string node;
};

struct StepParams {
  int64_t run_id = 0;
  int64_t token = 0;
  std::string step;
  ledger::StepStatus state = ledger::StepStatus::kRunning;  // running, succeeded or failed
  Instant now;
  std::string node;
};

struct FinishParams {
  int64_t run_id = 0;
  int64_t token = 0;
  Instant now;
  std::string node;
  std::string actor = "worker";  // "worker" | "reaper"
  ledger::EndClass end_class = ledger::EndClass::kSucceeded;
  std::optional<int> exit_status;
  std::string step;  // the step that ended the attempt, if any
  std::string log_path;
  std::string output_tail;
  ledger::AttemptDecision decision;
  // The reaper's finish: applies only while the lease is still expired, so
  // a heartbeat that got in first wins.
  bool only_if_lease_expired = false;
  // The attempt never started (a run claimed ahead and released at
  // shutdown): recorded as any attempt, but given back to the run's retry
  // budget, so a restart does not use up `max_attempts`.
  bool outside_budget = false;
};

// One write of a worker for RunApplyWrites: a step's new state, then
// optionally the end of the attempt. Both carry the attempt's token; when the
// step update is refused, the finish is not applied.
struct WorkerWrite {
  std::optional<StepParams> step;
  std::optional<FinishParams> finish;
};

struct ExpiredLease {
  RunRecord run;
  int64_t token = 0;
  int attempt = 0;
  std::string node;
  std::string running_step;  // empty when between steps
  int budget_attempts = 0;
  Instant budget_started_at;
};

// The lease a running run is under: what a worker outside this process
// (an external worker over HTTP) needs to end its attempt as the
// dispatcher would, with the retry budget the claim counted it in.
struct RunLease : ExpiredLease {
  Instant expires_at;
};

struct OperatorParams {
  int64_t run_id = 0;
  std::string actor;
  std::string reason;
  Instant now;
};

struct AttemptRecord {
  int number = 0;
  int64_t token = 0;
  std::string node;
  Instant started_at;
  std::optional<Instant> ended_at;
  std::string end_class;  // empty while open
  std::optional<int> exit_status;
  std::string step;
  std::string log_path;
  std::string output_tail;
  // The operator's (or scanner's) action that put the run back to work
  // before this attempt, if any: every attempt it caused links to it.
  std::optional<int64_t> action_event_id;
};

struct SchemaInfo {
  int version = 0;          // migrations applied
  int compatible_from = 0;  // the oldest schema version of a binary that may use it
};

// ---- effects and checkpoints (docs/effects.md) ---------------------------

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
  Instant now;
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
  Instant now;
  std::string node;
};

struct EffectFailParams {
  int64_t run_id = 0;
  int64_t token = 0;
  std::string key;
  std::optional<int> exit_status;
  std::string result;
  Instant now;
  std::string node;
};

// Operator: settle an effect in doubt of an `unknown` run by their word.
struct EffectResolveParams {
  int64_t run_id = 0;
  std::string key;
  ledger::EffectState as = ledger::EffectState::kCommitted;  // committed | failed
  std::string actor;
  std::string reason;
  Instant now;
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
  std::string actor;
  std::string reason;
  Instant now;
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
  Instant now;
  std::string node;
};

// ---- recovery: the gap scanner's backfill, operators' backfill and approve -

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
  std::string actor;
  std::string reason;
  Instant now;
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
  std::string actor;
  std::string reason;
  std::string details = "{}";  // a JSON object; the store adds run_keys and run_ids
  Instant now;
};

struct RequeueResult {
  int64_t event_id = 0;
  std::vector<int64_t> queued;  // run ids, in key order
};

struct ApproveParams {
  std::string job;
  std::optional<int64_t> run_id;          // one run, or
  std::optional<std::string> from, to;    // business dates, inclusive
  std::string actor;
  std::string reason;
  Instant now;
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

// ---- nodes and retention -----------------------------------------------------

// A `serve` node saying it is alive (the node heartbeat table).
struct NodeBeat {
  std::string node;
  std::string version;
  std::string listen;  // its API address, "" when it serves none
  Instant started_at;
  Instant now;
  // The process that beats: its host name and process id.
  std::string host = {};
  int64_t pid = 0;
};

struct NodeRecord {
  std::string node;
  std::string version;
  std::string listen;
  Instant started_at;
  Instant last_seen_at;
  int running = 0;  // runs whose lease it holds now
  // The roles it holds or last held (RoleHold), each with the end of its
  // lease: held now when that is not past.
  std::vector<std::pair<std::string, Instant>> roles;
  // When it stopped cleanly (NodeStopped); none while it runs or after a
  // crash.
  std::optional<Instant> stopped_at;
  // The process that beat last ("" and 0 before schema 10).
  std::string host;
  int64_t pid = 0;
};

// A node asking to hold a role that one node at a time holds (alerting).
struct RoleParams {
  std::string role;
  std::string node;
  Instant now;  // PostgreSQL in production: the database's clock instead
  std::chrono::milliseconds ttl{30000};  // held until now + ttl unless renewed
};

struct PurgeParams {
  // Runs in a finished end state (succeeded, failed, skipped, cancelled)
  // whose last change is before this instant go, with what belongs to them.
  Instant before;
  int limit = 500;  // runs per call (one transaction)
  // Nodes last seen before this instant are forgotten (status stops
  // listing them), in the call that finishes the runs; none when unset.
  std::optional<Instant> nodes_seen_before;
};
struct PurgeResult {
  int runs = 0;
  int attempts = 0;
  int events = 0;
  int effects = 0;
  int nodes = 0;
};

// ---- the interface --------------------------------------------------------

class Store {
 public:
  virtual ~Store() = default;

  // "sqlite", "postgresql".
  virtual std::string_view Name() const = 0;
  virtual Result<SchemaInfo> GetSchemaInfo() = 0;

  // The instant the ledger's decisions are made at: `local` (the caller's
  // clock) on SQLite, the database server's clock on PostgreSQL
  // (docs/architecture.md, Time), so that a pass reads it once and plans,
  // releases and reaps by it.
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
  virtual Result<ReleaseOutlook> RunReleaseOutlook(Instant now) = 0;

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
  virtual Result<std::vector<RunRecord>> RunListDue(Instant now, int limit) = 0;

  virtual Status EventAppend(const EventRecord& e) = 0;
  // Every event in one transaction, in order: all or none.
  virtual Status EventAppendAll(const std::vector<EventRecord>& events) = 0;
  virtual Result<std::vector<EventRecord>> EventList(const EventQuery& q) = 0;

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
  virtual Result<std::vector<ExpiredLease>> RunListExpiredLeases(Instant now, int limit) = 0;

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
