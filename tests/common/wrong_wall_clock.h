// A clock whose wall reading has gone wrong while time runs on: the steady
// clock is the real one, and each reading of Now() is `jump` after the one
// before (an hour: a clock stepped forward again and again; zero: a wall
// clock standing still, as after a step back). Durations are right only when
// measured on SteadyNow(); a sleep for an interval (SleepFor) ends on time,
// and a sleep until a wall instant fails the test.
#ifndef CRONLEDGER_TESTS_COMMON_WRONG_WALL_CLOCK_H_
#define CRONLEDGER_TESTS_COMMON_WRONG_WALL_CLOCK_H_

#include <gtest/gtest.h>

#include <mutex>
#include <stop_token>

#include "cronledger/clock.h"

namespace cronledger {

class WrongWallClock final : public Clock {
 public:
  explicit WrongWallClock(Duration jump,
                          TimePoint start = TimePoint{std::chrono::hours(24 * 365 * 56)})
      : jump_(jump), now_(start) {}

  TimePoint Now() const override {
    std::lock_guard lock(mu_);
    now_ += jump_;
    return now_;
  }
  SteadyPoint SteadyNow() const override { return RealClock().SteadyNow(); }
  bool SleepUntil(TimePoint, std::stop_token) override {
    ADD_FAILURE() << "WrongWallClock: nothing here should sleep on the wall clock";
    return false;
  }
  // Intervals pass on the real steady clock.
  bool SleepFor(Duration d, std::stop_token stop) override {
    return RealClock().SleepFor(d, stop);
  }

 private:
  const Duration jump_;
  mutable std::mutex mu_;
  mutable TimePoint now_;
};

}  // namespace cronledger

#endif  // CRONLEDGER_TESTS_COMMON_WRONG_WALL_CLOCK_H_
