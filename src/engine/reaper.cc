#include "engine/reaper.h"

#include <spdlog/spdlog.h>

#include "engine/attempt.h"

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
    const double jitter = std::uniform_real_distribution<double>(0.0, 1.0)(rng_);
    batch.push_back(Attempt::LeaseExpired(config_.FindJob(e.run.job), e, at, jitter));
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
