// The only file that reads the operating system's clocks (a test enforces it).
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>

#include "cronledger/clock.h"

namespace cronledger {
namespace {

class SystemClock final : public Clock {
 public:
  TimePoint Now() const override { return std::chrono::system_clock::now(); }
  SteadyPoint SteadyNow() const override { return std::chrono::steady_clock::now(); }

  // Waits in steady-clock slices of at most one second and re-reads the wall
  // clock after each, so a wall-clock jump (NTP step, operator) moves the
  // wake-up with it instead of leaving a sleeper stranded for the old span.
  bool SleepUntil(TimePoint deadline, std::stop_token stop) override {
    std::mutex mu;
    std::condition_variable_any cv;
    std::unique_lock lock(mu);
    for (;;) {
      if (stop.stop_requested()) return false;
      const auto now = Now();
      if (now >= deadline) return true;
      const auto slice = std::min<Duration>(deadline - now, std::chrono::seconds(1));
      cv.wait_until(lock, stop, std::chrono::steady_clock::now() + slice,
                    [] { return false; });
    }
  }

  bool SleepFor(Duration d, std::stop_token stop) override {
    std::mutex mu;
    std::condition_variable_any cv;
    std::unique_lock lock(mu);
    cv.wait_until(lock, stop, std::chrono::steady_clock::now() + d, [] { return false; });
    return !stop.stop_requested();
  }
};

}  // namespace

Clock& RealClock() {
  static auto* clock = new SystemClock();
  return *clock;
}

}  // namespace cronledger
