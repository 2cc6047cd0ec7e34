#include <mutex>

#include "cronledger/clock.h"

namespace cronledger {

FakeClock::FakeClock(TimePoint start) : now_(start) {}

Clock::TimePoint FakeClock::Now() const {
  std::lock_guard lock(mu_);
  return now_;
}

Clock::SteadyPoint FakeClock::SteadyNow() const {
  std::lock_guard lock(mu_);
  return steady_;
}

bool FakeClock::SleepUntil(TimePoint deadline, std::stop_token stop) {
  std::unique_lock lock(mu_);
  ++sleepers_;
  const bool reached = cv_.wait(lock, stop, [&] { return now_ >= deadline; });
  --sleepers_;
  return reached;
}

void FakeClock::Set(TimePoint t) {
  {
    std::lock_guard lock(mu_);
    if (t > now_) steady_ += t - now_;
    now_ = t;
  }
  cv_.notify_all();
}

void FakeClock::Advance(Duration d) {
  {
    std::lock_guard lock(mu_);
    if (d > Duration::zero()) steady_ += d;
    now_ += d;
  }
  cv_.notify_all();
}

void FakeClock::StepWallClock(Duration d) {
  {
    std::lock_guard lock(mu_);
    now_ += d;
  }
  cv_.notify_all();
}

std::size_t FakeClock::Sleepers() const {
  std::lock_guard lock(mu_);
  return sleepers_;
}

}  // namespace cronledger
