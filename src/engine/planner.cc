#include "engine/planner.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "exec/command_runner.h"
#include "ledger/names.h"

namespace cronledger::engine {
namespace {

using std::chrono::seconds;
using std::chrono::sys_seconds;

const char* DstName(DstNote n) {
  switch (n) {
    case DstNote::kNone: return "";
    case DstNote::kShifted: return "shifted";
    case DstNote::kRepeated: return "repeated";
  }
  return "";
}

}  // namespace

Planner::Planner(const config::Config& config, store::Store& store, Clock& clock,
                 PlannerOptions options)
    : config_(config), store_(store), clock_(clock), options_(options) {}

Status Planner::RunOnce(Clock::TimePoint now, PlanPassStats* stats) {
  Status plan = PlanOnce(now, stats);
  Status release = ReleaseOnce(now, stats);
  return plan.ok() ? release : plan;
}

Status Planner::PlanOnce(Clock::TimePoint now, PlanPassStats* stats) {
  Status first;
  const sys_seconds now_s = std::chrono::floor<seconds>(now);
  for (const auto& job : config_.jobs) {
    std::string definition = CanonicalDefinition(job);
    auto state = plan_state_.find(job.name);
    if (state != plan_state_.end() && now_s < state->second.next_at &&
        state->second.definition == definition) {
      continue;
    }
    sys_seconds next_at = now_s + options_.retry_after;
    Status s = PlanJob(job, definition, store::ToInstant(now), stats, &next_at);
    if (!s.ok()) {
      next_at = now_s + options_.retry_after;
      spdlog::error("planner: job {}: {}", job.name, s.ToString());
      if (first.ok()) first = s;
    }
    plan_state_[job.name] = {next_at, std::move(definition)};
  }
  return first;
}

sys_seconds Planner::NextPlanAt() const {
  sys_seconds next = sys_seconds::max();
  for (const auto& job : config_.jobs) {
    auto it = plan_state_.find(job.name);
    if (it == plan_state_.end()) return sys_seconds{};  // never planned: at once
    next = std::min(next, it->second.next_at);
  }
  return next;
}

Status Planner::ReleaseOnce(Clock::TimePoint now, PlanPassStats* stats) {
  auto outlook = store_.RunReleaseOutlook(store::ToInstant(now));
  if (!outlook.ok()) {
    spdlog::error("release: {}", outlook.status().ToString());
    return outlook.status();
  }
  next_release_at_ = outlook->next_at;
  Status first;
  for (const auto& name : outlook->due_jobs) {
    const config::JobConfig* job = config_.FindJob(name);
    // A job no longer configured keeps its planned runs until it returns.
    if (job == nullptr) continue;
    store::ReleaseParams p;
    p.job = job->name;
    p.policy.misfire_grace = job->misfire_grace;
    p.policy.catchup = job->catchup;
    p.policy.on_pause = job->on_pause;
    p.now = store::ToInstant(now);
    auto r = store_.RunRelease(p);
    if (!r.ok()) {
      spdlog::error("release: job {}: {}", job->name, r.status().ToString());
      if (first.ok()) first = r.status();
      continue;
    }
    if (r->skipped > 0) {
      spdlog::warn("release: job {}: {} run(s) skipped (see `cronledger events --job {}`)",
                   job->name, r->skipped, job->name);
    }
    if (stats) {
      stats->released += r->released;
      stats->skipped += r->skipped;
    }
  }
  return first;
}

std::optional<std::vector<std::string>> Planner::Partitions(const config::JobConfig& job,
                                                            store::Instant now) {
  if (job.partitions_command.empty()) {
    return job.partitions.empty() ? std::vector<std::string>{"default"} : job.partitions;
  }
  exec::CommandSpec spec;
  spec.argv = job.partitions_command;
  spec.cwd = config_.dir;
  spec.environment = exec::BaseEnvironment();
  spec.environment.push_back("CRONLEDGER_JOB=" + job.name);
  spec.timeout = options_.partitions_timeout;
  const exec::CommandResult r = exec::RunCommand(spec, clock_);

  std::string failure;
  std::vector<std::string> ids;
  if (r.spawn_failed) {
    failure = r.err;
  } else if (r.timed_out) {
    failure = fmt::format("timed out after {} ms", options_.partitions_timeout.count());
  } else if (r.exit_code != 0) {
    failure = r.signal ? fmt::format("killed by signal {}", r.signal)
                       : fmt::format("exited with status {}", r.exit_code);
  } else if (r.out_truncated) {
    failure = "printed more than 1 MiB";
  } else {
    std::set<std::string> seen;
    std::size_t start = 0;
    int line = 0;
    while (start < r.out.size() && failure.empty()) {
      std::size_t end = r.out.find('\n', start);
      if (end == std::string::npos) end = r.out.size();
      std::string id = r.out.substr(start, end - start);
      start = end + 1;
      ++line;
      while (!id.empty() && (id.back() == '\r' || id.back() == ' ' || id.back() == '\t')) {
        id.pop_back();
      }
      while (!id.empty() && (id.front() == ' ' || id.front() == '\t')) id.erase(0, 1);
      if (id.empty()) continue;
      if (!config::IsValidPartitionId(id)) {
        failure = fmt::format("line {}: \"{}\" is not a valid partition id", line,
                              id.substr(0, 200));
      } else if (seen.insert(id).second) {
        ids.push_back(id);
      }
    }
    if (failure.empty() && ids.empty()) failure = "printed no partition ids";
  }
  if (failure.empty()) {
    last_partition_failure_.erase(job.name);
    return ids;
  }
  // Report a failure once, not on every pass; the previous set stays.
  spdlog::error("planner: job {}: partitions_command failed: {}; keeping the previous "
                "partitions",
                job.name, failure);
  if (last_partition_failure_[job.name] != failure) {
    last_partition_failure_[job.name] = failure;
    store::EventRecord e;
    e.at = now;
    e.type = ledger::event::kPartitionsFailed;
    e.job = job.name;
    e.actor = "planner";
    e.reason = failure;
    std::string err_tail = r.err.size() > 2000 ? r.err.substr(r.err.size() - 2000) : r.err;
    e.details = nlohmann::json{{"command", job.partitions_command},
                               {"exit_status", r.exit_code},
                               {"timed_out", r.timed_out},
                               {"stderr", err_tail}}
                    .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    if (Status s = store_.EventAppend(e); !s.ok()) {
      spdlog::error("planner: job {}: recording partitions_failed: {}", job.name, s.ToString());
    }
  }
  return std::nullopt;
}

Status Planner::PlanJob(const config::JobConfig& job, const std::string& definition,
                        store::Instant now, PlanPassStats* stats, sys_seconds* next_plan_at) {
  auto sync = store_.JobSync({job.name, definition, now});
  if (!sync.ok()) return sync.status();
  if (sync->version_added) {
    spdlog::info("planner: job {}: definition version {} in force from {}", job.name,
                 sync->versions.back().version, FormatUtc(sync->versions.back().effective_from));
  }
  if (auto partitions = Partitions(job, now)) {
    auto changed = store_.PartitionSync({job.name, *partitions, now});
    if (!changed.ok()) return changed.status();
  }
  auto record = store_.JobGet(job.name);
  if (!record.ok()) return record.status();
  auto history = store_.PartitionHistory(job.name);
  if (!history.ok()) return history.status();
  // A job whose partitions were never known (its command has failed since
  // it was added) waits: planning would record occurrences with no runs.
  if (history->empty()) return Status::Ok();
  const auto& versions = sync->versions;

  const sys_seconds to = std::chrono::floor<seconds>(now) + options_.lookahead;
  // Start after the watermark; a new job starts at its first version, or
  // at its first partitions if they came later: the version and the
  // partitions are recorded by two transactions, which a second boundary
  // can part (several nodes starting together, a busy database), and an
  // occurrence before any member would be recorded with no runs. Never
  // further back than the backfill horizon: older keys belong to the gap
  // scanner and backfill, not to planning.
  sys_seconds from;
  if (record->planned_through) {
    from = *record->planned_through;
  } else {
    sys_seconds start = versions.front().effective_from;
    sys_seconds first_member = sys_seconds::max();
    for (const auto& interval : *history) first_member = std::min(first_member, interval.active_from);
    from = std::max(start, first_member) - seconds{1};
  }
  from = std::max(from, std::chrono::floor<seconds>(now) - job.backfill.horizon);
  {
    // Nothing to do until the occurrence after the watermark comes within
    // the lookahead (the current version decides; a job that never fires
    // again waits for a restart with a new definition).
    auto current = schedules_.Get(versions.back());
    if (!current.ok()) return current.status();
    const auto next = (*current)->schedule.Next(std::max(from, to));
    *next_plan_at = next ? next->utc - options_.lookahead : sys_seconds::max();
  }
  if (from >= to) return Status::Ok();

  const std::string tzdata = TzdataVersion();
  std::vector<store::PlannedOccurrence> batch;
  int batch_runs = 0;
  const auto flush = [&](sys_seconds through) -> Status {
    store::PlanParams p;
    p.job = job.name;
    p.occurrences = std::move(batch);
    p.planned_through = through;
    p.now = now;
    batch.clear();
    batch_runs = 0;
    auto r = store_.RunPlan(p);
    if (!r.ok()) return r.status();
    if (stats) {
      stats->runs_planned += r->runs_planned;
      stats->runs_deduplicated += r->runs_deduplicated;
    }
    return Status::Ok();
  };

  Status planned = ForEachExpected(
      versions, *history, from, to, schedules_, [&](const ExpectedOccurrence& e) -> Status {
        // Before the job was recorded: the gap scanner's, for an operator.
        if (e.before_recorded) return Status::Ok();
        store::PlannedOccurrence o;
        o.scheduled_at = e.occurrence.utc;
        o.local_time = FormatLocal(e.occurrence);
        o.dst = DstName(e.occurrence.dst);
        o.job_version = e.version->version;
        o.tzdata = tzdata;
        for (const auto& partition : e.partitions) {
          o.runs.push_back({std::string(partition), e.period, e.business_date});
        }
        batch_runs += static_cast<int>(o.runs.size()) + 1;
        batch.push_back(std::move(o));
        if (batch_runs >= options_.max_runs_per_transaction) return flush(e.occurrence.utc);
        return Status::Ok();
      });
  if (!planned.ok()) return planned;
  return flush(to);
}

}  // namespace cronledger::engine
