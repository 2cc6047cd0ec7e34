// SqlStore, effects half: the effect ledger (idempotency keys scoped to a
// job), in-doubt detection, operator resolution, and checkpoints.
// docs/effects.md describes the semantics; store.h the contract.
//
// Every worker write is fenced like StepUpdate: the run must be `running`
// under the caller's token, or the write changes nothing, appends
// stale_write_rejected and answers kStaleLease. "In doubt" is not stored: an
// effect is in doubt when it is `started` and the attempt that started it no
// longer holds its run's lease (tokens are never reissued, so once over, it
// stays over).
//
// The worker writes (begin, commit, fail, checkpoint set) all go through
// RunEffectBatch: one transaction, a SAVEPOINT per op (after the first) so
// that a refusal takes back only that op. The single calls are a batch of
// one.
#include <optional>
#include <span>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "store/sql/sql_store.h"
#include "store/sql/sql_util.h"

namespace cronledger::store {

std::string_view Name(RunResolution r) {
  switch (r) {
    case RunResolution::kSucceeded: return "succeeded";
    case RunResolution::kFailed: return "failed";
    case RunResolution::kRetry: return "retry";
  }
  return "invalid";
}

std::optional<RunResolution> ParseRunResolution(std::string_view s) {
  if (s == "succeeded") return RunResolution::kSucceeded;
  if (s == "failed") return RunResolution::kFailed;
  if (s == "retry") return RunResolution::kRetry;
  return std::nullopt;
}

namespace {

using namespace sql_util;  // NOLINT: the store's own helpers
using sql::Db;
using sql::Transaction;

constexpr const char* kEffectColumns =
    "id, job, key, fingerprint, state, exit_status, coalesce(result, ''), run_id, run_key, "
    "started_attempt, started_token, settled_attempt, settled_token, coalesce(settled_by, ''), "
    "doubt_run_id, doubt_token, started_at, updated_at, started_request";

EffectRecord EffectFromRow(const Stmt& s) {
  EffectRecord e;
  e.id = s.Int(0);
  e.job = s.Text(1);
  e.key = s.Text(2);
  e.fingerprint = s.Text(3);
  e.state = ledger::ParseEffectState(s.Text(4)).value_or(ledger::EffectState::kStarted);
  if (auto x = s.OptInt(5)) e.exit_status = static_cast<int>(*x);
  e.result = s.Text(6);
  e.run_id = s.Int(7);
  e.run_key = s.Text(8);
  e.started_attempt = static_cast<int>(s.Int(9));
  e.started_token = s.Int(10);
  if (auto x = s.OptInt(11)) e.settled_attempt = static_cast<int>(*x);
  e.settled_token = s.OptInt(12);
  e.settled_by = s.Text(13);
  e.doubt_run_id = s.OptInt(14);
  e.doubt_token = s.OptInt(15);
  e.started_at = FromMs(s.Int(16));
  e.updated_at = FromMs(s.Int(17));
  e.started_request = s.Text(18);
  return e;
}

constexpr const char* kCheckpointColumns =
    "scope, job, partition, run_id, value, updated_at, writer_run_id, writer_token";

CheckpointRecord CheckpointFromRow(const Stmt& s) {
  CheckpointRecord c;
  c.scope = ledger::ParseCheckpointScope(s.Text(0)).value_or(ledger::CheckpointScope::kRun);
  c.job = s.Text(1);
  c.partition = s.Text(2);
  c.run_id = s.OptInt(3);
  c.value = s.Text(4);
  c.updated_at = FromMs(s.Int(5));
  c.writer_run_id = s.Int(6);
  c.writer_token = s.Int(7);
  return c;
}

Status CheckKey(std::string_view key) {
  if (key.empty()) return InvalidArgument("an effect key must not be empty");
  if (key.size() > kMaxEffectKeyBytes) {
    return InvalidArgument(fmt::format("an effect key must be at most {} bytes, not {}",
                                       kMaxEffectKeyBytes, key.size()));
  }
  return Status::Ok();
}

// Keys, fingerprints, results and values come from job commands: bytes
// that are not UTF-8 are replaced rather than thrown on.
std::string Dump(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// A fingerprint as it appears in a message: quoted, and cut when long.
std::string Quoted(std::string_view fingerprint) {
  constexpr std::size_t kShown = 200;
  if (fingerprint.size() <= kShown) return Dump(std::string(fingerprint));
  return fmt::format("{}... ({} bytes)", Dump(std::string(fingerprint.substr(0, kShown))),
                     fingerprint.size());
}

// The run as seen by its current attempt.
struct Holder {
  std::string job;
  std::string partition;
  std::string run_key;
  int attempt = 0;
};

// The run's current attempt if `token` holds its lease, else nullopt.
Result<std::optional<Holder>> CurrentHolder(Db& db, int64_t run_id, int64_t token) {
  ASSIGN_OR_RETURN(s, db.Prepare(
      "SELECT attempts, job, partition, job || '/' || partition || '/' || period FROM runs "
      "WHERE id = ? AND lease_token = ? AND state = 'running'"));
  s.Bind(1, run_id).Bind(2, token);
  ASSIGN_OR_RETURN(row, s.Step());
  if (!row) return std::optional<Holder>();
  return std::optional<Holder>(
      Holder{s.Text(1), s.Text(2), s.Text(3), static_cast<int>(s.Int(0))});
}

// Whether the attempt holding `token` still holds run `run_id`'s lease.
Result<bool> HoldsLease(Db& db, int64_t run_id, int64_t token) {
  ASSIGN_OR_RETURN(s, db.Prepare(
      "SELECT 1 FROM runs WHERE id = ? AND lease_token = ? AND state = 'running'"));
  s.Bind(1, run_id).Bind(2, token);
  return s.Step();
}

Result<std::optional<EffectRecord>> LoadEffect(Db& db, std::string_view job, std::string_view key) {
  ASSIGN_OR_RETURN(s, db.Prepare(fmt::format(
      "SELECT {} FROM effects WHERE job = ? AND key = ?", kEffectColumns)));
  s.Bind(1, job).Bind(2, key);
  ASSIGN_OR_RETURN(row, s.Step());
  if (!row) return std::optional<EffectRecord>();
  return std::optional<EffectRecord>(EffectFromRow(s));
}

Result<EffectRecord> LoadEffectById(Db& db, int64_t id) {
  ASSIGN_OR_RETURN(s, db.Prepare(fmt::format("SELECT {} FROM effects WHERE id = ?",
                                             kEffectColumns)));
  s.Bind(1, id);
  ASSIGN_OR_RETURN(row, s.Step());
  if (!row) return Internal(fmt::format("effect {} vanished", id));
  return EffectFromRow(s);
}

// Whether attempt `token` found this start of `e` in doubt.
Result<bool> FoundInDoubt(Db& db, const EffectRecord& e, int64_t token) {
  ASSIGN_OR_RETURN(s, db.Prepare(
      "SELECT 1 FROM effect_doubts WHERE effect_id = ? AND token = ? AND started_token = ?"));
  s.Bind(1, e.id).Bind(2, token).Bind(3, e.started_token);
  ASSIGN_OR_RETURN(row, s.Step());
  return row;
}

// Records that the attempt `token` of `run_id` found `e` in doubt; the
// effect row keeps the latest finder for display.
Status RecordDoubt(Db& db, const EffectRecord& e, int64_t run_id, int64_t token, Instant now) {
  {
    ASSIGN_OR_RETURN(s, db.Prepare(
        "INSERT INTO effect_doubts (effect_id, started_token, run_id, token, found_at) "
        "VALUES (?, ?, ?, ?, ?) ON CONFLICT (effect_id, token) DO NOTHING"));
    s.Bind(1, e.id).Bind(2, e.started_token).Bind(3, run_id).Bind(4, token).Bind(5, Ms(now));
    RETURN_IF_ERROR(s.Run());
  }
  ASSIGN_OR_RETURN(s, db.Prepare(
      "UPDATE effects SET doubt_run_id = ?, doubt_token = ?, updated_at = ? WHERE id = ?"));
  s.Bind(1, run_id).Bind(2, token).Bind(3, Ms(now)).Bind(4, e.id);
  return s.Run();
}

// A live attempt of another run than `run_id` that found this start of `e`
// in doubt (it may be reconciling it now): (run id, token).
Result<std::optional<std::pair<int64_t, int64_t>>> LiveFinderElsewhere(Db& db,
                                                                       const EffectRecord& e,
                                                                       int64_t run_id) {
  ASSIGN_OR_RETURN(s, db.Prepare(
      "SELECT d.run_id, d.token FROM effect_doubts d JOIN runs r ON r.id = d.run_id "
      "AND r.lease_token = d.token AND r.state = 'running' "
      "WHERE d.effect_id = ? AND d.started_token = ? AND d.run_id <> ? LIMIT 1"));
  s.Bind(1, e.id).Bind(2, e.started_token).Bind(3, run_id);
  ASSIGN_OR_RETURN(row, s.Step());
  if (!row) return std::optional<std::pair<int64_t, int64_t>>();
  return std::optional<std::pair<int64_t, int64_t>>(std::make_pair(s.Int(0), s.Int(1)));
}

// The keys of the effects in doubt for a run: `started`, started by it or
// found in doubt by it, and not held by a live attempt.
Result<std::vector<std::string>> InDoubtKeys(Db& db, int64_t run_id) {
  ASSIGN_OR_RETURN(s, db.Prepare(
      "SELECT e.key FROM effects e WHERE e.state = 'started' "
      "AND (e.run_id = ?1 OR EXISTS (SELECT 1 FROM effect_doubts d WHERE d.effect_id = e.id "
      "AND d.run_id = ?1 AND d.started_token = e.started_token)) "
      "AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.id = e.run_id "
      "AND r.lease_token = e.started_token AND r.state = 'running') ORDER BY e.key"));
  s.Bind(1, run_id);
  std::vector<std::string> keys;
  RETURN_IF_ERROR(ForEachRow(s, [&] { keys.push_back(s.Text(0)); }));
  return keys;
}

// Upserts a watermark written by the attempt holding `token` of `run_id`.
Status WriteCheckpoint(Db& db, ledger::CheckpointScope scope, const Holder& h, int64_t run_id,
                       int64_t token, std::string_view value, Instant now) {
  const bool run_scope = scope == ledger::CheckpointScope::kRun;
  ASSIGN_OR_RETURN(s, db.Prepare(
      run_scope
          ? "INSERT INTO checkpoints (scope, job, partition, run_id, value, updated_at, "
            "writer_run_id, writer_token) VALUES ('run', ?1, ?2, ?3, ?4, ?5, ?3, ?6) "
            "ON CONFLICT (run_id) WHERE scope = 'run' DO UPDATE SET value = excluded.value, "
            "updated_at = excluded.updated_at, writer_run_id = excluded.writer_run_id, "
            "writer_token = excluded.writer_token"
          : "INSERT INTO checkpoints (scope, job, partition, run_id, value, updated_at, "
            "writer_run_id, writer_token) VALUES ('partition', ?1, ?2, NULL, ?4, ?5, ?3, ?6) "
            "ON CONFLICT (job, partition) WHERE scope = 'partition' DO UPDATE SET "
            "value = excluded.value, updated_at = excluded.updated_at, "
            "writer_run_id = excluded.writer_run_id, writer_token = excluded.writer_token"));
  s.Bind(1, h.job).Bind(2, h.partition).Bind(3, run_id).Bind(4, value).Bind(5, Ms(now))
      .Bind(6, token);
  return s.Run();
}

// The RunRetry move: back to pending, released, misfire-exempt, with a
// fresh retry budget.
std::string InProgress(const EffectRecord& e) {
  return fmt::format(
      "effect \"{}\" of job {} is in progress: started by attempt {} of run {} (fencing token "
      "{}), which still holds its lease",
      e.key, e.job, e.started_attempt, e.run_key, e.started_token);
}

// The step of `run_id` that is to do `key` again once it is resolved as not
// having happened: the one running when the run last began the effect or
// found it in doubt. Events say it (the effects table does not): the last
// step_started of the run before that effect_started or effect_in_doubt.
// The run's first step when the events do not say; nullopt for a run
// without steps.
Result<std::optional<std::string>> StepToRedo(Db& db, int64_t run_id, std::string_view key) {
  int64_t began = 0;
  {
    ASSIGN_OR_RETURN(s, db.Prepare(
        "SELECT id, details FROM events WHERE run_id = ? AND (type = 'effect_started' OR "
        "type = 'effect_in_doubt') ORDER BY id DESC"));
    s.Bind(1, run_id);
    RETURN_IF_ERROR(ForEachRow(s, [&] {
      if (began != 0) return;
      const auto details = nlohmann::json::parse(s.Text(1), nullptr, false);
      if (details.is_object() && details.value("key", "") == key) began = s.Int(0);
    }));
  }
  if (began != 0) {
    ASSIGN_OR_RETURN(s, db.Prepare(
        "SELECT details FROM events WHERE run_id = ? AND type = 'step_started' AND id < ? "
        "ORDER BY id DESC LIMIT 1"));
    s.Bind(1, run_id).Bind(2, began);
    ASSIGN_OR_RETURN(row, s.Step());
    if (row) {
      const auto details = nlohmann::json::parse(s.Text(0), nullptr, false);
      if (details.is_object() && details.contains("step") && details["step"].is_string()) {
        return std::optional<std::string>(details["step"].get<std::string>());
      }
    }
  }
  ASSIGN_OR_RETURN(s, db.Prepare(
      "SELECT step FROM run_steps WHERE run_id = ? ORDER BY position LIMIT 1"));
  s.Bind(1, run_id);
  ASSIGN_OR_RETURN(row, s.Step());
  if (!row) return std::optional<std::string>();
  return std::optional<std::string>(s.Text(0));
}

}  // namespace

// ---- begin ------------------------------------------------------------------

Result<SqlStore::BeginAnswer> SqlStore::EffectBeginLocked(const EffectBeginParams& p, Instant now) {
  ASSIGN_OR_RETURN(holder, CurrentHolder(*db_, p.run_id, p.token));
  if (!holder) {
    return BeginAnswer{RejectStaleLocked(p.run_id, p.token, "effect begin", p.node, now), {}};
  }
  EventRecord ev =
      RunEvent(now, holder->job, p.run_id, holder->run_key, p.node.empty() ? "worker" : p.node);
  nlohmann::json details = {{"key", p.key}, {"attempt", holder->attempt},
                            {"fencing_token", p.token}};

  ASSIGN_OR_RETURN(found, LoadEffect(*db_, holder->job, p.key));
  if (!found) {
    // The record as inserted, built here rather than read back: no
    // RETURNING (SQLite builds an ephemeral table for it) and no second
    // lookup, the hot path of every effect.
    EffectRecord stored;
    stored.job = holder->job;
    stored.key = p.key;
    stored.fingerprint = p.fingerprint;
    stored.state = ledger::EffectState::kStarted;
    stored.run_id = p.run_id;
    stored.run_key = holder->run_key;
    stored.started_attempt = holder->attempt;
    stored.started_token = p.token;
    stored.started_request = p.request;
    stored.started_at = stored.updated_at = now;
    {
      ASSIGN_OR_RETURN(s, db_->Prepare(
          "INSERT INTO effects (job, key, fingerprint, state, run_id, run_key, started_attempt, "
          "started_token, started_request, started_at, updated_at) VALUES (?1, ?2, ?3, "
          "'started', ?4, ?5, ?6, ?7, ?9, ?8, ?8)"));
      s.Bind(1, holder->job).Bind(2, p.key).Bind(3, p.fingerprint).Bind(4, p.run_id)
          .Bind(5, holder->run_key).Bind(6, int64_t{holder->attempt}).Bind(7, p.token)
          .Bind(8, Ms(stored.started_at)).Bind(9, p.request);
      RETURN_IF_ERROR(s.Run());
      ASSIGN_OR_RETURN(id, db_->LastInsertRowId());
      stored.id = id;
    }
    ev.type = ledger::event::kEffectStarted;
    details["fingerprint"] = p.fingerprint;
    ev.details = Dump(details);
    RETURN_IF_ERROR(AppendEventLocked(ev));
    return BeginAnswer{Status::Ok(), {EffectBeginOutcome::kProceed, std::move(stored)}};
  }

  EffectRecord e = std::move(*found);
  if (e.fingerprint != p.fingerprint) {
    // Nothing written (and the op's savepoint or transaction rolls back).
    return BeginAnswer{
        Status(StatusCode::kFailedPrecondition,
               fmt::format("effect \"{}\" of job {} was begun with fingerprint {}; this begin has "
                           "fingerprint {}: an idempotency key cannot be reused for a different "
                           "effect",
                           e.key, e.job, Quoted(e.fingerprint), Quoted(p.fingerprint))),
        {}};
  }
  switch (e.state) {
    case ledger::EffectState::kCommitted:
      // A replay writes nothing.
      return BeginAnswer{Status::Ok(), {EffectBeginOutcome::kReplay, std::move(e)}};
    case ledger::EffectState::kFailed: {
      // It did not happen: this attempt does it again.
      ASSIGN_OR_RETURN(s, db_->Prepare(
          "UPDATE effects SET state = 'started', exit_status = NULL, result = NULL, "
          "run_id = ?1, run_key = ?2, started_attempt = ?3, started_token = ?4, "
          "started_request = ?7, settled_attempt = NULL, settled_token = NULL, "
          "settled_by = NULL, doubt_run_id = NULL, doubt_token = NULL, started_at = ?5, "
          "updated_at = ?5 WHERE id = ?6"));
      s.Bind(1, p.run_id).Bind(2, holder->run_key).Bind(3, int64_t{holder->attempt})
          .Bind(4, p.token).Bind(5, Ms(now)).Bind(6, e.id).Bind(7, p.request);
      RETURN_IF_ERROR(s.Run());
      ev.type = ledger::event::kEffectStarted;
      details["fingerprint"] = p.fingerprint;
      details["again"] = true;
      details["failed_by_token"] = e.settled_token ? nlohmann::json(*e.settled_token)
                                                   : nlohmann::json();
      ev.reason = "failed before: done again";
      ev.details = Dump(details);
      RETURN_IF_ERROR(AppendEventLocked(ev));
      ASSIGN_OR_RETURN(stored, LoadEffectById(*db_, e.id));
      return BeginAnswer{Status::Ok(), {EffectBeginOutcome::kProceed, std::move(stored)}};
    }
    case ledger::EffectState::kStarted:
      break;
  }
  const bool own = e.started_token == p.token;
  if (own) {
    // Begun already by this very request (asked again): go on. Begun by
    // another call of this attempt: that call's outcome is unknown here, so
    // it may have happened — in doubt, not done twice.
    if (p.request.empty() || p.request == e.started_request) {
      return BeginAnswer{Status::Ok(), {EffectBeginOutcome::kProceed, std::move(e)}};
    }
  } else {
    ASSIGN_OR_RETURN(live, HoldsLease(*db_, e.run_id, e.started_token));
    if (live) return BeginAnswer{Status(StatusCode::kConflict, InProgress(e)), {}};
  }
  // Started by an attempt that is over (or an earlier call of this one): it
  // may or may not have happened.
  ASSIGN_OR_RETURN(recorded, FoundInDoubt(*db_, e, p.token));
  if (recorded) return BeginAnswer{Status::Ok(), {EffectBeginOutcome::kInDoubt, std::move(e)}};
  RETURN_IF_ERROR(RecordDoubt(*db_, e, p.run_id, p.token, now));
  ev.type = ledger::event::kEffectInDoubt;
  ev.reason = own ? fmt::format("effect \"{}\" was started by an earlier call of this attempt "
                                "(fencing token {}), whose outcome is unknown",
                                e.key, e.started_token)
                  : fmt::format("effect \"{}\" was started by attempt {} of run {} (fencing "
                                "token {}), which ended without settling it",
                                e.key, e.started_attempt, e.run_key, e.started_token);
  details["started_run_id"] = e.run_id;
  details["started_attempt"] = e.started_attempt;
  details["started_token"] = e.started_token;
  ev.details = Dump(details);
  RETURN_IF_ERROR(AppendEventLocked(ev));
  ASSIGN_OR_RETURN(stored, LoadEffectById(*db_, e.id));
  return BeginAnswer{Status::Ok(), {EffectBeginOutcome::kInDoubt, std::move(stored)}};
}

// ---- commit and fail ----------------------------------------------------------

struct SqlStore::SettleParams {
  int64_t run_id = 0;
  int64_t token = 0;
  std::string_view key;
  ledger::EffectState as = ledger::EffectState::kCommitted;
  std::optional<int> exit_status;
  std::string_view result;
  const std::optional<CheckpointWrite>* checkpoint = nullptr;  // commit only
  Instant now;
  std::string_view node;
};

Result<SqlStore::Answer> SqlStore::EffectSettleLocked(const SettleParams& p) {
  const bool commit = p.as == ledger::EffectState::kCommitted;
  const std::string_view verb = commit ? "commit" : "fail";
  ASSIGN_OR_RETURN(holder, CurrentHolder(*db_, p.run_id, p.token));
  if (!holder) {
    return Answer{RejectStaleLocked(p.run_id, p.token, fmt::format("effect {}", verb), p.node,
                                    p.now)};
  }
  ASSIGN_OR_RETURN(found, LoadEffect(*db_, holder->job, p.key));
  if (!found) {
    return Answer{NotFound(fmt::format("job {} has no effect \"{}\" to {}: begin it first",
                                       holder->job, p.key, verb))};
  }
  const EffectRecord& e = *found;
  if (e.state != ledger::EffectState::kStarted) {
    if (e.state == p.as && e.settled_token == p.token) return Answer{Status::Ok()};  // again
    return Answer{Status(StatusCode::kConflict,
                         fmt::format("effect \"{}\" of job {} is already {}; it cannot be {}",
                                     e.key, e.job, ledger::Name(e.state),
                                     commit ? "committed" : "failed"))};
  }
  bool reconciled = false;
  if (e.started_token != p.token) {
    ASSIGN_OR_RETURN(live, HoldsLease(*db_, e.run_id, e.started_token));
    if (live) return Answer{Status(StatusCode::kConflict, InProgress(e))};
    ASSIGN_OR_RETURN(found_it, FoundInDoubt(*db_, e, p.token));
    if (!found_it) {
      return Answer{Status(StatusCode::kConflict,
                           fmt::format("effect \"{}\" of job {} was started by attempt {} of run "
                                       "{} and is in doubt: begin it, reconcile, then {} it",
                                       e.key, e.job, e.started_attempt, e.run_key, verb))};
    }
    reconciled = true;  // found in doubt by this attempt and reconciled by it
  }
  {
    ASSIGN_OR_RETURN(s, db_->Prepare(
        "UPDATE effects SET state = ?, exit_status = ?, result = ?, settled_attempt = ?, "
        "settled_token = ?, settled_by = NULL, updated_at = ? WHERE id = ?"));
    s.Bind(1, ledger::Name(p.as));
    if (p.exit_status) {
      s.Bind(2, int64_t{*p.exit_status});
    } else {
      s.Bind(2, std::nullopt);
    }
    s.Bind(3, p.result).Bind(4, int64_t{holder->attempt}).Bind(5, p.token).Bind(6, Ms(p.now))
        .Bind(7, e.id);
    RETURN_IF_ERROR(s.Run());
  }
  nlohmann::json details = {{"key", e.key}, {"attempt", holder->attempt},
                            {"fencing_token", p.token}};
  if (p.exit_status) details["exit_status"] = *p.exit_status;
  // The watermark moves in the same transaction as the effect, or neither.
  if (commit && p.checkpoint != nullptr && p.checkpoint->has_value()) {
    const CheckpointWrite& c = **p.checkpoint;
    RETURN_IF_ERROR(WriteCheckpoint(*db_, c.scope, *holder, p.run_id, p.token, c.value, p.now));
    details["checkpoint"] = {{"scope", ledger::Name(c.scope)}, {"value", c.value}};
  }
  EventRecord ev = RunEvent(p.now, holder->job, p.run_id, holder->run_key,
                            p.node.empty() ? "worker" : std::string_view(p.node));
  if (reconciled) {
    ev.type = ledger::event::kEffectReconciled;
    ev.reason = commit ? "reconciled: it happened" : "reconciled: it did not happen";
    details["as"] = ledger::Name(p.as);
    details["started_run_id"] = e.run_id;
    details["started_attempt"] = e.started_attempt;
    details["started_token"] = e.started_token;
  } else {
    ev.type = commit ? ledger::event::kEffectCommitted : ledger::event::kEffectFailed;
  }
  ev.details = Dump(details);
  RETURN_IF_ERROR(AppendEventLocked(ev));
  return Answer{Status::Ok()};
}

// ---- operator resolution ----------------------------------------------------------

Result<EffectResolveResult> SqlStore::EffectResolve(const EffectResolveParams& p) {
  RETURN_IF_ERROR(CheckKey(p.key));
  if (p.as == ledger::EffectState::kStarted) {
    return InvalidArgument("an effect is resolved as committed or failed");
  }
  WriteTransaction tx(*this);
  ASSIGN_OR_RETURN(now, tx.Begin(p.now));
  ASSIGN_OR_RETURN(run, RunById(*db_, p.run_id));
  if (!run) return NotFound(fmt::format("no run with id {}", p.run_id));
  ASSIGN_OR_RETURN(found, LoadEffect(*db_, run->job, p.key));
  if (!found) {
    return NotFound(fmt::format("job {} has no effect \"{}\"", run->job, p.key));
  }
  const EffectRecord& e = *found;
  if (run->state != ledger::RunState::kUnknown) {
    return Status(StatusCode::kConflict,
                  fmt::format("run {} is {}; only the effects of an unknown run can be resolved",
                              p.run_id, ledger::Name(run->state)));
  }
  if (e.state != ledger::EffectState::kStarted) {
    return Status(StatusCode::kConflict,
                  fmt::format("effect \"{}\" of job {} is already {}", e.key, e.job,
                              ledger::Name(e.state)));
  }
  bool found_by_run = false;
  if (e.run_id != p.run_id) {
    ASSIGN_OR_RETURN(s, db_->Prepare(
        "SELECT 1 FROM effect_doubts WHERE effect_id = ? AND run_id = ? AND started_token = ?"));
    s.Bind(1, e.id).Bind(2, p.run_id).Bind(3, e.started_token);
    ASSIGN_OR_RETURN(row, s.Step());
    found_by_run = row;
  }
  if (e.run_id != p.run_id && !found_by_run) {
    return Status(StatusCode::kConflict,
                  fmt::format("effect \"{}\" of job {} is not in doubt for run {} (it was "
                              "started by run {})",
                              e.key, e.job, p.run_id, e.run_key));
  }
  ASSIGN_OR_RETURN(live, HoldsLease(*db_, e.run_id, e.started_token));
  if (live) return Status(StatusCode::kConflict, InProgress(e));
  {
    // Another run found it in doubt and may be reconciling it right now: its
    // word (it happened, it did not) must not be overridden mid-way.
    ASSIGN_OR_RETURN(reconciling, LiveFinderElsewhere(*db_, e, p.run_id));
    if (reconciling) {
      return Status(StatusCode::kConflict,
                    fmt::format("effect \"{}\" of job {} is being reconciled by run {} "
                                "(fencing token {}); resolve it once that attempt is over",
                                e.key, e.job, reconciling->first, reconciling->second));
    }
  }
  {
    ASSIGN_OR_RETURN(s, db_->Prepare(
        "UPDATE effects SET state = ?, settled_attempt = NULL, settled_token = NULL, "
        "settled_by = ?, updated_at = ? WHERE id = ?"));
    s.Bind(1, ledger::Name(p.as)).Bind(2, p.actor).Bind(3, Ms(now)).Bind(4, e.id);
    RETURN_IF_ERROR(s.Run());
  }
  // It did not happen: the step that began it does it again, and the steps
  // after it, which ran on its word. A step that swallowed `effect run`'s
  // failure was recorded succeeded; resuming past it would end the run
  // succeeded with the effect never done.
  std::optional<std::string> redo_from;
  if (p.as == ledger::EffectState::kFailed) {
    ASSIGN_OR_RETURN(step, StepToRedo(*db_, p.run_id, e.key));
    if (step) {
      ASSIGN_OR_RETURN(s, db_->Prepare(
          "UPDATE run_steps SET state = 'pending', updated_at = ?3 WHERE run_id = ?1 AND "
          "state = 'succeeded' AND position >= (SELECT position FROM run_steps WHERE "
          "run_id = ?1 AND step = ?2)"));
      s.Bind(1, p.run_id).Bind(2, *step).Bind(3, Ms(now));
      RETURN_IF_ERROR(s.Run());
      redo_from = std::move(step);
    }
  }
  EffectResolveResult out;
  ASSIGN_OR_RETURN(still, InDoubtKeys(*db_, p.run_id));
  out.still_in_doubt = std::move(still);
  if (out.still_in_doubt.empty()) {
    RETURN_IF_ERROR(RunBackToWork(*db_, p.run_id, now, LaneIf(HasLanes(), Lane::kFirst)));
    out.run_state = ledger::RunState::kPending;
  } else {
    out.run_state = ledger::RunState::kUnknown;  // the operator resolves the others in turn
  }
  nlohmann::json details{{"effect", e.key},
                         {"as", ledger::Name(p.as)},
                         {"started_run_id", e.run_id},
                         {"started_token", e.started_token},
                         {"from", "unknown"},
                         {"to", ledger::Name(out.run_state)},
                         {"still_in_doubt", out.still_in_doubt}};
  if (redo_from) details["redo_from_step"] = *redo_from;
  const EventRecord ev =
      ActionEvent(ledger::event::kResolve, run->job, p.run_id, run->RunKey(), p, now, details);
  if (out.run_state == ledger::RunState::kPending) {
    const int64_t ids[] = {p.run_id};
    RETURN_IF_ERROR(AppendActionLocked(ev, ids).status());
  } else {
    RETURN_IF_ERROR(AppendEventLocked(ev));
  }
  RETURN_IF_ERROR(tx.Commit());
  return out;
}

Status SqlStore::RunResolve(const RunResolveParams& p) {
  WriteTransaction tx(*this);
  ASSIGN_OR_RETURN(now, tx.Begin(p.now));
  ASSIGN_OR_RETURN(run, RunById(*db_, p.run_id));
  if (!run) return NotFound(fmt::format("no run with id {}", p.run_id));
  if (run->state != ledger::RunState::kUnknown) {
    return Status(StatusCode::kConflict,
                  fmt::format("run {} is {}; only an unknown run can be resolved", p.run_id,
                              ledger::Name(run->state)));
  }
  ASSIGN_OR_RETURN(doubt, InDoubtKeys(*db_, p.run_id));
  if (!doubt.empty()) {
    return Status(StatusCode::kConflict,
                  fmt::format("run {} has {} in doubt: {}; resolve {} with --effect first",
                              p.run_id, doubt.size() == 1 ? "an effect" : "effects",
                              fmt::join(doubt, ", "), doubt.size() == 1 ? "it" : "them"));
  }
  ledger::RunState to = ledger::RunState::kPending;
  if (p.as == RunResolution::kRetry) {
    RETURN_IF_ERROR(RunBackToWork(*db_, p.run_id, now, LaneIf(HasLanes(), Lane::kFirst)));
  } else {
    to = p.as == RunResolution::kSucceeded ? ledger::RunState::kSucceeded
                                           : ledger::RunState::kFailed;
    ASSIGN_OR_RETURN(s, db_->Prepare(
        "UPDATE runs SET state = ?, reason = NULL, finished_at = ?2, updated_at = ?2 "
        "WHERE id = ?3"));
    s.Bind(1, ledger::Name(to)).Bind(2, Ms(now)).Bind(3, p.run_id);
    RETURN_IF_ERROR(s.Run());
  }
  const EventRecord ev =
      ActionEvent(ledger::event::kResolve, run->job, p.run_id, run->RunKey(), p, now,
                  {{"as", store::Name(p.as)}, {"from", "unknown"}, {"to", ledger::Name(to)}});
  if (to == ledger::RunState::kPending) {
    const int64_t ids[] = {p.run_id};
    RETURN_IF_ERROR(AppendActionLocked(ev, ids).status());
  } else {
    RETURN_IF_ERROR(AppendEventLocked(ev));
  }
  return tx.Commit();
}

// ---- reads --------------------------------------------------------------------

Result<std::vector<EffectRecord>> SqlStore::EffectList(int64_t run_id) {
  std::lock_guard lock(mu_);
  ASSIGN_OR_RETURN(s, db_->Prepare(fmt::format(
      "SELECT {} FROM effects e WHERE e.run_id = ?1 OR EXISTS (SELECT 1 FROM effect_doubts d "
      "WHERE d.effect_id = e.id AND d.run_id = ?1) ORDER BY e.started_at, e.id",
      kEffectColumns)));
  s.Bind(1, run_id);
  std::vector<EffectRecord> out;
  RETURN_IF_ERROR(ForEachRow(s, [&] { out.push_back(EffectFromRow(s)); }));
  return out;
}

Result<EffectRecord> SqlStore::EffectGet(std::string_view job, std::string_view key) {
  std::lock_guard lock(mu_);
  ASSIGN_OR_RETURN(found, LoadEffect(*db_, job, key));
  if (!found) return NotFound(fmt::format("job {} has no effect \"{}\"", job, key));
  return std::move(*found);
}

// ---- checkpoints ----------------------------------------------------------------

Result<Checkpoints> SqlStore::CheckpointGet(int64_t run_id) {
  std::lock_guard lock(mu_);
  ASSIGN_OR_RETURN(run, RunById(*db_, run_id));
  if (!run) return NotFound(fmt::format("no run with id {}", run_id));
  ASSIGN_OR_RETURN(s, db_->Prepare(fmt::format(
      "SELECT {} FROM checkpoints WHERE (scope = 'run' AND run_id = ?1) "
      "OR (scope = 'partition' AND job = ?2 AND partition = ?3)",
      kCheckpointColumns)));
  s.Bind(1, run_id).Bind(2, run->job).Bind(3, run->partition);
  Checkpoints out;
  RETURN_IF_ERROR(ForEachRow(s, [&] {
    CheckpointRecord c = CheckpointFromRow(s);
    (c.scope == ledger::CheckpointScope::kRun ? out.run : out.partition) = std::move(c);
  }));
  return out;
}

Result<SqlStore::Answer> SqlStore::CheckpointSetLocked(const CheckpointSetParams& p, Instant now) {
  ASSIGN_OR_RETURN(holder, CurrentHolder(*db_, p.run_id, p.token));
  if (!holder) {
    return Answer{RejectStaleLocked(p.run_id, p.token,
                                    fmt::format("checkpoint set ({})", ledger::Name(p.scope)),
                                    p.node, now)};
  }
  RETURN_IF_ERROR(WriteCheckpoint(*db_, p.scope, *holder, p.run_id, p.token, p.value, now));
  return Answer{Status::Ok()};
}

// ---- the batch: every worker write of the effect ledger goes through here -------

namespace {

// An op's answer without the database: a malformed request.
Status CheckRequest(const EffectOp& op) {
  if (const auto* b = std::get_if<EffectBeginParams>(&op.request)) return CheckKey(b->key);
  if (const auto* c = std::get_if<EffectCommitParams>(&op.request)) return CheckKey(c->key);
  if (const auto* f = std::get_if<EffectFailParams>(&op.request)) return CheckKey(f->key);
  return Status::Ok();
}

// Runs one statement without results (the savepoints), through the cache.
Status RunStatement(Db& db, std::string_view sql) {
  ASSIGN_OR_RETURN(s, db.Prepare(sql));
  return s.Run();
}

}  // namespace

Status SqlStore::EffectOpLocked(EffectOp& op) {
  // The op's instant; without one (SQLite) the op alone is refused.
  Result<Instant> at = std::visit([&](const auto& r) { return TransactionNow(r.now); }, op.request);
  if (!at.ok()) {
    op.status = at.status();
    return Status::Ok();
  }
  const Instant now = *at;
  if (const auto* begin = std::get_if<EffectBeginParams>(&op.request)) {
    ASSIGN_OR_RETURN(answer, EffectBeginLocked(*begin, now));
    op.status = std::move(answer.status);
    op.begun = std::move(answer.begun);
    return Status::Ok();
  }
  if (const auto* set = std::get_if<CheckpointSetParams>(&op.request)) {
    ASSIGN_OR_RETURN(answer, CheckpointSetLocked(*set, now));
    op.status = std::move(answer.status);
    return Status::Ok();
  }
  // Commit or fail: one settle, told which.
  SettleParams settle;
  const auto common = [&](const auto& p) {
    settle.run_id = p.run_id;
    settle.token = p.token;
    settle.key = p.key;
    settle.exit_status = p.exit_status;
    settle.result = p.result;
    settle.now = now;
    settle.node = p.node;
  };
  if (const auto* commit = std::get_if<EffectCommitParams>(&op.request)) {
    common(*commit);
    settle.as = ledger::EffectState::kCommitted;
    settle.checkpoint = &commit->checkpoint;
  } else {
    common(std::get<EffectFailParams>(op.request));
    settle.as = ledger::EffectState::kFailed;
  }
  ASSIGN_OR_RETURN(answer, EffectSettleLocked(settle));
  op.status = std::move(answer.status);
  return Status::Ok();
}

Status SqlStore::EffectBatchLocked(EffectOpSource& source,
                                      std::vector<std::span<EffectOp>>& taken) {
  // Begun with the first op for the database, so a batch of malformed ops
  // opens none.
  std::optional<Transaction> tx;
  // Whether the transaction holds any op's writes yet. Each op after the
  // first kept one runs in its own savepoint, so that a refusal takes back
  // only its own writes, as its own transaction would have. An op in a
  // transaction that holds nothing needs none (two statements fewer, and
  // the single calls' path): its refusal rolls the transaction back.
  bool holds = false;
  for (std::span<EffectOp> ops = source.Next(); !ops.empty(); ops = source.Next()) {
    taken.push_back(ops);
    for (EffectOp& op : ops) {
      op.status = CheckRequest(op);
      op.begun = {};
      if (!op.status.ok()) continue;
      if (!tx) {
        tx.emplace(*db_);
        RETURN_IF_ERROR(tx->Begin());
      }
      const bool savepoint = holds;
      if (savepoint) RETURN_IF_ERROR(RunStatement(*db_, "SAVEPOINT effect_op"));
      RETURN_IF_ERROR(EffectOpLocked(op));
      // Applied, or refused as stale (its stale_write_rejected event stays):
      // kept. Any other refusal changes nothing.
      const bool keep = op.status.ok() || op.status.code() == StatusCode::kStaleLease;
      if (savepoint) {
        if (!keep) RETURN_IF_ERROR(RunStatement(*db_, "ROLLBACK TO effect_op"));
        RETURN_IF_ERROR(RunStatement(*db_, "RELEASE effect_op"));
      } else if (keep) {
        holds = true;
      } else {
        tx.reset();  // rolls back
      }
    }
  }
  return tx ? tx->Commit() : Status::Ok();
}

Status SqlStore::RunEffectBatch(EffectOpSource& source) {
  std::lock_guard lock(mu_);
  std::vector<std::span<EffectOp>> taken;
  Status failed = EffectBatchLocked(source, taken);
  if (!failed.ok()) {
    // Rolled back: nothing of the batch is durable, whatever each op found.
    for (std::span<EffectOp> ops : taken) {
      for (EffectOp& op : ops) {
        if (!CheckRequest(op).ok()) continue;  // refused before the database
        op.status = failed;
        op.begun = {};
      }
    }
  }
  return failed;
}

Result<EffectBeginResult> SqlStore::EffectBegin(const EffectBeginParams& p) {
  EffectOp op{p, {}, {}};
  RunEffectBatch({&op, 1});
  if (!op.status.ok()) return op.status;
  return std::move(op.begun);
}

Status SqlStore::EffectCommit(const EffectCommitParams& p) {
  EffectOp op{p, {}, {}};
  RunEffectBatch({&op, 1});
  return op.status;
}

Status SqlStore::EffectFail(const EffectFailParams& p) {
  EffectOp op{p, {}, {}};
  RunEffectBatch({&op, 1});
  return op.status;
}

Status SqlStore::CheckpointSet(const CheckpointSetParams& p) {
  EffectOp op{p, {}, {}};
  RunEffectBatch({&op, 1});
  return op.status;
}

}  // namespace cronledger::store
