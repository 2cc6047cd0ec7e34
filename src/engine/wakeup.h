// A loop thread's sleep that other threads cut short.
#ifndef CRONLEDGER_ENGINE_WAKEUP_H_
#define CRONLEDGER_ENGINE_WAKEUP_H_

#include <mutex>
#include <stop_token>

#include "cronledger/clock.h"

namespace cronledger::engine {

// The loop calls Arm() before it looks at its work and SleepFor() after, so
// a Wake() while it looks is not lost: it cuts that sleep short. Thread-safe.
class Wakeup {
 public:
  void Arm() {
    std::lock_guard lock(mu_);
    armed_ = std::stop_source();
  }
  void Wake() {
    std::lock_guard lock(mu_);
    armed_.request_stop();
  }
  // Until `d` passed on `clock`, a Wake() since Arm(), or `stop`.
  void SleepFor(Clock& clock, Clock::Duration d, std::stop_token stop) {
    std::stop_source armed;
    {
      std::lock_guard lock(mu_);
      armed = armed_;
    }
    std::stop_callback on_stop(stop, [&] { armed.request_stop(); });
    clock.SleepFor(d, armed.get_token());
  }

 private:
  std::mutex mu_;
  std::stop_source armed_;
};

}  // namespace cronledger::engine

#endif  // CRONLEDGER_ENGINE_WAKEUP_H_
