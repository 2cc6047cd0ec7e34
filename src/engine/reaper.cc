#include "engine/reaper.h"

#include <spdlog/spdlog.h>

#include "ledger/attempt_policy.h"

namespace cronledger::engine {

Reaper::Reaper(const config::Config& config, store::Store& store)
    : config_(config), store_(store), rng_(std::random_device{}()) {}

Result<int> Reaper::RunOnce(Clock::TimePoint now) {
  const store::Instant at = store::ToInstant(now);
  auto expired = store_.RunListExpiredLeases(at, 1000);
  if (!expired.ok()) return expired.status();
  int reaped = 0;
  std::vector<store::FinishParams> batch;
  for (const auto& e : *expired) {
    const config::JobConfig* job = config_.FindJob(e.run.job);
    bool idempotent = e.running_step.empty();  // between steps nothing was in flight
    ledger::RetryPolicy retry;
    if (job) {
      retry = job->retry;
      for (const auto& s : job->steps) {
        if (s.name == e.running_step) idempotent = s.idempotent;
      }
    }
    ledger::AttemptFacts facts;
    facts.end = ledger::EndClass::kLeaseExpired;
    facts.step_idempotent = idempotent;
    facts.budget_attempts = e.budget_attempts;
    facts.budget_started_at = e.budget_started_at;
    facts.now = at;
    facts.jitter_sample = std::uniform_real_distribution<double>(0.0, 1.0)(rng_);
    store::FinishParams f;
    f.run_id = e.run.id;
    f.token = e.token;
    f.now = at;
    f.node = e.node;
    f.actor = "reaper";
    f.end_class = ledger::EndClass::kLeaseExpired;
    f.step = e.running_step;
    f.decision = ledger::DecideAfterAttempt(retry, facts);
    f.only_if_lease_expired = true;
    batch.push_back(std::move(f));
  }
  if (batch.empty()) return 0;
  auto results = store_.RunFinishAttempts(batch);
  if (!results.ok()) return results.status();
  for (std::size_t i = 0; i < results->size(); ++i) {
    if ((*results)[i].ok()) {
      ++reaped;
      spdlog::warn("reaper: run {} ({}): lease of node {} expired; now {}", batch[i].run_id,
                   (*expired)[i].run.RunKey(), batch[i].node,
                   ledger::Name(batch[i].decision.state));
    }
  }
  return reaped;
}

}  // namespace cronledger::engine
