#include "engine/serve_loop.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "cronledger/schedule.h"
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
  stop_ = stop;
  while (!stop.stop_requested()) {
    // The pass runs at the ledger's instant; the wait is the local clock's,
    // so only the difference between the two is carried over.
    const Clock::TimePoint local = clock_.Now();
    Clock::TimePoint at = local;
    if (options_.store != nullptr) {
      auto ledger = options_.store->LedgerNow(store::ToInstant(local));
      const bool outage =
          options_.health != nullptr && options_.health->Observe(ledger.status(), "clock");
      if (ledger.ok()) {
        at = *ledger;
        if (options_.metrics != nullptr) {
          options_.metrics->ledger_offset_ms =
              std::chrono::duration_cast<std::chrono::milliseconds>(at - local).count();
        }
      } else {
        if (!outage) {
          spdlog::error("serve: cannot read the ledger's clock, retrying: {}",
                        ledger.status().ToString());
        }
        clock_.SleepFor(options_.max_sleep, stop);  // a retry interval
        continue;
      }
    }
    const Clock::TimePoint next = PassOnce(at);
    clock_.SleepUntil(local + (next - at), stop);
  }
}

void ServeLoop::PurgeOnce(Clock::TimePoint now) {
  // Never purge what the gap scanner still looks at: a purged run would
  // look like a key that was never planned, and could be backfilled again.
  std::chrono::seconds keep = config_.server.retention;
  for (const auto& job : config_.jobs) {
    keep = std::max(keep, job.backfill.horizon + std::chrono::seconds{86400});
  }
  store::PurgeParams p;
  p.before = store::ToInstant(now - keep);
  p.nodes_seen_before = store::ToInstant(now - kForgetNodesAfter);
  store::PurgeResult total;
  for (;;) {
    auto r = options_.store->RunPurge(p);
    if (!r.ok()) {
      spdlog::error("serve: retention purge failed, retrying later: {}", r.status().ToString());
      break;
    }
    total.runs += r->runs;
    total.attempts += r->attempts;
    total.events += r->events;
    total.effects += r->effects;
    total.nodes += r->nodes;
    if (r->runs < p.limit || stop_.stop_requested()) break;
  }
  if (total.runs > 0 || total.events > 0) {
    spdlog::info("serve: retention: purged {} finished run(s) last changed before {} with {} "
                 "attempt(s), {} event(s) and {} effect(s)",
                 total.runs, FormatUtc(std::chrono::floor<std::chrono::seconds>(p.before)),
                 total.attempts, total.events, total.effects);
  }
  if (total.nodes > 0) {
    spdlog::info("serve: forgot {} node(s) not seen for {}h", total.nodes,
                 std::chrono::duration_cast<std::chrono::hours>(kForgetNodesAfter).count());
  }
}

Clock::TimePoint ServeLoop::PassOnce(Clock::TimePoint now) {
  PlanPassStats stats;
  // Release first: runs due now start before anything else takes the
  // store. Planning is never urgent (it works a lookahead ahead), so it
  // waits while the dispatcher claims what was just released.
  // A store failure is logged by the health tracker once per outage, not
  // on every pass.
  bool outage = false;
  const auto observe = [&](const Status& s, std::string_view who) {
    if (options_.health != nullptr && options_.health->Observe(s, who)) outage = true;
  };
  Status release = planner_.ReleaseOnce(now, &stats);
  observe(release, "release");
  if (stats.released > 0) {
    dispatcher_.Wake();
    plan_not_before_ = now + options_.plan_deferral;
  }
  Status plan;
  if (now >= plan_not_before_ && now >= planner_.NextPlanAt()) {
    const int released = stats.released;
    plan = planner_.PlanOnce(now, &stats);
    observe(plan, "planner");
    // A first pass, or one after downtime, may plan runs that are due now.
    if (plan.ok() && stats.runs_planned > 0) {
      release = planner_.ReleaseOnce(now, &stats);
      if (stats.released > released) dispatcher_.Wake();
    }
  }
  if (!plan.ok() || !release.ok()) {
    if (!outage) {
      spdlog::error("serve: pass failed, retrying: {}", (plan.ok() ? release : plan).ToString());
    }
  } else if (stats.runs_planned > 0 || stats.released > 0 || stats.skipped > 0) {
    spdlog::info("serve: planned {} run(s), released {}, skipped {}", stats.runs_planned,
                 stats.released, stats.skipped);
  }
  if (options_.metrics != nullptr) {
    options_.metrics->deduplicated += stats.runs_deduplicated;
    if (plan.ok() && release.ok()) options_.metrics->PlannerPassed(now);
  }
  if (options_.heartbeat != nullptr && plan.ok() && release.ok()) {
    options_.heartbeat->PlannerPassed(now);  // the ping itself is off this thread
  }
  auto reaped = reaper_.RunOnce(now);
  const bool reaper_outage =
      options_.health != nullptr &&
      options_.health->Observe(reaped.status(), "reaper",
                               reaped.ok() && *reaped > 0 ? StoreCall::kWrite : StoreCall::kRead);
  if (!reaped.ok()) {
    if (!reaper_outage) {
      spdlog::error("serve: reaper pass failed, retrying next pass: {}",
                    reaped.status().ToString());
    }
  } else if (options_.metrics != nullptr) {
    options_.metrics->leases_expired += *reaped;
  }
  if (options_.gap_watch != nullptr && now >= options_.gap_watch->NextAt()) {
    // Its errors are logged per job; the next pass tries again.
    (void)options_.gap_watch->ScanOnce(now, nullptr, stop_);
  }
  if (options_.alerter != nullptr && now >= options_.alerter->NextAt()) {
    // Its errors are logged per job; the next pass tries again. Notices
    // are delivered by their own thread.
    (void)options_.alerter->RunOnce(now);
  }
  if (options_.store != nullptr && now >= next_node_beat_) {
    store::NodeBeat beat = options_.node;
    beat.now = store::ToInstant(now);
    const Status s = options_.store->NodeHeartbeat(beat);
    const bool beat_outage = options_.health != nullptr &&
                             options_.health->Observe(s, "node heartbeat", StoreCall::kWrite);
    if (!s.ok() && !beat_outage) {
      spdlog::warn("serve: node heartbeat failed, retrying: {}", s.ToString());
    }
    next_node_beat_ = now + options_.node_beat_every;
  }
  if (options_.store != nullptr && now >= next_purge_) {
    PurgeOnce(now);
    next_purge_ = now + options_.purge_every;
  }
  if (now >= next_prune_) {
    const int pruned =
        exec::PruneAttemptFolders(config_.server.log_dir, config_.server.log_retention, now);
    if (pruned > 0) spdlog::info("serve: removed {} attempt folder(s) past log_retention", pruned);
    next_prune_ = now + options_.prune_every;
  }

  Clock::TimePoint next = now + options_.max_sleep;
  if (!plan.ok() || !release.ok() || !reaped.ok()) {
    // Try again after the longest sleep, not at once: a run that fell due
    // meanwhile would otherwise bring the next pass forward to now, and a
    // store that fails at once (a database away) would make this a busy
    // loop.
    return next;
  }
  const auto consider = [&](std::chrono::sys_seconds at) {
    // The first test keeps a far instant (sys_seconds::max) from
    // overflowing the clock's finer time_point.
    if (at <= std::chrono::ceil<std::chrono::seconds>(next) && Clock::TimePoint(at) < next) {
      next = std::max(Clock::TimePoint(at), now);
    }
  };
  if (plan_not_before_ > now) {
    // Come back for the deferred planning.
    if (planner_.NextPlanAt() <= std::chrono::ceil<std::chrono::seconds>(plan_not_before_)) {
      next = std::min(next, plan_not_before_);
    }
  } else {
    consider(planner_.NextPlanAt());
  }
  if (const auto release_at = planner_.NextReleaseAt()) consider(*release_at);
  return next;
}

}  // namespace cronledger::engine
