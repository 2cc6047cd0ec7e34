// The clock: the only way cronledger code learns the time or waits for it.
//
// Nothing outside src/common/real_clock.cc reads the system clock (a test
// greps the sources). Production code takes a Clock&; tests pass a FakeClock
// whose Advance() wakes sleepers, so engine tests never sleep for real.
#ifndef CRONLEDGER_CLOCK_H_
#define CRONLEDGER_CLOCK_H_

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <stop_token>

namespace cronledger {

class Clock {
 public:
  using TimePoint = std::chrono::system_clock::time_point;
  using Duration = std::chrono::system_clock::duration;
  using SteadyPoint = std::chrono::steady_clock::time_point;

  virtual ~Clock() = default;

  // The current instant (UTC). Thread-safe.
  virtual TimePoint Now() const = 0;

  // For how long something has taken (a step's timeout and kill grace, the
  // interval between heartbeats): a reading that only moves forward, which
  // a wall-clock step (NTP, a resumed VM, an operator) does not move. Its
  // epoch means nothing; only differences do. Thread-safe.
  virtual SteadyPoint SteadyNow() const = 0;

  // Blocks until Now() >= deadline or `stop` is requested, whichever is
  // first: for an instant on the calendar (the next run falling due). A
  // wall-clock step moves the wake-up with it. Returns true when the
  // deadline was reached, false when stopped. Thread-safe; any number of
  // threads may sleep at once.
  virtual bool SleepUntil(TimePoint deadline, std::stop_token stop) = 0;

  // Blocks until `d` has passed on the steady clock or `stop` is requested:
  // for an interval (a poll, a backoff, a heartbeat). A wall-clock step
  // neither lengthens nor shortens it; as SleepUntil(Now() + d), a step back
  // of an hour would hold a dispatcher's claims and heartbeats back for that
  // hour. Returns true when `d` has passed, false when stopped.
  virtual bool SleepFor(Duration d, std::stop_token stop) = 0;
};

// The process-wide clock backed by the operating system. A wall-clock jump
// is noticed within one second by sleepers. Never destroyed.
Clock& RealClock();

// A clock that moves only when told to. Thread-safe.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(TimePoint start);

  TimePoint Now() const override;
  SteadyPoint SteadyNow() const override;
  bool SleepUntil(TimePoint deadline, std::stop_token stop) override;
  // Wakes when Advance or a forward Set has moved SteadyNow past `d`.
  bool SleepFor(Duration d, std::stop_token stop) override;

  // Moves time to `t` and wakes every sleeper whose deadline has been
  // reached. Forward, that much time passes (SteadyNow moves with it);
  // backward, the wall clock is stepped back and SteadyNow stays.
  void Set(TimePoint t);
  // Set(Now() + d).
  void Advance(Duration d);
  // Steps the wall clock by `d` (either way) while no time passes:
  // SteadyNow stays, as after an NTP step.
  void StepWallClock(Duration d);

  // Number of threads currently blocked in SleepUntil or SleepFor. Lets a test wait
  // until a background loop has gone to sleep before advancing time.
  std::size_t Sleepers() const;

 private:
  mutable std::mutex mu_;
  std::condition_variable_any cv_;
  TimePoint now_;
  SteadyPoint steady_{};
  std::size_t sleepers_ = 0;
};

}  // namespace cronledger

#endif  // CRONLEDGER_CLOCK_H_
