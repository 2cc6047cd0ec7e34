#include "store/sql/sql_store.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "cronledger/schedule.h"
#include "ledger/names.h"
#include "store/definition_diff.h"
#include "store/sql/sql_util.h"

namespace cronledger::store {
namespace {

using namespace sql_util;  // NOLINT: the store's own helpers

using sql::Db;
using sql::Stmt;
using sql::Transaction;
using std::chrono::milliseconds;
using std::chrono::seconds;
using std::chrono::sys_seconds;

// {"key": {"from": old, "to": new}} for every top-level key that differs.
nlohmann::json Diff(const std::string& before, const std::string& after) {
  nlohmann::json changes = nlohmann::json::object();
  for (auto& c : DiffDefinitions(before, after)) {
    changes[c.key] = {{"from", std::move(c.before)}, {"to", std::move(c.after)}};
  }
  return changes;
}

}  // namespace

Instant ToInstant(std::chrono::system_clock::time_point t) {
  return std::chrono::floor<milliseconds>(t);
}

Result<Instant> SqlStore::TransactionNow(const std::optional<Instant>& given) {
  if (given) return *given;
  return InvalidArgument(fmt::format(
      "{}: a call without `now`: this store has no clock of its own; pass the caller's", Name()));
}

std::string SqlStore::NowSql(int param) const {
  return fmt::format("coalesce(?{}, {})", param, db_->ClockSql());
}

Result<std::optional<int64_t>> SqlStore::StatementNow(const std::optional<Instant>& given) {
  ASSIGN_OR_RETURN(at, TransactionNow(given));
  return std::optional<int64_t>(Ms(at));
}

void SqlStore::SetStatementHook(sql::StatementHook hook) {
  std::lock_guard lock(mu_);
  db_->SetStatementHook(std::move(hook));
}

Status SqlStore::Migrate(std::span<const Migration> migrations, int schema_version,
                         int compatible_from_written, std::string_view where,
                         const std::function<Status()>& verify) {
  schema_version_ = schema_version;
  Db& d = *db_;
  Transaction tx(d);
  RETURN_IF_ERROR(tx.Begin());
  RETURN_IF_ERROR(d.Exec(
      "CREATE TABLE IF NOT EXISTS schema_meta (id INTEGER PRIMARY KEY CHECK (id = 1), "
      "version INTEGER NOT NULL, compatible_from INTEGER NOT NULL)"));
  int version = 0;
  int compatible_from = 0;
  {
    ASSIGN_OR_RETURN(s, d.Prepare("SELECT version, compatible_from FROM schema_meta"));
    ASSIGN_OR_RETURN(row, s.Step());
    if (row) {
      version = static_cast<int>(s.Int(0));
      compatible_from = static_cast<int>(s.Int(1));
    }
  }
  if (compatible_from > schema_version) {
    return Status(StatusCode::kFailedPrecondition,
                  fmt::format("the database {} has schema version {} and needs cronledger with "
                              "schema version {} or newer; this cronledger {} has schema "
                              "version {}: upgrade cronledger",
                              where, version, compatible_from, CRONLEDGER_VERSION,
                              schema_version));
  }
  bool migrated = false;
  for (const Migration& m : migrations) {
    if (m.number <= version) continue;
    RETURN_IF_ERROR(d.Exec(m.sql));
    version = m.number;
    migrated = true;
  }
  if (migrated && verify) RETURN_IF_ERROR(verify());
  {
    ASSIGN_OR_RETURN(s, d.Prepare(
        "INSERT INTO schema_meta (id, version, compatible_from) VALUES (1, ?1, ?2) "
        "ON CONFLICT (id) DO UPDATE SET "
        "version = CASE WHEN schema_meta.version > ?1 THEN schema_meta.version ELSE ?1 END, "
        "compatible_from = CASE WHEN schema_meta.compatible_from > ?2 "
        "THEN schema_meta.compatible_from ELSE ?2 END"));
    s.Bind(1, int64_t{version}).Bind(2, int64_t{compatible_from_written});
    RETURN_IF_ERROR(s.Run());
  }
  return tx.Commit();
}

Status SqlStore::RequireSchema(int schema_version, std::string_view where) {
  schema_version_ = schema_version;
  int version = 0;
  int compatible_from = 0;
  {
    auto s = db_->Prepare("SELECT version, compatible_from FROM schema_meta");
    Result<bool> row = s.ok() ? s->Step() : Result<bool>(s.status());
    if (!row.ok() && (row.status().code() == StatusCode::kUnavailable ||
                      row.status().code() == StatusCode::kIOError)) {
      return row.status();
    }
    if (!row.ok() || !*row) {
      return Status(StatusCode::kFailedPrecondition,
                    fmt::format("{} holds no cronledger ledger (no schema), and a read-only "
                                "command does not write one: start `cronledger serve` with this "
                                "config first",
                                where));
    }
    version = static_cast<int>(s->Int(0));
    compatible_from = static_cast<int>(s->Int(1));
  }
  if (compatible_from > schema_version) {
    return Status(StatusCode::kFailedPrecondition,
                  fmt::format("the database {} has schema version {} and needs cronledger with "
                              "schema version {} or newer; this cronledger {} has schema "
                              "version {}: upgrade cronledger",
                              where, version, compatible_from, CRONLEDGER_VERSION, schema_version));
  }
  if (version < schema_version) {
    return Status(StatusCode::kFailedPrecondition,
                  fmt::format("the database {} has schema version {}, older than this "
                              "cronledger's {}, and a read-only command does not migrate it: "
                              "start `cronledger serve` of this release (it migrates at start), "
                              "then run this again",
                              where, version, schema_version));
  }
  return Status::Ok();
}

Result<SchemaInfo> SqlStore::GetSchemaInfo() {
  std::lock_guard lock(mu_);
  ASSIGN_OR_RETURN(s, db_->Prepare("SELECT version, compatible_from FROM schema_meta"));
  ASSIGN_OR_RETURN(row, s.Step());
  if (!row) return Internal("schema_meta is empty");
  return SchemaInfo{static_cast<int>(s.Int(0)), static_cast<int>(s.Int(1))};
}

namespace {

constexpr int kEventColumns = 9;

// `e` must outlive the statement's run (its text is bound in place).
void BindEvent(Stmt& s, int first, const EventRecord& e, bool callers) {
  const auto text_or_null = [&](int i, const std::string& v) {
    if (v.empty()) {
      s.Bind(i, std::nullopt);
    } else {
      s.BindInPlace(i, v);
    }
  };
  s.Bind(first, Ms(e.at)).BindInPlace(first + 1, e.type);
  text_or_null(first + 2, e.job);
  s.BindOptional(first + 3, e.run_id);
  text_or_null(first + 4, e.run_key);
  s.BindInPlace(first + 5, e.actor);
  text_or_null(first + 6, e.reason);
  s.BindInPlace(first + 7,
                e.details.empty() ? std::string_view("{}") : std::string_view(e.details));
  if (callers) text_or_null(first + 8, e.on_behalf_of);
}

constexpr std::string_view kEventInsert =
    "INSERT INTO events (at, type, job, run_id, run_key, actor, reason, details, on_behalf_of) "
    "VALUES ";
// Before schema 11 (a test acting as an earlier release).
constexpr std::string_view kEventInsertBefore11 =
    "INSERT INTO events (at, type, job, run_id, run_key, actor, reason, details) VALUES ";

}  // namespace

Status SqlStore::InsertEventLocked(const EventRecord& e) {
  const bool callers = HasCallers();
  return InsertRowsLocked(
      callers ? kEventInsert : kEventInsertBefore11, callers ? kEventColumns : kEventColumns - 1, 1,
      [&](Stmt& s, int first, std::size_t) { BindEvent(s, first, e, callers); });
}

Status SqlStore::AppendEventLocked(const EventRecord& e) {
  if (e.type == ledger::event::kStaleWriteRejected) db_->Tally();
  if (held_events_ == nullptr) return InsertEventLocked(e);
  held_events_->push_back(e);
  return Status::Ok();
}

Status SqlStore::AppendEventLocked(EventRecord&& e) {
  if (e.type == ledger::event::kStaleWriteRejected) db_->Tally();
  if (held_events_ == nullptr) return InsertEventLocked(e);
  held_events_->push_back(std::move(e));
  return Status::Ok();
}

Status SqlStore::FlushHeldEventsLocked() {
  if (held_events_ == nullptr || held_events_->empty()) return Status::Ok();
  const std::vector<EventRecord> events = std::exchange(*held_events_, {});
  const bool callers = HasCallers();
  return InsertRowsLocked(
      callers ? kEventInsert : kEventInsertBefore11, callers ? kEventColumns : kEventColumns - 1,
      events.size(),
      [&](Stmt& s, int first, std::size_t i) { BindEvent(s, first, events[i], callers); });
}

Status SqlStore::InsertRowsLocked(std::string_view head, int columns, std::size_t rows,
                                  const std::function<void(Stmt&, int, std::size_t)>& bind) {
  // A few fixed statement sizes, so that each is prepared once and cached.
  static constexpr std::size_t kChunks[] = {64, 16, 4, 1};
  std::string row = "(";
  for (int c = 0; c < columns; ++c) row += c == 0 ? "?" : ", ?";
  row += ")";
  std::size_t done = 0;
  for (const std::size_t chunk : kChunks) {
    if (rows - done < chunk) continue;
    std::string sql(head);
    for (std::size_t r = 0; r < chunk; ++r) {
      if (r != 0) sql += ", ";
      sql += row;
    }
    while (rows - done >= chunk) {
      ASSIGN_OR_RETURN(s, db_->Prepare(sql));
      for (std::size_t r = 0; r < chunk; ++r) {
        bind(s, static_cast<int>(r) * columns + 1, done + r);
      }
      RETURN_IF_ERROR(s.Run());
      done += chunk;
    }
  }
  return Status::Ok();
}

Result<int64_t> SqlStore::AppendActionLocked(const EventRecord& e,
                                                std::span<const int64_t> run_ids) {
  // Its id is needed now: whatever is held goes first, in order.
  RETURN_IF_ERROR(FlushHeldEventsLocked());
  RETURN_IF_ERROR(InsertEventLocked(e));
  ASSIGN_OR_RETURN(event_id, db_->LastInsertRowId());
  for (const int64_t run_id : run_ids) {
    {
      ASSIGN_OR_RETURN(s, db_->Prepare(
          "INSERT INTO event_runs (event_id, run_id) VALUES (?, ?) ON CONFLICT DO NOTHING"));
      s.Bind(1, event_id).Bind(2, run_id);
      RETURN_IF_ERROR(s.Run());
    }
    ASSIGN_OR_RETURN(s, db_->Prepare("UPDATE runs SET action_event_id = ? WHERE id = ?"));
    s.Bind(1, event_id).Bind(2, run_id);
    RETURN_IF_ERROR(s.Run());
  }
  return event_id;
}

Status SqlStore::EventAppend(const EventRecord& e) {
  return EventAppendAll(std::vector<EventRecord>{e});
}

// Each event's `at` is its pin: on the database's clock they all get the
// transaction's instant.
Status SqlStore::EventAppendAll(const std::vector<EventRecord>& events) {
  WriteTransaction tx(*this);
  RETURN_IF_ERROR(tx.Begin());
  for (const auto& e : events) {
    ASSIGN_OR_RETURN(at, TransactionNow(e.at));
    if (at == e.at) {
      RETURN_IF_ERROR(AppendEventLocked(e));
    } else {
      EventRecord stamped = e;
      stamped.at = at;
      RETURN_IF_ERROR(AppendEventLocked(std::move(stamped)));
    }
  }
  return tx.Commit();
}

Result<std::vector<JobVersion>> SqlStore::VersionsLocked(std::string_view job) {
  ASSIGN_OR_RETURN(s, db_->Prepare(
      "SELECT version, effective_from, definition FROM job_versions WHERE job = ? "
      "ORDER BY version"));
  s.Bind(1, job);
  std::vector<JobVersion> out;
  RETURN_IF_ERROR(ForEachRow(s, [&] {
    out.push_back({std::string(job), static_cast<int>(s.Int(0)), SecondsFromMs(s.Int(1)),
                   s.Text(2)});
  }));
  return out;
}

Result<std::optional<int64_t>> SqlStore::PlannedThroughLocked(std::string_view job) {
  ASSIGN_OR_RETURN(s, db_->Prepare("SELECT planned_through FROM jobs WHERE name = ?"));
  s.Bind(1, job);
  ASSIGN_OR_RETURN(row, s.Step());
  if (!row) return NotFound(fmt::format("no job \"{}\" in the ledger", job));
  return s.OptInt(0);
}

Result<JobSyncResult> SqlStore::JobSync(const JobSyncParams& p) {
  std::lock_guard lock(mu_);
  {
    // Every planning pass syncs every job; an unchanged definition (the
    // usual case) is settled with one read, without the write lock.
    ASSIGN_OR_RETURN(s, db_->Prepare(
        "SELECT v.definition FROM jobs j JOIN job_versions v ON v.job = j.name AND "
        "v.version = j.current_version WHERE j.name = ?"));
    s.Bind(1, p.job);
    ASSIGN_OR_RETURN(row, s.Step());
    if (row && s.Text(0) == p.definition) {
      ASSIGN_OR_RETURN(versions, VersionsLocked(p.job));
      JobSyncResult unchanged;
      unchanged.versions = std::move(versions);
      return unchanged;
    }
  }
  Transaction tx(*db_);
  RETURN_IF_ERROR(tx.Begin());
  ASSIGN_OR_RETURN(now, TransactionNow(p.now));
  JobSyncResult result;
  int current = 0;
  std::optional<int64_t> planned_through;
  {
    ASSIGN_OR_RETURN(s, db_->Prepare(
        "SELECT current_version, planned_through FROM jobs WHERE name = ?"));
    s.Bind(1, p.job);
    ASSIGN_OR_RETURN(row, s.Step());
    if (row) {
      current = static_cast<int>(s.Int(0));
      planned_through = s.OptInt(1);
    }
  }
  if (current == 0) {
    ASSIGN_OR_RETURN(s, db_->Prepare(
        "INSERT INTO jobs (name, created_at) VALUES (?, ?) ON CONFLICT (name) DO NOTHING"));
    s.Bind(1, p.job).Bind(2, Ms(now));
    RETURN_IF_ERROR(s.Run());
    result.created = db_->Changes() > 0;
  }
  std::string previous;
  if (current > 0) {
    ASSIGN_OR_RETURN(s, db_->Prepare(
        "SELECT definition FROM job_versions WHERE job = ? AND version = ?"));
    s.Bind(1, p.job).Bind(2, int64_t{current});
    ASSIGN_OR_RETURN(row, s.Step());
    if (row) previous = s.Text(0);
  }
  if (current == 0 || previous != p.definition) {
    sys_seconds effective = CeilSeconds(now);
    if (planned_through) effective = std::max(effective, SecondsFromMs(*planned_through) + seconds{1});
    const int version = current + 1;
    {
      ASSIGN_OR_RETURN(s, db_->Prepare(
          "INSERT INTO job_versions (job, version, effective_from, definition, created_at) "
          "VALUES (?, ?, ?, ?, ?)"));
      s.Bind(1, p.job).Bind(2, int64_t{version}).Bind(3, Ms(effective)).Bind(4, p.definition)
          .Bind(5, Ms(now));
      RETURN_IF_ERROR(s.Run());
    }
    {
      ASSIGN_OR_RETURN(s, db_->Prepare("UPDATE jobs SET current_version = ? WHERE name = ?"));
      s.Bind(1, int64_t{version}).Bind(2, p.job);
      RETURN_IF_ERROR(s.Run());
    }
    nlohmann::json details = {{"version", version}, {"effective_from", FormatUtc(effective)}};
    if (current == 0) {
      details["definition"] = nlohmann::json::parse(p.definition, nullptr, false);
    } else {
      details["changes"] = Diff(previous, p.definition);
    }
    EventRecord e;
    e.at = now;
    e.type = ledger::event::kConfigChanged;
    e.job = p.job;
    e.actor = p.actor;
    e.reason = current == 0 ? "job added" : "definition changed";
    e.details = details.dump();
    RETURN_IF_ERROR(AppendEventLocked(e));
    result.version_added = true;
  }
  ASSIGN_OR_RETURN(versions, VersionsLocked(p.job));
  result.versions = std::move(versions);
  RETURN_IF_ERROR(tx.Commit());
  return result;
}

namespace {

constexpr const char* kJobColumns =
    "name, paused, paused_at, paused_by, pause_reason, planned_through, current_version";

JobRecord JobFromRow(const Stmt& s) {
  JobRecord j;
  j.name = s.Text(0);
  j.paused = s.Int(1) != 0;
  if (auto at = s.OptInt(2)) j.paused_at = FromMs(*at);
  j.paused_by = s.Text(3);
  j.pause_reason = s.Text(4);
  if (auto pt = s.OptInt(5)) j.planned_through = SecondsFromMs(*pt);
  j.current_version = static_cast<int>(s.Int(6));
  return j;
}

}  // namespace

Result<std::vector<JobRecord>> SqlStore::JobList() {
  std::lock_guard lock(mu_);
  ASSIGN_OR_RETURN(s, db_->Prepare(fmt::format("SELECT {} FROM jobs ORDER BY name", kJobColumns)));
  std::vector<JobRecord> out;
  RETURN_IF_ERROR(ForEachRow(s, [&] { out.push_back(JobFromRow(s)); }));
  return out;
}

Result<JobRecord> SqlStore::JobGet(std::string_view job) {
  std::lock_guard lock(mu_);
  ASSIGN_OR_RETURN(s, db_->Prepare(fmt::format("SELECT {} FROM jobs WHERE name = ?", kJobColumns)));
  s.Bind(1, job);
  ASSIGN_OR_RETURN(row, s.Step());
  if (!row) return NotFound(fmt::format("no job \"{}\" in the ledger", job));
  return JobFromRow(s);
}

Result<std::vector<JobVersion>> SqlStore::JobVersionList(std::string_view job) {
  std::lock_guard lock(mu_);
  return VersionsLocked(job);
}

Result<PartitionSyncResult> SqlStore::PartitionSync(const PartitionSyncParams& p) {
  WriteTransaction tx(*this);
  ASSIGN_OR_RETURN(now, tx.Begin(p.now));
  ASSIGN_OR_RETURN(planned_through, PlannedThroughLocked(p.job));
  sys_seconds boundary = CeilSeconds(now);
  if (planned_through) {
    boundary = std::max(boundary, SecondsFromMs(*planned_through) + seconds{1});
  }
  std::set<std::string> current;
  {
    ASSIGN_OR_RETURN(s, db_->Prepare(
        "SELECT partition FROM partitions WHERE job = ? AND active_to IS NULL"));
    s.Bind(1, p.job);
    RETURN_IF_ERROR(ForEachRow(s, [&] {
      current.insert(s.Text(0));
    }));
  }
  const std::set<std::string> wanted(p.active.begin(), p.active.end());
  PartitionSyncResult result;
  std::set_difference(wanted.begin(), wanted.end(), current.begin(), current.end(),
                      std::back_inserter(result.added));
  std::set_difference(current.begin(), current.end(), wanted.begin(), wanted.end(),
                      std::back_inserter(result.removed));
  for (const auto& partition : result.added) {
    ASSIGN_OR_RETURN(s, db_->Prepare(
        "INSERT INTO partitions (job, partition, active_from, active_to) VALUES (?, ?, ?, NULL) "
        "ON CONFLICT (job, partition, active_from) DO UPDATE SET active_to = NULL"));
    s.Bind(1, p.job).Bind(2, partition).Bind(3, Ms(boundary));
    RETURN_IF_ERROR(s.Run());
  }
  for (const auto& partition : result.removed) {
    ASSIGN_OR_RETURN(s, db_->Prepare(
        "UPDATE partitions SET active_to = ? WHERE job = ? AND partition = ? AND "
        "active_to IS NULL"));
    s.Bind(1, Ms(boundary)).Bind(2, p.job).Bind(3, partition);
    RETURN_IF_ERROR(s.Run());
  }
  if (!result.added.empty() || !result.removed.empty()) {
    EventRecord e;
    e.at = now;
    e.type = ledger::event::kPartitionsChanged;
    e.job = p.job;
    e.actor = "planner";
    e.details = nlohmann::json{{"added", result.added},
                               {"removed", result.removed},
                               {"effective_from", FormatUtc(boundary)}}
                    .dump();
    RETURN_IF_ERROR(AppendEventLocked(e));
  }
  RETURN_IF_ERROR(tx.Commit());
  return result;
}

Result<std::vector<PartitionInterval>> SqlStore::PartitionHistory(std::string_view job) {
  std::lock_guard lock(mu_);
  ASSIGN_OR_RETURN(s, db_->Prepare(
      "SELECT partition, active_from, active_to FROM partitions WHERE job = ? "
      "ORDER BY partition, active_from"));
  s.Bind(1, job);
  std::vector<PartitionInterval> out;
  RETURN_IF_ERROR(ForEachRow(s, [&] {
    PartitionInterval i{std::string(job), s.Text(0), SecondsFromMs(s.Int(1)), std::nullopt};
    if (auto to = s.OptInt(2)) i.active_to = SecondsFromMs(*to);
    out.push_back(std::move(i));
  }));
  return out;
}

Result<PlanResult> SqlStore::RunPlan(const PlanParams& p) {
  WriteTransaction tx(*this);
  ASSIGN_OR_RETURN(now, tx.Begin(p.now));
  PlanResult result;
  for (const PlannedOccurrence& occ : p.occurrences) {
    {
      ASSIGN_OR_RETURN(s, db_->Prepare(
          "INSERT INTO occurrences (job, scheduled_at, local_time, dst, job_version, tzdata, "
          "planned_at) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (job, scheduled_at) DO NOTHING"));
      s.Bind(1, p.job).Bind(2, Ms(occ.scheduled_at)).Bind(3, occ.local_time);
      if (occ.dst.empty()) {
        s.Bind(4, std::nullopt);
      } else {
        s.Bind(4, occ.dst);
      }
      s.Bind(5, int64_t{occ.job_version}).Bind(6, occ.tzdata).Bind(7, Ms(now));
      RETURN_IF_ERROR(s.Run());
    }
    if (db_->Changes() == 0) continue;  // planned before: re-planning is a no-op
    ++result.occurrences_new;
    std::vector<std::string> deduplicated;
    for (const auto& run : occ.runs) {
      {
        // Due at its scheduled time (?5); a binary before schema 12 has no
        // due_at (the ledger's trigger fills it in).
        ASSIGN_OR_RETURN(
            s, db_->Prepare(
                   HasLanes()
                       ? "INSERT INTO runs (job, partition, period, business_date, scheduled_at, "
                         "job_version, state, created_at, updated_at, due_at) VALUES (?1, ?2, "
                         "?3, ?4, ?5, ?6, 'pending', ?7, ?8, ?5) "
                         "ON CONFLICT (job, partition, period) DO NOTHING"
                       : "INSERT INTO runs (job, partition, period, business_date, scheduled_at, "
                         "job_version, state, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, "
                         "'pending', ?, ?) ON CONFLICT (job, partition, period) DO NOTHING"));
        s.Bind(1, p.job).Bind(2, run.partition).Bind(3, run.period).Bind(4, run.business_date)
            .Bind(5, Ms(occ.scheduled_at)).Bind(6, int64_t{occ.job_version}).Bind(7, Ms(now))
            .Bind(8, Ms(now));
        RETURN_IF_ERROR(s.Run());
      }
      if (db_->Changes() == 0) {
        deduplicated.push_back(run.partition);
        continue;
      }
      ++result.runs_planned;
      EventRecord e;
      e.at = now;
      e.type = ledger::event::kPlanned;
      e.job = p.job;
      ASSIGN_OR_RETURN(run_id, db_->LastInsertRowId());
      e.run_id = run_id;
      e.run_key = p.job + "/" + run.partition + "/" + run.period;
      e.actor = "planner";
      nlohmann::json details = {{"scheduled_at", FormatUtc(occ.scheduled_at)},
                                {"local_time", occ.local_time},
                                {"business_date", run.business_date},
                                {"job_version", occ.job_version},
                                {"tzdata", occ.tzdata}};
      if (!occ.dst.empty()) details["dst"] = occ.dst;
      e.details = details.dump();
      RETURN_IF_ERROR(AppendEventLocked(e));
    }
    if (!deduplicated.empty()) {
      result.runs_deduplicated += static_cast<int>(deduplicated.size());
      // One event per occurrence, not per partition: a fine schedule with
      // key = "date" would otherwise flood the log.
      EventRecord e;
      e.at = now;
      e.type = ledger::event::kDeduplicated;
      e.job = p.job;
      e.actor = "planner";
      e.reason = "period already planned";
      nlohmann::json details = {{"scheduled_at", FormatUtc(occ.scheduled_at)},
                                {"local_time", occ.local_time},
                                {"period", occ.runs.front().period},
                                {"runs", deduplicated.size()}};
      if (deduplicated.size() <= 20) details["partitions"] = deduplicated;
      e.details = details.dump();
      RETURN_IF_ERROR(AppendEventLocked(e));
    }
  }
  {
    ASSIGN_OR_RETURN(s, db_->Prepare(
        "UPDATE jobs SET planned_through = CASE WHEN planned_through > ?1 THEN planned_through "
        "ELSE ?1 END "
        "WHERE name = ?2"));
    s.Bind(1, Ms(p.planned_through)).Bind(2, p.job);
    RETURN_IF_ERROR(s.Run());
    if (db_->Changes() == 0) return NotFound(fmt::format("no job \"{}\" in the ledger", p.job));
  }
  RETURN_IF_ERROR(tx.Commit());
  return result;
}

Result<ReleaseOutlook> SqlStore::RunReleaseOutlook(std::optional<Instant> now) {
  std::lock_guard lock(mu_);
  ReleaseOutlook out;
  ASSIGN_OR_RETURN(pinned, StatementNow(now));
  int64_t at = 0;
  {
    // First the aggregate, which always answers a row: with the instant it
    // judged by, which the second statement then uses (one instant per call).
    ASSIGN_OR_RETURN(s, db_->Prepare(fmt::format(
        "SELECT min(scheduled_at), {0} FROM runs WHERE state = 'pending' AND released = 0 "
        "AND scheduled_at > {0}",
        NowSql(1))));
    s.BindOptional(1, pinned);
    ASSIGN_OR_RETURN(row, s.Step());
    if (!row || s.IsNull(1)) return Internal("the release outlook read no instant");
    if (!s.IsNull(0)) out.next_at = SecondsFromMs(s.Int(0));
    at = s.Int(1);
  }
  {
    ASSIGN_OR_RETURN(s, db_->Prepare(
        "SELECT DISTINCT job FROM runs WHERE state = 'pending' AND released = 0 "
        "AND scheduled_at <= ? ORDER BY job"));
    s.Bind(1, at);
    RETURN_IF_ERROR(ForEachRow(s, [&] { out.due_jobs.push_back(s.Text(0)); }));
  }
  return out;
}

Result<ReleaseResult> SqlStore::RunRelease(const ReleaseParams& p) {
  std::lock_guard lock(mu_);
  {
    // Runs every second for every job: look before taking the write lock,
    // so that a job with nothing newly due costs one read. (On the
    // database's clock this look's instant is a little earlier than the
    // transaction's: it can only find less due, never more.)
    ASSIGN_OR_RETURN(at, StatementNow(p.now));
    ASSIGN_OR_RETURN(s, db_->Prepare(fmt::format(
        "SELECT EXISTS (SELECT 1 FROM jobs WHERE name = ?1), EXISTS (SELECT 1 FROM runs "
        "WHERE job = ?1 AND state = 'pending' AND scheduled_at <= {} AND released = 0)",
        NowSql(2))));
    s.Bind(1, p.job).BindOptional(2, at);
    ASSIGN_OR_RETURN(row, s.Step());
    if (row && s.Int(0) == 0) return NotFound(fmt::format("no job \"{}\" in the ledger", p.job));
    if (row && s.Int(1) == 0) return ReleaseResult{};
  }
  Transaction tx(*db_);
  RETURN_IF_ERROR(tx.Begin());
  ASSIGN_OR_RETURN(now, TransactionNow(p.now));
  ledger::ReleasePolicy policy = p.policy;
  {
    ASSIGN_OR_RETURN(s, db_->Prepare(
        "SELECT paused + (SELECT count(*) FROM settings WHERE key = 'paused_all' AND value = '1') "
        "FROM jobs WHERE name = ?"));
    s.Bind(1, p.job);
    ASSIGN_OR_RETURN(row, s.Step());
    if (!row) return NotFound(fmt::format("no job \"{}\" in the ledger", p.job));
    policy.paused = s.Int(0) != 0;
  }
  std::vector<ledger::DueRun> due;
  std::map<int64_t, std::pair<std::string, sys_seconds>> keys;
  {
    ASSIGN_OR_RETURN(s, db_->Prepare(
        "SELECT id, partition, period, scheduled_at, misfire_exempt FROM runs "
        "WHERE job = ? AND state = 'pending' AND scheduled_at <= ? AND released = 0 "
        "ORDER BY scheduled_at, id LIMIT ?"));
    s.Bind(1, p.job).Bind(2, Ms(now)).Bind(3, int64_t{p.limit});
    RETURN_IF_ERROR(ForEachRow(s, [&] {
      ledger::DueRun r{s.Int(0), s.Text(1), SecondsFromMs(s.Int(3)), s.Int(4) != 0};
      keys[r.id] = {p.job + "/" + r.partition + "/" + s.Text(2), r.scheduled_at};
      due.push_back(std::move(r));
    }));
  }
  ReleaseResult result;
  const auto decisions =
      ledger::DecideRelease(std::move(due), policy, std::chrono::floor<seconds>(now));
  std::vector<int64_t> released;
  for (const auto& d : decisions) {
    switch (d.action) {
      case ledger::ReleaseAction::kRelease:
        released.push_back(d.id);
        break;
      case ledger::ReleaseAction::kHold: {
        ASSIGN_OR_RETURN(s, db_->Prepare(
            "UPDATE runs SET misfire_exempt = 1, updated_at = ? WHERE id = ? AND "
            "state = 'pending' AND released = 0"));
        s.Bind(1, Ms(now)).Bind(2, d.id);
        RETURN_IF_ERROR(s.Run());
        break;
      }
      case ledger::ReleaseAction::kSkip: {
        ASSIGN_OR_RETURN(s, db_->Prepare(
            "UPDATE runs SET state = 'skipped', reason = ?, updated_at = ?, finished_at = ? "
            "WHERE id = ? AND state = 'pending' AND released = 0"));
        const std::string_view reason = ledger::Name(d.reason);
        s.Bind(1, reason).Bind(2, Ms(now)).Bind(3, Ms(now)).Bind(4, d.id);
        RETURN_IF_ERROR(s.Run());
        if (db_->Changes() == 0) break;
        ++result.skipped;
        const auto& [run_key, scheduled_at] = keys[d.id];
        EventRecord e;
        e.at = now;
        e.type = ledger::event::kSkipped;
        e.job = p.job;
        e.run_id = d.id;
        e.run_key = run_key;
        e.actor = "planner";
        e.reason = std::string(reason);
        e.details = nlohmann::json{
            {"reason", reason},
            {"waived", ledger::IsWaived(d.reason)},
            {"scheduled_at", FormatUtc(scheduled_at)},
            {"late_seconds",
             std::chrono::duration_cast<seconds>(now - scheduled_at).count()}}
                        .dump();
        RETURN_IF_ERROR(AppendEventLocked(e));
        break;
      }
    }
  }
  ASSIGN_OR_RETURN(n, ReleaseLocked(released, now));
  result.released = n;
  RETURN_IF_ERROR(tx.Commit());
  return result;
}

Result<int> SqlStore::ReleaseLocked(const std::vector<int64_t>& ids, Instant now) {
  // A fixed number of ids per statement, so that one prepared statement
  // serves every batch (the last is padded with an id no run has): a
  // thousand runs due at once are 16 statements, not a thousand round trips
  // (the fire-latency burst).
  constexpr std::size_t kPerStatement = 64;
  static const std::string sql = [] {
    std::string text = "UPDATE runs SET released = 1, updated_at = ?1 WHERE id IN (";
    for (std::size_t i = 0; i < kPerStatement; ++i) {
      text += fmt::format("{}?{}", i == 0 ? "" : ", ", i + 2);
    }
    return text + ") AND state = 'pending' AND released = 0";
  }();
  int released = 0;
  for (std::size_t from = 0; from < ids.size(); from += kPerStatement) {
    ASSIGN_OR_RETURN(s, db_->Prepare(sql));
    s.Bind(1, Ms(now));
    for (std::size_t i = 0; i < kPerStatement; ++i) {
      s.Bind(static_cast<int>(i + 2), from + i < ids.size() ? ids[from + i] : int64_t{-1});
    }
    RETURN_IF_ERROR(s.Run());
    released += db_->Changes();
  }
  return released;
}

Status SqlStore::JobSetPaused(const PauseParams& p) {
  WriteTransaction tx(*this);
  ASSIGN_OR_RETURN(now, tx.Begin(p.now));
  // "job X is already paused" / "job X is not paused".
  const std::string_view state = p.paused ? "already paused" : "not paused";
  if (p.job) {
    ASSIGN_OR_RETURN(s, db_->Prepare("SELECT paused FROM jobs WHERE name = ?"));
    s.Bind(1, *p.job);
    ASSIGN_OR_RETURN(row, s.Step());
    if (!row) return NotFound(fmt::format("no job \"{}\" in the ledger", *p.job));
    if ((s.Int(0) != 0) == p.paused) {
      return Status(StatusCode::kConflict, fmt::format("job \"{}\" is {}", *p.job, state));
    }
    ASSIGN_OR_RETURN(u, db_->Prepare(
        "UPDATE jobs SET paused = ?, paused_at = ?, paused_by = ?, pause_reason = ? "
        "WHERE name = ?"));
    u.Bind(1, int64_t{p.paused ? 1 : 0});
    if (p.paused) {
      u.Bind(2, Ms(now)).Bind(3, p.actor).Bind(4, p.reason);
    } else {
      u.Bind(2, std::nullopt).Bind(3, std::nullopt).Bind(4, std::nullopt);
    }
    u.Bind(5, *p.job);
    RETURN_IF_ERROR(u.Run());
  } else {
    ASSIGN_OR_RETURN(s, db_->Prepare(
        "SELECT count(*) FROM settings WHERE key = 'paused_all' AND value = '1'"));
    ASSIGN_OR_RETURN(row, s.Step());
    if (row && (s.Int(0) != 0) == p.paused) {
      return Status(StatusCode::kConflict, fmt::format("everything is {}", state));
    }
    ASSIGN_OR_RETURN(u, db_->Prepare(
        "INSERT INTO settings (key, value) VALUES ('paused_all', ?) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value"));
    u.Bind(1, std::string_view(p.paused ? "1" : "0"));
    RETURN_IF_ERROR(u.Run());
  }
  EventRecord e;
  e.at = now;
  e.type = p.paused ? ledger::event::kPaused : ledger::event::kResumed;
  e.job = p.job.value_or("");
  e.actor = p.actor;
  e.on_behalf_of = p.on_behalf_of;
  e.reason = p.reason;
  e.details = nlohmann::json{{"scope", p.job ? "job" : "all"}}.dump();
  RETURN_IF_ERROR(AppendEventLocked(e));
  return tx.Commit();
}

Result<bool> SqlStore::IsPausedAll() {
  std::lock_guard lock(mu_);
  ASSIGN_OR_RETURN(s, db_->Prepare(
      "SELECT count(*) FROM settings WHERE key = 'paused_all' AND value = '1'"));
  ASSIGN_OR_RETURN(row, s.Step());
  return row && s.Int(0) != 0;
}

Result<std::vector<RunRecord>> SqlStore::RunList(const RunQuery& q) {
  std::lock_guard lock(mu_);
  std::string sql = fmt::format("SELECT {} FROM runs WHERE 1 = 1", kRunColumns);
  if (q.job) sql += " AND job = ?1";
  if (q.business_date) sql += " AND business_date = ?2";
  if (q.state) sql += " AND state = ?3";
  if (q.partition) sql += " AND partition = ?4";
  if (q.before_id) sql += " AND id < ?5";
  sql += " ORDER BY id DESC LIMIT ?6";
  ASSIGN_OR_RETURN(s, db_->Prepare(sql));
  if (q.job) s.Bind(1, *q.job);
  if (q.business_date) s.Bind(2, *q.business_date);
  if (q.state) s.Bind(3, ledger::Name(*q.state));
  if (q.partition) s.Bind(4, *q.partition);
  if (q.before_id) s.Bind(5, *q.before_id);
  s.Bind(6, int64_t{q.limit});
  std::vector<RunRecord> out;
  RETURN_IF_ERROR(ForEachRow(s, [&] {
    out.push_back(RunFromRow(s));
  }));
  return out;
}

Status SqlStore::RunListByDate(const RunDateQuery& q, std::vector<RunRecord>* page) {
  std::lock_guard lock(mu_);
  // runs_job_date (job, business_date) ends in the rowid, so the range and
  // the order come from the index: no sort, wherever the page starts.
  ASSIGN_OR_RETURN(s, db_->Prepare(fmt::format(
      "SELECT {} FROM runs WHERE job = ?1 AND business_date >= ?2 AND business_date <= ?3 "
      "AND (business_date, id) > (?4, ?5) ORDER BY business_date, id LIMIT ?6",
      kRunColumns)));
  s.Bind(1, q.job).Bind(2, q.from_date).Bind(3, q.to_date);
  // Not std::string_view(): a null pointer would bind NULL, matching nothing.
  s.Bind(4, q.after ? std::string_view(q.after->first) : std::string_view(""));
  s.Bind(5, q.after ? q.after->second : std::numeric_limits<int64_t>::min());
  s.Bind(6, int64_t{q.limit});
  std::size_t n = 0;
  Status st = ForEachRow(s, [&] {
    if (n == page->size()) page->emplace_back();
    AssignRunFromRow(s, &(*page)[n++]);
  });
  page->resize(n);
  return st;
}

Result<RunRecord> SqlStore::RunGet(int64_t id) {
  std::lock_guard lock(mu_);
  ASSIGN_OR_RETURN(s, db_->Prepare(fmt::format("SELECT {} FROM runs WHERE id = ?", kRunColumns)));
  s.Bind(1, id);
  ASSIGN_OR_RETURN(row, s.Step());
  if (!row) return NotFound(fmt::format("no run with id {}", id));
  return RunFromRow(s);
}

Result<std::vector<RunRecord>> SqlStore::RunListDue(std::optional<Instant> now, int limit) {
  std::lock_guard lock(mu_);
  ASSIGN_OR_RETURN(at, StatementNow(now));
  ASSIGN_OR_RETURN(s,
                   db_->Prepare(fmt::format(
                       "SELECT {} FROM runs WHERE state = 'pending' AND released = 1 AND {} <= {} "
                       "ORDER BY {}, id LIMIT ?2",
                       kRunColumns, HasLanes() ? "due_at" : "scheduled_at", NowSql(1),
                       HasLanes() ? "lane, due_at" : "scheduled_at")));
  s.BindOptional(1, at).Bind(2, int64_t{limit});
  std::vector<RunRecord> out;
  RETURN_IF_ERROR(ForEachRow(s, [&] {
    out.push_back(RunFromRow(s));
  }));
  return out;
}

Result<std::vector<EventRecord>> SqlStore::EventList(const EventQuery& q) {
  std::lock_guard lock(mu_);
  // Without `since`: the newest `limit`; with it: the first `limit` from then.
  std::string sql =
      "SELECT id, at, type, coalesce(job, ''), run_id, coalesce(run_key, ''), actor, "
      "coalesce(reason, ''), details, " +
      std::string(HasCallers() ? "coalesce(on_behalf_of, '')" : "''") + " FROM events WHERE 1 = 1";
  if (q.job) sql += " AND job = ?1";
  // A run's history includes the actions over many runs that covered it.
  if (q.run_id) {
    sql += " AND (run_id = ?2 OR id IN (SELECT event_id FROM event_runs WHERE run_id = ?2))";
  }
  if (q.since) sql += " AND at >= ?3";
  if (q.type) sql += " AND type = ?4";
  if (q.actor) sql += HasCallers() ? " AND (actor = ?6 OR on_behalf_of = ?6)" : " AND actor = ?6";
  sql += q.since ? " ORDER BY id ASC LIMIT ?5" : " ORDER BY id DESC LIMIT ?5";
  ASSIGN_OR_RETURN(s, db_->Prepare(sql));
  if (q.job) s.Bind(1, *q.job);
  if (q.run_id) s.Bind(2, *q.run_id);
  if (q.since) s.Bind(3, Ms(*q.since));
  if (q.type) s.Bind(4, *q.type);
  s.Bind(5, int64_t{q.limit});
  if (q.actor) s.Bind(6, *q.actor);
  std::vector<EventRecord> out;
  RETURN_IF_ERROR(ForEachRow(s, [&] {
    out.push_back(EventFromRow(s));
  }));
  if (!q.since) std::reverse(out.begin(), out.end());
  return out;
}

Result<JobStats> SqlStore::StatsGet(const StatsParams& p) {
  std::lock_guard lock(mu_);
  JobStats stats;
  stats.job = p.job;
  // First the counts, which always answer a row: with the instant they
  // judged by, which the later statements use (one instant per call).
  ASSIGN_OR_RETURN(pinned, StatementNow(p.now));
  int64_t at = 0;
  {
    ASSIGN_OR_RETURN(
        s, db_->Prepare(fmt::format(
               "SELECT (SELECT count(*) FROM runs WHERE job = ?1 AND state = 'pending' AND "
               "{1} <= {0}) + (SELECT count(*) FROM runs WHERE job = ?1 AND state = 'running'), "
               "(SELECT count(*) FROM runs WHERE job = ?1 AND state = 'unknown'), "
               "(SELECT count(*) FROM runs WHERE job = ?1 AND state = 'running' "
               "AND lease_expires_at < {0}), {0}",
               NowSql(2), HasLanes() ? "due_at" : "scheduled_at")));
    s.Bind(1, p.job).BindOptional(2, pinned);
    ASSIGN_OR_RETURN(row, s.Step());
    if (!row || s.IsNull(3)) return Internal("the stats read no instant");
    stats.in_flight = static_cast<int>(s.Int(0));
    stats.unknown_total = static_cast<int>(s.Int(1));
    stats.expired_leases = static_cast<int>(s.Int(2));
    at = s.Int(3);
  }
  {
    // Due by now: at its scheduled time, or (a trigger ahead of its
    // occurrence) earlier.
    ASSIGN_OR_RETURN(
        s, db_->Prepare(fmt::format(
               "SELECT state, coalesce(reason, ''), count(*) FROM runs WHERE job = ?1 AND "
               "business_date = ?2 AND {} GROUP BY state, reason",
               HasLanes() ? "(scheduled_at <= ?3 OR due_at <= ?3)" : "scheduled_at <= ?3")));
    s.Bind(1, p.job).Bind(2, p.business_date).Bind(3, at);
    RETURN_IF_ERROR(ForEachRow(s, [&] {
      const int n = static_cast<int>(s.Int(2));
      stats.by_state[s.Text(0)] += n;
      if (const std::string reason = s.Text(1); !reason.empty()) stats.by_reason[reason] += n;
    }));
  }
  {
    ASSIGN_OR_RETURN(s, db_->Prepare(
        "SELECT finished_at, business_date FROM runs WHERE job = ? AND state = 'succeeded' "
        "ORDER BY finished_at DESC LIMIT 1"));
    s.Bind(1, p.job);
    ASSIGN_OR_RETURN(row, s.Step());
    if (row && !s.IsNull(0)) {
      stats.last_success_at = FromMs(s.Int(0));
      stats.last_success_business_date = s.Text(1);
    }
  }
  {
    // One range per partial index (migration 003): runs in flight, ends
    // needing attention, and misfired skips.
    ASSIGN_OR_RETURN(s, db_->Prepare(
        "SELECT min(m) FROM ("
        " SELECT min(scheduled_at) AS m FROM runs WHERE job = ?1 "
        "  AND (state = 'pending' OR state = 'running') AND scheduled_at BETWEEN ?2 AND ?3"
        " UNION ALL SELECT min(scheduled_at) FROM runs WHERE job = ?1 "
        "  AND (state = 'failed' OR state = 'unknown' OR state = 'awaiting_approval') "
        "  AND scheduled_at BETWEEN ?2 AND ?3"
        " UNION ALL SELECT min(scheduled_at) FROM runs WHERE job = ?1 AND state = 'skipped' "
        "  AND reason = 'misfired' AND scheduled_at BETWEEN ?2 AND ?3) AS ranges"));
    s.Bind(1, p.job).Bind(2, Ms(p.horizon_from)).Bind(3, at);
    ASSIGN_OR_RETURN(row, s.Step());
    if (row && !s.IsNull(0)) stats.oldest_open_scheduled_at = SecondsFromMs(s.Int(0));
  }
  {
    ASSIGN_OR_RETURN(
        s,
        db_->Prepare(fmt::format(
            "SELECT rs.step, rs.state, count(*) FROM run_steps rs JOIN runs r ON r.id = rs.run_id "
            "WHERE r.job = ?1 AND r.business_date = ?2 AND {} GROUP BY rs.step, rs.state",
            HasLanes() ? "(r.scheduled_at <= ?3 OR r.due_at <= ?3)" : "r.scheduled_at <= ?3")));
    s.Bind(1, p.job).Bind(2, p.business_date).Bind(3, at);
    RETURN_IF_ERROR(ForEachRow(s, [&] {
      stats.steps[s.Text(0)][s.Text(1)] = static_cast<int>(s.Int(2));
    }));
  }
  return stats;
}

Result<LedgerMetrics> SqlStore::MetricsGet(const LedgerMetricsParams& p) {
  std::lock_guard lock(mu_);
  LedgerMetrics m;
  {
    // Covered by the index runs_job_state.
    ASSIGN_OR_RETURN(s, db_->Prepare("SELECT job, state, count(*) FROM runs GROUP BY job, state"));
    RETURN_IF_ERROR(ForEachRow(s, [&] { m.runs[s.Text(0)][s.Text(1)] = s.Int(2); }));
  }
  {
    // Attempts by end class, the retry successes (a success whose previous
    // attempt did not succeed: found by the primary key) and the
    // duration histogram, in one pass over the ended attempts.
    std::string sql =
        "SELECT r.job, a.end_class, count(*), "
        "sum(CASE WHEN a.end_class = 'succeeded' AND a.number > 1 AND EXISTS (SELECT 1 FROM "
        "attempts b WHERE b.run_id = a.run_id AND b.number = a.number - 1 AND "
        "coalesce(b.end_class, '') <> 'succeeded') THEN 1 ELSE 0 END), "
        "sum(CASE WHEN a.ended_at > a.started_at THEN a.ended_at - a.started_at ELSE 0 END)";
    for (std::size_t i = 0; i < p.duration_bounds.size(); ++i) {
      sql += fmt::format(", sum(CASE WHEN a.ended_at - a.started_at <= ?{} THEN 1 ELSE 0 END)",
                         i + 1);
    }
    sql += " FROM attempts a JOIN runs r ON r.id = a.run_id WHERE a.ended_at IS NOT NULL "
           "GROUP BY r.job, a.end_class";
    ASSIGN_OR_RETURN(s, db_->Prepare(sql));
    for (std::size_t i = 0; i < p.duration_bounds.size(); ++i) {
      s.Bind(static_cast<int>(i + 1), static_cast<int64_t>(p.duration_bounds[i].count()));
    }
    RETURN_IF_ERROR(ForEachRow(s, [&] {
      const std::string job = s.Text(0);
      const int64_t n = s.Int(2);
      if (!s.IsNull(1)) m.attempts[job][s.Text(1)] += n;
      if (const int64_t retried = s.Int(3); retried > 0) m.retry_successes[job] += retried;
      DurationHistogram& h = m.durations[job];
      h.cumulative.resize(p.duration_bounds.size(), 0);
      h.count += n;
      h.sum_ms += s.Int(4);
      for (std::size_t i = 0; i < p.duration_bounds.size(); ++i) {
        h.cumulative[i] += s.Int(static_cast<int>(5 + i));
      }
    }));
  }
  if (!p.recovery_events.empty()) {
    std::string sql =
        "SELECT job, type, count(*) FROM events "
        "WHERE job IS NOT NULL AND actor <> ?1 AND type IN (";
    for (std::size_t i = 0; i < p.recovery_events.size(); ++i) {
      sql += fmt::format("{}?{}", i == 0 ? "" : ", ", i + 2);
    }
    sql += ") GROUP BY job, type";
    ASSIGN_OR_RETURN(s, db_->Prepare(sql));
    s.Bind(1, p.automatic_actor);
    for (std::size_t i = 0; i < p.recovery_events.size(); ++i) {
      s.Bind(static_cast<int>(i + 2), p.recovery_events[i]);
    }
    RETURN_IF_ERROR(ForEachRow(s, [&] { m.recoveries[s.Text(0)][s.Text(1)] = s.Int(2); }));
  }
  return m;
}

}  // namespace cronledger::store
