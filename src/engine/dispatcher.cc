#include "engine/dispatcher.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "engine/attempt.h"
#include "exec/attempt_files.h"
#include "ledger/attempt_policy.h"

namespace cronledger::engine {
namespace {

using std::chrono::milliseconds;

}  // namespace

store::ClaimRule ClaimRuleFor(const config::JobConfig& job) {
  store::ClaimRule rule;
  rule.job = job.name;
  rule.lease_ttl = job.EffectiveLeaseTtl();
  rule.max_concurrency = job.max_concurrency;
  rule.overlap = job.overlap;
  for (const auto& s : job.steps) rule.steps.push_back(s.name);
  return rule;
}

Dispatcher::Dispatcher(const config::Config& config, store::Store& store, Clock& clock,
                       StepRunner& runner, DispatcherOptions options)
    : config_(config),
      store_(store),
      write_store_(options.write_store != nullptr ? *options.write_store : store),
      clock_(clock),
      runner_(runner),
      options_(std::move(options)),
      effect_writer_(store),
      effects_(effect_writer_, clock, options_.node, config.server.output_cap),
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
    rules_.push_back(ClaimRuleFor(job));
  }
  GroupCommitter::Options commit;
  commit.poll = options_.poll;
  commit.max_held_writes = options_.max_held_writes > 0 ? options_.max_held_writes
                                                        : options_.max_workers + kMaxClaimAhead;
  commit.health = options_.health;
  // Runs that ended may let others be claimed: a job at its
  // max_concurrency, the next run of a partition whose overlap queues.
  // The worker's wake came before this commit, when a claim could not
  // see that yet; without this one they would wait for the poll.
  commit.on_ended = [this] {
    if (claiming_ && WorthAClaim()) Wake();
  };
  commit.batches = &counters_.write_batches;
  commit.writes = &counters_.writes;
  committer_ = std::make_unique<GroupCommitter>(write_store_, clock_, std::move(commit));
  for (int i = 0; i < std::max(1, options_.max_workers); ++i) {
    workers_.emplace_back([this](std::stop_token stop) { WorkerLoop(stop); });
  }
}

Dispatcher::~Dispatcher() {
  committer_->AbandonSettling();
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
  workers_.clear();  // joins; their last writes went through the committer
  committer_->Stop();
}

int Dispatcher::ClaimAhead() const {
  std::lock_guard lock(mu_);
  return ClaimAheadLocked();
}

int Dispatcher::ClaimAheadLocked() const {
  if (options_.claim_ahead <= milliseconds{0} || run_micros_ < 0) return 0;
  // A floor on the pace: a no-op handler's microseconds would otherwise
  // ask for more than any bound anyway.
  const double per_run = std::max(run_micros_, 10.0);
  const double ahead = static_cast<double>(options_.max_workers) *
                       static_cast<double>(options_.claim_ahead.count()) * 1000.0 / per_run;
  return static_cast<int>(std::min(ahead, static_cast<double>(kMaxClaimAhead)));
}

int Dispatcher::FreeSlotsLocked() const {
  return options_.max_workers + ClaimAheadLocked() - busy_;
}

bool Dispatcher::WorthAClaimLocked() const {
  // Free slots for a batch: each claim is a write transaction, and a claim
  // for one or two runs at a time would cost one per run.
  const int ahead = ClaimAheadLocked();
  const int threshold =
      std::max(1, std::min(options_.claim_batch + ahead, options_.max_workers + ahead) / 2);
  return options_.max_workers + ahead - busy_ >= threshold;
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

Result<int> Dispatcher::ClaimOnce(Clock::TimePoint now, int* limit) {
  if (limit) *limit = 0;
  if (!claiming_ || rules_.empty()) return 0;
  int free_slots = 0;
  int ahead = 0;
  {
    std::lock_guard lock(mu_);
    free_slots = FreeSlotsLocked();
    ahead = ClaimAheadLocked();
  }
  if (free_slots <= 0) return 0;
  // The lease runs from `now`: heartbeats are due a third of it later.
  const Clock::SteadyPoint claimed_at = clock_.SteadyNow();
  store::ClaimParams p;
  p.now = store::ToInstant(now);
  p.node = options_.node;
  p.limit = std::min(free_slots, options_.claim_batch + ahead);
  if (limit) *limit = p.limit;
  p.rules = rules_;
  auto claimed = store_.RunClaim(p);
  // A claim that found nothing wrote nothing (it commits on a full disk).
  Observe(claimed.status(), "claim",
          claimed.ok() && !claimed->empty() ? StoreCall::kWrite : StoreCall::kRead);
  if (!claimed.ok()) {
    // Not retried as if it had failed: the next claim is a new one. Were
    // this one committed after all (its COMMIT's outcome unknown), its
    // runs are not run here; their leases expire and the reaper takes them
    // back.
    ++counters_.claim_errors;
    return claimed.status();
  }
  if (claimed->empty()) ++counters_.claim_empty;
  if (!claimed->empty() && spdlog::should_log(spdlog::level::debug)) {
    spdlog::debug("dispatcher: claimed {} of {} in {} us", claimed->size(), p.limit,
                  std::chrono::duration_cast<std::chrono::microseconds>(clock_.Now() - now).count());
  }
  {
    std::lock_guard lock(mu_);
    for (auto& c : *claimed) {
      auto run = std::make_shared<ActiveRun>();
      const config::JobConfig* job = config_.FindJob(c.run.job);
      run->lease_ttl = job ? milliseconds(job->EffectiveLeaseTtl()) : milliseconds{60000};
      run->last_heartbeat = claimed_at;
      // The lease runs from the claim's now, on the ledger's clock.
      run->ledger_offset = std::chrono::duration_cast<milliseconds>(
          (c.lease_expires_at - run->lease_ttl) - store::ToInstant(now));
      run->claim = std::move(c);
      active_[run->claim.run.id] = run;
      queue_.push_back(run);
      ++busy_;
    }
  }
  counters_.claimed += static_cast<int64_t>(claimed->size());
  if (!claimed->empty()) ++counters_.claim_transactions;
  // One wake per run: waking every idle worker for each claim only makes
  // them fight over the queue.
  for (std::size_t i = 0; i < claimed->size(); ++i) work_cv_.notify_one();
  return static_cast<int>(claimed->size());
}

void Dispatcher::HeartbeatOnce(Clock::TimePoint now) {
  // When the last heartbeat was sent is measured on the steady clock: a
  // wall clock stepped back would otherwise hold heartbeats back for as
  // long, and the leases would expire on the ledger's clock meanwhile.
  const Clock::SteadyPoint steady = clock_.SteadyNow();
  std::vector<std::shared_ptr<ActiveRun>> due;
  {
    std::lock_guard lock(mu_);
    for (auto& [id, run] : active_) {
      if (!run->stale && !run->finishing && steady - run->last_heartbeat >= run->lease_ttl / 3) {
        due.push_back(run);
      }
    }
  }
  for (auto& run : due) {
    if (options_.before_heartbeat) options_.before_heartbeat(run->claim.run.id);
    // Not waited for: a worker holding it is about to write the run's end,
    // which needs no heartbeat.
    std::unique_lock lease(run->lease_mu, std::try_to_lock);
    if (!lease.owns_lock() || run->finishing) continue;
    const Status s = store_.RunHeartbeat({run->claim.run.id, run->claim.token,
                                          store::ToInstant(now), run->lease_ttl, options_.node});
    lease.unlock();
    Observe(s, "heartbeat", StoreCall::kWrite);
    if (s.ok()) {
      run->last_heartbeat = steady;
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
      wakeup_.Arm();  // a Wake() while we claim cuts the sleep below short
      const auto now = clock_.Now();
      int limit = 0;
      auto claimed = ClaimOnce(now, &limit);
      ++counters_.polls;
      committer_->SetClaimBurst(claimed.ok() && limit > 0 && *claimed == limit &&
                                !committer_->HeldTooLong());
      // With a health tracker, a store failure is logged once per outage,
      // not on every poll.
      if (!claimed.ok() &&
          (options_.health == nullptr || !IsStoreFailure(claimed.status()))) {
        spdlog::error("dispatcher: claim failed, retrying: {}", claimed.status().ToString());
      }
      HeartbeatOnce(now);
      // Claim again at once after a claim while workers are free for a
      // batch: more may be due. Otherwise sleep until the poll, a Wake()
      // (runs released), or workers freed for a batch: each claim is a
      // write transaction, and a claim for one or two workers at a time
      // would cost one per run.
      if (claimed.ok() && *claimed > 0 && WorthAClaim()) continue;
      wakeup_.SleepFor(clock_, options_.poll, stop);
    }
    committer_->SetClaimBurst(false);
  });
}

bool Dispatcher::WorthAClaim() const {
  std::lock_guard lock(mu_);
  return WorthAClaimLocked();
}

void Dispatcher::Wake() { wakeup_.Wake(); }

void Dispatcher::StopClaiming() { claiming_ = false; }

void Dispatcher::Drain(std::chrono::milliseconds grace) {
  claiming_ = false;
  const Clock::SteadyPoint deadline = clock_.SteadyNow() + grace;
  {
    std::unique_lock lock(mu_);
    // Runs claimed ahead that no worker took yet never started: a worker
    // takes each and releases it without running it (Execute).
    for (auto& run : queue_) run->shutdown = true;
    while (!active_.empty() && clock_.SteadyNow() < deadline) {
      idle_cv_.wait_for(lock, std::chrono::milliseconds(100));
    }
    for (auto& [id, run] : active_) {
      run->shutdown = true;
      run->cancel.request_stop();
    }
  }
  // A last write still being settled after the deadline is left to the
  // reaper (an uncertain end), as it would be without a database.
  committer_->AbandonSettling();
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
    const auto started = clock_.SteadyNow();
    std::optional<store::WorkerWrite> last = Execute(*run);
    const double micros =
        std::chrono::duration<double, std::micro>(clock_.SteadyNow() - started).count();
    bool worth_a_claim = false;
    {
      std::lock_guard lock(mu_);
      --busy_;
      run_micros_ = run_micros_ < 0 ? micros : 0.8 * run_micros_ + 0.2 * micros;
      worth_a_claim = WorthAClaimLocked();
    }
    if (last) {
      {
        std::lock_guard lease(run->lease_mu);  // after a heartbeat in flight
        run->finishing = true;
      }
      WriteLast(run, std::move(*last));
    } else {
      Finished(*run);
    }
    if (worth_a_claim && claiming_) Wake();
  }
}

void Dispatcher::Finished(const ActiveRun& run) {
  {
    std::lock_guard lock(mu_);
    active_.erase(run.claim.run.id);
  }
  idle_cv_.notify_all();
}

void Dispatcher::Observe(const Status& s, std::string_view who, StoreCall call) {
  if (options_.health != nullptr) options_.health->Observe(s, who, call);
}

store::Instant Dispatcher::LedgerNow(const ActiveRun& run) const {
  return store::ToInstant(clock_.Now()) + run.ledger_offset;
}

Status Dispatcher::Write(store::WorkerWrite write) { return committer_->Write(std::move(write)); }

void Dispatcher::WriteLast(std::shared_ptr<ActiveRun> run, store::WorkerWrite write) {
  const bool has_finish = write.finish.has_value();
  store::FinishParams finish = has_finish ? *write.finish : store::FinishParams{};
  committer_->WriteLast(std::move(write), [this, run, has_finish, finish](const Status& s) {
    if (Accept(*run, s, "the outcome") && has_finish) CountOutcome(*run, finish);
    Finished(*run);
  });
}

bool Dispatcher::Accept(const ActiveRun& run, const Status& s, std::string_view what) {
  if (s.ok()) return true;
  if (s.code() == StatusCode::kStaleLease) {
    ++counters_.stale_writes_rejected;
    spdlog::warn("dispatcher: run {} ({}): {} rejected, the lease moved on: {}",
                 run.claim.run.id, run.claim.run.RunKey(), what, s.message());
    return false;
  }
  // Not recorded: the lease will expire and the reaper decides (an
  // uncertain end), never a silent success.
  spdlog::error("dispatcher: run {} ({}): recording {} failed: {}", run.claim.run.id,
                run.claim.run.RunKey(), what, s.ToString());
  return false;
}

std::optional<store::WorkerWrite> Dispatcher::Execute(ActiveRun& run) {
  const store::ClaimedRun& claim = run.claim;
  const config::JobConfig* job = config_.FindJob(claim.run.job);
  if (job == nullptr) {
    // The job left the config after it was claimed; let the lease expire.
    return std::nullopt;
  }
  Attempt attempt = Attempt::FromClaim(*job, claim, options_.node, LogPath(claim));
  if (run.stale) return std::nullopt;  // fenced off before it started
  if (run.shutdown) {
    // Claimed ahead and not started before the drain: nothing of it ran,
    // so it goes back to pending whatever its steps' idempotence.
    // Nor does it count against the run's retries: a restart is not a try.
    return store::WorkerWrite{
        std::nullopt, attempt.ReleasedAtShutdown(std::nullopt, {}, LedgerNow(run),
                                                 "released at shutdown before it started; not "
                                                 "counted against max_attempts")};
  }
  // The last step that ran, and how it ended.
  std::optional<std::size_t> last;
  EndOfStep last_end;
  // The last step's result, written together with what follows it.
  std::optional<store::StepParams> result;
  for (std::optional<std::size_t> i = attempt.Current(); i; i = attempt.NextAfter(*i)) {
    const config::StepConfig& step = job->steps[*i];
    if (result) {
      if (!Accept(run, Write({std::exchange(result, std::nullopt), std::nullopt}), "a step result")) {
        return std::nullopt;
      }
    }
    // The claim started the first step; later ones are started here.
    if (attempt.Status(*i) != ledger::StepStatus::kRunning) {
      if (!Accept(run,
                  Write({attempt.StepWrite(*i, ledger::StepStatus::kRunning, LedgerNow(run)),
                         std::nullopt}),
                  "a step start")) {
        return std::nullopt;
      }
    }
    exec::StepContext ctx = attempt.Context(*i);
    ctx.effects = &effects_;
    if (!step.keep_inputs.empty()) {
      const std::string dest = fmt::format("{}/{}/{}/attempt-{}-inputs/{}", config_.server.log_dir,
                                           claim.run.job, claim.run.id, claim.attempt, step.name);
      for (const auto& problem : exec::KeepInputs(step.keep_inputs, ctx, config_.dir, dest)) {
        spdlog::warn("run {} {} step {}: {}", claim.run.id, claim.run.RunKey(), step.name,
                     problem);
      }
    }
    const exec::StepOutcome outcome =
        runner_.Run(ctx, *job, step, LogPath(claim), run.cancel.get_token());
    if (run.stale) return std::nullopt;  // fenced off: nothing more to write
    last = i;
    last_end = EndOfStep::Of(outcome, *job);
    if (outcome.end == exec::StepEnd::kCancelled && run.shutdown) {
      // Stopped by our own shutdown: release an idempotent step for another
      // attempt now; leave any other to its lease (the reaper decides).
      if (!step.idempotent) return std::nullopt;
      return store::WorkerWrite{
          std::nullopt,
          attempt.ReleasedAtShutdown(i, last_end, LedgerNow(run), "released at shutdown")};
    }
    // On the ledger's clock: the backoff counts from the database's now, and
    // the budget started on it.
    Attempt::AfterStep after =
        attempt.StepEnded(*i, last_end, LedgerNow(run), [this] { return JitterSample(); });
    result = std::move(after.result);
    // The failed step's result and the attempt's end commit together.
    if (after.finish) return store::WorkerWrite{std::move(result), std::move(after.finish)};
  }
  // The last step's result and the attempt's end commit together.
  return store::WorkerWrite{std::move(result),
                            attempt.End(last, last_end, LedgerNow(run), JitterSample())};
}

void Dispatcher::CountOutcome(const ActiveRun& run, const store::FinishParams& params) {
  // Once per attempt, with what the ledger is told: where it ended, how,
  // after how long, what it decided, and the step's last words.
  std::string how(ledger::Name(params.end_class));
  if (params.exit_status) how += fmt::format(", exit status {}", *params.exit_status);
  std::string took;
  if (params.now) {
    const auto claimed = run.claim.lease_expires_at - run.lease_ttl;
    const auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(*params.now - claimed).count();
    took = ms < 60000 ? fmt::format(" after {:.1f}s", static_cast<double>(ms) / 1000)
                      : fmt::format(" after {}s", ms / 1000);
  }
  const std::string last = LastOutputLine(params.output_tail);
  spdlog::info("run {} {}: attempt {}{}: {}{} -> {}{}{}", run.claim.run.id, run.claim.run.RunKey(),
               run.claim.attempt, params.step.empty() ? "" : " step " + params.step, how, took,
               ledger::Name(params.decision.state),
               params.decision.reason.empty() ? "" : " (" + params.decision.reason + ")",
               last.empty() ? "" : "; last output: " + last);
  switch (params.decision.state) {
    case ledger::RunState::kSucceeded: ++counters_.succeeded; break;
    case ledger::RunState::kFailed: ++counters_.failed; break;
    case ledger::RunState::kUnknown: ++counters_.unknown; break;
    default: ++counters_.retried; break;
  }
}

}  // namespace cronledger::engine
