// The dispatcher: claims due runs under leases and executes their steps on a
// pool of worker threads, heartbeating the leases it holds.
//
// Every write a worker makes carries its fencing token. When the store
// rejects one (the lease moved on: expired and reaped, or claimed by another
// node), the worker stops at once — its step is cancelled, its subprocess
// killed — and writes nothing more; the reaper or the new owner decides the
// run. Each run's steps and writes follow its engine::Attempt.
//
// Group commit: workers hand their step results and completions to one
// GroupCommitter. A write a step depends on (a later step's start, an
// earlier step's result) is waited for. A run's last write (its last step's
// result and the attempt's end) is handed over and the worker takes the
// next run; the run counts as finished (counters, log line, Active(),
// WaitIdle) only once that write committed.
//
// A transaction that failed for want of the database — the connection lost,
// perhaps at its COMMIT, so its outcome is unknown — is never blindly
// repeated. A claim is not retried as if it had failed: if it did commit,
// the runs it claimed are not run here (this node never learned their
// tokens); their leases expire and the reaper takes them back. A batch of
// worker writes is settled write by write by the committer's
// UnknownOutcomeSettler, until the lease is known to have moved on or the
// drain gives up.
#ifndef CRONLEDGER_ENGINE_DISPATCHER_H_
#define CRONLEDGER_ENGINE_DISPATCHER_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "config/config.h"
#include "cronledger/clock.h"
#include "cronledger/handler.h"
#include "engine/effect_ledger.h"
#include "engine/effect_writer.h"
#include "engine/group_committer.h"
#include "engine/step_runner.h"
#include "engine/store_health.h"
#include "engine/wakeup.h"
#include "store/store.h"

namespace cronledger::engine {

// How `job`'s runs are claimed (its lease, max_concurrency, overlap and
// steps): the same rule for the dispatcher and for external workers.
store::ClaimRule ClaimRuleFor(const config::JobConfig& job);

struct DispatcherOptions {
  std::string node = "local";
  int max_workers = 8;
  int claim_batch = 32;
  // How often the background loop looks for due runs when idle.
  std::chrono::milliseconds poll{100};
  // Claim more runs than free workers: as many as would start within this
  // time at the recent pace of runs (at most kMaxClaimAhead). 0: claim only
  // for free workers. (server.claim_ahead, docs/execution.md.)
  std::chrono::milliseconds claim_ahead{0};
  // While claims come back full (a burst), the committer holds finished
  // runs' writes back so that the claims, which start handlers, do not wait
  // behind them; at most this many writes (0: max_workers +
  // kMaxClaimAhead), and for no longer than `poll`. Past either, they are
  // committed whatever the burst: a backlog that keeps every claim full
  // must not keep finished runs unacknowledged, and unheartbeated, until
  // it is gone.
  int max_held_writes = 0;
  uint64_t jitter_seed = 0;  // 0: nondeterministic
  // In-process jobs are claimed only when every one of their steps has a
  // handler here (docs/execution.md, Claims and leases).
  const HandlerRegistry* handlers = nullptr;
  // Told of every store call's result (outages, GET /metrics); none: not.
  StoreHealth* health = nullptr;
  // The store the committer writes through; none: the dispatcher's own. On
  // PostgreSQL a second connection to the same database, so that the node's
  // group commits run beside its claims (sql::WriteKind) instead of queueing
  // behind them on one connection. Must outlive the dispatcher.
  store::Store* write_store = nullptr;
  // Tests: called for each run a heartbeat is due for, after the due runs
  // were picked and before the run's heartbeat is sent.
  std::function<void(int64_t run_id)> before_heartbeat;
};

struct DispatcherCounters {
  std::atomic<int64_t> claimed{0};
  std::atomic<int64_t> succeeded{0};
  std::atomic<int64_t> failed{0};
  std::atomic<int64_t> unknown{0};
  std::atomic<int64_t> retried{0};
  std::atomic<int64_t> stale_writes_rejected{0};
  // Looks for due runs by the background loop.
  std::atomic<int64_t> polls{0};
  // Claim transactions that claimed anything (claimed / this = batch size).
  std::atomic<int64_t> claim_transactions{0};
  // Claim transactions that found nothing claimable, and that failed.
  std::atomic<int64_t> claim_empty{0};
  std::atomic<int64_t> claim_errors{0};
  // Group commit: transactions, and the writes they carried.
  std::atomic<int64_t> write_batches{0};
  std::atomic<int64_t> writes{0};
};

class Dispatcher {
 public:
  // Runs claimed beyond the workers at most, whatever the pace: a bound on
  // what one node holds while other nodes may be idle, and on what a crash
  // of this node leaves to the reaper.
  static constexpr int kMaxClaimAhead = 1024;

  // `config`, `store`, `clock` and `runner` must outlive the dispatcher.
  Dispatcher(const config::Config& config, store::Store& store, Clock& clock, StepRunner& runner,
             DispatcherOptions options);
  // Cancels whatever still runs and joins every thread.
  ~Dispatcher();

  // Claims up to the free worker slots, plus the runs claimed ahead
  // (subprocess and inprocess jobs only), and hands the runs to workers.
  // Returns how many were claimed.
  Result<int> ClaimOnce(Clock::TimePoint now, int* limit = nullptr);

  // Extends the lease of every active run whose last heartbeat is older than
  // a third of its TTL (on the steady clock: a wall-clock step moves no
  // heartbeat). A rejected heartbeat cancels that run.
  void HeartbeatOnce(Clock::TimePoint now);

  // Starts a background loop: claim when workers are free, heartbeat, sleep
  // until the poll interval passes, Wake() is called, or enough workers free
  // up for a batch.
  void Start();
  // Makes the background loop look for due runs now (the planner released
  // some).
  void Wake();
  // Stops claiming (the loop keeps heartbeating the runs in progress).
  void StopClaiming();
  // Releases at once the runs claimed ahead that no worker started, waits
  // until nothing runs or `grace` has passed (on the steady clock), then
  // cancels what still runs: an idempotent step is released for another
  // attempt, any other is left for its lease to expire. Then stops the loop
  // and the workers.
  void Drain(std::chrono::milliseconds grace);

  int Active() const;
  // Runs claimed beyond the workers that a claim may take now (0 until a
  // run has finished here and shown the pace).
  int ClaimAhead() const;
  // Blocks until no run is active (tests).
  void WaitIdle();
  const DispatcherCounters& counters() const { return counters_; }
  // The group commit of effect writes that in-process handlers use; other
  // writers of this node's effects (the HTTP API) should share it, so their
  // writes share transactions too.
  EffectWriter& effect_writer() { return effect_writer_; }

 private:
  struct ActiveRun {
    store::ClaimedRun claim;
    std::chrono::milliseconds lease_ttl{0};
    // The ledger's clock minus this node's at the claim (PostgreSQL: the
    // database's; the claim's lease ran from its now): decisions about the
    // run (a retry's backoff) are taken on the ledger's clock.
    std::chrono::milliseconds ledger_offset{0};
    Clock::SteadyPoint last_heartbeat;  // or the claim
    std::stop_source cancel;
    std::atomic<bool> stale{false};
    std::atomic<bool> shutdown{false};
    std::atomic<bool> finishing{false};  // its last write is with the committer
    // Held while a heartbeat is sent, and to set `finishing`: a heartbeat
    // either ends before the last write is queued or is not sent at all.
    // Sent after the attempt's end committed, its token would no longer be
    // current: a stale_write_rejected from a worker that did nothing wrong.
    std::mutex lease_mu;
  };

  void WorkerLoop(std::stop_token stop);
  // Runs the steps; returns the run's last write, if any is to be made.
  std::optional<store::WorkerWrite> Execute(ActiveRun& run);
  // Queues `write` for the committer and waits until its batch committed.
  Status Write(store::WorkerWrite write);
  // Queues a run's last write; the run is finished when it committed.
  void WriteLast(std::shared_ptr<ActiveRun> run, store::WorkerWrite write);
  void Finished(const ActiveRun& run);
  void Observe(const Status& s, std::string_view who, StoreCall call = StoreCall::kRead);
  // The ledger's now for `run` (this node's clock plus the run's offset).
  store::Instant LedgerNow(const ActiveRun& run) const;
  // Counts and logs the answer to a write; false when the worker must stop
  // (its lease moved on, or the write failed).
  bool Accept(const ActiveRun& run, const Status& s, std::string_view what);
  void CountOutcome(const ActiveRun& run, const store::FinishParams& params);
  std::string LogPath(const store::ClaimedRun& claim) const;
  double JitterSample();

  const config::Config& config_;
  store::Store& store_;
  store::Store& write_store_;  // the committer's: options_.write_store or store_
  Clock& clock_;
  StepRunner& runner_;
  DispatcherOptions options_;
  std::vector<store::ClaimRule> rules_;
  DispatcherCounters counters_;
  // Group commit of effect writes; RunContext::Effect of in-process
  // handlers goes through it.
  EffectWriter effect_writer_;
  StoreEffectLedger effects_;

  mutable std::mutex mu_;
  std::condition_variable_any work_cv_;
  std::condition_variable idle_cv_;
  std::deque<std::shared_ptr<ActiveRun>> queue_;
  std::map<int64_t, std::shared_ptr<ActiveRun>> active_;
  int busy_ = 0;  // runs queued or executing (not those only awaiting a commit)
  std::mt19937_64 rng_;
  std::atomic<bool> claiming_{true};

  // Cuts the background loop's sleep short (Wake()).
  Wakeup wakeup_;

  // Claimable slots now: free workers plus what may be claimed ahead.
  int FreeSlotsLocked() const;
  int ClaimAheadLocked() const;
  // Whether enough slots are free to make a claim worth a transaction.
  bool WorthAClaimLocked() const;
  bool WorthAClaim() const;
  // Recent time a run took here, from a worker taking it to its last write
  // (moving average, microseconds); negative until one run finished.
  double run_micros_ = -1;

  // While the loop claims full batches back to back (a burst of runs fell
  // due at once) it holds completions back, so that the claims, which
  // start handlers, do not queue behind them for the store.
  std::unique_ptr<GroupCommitter> committer_;
  std::vector<std::jthread> workers_;
  std::jthread loop_;
};

}  // namespace cronledger::engine

#endif  // CRONLEDGER_ENGINE_DISPATCHER_H_
