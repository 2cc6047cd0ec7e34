// The alert notices' way out (docs/alerts.md, delivery): a queue that
// delivers each notice to its targets off the serve loop's thread, retries
// a failed target with exponential backoff a bounded number of times, and
// records the outcome as an alert_sent (firing) or alert_resolved event —
// the record from which a restarted alerter knows what it already said.
//
// Notices of one condition go out in the order they were queued: a
// resolved notice waits while its condition's firing one is still being
// retried. Nothing here blocks the caller of Enqueue.
#ifndef CRONLEDGER_ENGINE_ALERT_DELIVERY_H_
#define CRONLEDGER_ENGINE_ALERT_DELIVERY_H_

#include <chrono>
#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "cronledger/clock.h"
#include "engine/alert_sender.h"
#include "engine/wakeup.h"
#include "store/store.h"

namespace cronledger::engine {

struct AlertDeliveryOptions {
  // Tries per target, the first included; then the notice is recorded as
  // not delivered and dropped.
  int max_attempts = 5;
  std::chrono::milliseconds initial_backoff{2000};
  double multiplier = 3.0;
  std::chrono::milliseconds max_backoff{60000};
};

// Thread-safe: Enqueue from any thread; DeliverDue from one thread at a
// time (the background thread after Start, or a test without it).
class AlertDelivery {
 public:
  // Everything must outlive it.
  AlertDelivery(store::Store& store, Clock& clock, AlertSender& sender,
                AlertDeliveryOptions options = {});
  ~AlertDelivery();
  AlertDelivery(const AlertDelivery&) = delete;
  AlertDelivery& operator=(const AlertDelivery&) = delete;

  // Queues `notice` for `targets` (none: recorded at once as delivered to
  // nobody) and wakes the background thread.
  void Enqueue(AlertNotice notice, std::vector<AlertTarget> targets);

  // Tries each queued notice whose turn has come once per target still
  // owed it, and records those that are finished (at the clock's Now()).
  // Returns how long until the next try is due, zero at the least (none:
  // the queue is empty). Backoffs are intervals, counted on the clock's
  // steady reading: a wall clock stepped back does not hold a retry back.
  std::optional<Clock::Duration> DeliverDue();

  // Notices not yet finished (queued, or waiting for a retry).
  std::size_t Pending() const;

  // A background thread running DeliverDue whenever something is due.
  void Start();
  // Stops and joins it; notices not finished are dropped, with a warning
  // (a restarted alerter notifies again for a condition still holding).
  void Stop();

 private:
  struct Item {
    AlertNotice notice;
    std::vector<AlertTarget> targets;
    std::vector<bool> delivered;  // per target
    std::vector<std::string> errors;  // per target, the last
    int attempts = 0;
    Clock::SteadyPoint next_at{};
    bool finished = false;  // delivered or given up: only its event is owed
  };
  bool TryOnce(Item& item, Clock::SteadyPoint now);  // true: finished
  // Whether an earlier notice of queue_[i]'s condition is still queued.
  // REQUIRES: mu_ held.
  bool Blocked(std::size_t i) const;
  Status Record(const Item& item);

  store::Store& store_;
  Clock& clock_;
  AlertSender& sender_;
  AlertDeliveryOptions options_;

  mutable std::mutex mu_;
  std::deque<Item> queue_;
  Wakeup wakeup_;

  std::jthread thread_;
};

}  // namespace cronledger::engine

#endif  // CRONLEDGER_ENGINE_ALERT_DELIVERY_H_
