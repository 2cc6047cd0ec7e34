// What an operator asks of the ledger and what they do to it, as the
// documents the command line prints with --json and the HTTP API answers
// (docs/cli.md, docs/api.md). Two implementations answer it:
//   LocalLedger       a configuration, its store and a clock: the command
//                     line without --server, and serve's own API routes;
//   cli::RemoteLedger a serve's HTTP API, which answers through a
//                     LocalLedger of its own.
// A command talks to one of them and never asks which, so the two ways of
// running it cannot drift apart.
//
// Errors: kInvalidArgument for a request that names a job the ledger does
// not know (the message says which), kNotFound for a run id it does not
// have, kConflict when the ledger's state refuses an action, kUnavailable
// (or kIOError) when the store or the server cannot be reached.
#ifndef CRONLEDGER_OPS_LEDGER_H_
#define CRONLEDGER_OPS_LEDGER_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cronledger/status.h"
#include "ledger/names.h"
#include "ops/actor_text.h"
#include "ops/impact_preview.h"
#include "ops/operator_actions.h"
#include "store/store.h"

namespace cronledger::ops {

// The runs and events one document holds at most (a page of the API or a
// command's --limit).
inline constexpr int64_t kMaxListLimit = 100000;
// The events a single run's document shows: its newest ones.
inline constexpr int kRunDetailEvents = 1000;

struct GapsQuery {
  std::optional<std::string> job;  // a configured job; every job when absent
  std::optional<std::chrono::year_month_day> from;
  std::optional<std::chrono::year_month_day> to;
  bool include_waived = false;
};

struct VerifyQuery {
  std::string job;        // a configured job
  std::string date_text;  // the business date as given, echoed in the report
  std::chrono::year_month_day date;
};

// ---- actions ------------------------------------------------------------------

struct PauseAction {
  std::optional<std::string> job;  // a configured job; everything when absent
  bool pause = true;               // false: resume
  Actor who;
};

enum class RunActionKind { kRetry, kCancel, kResolve };
struct RunAction {
  int64_t run_id = 0;
  RunActionKind kind = RunActionKind::kRetry;
  std::optional<std::string> effect;             // kResolve: the effect in doubt
  std::optional<ledger::EffectState> effect_as;  // kResolve with `effect`
  std::optional<store::RunResolution> run_as;    // kResolve without it
  Actor who;
};

struct ApproveAction {
  std::string job;
  std::optional<std::chrono::year_month_day> from;
  std::optional<std::chrono::year_month_day> to;
  std::optional<int64_t> run;
  Actor who;
};

// A backfill or a rerun (request.action says which): without `yes` only
// the preview; with it the action, on the ledger as the preview `digest`
// saw it (none: as it is found now).
struct ImpactOrder {
  std::string job;
  ImpactRequest request;
  bool yes = false;
  std::optional<std::string> digest;
  Actor who;
};

struct TriggerAction {
  std::string job;
  std::vector<std::string> partitions;  // empty: every partition
  Actor who;
  TriggerTarget target = {};  // none: the latest due period
};

// What an action that can be refused with something to show answers.
struct ActionAnswer {
  enum class Kind {
    kDone,         // `doc`: what was done
    kPreview,      // `doc`: the preview (ImpactPreview::Json); nothing done
    kStale,        // `doc`: the new preview; the digest no longer matches, nothing done
    kNothingToDo,  // `message`; `doc` the preview, when there is one
    kExists,       // trigger: `message`, and `existing` the runs already there
  };
  Kind kind = Kind::kDone;
  nlohmann::ordered_json doc;
  std::string message;
  std::vector<std::string> existing;
};

class Ledger {
 public:
  virtual ~Ledger() = default;

  // {"jobs": [...], "nodes": [...]}: every configured job's status (`status`) and the
  // nodes that share the ledger.
  virtual Result<nlohmann::ordered_json> Jobs() = 0;

  // {"runs": [...]}: the runs `query` selects, newest first, at most
  // query.limit (1 to kMaxListLimit). `with_steps` false may leave each
  // run's steps out (the text table does not show them).
  virtual Result<nlohmann::ordered_json> Runs(const store::RunQuery& query, bool with_steps) = 0;

  // One run with its steps, attempts, effects and newest events.
  virtual Result<nlohmann::ordered_json> Run(int64_t id) = 0;

  // {"events": [...]}, oldest first: the newest query.limit (1 to
  // MaxEvents()).
  virtual Result<nlohmann::ordered_json> Events(const store::EventQuery& query) = 0;
  virtual int64_t MaxEvents() const { return kMaxListLimit; }

  // Calls `each` with every gap (GapJson) in order, as the scan finds them
  // where it can: a ledger missing a whole window can have millions.
  virtual cronledger::Status Gaps(
      const GapsQuery& query,
      const std::function<cronledger::Status(const nlohmann::ordered_json&)>& each) = 0;

  // Whether one job's business date is complete (VerifyJson).
  virtual Result<nlohmann::ordered_json> Verify(const VerifyQuery& query) = 0;

  // {"job": JOB or null, "paused": bool}. kConflict when it is so already.
  virtual Result<nlohmann::ordered_json> SetPaused(const PauseAction& action) = 0;

  // The run as it is afterwards (RunJson); after an effect's resolution
  // with "still_in_doubt", the keys of its effects still in doubt.
  // kConflict when the run's state does not allow it.
  virtual Result<nlohmann::ordered_json> ActOnRun(const RunAction& action) = 0;

  // kDone with {"approved": [run ids]}, or kNothingToDo.
  virtual Result<ActionAnswer> Approve(const ApproveAction& action) = 0;

  // kPreview; with `yes` kDone with {"event_id", "queued", "run_keys"},
  // kStale or kNothingToDo.
  virtual Result<ActionAnswer> Impact(const ImpactOrder& order) = 0;

  // kDone with {"event_id", "queued", "run_keys", "period"}, kNothingToDo
  // (nothing due yet) or kExists.
  virtual Result<ActionAnswer> Trigger(const TriggerAction& action) = 0;
};

// The message of the kInvalidArgument for a job the ledger does not know:
// not configured, and (unless `config_only`: the question needs the job's
// schedule) not recorded in the ledger either.
std::string NoSuchJob(const std::string& job, bool config_only);

}  // namespace cronledger::ops

#endif  // CRONLEDGER_OPS_LEDGER_H_
