// SqlStore, recovery half: queuing expected keys (the gap scanner's
// automatic backfill, an operator's backfill) and approving runs that wait
// for an operator. store.h has the contract; docs/gaps.md the semantics.
#include <fmt/format.h>
#include <map>
#include <nlohmann/json.hpp>

#include "cronledger/schedule.h"
#include "store/sql/sql_store.h"
#include "store/sql/sql_util.h"

namespace cronledger::store {
namespace {

using namespace sql_util;  // NOLINT: the store's own helpers
using sql::Transaction;

bool Requeueable(const RunRecord& run, bool include_waived) {
  if (run.state != ledger::RunState::kSkipped) return false;
  return !run.reason || *run.reason == ledger::SkipReason::kMisfired || include_waived;
}

// A job's run of one key; nullopt when there is none.
Result<std::optional<RunRecord>> RunByKey(sql::Db& db, const std::string& job,
                                          const QueueKey& k) {
  ASSIGN_OR_RETURN(s, db.Prepare(fmt::format(
      "SELECT {} FROM runs WHERE job = ? AND partition = ? AND period = ?", kRunColumns)));
  s.Bind(1, job).Bind(2, k.partition).Bind(3, k.period);
  ASSIGN_OR_RETURN(row, s.Step());
  if (!row) return std::optional<RunRecord>();
  return std::optional<RunRecord>(RunFromRow(s));
}

Status RequireJob(sql::Db& db, const std::string& job) {
  ASSIGN_OR_RETURN(s, db.Prepare("SELECT 1 FROM jobs WHERE name = ?"));
  s.Bind(1, job);
  ASSIGN_OR_RETURN(row, s.Step());
  if (!row) return NotFound(fmt::format("no job named {} in the ledger", job));
  return Status::Ok();
}

// The run a key never planned would have had, misfire-exempt: it is late
// on purpose. With its occurrence, unless the planner recorded it, or it is
// still ahead: the planner records a future occurrence when it plans it,
// and an occurrence recorded here would mark it planned, its other
// partitions' runs never inserted.
Result<int64_t> InsertKeyRun(sql::Db& db, const std::string& job, const QueueKey& k,
                             std::string_view state, bool released, Instant now, QueueLane lane) {
  if (Ms(k.scheduled_at) <= Ms(now)) {
    ASSIGN_OR_RETURN(s, db.Prepare(
        "INSERT INTO occurrences (job, scheduled_at, local_time, dst, job_version, tzdata, "
        "planned_at) VALUES (?, ?, ?, NULL, ?, ?, ?) ON CONFLICT (job, scheduled_at) DO "
        "NOTHING"));
    s.Bind(1, job).Bind(2, Ms(k.scheduled_at)).Bind(3, k.local_time)
        .Bind(4, int64_t{k.job_version}).Bind(5, k.tzdata).Bind(6, Ms(now));
    RETURN_IF_ERROR(s.Run());
  }
  ASSIGN_OR_RETURN(
      s, db.Prepare(
             lane ? "INSERT INTO runs (job, partition, period, business_date, scheduled_at, "
                    "job_version, state, released, misfire_exempt, created_at, updated_at, due_at, "
                    "lane) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ?)"
                  : "INSERT INTO runs (job, partition, period, business_date, scheduled_at, "
                    "job_version, state, released, misfire_exempt, created_at, updated_at) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?)"));
  s.Bind(1, job).Bind(2, k.partition).Bind(3, k.period).Bind(4, k.business_date)
      .Bind(5, Ms(k.scheduled_at)).Bind(6, int64_t{k.job_version}).Bind(7, state)
      .Bind(8, int64_t{released ? 1 : 0}).Bind(9, Ms(now)).Bind(10, Ms(now));
  if (lane) {
    s.Bind(11, std::min(Ms(k.scheduled_at), Ms(now))).Bind(12, static_cast<int64_t>(*lane));
  }
  RETURN_IF_ERROR(s.Run());
  return db.LastInsertRowId();
}

std::string SeenName(const std::optional<ledger::RunState>& s) {
  return s ? std::string(ledger::Name(*s)) : std::string("no run");
}

}  // namespace

Result<QueueKeysResult> SqlStore::RunQueueKeys(const QueueKeysParams& p) {
  if (p.as != ledger::RunState::kPending && p.as != ledger::RunState::kAwaitingApproval) {
    return Status(StatusCode::kInvalidArgument, "keys are queued as pending or awaiting_approval");
  }
  WriteTransaction tx(*this);
  ASSIGN_OR_RETURN(now, tx.Begin(p.now));
  RETURN_IF_ERROR(RequireJob(*db_, p.job));
  const bool released = p.as == ledger::RunState::kPending;
  const std::string_view state = ledger::Name(p.as);
  const QueueLane lane = LaneIf(HasLanes(), Lane::kBackfill);
  QueueKeysResult out;
  for (const QueueKey& k : p.keys) {
    const std::string run_key = p.job + "/" + k.partition + "/" + k.period;
    ASSIGN_OR_RETURN(run, RunByKey(*db_, p.job, k));
    int64_t id = 0;
    std::string from;
    if (!run) {
      ASSIGN_OR_RETURN(inserted, InsertKeyRun(*db_, p.job, k, state, released, now, lane));
      id = inserted;
      from = "never_planned";
    } else if (Requeueable(*run, p.include_waived)) {
      RETURN_IF_ERROR(RunBackToWork(*db_, run->id, now, lane, state, released));
      id = run->id;
      from = run->reason ? std::string(ledger::Name(*run->reason)) : "skipped";
    } else {
      out.left_alone.push_back(run_key);
      continue;
    }
    out.queued.push_back(id);
    if (p.event_type.empty()) continue;
    const EventRecord e = ActionEvent(p.event_type, p.job, id, run_key, p, now,
                                      {{"from", from},
                                       {"to", state},
                                       {"business_date", k.business_date},
                                       {"scheduled_at", FormatUtc(k.scheduled_at)}});
    const int64_t ids[] = {id};
    RETURN_IF_ERROR(AppendActionLocked(e, ids).status());
  }
  RETURN_IF_ERROR(tx.Commit());
  return out;
}

Result<RequeueResult> SqlStore::RunRequeue(const RequeueParams& p) {
  if (p.keys.empty()) return Status(StatusCode::kInvalidArgument, "no run keys to queue");
  auto extra = nlohmann::json::parse(p.details, nullptr, false);
  if (!extra.is_object()) {
    return Status(StatusCode::kInvalidArgument, "the action's details are not a JSON object");
  }
  WriteTransaction tx(*this);
  ASSIGN_OR_RETURN(now, tx.Begin(p.now));
  RETURN_IF_ERROR(RequireJob(*db_, p.job));
  // A trigger runs its key now, before the due backfills; a backfill or
  // rerun waits behind the schedule's own runs.
  const QueueLane lane =
      LaneIf(HasLanes(), p.event_type == ledger::event::kTrigger ? Lane::kFirst : Lane::kBackfill);
  RequeueResult out;
  nlohmann::json run_keys = nlohmann::json::array();
  std::map<std::string, int> from_counts;
  for (const RequeueKey& rk : p.keys) {
    const QueueKey& k = rk.key;
    const std::string run_key = p.job + "/" + k.partition + "/" + k.period;
    ASSIGN_OR_RETURN(run, RunByKey(*db_, p.job, k));
    const std::optional<ledger::RunState> now_state =
        run ? std::optional<ledger::RunState>(run->state) : std::nullopt;
    if (now_state != rk.seen) {
      return Status(StatusCode::kFailedPrecondition,
                    fmt::format("the ledger changed since the preview: {} is now {}, the preview "
                                "saw {}",
                                run_key, SeenName(now_state), SeenName(rk.seen)));
    }
    int64_t id = 0;
    if (!run) {
      ASSIGN_OR_RETURN(inserted, InsertKeyRun(*db_, p.job, k, "pending", true, now, lane));
      id = inserted;
      ++from_counts["never_planned"];
    } else {
      using ledger::RunState;
      if (run->state == RunState::kPending || run->state == RunState::kRunning) {
        return Status(StatusCode::kConflict,
                      fmt::format("{} is {}: it is in flight already", run_key,
                                  ledger::Name(run->state)));
      }
      RETURN_IF_ERROR(RunBackToWork(*db_, run->id, now, lane));
      if (p.from_first_step || run->state == RunState::kSucceeded) {
        ASSIGN_OR_RETURN(s, db_->Prepare(
            "UPDATE run_steps SET state = 'pending', attempt = NULL, updated_at = ? "
            "WHERE run_id = ?"));
        s.Bind(1, Ms(now)).Bind(2, run->id);
        RETURN_IF_ERROR(s.Run());
      }
      id = run->id;
      ++from_counts[std::string(ledger::Name(run->state))];
    }
    out.queued.push_back(id);
    run_keys.push_back(run_key);
  }
  extra["run_keys"] = run_keys;
  extra["run_ids"] = out.queued;
  extra["from"] = from_counts;
  extra["from_first_step"] = p.from_first_step;
  EventRecord e;
  e.at = now;
  e.type = p.event_type;
  e.job = p.job;
  if (out.queued.size() == 1) {
    e.run_id = out.queued.front();
    e.run_key = run_keys.front().get<std::string>();
  }
  e.actor = p.actor;
  e.on_behalf_of = p.on_behalf_of;
  e.reason = p.reason;
  e.details = extra.dump();
  ASSIGN_OR_RETURN(event_id, AppendActionLocked(e, out.queued));
  out.event_id = event_id;
  RETURN_IF_ERROR(tx.Commit());
  return out;
}

Result<std::vector<int64_t>> SqlStore::RunApprove(const ApproveParams& p) {
  WriteTransaction tx(*this);
  ASSIGN_OR_RETURN(now, tx.Begin(p.now));
  std::vector<RunRecord> runs;
  if (p.run_id) {
    ASSIGN_OR_RETURN(found, RunById(*db_, *p.run_id));
    if (!found) return NotFound(fmt::format("no run with id {}", *p.run_id));
    RunRecord r = std::move(*found);
    if (r.state != ledger::RunState::kAwaitingApproval) {
      return Status(StatusCode::kConflict,
                    fmt::format("run {} is {}; only runs awaiting approval can be approved",
                                r.id, ledger::Name(r.state)));
    }
    runs.push_back(std::move(r));
  } else {
    ASSIGN_OR_RETURN(
        s, db_->Prepare(
               fmt::format("SELECT {} FROM runs WHERE job = ?1 AND state = 'awaiting_approval' AND "
                           "(CAST(?2 AS TEXT) IS NULL OR business_date >= ?2) "
                           "AND (CAST(?3 AS TEXT) IS NULL OR business_date <= ?3) "
                           "ORDER BY scheduled_at, id",
                           kRunColumns)));
    s.Bind(1, p.job);
    if (p.from) s.Bind(2, *p.from); else s.Bind(2, std::nullopt);
    if (p.to) s.Bind(3, *p.to); else s.Bind(3, std::nullopt);
    RETURN_IF_ERROR(ForEachRow(s, [&] { runs.push_back(RunFromRow(s)); }));
  }
  std::vector<int64_t> approved;
  for (const RunRecord& r : runs) {
    RETURN_IF_ERROR(RunBackToWork(*db_, r.id, now, LaneIf(HasLanes(), Lane::kBackfill)));
    const EventRecord e = ActionEvent(ledger::event::kApprove, r.job, r.id, r.RunKey(), p, now,
                                      {{"business_date", r.business_date}});
    const int64_t ids[] = {r.id};
    RETURN_IF_ERROR(AppendActionLocked(e, ids).status());
    approved.push_back(r.id);
  }
  RETURN_IF_ERROR(tx.Commit());
  return approved;
}

Status SqlStore::RunCancel(const OperatorParams& p) {
  WriteTransaction tx(*this);
  ASSIGN_OR_RETURN(now, tx.Begin(p.now));
  ASSIGN_OR_RETURN(found, RunById(*db_, p.run_id));
  if (!found) return NotFound(fmt::format("no run with id {}", p.run_id));
  const RunRecord run = std::move(*found);
  using ledger::RunState;
  if (run.state != RunState::kPending && run.state != RunState::kAwaitingApproval &&
      run.state != RunState::kFailed && run.state != RunState::kUnknown) {
    return Status(StatusCode::kConflict,
                  fmt::format("run {} is {}; only pending, awaiting_approval, failed or unknown "
                              "runs can be cancelled",
                              run.id, ledger::Name(run.state)));
  }
  {
    ASSIGN_OR_RETURN(s, db_->Prepare(
        "UPDATE runs SET state = 'cancelled', reason = NULL, next_attempt_at = NULL, "
        "finished_at = ?1, updated_at = ?1 WHERE id = ?2"));
    s.Bind(1, Ms(now)).Bind(2, run.id);
    RETURN_IF_ERROR(s.Run());
  }
  const EventRecord e = ActionEvent(ledger::event::kCancel, run.job, run.id, run.RunKey(), p, now,
                                    {{"from", ledger::Name(run.state)}});
  RETURN_IF_ERROR(AppendEventLocked(e));
  return tx.Commit();
}

}  // namespace cronledger::store
