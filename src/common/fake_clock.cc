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

bool FakeClock::SleepFor(Duration d, std::stop_token stop) {
  std::unique_lock lock(mu_);
  const SteadyPoint until = steady_ + d;
  ++sleepers_;
  const bool reached = cv_.wait(lock, stop, [&] { return steady_ >= until; });
  --sleepers_;
  return reached;
}

namespace {

// Time passing moves both readings; a step back moves the wall clock alone.
void MoveTo(Clock::TimePoint t, Clock::TimePoint& now, Clock::SteadyPoint& steady) {
  if (t > now) steady += t - now;
  now = t;
}

}  // namespace

void FakeClock::Set(TimePoint t) {
  {
    std::lock_guard lock(mu_);
    MoveTo(t, now_, steady_);
  }
  cv_.notify_all();
}

void FakeClock::Advance(Duration d) {
  {
    std::lock_guard lock(mu_);
    MoveTo(now_ + d, now_, steady_);
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
