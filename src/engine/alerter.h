// The alerter inside `serve` (docs/alerts.md): per job with an alert
// target (alert.webhook, alert.command), it watches four kinds of
// condition —
//   lag           the job's lag (docs/architecture.md) is over alert.max_lag;
//   missing_runs  a closed business date has missing run keys (one
//                 condition per date);
//   run_failed,   a run is in that state (one condition per run and
//   run_unknown   attempt count: a retried run that fails again is new);
// and queues one notice when a condition starts holding ("firing") and one
// when it stops ("resolved"), never more while it holds.
//
// Run conditions are grouped: those of one business date, kind and step
// (the one the run's last attempt ended in) that start within
// alert.group_window of the group's first are one notice, sent when the
// window has passed — one bad deploy across 200 partitions pages once —
// and resolved when none of its runs is in that state any more.
//
// What was said survives a restart: the firing conditions are read back
// from the alert_sent / alert_resolved events the delivery records, so a
// restarted serve neither pages again for a condition already notified
// nor forgets to resolve it. A notice still queued when serve stopped was
// never recorded; its condition, if it still holds, fires again.
//
// Several serve nodes on one store alert once: only the node holding the
// store's `alerter` role (NodeRole) evaluates. Another takes the role over
// when its holder stops renewing it, and reads what was said from the
// events, as after a restart (docs/alerts.md).
#ifndef CRONLEDGER_ENGINE_ALERTER_H_
#define CRONLEDGER_ENGINE_ALERTER_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/config.h"
#include "cronledger/clock.h"
#include "engine/alert_delivery.h"
#include "engine/alert_sender.h"
#include "engine/node_role.h"
#include "store/store.h"

namespace cronledger::engine {

struct AlerterOptions {
  // How often lag and run states are looked at.
  std::chrono::seconds every{10};
  // How often closed dates are scanned for missing keys (a scan of
  // backfill.horizon, like a scrape of cronledger_missing_runs).
  std::chrono::seconds missing_every{60};
  // Run keys listed in a missing_runs notice, at most.
  std::size_t max_run_keys = 20;
  // This node's name: with one, a pass evaluates only while this node holds
  // the store's `alerter` role, for three passes' time unless renewed.
  // Empty: every pass evaluates (one node, tests).
  std::string node;
};

struct AlerterStats {
  int fired = 0;
  int resolved = 0;
};

// Not thread-safe: one pass at a time (the serve loop's thread).
class Alerter {
 public:
  // Everything must outlive it.
  Alerter(const config::Config& config, store::Store& store, AlertDelivery& delivery,
          AlerterOptions options = {});

  // A pass when one is due (NextAt): evaluates every job with a target and
  // queues the notices. A job whose evaluation fails keeps its conditions
  // as they were (nothing resolves on an error); the first error is
  // returned after trying every job.
  Status RunOnce(Clock::TimePoint now, AlerterStats* stats = nullptr);
  Clock::TimePoint NextAt() const { return next_at_; }
  // At a clean shutdown, after the last pass: hands the role over at once.
  void ReleaseRole() { role_.Release(); }
  // Whether this node alerted at its last pass (it held the role, or needs
  // none).
  bool Alerting() const { return role_.held(); }

  // The conditions of `job` that are firing, by id (for tests and logs).
  std::vector<std::string> Firing(std::string_view job) const;

 private:
  struct Condition {
    std::string alert;
    std::string business_date;
    std::optional<int64_t> run_id;
    std::string run_key;
    std::string details = "{}";
    std::string summary;
    std::string step;  // a run condition's: its last attempt's; empty: none
    // A run alert's notice: the run conditions it speaks for, itself alone
    // for one run. Empty for lag and missing_runs.
    std::vector<std::string> members;
  };
  // Run conditions waiting out their group's window.
  struct Group {
    Clock::TimePoint first_at{};
    std::map<std::string, Condition> runs;  // by run condition id
  };
  struct JobState {
    bool seeded = false;
    std::map<std::string, Condition> firing;  // notices, by condition id
    std::map<std::string, Group> waiting;     // by group key
  };
  Status Seed(const config::JobConfig& job, JobState& state);
  Status EvaluateJob(const config::JobConfig& job, int64_t lag_seconds, bool scan_missing,
                     Clock::TimePoint now, JobState& state, AlerterStats* stats);
  // A firing run alert's details and summary gain how the run's last
  // attempt ended: step, end class, exit status and the output's last line.
  void DescribeLastAttempt(int64_t run_id, Condition& c);
  // The firing notice of a group whose window has passed: the run's own for
  // one run, else one for all, with their count and first run keys.
  std::pair<std::string, Condition> GroupNotice(const config::JobConfig& job, const Group& g) const;
  // The resolved notice of a run notice none of whose runs holds.
  void DescribeResolvedRuns(const config::JobConfig& job, Condition& c);
  std::string PageUrl(const config::JobConfig& job, const Condition& c) const;
  void Notify(const config::JobConfig& job, const std::string& id, const Condition& c,
              bool firing, Clock::TimePoint now);

  const config::Config& config_;
  store::Store& store_;
  AlertDelivery& delivery_;
  AlerterOptions options_;
  std::map<std::string, JobState> jobs_;
  Clock::TimePoint next_at_{};
  Clock::TimePoint next_missing_at_{};
  NodeRole role_;
};

}  // namespace cronledger::engine

#endif  // CRONLEDGER_ENGINE_ALERTER_H_
