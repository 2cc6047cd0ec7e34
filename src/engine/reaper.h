// The reaper: takes back expired leases. The attempt ends as lease_expired,
// an uncertain end: the run is retried when the step that was running is
// idempotent (or none was), else it becomes unknown (Attempt::LeaseExpired).
#ifndef CRONLEDGER_ENGINE_REAPER_H_
#define CRONLEDGER_ENGINE_REAPER_H_

#include <random>

#include "config/config.h"
#include "cronledger/clock.h"
#include "store/store.h"

namespace cronledger::engine {

class Reaper {
 public:
  Reaper(const config::Config& config, store::Store& store);
  // Reaps every lease expired before `now`. Returns how many.
  Result<int> RunOnce(Clock::TimePoint now);

 private:
  const config::Config& config_;
  store::Store& store_;
  std::mt19937_64 rng_;
};

}  // namespace cronledger::engine

#endif  // CRONLEDGER_ENGINE_REAPER_H_
