#include "engine/dispatcher.h"

#include <algorithm>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "exec/attempt_files.h"
#include "ledger/attempt_policy.h"

namespace cronledger::engine {
namespace {

using ledger::EndClass;
using std::chrono::milliseconds;

EndClass ClassOf(const exec::StepOutcome& o, const config::JobConfig& job) {
  switch (o.end) {
    case exec::StepEnd::kExited:
      return ledger::ClassifyExit(o.exit_status, job.retry_exit_codes, job.fail_exit_codes);
    case exec::StepEnd::kTimeout: return EndClass::kTimeout;
    case exec::StepEnd::kSignal: return EndClass::kSignal;
    case exec::StepEnd::kSpawnFailed: return EndClass::kSpawnFailed;
    case exec::StepEnd::kCancelled: return EndClass::kSignal;
  }
  return EndClass::kRetryable;
}

}  // namespace

Dispatcher::Dispatcher(const config::Config& config, store::Store& store, Clock& clock,
                       StepRunner& runner, DispatcherOptions options)
    : config_(config),
      store_(store),
      clock_(clock),
      runner_(runner),
      options_(std::move(options)),
      rng_(options_.jitter_seed ? options_.jitter_seed : std::random_device{}()) {
  for (const auto& job : config_.jobs) {
    // External jobs are claimed only by HTTP workers, in-process ones only
    // where handlers for them are registered.
    if (job.executor == config::Executor::kExternal) continue;
    if (job.executor == config::Executor::kInprocess) {
      const bool handled =
          options_.handlers != nullptr &&
          std::all_of(job.steps.begin(), job.steps.end(), [&](const config::StepConfig& st) {
            return options_.handlers->Find(job.name, st.name) != nullptr;
          });
      if (!handled) continue;
    }
    store::ClaimRule rule;
    rule.job = job.name;
    rule.lease_ttl = job.EffectiveLeaseTtl();
    rule.max_concurrency = job.max_concurrency;
    rule.overlap = job.overlap;
    for (const auto& s : job.steps) rule.steps.push_back(s.name);
    rules_.push_back(std::move(rule));
  }
  for (int i = 0; i < std::max(1, options_.max_workers); ++i) {
    workers_.emplace_back([this](std::stop_token stop) { WorkerLoop(stop); });
  }
}

Dispatcher::~Dispatcher() {
  loop_.request_stop();
  if (loop_.joinable()) loop_.join();
  {
    std::lock_guard lock(mu_);
    for (auto& [id, run] : active_) {
      run->shutdown = true;
      run->cancel.request_stop();
    }
  }
  for (auto& w : workers_) w.request_stop();
  work_cv_.notify_all();
  workers_.clear();  // joins
}

int Dispatcher::Active() const {
  std::lock_guard lock(mu_);
  return static_cast<int>(active_.size());
}

void Dispatcher::WaitIdle() {
  std::unique_lock lock(mu_);
  idle_cv_.wait(lock, [&] { return active_.empty(); });
}

double Dispatcher::JitterSample() {
  std::lock_guard lock(mu_);
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng_);
}

std::string Dispatcher::LogPath(const store::ClaimedRun& claim) const {
  return fmt::format("{}/{}/{}/attempt-{}.log", config_.server.log_dir, claim.run.job,
                     claim.run.id, claim.attempt);
}

Result<int> Dispatcher::ClaimOnce(Clock::TimePoint now) {
  if (!claiming_ || rules_.empty()) return 0;
  int free_slots = 0;
  {
    std::lock_guard lock(mu_);
    free_slots = options_.max_workers - static_cast<int>(active_.size());
  }
  if (free_slots <= 0) return 0;
  store::ClaimParams p;
  p.now = store::ToInstant(now);
  p.node = options_.node;
  p.limit = std::min(free_slots, options_.claim_batch);
  p.rules = rules_;
  auto claimed = store_.RunClaim(p);
  if (!claimed.ok()) return claimed.status();
  {
    std::lock_guard lock(mu_);
    for (auto& c : *claimed) {
      auto run = std::make_shared<ActiveRun>();
      const config::JobConfig* job = config_.FindJob(c.run.job);
      run->lease_ttl = job ? milliseconds(job->EffectiveLeaseTtl()) : milliseconds{60000};
      run->last_heartbeat = now;
      run->claim = std::move(c);
      active_[run->claim.run.id] = run;
      queue_.push_back(run);
    }
  }
  counters_.claimed += static_cast<int64_t>(claimed->size());
  work_cv_.notify_all();
  return static_cast<int>(claimed->size());
}

void Dispatcher::HeartbeatOnce(Clock::TimePoint now) {
  std::vector<std::shared_ptr<ActiveRun>> due;
  {
    std::lock_guard lock(mu_);
    for (auto& [id, run] : active_) {
      if (!run->stale && now - run->last_heartbeat >= run->lease_ttl / 3) due.push_back(run);
    }
  }
  for (auto& run : due) {
    const Status s = store_.RunHeartbeat({run->claim.run.id, run->claim.token,
                                          store::ToInstant(now), run->lease_ttl, options_.node});
    if (s.ok()) {
      run->last_heartbeat = now;
    } else if (s.code() == StatusCode::kStaleLease) {
      spdlog::warn("dispatcher: run {} ({}): lease lost, stopping its step: {}",
                   run->claim.run.id, run->claim.run.RunKey(), s.message());
      ++counters_.stale_writes_rejected;
      run->stale = true;
      run->cancel.request_stop();
    } else {
      spdlog::error("dispatcher: heartbeat of run {} failed, will retry: {}", run->claim.run.id,
                    s.ToString());
    }
  }
}

void Dispatcher::Start() {
  loop_ = std::jthread([this](std::stop_token stop) {
    while (!stop.stop_requested()) {
      const auto now = clock_.Now();
      auto claimed = ClaimOnce(now);
      if (!claimed.ok()) {
        spdlog::error("dispatcher: claim failed, retrying: {}", claimed.status().ToString());
      }
      HeartbeatOnce(now);
      // Claim again at once after a claim: more may be due. With every
      // worker busy, look again soon (a worker may free up any moment);
      // only an idle ledger waits the full poll.
      if (claimed.ok() && *claimed > 0) continue;
      const bool saturated = Active() >= options_.max_workers;
      clock_.SleepFor(saturated ? options_.poll / 10 : options_.poll, stop);
    }
  });
}

void Dispatcher::StopClaiming() { claiming_ = false; }

void Dispatcher::Drain(Clock::TimePoint deadline) {
  claiming_ = false;
  {
    std::unique_lock lock(mu_);
    while (!active_.empty() && clock_.Now() < deadline) {
      idle_cv_.wait_for(lock, std::chrono::milliseconds(100));
    }
    for (auto& [id, run] : active_) {
      run->shutdown = true;
      run->cancel.request_stop();
    }
  }
  WaitIdle();
  loop_.request_stop();
  if (loop_.joinable()) loop_.join();
}

void Dispatcher::WorkerLoop(std::stop_token stop) {
  for (;;) {
    std::shared_ptr<ActiveRun> run;
    {
      std::unique_lock lock(mu_);
      if (!work_cv_.wait(lock, stop, [&] { return !queue_.empty(); })) return;
      run = queue_.front();
      queue_.pop_front();
    }
    Execute(*run);
    {
      std::lock_guard lock(mu_);
      active_.erase(run->claim.run.id);
    }
    idle_cv_.notify_all();
  }
}

void Dispatcher::Execute(ActiveRun& run) {
  const store::ClaimedRun& claim = run.claim;
  const config::JobConfig* job = config_.FindJob(claim.run.job);
  store::FinishParams finish;
  finish.run_id = claim.run.id;
  finish.token = claim.token;
  finish.node = options_.node;
  finish.log_path = LogPath(claim);
  if (job == nullptr) {
    // The job left the config after it was claimed; let the lease expire.
    return;
  }
  EndClass end = EndClass::kSucceeded;
  bool idempotent = true;
  for (const auto& step : job->steps) {
    const auto state = std::find_if(claim.steps.begin(), claim.steps.end(),
                                    [&](const auto& s) { return s.name == step.name; });
    if (state != claim.steps.end() && state->state == "succeeded") continue;
    const Status started = store_.StepUpdate({claim.run.id, claim.token, step.name, "running",
                                              store::ToInstant(clock_.Now()), options_.node});
    if (started.code() == StatusCode::kStaleLease) {
      ++counters_.stale_writes_rejected;
      return;
    }
    exec::StepContext ctx;
    ctx.job = claim.run.job;
    ctx.partition = claim.run.partition;
    ctx.business_date = claim.run.business_date;
    ctx.period = claim.run.period;
    ctx.run_key = claim.run.RunKey();
    ctx.scheduled_at = claim.run.scheduled_at;
    ctx.run_id = claim.run.id;
    ctx.attempt = claim.attempt;
    ctx.fencing_token = claim.token;
    ctx.step = step.name;
    if (!step.keep_inputs.empty()) {
      const std::string dest = fmt::format("{}/{}/{}/attempt-{}-inputs/{}", config_.server.log_dir,
                                           claim.run.job, claim.run.id, claim.attempt, step.name);
      for (const auto& problem : exec::KeepInputs(step.keep_inputs, ctx, config_.dir, dest)) {
        spdlog::warn("run {} {} step {}: {}", claim.run.id, claim.run.RunKey(), step.name,
                     problem);
      }
    }
    const exec::StepOutcome outcome =
        runner_.Run(ctx, *job, step, finish.log_path, run.cancel.get_token());
    if (run.stale) return;  // fenced off: nothing more to write
    end = ClassOf(outcome, *job);
    finish.step = step.name;
    finish.output_tail = outcome.output_tail.empty() ? outcome.error : outcome.output_tail;
    if (outcome.end == exec::StepEnd::kExited) finish.exit_status = outcome.exit_status;
    idempotent = step.idempotent;
    if (outcome.end == exec::StepEnd::kCancelled && run.shutdown) {
      // Stopped by our own shutdown: release an idempotent step for another
      // attempt now; leave any other to its lease (the reaper decides).
      if (!step.idempotent) return;
      finish.end_class = EndClass::kSignal;
      finish.decision.state = ledger::RunState::kPending;
      finish.decision.next_attempt_at = store::ToInstant(clock_.Now());
      finish.decision.reason = "released at shutdown";
      finish.now = store::ToInstant(clock_.Now());
      Finish(run, finish);
      return;
    }
    const Status recorded = store_.StepUpdate(
        {claim.run.id, claim.token, step.name, end == EndClass::kSucceeded ? "succeeded" : "failed",
         store::ToInstant(clock_.Now()), options_.node});
    if (recorded.code() == StatusCode::kStaleLease) {
      ++counters_.stale_writes_rejected;
      return;
    }
    if (end != EndClass::kSucceeded) break;
  }
  ledger::AttemptFacts facts;
  facts.end = end;
  facts.step_idempotent = idempotent;
  facts.budget_attempts = claim.budget_attempts;
  facts.budget_started_at = claim.budget_started_at;
  facts.now = store::ToInstant(clock_.Now());
  facts.jitter_sample = JitterSample();
  finish.now = facts.now;
  finish.end_class = end;
  finish.decision = ledger::DecideAfterAttempt(job->retry, facts);
  Finish(run, finish);
}

void Dispatcher::Finish(ActiveRun& run, const store::FinishParams& params) {
  auto result = store_.RunFinishAttempts({params});
  const Status s = result.ok() ? result->at(0) : result.status();
  if (s.code() == StatusCode::kStaleLease) {
    ++counters_.stale_writes_rejected;
    return;
  }
  if (!s.ok()) {
    // The outcome could not be recorded; the lease will expire and the
    // reaper decides (an uncertain end), never a silent success.
    spdlog::error("dispatcher: run {}: recording the outcome failed: {}", run.claim.run.id,
                  s.ToString());
    return;
  }
  spdlog::info("run {} {}: attempt {} {} -> {}{}", run.claim.run.id, run.claim.run.RunKey(),
               run.claim.attempt, ledger::Name(params.end_class),
               ledger::Name(params.decision.state),
               params.decision.reason.empty() ? "" : " (" + params.decision.reason + ")");
  switch (params.decision.state) {
    case ledger::RunState::kSucceeded: ++counters_.succeeded; break;
    case ledger::RunState::kFailed: ++counters_.failed; break;
    case ledger::RunState::kUnknown: ++counters_.unknown; break;
    default: ++counters_.retried; break;
  }
}

}  // namespace cronledger::engine
