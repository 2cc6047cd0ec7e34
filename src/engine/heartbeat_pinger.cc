#include "engine/heartbeat_pinger.h"

#include <utility>

#include <spdlog/spdlog.h>

#include "engine/alert_sender.h"

namespace cronledger::engine {

HeartbeatPinger::HeartbeatPinger(std::string url, Clock& clock, std::chrono::seconds every,
                                 Getter get)
    : url_(std::move(url)), clock_(clock), every_(every), get_(std::move(get)) {
  if (!get_) {
    get_ = [](const std::string& url) {
      return HttpRequest("GET", url, "", "", std::chrono::seconds(5));
    };
  }
}

HeartbeatPinger::~HeartbeatPinger() { Stop(); }

void HeartbeatPinger::PlannerPassed(Clock::TimePoint now) {
  std::lock_guard lock(mu_);
  last_pass_ = now;
  if (!last_ping_ || now - *last_ping_ >= every_ || now < *last_ping_) wakeup_.Wake();
}

bool HeartbeatPinger::PingIfDue() {
  Clock::TimePoint pass;
  {
    std::lock_guard lock(mu_);
    if (!last_pass_) return false;
    // A clock stepped back makes a ping due too, rather than none for a while.
    if (last_ping_ && *last_pass_ - *last_ping_ < every_ && *last_pass_ >= *last_ping_) {
      return false;
    }
    pass = *last_pass_;
    last_ping_ = pass;
  }
  const Status s = get_(url_);
  std::lock_guard lock(mu_);
  if (s.ok()) {
    if (ok_++ == 0) spdlog::info("heartbeat: {} answered the first ping", UrlOrigin(url_));
  } else {
    ++failed_;
    spdlog::warn("heartbeat: ping failed (next after the next planner pass {} s on): {}",
                 every_.count(), s.message());
  }
  return true;
}

void HeartbeatPinger::Start() {
  thread_ = std::jthread([this](std::stop_token stop) {
    while (!stop.stop_requested()) {
      wakeup_.Arm();
      PingIfDue();
      wakeup_.SleepFor(clock_, every_, stop);
    }
  });
}

void HeartbeatPinger::Stop() {
  if (!thread_.joinable()) return;
  thread_.request_stop();
  thread_.join();
}

int64_t HeartbeatPinger::pings_ok() const {
  std::lock_guard lock(mu_);
  return ok_;
}

int64_t HeartbeatPinger::pings_failed() const {
  std::lock_guard lock(mu_);
  return failed_;
}

}  // namespace cronledger::engine
