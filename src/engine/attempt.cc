#include "engine/attempt.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <utility>

#include "engine/step_runner.h"

namespace cronledger::engine {

using ledger::EndClass;
using ledger::StepStatus;

EndOfStep EndOfStep::Of(const exec::StepOutcome& outcome, const config::JobConfig& job) {
  EndOfStep e;
  e.end = ClassifyStep(outcome, job);
  if (outcome.end == exec::StepEnd::kExited) e.exit_status = outcome.exit_status;
  // What cronledger says of the end goes after the step's own last words.
  e.output_tail = outcome.output_tail.empty() ? outcome.error
                  : outcome.error.empty()     ? outcome.output_tail
                                          : outcome.output_tail + "\n== " + outcome.error + " ==";
  return e;
}

Attempt::Attempt(const config::JobConfig& job, store::RunRecord run,
                 const std::vector<store::StepState>& steps)
    : job_(&job), run_(std::move(run)), steps_(job.steps.size(), StepStatus::kPending) {
  // A step the ledger has no row for yet (added to the job since) is
  // pending.
  for (std::size_t i = 0; i < job.steps.size(); ++i) {
    const auto it = std::find_if(steps.begin(), steps.end(), [&](const store::StepState& s) {
      return s.name == job.steps[i].name;
    });
    if (it != steps.end()) steps_[i] = it->state;
  }
}

Attempt Attempt::FromClaim(const config::JobConfig& job, const store::ClaimedRun& claim,
                           std::string node, std::string log_path) {
  Attempt a(job, claim.run, claim.steps);
  a.number_ = claim.attempt;
  a.token_ = claim.token;
  a.node_ = std::move(node);
  a.log_path_ = std::move(log_path);
  a.budget_attempts_ = claim.budget_attempts;
  a.budget_started_at_ = claim.budget_started_at;
  return a;
}

Attempt Attempt::FromLease(const config::JobConfig& job, const store::RunRecord& run,
                           const store::RunLease& lease, const std::vector<store::StepState>& steps,
                           std::string node) {
  Attempt a(job, run, steps);
  a.number_ = lease.attempt;
  a.token_ = lease.token;
  a.node_ = std::move(node);
  a.budget_attempts_ = lease.budget_attempts;
  a.budget_started_at_ = lease.budget_started_at;
  return a;
}

store::FinishParams Attempt::LeaseExpired(const config::JobConfig* job,
                                          const store::ExpiredLease& lease, store::Instant now,
                                          double jitter_sample) {
  // Between steps nothing was in flight; a step the job no longer has is
  // not known to be safe to repeat.
  bool idempotent = lease.running_step.empty();
  ledger::RetryPolicy retry;
  if (job != nullptr) {
    retry = job->retry;
    for (const auto& s : job->steps) {
      if (s.name == lease.running_step) idempotent = s.idempotent;
    }
  }
  ledger::AttemptFacts facts;
  facts.end = EndClass::kLeaseExpired;
  facts.step_idempotent = idempotent;
  facts.budget_attempts = lease.budget_attempts;
  facts.budget_started_at = lease.budget_started_at;
  facts.now = now;
  facts.jitter_sample = jitter_sample;
  store::FinishParams f;
  f.run_id = lease.run.id;
  f.token = lease.token;
  f.now = now;
  f.node = lease.node;
  f.actor = "reaper";
  f.end_class = EndClass::kLeaseExpired;
  f.step = lease.running_step;
  f.decision = ledger::DecideAfterAttempt(retry, facts);
  f.only_if_lease_expired = true;
  return f;
}

std::optional<std::size_t> Attempt::Find(const std::string& name) const {
  for (std::size_t i = 0; i < job_->steps.size(); ++i) {
    if (job_->steps[i].name == name) return i;
  }
  return std::nullopt;
}

std::optional<std::size_t> Attempt::Current() const {
  for (std::size_t i = 0; i < steps_.size(); ++i) {
    if (steps_[i] != StepStatus::kSucceeded) return i;
  }
  return std::nullopt;
}

std::optional<std::size_t> Attempt::NextAfter(std::size_t step) const {
  for (std::size_t i = step + 1; i < steps_.size(); ++i) {
    if (steps_[i] != StepStatus::kSucceeded) return i;
  }
  return std::nullopt;
}

std::optional<std::size_t> Attempt::Running() const {
  for (std::size_t i = 0; i < steps_.size(); ++i) {
    if (steps_[i] == StepStatus::kRunning) return i;
  }
  return std::nullopt;
}

RunContext Attempt::Context(std::optional<std::size_t> step) const {
  RunContext ctx;
  ctx.job = run_.job;
  ctx.partition = run_.partition;
  ctx.business_date = run_.business_date;
  ctx.period = run_.period;
  ctx.run_key = run_.RunKey();
  ctx.scheduled_at = run_.scheduled_at;
  ctx.run_id = run_.id;
  ctx.attempt = number_;
  ctx.fencing_token = token_;
  ctx.step = step ? job_->steps[*step].name : "";
  return ctx;
}

store::StepParams Attempt::StepWrite(std::size_t step, StepStatus status, store::Instant now) {
  steps_[step] = status;
  return store::StepParams{run_.id, token_, job_->steps[step].name, status, now, node_};
}

Attempt::AfterStep Attempt::StepEnded(std::size_t step, const EndOfStep& end, store::Instant now,
                                      const JitterSample& jitter) {
  AfterStep after;
  if (end.end == EndClass::kSucceeded) {
    after.result = StepWrite(step, StepStatus::kSucceeded, now);
    after.next = NextAfter(step);
    return after;
  }
  after.result = StepWrite(step, StepStatus::kFailed, now);
  after.finish = End(step, end, now, jitter());
  return after;
}

store::FinishParams Attempt::Finish(std::optional<std::size_t> step, const EndOfStep& end,
                                    store::Instant now) const {
  store::FinishParams f;
  f.run_id = run_.id;
  f.token = token_;
  f.now = now;
  f.node = node_;
  f.end_class = end.end;
  f.exit_status = end.exit_status;
  f.step = step ? job_->steps[*step].name : "";
  f.log_path = log_path_;
  f.output_tail = end.output_tail;
  return f;
}

store::FinishParams Attempt::End(std::optional<std::size_t> step, const EndOfStep& end,
                                 store::Instant now, double jitter_sample) const {
  ledger::AttemptFacts facts;
  facts.end = end.end;
  // No step ran: nothing was in flight.
  facts.step_idempotent = step ? job_->steps[*step].idempotent : true;
  facts.budget_attempts = budget_attempts_;
  facts.budget_started_at = budget_started_at_;
  facts.now = now;
  facts.jitter_sample = jitter_sample;
  store::FinishParams f = Finish(step, end, now);
  // Succeeded, unless an effect of the attempt is in doubt: the store then
  // records the run `unknown` (docs/effects.md, At the end of an attempt).
  f.decision = ledger::DecideAfterAttempt(job_->retry, facts);
  return f;
}

store::FinishParams Attempt::ReleasedAtShutdown(std::optional<std::size_t> step,
                                                const EndOfStep& end, store::Instant now,
                                                std::string reason) const {
  store::FinishParams f = Finish(step, end, now);
  f.end_class = EndClass::kSignal;
  f.decision.state = ledger::RunState::kPending;
  f.decision.next_attempt_at = now;
  f.decision.reason = std::move(reason);
  f.outside_budget = !step.has_value();
  return f;
}

namespace {

// `text` with every byte sequence that is not UTF-8 as U+FFFD: a step's
// output is any bytes, and a notice or a log line carries it as text.
std::string ValidUtf8(const std::string& text) {
  const std::string quoted =
      nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return nlohmann::json::parse(quoted).get<std::string>();
}

}  // namespace

std::string LastOutputLine(const std::string& tail) {
  std::size_t end = tail.size();
  while (end > 0) {
    const std::size_t nl = tail.rfind('\n', end - 1);
    const std::size_t begin = nl == std::string::npos ? 0 : nl + 1;
    std::string line = tail.substr(begin, end - begin);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    const bool ours = line.starts_with("== ") && line.ends_with(" ==");
    if (!line.empty() && !ours) {
      if (line.size() <= 200) return ValidUtf8(line);
      std::size_t cut = 200;
      while (cut > 0 && (static_cast<unsigned char>(line[cut]) & 0xC0) == 0x80) --cut;
      return ValidUtf8(line.substr(0, cut)) + "...";
    }
    if (begin == 0) break;
    end = begin - 1;
  }
  return "";
}

}  // namespace cronledger::engine
