// The dead man's switch (docs/alerts.md): after a successful planner pass,
// serve GETs [server] heartbeat_url — at most once every `every` — on a
// thread of its own, so that an external monitor (a Healthchecks-style
// service) notices when no serve is planning any more. A slow or failing
// monitor never delays the serve loop: the ping is only requested there.
#ifndef CRONLEDGER_ENGINE_HEARTBEAT_PINGER_H_
#define CRONLEDGER_ENGINE_HEARTBEAT_PINGER_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>

#include "cronledger/clock.h"
#include "cronledger/status.h"
#include "engine/wakeup.h"

namespace cronledger::engine {

class HeartbeatPinger {
 public:
  // Sends one GET of the URL; ok for a 2xx answer.
  using Getter = std::function<Status(const std::string& url)>;

  static constexpr std::chrono::seconds kDefaultEvery{30};

  // `get` defaults to an HTTP GET with a 5 s timeout. `clock` must outlive it.
  HeartbeatPinger(std::string url, Clock& clock, std::chrono::seconds every = kDefaultEvery,
                  Getter get = nullptr);
  ~HeartbeatPinger();
  HeartbeatPinger(const HeartbeatPinger&) = delete;
  HeartbeatPinger& operator=(const HeartbeatPinger&) = delete;

  // A planner pass at `now` succeeded: wakes the thread when a ping is due.
  // Never blocks on the network. Thread-safe.
  void PlannerPassed(Clock::TimePoint now);

  // Pings once if a pass came `every` or more after the last ping (or
  // there was none yet); true when it tried. What the thread runs; tests
  // call it directly.
  bool PingIfDue();

  void Start();
  void Stop();

  int64_t pings_ok() const;
  int64_t pings_failed() const;

 private:
  const std::string url_;
  Clock& clock_;
  const std::chrono::seconds every_;
  Getter get_;

  mutable std::mutex mu_;
  std::optional<Clock::TimePoint> last_pass_;
  std::optional<Clock::TimePoint> last_ping_;  // the pass it reported
  int64_t ok_ = 0;
  int64_t failed_ = 0;
  Wakeup wakeup_;
  std::jthread thread_;
};

}  // namespace cronledger::engine

#endif  // CRONLEDGER_ENGINE_HEARTBEAT_PINGER_H_
