#include "cronledger/clock.h"

#include <atomic>
#include <chrono>
#include <stop_token>
#include <thread>

#include <gtest/gtest.h>

namespace cronledger {
namespace {

using namespace std::chrono_literals;

Clock::TimePoint T0() { return Clock::TimePoint{} + 1'800'000'000s; }

// Blocks until `clock` has `n` sleepers. Waiting on a real condition, not on
// elapsed time, keeps the test free of timing assumptions.
void AwaitSleepers(const FakeClock& clock, std::size_t n) {
  while (clock.Sleepers() != n) std::this_thread::yield();
}

TEST(FakeClock, NowMovesOnlyWhenTold) {
  FakeClock clock(T0());
  EXPECT_EQ(clock.Now(), T0());
  clock.Advance(90s);
  EXPECT_EQ(clock.Now(), T0() + 90s);
  clock.Set(T0() - 1h);  // clocks can jump backwards too
  EXPECT_EQ(clock.Now(), T0() - 1h);
}

// The steady reading moves with time passing (Advance, Set forward), never
// backwards, and not with a step of the wall clock.
TEST(FakeClock, SteadyNowMovesOnlyWithTimePassing) {
  FakeClock clock(T0());
  const Clock::SteadyPoint s0 = clock.SteadyNow();
  clock.Advance(90s);
  EXPECT_EQ(clock.SteadyNow() - s0, 90s);
  clock.Set(T0() + 100s);
  EXPECT_EQ(clock.SteadyNow() - s0, 100s);
  clock.Set(T0() - 1h);  // a step back: no time passed
  EXPECT_EQ(clock.SteadyNow() - s0, 100s);
  clock.StepWallClock(2h);
  EXPECT_EQ(clock.Now(), T0() + 1h);
  EXPECT_EQ(clock.SteadyNow() - s0, 100s);
  clock.Advance(-5s);
  EXPECT_EQ(clock.SteadyNow() - s0, 100s);
}

TEST(RealClock, SteadyNowNeverGoesBack) {
  const Clock::SteadyPoint a = RealClock().SteadyNow();
  const Clock::SteadyPoint b = RealClock().SteadyNow();
  EXPECT_LE(a, b);
}

TEST(FakeClock, AdvanceWakesSleepersWhoseDeadlinePassed) {
  FakeClock clock(T0());
  std::atomic<int> woke{0};
  std::jthread early([&](std::stop_token st) {
    if (clock.SleepUntil(T0() + 10s, st)) woke |= 1;
  });
  std::jthread late([&](std::stop_token st) {
    if (clock.SleepFor(60s, st)) woke |= 2;
  });
  AwaitSleepers(clock, 2);
  clock.Advance(10s);
  early.join();
  EXPECT_EQ(woke.load(), 1);
  EXPECT_EQ(clock.Sleepers(), 1u);
  clock.Advance(50s);
  late.join();
  EXPECT_EQ(woke.load(), 3);
}

// A sleep for an interval ends when that much time has passed, whatever the
// wall clock does meanwhile: stepped back an hour, it would otherwise hold
// a dispatcher's poll (its claims and heartbeats) back for the hour;
// stepped forward, it would cut every backoff short.
TEST(FakeClock, SleepForEndsWithTimePassingNotWithAWallClockStep) {
  FakeClock clock(T0());
  std::atomic<bool> woke{false};
  std::jthread sleeper([&](std::stop_token st) { woke = clock.SleepFor(10s, st); });
  AwaitSleepers(clock, 1);
  clock.StepWallClock(2h);
  clock.Set(T0() - 1h);  // stepped back: no time passed
  // Each step woke the sleeper to look; a wrong look would have ended its
  // sleep within microseconds. Give it ample time to show.
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(woke.load());
  EXPECT_EQ(clock.Sleepers(), 1u) << "a wall-clock step ended an interval's sleep";
  clock.Advance(9s);
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(clock.Sleepers(), 1u) << "woke before its interval passed";
  clock.Advance(1s);
  sleeper.join();
  EXPECT_TRUE(woke.load());
}

TEST(FakeClock, StopRequestEndsTheSleep) {
  FakeClock clock(T0());
  std::atomic<bool> reached{true};
  std::jthread sleeper([&](std::stop_token st) { reached = clock.SleepUntil(T0() + 1h, st); });
  AwaitSleepers(clock, 1);
  sleeper.request_stop();
  sleeper.join();
  EXPECT_FALSE(reached.load());
  EXPECT_EQ(clock.Now(), T0());
}

TEST(FakeClock, PastDeadlineReturnsAtOnce) {
  FakeClock clock(T0());
  std::stop_source never;
  EXPECT_TRUE(clock.SleepUntil(T0() - 1s, never.get_token()));
  EXPECT_TRUE(clock.SleepUntil(T0(), never.get_token()));
}

TEST(RealClock, PastDeadlineAndStop) {
  Clock& clock = RealClock();
  const auto now = clock.Now();
  EXPECT_GT(now.time_since_epoch(), 1'700'000'000s);  // after 2023: really the wall clock
  std::stop_source never;
  EXPECT_TRUE(clock.SleepUntil(now - 1s, never.get_token()));
  std::stop_source stopped;
  stopped.request_stop();
  EXPECT_FALSE(clock.SleepUntil(now + 1h, stopped.get_token()));
  EXPECT_TRUE(clock.SleepFor(1ms, never.get_token()));
  EXPECT_GE(clock.Now(), now);
  EXPECT_FALSE(clock.SleepFor(1h, stopped.get_token()));
}

TEST(RealClock, SleepForLastsItsIntervalOnTheSteadyClock) {
  Clock& clock = RealClock();
  std::stop_source never;
  const Clock::SteadyPoint before = clock.SteadyNow();
  EXPECT_TRUE(clock.SleepFor(20ms, never.get_token()));
  EXPECT_GE(clock.SteadyNow() - before, 20ms);
}

}  // namespace
}  // namespace cronledger
