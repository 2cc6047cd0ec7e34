// SqlStore, execution half: claims, leases, fenced writes, attempts.
//
// Fencing: a claim takes the next token from the one `fencing` row and puts
// it on the run; every later write by the worker names its token and is an
// UPDATE ... WHERE id = ? AND lease_token = ? AND state = 'running'. Zero
// rows means the lease moved on (expired and reaped, or claimed again): the
// write changes nothing, a stale_write_rejected event is appended in the
// same transaction, and the caller gets kStaleLease.
#include <algorithm>
#include <iterator>
#include <limits>
#include <map>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "cronledger/schedule.h"
#include "store/sql/json_text.h"
#include "store/sql/sql_store.h"
#include "store/sql/sql_util.h"

namespace cronledger::store {
namespace {

using namespace sql_util;  // NOLINT: the store's own helpers
using sql::Transaction;

// `s` as a JSON string, quoted and escaped as nlohmann writes it. The hot
// events' details are formatted directly (a claim and a finish write four
// per run, and building a json object for each cost more than the rest of
// the event); their keys stay in nlohmann's sorted order.
std::string JsonQuoted(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  sql::AppendJsonString(out, s, sql::NulBytes::kKeep);
  return out;
}

// The claim's read of candidates of `jobs`: due runs of one lane (?5)
// after the cursor (?3, ?4) in (due_at, id) order, `limit` (?2) at most,
// then ?6... the jobs' names. Before schema 12 (`lanes` false) there is one
// lane, in (scheduled_at, id) order, and ?5 is not read. `+job`: walk the
// claim-order index in order rather than every active run of each job (a
// job's planned-ahead runs) and sort them. Runs waiting behind an earlier
// period (overlap = queue) are left out where the walk meets them
// (runs_active): they would only be passed over. A run claimed in this
// transaction was pending when this read it, so it holds its later periods
// back here too.
std::string CandidatesSql(const std::vector<const ClaimRule*>& jobs, bool lanes) {
  // Numbered explicitly: a bare "?" would take the number after the largest
  // seen so far in the text, colliding with ?2 to ?5.
  std::string listed;
  std::string queued;
  int param = 6;
  for (const ClaimRule* r : jobs) {
    const std::string at = fmt::format("?{}", param++);
    listed += (listed.empty() ? "" : ", ") + at;
    if (r->overlap == ledger::Overlap::kQueue) queued += (queued.empty() ? "" : ", ") + at;
  }
  const std::string waiting =
      queued.empty()
          ? ""
          : fmt::format(
                "AND NOT (+job IN ({}) AND EXISTS (SELECT 1 FROM runs e "
                "WHERE e.job = runs.job AND e.partition = runs.partition "
                "AND e.scheduled_at < runs.scheduled_at "
                "AND (e.state = 'pending' OR e.state = 'running'))) ",
                queued);
  const std::string_view due = lanes ? "due_at" : "scheduled_at";
  return fmt::format(
      "SELECT {0}, budget_attempts, budget_started_at, action_event_id, {1} FROM runs "
      "WHERE state = 'pending' AND released = 1 {4}AND {1} <= ?1 "
      "AND (next_attempt_at IS NULL OR next_attempt_at <= ?1) "
      "AND {1} >= ?3 AND ({1} > ?3 OR id > ?4) AND +job IN ({2}) "
      "AND +job NOT IN (SELECT name FROM jobs WHERE paused = 1) "
      "AND (SELECT count(*) FROM settings WHERE key = 'paused_all' AND value = '1') = 0 "
      "{3}ORDER BY {1}, id LIMIT ?2",
      kRunColumns, due, listed, waiting, lanes ? "AND lane = ?5 " : "");
}

// Whether the finish ends the run (as opposed to a retry or `unknown`).
bool Ends(const FinishParams& p) {
  return p.decision.state == ledger::RunState::kSucceeded ||
         p.decision.state == ledger::RunState::kFailed;
}

}  // namespace

Result<std::vector<StepState>> SqlStore::StepsLocked(int64_t run_id) {
  ASSIGN_OR_RETURN(s, db_->Prepare(
      "SELECT step, state FROM run_steps WHERE run_id = ? ORDER BY position"));
  s.Bind(1, run_id);
  std::vector<StepState> out;
  RETURN_IF_ERROR(ForEachRow(s, [&] {
    out.push_back(
        {s.Text(0), ledger::ParseStepStatus(s.Text(1)).value_or(ledger::StepStatus::kPending)});
  }));
  return out;
}

Status SqlStore::RejectStaleLocked(int64_t run_id, int64_t token, std::string_view write,
                                      std::string_view node, Instant now) {
  std::optional<int64_t> current;
  std::string job;
  std::string run_key;
  {
    ASSIGN_OR_RETURN(s, db_->Prepare(
        "SELECT lease_token, job, job || '/' || partition || '/' || period FROM runs "
        "WHERE id = ?"));
    s.Bind(1, run_id);
    ASSIGN_OR_RETURN(row, s.Step());
    if (!row) return NotFound(fmt::format("no run with id {}", run_id));
    current = s.OptInt(0);
    job = s.Text(1);
    run_key = s.Text(2);
  }
  EventRecord e;
  e.at = now;
  e.type = ledger::event::kStaleWriteRejected;
  e.job = job;
  e.run_id = run_id;
  e.run_key = run_key;
  e.actor = node.empty() ? "worker" : std::string(node);
  e.reason = fmt::format("{} with fencing token {} is not the current one", write, token);
  nlohmann::json details = {{"write", write}, {"token", token}};
  details["current_token"] = current ? nlohmann::json(*current) : nlohmann::json();
  e.details = details.dump();
  RETURN_IF_ERROR(AppendEventLocked(e));
  return Status(StatusCode::kStaleLease,
                fmt::format("run {}: {} rejected: fencing token {} is stale", run_id, write, token));
}

Status SqlStore::SkipForOverlapLocked(const RunRecord& run, std::string_view node, Instant now) {
  ASSIGN_OR_RETURN(u, db_->Prepare(
      "UPDATE runs SET state = 'skipped', reason = 'overlap', updated_at = ?, "
      "finished_at = ? WHERE id = ? AND state = 'pending'"));
  u.Bind(1, Ms(now)).Bind(2, Ms(now)).Bind(3, run.id);
  RETURN_IF_ERROR(u.Run());
  return AppendEventLocked(OverlapSkipEvent(run, node, now));
}

EventRecord SqlStore::OverlapSkipEvent(const RunRecord& run, std::string_view node, Instant now) {
  EventRecord e;
  e.at = now;
  e.type = ledger::event::kSkipped;
  e.job = run.job;
  e.run_id = run.id;
  e.run_key = run.RunKey();
  e.actor = std::string(node);
  e.reason = "overlap";
  e.details = nlohmann::json{{"reason", "overlap"},
                             {"waived", true},
                             {"scheduled_at", FormatUtc(run.scheduled_at)}}
                  .dump();
  return e;
}

Result<std::vector<ClaimedRun>> SqlStore::RunClaim(const ClaimParams& p) {
  std::vector<ClaimedRun> out;
  if (p.rules.empty() || p.limit <= 0) return out;
  // Resolved before the look that precedes the transaction: this path has
  // no database clock to read (PostgresStore claims set-based).
  ASSIGN_OR_RETURN(now, TransactionNow(p.now));
  std::lock_guard lock(mu_);
  {
    // An idle dispatcher polls often: one cheap look, before building the
    // query for its jobs and before taking the write lock.
    ASSIGN_OR_RETURN(
        s, db_->Prepare(HasLanes()
                            ? "SELECT 1 FROM runs WHERE state = 'pending' AND released = 1 "
                              "AND lane IN (0, 1) AND due_at <= ?1 "
                              "AND (next_attempt_at IS NULL OR next_attempt_at <= ?1) LIMIT 1"
                            : "SELECT 1 FROM runs WHERE state = 'pending' AND released = 1 "
                              "AND scheduled_at <= ?1 "
                              "AND (next_attempt_at IS NULL OR next_attempt_at <= ?1) LIMIT 1"));
    s.Bind(1, Ms(now));
    ASSIGN_OR_RETURN(row, s.Step());
    if (!row) return out;
  }
  std::map<std::string, const ClaimRule*> rules;
  for (const auto& r : p.rules) rules[r.job] = &r;
  struct Candidate : RunRecord {
    int budget_attempts = 0;
    std::optional<int64_t> budget_started_at;
    std::optional<int64_t> action_event_id;
    int64_t due = 0;  // due_at (scheduled_at before schema 12): the walk's order
  };
  std::vector<Candidate> candidates;
  // Where the walk is: every due run of lane 0 (the schedule's own runs, an
  // operator's trigger or retry) before lane 1 (backfills, reruns,
  // approvals), each lane in (due, id) order.
  struct Cursor {
    int64_t lane = 0;
    int64_t due = std::numeric_limits<int64_t>::min();
    int64_t id = 0;
  };
  Cursor after;
  const int64_t last_lane = HasLanes() ? static_cast<int64_t>(Lane::kBackfill) : 0;
  // Reads the next candidates of `jobs`, from one lane into the next; whether
  // it found `limit` (there may be more).
  const auto find_candidates = [&](const std::vector<const ClaimRule*>& jobs,
                                   int64_t limit) -> Result<bool> {
    candidates.clear();
    for (;;) {
      ASSIGN_OR_RETURN(s, db_->Prepare(CandidatesSql(jobs, HasLanes())));
      s.Bind(1, Ms(now))
          .Bind(2, limit - static_cast<int64_t>(candidates.size()))
          .Bind(3, after.due)
          .Bind(4, after.id)
          .Bind(5, after.lane);
      int i = 6;
      for (const ClaimRule* r : jobs) s.Bind(i++, r->job);
      const std::size_t before = candidates.size();
      RETURN_IF_ERROR(ForEachRow(s, [&] {
        candidates.push_back(
            {RunFromRow(s), static_cast<int>(s.Int(14)), s.OptInt(15), s.OptInt(16), s.Int(17)});
      }));
      if (candidates.size() > before)
        after = {after.lane, candidates.back().due, candidates.back().id};
      if (static_cast<int64_t>(candidates.size()) == limit) return true;
      if (after.lane == last_lane) return false;
      after = {after.lane + 1, std::numeric_limits<int64_t>::min(), 0};
    }
  };
  std::vector<const ClaimRule*> all_jobs;
  for (const auto& r : p.rules) all_jobs.push_back(&r);
  // Due runs of other jobs (external ones, say) cost a read, not a write
  // transaction.
  RETURN_IF_ERROR(find_candidates(all_jobs, 1).status());
  if (candidates.empty()) return out;
  after = Cursor{};
  Transaction tx(*db_);
  RETURN_IF_ERROR(tx.Begin());
  // Running runs per job with a max_concurrency, then tracked as this claim
  // takes more.
  std::map<std::string, int> running;
  for (const auto& r : p.rules) {
    if (r.max_concurrency <= 0) continue;
    ASSIGN_OR_RETURN(s, db_->Prepare(
        "SELECT count(*) FROM runs WHERE job = ? AND state = 'running'"));
    s.Bind(1, r.job);
    ASSIGN_OR_RETURN(row, s.Step());
    running[r.job] = row ? static_cast<int>(s.Int(0)) : 0;
  }
  const auto full = [&](const ClaimRule& r) {
    return r.max_concurrency > 0 && running[r.job] >= r.max_concurrency;
  };
  // Rows of this claim's attempts and first steps, inserted several per
  // statement once every run is decided; its events likewise.
  struct NewAttempt {
    int64_t run_id;
    int attempt;
    int64_t token;
    std::optional<int64_t> action_event_id;
  };
  std::vector<NewAttempt> attempts;
  struct NewStep {
    int64_t run_id;
    const std::string* name;
    int64_t position;
    bool first;
  };
  std::vector<NewStep> first_steps;
  HeldEvents events(*this);
  std::optional<int64_t> last_token;
  // A look reads a little past the batch, for runs passed over (a job
  // reaching its max_concurrency, overlap = skip). When those leave the
  // batch short, the next look goes on from where it stopped, without the
  // jobs that are now full: however many of their runs are due, they do not
  // hold back the others'.
  int64_t look = int64_t{p.limit} + 16;
  bool more = true;
  while (more && static_cast<int>(out.size()) < p.limit) {
    std::vector<const ClaimRule*> open_jobs;
    for (const ClaimRule* r : all_jobs) {
      if (!full(*r)) open_jobs.push_back(r);
    }
    if (open_jobs.empty()) break;
    ASSIGN_OR_RETURN(found_all, find_candidates(open_jobs, look));
    more = found_all;
    look = int64_t{p.limit} * 4 + 16;
    for (const Candidate& c : candidates) {
      if (static_cast<int>(out.size()) >= p.limit) break;
      const ClaimRule& rule = *rules.at(c.job);
      if (full(rule)) continue;
      if (rule.overlap == ledger::Overlap::kSkip) {
        // Read now, in this transaction: an earlier period claimed by this
        // very claim is running.
        ASSIGN_OR_RETURN(s, db_->Prepare(
            "SELECT 1 FROM runs WHERE job = ? AND partition = ? AND scheduled_at < ? "
            "AND state = 'running' LIMIT 1"));
        s.Bind(1, c.job).Bind(2, c.partition).Bind(3, Ms(c.scheduled_at));
        ASSIGN_OR_RETURN(blocked, s.Step());
        if (blocked) {
          RETURN_IF_ERROR(SkipForOverlapLocked(c, p.node, now));
          continue;
        }
      }
      // Take the next fencing token. The sequence is read once and written
      // back once per transaction (below): the write lock is held throughout.
      if (!last_token) {
        ASSIGN_OR_RETURN(s, db_->Prepare("SELECT last_token FROM fencing WHERE id = 1"));
        ASSIGN_OR_RETURN(row, s.Step());
        if (!row) return Internal("the fencing sequence is missing");
        last_token = s.Int(0);
      }
      const int64_t token = *last_token + 1;
      const Instant expires = now + rule.lease_ttl;
      ClaimedRun claimed;
      {
        // No RETURNING: the candidate row has the counters (SQLite builds an
        // ephemeral table for RETURNING, a fifth of a claim's cost).
        ASSIGN_OR_RETURN(s, db_->Prepare(
            "UPDATE runs SET state = 'running', lease_token = ?1, lease_expires_at = ?2, "
            "lease_node = ?3, attempts = attempts + 1, budget_attempts = budget_attempts + 1, "
            "budget_started_at = coalesce(budget_started_at, ?4), next_attempt_at = NULL, "
            "updated_at = ?4 WHERE id = ?5 AND state = 'pending'"));
        s.Bind(1, token).Bind(2, Ms(expires)).BindInPlace(3, p.node).Bind(4, Ms(now))
            .Bind(5, c.id);
        RETURN_IF_ERROR(s.Run());
        if (db_->Changes() != 1) continue;
        last_token = token;
        claimed.attempt = c.attempts + 1;
        claimed.budget_attempts = c.budget_attempts + 1;
        claimed.budget_started_at = FromMs(c.budget_started_at.value_or(Ms(now)));
      }
      attempts.push_back({c.id, claimed.attempt, token, c.action_event_id});
      if (claimed.attempt == 1) {
        // A first attempt: no step rows yet; the first one starts running.
        for (std::size_t i = 0; i < rule.steps.size(); ++i) {
          first_steps.push_back({c.id, &rule.steps[i], static_cast<int64_t>(i), i == 0});
          claimed.steps.push_back({rule.steps[i], i == 0 ? ledger::StepStatus::kRunning
                                                         : ledger::StepStatus::kPending});
        }
      } else {
        ASSIGN_OR_RETURN(steps, ResumeStepsLocked(c.id, claimed.attempt, rule.steps, now));
        claimed.steps = std::move(steps);
      }
      claimed.run = c;
      claimed.run.state = ledger::RunState::kRunning;
      claimed.run.attempts = claimed.attempt;
      claimed.token = token;
      claimed.lease_expires_at = expires;
      for (EventRecord& e : ClaimEvents(claimed, p.node, now)) {
        RETURN_IF_ERROR(AppendEventLocked(std::move(e)));
      }
      if (rule.max_concurrency > 0) ++running[c.job];
      out.push_back(std::move(claimed));
    }
  }
  const bool callers = HasCallers();
  RETURN_IF_ERROR(InsertRowsLocked(
      callers ? "INSERT INTO attempts (run_id, number, fencing_token, node, started_at, "
                "action_event_id, claimant) VALUES "
              : "INSERT INTO attempts (run_id, number, fencing_token, node, started_at, "
                "action_event_id) VALUES ",
      callers ? 7 : 6, attempts.size(), [&](sql::Stmt& s, int first, std::size_t i) {
        const NewAttempt& a = attempts[i];
        s.Bind(first, a.run_id).Bind(first + 1, int64_t{a.attempt}).Bind(first + 2, a.token)
            .BindInPlace(first + 3, p.node).Bind(first + 4, Ms(now))
            .BindOptional(first + 5, a.action_event_id);
        if (callers) s.BindInPlace(first + 6, p.claimant);
      }));
  RETURN_IF_ERROR(InsertRowsLocked(
      "INSERT INTO run_steps (run_id, step, position, state, attempt, updated_at) VALUES ", 6,
      first_steps.size(), [&](sql::Stmt& s, int first, std::size_t i) {
        const NewStep& st = first_steps[i];
        s.Bind(first, st.run_id).BindInPlace(first + 1, *st.name).Bind(first + 2, st.position)
            .BindInPlace(first + 3, st.first ? "running" : "pending");
        if (st.first) {
          s.Bind(first + 4, int64_t{1});
        } else {
          s.Bind(first + 4, std::nullopt);
        }
        s.Bind(first + 5, Ms(now));
      }));
  RETURN_IF_ERROR(events.Flush());
  if (last_token && !out.empty()) {
    ASSIGN_OR_RETURN(s, db_->Prepare("UPDATE fencing SET last_token = ? WHERE id = 1"));
    s.Bind(1, *last_token);
    RETURN_IF_ERROR(s.Run());
  }
  RETURN_IF_ERROR(tx.Commit());
  return out;
}

Result<std::vector<StepState>> SqlStore::ResumeStepsLocked(int64_t run_id, int attempt,
                                                              const std::vector<std::string>& names,
                                                              Instant now) {
  // A later attempt resumes at the first step not succeeded. (Steps added
  // to the job since get their rows.)
  for (std::size_t i = 0; i < names.size(); ++i) {
    ASSIGN_OR_RETURN(s, db_->Prepare(
        "INSERT INTO run_steps (run_id, step, position, state, updated_at) "
        "VALUES (?, ?, ?, 'pending', ?) ON CONFLICT (run_id, step) DO NOTHING"));
    s.Bind(1, run_id).Bind(2, names[i]).Bind(3, static_cast<int64_t>(i)).Bind(4, Ms(now));
    RETURN_IF_ERROR(s.Run());
  }
  ASSIGN_OR_RETURN(steps, StepsLocked(run_id));
  const auto first = std::find_if(steps.begin(), steps.end(), [](const StepState& st) {
    return st.state != ledger::StepStatus::kSucceeded;
  });
  if (first != steps.end()) {
    ASSIGN_OR_RETURN(s, db_->Prepare(
        "UPDATE run_steps SET state = 'running', attempt = ?, updated_at = ? WHERE run_id = ? "
        "AND step = ?"));
    s.Bind(1, int64_t{attempt}).Bind(2, Ms(now)).Bind(3, run_id).Bind(4, first->name);
    RETURN_IF_ERROR(s.Run());
    first->state = ledger::StepStatus::kRunning;
  }
  return steps;
}

Status SqlStore::RunHeartbeat(const HeartbeatParams& p) {
  WriteTransaction tx(*this);
  ASSIGN_OR_RETURN(now, tx.Begin(p.now));
  ASSIGN_OR_RETURN(s, db_->Prepare(
      "UPDATE runs SET lease_expires_at = ?, updated_at = ? WHERE id = ? AND lease_token = ? "
      "AND state = 'running'"));
  s.Bind(1, Ms(now + p.lease_ttl)).Bind(2, Ms(now)).Bind(3, p.run_id).Bind(4, p.token);
  RETURN_IF_ERROR(s.Run());
  Status result;
  if (db_->Changes() == 0) result = RejectStaleLocked(p.run_id, p.token, "heartbeat", p.node, now);
  if (result.code() == StatusCode::kNotFound) return result;
  RETURN_IF_ERROR(tx.Commit());
  return result;
}

namespace {

// A fence read for a write that ends the attempt: the run's attempt and run
// key if `?2` is its current token (and, with ?3 = 1, its lease expired
// before ?4); then, for the rule of docs/effects.md (At the end of an attempt),
// the key of an effect in doubt this attempt found and did not settle, and of
// one it began and never settled (almost always both NULL); then whether a step
// other than ?5 is running. One statement: on SQLite a statement's own cost is
// close to a lookup's. The first key is min(key), not ORDER BY key LIMIT 1:
// SQLite sorts through a temporary B-tree it opens every time, even for no
// rows, and the two of them were a third of this read's cost.
constexpr const char* kEndingFenceSql =
    "SELECT attempts, job, job || '/' || partition || '/' || period, "
    "(SELECT min(e.key) FROM effect_doubts d JOIN effects e ON e.id = d.effect_id "
    "WHERE d.run_id = ?1 AND d.token = ?2 AND e.state = 'started' "
    "AND e.started_token = d.started_token AND e.started_token <> ?2), "
    "(SELECT min(key) FROM effects WHERE run_id = ?1 AND started_token = ?2 "
    "AND state = 'started'), "
    "EXISTS (SELECT 1 FROM run_steps WHERE run_id = ?1 AND state = 'running' AND step <> ?5) "
    "FROM runs WHERE id = ?1 AND lease_token = ?2 AND state = 'running' "
    "AND (?3 = 0 OR lease_expires_at < ?4)";

}  // namespace

Result<std::optional<SqlStore::Fence>> SqlStore::ReadFenceLocked(int64_t run_id, int64_t token,
                                                                 const FenceRead& how) {
  std::optional<Fence> out;
  if (!how.ending) {
    ASSIGN_OR_RETURN(s, db_->Prepare(
        "SELECT attempts, job, job || '/' || partition || '/' || period FROM runs "
        "WHERE id = ? AND lease_token = ? AND state = 'running'"));
    s.Bind(1, run_id).Bind(2, token);
    ASSIGN_OR_RETURN(row, s.Step());
    if (row) out = Fence{run_id, token, s.Text(1), s.Text(2), static_cast<int>(s.Int(0)), std::nullopt};
    return out;
  }
  ASSIGN_OR_RETURN(s, db_->Prepare(kEndingFenceSql));
  s.Bind(1, run_id).Bind(2, token).Bind(3, int64_t{how.only_if_lease_expired ? 1 : 0})
      .Bind(4, Ms(how.now)).BindInPlace(5, how.step);
  ASSIGN_OR_RETURN(row, s.Step());
  if (!row) return out;
  out = Fence{run_id, token, s.Text(1), s.Text(2), static_cast<int>(s.Int(0)), std::nullopt};
  Fence::Ending ending;
  if (!s.IsNull(3)) ending.doubted = s.Text(3);
  if (!s.IsNull(4)) ending.own = s.Text(4);
  ending.step_running = s.Int(5) != 0;
  out->ending = std::move(ending);
  return out;
}

Result<SqlStore::Answer> SqlStore::StepUpdateLocked(const StepParams& p, Instant now, bool ending) {
  FenceRead how;
  how.ending = ending;
  how.step = p.step;
  ASSIGN_OR_RETURN(fence, ReadFenceLocked(p.run_id, p.token, how));
  if (!fence) return Answer{RejectStaleLocked(p.run_id, p.token, "step " + p.step, p.node, now)};
  {
    ASSIGN_OR_RETURN(s, db_->Prepare(
        "UPDATE run_steps SET state = ?, attempt = ?, updated_at = ? WHERE run_id = ? AND "
        "step = ?"));
    s.BindInPlace(1, ledger::Name(p.state))
        .Bind(2, int64_t{fence->attempt})
        .Bind(3, Ms(now))
        .Bind(4, p.run_id)
        .BindInPlace(5, p.step);
    RETURN_IF_ERROR(s.Run());
    if (db_->Changes() == 0) {
      return Answer{InvalidArgument(fmt::format("run {} has no step \"{}\"", p.run_id, p.step))};
    }
  }
  if (fence->ending && p.state == ledger::StepStatus::kRunning) {
    fence->ending->step_running = true;
  }
  RETURN_IF_ERROR(AppendEventLocked(StepEvent(p, now, fence->job, fence->run_key, fence->attempt)));
  return Answer{Status::Ok(), std::move(fence)};
}

Status SqlStore::FencedWrite(const std::function<Result<Answer>()>& write) {
  WriteTransaction tx(*this);
  RETURN_IF_ERROR(tx.Begin());
  ASSIGN_OR_RETURN(answer, write());
  const Status& result = answer.status;
  if (result.ok() || result.code() == StatusCode::kStaleLease) RETURN_IF_ERROR(tx.Commit());
  return result;
}

Status SqlStore::StepUpdate(const StepParams& p) {
  return FencedWrite([&]() -> Result<Answer> {
    ASSIGN_OR_RETURN(now, TransactionNow(p.now));
    return StepUpdateLocked(p, now);
  });
}

void SqlStore::ApplyEffectsInDoubt(FinishParams& p, std::string doubted, std::string_view own) {
  // An effect this attempt began and never settled may or may not have
  // happened; ending the run would leave that unsaid. (A retry instead
  // finds it in doubt and reconciles it.)
  std::string in_doubt = std::move(doubted);
  if (in_doubt.empty() && Ends(p)) in_doubt = std::string(own);
  if (!in_doubt.empty() && p.decision.state != ledger::RunState::kUnknown) {
    // The worker logged its own decision already ("-> succeeded"); this is
    // the one that holds, and the line someone looking for unknowns finds.
    spdlog::warn("run {}: effect \"{}\" is in doubt: the attempt (fencing token {}) ends "
                 "in_doubt and the run unknown, not {} as its worker decided",
                 p.run_id, in_doubt, p.token, ledger::Name(p.decision.state));
    p.end_class = ledger::EndClass::kInDoubt;
    p.decision.state = ledger::RunState::kUnknown;
    p.decision.next_attempt_at.reset();
    p.decision.reason = fmt::format("effect \"{}\" is in doubt", in_doubt);
  }
}

Result<SqlStore::Answer> SqlStore::FinishLocked(const FinishParams& given, Instant now, const Fence* fenced) {
  // Neither the params nor the fence is copied unless an effect in doubt
  // changes the decision (below): a group commit finishes hundreds of runs.
  std::optional<Fence> read;
  const Fence* fence = fenced;
  if (fenced == nullptr || !fenced->ending || fenced->run_id != given.run_id ||
      fenced->token != given.token || given.only_if_lease_expired) {
    FenceRead how;
    how.ending = true;
    how.only_if_lease_expired = given.only_if_lease_expired;
    how.now = now;
    ASSIGN_OR_RETURN(found, ReadFenceLocked(given.run_id, given.token, how));
    read = std::move(found);
    fence = read ? &*read : nullptr;
  }
  if (fence == nullptr) {
    if (given.only_if_lease_expired) {
      // The lease was renewed or the run finished meanwhile: nothing to reap.
      return Answer{Status(StatusCode::kConflict, "lease no longer expired")};
    }
    return Answer{RejectStaleLocked(given.run_id, given.token, "finish", given.node, now)};
  }
  // docs/effects.md, At the end of an attempt: an effect this attempt found in
  // doubt and did not settle makes the run `unknown`, whatever the step's exit
  // status said. The server records it, not the step.
  const Fence::Ending& ending = *fence->ending;
  std::optional<FinishParams> in_doubt;
  if (!ending.doubted.empty() || !ending.own.empty()) {
    in_doubt = given;
    ApplyEffectsInDoubt(*in_doubt, ending.doubted, ending.own);
  }
  const FinishParams& p = in_doubt ? *in_doubt : given;
  const auto& d = p.decision;
  const bool ended = d.state != ledger::RunState::kPending;
  {
    ASSIGN_OR_RETURN(s, db_->Prepare(
        "UPDATE runs SET state = ?1, reason = NULL, lease_token = NULL, "
        "lease_expires_at = NULL, lease_node = NULL, next_attempt_at = ?2, "
        "last_end_class = ?3, updated_at = ?4, finished_at = ?5, released = 1, "
        "misfire_exempt = 1, budget_attempts = budget_attempts - ?7, "
        "budget_started_at = CASE WHEN ?7 = 1 AND budget_attempts <= 1 THEN NULL "
        "ELSE budget_started_at END WHERE id = ?6"));
    s.BindInPlace(1, ledger::Name(d.state));
    if (d.next_attempt_at) {
      s.Bind(2, d.next_attempt_at->time_since_epoch().count());
    } else {
      s.Bind(2, std::nullopt);
    }
    s.BindInPlace(3, ledger::Name(p.end_class)).Bind(4, Ms(now));
    if (ended) {
      s.Bind(5, Ms(now));
    } else {
      s.Bind(5, std::nullopt);
    }
    s.Bind(6, p.run_id).Bind(7, int64_t{p.outside_budget ? 1 : 0});
    RETURN_IF_ERROR(s.Run());
  }
  {
    ASSIGN_OR_RETURN(s, db_->Prepare(
        "UPDATE attempts SET ended_at = ?, end_class = ?, exit_status = ?, step = ?, "
        "log_path = ?, output_tail = ? WHERE run_id = ? AND fencing_token = ?"));
    s.Bind(1, Ms(now)).BindInPlace(2, ledger::Name(p.end_class));
    if (p.exit_status) {
      s.Bind(3, int64_t{*p.exit_status});
    } else {
      s.Bind(3, std::nullopt);
    }
    s.BindInPlace(4, p.step).BindInPlace(5, p.log_path).BindInPlace(6, p.output_tail)
        .Bind(7, p.run_id).Bind(8, p.token);
    RETURN_IF_ERROR(s.Run());
  }
  // A step left running by an attempt that ended is not running any more.
  if (ending.step_running) {
    ASSIGN_OR_RETURN(s, db_->Prepare(
        "UPDATE run_steps SET state = 'pending', updated_at = ? WHERE run_id = ? AND "
        "state = 'running'"));
    s.Bind(1, Ms(now)).Bind(2, p.run_id);
    RETURN_IF_ERROR(s.Run());
  }
  for (EventRecord& e : FinishEvents(p, now, fence->job, fence->run_key, fence->attempt)) {
    RETURN_IF_ERROR(AppendEventLocked(std::move(e)));
  }
  return Answer{Status::Ok()};
}

std::vector<EventRecord> SqlStore::ClaimEvents(const ClaimedRun& c, std::string_view node,
                                               Instant now) {
  EventRecord e = RunEvent(now, c.run.job, c.run.id, c.run.RunKey(), node);
  EventRecord started = e;
  e.type = ledger::event::kClaimed;
  e.details = fmt::format(R"({{"attempt":{},"fencing_token":{},"lease_expires_at":"{}","node":{}}})",
                          c.attempt, c.token,
                          FormatUtc(std::chrono::floor<seconds>(c.lease_expires_at)),
                          JsonQuoted(node));
  std::vector<EventRecord> out{std::move(e)};
  const auto first = std::find_if(c.steps.begin(), c.steps.end(), [](const StepState& st) {
    return st.state == ledger::StepStatus::kRunning;
  });
  if (first != c.steps.end()) {
    started.type = ledger::event::kStepStarted;
    started.details =
        fmt::format(R"({{"attempt":{},"step":{}}})", c.attempt, JsonQuoted(first->name));
    out.push_back(std::move(started));
  }
  return out;
}

EventRecord SqlStore::StepEvent(const StepParams& p, Instant now, std::string_view job,
                                std::string_view run_key, int attempt) {
  EventRecord e = RunEvent(now, job, p.run_id, run_key, p.node);
  e.type = p.state == ledger::StepStatus::kRunning     ? ledger::event::kStepStarted
           : p.state == ledger::StepStatus::kSucceeded ? ledger::event::kStepSucceeded
                                                       : ledger::event::kStepFailed;
  e.details = fmt::format(R"({{"attempt":{},"step":{}}})", attempt, JsonQuoted(p.step));
  return e;
}

std::vector<EventRecord> SqlStore::FinishEvents(const FinishParams& p, Instant now,
                                                std::string_view job, std::string_view run_key,
                                                int attempt) {
  const auto& d = p.decision;
  std::string details = fmt::format(R"({{"attempt":{},"end_class":"{}")", attempt,
                                    ledger::Name(p.end_class));
  if (p.exit_status) fmt::format_to(std::back_inserter(details), R"(,"exit_status":{})", *p.exit_status);
  fmt::format_to(std::back_inserter(details), R"(,"fencing_token":{})", p.token);
  if (d.next_attempt_at) {
    fmt::format_to(std::back_inserter(details), R"(,"next_attempt_at":"{}")",
                   FormatUtc(std::chrono::floor<seconds>(*d.next_attempt_at)));
  }
  if (!p.step.empty()) fmt::format_to(std::back_inserter(details), R"(,"step":{})", JsonQuoted(p.step));
  details += '}';
  EventRecord e = RunEvent(now, job, p.run_id, run_key,
                           p.actor == "reaper" ? std::string_view("reaper") : p.node);
  e.reason = d.reason;
  e.details = std::move(details);
  std::vector<EventRecord> out;
  if (p.end_class == ledger::EndClass::kLeaseExpired) {
    EventRecord expired = e;
    expired.type = ledger::event::kLeaseExpired;
    expired.reason = fmt::format("lease of node {} expired", p.node);
    out.push_back(std::move(expired));
  }
  switch (d.state) {
    case ledger::RunState::kSucceeded: e.type = ledger::event::kSucceeded; break;
    case ledger::RunState::kFailed: e.type = ledger::event::kFailed; break;
    case ledger::RunState::kUnknown: e.type = ledger::event::kUnknown; break;
    default: e.type = ledger::event::kRetryScheduled; break;
  }
  out.push_back(std::move(e));
  return out;
}

Result<std::vector<Status>> SqlStore::RunFinishAttempts(const std::vector<FinishParams>& batch) {
  WriteTransaction tx(*this);
  RETURN_IF_ERROR(tx.Begin());
  std::vector<Status> results;
  results.reserve(batch.size());
  for (const FinishParams& p : batch) {
    ASSIGN_OR_RETURN(now, TransactionNow(p.now));
    ASSIGN_OR_RETURN(r, FinishLocked(p, now));
    results.push_back(std::move(r.status));
  }
  RETURN_IF_ERROR(tx.Commit());
  return results;
}

Result<std::vector<Status>> SqlStore::RunApplyWrites(const std::vector<WorkerWrite>& batch) {
  WriteTransaction tx(*this);
  RETURN_IF_ERROR(tx.Begin());
  HeldEvents events(*this);
  std::vector<Status> results;
  results.reserve(batch.size());
  for (const WorkerWrite& w : batch) {
    Status r;
    std::optional<Fence> fence;
    if (w.step) {
      ASSIGN_OR_RETURN(now, TransactionNow(w.step->now));
      ASSIGN_OR_RETURN(stepped, StepUpdateLocked(*w.step, now, w.finish.has_value()));
      r = std::move(stepped.status);
      fence = std::move(stepped.fence);
    }
    if (r.ok() && w.finish) {
      ASSIGN_OR_RETURN(now, TransactionNow(w.finish->now));
      ASSIGN_OR_RETURN(finished, FinishLocked(*w.finish, now, fence ? &*fence : nullptr));
      r = std::move(finished.status);
    }
    results.push_back(std::move(r));
  }
  RETURN_IF_ERROR(events.Flush());
  RETURN_IF_ERROR(tx.Commit());
  return results;
}

Result<std::vector<ExpiredLease>> SqlStore::RunListExpiredLeases(std::optional<Instant> now,
                                                                  int limit) {
  std::lock_guard lock(mu_);
  ASSIGN_OR_RETURN(at, StatementNow(now));
  ASSIGN_OR_RETURN(s, db_->Prepare(fmt::format(
      "SELECT {}, lease_token, lease_node, budget_attempts, coalesce(budget_started_at, 0), "
      "(SELECT step FROM run_steps WHERE run_id = runs.id AND state = 'running' LIMIT 1) "
      "FROM runs WHERE state = 'running' AND lease_expires_at < {} ORDER BY lease_expires_at "
      "LIMIT ?2",
      kRunColumns, NowSql(1))));
  s.BindOptional(1, at).Bind(2, int64_t{limit});
  std::vector<ExpiredLease> out;
  RETURN_IF_ERROR(ForEachRow(s, [&] {
    ExpiredLease e;
    e.run = RunFromRow(s);
    e.token = s.Int(14);
    e.node = s.Text(15);
    e.budget_attempts = static_cast<int>(s.Int(16));
    e.budget_started_at = FromMs(s.Int(17));
    e.running_step = s.Text(18);
    e.attempt = e.run.attempts;
    out.push_back(std::move(e));
  }));
  return out;
}

Result<RunLease> SqlStore::RunGetLease(int64_t run_id) {
  std::lock_guard lock(mu_);
  ASSIGN_OR_RETURN(
      s, db_->Prepare(fmt::format(
             "SELECT {}, lease_token, lease_node, budget_attempts, coalesce(budget_started_at, 0), "
             "(SELECT step FROM run_steps WHERE run_id = runs.id AND state = 'running' LIMIT 1), "
             "lease_expires_at, {} FROM runs WHERE id = ?",
             kRunColumns,
             HasCallers() ? "coalesce((SELECT claimant FROM attempts WHERE fencing_token = "
                            "runs.lease_token), '')"
                          : "''")));
  s.Bind(1, run_id);
  ASSIGN_OR_RETURN(row, s.Step());
  if (!row) return NotFound(fmt::format("no run with id {}", run_id));
  RunLease l;
  l.run = RunFromRow(s);
  if (l.run.state != ledger::RunState::kRunning) {
    return Status(StatusCode::kFailedPrecondition,
                  fmt::format("run {} is {}, not running", run_id, ledger::Name(l.run.state)));
  }
  l.token = s.Int(14);
  l.node = s.Text(15);
  l.budget_attempts = static_cast<int>(s.Int(16));
  l.budget_started_at = FromMs(s.Int(17));
  l.running_step = s.Text(18);
  l.expires_at = FromMs(s.Int(19));
  l.claimant = s.Text(20);
  l.attempt = l.run.attempts;
  return l;
}

Status SqlStore::RunRetry(const OperatorParams& p) {
  WriteTransaction tx(*this);
  ASSIGN_OR_RETURN(now, tx.Begin(p.now));
  std::string state;
  std::string job;
  std::string run_key;
  {
    ASSIGN_OR_RETURN(s, db_->Prepare(
        "SELECT state, job, job || '/' || partition || '/' || period FROM runs WHERE id = ?"));
    s.Bind(1, p.run_id);
    ASSIGN_OR_RETURN(row, s.Step());
    if (!row) return NotFound(fmt::format("no run with id {}", p.run_id));
    state = s.Text(0);
    job = s.Text(1);
    run_key = s.Text(2);
  }
  if (state != "failed" && state != "unknown") {
    return Status(StatusCode::kConflict,
                  fmt::format("run {} is {}; only failed or unknown runs can be retried",
                              p.run_id, state));
  }
  RETURN_IF_ERROR(RunBackToWork(*db_, p.run_id, now, LaneIf(HasLanes(), Lane::kFirst)));
  const EventRecord e =
      ActionEvent(ledger::event::kRetry, job, p.run_id, run_key, p, now, {{"from", state}});
  const int64_t ids[] = {p.run_id};
  RETURN_IF_ERROR(AppendActionLocked(e, ids).status());
  return tx.Commit();
}

Result<std::vector<AttemptRecord>> SqlStore::AttemptList(int64_t run_id) {
  std::lock_guard lock(mu_);
  ASSIGN_OR_RETURN(
      s, db_->Prepare(fmt::format(
             "SELECT number, fencing_token, node, started_at, ended_at, coalesce(end_class, ''), "
             "exit_status, coalesce(step, ''), coalesce(log_path, ''), coalesce(output_tail, ''), "
             "action_event_id, {} FROM attempts WHERE run_id = ? ORDER BY number",
             HasCallers() ? "claimant" : "''")));
  s.Bind(1, run_id);
  std::vector<AttemptRecord> out;
  RETURN_IF_ERROR(ForEachRow(s, [&] {
    AttemptRecord a;
    a.number = static_cast<int>(s.Int(0));
    a.token = s.Int(1);
    a.node = s.Text(2);
    a.started_at = FromMs(s.Int(3));
    if (auto end = s.OptInt(4)) a.ended_at = FromMs(*end);
    a.end_class = s.Text(5);
    if (auto x = s.OptInt(6)) a.exit_status = static_cast<int>(*x);
    a.step = s.Text(7);
    a.log_path = s.Text(8);
    a.output_tail = s.Text(9);
    a.action_event_id = s.OptInt(10);
    a.claimant = s.Text(11);
    out.push_back(std::move(a));
  }));
  return out;
}

Result<std::vector<StepState>> SqlStore::StepList(int64_t run_id) {
  std::lock_guard lock(mu_);
  return StepsLocked(run_id);
}

}  // namespace cronledger::store
