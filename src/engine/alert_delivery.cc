#include "engine/alert_delivery.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "cronledger/schedule.h"
#include "ledger/names.h"

namespace cronledger::engine {
namespace {

constexpr const char* kActor = "alerter";
// A store error while recording an outcome is tried again this soon.
constexpr std::chrono::seconds kRecordRetry{1};

}  // namespace

AlertDelivery::AlertDelivery(store::Store& store, Clock& clock, AlertSender& sender,
                             AlertDeliveryOptions options)
    : store_(store), clock_(clock), sender_(sender), options_(options) {}

AlertDelivery::~AlertDelivery() { Stop(); }

void AlertDelivery::Enqueue(AlertNotice notice, std::vector<AlertTarget> targets) {
  std::lock_guard lock(mu_);
  Item item;
  item.notice = std::move(notice);
  item.targets = std::move(targets);
  item.delivered.assign(item.targets.size(), false);
  item.errors.assign(item.targets.size(), "");
  queue_.push_back(std::move(item));
  wakeup_.Wake();
}

bool AlertDelivery::Blocked(std::size_t i) const {
  for (std::size_t k = 0; k < i; ++k) {
    if (queue_[k].notice.job == queue_[i].notice.job &&
        queue_[k].notice.condition == queue_[i].notice.condition) {
      return true;
    }
  }
  return false;
}

std::size_t AlertDelivery::Pending() const {
  std::lock_guard lock(mu_);
  return queue_.size();
}

bool AlertDelivery::TryOnce(Item& item, Clock::SteadyPoint now) {
  ++item.attempts;
  bool all = true;
  for (std::size_t i = 0; i < item.targets.size(); ++i) {
    if (item.delivered[i]) continue;
    const Status s = sender_.Send(item.targets[i], item.notice);
    if (s.ok()) {
      item.delivered[i] = true;
      item.errors[i].clear();
    } else {
      all = false;
      item.errors[i] = s.message();
    }
  }
  const AlertNotice& n = item.notice;
  const char* state = n.firing ? "firing" : "resolved";
  if (all) {
    spdlog::info("alerts: {} {} of job {} ({}) delivered", state, n.alert, n.job, n.condition);
    return true;
  }
  std::string failed;
  for (std::size_t i = 0; i < item.targets.size(); ++i) {
    if (item.delivered[i]) continue;
    failed += fmt::format("{}{}: {}", failed.empty() ? "" : "; ", item.targets[i].Describe(),
                          item.errors[i]);
  }
  if (item.attempts >= options_.max_attempts) {
    spdlog::error("alerts: {} {} of job {} ({}) not delivered after {} attempt(s): {}", state,
                  n.alert, n.job, n.condition, item.attempts, failed);
    return true;
  }
  const double factor = std::pow(options_.multiplier, item.attempts - 1);
  const auto backoff = std::min<std::chrono::milliseconds>(
      options_.max_backoff,
      std::chrono::milliseconds(
          static_cast<int64_t>(static_cast<double>(options_.initial_backoff.count()) * factor)));
  item.next_at = now + backoff;
  spdlog::warn("alerts: {} {} of job {} ({}): attempt {} of {} failed, next in {} ms: {}", state,
               n.alert, n.job, n.condition, item.attempts, options_.max_attempts,
               backoff.count(), failed);
  return false;
}

Status AlertDelivery::Record(const Item& item) {
  const AlertNotice& n = item.notice;
  nlohmann::json targets = nlohmann::json::array();
  std::size_t delivered = 0;
  for (std::size_t i = 0; i < item.targets.size(); ++i) {
    nlohmann::json t = {{"target", item.targets[i].Describe()}, {"delivered", item.delivered[i]}};
    if (!item.delivered[i]) t["error"] = item.errors[i];
    targets.push_back(std::move(t));
    if (item.delivered[i]) ++delivered;
  }
  const std::string outcome = delivered == item.targets.size() ? "delivered"
                              : delivered == 0                 ? "failed"
                                                               : "partial";
  auto alert_details = nlohmann::json::parse(n.details, nullptr, false);
  if (alert_details.is_discarded()) alert_details = nlohmann::json::object();
  nlohmann::json details = {
      {"condition", n.condition},
      {"alert", n.alert},
      {"state", n.firing ? "firing" : "resolved"},
      {"business_date", n.business_date},
      {"details", std::move(alert_details)},
      {"noticed_at", FormatUtc(n.at)},
      {"delivery", {{"outcome", outcome}, {"attempts", item.attempts}, {"targets", targets}}},
  };
  if (!n.members.empty()) details["members"] = n.members;
  store::EventRecord e;
  e.at = store::ToInstant(clock_.Now());
  e.type = std::string(n.firing ? ledger::event::kAlertSent : ledger::event::kAlertResolved);
  e.job = n.job;
  e.run_id = n.run_id;
  e.run_key = n.run_key;
  e.actor = kActor;
  e.reason = n.summary;
  e.details = details.dump();
  return store_.EventAppend(e);
}

std::optional<Clock::Duration> AlertDelivery::DeliverDue() {
  const Clock::SteadyPoint now = clock_.SteadyNow();
  // Items are only added meanwhile (a deque keeps references to its
  // elements valid across push_back), and only this thread removes them.
  std::vector<Item*> due;
  {
    std::lock_guard lock(mu_);
    for (std::size_t i = 0; i < queue_.size(); ++i) {
      if (queue_[i].next_at <= now && !Blocked(i)) due.push_back(&queue_[i]);
    }
  }
  for (Item* item : due) {
    if (!item->finished) item->finished = TryOnce(*item, now);
    if (!item->finished) continue;
    if (Status s = Record(*item); !s.ok()) {
      spdlog::error("alerts: cannot record the {} notice of job {} ({}), retrying: {}",
                    item->notice.firing ? "firing" : "resolved", item->notice.job,
                    item->notice.condition, s.ToString());
      item->next_at = now + kRecordRetry;
      item->finished = true;
      continue;
    }
    item->next_at = Clock::SteadyPoint::max();  // marks it for removal below
  }
  std::lock_guard lock(mu_);
  std::erase_if(queue_, [](const Item& i) {
    return i.finished && i.next_at == Clock::SteadyPoint::max();
  });
  // A blocked notice's turn comes when the one before it is finished.
  std::optional<Clock::SteadyPoint> next;
  for (std::size_t i = 0; i < queue_.size(); ++i) {
    const Clock::SteadyPoint at = std::max(queue_[i].next_at, now);
    if (!Blocked(i) && (!next || at < *next)) next = at;
  }
  if (!next) return std::nullopt;
  return std::chrono::duration_cast<Clock::Duration>(*next - now);
}

void AlertDelivery::Start() {
  thread_ = std::jthread([this](std::stop_token stop) {
    while (!stop.stop_requested()) {
      wakeup_.Arm();  // an Enqueue while we deliver cuts the sleep short
      const auto wait = DeliverDue();
      // Nothing queued: sleep until woken (an hour at a time).
      wakeup_.SleepFor(clock_, wait ? *wait : std::chrono::hours(1), stop);
    }
  });
}

void AlertDelivery::Stop() {
  if (!thread_.joinable()) return;
  thread_.request_stop();
  thread_.join();
  if (const std::size_t left = Pending(); left > 0) {
    spdlog::warn("alerts: {} notice(s) not delivered at shutdown; a restarted serve notifies "
                 "again for a condition still holding",
                 left);
  }
}

}  // namespace cronledger::engine
