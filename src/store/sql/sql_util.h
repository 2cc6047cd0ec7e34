// Helpers shared by the SQL store's translation units. Internal.
#ifndef CRONLEDGER_STORE_SQL_SQL_UTIL_H_
#define CRONLEDGER_STORE_SQL_SQL_UTIL_H_

#include <fmt/format.h>

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "store/sql/sql_db.h"
#include "store/store.h"

namespace cronledger::store::sql_util {

using sql::Stmt;
using std::chrono::milliseconds;
using std::chrono::seconds;
using std::chrono::sys_seconds;

inline int64_t Ms(Instant t) { return t.time_since_epoch().count(); }
inline int64_t Ms(sys_seconds t) { return std::chrono::duration_cast<milliseconds>(t.time_since_epoch()).count(); }
inline Instant FromMs(int64_t ms) { return Instant{milliseconds{ms}}; }
inline sys_seconds SecondsFromMs(int64_t ms) {
  return std::chrono::floor<seconds>(sys_seconds{} + milliseconds{ms});
}
// The first whole second at or after `t`.
inline sys_seconds CeilSeconds(Instant t) { return std::chrono::ceil<seconds>(t); }

#define RETURN_IF_ERROR(expr)            \
  do {                                   \
    if (Status _s = (expr); !_s.ok()) {  \
      return _s;                         \
    }                                    \
  } while (0)

#define ASSIGN_OR_RETURN(lhs, expr)      \
  auto lhs##_result = (expr);            \
  if (!lhs##_result.ok()) {              \
    return lhs##_result.status();        \
  }                                      \
  auto lhs = std::move(*lhs##_result)

// The columns RunFromRow reads, in order.
inline constexpr const char* kRunColumns =
    "id, job, partition, period, business_date, scheduled_at, state, reason, released, "
    "misfire_exempt, attempts, job_version, created_at, updated_at";

// Reads a row of kRunColumns into `r`, reusing its strings' storage.
inline void AssignRunFromRow(const Stmt& s, RunRecord* r) {
  r->id = s.Int(0);
  r->job.assign(s.TextView(1));
  r->partition.assign(s.TextView(2));
  r->period.assign(s.TextView(3));
  r->business_date.assign(s.TextView(4));
  r->scheduled_at = SecondsFromMs(s.Int(5));
  r->state = ledger::ParseRunState(s.TextView(6)).value_or(ledger::RunState::kPending);
  r->reason = s.IsNull(7) ? std::nullopt : ledger::ParseSkipReason(s.TextView(7));
  r->released = s.Int(8) != 0;
  r->misfire_exempt = s.Int(9) != 0;
  r->attempts = static_cast<int>(s.Int(10));
  r->job_version = static_cast<int>(s.Int(11));
  r->created_at = FromMs(s.Int(12));
  r->updated_at = FromMs(s.Int(13));
}

inline RunRecord RunFromRow(const Stmt& s) {
  RunRecord r;
  AssignRunFromRow(s, &r);
  return r;
}

// An event about one run; its type, reason and details are the caller's.
inline EventRecord RunEvent(Instant at, std::string_view job, int64_t run_id,
                            std::string_view run_key, std::string_view actor) {
  EventRecord e;
  e.at = at;
  e.job = std::string(job);
  e.run_id = run_id;
  e.run_key = std::string(run_key);
  e.actor = std::string(actor);
  return e;
}

// An operator's or the scanner's action on one run. Bytes in `details` that
// are not UTF-8 (an effect key comes from a job command) are replaced, not
// thrown on.
// `who`: an operator's params (actor, on_behalf_of, reason).
template <typename Who>
EventRecord ActionEvent(std::string_view type, std::string_view job, int64_t run_id,
                        std::string_view run_key, const Who& who, Instant now,
                        const nlohmann::json& details) {
  EventRecord e = RunEvent(now, job, run_id, run_key, who.actor);
  e.type = std::string(type);
  e.on_behalf_of = who.on_behalf_of;
  e.reason = who.reason;
  e.details = details.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return e;
}

// The run `id`; nullopt when there is none.
inline Result<std::optional<RunRecord>> RunById(sql::Db& db, int64_t id) {
  ASSIGN_OR_RETURN(s, db.Prepare(fmt::format("SELECT {} FROM runs WHERE id = ?", kRunColumns)));
  s.Bind(1, id);
  ASSIGN_OR_RETURN(row, s.Step());
  if (!row) return std::optional<RunRecord>();
  return std::optional<RunRecord>(RunFromRow(s));
}

inline EventRecord EventFromRow(const Stmt& s) {
  EventRecord e;
  e.id = s.Int(0);
  e.at = FromMs(s.Int(1));
  e.type = s.Text(2);
  e.job = s.Text(3);
  e.run_id = s.OptInt(4);
  e.run_key = s.Text(5);
  e.actor = s.Text(6);
  e.reason = s.Text(7);
  e.details = s.Text(8);
  e.on_behalf_of = s.Text(9);
  return e;
}

// Steps `stmt` to its end, calling `on_row` for each row (which reads the
// columns from `stmt`).
template <typename OnRow>
Status ForEachRow(Stmt& stmt, OnRow&& on_row) {
  for (;;) {
    auto row = stmt.Step();
    if (!row.ok()) return row.status();
    if (!*row) return Status::Ok();
    on_row();
  }
}

// The claim lane of a run an operator or the scanner puts to work
// (schema 12): a claim takes every due run of kFirst before any of
// kBackfill, so a large backfill never delays the schedule's own runs.
enum class Lane : int64_t {
  kFirst = 0,     // the schedule's runs; an operator's trigger, retry or resolve
  kBackfill = 1,  // queued by a backfill (an operator's or the scanner's), rerun or approval
};

// How a run queued now is due: in `lane` and at once, or at its scheduled
// time if that is earlier (so runs of one lane are claimed oldest
// occurrence first). Nullopt before schema 12: neither column exists.
using QueueLane = std::optional<Lane>;
inline QueueLane LaneIf(bool has_lanes, Lane lane) {
  return has_lanes ? QueueLane(lane) : std::nullopt;
}

// An existing run back to work (operator retry, resolve, backfill, rerun):
// pending, or awaiting approval, with a fresh retry budget, misfire-exempt
// (it is late on purpose).
inline Status RunBackToWork(sql::Db& db, int64_t run_id, Instant now, QueueLane lane,
                            std::string_view state = "pending", bool released = true) {
  ASSIGN_OR_RETURN(
      s,
      db.Prepare(
          lane ? "UPDATE runs SET state = ?1, reason = NULL, released = ?2, misfire_exempt = 1, "
                 "next_attempt_at = NULL, budget_attempts = 0, budget_started_at = NULL, "
                 "finished_at = NULL, updated_at = ?3, lane = ?5, "
                 "due_at = CASE WHEN scheduled_at < ?3 THEN scheduled_at ELSE ?3 END WHERE id = ?4"
               : "UPDATE runs SET state = ?1, reason = NULL, released = ?2, misfire_exempt = 1, "
                 "next_attempt_at = NULL, budget_attempts = 0, budget_started_at = NULL, "
                 "finished_at = NULL, updated_at = ?3 WHERE id = ?4"));
  s.Bind(1, state).Bind(2, int64_t{released ? 1 : 0}).Bind(3, Ms(now)).Bind(4, run_id);
  if (lane) s.Bind(5, static_cast<int64_t>(*lane));
  return s.Run();
}

}  // namespace cronledger::store::sql_util

#endif  // CRONLEDGER_STORE_SQL_SQL_UTIL_H_
