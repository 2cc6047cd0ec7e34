// PostgresStore, execution half: claims and completions set-based.
//
// SqlStore writes a claimed or finished run with a handful of statements
// each, one round trip apiece: nothing on SQLite, where a statement is a
// function call, but 18 round trips per run on PostgreSQL, most of them
// inside the write lock nodes share (docs/benchmarks.md, PostgreSQL). A
// claim and group commits take that lock shared (sql::WriteKind), so they
// run side by side; the statements below fence every row they write.
// Here the same rows are written for a whole batch at once: each statement
// takes its batch as one JSON array (json_to_recordset), so a claim of 32
// runs, or a group commit of 100 completions, is a few statements and one
// commit. The ledger that results is the same, row for row and event for
// event (the conformance suite runs on both engines); the rare cases not
// batched here (a retried attempt's steps, a stale or refused write) go
// through SqlStore's per-row code in the same transaction.
#include <algorithm>
#include <deque>
#include <limits>
#include <map>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cronledger/schedule.h"
#include "store/postgres/json_rows.h"
#include "store/postgres/postgres_store.h"
#include "store/sql/sql_util.h"

namespace cronledger::store {
namespace {

using namespace sql_util;  // NOLINT: the store's own helpers
using nlohmann::json;
using sql::Transaction;

// A string as a JSON value PostgreSQL's text accepts: without NUL (libpq
// would cut a text parameter there too).
json Str(std::string_view v) {
  if (v.find('\0') == std::string_view::npos) return std::string(v);
  std::string s(v);
  std::erase(s, '\0');
  return s;
}

// A batch as one statement parameter. Invalid UTF-8 (a step's output) is
// replaced, not refused: the server would refuse it as text anyway.
std::string Param(const json& rows) {
  return rows.dump(-1, ' ', false, json::error_handler_t::replace);
}

// Ids as a bigint[] parameter. Each set-based statement also names its rows
// by `id = ANY(...)`: the planner cannot see how many rows a JSON batch
// holds (it guesses 100) and would rather scan a small table whole than
// probe its primary key; with the ids it probes. The array is taken apart
// in a subquery, evaluated once: `?::bigint[]` alone, a text parameter
// cast, would be parsed again for every row compared with it. The batch
// itself is a MATERIALIZED CTE: joined as the inner side of a nested loop,
// a bare json_to_recordset would parse the whole batch again for every
// row. Text `json`, not `jsonb`: the batch is read once, and building the
// binary form first costs more than that read (4,000 events: 16 ms against
// 10).
std::string IdArray(const std::vector<int64_t>& ids) {
  std::string out = "{";
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) out += ',';
    out += std::to_string(ids[i]);
  }
  out += '}';
  return out;
}

// A batch joined to the ledger by a nested loop rescans one side per row
// of the other: hundreds of rows make that quadratic (a group commit of 800
// writes took 340 ms). Hash joins keep a batch linear. Only for a
// transaction's set-based writes: a claim's read of its candidates needs
// nested loops for its look-ups.
constexpr const char* kBatchPlans = "SET LOCAL enable_nestloop = off";

}  // namespace

Status PostgresStore::AppendEventsLocked(const std::vector<EventRecord>& events) {
  if (events.empty()) return Status::Ok();
  postgres::JsonRows rows;
  int64_t n = 0;
  for (const EventRecord& e : events) {
    rows.Row()
        .Int("n", n++)
        .Int("at", Ms(e.at))
        .Text("type", e.type)
        .TextOrNull("job", e.job)
        .IntOrNull("run_id", e.run_id)
        .TextOrNull("run_key", e.run_key)
        .Text("actor", e.actor)
        .TextOrNull("reason", e.reason)
        .Text("details", e.details.empty() ? std::string_view("{}") : std::string_view(e.details))
        .TextOrNull("on_behalf_of", e.on_behalf_of);
    // Counted for the metric as SqlStore::AppendEventLocked counts them.
    if (e.type == ledger::event::kStaleWriteRejected) db().Tally();
  }
  // In the batch's order: a run's events read in the order they happened.
  const bool callers = HasCallers();  // else: acting as a release before schema 11
  ASSIGN_OR_RETURN(
      s, db().Prepare(fmt::format(
             "INSERT INTO events (at, type, job, run_id, run_key, actor, reason, details{}) "
             "SELECT x.at, x.type, x.job, x.run_id, x.run_key, x.actor, x.reason, x.details{} "
             "FROM json_to_recordset(?1::json) AS x(n bigint, at bigint, type text, "
             "job text, run_id bigint, run_key text, actor text, reason text, details text, "
             "on_behalf_of text) ORDER BY x.n",
             callers ? ", on_behalf_of" : "", callers ? ", x.on_behalf_of" : "")));
  s.Bind(1, std::move(rows).Take());
  return s.Run();
}

Result<std::vector<ClaimedRun>> PostgresStore::RunClaim(const ClaimParams& given) {
  std::vector<ClaimedRun> out;
  if (given.rules.empty() || given.limit <= 0) return out;
  const ClaimParams& p = given;
  std::map<std::string, const ClaimRule*> rules;
  json jobs = json::array();
  json queued = json::array();   // jobs with overlap = queue
  json skipped = json::array();  // jobs with overlap = skip
  bool counted = false;          // some job has a max_concurrency
  for (const auto& r : p.rules) {
    rules[r.job] = &r;
    jobs.push_back(Str(r.job));
    if (r.overlap == ledger::Overlap::kQueue) queued.push_back(Str(r.job));
    if (r.overlap == ledger::Overlap::kSkip) skipped.push_back(Str(r.job));
    counted = counted || r.max_concurrency > 0;
  }
  const std::string jobs_param = Param(jobs);
  std::lock_guard lock(mutex());
  // Due at {0}; {1}: the run's due time (due_at, scheduled_at before schema 12).
  constexpr const char* kClaimableAt =
      "r.state = 'pending' AND r.released = 1 AND {1} <= {0} "
      "AND (r.next_attempt_at IS NULL OR r.next_attempt_at <= {0}) "
      "AND r.job IN (SELECT json_array_elements_text(?2::json)) "
      "AND r.job NOT IN (SELECT name FROM jobs WHERE paused = 1) "
      "AND NOT EXISTS (SELECT 1 FROM settings WHERE key = 'paused_all' AND value = '1')";
  const bool lanes = HasLanes();
  const std::string_view due = lanes ? "r.due_at" : "r.scheduled_at";
  {
    // An idle dispatcher polls: one cheap look before the write lock, at
    // its own statement's instant (a little earlier than the transaction's:
    // it can only find less due, never more).
    ASSIGN_OR_RETURN(at, StatementNow(p.now));
    ASSIGN_OR_RETURN(
        s, db().Prepare(fmt::format("SELECT 1 FROM runs r WHERE {} LIMIT 1",
                                    fmt::format(fmt::runtime(kClaimableAt), NowSql(1), due))));
    s.BindOptional(1, at).Bind(2, jobs_param);
    ASSIGN_OR_RETURN(row, s.Step());
    if (!row) return out;
  }
  Transaction tx(db());
  RETURN_IF_ERROR(tx.Begin(sql::WriteKind::kClaim));
  ASSIGN_OR_RETURN(now, TransactionNow(p.now));
  const std::string claimable = fmt::format(fmt::runtime(kClaimableAt), "?1", due);

  struct Candidate {
    RunRecord run;
    int budget_attempts = 0;
    std::optional<int64_t> budget_started_at;
    std::optional<int64_t> action_event_id;
    bool earlier_running = false;  // an earlier run of its partition is running
  };
  std::map<std::string, int> running;  // per job with a max_concurrency
  if (counted) {
    ASSIGN_OR_RETURN(s, db().Prepare(
        "SELECT job, count(*) FROM runs WHERE state = 'running' "
        "AND job IN (SELECT json_array_elements_text(?1::json)) GROUP BY job"));
    s.Bind(1, jobs_param);
    RETURN_IF_ERROR(ForEachRow(s, [&] { running[s.Text(0)] = static_cast<int>(s.Int(1)); }));
  }
  const auto full = [&](const ClaimRule& r) {
    return r.max_concurrency > 0 && running[r.job] >= r.max_concurrency;
  };

  // The decisions, in the candidates' order, as SqlStore::RunClaim takes
  // them one by one: the checks of the read saw the ledger before this
  // batch, so a run claimed here counts as running for the later ones.
  std::deque<Candidate> candidates;  // stable: the decisions point into it
  std::vector<const Candidate*> claims;
  std::vector<const Candidate*> skips;
  // Per partition claimed in this batch, its earliest scheduled time: the
  // walk is in lane order, so a later period may come before an earlier one.
  std::map<std::pair<std::string, std::string>, std::chrono::sys_seconds> claimed_partitions;
  // Where the walk is: every due run of lane 0 (the schedule's own runs, an
  // operator's trigger or retry) before lane 1 (backfills, reruns,
  // approvals), each lane in (due, id) order.
  struct Cursor {
    int64_t lane = 0;
    int64_t due = std::numeric_limits<int64_t>::min();
    int64_t id = 0;
  };
  Cursor after;
  const int64_t last_lane = lanes ? 1 : 0;
  // Spare rows only when a decision below may pass a candidate over: each
  // row read is locked, and locking one writes it. When the ones passed over
  // leave the batch short, the next look goes on from where this one
  // stopped, without the jobs now at their max_concurrency.
  const bool may_pass_over = counted || !skipped.empty();
  bool more = true;
  while (more && static_cast<int>(claims.size()) < p.limit) {
    json open_jobs = json::array();
    for (const auto& r : p.rules) {
      if (!full(r)) open_jobs.push_back(Str(r.job));
    }
    if (open_jobs.empty()) break;
    const int64_t wanted = p.limit - static_cast<int64_t>(claims.size());
    const int64_t look = may_pass_over ? wanted * 2 + 8 : wanted;
    const std::size_t first = candidates.size();
    for (;;) {
      const std::size_t lane_first = candidates.size();
      const int64_t lane_look = look - static_cast<int64_t>(lane_first - first);
      // SKIP LOCKED: a run another transaction is claiming is not waited
      // for. Runs waiting behind an earlier period (overlap = queue) are
      // left out here, where the index walk meets them.
      ASSIGN_OR_RETURN(
          s, db().Prepare(fmt::format(
                 "SELECT {0}, r.budget_attempts, r.budget_started_at, r.action_event_id, "
                 "CASE WHEN r.job IN (SELECT json_array_elements_text(?5::json)) THEN EXISTS ("
                 "SELECT 1 FROM runs e WHERE e.job = r.job AND e.partition = r.partition "
                 "AND e.scheduled_at < r.scheduled_at AND e.state = 'running') ELSE false END, {2} "
                 "FROM runs r WHERE {1} {3}AND ({2}, r.id) > (?6, ?7) "
                 "AND NOT (r.job IN (SELECT json_array_elements_text(?4::json)) AND EXISTS ("
                 "SELECT 1 FROM runs e WHERE e.job = r.job AND e.partition = r.partition "
                 "AND e.scheduled_at < r.scheduled_at AND e.state IN ('pending', 'running'))) "
                 "ORDER BY {2}, r.id LIMIT ?3 FOR UPDATE OF r SKIP LOCKED",
                 "r.id, r.job, r.partition, r.period, r.business_date, r.scheduled_at, r.state, "
                 "r.reason, r.released, r.misfire_exempt, r.attempts, r.job_version, r.created_at, "
                 "r.updated_at",
                 claimable, due, lanes ? "AND r.lane = ?8 " : "")));
      s.Bind(1, Ms(now))
          .Bind(2, Param(open_jobs))
          .Bind(3, lane_look)
          .Bind(4, Param(queued))
          .Bind(5, Param(skipped))
          .Bind(6, after.due)
          .Bind(7, after.id);
      if (lanes) s.Bind(8, after.lane);
      int64_t last_due = 0;
      RETURN_IF_ERROR(ForEachRow(s, [&] {
        Candidate c;
        c.run = RunFromRow(s);
        c.budget_attempts = static_cast<int>(s.Int(14));
        c.budget_started_at = s.OptInt(15);
        c.action_event_id = s.OptInt(16);
        c.earlier_running = s.Int(17) != 0;
        last_due = s.Int(18);
        candidates.push_back(std::move(c));
      }));
      if (candidates.size() > lane_first) after = {after.lane, last_due, candidates.back().run.id};
      more = static_cast<int64_t>(candidates.size() - first) == look;
      if (more || after.lane == last_lane) break;
      after = Cursor{after.lane + 1};
    }
    for (std::size_t i = first; i < candidates.size(); ++i) {
      const Candidate& c = candidates[i];
      if (static_cast<int>(claims.size()) >= p.limit) break;
      const ClaimRule& rule = *rules.at(c.run.job);
      if (full(rule)) continue;
      if (rule.overlap != ledger::Overlap::kAllow) {
        // Candidates come in scheduled order: one claimed earlier in this
        // batch is an earlier run of the partition, now running.
        const auto claimed_at = claimed_partitions.find({c.run.job, c.run.partition});
        const bool earlier_claimed =
            claimed_at != claimed_partitions.end() && claimed_at->second < c.run.scheduled_at;
        if (rule.overlap == ledger::Overlap::kQueue) {
          if (earlier_claimed) continue;  // waits behind the earlier period
        } else if (c.earlier_running || earlier_claimed) {
          skips.push_back(&c);
          continue;
        }
      }
      claims.push_back(&c);
      auto [at, inserted] =
          claimed_partitions.try_emplace({c.run.job, c.run.partition}, c.run.scheduled_at);
      if (!inserted) at->second = std::min(at->second, c.run.scheduled_at);
      if (rule.max_concurrency > 0) ++running[c.run.job];
    }
  }
  if (candidates.empty()) return out;  // rolled back: nothing written

  std::vector<EventRecord> events;
  if (!skips.empty()) {
    std::vector<int64_t> ids;
    for (const Candidate* c : skips) ids.push_back(c->run.id);
    ASSIGN_OR_RETURN(s, db().Prepare(
        "UPDATE runs SET state = 'skipped', reason = 'overlap', updated_at = ?1, "
        "finished_at = ?1 WHERE id = ANY(ARRAY(SELECT unnest(?2::bigint[]))) "
        "AND state = 'pending'"));
    s.Bind(1, Ms(now)).Bind(2, IdArray(ids));
    RETURN_IF_ERROR(s.Run());
    for (const Candidate* c : skips) events.push_back(OverlapSkipEvent(c->run, p.node, now));
  }
  if (claims.empty()) {
    RETURN_IF_ERROR(AppendEventsLocked(events));
    RETURN_IF_ERROR(tx.Commit());
    return out;
  }

  // Not for the candidates' read above: its per-row look-ups are what a
  // nested loop is for.
  if (claims.size() > 32) RETURN_IF_ERROR(db().Exec(kBatchPlans));
  // The fencing tokens: the next claims.size() of the one sequence.
  int64_t first_token = 0;
  {
    ASSIGN_OR_RETURN(s, db().Prepare(
        "UPDATE fencing SET last_token = last_token + ?1 WHERE id = 1 RETURNING last_token"));
    s.Bind(1, static_cast<int64_t>(claims.size()));
    ASSIGN_OR_RETURN(row, s.Step());
    if (!row) return Internal("the fencing sequence is missing");
    first_token = s.Int(0) - static_cast<int64_t>(claims.size()) + 1;
  }
  postgres::JsonRows leases;
  postgres::JsonRows attempts;
  postgres::JsonRows first_steps;
  out.reserve(claims.size());
  for (std::size_t i = 0; i < claims.size(); ++i) {
    const Candidate& c = *claims[i];
    const ClaimRule& rule = *rules.at(c.run.job);
    ClaimedRun claimed;
    claimed.run = c.run;
    claimed.run.state = ledger::RunState::kRunning;
    claimed.attempt = c.run.attempts + 1;
    claimed.run.attempts = claimed.attempt;
    claimed.token = first_token + static_cast<int64_t>(i);
    claimed.lease_expires_at = now + rule.lease_ttl;
    claimed.budget_attempts = c.budget_attempts + 1;
    claimed.budget_started_at = FromMs(c.budget_started_at.value_or(Ms(now)));
    leases.Row()
        .Int("id", c.run.id)
        .Int("token", claimed.token)
        .Int("expires", Ms(claimed.lease_expires_at));
    attempts.Row()
        .Int("id", c.run.id)
        .Int("number", claimed.attempt)
        .Int("token", claimed.token)
        .IntOrNull("action", c.action_event_id);
    if (claimed.attempt == 1) {
      // A first attempt: no step rows yet; the first one starts.
      for (std::size_t k = 0; k < rule.steps.size(); ++k) {
        const bool first = k == 0;
        first_steps.Row()
            .Int("id", c.run.id)
            .Text("step", rule.steps[k])
            .Int("position", static_cast<int64_t>(k))
            .Text("state", first ? "running" : "pending")
            .IntOrNull("attempt", first ? std::optional<int64_t>(1) : std::nullopt);
        claimed.steps.push_back(
            {rule.steps[k], first ? ledger::StepStatus::kRunning : ledger::StepStatus::kPending});
      }
    }
    out.push_back(std::move(claimed));
  }
  {
    ASSIGN_OR_RETURN(s, db().Prepare(
        "WITH x AS MATERIALIZED (SELECT * FROM json_to_recordset(?3::json) AS t(id bigint, "
        "token bigint, expires bigint)) "
        "UPDATE runs r SET state = 'running', lease_token = x.token, "
        "lease_expires_at = x.expires, lease_node = ?2, attempts = r.attempts + 1, "
        "budget_attempts = r.budget_attempts + 1, "
        "budget_started_at = coalesce(r.budget_started_at, ?1), next_attempt_at = NULL, "
        "updated_at = ?1 FROM x WHERE r.id = ANY(ARRAY(SELECT unnest(?4::bigint[]))) "
        "AND r.id = x.id "
        "AND r.state = 'pending'"));
    std::vector<int64_t> ids;
    for (const ClaimedRun& c : out) ids.push_back(c.run.id);
    s.Bind(1, Ms(now)).Bind(2, p.node).Bind(3, std::move(leases).Take())
        .Bind(4, IdArray(ids));
    RETURN_IF_ERROR(s.Run());
    // The rows are locked by this transaction since the candidates' read.
    if (db().Changes() != static_cast<int>(out.size())) {
      return Internal(fmt::format("claimed {} of {} locked runs", db().Changes(), out.size()));
    }
  }
  {
    // ?4 is cast so that it is typed also where it is not inserted (a test
    // acting as a release before schema 11).
    ASSIGN_OR_RETURN(
        s, db().Prepare(fmt::format(
               "INSERT INTO attempts (run_id, number, fencing_token, node, started_at, "
               "action_event_id{}) SELECT x.id, x.number, x.token, ?1, ?2, x.action{} "
               "FROM json_to_recordset(?3::json) AS x(id bigint, number bigint, token bigint, "
               "action bigint) WHERE ?4::text IS NOT NULL",
               HasCallers() ? ", claimant" : "", HasCallers() ? ", ?4" : "")));
    s.Bind(1, p.node).Bind(2, Ms(now)).Bind(3, std::move(attempts).Take()).Bind(4, p.claimant);
    RETURN_IF_ERROR(s.Run());
  }
  if (!first_steps.empty()) {
    ASSIGN_OR_RETURN(s, db().Prepare(
        "INSERT INTO run_steps (run_id, step, position, state, attempt, updated_at) "
        "SELECT x.id, x.step, x.position, x.state, x.attempt, ?1 "
        "FROM json_to_recordset(?2::json) AS x(id bigint, step text, position bigint, "
        "state text, attempt bigint)"));
    s.Bind(1, Ms(now)).Bind(2, std::move(first_steps).Take());
    RETURN_IF_ERROR(s.Run());
  }
  for (ClaimedRun& claimed : out) {
    if (claimed.attempt > 1) {
      // A retry resumes at the first step not succeeded: rare, per row.
      ASSIGN_OR_RETURN(steps, ResumeStepsLocked(claimed.run.id, claimed.attempt,
                                                rules.at(claimed.run.job)->steps, now));
      claimed.steps = std::move(steps);
    }
    for (EventRecord& e : ClaimEvents(claimed, p.node, now)) events.push_back(std::move(e));
  }
  RETURN_IF_ERROR(AppendEventsLocked(events));
  RETURN_IF_ERROR(tx.Commit());
  return out;
}

Result<std::vector<Status>> PostgresStore::RunApplyWrites(const std::vector<WorkerWrite>& given) {
  if (given.empty()) return std::vector<Status>{};
  std::vector<WorkerWrite> writes = given;
  std::lock_guard lock(mutex());
  Transaction tx(db());
  RETURN_IF_ERROR(tx.Begin(sql::WriteKind::kWorkerWrite));
  // Each write stamped with its instant (the transaction's, on the
  // database's clock): the statements below read it from the rows.
  for (auto& w : writes) {
    if (w.step) {
      ASSIGN_OR_RETURN(at, TransactionNow(w.step->now));
      w.step->now = at;
    }
    if (w.finish) {
      ASSIGN_OR_RETURN(at, TransactionNow(w.finish->now));
      w.finish->now = at;
    }
  }
  RETURN_IF_ERROR(db().Exec(kBatchPlans));
  std::vector<Status> results(writes.size());

  // One write per run is what a dispatcher's batch holds; anything else is
  // applied write by write, in order, as SqlStore does.
  std::set<int64_t> runs_seen;
  bool one_per_run = true;
  for (const auto& w : writes) {
    const int64_t run_id = w.finish ? w.finish->run_id : w.step ? w.step->run_id : 0;
    if (w.step && w.finish && w.step->run_id != w.finish->run_id) one_per_run = false;
    one_per_run = one_per_run && runs_seen.insert(run_id).second;
  }
  if (!one_per_run) {
    for (std::size_t i = 0; i < writes.size(); ++i) {
      const WorkerWrite& w = writes[i];
      if (w.step) {
        ASSIGN_OR_RETURN(stepped, StepUpdateLocked(*w.step, *w.step->now));
        results[i] = std::move(stepped.status);
      }
      if (results[i].ok() && w.finish) {
        ASSIGN_OR_RETURN(finished, FinishLocked(*w.finish, *w.finish->now));
        results[i] = std::move(finished.status);
      }
    }
    RETURN_IF_ERROR(tx.Commit());
    return results;
  }

  // Each write's events, appended together at the end in the batch's order.
  std::vector<std::vector<EventRecord>> events(writes.size());

  // Steps: fenced by the run's token; a write not applied here (stale, or
  // no such step) is answered by the per-row code, which records why.
  postgres::JsonRows steps;
  std::vector<int64_t> step_ids;
  for (std::size_t i = 0; i < writes.size(); ++i) {
    if (const auto& st = writes[i].step) {
      step_ids.push_back(st->run_id);
      steps.Row()
          .Int("i", static_cast<int64_t>(i))
          .Int("id", st->run_id)
          .Int("token", st->token)
          .Text("step", st->step)
          .Text("state", ledger::Name(st->state))
          .Int("now", Ms(*st->now));
    }
  }
  if (!steps.empty()) {
    std::vector<bool> applied(writes.size(), false);
    ASSIGN_OR_RETURN(s, db().Prepare(
        "WITH x AS MATERIALIZED (SELECT * FROM json_to_recordset(?1::json) AS t(i bigint, "
        "id bigint, token bigint, step text, state text, now bigint)) "
        "UPDATE run_steps s SET state = x.state, attempt = r.attempts, updated_at = x.now "
        "FROM x, runs r "
        "WHERE r.id = ANY(ARRAY(SELECT unnest(?2::bigint[]))) "
        "AND s.run_id = ANY(ARRAY(SELECT unnest(?2::bigint[]))) "
        "AND r.id = x.id AND r.lease_token = x.token AND r.state = 'running' "
        "AND s.run_id = x.id AND s.step = x.step "
        "RETURNING x.i, r.attempts, r.job, r.job || '/' || r.partition || '/' || r.period"));
    s.Bind(1, std::move(steps).Take()).Bind(2, IdArray(step_ids));
    RETURN_IF_ERROR(ForEachRow(s, [&] {
      const auto i = static_cast<std::size_t>(s.Int(0));
      applied[i] = true;
      events[i].push_back(
          StepEvent(*writes[i].step, *writes[i].step->now, s.TextView(2), s.TextView(3),
                    static_cast<int>(s.Int(1))));
    }));
    for (std::size_t i = 0; i < writes.size(); ++i) {
      if (!writes[i].step || applied[i]) continue;
      ASSIGN_OR_RETURN(stepped, StepUpdateLocked(*writes[i].step, *writes[i].step->now));
      results[i] = std::move(stepped.status);
    }
  }

  // Finishes of the writes whose step (if any) was applied.
  std::vector<std::size_t> finishing;
  postgres::JsonRows fences;
  for (std::size_t i = 0; i < writes.size(); ++i) {
    if (!writes[i].finish || !results[i].ok()) continue;
    finishing.push_back(i);
    fences.Row()
        .Int("i", static_cast<int64_t>(i))
        .Int("id", writes[i].finish->run_id)
        .Int("token", writes[i].finish->token);
  }
  std::vector<std::size_t> refused;  // not fenced in: answered per row below
  std::vector<bool> step_running(writes.size(), false);
  if (!finishing.empty()) {
    {
      // docs/effects.md, At the end of an attempt: effects in doubt, as
      // FinishLocked reads them; and whether a step is still running (the
      // batch's step results are in by now), which the end sets back to pending
      // below. Only the rows with something to say come back: almost always
      // none.
      ASSIGN_OR_RETURN(s, db().Prepare(
          "SELECT i, doubted, own, step_running FROM (SELECT x.i, "
          "(SELECT e.key FROM effect_doubts d JOIN effects e ON e.id = d.effect_id "
          "WHERE d.run_id = x.id AND d.token = x.token AND e.state = 'started' "
          "AND e.started_token = d.started_token AND e.started_token <> x.token "
          "ORDER BY e.key LIMIT 1) AS doubted, "
          "(SELECT key FROM effects WHERE run_id = x.id AND started_token = x.token "
          "AND state = 'started' ORDER BY key LIMIT 1) AS own, "
          "EXISTS (SELECT 1 FROM run_steps WHERE run_id = x.id AND state = 'running') "
          "AS step_running "
          "FROM json_to_recordset(?1::json) AS x(i bigint, id bigint, token bigint)) q "
          "WHERE doubted IS NOT NULL OR own IS NOT NULL OR step_running"));
      s.Bind(1, std::move(fences).Take());
      RETURN_IF_ERROR(ForEachRow(s, [&] {
        const auto i = static_cast<std::size_t>(s.Int(0));
        FinishParams& f = *writes[i].finish;
        if (!s.IsNull(1) || !s.IsNull(2)) {
          ApplyEffectsInDoubt(f, s.IsNull(1) ? "" : s.Text(1), s.IsNull(2) ? "" : s.TextView(2));
        }
        if (s.Int(3) != 0) step_running[i] = true;
      }));
    }
    // A finish as the statements below read it; the attempts' and steps'
    // statements take the rows of the runs actually finished.
    const auto finish_row = [&](postgres::JsonRows& rows, std::size_t i) {
      const FinishParams& f = *writes[i].finish;
      const auto& d = f.decision;
      const bool ended = d.state != ledger::RunState::kPending;
      rows.Row()
          .Int("i", static_cast<int64_t>(i))
          .Int("id", f.run_id)
          .Int("token", f.token)
          .Int("now", Ms(*f.now))
          .Bool("expired_only", f.only_if_lease_expired)
          .Int("uncounted", f.outside_budget ? 1 : 0)
          .Text("state", ledger::Name(d.state))
          .IntOrNull("next", d.next_attempt_at ? std::optional<int64_t>(Ms(*d.next_attempt_at))
                                               : std::nullopt)
          .Text("end_class", ledger::Name(f.end_class))
          .IntOrNull("finished", ended ? std::optional<int64_t>(Ms(*f.now)) : std::nullopt)
          .IntOrNull("exit_status", f.exit_status ? std::optional<int64_t>(*f.exit_status)
                                                  : std::nullopt)
          .Text("step", f.step)
          .Text("log_path", f.log_path)
          .Text("tail", f.output_tail);
    };
    postgres::JsonRows rows;
    std::vector<int64_t> ids;
    for (std::size_t i : finishing) {
      ids.push_back(writes[i].finish->run_id);
      finish_row(rows, i);
    }
    const std::string rows_param = std::move(rows).Take();
    std::vector<bool> applied(writes.size(), false);
    {
      ASSIGN_OR_RETURN(s, db().Prepare(
          "WITH x AS MATERIALIZED (SELECT * FROM json_to_recordset(?1::json) AS t(i bigint, "
          "id bigint, token bigint, now bigint, expired_only boolean, uncounted bigint, "
          "state text, next bigint, end_class text, finished bigint)) "
          "UPDATE runs r SET state = x.state, reason = NULL, lease_token = NULL, "
          "lease_expires_at = NULL, lease_node = NULL, next_attempt_at = x.next, "
          "last_end_class = x.end_class, updated_at = x.now, finished_at = x.finished, "
          "released = 1, misfire_exempt = 1, budget_attempts = r.budget_attempts - x.uncounted, "
          "budget_started_at = CASE WHEN x.uncounted = 1 AND r.budget_attempts <= 1 THEN NULL "
          "ELSE r.budget_started_at END FROM x "
          "WHERE r.id = ANY(ARRAY(SELECT unnest(?2::bigint[]))) "
          "AND r.id = x.id AND r.lease_token = x.token "
          "AND r.state = 'running' AND (NOT x.expired_only OR r.lease_expires_at < x.now) "
          "RETURNING x.i, r.job, r.job || '/' || r.partition || '/' || r.period, r.attempts"));
      s.Bind(1, rows_param).Bind(2, IdArray(ids));
      RETURN_IF_ERROR(ForEachRow(s, [&] {
        const auto i = static_cast<std::size_t>(s.Int(0));
        applied[i] = true;
        const FinishParams& f = *writes[i].finish;
        for (EventRecord& e : FinishEvents(f, *f.now, s.TextView(1), s.TextView(2),
                                           static_cast<int>(s.Int(3)))) {
          events[i].push_back(std::move(e));
        }
      }));
    }
    for (std::size_t i : finishing) {
      if (!applied[i]) refused.push_back(i);
    }
    if (refused.size() < finishing.size()) {
      // Only the attempts and steps of the runs just finished: a refused
      // row's token matches no attempt of another run, and its own run's
      // attempt stays as it is (the fence failed).
      postgres::JsonRows ended;
      std::vector<int64_t> ended_ids;
      std::vector<int64_t> ended_tokens;
      postgres::JsonRows left_running;  // runs whose step the attempt left running
      std::vector<int64_t> left_running_ids;
      for (std::size_t k = 0; k < finishing.size(); ++k) {
        const std::size_t i = finishing[k];
        if (!applied[i]) continue;
        finish_row(ended, i);
        ended_ids.push_back(ids[k]);
        ended_tokens.push_back(writes[i].finish->token);
        if (step_running[i]) {
          left_running.Row().Int("id", ids[k]).Int("now", Ms(*writes[i].finish->now));
          left_running_ids.push_back(ids[k]);
        }
      }
      const std::string ended_param = std::move(ended).Take();
      {
        ASSIGN_OR_RETURN(s, db().Prepare(
            "WITH x AS MATERIALIZED (SELECT * FROM json_to_recordset(?1::json) AS t("
            "id bigint, token bigint, now bigint, end_class text, exit_status bigint, "
            "step text, log_path text, tail text)) "
            "UPDATE attempts a SET ended_at = x.now, end_class = x.end_class, "
            "exit_status = x.exit_status, step = x.step, log_path = x.log_path, "
            "output_tail = x.tail FROM x "
            "WHERE a.fencing_token = ANY(ARRAY(SELECT unnest(?2::bigint[]))) "
            "AND a.run_id = x.id AND a.fencing_token = x.token"));
        s.Bind(1, ended_param).Bind(2, IdArray(ended_tokens));
        RETURN_IF_ERROR(s.Run());
      }
      if (!left_running_ids.empty()) {
        // A step left running by an attempt that ended is not running any
        // more. Only the token's holder sets a step running, and its writes
        // through this node queue behind this transaction. (As before the
        // read, a holder racing its own end through another node can leave
        // a step marked running: the step write and the end read different
        // rows.)
        ASSIGN_OR_RETURN(s, db().Prepare(
            "WITH x AS MATERIALIZED (SELECT * FROM json_to_recordset(?1::json) AS t("
            "id bigint, now bigint)) "
            "UPDATE run_steps s SET state = 'pending', updated_at = x.now FROM x "
            "WHERE s.run_id = ANY(ARRAY(SELECT unnest(?2::bigint[]))) "
            "AND s.run_id = x.id AND s.state = 'running'"));
        s.Bind(1, std::move(left_running).Take()).Bind(2, IdArray(left_running_ids));
        RETURN_IF_ERROR(s.Run());
      }
    }
  }
  std::vector<EventRecord> all;
  for (auto& per_write : events) {
    for (auto& e : per_write) all.push_back(std::move(e));
  }
  RETURN_IF_ERROR(AppendEventsLocked(all));
  for (std::size_t i : refused) {
    // Stale, or a reaper's finish after a heartbeat: FinishLocked answers
    // (and records a stale write) as it does for SQLite.
    ASSIGN_OR_RETURN(finished, FinishLocked(*writes[i].finish, *writes[i].finish->now));
    results[i] = std::move(finished.status);
  }
  RETURN_IF_ERROR(tx.Commit());
  return results;
}

}  // namespace cronledger::store
