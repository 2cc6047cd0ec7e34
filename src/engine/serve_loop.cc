#include "engine/serve_loop.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "exec/attempt_files.h"

namespace cronledger::engine {

ServeLoop::ServeLoop(const config::Config& config, Planner& planner, Reaper& reaper,
                     Dispatcher& dispatcher, Clock& clock, ServeLoopOptions options)
    : config_(config),
      planner_(planner),
      reaper_(reaper),
      dispatcher_(dispatcher),
      clock_(clock),
      options_(options) {}

void ServeLoop::Run(std::stop_token stop) {
  while (!stop.stop_requested()) {
    const Clock::TimePoint next = PassOnce(clock_.Now());
    clock_.SleepUntil(next, stop);
  }
}

Clock::TimePoint ServeLoop::PassOnce(Clock::TimePoint now) {
  PlanPassStats stats;
  Status plan;
  if (now >= planner_.NextPlanAt()) plan = planner_.PlanOnce(now, &stats);
  const Status release = planner_.ReleaseOnce(now, &stats);
  if (stats.released > 0) dispatcher_.Wake();
  if (!plan.ok() || !release.ok()) {
    spdlog::error("serve: pass failed, retrying: {}", (plan.ok() ? release : plan).ToString());
  } else if (stats.runs_planned > 0 || stats.released > 0 || stats.skipped > 0) {
    spdlog::info("serve: planned {} run(s), released {}, skipped {}", stats.runs_planned,
                 stats.released, stats.skipped);
  }
  if (auto reaped = reaper_.RunOnce(now); !reaped.ok()) {
    spdlog::error("serve: reaper pass failed, retrying next pass: {}",
                  reaped.status().ToString());
  }
  if (now >= next_prune_) {
    const int pruned =
        exec::PruneAttemptFolders(config_.server.log_dir, config_.server.log_retention, now);
    if (pruned > 0) spdlog::info("serve: removed {} attempt folder(s) past log_retention", pruned);
    next_prune_ = now + options_.prune_every;
  }

  Clock::TimePoint next = now + options_.max_sleep;
  const auto consider = [&](std::chrono::sys_seconds at) {
    // The first test keeps a far instant (sys_seconds::max) from
    // overflowing the clock's finer time_point.
    if (at <= std::chrono::ceil<std::chrono::seconds>(next) && Clock::TimePoint(at) < next) {
      next = std::max(Clock::TimePoint(at), now);
    }
  };
  consider(planner_.NextPlanAt());
  if (const auto release_at = planner_.NextReleaseAt()) consider(*release_at);
  return next;
}

}  // namespace cronledger::engine
