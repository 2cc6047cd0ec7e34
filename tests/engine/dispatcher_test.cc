// The dispatcher and the reaper against a real SQLite store, with
// in-process handlers (and one real subprocess job) and a fake clock.
#include "engine/dispatcher.h"

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <set>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "common/wrong_wall_clock.h"
#include "engine/planner.h"
#include "engine/reaper.h"
#include "engine/serve_loop.h"
#include "store/sqlite/sqlite_store.h"

namespace cronledger::engine {
namespace {

using ledger::RunState;
using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;

Clock::TimePoint At(const std::string& rfc3339) {
  return Clock::TimePoint{ParseRfc3339(rfc3339)->time_since_epoch()};
}

config::StepConfig Step(const std::string& name, bool idempotent = true) {
  config::StepConfig s;
  s.name = name;
  s.timeout = seconds{60};
  s.idempotent = idempotent;
  return s;
}

class DispatcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/cronledger-dispatch-XXXXXX";
    dir_ = mkdtemp(tmpl);
    config_.dir = dir_;
    config_.server.log_dir = dir_ + "/logs";
    store::SqliteOptions o;
    o.path = dir_ + "/ledger.db";
    o.synchronous_full = false;
    store_ = std::move(store::SqliteStore::Open(o)).value();
  }
  void TearDown() override {
    dispatchers_.clear();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  // One in-process job "j" with one partition and the given steps, firing
  // at 09:00 UTC; planned and released at 09:00:01.
  void AddJob(std::vector<config::StepConfig> steps, ledger::RetryPolicy retry = {},
              const std::string& name = "j") {
    config::JobConfig job;
    job.name = name;
    job.schedule = "0 9 * * *";
    job.timezone = "UTC";
    job.executor = config::Executor::kInprocess;
    job.steps = std::move(steps);
    job.retry = retry;
    config_.jobs.push_back(job);
  }

  void PlanAndRelease() {
    Planner planner(config_, *store_, clock_);
    ASSERT_TRUE(planner.RunOnce(At("2026-11-05T08:59:30Z")).ok());
    clock_.Set(At("2026-11-05T09:00:01Z"));
    ASSERT_TRUE(planner.RunOnce(clock_.Now()).ok());
  }

  // A job "j" of one step whose handler runs until `release`: its run is
  // planned, claimed by a new dispatcher, and its handler has started.
  Dispatcher& ClaimARunHeldUntil(const std::atomic<bool>& release) {
    AddJob({Step("work")});
    auto started = std::make_shared<std::atomic<bool>>(false);
    handlers_.Register("j", [&release, started](const RunContext&) {
      *started = true;
      while (!release) usleep(1000);
      return 0;
    });
    PlanAndRelease();
    Dispatcher& d = NewDispatcher();
    EXPECT_EQ(*d.ClaimOnce(clock_.Now()), 1);
    while (!*started) usleep(1000);
    return d;
  }

  // A job "j" of one unsafe step over `partitions` partitions, and one
  // worker: a first run shows the pace, the next claim takes the rest
  // ahead of the worker, whose run holds it until a drain with no grace
  // cancels it. `calls`: the handler's calls.
  void DrainWithRunsClaimedAhead(int partitions, const ledger::RetryPolicy& retry,
                                 int* calls_out = nullptr) {
    AddJob({Step("unsafe", /*idempotent=*/false)}, retry);
    for (int i = 0; i < partitions; ++i) {
      config_.jobs[0].partitions.push_back("p" + std::to_string(i));
    }
    auto calls = std::make_shared<std::atomic<int>>(0);
    auto holding = std::make_shared<std::promise<void>>();
    handlers_.Register("j", [calls, holding](const RunContext& ctx) {
      if (++*calls == 2) {
        holding->set_value();
        while (!ctx.cancel.stop_requested()) std::this_thread::yield();
        return 1;
      }
      return 0;
    });
    PlanAndRelease();
    Dispatcher& d = NewDispatcher("n1", nullptr, /*max_workers=*/1, milliseconds{1000});
    ASSERT_EQ(RunDue(d), 1);  // shows the pace
    ASSERT_GT(d.ClaimAhead(), 0);
    auto claimed = d.ClaimOnce(clock_.Now());
    ASSERT_TRUE(claimed.ok());
    ASSERT_EQ(*claimed, partitions - 1) << "one for the worker, the rest ahead of it";
    holding->get_future().wait();
    d.Drain(milliseconds{0});  // no grace: cancel what runs
    if (calls_out != nullptr) *calls_out = calls->load();
  }

  // `step_clock` times step timeouts (the fake clock never reaches them).
  Dispatcher& NewDispatcher(const std::string& node = "n1", Clock* step_clock = nullptr,
                            int max_workers = 4, milliseconds claim_ahead = milliseconds{0}) {
    runners_.push_back(std::make_unique<DefaultStepRunner>(
        config_, step_clock ? *step_clock : clock_, &handlers_));
    DispatcherOptions o;
    o.node = node;
    o.max_workers = max_workers;
    o.claim_ahead = claim_ahead;
    o.jitter_seed = 42;
    o.handlers = &handlers_;
    dispatchers_.push_back(
        std::make_unique<Dispatcher>(config_, *store_, clock_, *runners_.back(), o));
    return *dispatchers_.back();
  }

  // Claims what is due now and waits for it to finish.
  int RunDue(Dispatcher& d) {
    auto n = d.ClaimOnce(clock_.Now());
    EXPECT_TRUE(n.ok()) << n.status().ToString();
    d.WaitIdle();
    return n.ok() ? *n : 0;
  }

  store::RunRecord OnlyRun() {
    store::RunQuery q;
    q.job = "j";
    auto runs = *store_->RunList(q);
    EXPECT_EQ(runs.size(), 1u);
    return runs.at(0);
  }

  int Count(RunState state) {
    store::RunQuery q;
    q.job = "j";
    q.state = state;
    q.limit = 1000;
    return static_cast<int>(store_->RunList(q)->size());
  }

  std::vector<store::EventRecord> Events(const std::string& type) {
    store::EventQuery q;
    q.job = "j";
    q.type = type;
    q.limit = 1000;
    return *store_->EventList(q);
  }

  std::string dir_;
  config::Config config_;
  FakeClock clock_{At("2026-11-05T08:00:00Z")};
  std::unique_ptr<store::SqliteStore> store_;
  HandlerRegistry handlers_;
  std::vector<std::unique_ptr<DefaultStepRunner>> runners_;
  std::vector<std::unique_ptr<Dispatcher>> dispatchers_;
};

TEST_F(DispatcherTest, RunsEveryStepAndRecordsSuccess) {
  AddJob({Step("generate"), Step("deliver")});
  std::vector<std::string> calls;
  std::mutex mu;
  handlers_.Register("j", [&](const RunContext& ctx) {
    std::lock_guard lock(mu);
    calls.push_back(ctx.step + " " + ctx.run_key + " attempt " + std::to_string(ctx.attempt));
    EXPECT_GT(ctx.fencing_token, 0);
    EXPECT_EQ(ctx.business_date, "2026-11-05");
    return 0;
  });
  PlanAndRelease();
  Dispatcher& d = NewDispatcher();
  EXPECT_EQ(RunDue(d), 1);
  EXPECT_EQ(calls, (std::vector<std::string>{"generate j/default/2026-11-05 attempt 1",
                                             "deliver j/default/2026-11-05 attempt 1"}));
  const auto run = OnlyRun();
  EXPECT_EQ(run.state, RunState::kSucceeded);
  const auto attempts = *store_->AttemptList(run.id);
  ASSERT_EQ(attempts.size(), 1u);
  EXPECT_EQ(attempts[0].end_class, "succeeded");
  EXPECT_EQ(attempts[0].node, "n1");
  EXPECT_TRUE(attempts[0].ended_at.has_value());
  EXPECT_EQ(Events("step_succeeded").size(), 2u);
  EXPECT_EQ(d.counters().succeeded.load(), 1);
}

// The connection lost at the COMMIT of a worker's last write: the store
// answers kUnavailable, the transaction's outcome unknown (PostgreSQL's
// words; here the hook refuses the COMMIT before SQLite sees it, so it was
// not applied). The dispatcher reads what the ledger holds, finds the
// attempt still open under its own lease, and applies the write again: the
// attempt ends once, succeeded, by its own worker, instead of being left to
// its lease to expire (lease_expired, and the run done again).
TEST_F(DispatcherTest, AWorkerWriteLostAtCommitIsRecheckedAndAppliedOnce) {
  std::atomic<int> phase{0};  // 0: before the write, 1: in its transaction, 2: refused
  store_.reset();
  store::SqliteOptions o;
  o.path = dir_ + "/ledger.db";
  o.synchronous_full = false;
  o.statement_hook = [&phase](std::string_view sql) -> Status {
    if (phase == 0 && sql.find("UPDATE run_steps SET state = ?, attempt = ?") == 0) phase = 1;
    if (phase == 1 && sql == "COMMIT") {
      phase = 2;
      return Status(StatusCode::kUnavailable,
                    "postgresql: the connection was lost at COMMIT; the transaction's outcome is "
                    "unknown: server closed the connection unexpectedly");
    }
    return Status::Ok();
  };
  store_ = std::move(store::SqliteStore::Open(o)).value();
  AddJob({Step("work")});
  handlers_.Register("j", [](const RunContext&) { return 0; });
  PlanAndRelease();
  Dispatcher& d = NewDispatcher();
  EXPECT_EQ(RunDue(d), 1);
  EXPECT_EQ(phase.load(), 2) << "the COMMIT of the worker's write was refused";
  const auto run = OnlyRun();
  EXPECT_EQ(run.state, RunState::kSucceeded);
  const auto attempts = *store_->AttemptList(run.id);
  ASSERT_EQ(attempts.size(), 1u);
  EXPECT_EQ(attempts[0].end_class, "succeeded");
  EXPECT_EQ(attempts[0].node, "n1");
  EXPECT_EQ(Events("succeeded").size(), 1u);
  EXPECT_EQ(Events("stale_write_rejected").size(), 0u) << "nothing was repeated blindly";
  EXPECT_EQ(d.counters().succeeded.load(), 1);
}

TEST_F(DispatcherTest, RetryableFailureThenSuccessAfterBackoff) {
  ledger::RetryPolicy retry;
  retry.initial_backoff = milliseconds{30000};
  retry.jitter = 0.0;
  AddJob({Step("work")}, retry);
  std::atomic<int> calls{0};
  handlers_.Register("j", [&](const RunContext&) { return ++calls == 1 ? 75 : 0; });
  PlanAndRelease();
  Dispatcher& d = NewDispatcher();
  RunDue(d);
  auto run = OnlyRun();
  EXPECT_EQ(run.state, RunState::kPending);
  EXPECT_EQ(Events("retry_scheduled").size(), 1u);
  clock_.Advance(seconds{29});
  EXPECT_EQ(RunDue(d), 0) << "not before its backoff";
  clock_.Advance(seconds{2});
  EXPECT_EQ(RunDue(d), 1);
  run = OnlyRun();
  EXPECT_EQ(run.state, RunState::kSucceeded);
  EXPECT_EQ(run.attempts, 2);
  const auto attempts = *store_->AttemptList(run.id);
  EXPECT_EQ(attempts[0].end_class, "retryable");
  EXPECT_EQ(attempts[0].exit_status, 75);
  EXPECT_EQ(attempts[1].end_class, "succeeded");
}

// ctx.Effect: the effect runs once; the retry replays the stored result.
TEST_F(DispatcherTest, AnEffectIsDoneOnceAndReplayedOnTheRetry) {
  ledger::RetryPolicy retry;
  retry.initial_backoff = milliseconds{1000};
  retry.jitter = 0.0;
  AddJob({Step("work")}, retry);
  std::atomic<int> sent{0};
  std::vector<std::string> answers;
  std::mutex mu;
  handlers_.Register("j", [&](const RunContext& ctx) {
    std::string out;
    const int rc = ctx.Effect("mail/" + ctx.partition, "v1", [&] {
      ++sent;
      return EffectResult{0, "message-id 42"};
    }, {}, &out);
    std::lock_guard lock(mu);
    answers.push_back(std::to_string(rc) + " " + out);
    return ctx.attempt == 1 ? 75 : rc;  // the first attempt fails after its effect
  });
  PlanAndRelease();
  Dispatcher& d = NewDispatcher();
  RunDue(d);
  clock_.Advance(seconds{2});
  EXPECT_EQ(RunDue(d), 1);
  EXPECT_EQ(sent.load(), 1) << "a retry must not send the mail again";
  EXPECT_EQ(answers, (std::vector<std::string>{"0 message-id 42", "0 message-id 42"}));
  EXPECT_EQ(OnlyRun().state, RunState::kSucceeded);
  const auto e = *store_->EffectGet("j", "mail/default");
  EXPECT_EQ(e.state, ledger::EffectState::kCommitted);
  EXPECT_EQ(e.result, "message-id 42");
}

// A handler that calls ctx.Effect again for a key whose first call lost its
// outcome (the function threw) does not do it a second time.
TEST_F(DispatcherTest, ASecondCallForTheSameKeyInOneAttemptIsInDoubt) {
  AddJob({Step("work")});
  std::atomic<int> sent{0};
  std::vector<int> answers;
  handlers_.Register("j", [&](const RunContext& ctx) {
    const EffectFn send = [&]() -> EffectResult {
      if (sent++ == 0) throw std::runtime_error("timeout: did it go out?");
      return {0, "sent"};
    };
    answers.push_back(ctx.Effect("mail", "", send));
    answers.push_back(ctx.Effect("mail", "", send));  // a naive retry loop
    return 0;
  });
  PlanAndRelease();
  Dispatcher& d = NewDispatcher();
  RunDue(d);
  EXPECT_EQ(sent.load(), 1);
  EXPECT_EQ(answers, (std::vector<int>{kEffectInDoubt, kEffectInDoubt}));
  EXPECT_EQ(OnlyRun().state, RunState::kUnknown) << "it may have happened: an operator decides";
}

// An effect whose outcome is unknown (the attempt died between begin and
// commit; here its function threw) is in doubt for the next attempt: without
// a reconcile function the run ends unknown even though the handler
// returned 0; a reconcile function decides.
class EffectInDoubtTest : public DispatcherTest {
 protected:
  // `verdict`: the reconcile function's exit status, -1 for none.
  void Scenario(int verdict) {
    ledger::RetryPolicy retry;
    retry.initial_backoff = milliseconds{1000};
    retry.jitter = 0.0;
    AddJob({Step("work")}, retry);
    handlers_.Register("j", [this, verdict](const RunContext& ctx) {
      const EffectFn send = [&]() -> EffectResult {
        if (ctx.attempt == 1) throw std::runtime_error("connection reset after sending");
        ++sent_;
        return {0, "sent again"};
      };
      EffectFn reconcile;
      if (verdict >= 0) reconcile = [verdict] { return EffectResult{verdict, "found in the outbox"}; };
      const int rc = ctx.Effect("mail", "", send, reconcile);
      if (ctx.attempt == 1) return 75;
      return rc == kEffectInDoubt ? 0 : rc;  // even 0 cannot hide it
    });
    PlanAndRelease();
    Dispatcher& d = NewDispatcher();
    RunDue(d);
    clock_.Advance(seconds{2});
    EXPECT_EQ(RunDue(d), 1);
  }
  std::atomic<int> sent_{0};
};

TEST_F(EffectInDoubtTest, WithoutReconcileTheRunEndsUnknown) {
  std::ostringstream log;
  const auto previous = spdlog::default_logger();
  spdlog::set_default_logger(std::make_shared<spdlog::logger>(
      "test", std::make_shared<spdlog::sinks::ostream_sink_mt>(log)));
  Scenario(-1);
  spdlog::set_default_logger(previous);
  const auto run = OnlyRun();
  // The log says what the ledger says, not only what the worker decided.
  EXPECT_NE(log.str().find("run " + std::to_string(run.id) + ": effect \"mail\" is in doubt: "
                           "the attempt (fencing token "),
            std::string::npos)
      << log.str();
  EXPECT_NE(log.str().find("ends in_doubt and the run unknown, not succeeded as its worker "
                           "decided"),
            std::string::npos)
      << log.str();
  EXPECT_EQ(run.state, RunState::kUnknown);
  EXPECT_EQ(store_->AttemptList(run.id)->at(1).end_class, "in_doubt");
  EXPECT_EQ(store_->EffectGet("j", "mail")->state, ledger::EffectState::kStarted);
  EXPECT_EQ(sent_.load(), 0);
}

TEST_F(EffectInDoubtTest, ReconciledAsHappenedIsNotDoneAgain) {
  Scenario(0);
  EXPECT_EQ(OnlyRun().state, RunState::kSucceeded);
  const auto e = *store_->EffectGet("j", "mail");
  EXPECT_EQ(e.state, ledger::EffectState::kCommitted);
  EXPECT_EQ(e.result, "found in the outbox");
  EXPECT_EQ(sent_.load(), 0);
}

TEST_F(EffectInDoubtTest, ReconciledAsNotHappenedIsDoneExactlyOnce) {
  Scenario(1);
  EXPECT_EQ(OnlyRun().state, RunState::kSucceeded);
  const auto e = *store_->EffectGet("j", "mail");
  EXPECT_EQ(e.state, ledger::EffectState::kCommitted);
  EXPECT_EQ(e.result, "sent again");
  EXPECT_EQ(sent_.load(), 1);
}

TEST_F(DispatcherTest, PermanentExitIsNotRetried) {
  AddJob({Step("work")});
  std::atomic<int> calls{0};
  handlers_.Register("j", [&](const RunContext&) {
    ++calls;
    return 65;
  });
  PlanAndRelease();
  Dispatcher& d = NewDispatcher();
  RunDue(d);
  clock_.Advance(minutes{60});
  RunDue(d);
  EXPECT_EQ(calls.load(), 1);
  EXPECT_EQ(OnlyRun().state, RunState::kFailed);
  const auto failed = Events("failed");
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0].reason, "permanent failure: not retried");
}

TEST_F(DispatcherTest, RetryResumesAtTheFirstStepNotSucceeded) {
  ledger::RetryPolicy retry;
  retry.initial_backoff = milliseconds{1000};
  retry.jitter = 0.0;
  AddJob({Step("generate"), Step("deliver")}, retry);
  std::atomic<int> generated{0};
  std::atomic<int> delivered{0};
  handlers_.Register("j", [&](const RunContext&) { return ++generated, 0; }, "generate");
  handlers_.Register("j", [&](const RunContext&) { return ++delivered == 1 ? 1 : 0; }, "deliver");
  PlanAndRelease();
  Dispatcher& d = NewDispatcher();
  RunDue(d);
  clock_.Advance(seconds{2});
  RunDue(d);
  EXPECT_EQ(generated.load(), 1);
  EXPECT_EQ(delivered.load(), 2);
  EXPECT_EQ(OnlyRun().state, RunState::kSucceeded);
}

TEST_F(DispatcherTest, InprocessJobsWithoutHandlersAreNotClaimed) {
  AddJob({Step("generate"), Step("deliver")});
  handlers_.Register("j", [](const RunContext&) { return 0; }, "generate");
  PlanAndRelease();
  Dispatcher& d = NewDispatcher();
  EXPECT_EQ(RunDue(d), 0) << "deliver has no handler: another process must run this job";
  EXPECT_EQ(OnlyRun().state, RunState::kPending);
  handlers_.Register("j", [](const RunContext&) { return 0; }, "deliver");
  Dispatcher& with_all = NewDispatcher("n2");
  EXPECT_EQ(RunDue(with_all), 1);
  EXPECT_EQ(OnlyRun().state, RunState::kSucceeded);
}

// server.claim_ahead: once runs have shown their pace here, a claim takes
// more runs than free workers (one transaction for many short runs), and
// every one of them still runs once under its own lease and token.
TEST_F(DispatcherTest, ClaimsAheadOfTheFreeWorkersOnceThePaceIsKnown) {
  AddJob({Step("only")});
  for (int i = 0; i < 40; ++i) config_.jobs[0].partitions.push_back("p" + std::to_string(i));
  std::atomic<int> calls{0};
  handlers_.Register("j", [&](const RunContext&) {
    ++calls;
    return 0;
  });
  PlanAndRelease();
  Dispatcher& d = NewDispatcher("n1", nullptr, /*max_workers=*/2, milliseconds{1000});
  EXPECT_EQ(d.ClaimAhead(), 0) << "no run has shown the pace yet";
  EXPECT_EQ(RunDue(d), 2) << "the first claim is for the free workers only";
  EXPECT_GT(d.ClaimAhead(), 0);
  EXPECT_LE(d.ClaimAhead(), Dispatcher::kMaxClaimAhead);
  EXPECT_EQ(RunDue(d), 38) << "the rest in one claim, ahead of two workers";
  EXPECT_EQ(d.counters().claim_transactions.load(), 2);
  EXPECT_EQ(calls.load(), 40);
  store::RunQuery q;
  q.job = "j";
  std::set<int64_t> tokens;
  const auto runs = store_->RunList(q);
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 40u);
  for (const auto& run : runs.value()) {
    EXPECT_EQ(run.state, RunState::kSucceeded) << run.RunKey();
    const auto attempts = *store_->AttemptList(run.id);
    ASSERT_EQ(attempts.size(), 1u) << run.RunKey();
    EXPECT_EQ(attempts[0].end_class, "succeeded");
    tokens.insert(attempts[0].token);
  }
  EXPECT_EQ(tokens.size(), 40u) << "one token per claimed run";
  EXPECT_EQ(Events("claimed").size(), 40u);
}

TEST_F(DispatcherTest, WithoutClaimAheadAClaimTakesOnlyTheFreeWorkers) {
  AddJob({Step("only")});
  for (int i = 0; i < 10; ++i) config_.jobs[0].partitions.push_back("p" + std::to_string(i));
  handlers_.Register("j", [](const RunContext&) { return 0; });
  PlanAndRelease();
  Dispatcher& d = NewDispatcher("n1", nullptr, /*max_workers=*/2);
  EXPECT_EQ(RunDue(d), 2);
  EXPECT_EQ(d.ClaimAhead(), 0);
  EXPECT_EQ(RunDue(d), 2);
}

// A run that ends may let another be claimed (here max_concurrency = 1; the
// next run of a partition whose overlap queues is the same). The worker's
// wake comes before its end commits, when the claim cannot see that yet:
// the commit wakes the claim loop again, or the next run would wait for
// the poll (which the fake clock never reaches).
TEST_F(DispatcherTest, ARunsEndWakesTheClaimForRunsItHeldBack) {
  AddJob({Step("only")});
  config_.jobs[0].partitions = {"p0", "p1", "p2"};
  config_.jobs[0].max_concurrency = 1;
  std::atomic<int> calls{0};
  handlers_.Register("j", [&calls](const RunContext&) {
    ++calls;
    return 0;
  });
  PlanAndRelease();
  Dispatcher& d = NewDispatcher();
  d.Start();
  for (int i = 0; i < 5'000 && Count(RunState::kSucceeded) < 3; ++i) usleep(1000);
  EXPECT_EQ(Count(RunState::kSucceeded), 3) << "runs held back by the first waited for the poll";
  d.Drain(milliseconds{0});
  EXPECT_EQ(calls.load(), 3);
}

// A drain releases at once the runs claimed ahead that no worker started,
// even those of a step nobody declared idempotent: nothing of them ran, so
// they are pending again for the next node, not left to their leases (which
// would make them unknown).
TEST_F(DispatcherTest, ADrainReleasesRunsClaimedAheadThatNeverStarted) {
  int calls = 0;
  DrainWithRunsClaimedAhead(6, {}, &calls);
  if (HasFatalFailure()) return;
  EXPECT_EQ(calls, 2) << "the runs claimed ahead never ran";
  store::RunQuery q;
  q.job = "j";
  q.state = RunState::kPending;
  const auto released = store_->RunList(q);
  ASSERT_TRUE(released.ok());
  EXPECT_EQ(released->size(), 4u);
  for (const auto& run : released.value()) {
    const auto attempts = *store_->AttemptList(run.id);
    ASSERT_EQ(attempts.size(), 1u);
    EXPECT_TRUE(attempts[0].ended_at.has_value()) << run.RunKey();
  }
  q.state = RunState::kRunning;
  EXPECT_EQ(store_->RunList(q)->size(), 1u)
      << "the cancelled unsafe step is left to its lease, as before";
}

// A run claimed ahead and released at shutdown never started: its attempt
// is recorded, but not counted against max_attempts. With two attempts
// allowed, a retryable failure after the restart is retried, not the end.
TEST_F(DispatcherTest, ARunReleasedBeforeItStartedKeepsItsWholeRetryBudget) {
  ledger::RetryPolicy retry;
  retry.max_attempts = 2;
  DrainWithRunsClaimedAhead(4, retry);
  if (HasFatalFailure()) return;
  store::RunQuery q;
  q.job = "j";
  q.state = RunState::kPending;
  const auto released = *store_->RunList(q);
  ASSERT_EQ(released.size(), 2u);

  // After the restart every attempt fails retryably (exit 75).
  handlers_.Register("j", [](const RunContext&) { return 75; });
  Dispatcher& second = NewDispatcher("n2");
  EXPECT_EQ(RunDue(second), 2);
  for (const auto& run : released) {
    const auto now = *store_->RunGet(run.id);
    EXPECT_EQ(now.state, RunState::kPending) << run.RunKey() << ": retried, not failed";
    EXPECT_EQ(now.attempts, 2);
    const auto attempts = *store_->AttemptList(run.id);
    ASSERT_EQ(attempts.size(), 2u);
    EXPECT_EQ(attempts[0].end_class, "signal") << "the release is recorded";
  }
  int second_of_two = 0;
  for (const auto& e : Events("retry_scheduled")) {
    if (e.reason.find("attempt 2 of 2") != std::string::npos) ++second_of_two;
  }
  EXPECT_EQ(second_of_two, 2);
}

// A backlog keeps every claim full, and a full claim makes the committer
// hold finished runs' writes back (fire latency). The hold has bounds: with
// the bug they were committed only once the backlog was gone, unheartbeated
// meanwhile. `hold` shapes each test's limit; the 16th run's handler looks
// for a committed run while the backlog still waits.
class DispatcherHoldTest : public DispatcherTest {
 protected:
  struct Seen {
    int succeeded = 0;
    int pending = 0;
  };
  Seen RunBacklog(const std::function<void(DispatcherOptions&)>& hold,
                  const std::function<void(int call)>& on_call = nullptr,
                  Clock* clock = nullptr) {
    AddJob({Step("work")});
    for (int i = 0; i < 80; ++i) config_.jobs[0].partitions.push_back("p" + std::to_string(i));
    std::atomic<int> calls{0};
    Seen seen;
    handlers_.Register("j", [&](const RunContext&) {
      const int call = ++calls;
      if (on_call) on_call(call);
      if (call == 16) {
        for (int i = 0; i < 5'000 && seen.succeeded == 0; ++i) {  // a hang guard
          seen.succeeded = Count(RunState::kSucceeded);
          seen.pending = Count(RunState::kPending);
          if (seen.succeeded == 0) usleep(1000);
        }
      }
      return 0;
    });
    PlanAndRelease();
    DefaultStepRunner runner(config_, clock_, &handlers_);
    DispatcherOptions o;
    o.node = "n1";
    // Claims of one run with workers to spare: each claim is full, and none
    // finds every worker busy, which would end the burst by itself.
    o.max_workers = 8;
    o.claim_batch = 1;
    o.handlers = &handlers_;
    hold(o);
    Dispatcher d(config_, *store_, clock ? *clock : clock_, runner, o);
    d.Start();
    for (int i = 0; i < 10'000 && calls.load() < 80; ++i) usleep(1000);  // a hang guard
    d.WaitIdle();
    d.Drain(milliseconds{0});
    EXPECT_EQ(Count(RunState::kSucceeded), 80);
    return seen;
  }
};

TEST_F(DispatcherHoldTest, ABacklogHoldsNoMoreWritesThanTheLimit) {
  const Seen seen = RunBacklog([](DispatcherOptions& o) { o.max_held_writes = 4; });
  EXPECT_GT(seen.succeeded, 0) << "15 runs finished, none committed";
  EXPECT_GT(seen.pending, 0) << "committed only once the backlog was claimed";
}

// The fixture's fake clock whose steady reading can jump without waking
// anybody: a poll's time passes for the dispatcher's hold while its loop,
// asleep or not, is woken only by its workers, as in a steady stream.
class SteadyJumpClock final : public Clock {
 public:
  explicit SteadyJumpClock(FakeClock& base) : base_(base) {}
  TimePoint Now() const override { return base_.Now(); }
  SteadyPoint SteadyNow() const override { return base_.SteadyNow() + jump_.load(); }
  bool SleepUntil(TimePoint deadline, std::stop_token stop) override {
    return base_.SleepUntil(deadline, stop);
  }
  bool SleepFor(Duration d, std::stop_token stop) override { return base_.SleepFor(d, stop); }
  void Jump(Duration d) { jump_ = jump_.load() + d; }

 private:
  FakeClock& base_;
  std::atomic<Duration> jump_{Duration::zero()};
};

TEST_F(DispatcherHoldTest, ABacklogHoldsWritesNoLongerThanAPoll) {
  SteadyJumpClock clock(clock_);
  const Seen seen = RunBacklog(
      [](DispatcherOptions& o) { o.poll = milliseconds{100}; },
      [&](int call) {
        if (call == 5) clock.Jump(milliseconds{100});
      },
      &clock);
  EXPECT_GT(seen.succeeded, 0) << "held a poll's time, none committed";
  EXPECT_GT(seen.pending, 0) << "committed only once the backlog was claimed";
}

TEST_F(DispatcherTest, SubprocessJobsRunRealCommands) {
  AddJob({Step("work")});
  config_.jobs[0].executor = config::Executor::kSubprocess;
  config_.jobs[0].steps[0].command = {"/bin/sh", "-c", "echo hello {partition}; exit 3"};
  config_.jobs[0].fail_exit_codes = {3};
  PlanAndRelease();
  Dispatcher& d = NewDispatcher();
  std::ostringstream log;
  const auto previous = spdlog::default_logger();
  spdlog::set_default_logger(std::make_shared<spdlog::logger>(
      "test", std::make_shared<spdlog::sinks::ostream_sink_mt>(log)));
  EXPECT_EQ(RunDue(d), 1);
  spdlog::set_default_logger(previous);
  const auto run = OnlyRun();
  EXPECT_EQ(run.state, RunState::kFailed);
  // The attempt's end is logged once, with what the ledger records: where
  // it ended, how, after how long, the decision and the step's last words.
  const std::string line = fmt::format(
      "run {} {}: attempt 1 step work: permanent, exit status 3 "
      "after 0.0s -> failed",
      run.id, run.RunKey());
  EXPECT_NE(log.str().find(line), std::string::npos) << log.str();
  EXPECT_NE(log.str().find("; last output: hello default\n"), std::string::npos) << log.str();
  EXPECT_EQ(log.str().find(line, log.str().find(line) + 1), std::string::npos) << "once";
  const auto attempts = *store_->AttemptList(run.id);
  ASSERT_EQ(attempts.size(), 1u);
  EXPECT_EQ(attempts[0].end_class, "permanent");
  EXPECT_EQ(attempts[0].exit_status, 3);
  EXPECT_NE(attempts[0].output_tail.find("hello default"), std::string::npos)
      << attempts[0].output_tail;
  EXPECT_EQ(attempts[0].log_path, dir_ + "/logs/j/1/attempt-1.log");
  EXPECT_TRUE(std::filesystem::exists(attempts[0].log_path));
}

TEST_F(DispatcherTest, TimeoutRetriesAnIdempotentStepAndMakesAnUnsafeOneUnknown) {
  for (bool idempotent : {true, false}) {
    SCOPED_TRACE(idempotent);
    TearDown();
    SetUp();
    config_.jobs.clear();
    AddJob({Step("work", idempotent)});
    config_.jobs[0].executor = config::Executor::kSubprocess;
    config_.jobs[0].steps[0].timeout = seconds{1};
    config_.jobs[0].steps[0].command = {"/bin/sleep", "30"};
    PlanAndRelease();
    Dispatcher& d = NewDispatcher("n1", &RealClock());
    EXPECT_EQ(RunDue(d), 1);
    const auto run = OnlyRun();
    EXPECT_EQ(run.state, idempotent ? RunState::kPending : RunState::kUnknown);
    const auto attempts = *store_->AttemptList(run.id);
    ASSERT_EQ(attempts.size(), 1u);
    EXPECT_EQ(attempts[0].end_class, "timeout");
    EXPECT_FALSE(attempts[0].exit_status.has_value()) << "a timeout has no exit status, never 0";
  }
}

TEST_F(DispatcherTest, MissingCommandIsASpawnFailure) {
  AddJob({Step("work")});
  config_.jobs[0].executor = config::Executor::kSubprocess;
  config_.jobs[0].steps[0].command = {dir_ + "/no-such-program"};
  PlanAndRelease();
  Dispatcher& d = NewDispatcher();
  RunDue(d);
  const auto run = OnlyRun();
  EXPECT_EQ(run.state, RunState::kFailed);
  const auto attempts = *store_->AttemptList(run.id);
  EXPECT_EQ(attempts[0].end_class, "spawn_failed");
  EXPECT_NE(attempts[0].output_tail.find("No such file or directory"), std::string::npos)
      << attempts[0].output_tail;
}

TEST_F(DispatcherTest, AStalledWorkerIsFencedOffAndItsRunFinishedByAnother) {
  ledger::RetryPolicy retry;
  retry.initial_backoff = milliseconds{0};
  retry.jitter = 0.0;
  AddJob({Step("work", /*idempotent=*/true)}, retry);
  std::atomic<int> calls{0};
  std::atomic<bool> first_started{false};
  handlers_.Register("j", [&](const RunContext& ctx) {
    if (++calls == 1) {
      first_started = true;
      // "Stalled": does not return until told its lease is gone.
      while (!ctx.cancel.stop_requested()) usleep(1000);
      return 0;  // it believes it succeeded; its write must not count
    }
    return 0;
  });
  PlanAndRelease();
  Dispatcher& stalled = NewDispatcher("n1");
  ASSERT_EQ(*stalled.ClaimOnce(clock_.Now()), 1);
  while (!first_started) usleep(1000);
  // No heartbeat arrives; the lease (3 x 60 s) expires and the reaper takes it.
  clock_.Advance(minutes{4});
  Reaper reaper(config_, *store_);
  ASSERT_EQ(*reaper.RunOnce(clock_.Now()), 1);
  EXPECT_EQ(OnlyRun().state, RunState::kPending);  // idempotent: retried
  Dispatcher& other = NewDispatcher("n2");
  EXPECT_EQ(RunDue(other), 1);
  EXPECT_EQ(OnlyRun().state, RunState::kSucceeded);
  // The stalled worker wakes: its heartbeat is rejected, its step cancelled,
  // and it writes nothing.
  stalled.HeartbeatOnce(clock_.Now());
  stalled.WaitIdle();
  EXPECT_GE(stalled.counters().stale_writes_rejected.load(), 1);
  EXPECT_EQ(stalled.counters().succeeded.load(), 0);
  EXPECT_GE(Events("stale_write_rejected").size(), 1u);
  const auto attempts = *store_->AttemptList(OnlyRun().id);
  ASSERT_EQ(attempts.size(), 2u);
  EXPECT_EQ(attempts[0].end_class, "lease_expired");
  EXPECT_EQ(attempts[0].node, "n1");
  EXPECT_EQ(attempts[1].end_class, "succeeded");
  EXPECT_EQ(attempts[1].node, "n2");
  EXPECT_EQ(Events("succeeded").size(), 1u);
}

TEST_F(DispatcherTest, ExpiredLeaseOfAnUnsafeStepMakesTheRunUnknown) {
  AddJob({Step("send", /*idempotent=*/false)});
  std::atomic<bool> started{false};
  handlers_.Register("j", [&](const RunContext& ctx) {
    started = true;
    while (!ctx.cancel.stop_requested()) usleep(1000);
    return 0;
  });
  PlanAndRelease();
  Dispatcher& d = NewDispatcher();
  ASSERT_EQ(*d.ClaimOnce(clock_.Now()), 1);
  while (!started) usleep(1000);
  clock_.Advance(minutes{4});
  Reaper reaper(config_, *store_);
  ASSERT_EQ(*reaper.RunOnce(clock_.Now()), 1);
  const auto run = OnlyRun();
  EXPECT_EQ(run.state, RunState::kUnknown);
  const auto unknown = Events("unknown");
  ASSERT_EQ(unknown.size(), 1u);
  EXPECT_EQ(unknown[0].actor, "reaper");
  EXPECT_EQ(unknown[0].reason,
            "lease_expired of a step that is not idempotent: it may have had its effect");
  d.HeartbeatOnce(clock_.Now());
  d.WaitIdle();
  EXPECT_EQ(OnlyRun().state, RunState::kUnknown);
}

TEST_F(DispatcherTest, HeartbeatsKeepALongStepAlive) {
  std::atomic<bool> release{false};
  Dispatcher& d = ClaimARunHeldUntil(release);
  Reaper reaper(config_, *store_);
  for (int i = 0; i < 10; ++i) {  // 10 minutes, lease 3 minutes, heartbeat each minute
    clock_.Advance(minutes{1});
    d.HeartbeatOnce(clock_.Now());
    ASSERT_EQ(*reaper.RunOnce(clock_.Now()), 0);
  }
  release = true;
  d.WaitIdle();
  EXPECT_EQ(OnlyRun().state, RunState::kSucceeded);
  EXPECT_EQ(d.counters().stale_writes_rejected.load(), 0);
}

// A heartbeat picked as due while the run is ending is not sent after the
// run's last write: the token it carries is no longer the run's by then,
// and its refusal would be a stale_write_rejected (an event, a counter, a
// warning) from a worker that did nothing wrong.
TEST_F(DispatcherTest, AHeartbeatRacingTheRunsEndIsNotAStaleWrite) {
  AddJob({Step("work")});
  std::atomic<bool> started{false};
  std::atomic<bool> release{false};
  handlers_.Register("j", [&](const RunContext&) {
    started = true;
    while (!release) usleep(1000);
    return 0;
  });
  PlanAndRelease();
  runners_.push_back(std::make_unique<DefaultStepRunner>(config_, clock_, &handlers_));
  DispatcherOptions o;
  o.node = "n1";
  o.jitter_seed = 42;
  o.handlers = &handlers_;
  Dispatcher* d = nullptr;
  int picked = 0;
  o.before_heartbeat = [&](int64_t) {
    ++picked;
    // The run ends between the pick and the send.
    release = true;
    for (int i = 0; i < 30000 && d->counters().succeeded < 1; ++i) usleep(1000);
  };
  dispatchers_.push_back(
      std::make_unique<Dispatcher>(config_, *store_, clock_, *runners_.back(), o));
  d = dispatchers_.back().get();
  ASSERT_EQ(*d->ClaimOnce(clock_.Now()), 1);
  while (!started) usleep(1000);
  clock_.Advance(minutes{1});  // lease 3 minutes: a heartbeat is due
  d->HeartbeatOnce(clock_.Now());
  d->WaitIdle();
  EXPECT_EQ(picked, 1);
  EXPECT_EQ(d->counters().succeeded.load(), 1);
  EXPECT_EQ(d->counters().stale_writes_rejected.load(), 0);
  EXPECT_TRUE(Events("stale_write_rejected").empty());
  EXPECT_EQ(OnlyRun().state, RunState::kSucceeded);
}

// A wall clock stepped back (NTP, a resumed VM) does not hold heartbeats
// back: their interval is measured on the steady clock. Were it measured on
// the wall clock, none would be sent for the hour stepped back, and on
// PostgreSQL the lease would expire on the database's clock meanwhile.
TEST_F(DispatcherTest, AWallClockSteppedBackDoesNotHoldHeartbeatsBack) {
  std::atomic<bool> release{false};
  Dispatcher& d = ClaimARunHeldUntil(release);
  const int64_t id = OnlyRun().id;
  clock_.StepWallClock(-hours{1});
  for (int i = 0; i < 3; ++i) {  // lease 3 minutes: a heartbeat is due each minute
    clock_.Advance(minutes{1});
    d.HeartbeatOnce(clock_.Now());
    auto lease = store_->RunGetLease(id);
    ASSERT_TRUE(lease.ok()) << lease.status().ToString();
    EXPECT_EQ(lease->expires_at, store::ToInstant(clock_.Now() + minutes{3})) << "minute " << i;
  }
  release = true;
  d.WaitIdle();
  EXPECT_EQ(OnlyRun().state, RunState::kSucceeded);
}

// The loop's poll is an interval, slept on the steady clock. On the wall
// clock, a clock stepped back an hour (here: standing still, which
// WrongWallClock's wall reading does) would hold the loop asleep for the
// hour: no run released meanwhile would be claimed, no lease heartbeated.
TEST_F(DispatcherTest, AWallClockSteppedBackDoesNotStopThePoll) {
  AddJob({Step("work")});
  std::atomic<int> ran{0};
  handlers_.Register("j", [&](const RunContext&) {
    ++ran;
    return 0;
  });
  WrongWallClock standing_still(Clock::Duration::zero(), At("2026-11-05T09:00:30Z"));
  DefaultStepRunner runner(config_, standing_still, &handlers_);
  DispatcherOptions o;
  o.node = "n1";
  o.max_workers = 2;
  o.poll = milliseconds{20};
  o.handlers = &handlers_;
  Dispatcher d(config_, *store_, standing_still, runner, o);
  d.Start();
  // The first look finds nothing: the loop sleeps its poll.
  while (d.counters().polls.load() < 1) usleep(1000);
  // Released without Wake(): only a poll finds it.
  PlanAndRelease();
  const int64_t polls = d.counters().polls.load();
  // The loop counts a poll after its claim returns: the run may be claimed
  // and run before the count moves, so both are waited for.
  for (int i = 0; i < 10'000 && (ran.load() == 0 || d.counters().polls.load() <= polls); ++i) {
    usleep(1000);  // a hang guard
  }
  EXPECT_EQ(ran.load(), 1) << "the dispatcher stopped polling";
  EXPECT_GT(d.counters().polls.load(), polls);
  d.WaitIdle();
  d.Drain(milliseconds{0});
  EXPECT_EQ(OnlyRun().state, RunState::kSucceeded);
}

// The drain's grace is an interval too: a wall clock stepped forward while
// serve drains (NTP at shutdown) does not cancel at once the steps that
// `drain_timeout` leaves time to finish.
TEST_F(DispatcherTest, AWallClockSteppedForwardDoesNotCutTheDrainShort) {
  AddJob({Step("work", /*idempotent=*/false)});
  std::atomic<bool> started{false};
  std::atomic<bool> release{false};
  std::atomic<bool> cancelled{false};
  handlers_.Register("j", [&](const RunContext& ctx) {
    started = true;
    while (!release) usleep(1000);
    cancelled = ctx.cancel.stop_requested();
    return 0;
  });
  PlanAndRelease();
  Dispatcher& d = NewDispatcher();
  ASSERT_EQ(*d.ClaimOnce(clock_.Now()), 1);
  while (!started) usleep(1000);
  std::thread ntp([&] {
    usleep(100'000);  // the drain is waiting (it looks every 100 ms)
    clock_.StepWallClock(hours{1});
    usleep(300'000);  // a wall-clock drain would have cancelled by now
    release = true;
  });
  d.Drain(seconds{30});
  ntp.join();
  EXPECT_FALSE(cancelled.load()) << "the step was cancelled within its drain time";
  EXPECT_EQ(OnlyRun().state, RunState::kSucceeded);
}

// The serve loop sleeps until the next run falls due, releases it at that
// instant and wakes the dispatcher, which claims it at once: the fake clock
// never moves past the due instant here, so the dispatcher's own poll could
// not have found it.
TEST_F(DispatcherTest, ServeLoopWakesAtTheDueInstantAndTheDispatcherAtOnce) {
  AddJob({Step("work")});
  config_.jobs[0].schedule = "* * * * *";
  std::promise<std::string> ran;
  std::atomic<int> calls{0};
  handlers_.Register("j", [&](const RunContext& ctx) {
    if (calls++ == 0) ran.set_value(ctx.run_key + " at " + FormatUtc(ctx.scheduled_at));
    return 0;
  });
  Planner planner(config_, *store_, clock_);
  Reaper reaper(config_, *store_);
  Dispatcher& d = NewDispatcher();
  ServeLoopOptions options;
  options.max_sleep = std::chrono::hours{1};
  ServeLoop loop(config_, planner, reaper, d, clock_, options);

  clock_.Set(At("2026-11-05T08:58:30Z"));
  // Plans 08:59 (within the minute of lookahead) and sleeps until it is due.
  EXPECT_EQ(loop.PassOnce(clock_.Now()), At("2026-11-05T08:59:00Z"));
  EXPECT_EQ(OnlyRun().state, ledger::RunState::kPending);
  EXPECT_FALSE(OnlyRun().released) << "nothing is claimable before it is due";

  clock_.Set(At("2026-11-05T08:59:00Z"));
  d.Start();
  while (d.counters().polls < 1) std::this_thread::yield();  // asleep on the frozen clock
  // Released and the dispatcher woken; planning waits a moment so that it
  // does not hold the store while the released runs are claimed.
  EXPECT_EQ(loop.PassOnce(clock_.Now()), At("2026-11-05T08:59:00Z") + milliseconds(250));
  auto started = ran.get_future();
  ASSERT_EQ(started.wait_for(std::chrono::seconds(60)), std::future_status::ready)
      << "released but never claimed: the dispatcher was not woken";
  EXPECT_EQ(started.get(), "j/default/2026-11-05T08:59+00:00 at 2026-11-05T08:59:00Z");
  // The deferred planning pass plans 09:00 and sleeps until it is due.
  EXPECT_EQ(loop.PassOnce(At("2026-11-05T08:59:00Z") + milliseconds(250)),
            At("2026-11-05T09:00:00Z"));
  d.Drain(milliseconds{0});
}

// With the default longest sleep, an idle loop still comes back within a
// second (the reaper, and work planned elsewhere).
TEST_F(DispatcherTest, ServeLoopSleepsAtMostTheLongestSleep) {
  AddJob({Step("work")});
  Planner planner(config_, *store_, clock_);
  Reaper reaper(config_, *store_);
  Dispatcher& d = NewDispatcher();
  ServeLoop loop(config_, planner, reaper, d, clock_);
  clock_.Set(At("2026-11-05T10:00:00Z"));
  EXPECT_EQ(loop.PassOnce(clock_.Now()), At("2026-11-05T10:00:01Z"));
}

// With the ledger in its options, each pass says the node is alive and
// purges finished runs past retention, keeping what the gap scanner still
// looks at.
TEST_F(DispatcherTest, ServeLoopBeatsForTheNodeAndPurgesFinishedRunsPastRetention) {
  AddJob({Step("work")});
  config_.server.retention = std::chrono::hours{24 * 10};
  config_.jobs[0].backfill.horizon = std::chrono::hours{24 * 30};
  handlers_.Register("j", [](const RunContext&) { return 0; });
  PlanAndRelease();
  Dispatcher& d = NewDispatcher();
  ASSERT_EQ(RunDue(d), 1);
  ASSERT_EQ(OnlyRun().state, ledger::RunState::kSucceeded);
  const int64_t id = OnlyRun().id;

  Planner planner(config_, *store_, clock_);
  Reaper reaper(config_, *store_);
  ServeLoopOptions options;
  options.store = store_.get();
  options.node = {"n1", "0.1.0", "127.0.0.1:8377", store::ToInstant(At("2026-11-05T08:00:00Z")),
                  {}};
  ServeLoop loop(config_, planner, reaper, d, clock_, options);
  // 20 days on: past retention (10d) but within the backfill horizon (30d).
  (void)loop.PassOnce(At("2026-11-25T09:00:00Z"));
  EXPECT_TRUE(store_->RunGet(id).ok()) << "purged while the gap scanner still looks at it";
  auto nodes = *store_->NodeList();
  ASSERT_EQ(nodes.size(), 1u);
  EXPECT_EQ(nodes[0].last_seen_at, store::ToInstant(At("2026-11-25T09:00:00Z")));
  // Another node stopped for good after that pass; a third beat 23 h
  // before the next.
  ASSERT_TRUE(store_->NodeHeartbeat({"gone", "0.1.0", "127.0.0.1:8378",
                                     store::ToInstant(At("2026-11-05T08:00:00Z")),
                                     store::ToInstant(At("2026-11-25T09:00:05Z"))})
                  .ok());
  ASSERT_TRUE(store_->NodeHeartbeat({"quiet", "0.1.0", "127.0.0.1:8379",
                                     store::ToInstant(At("2026-11-05T08:00:00Z")),
                                     store::ToInstant(At("2026-12-06T11:00:00Z"))})
                  .ok());
  // Past both (and the next hourly purge is due).
  (void)loop.PassOnce(At("2026-12-07T10:00:00Z"));
  EXPECT_EQ(store_->RunGet(id).status().code(), StatusCode::kNotFound);
  nodes = *store_->NodeList();
  ASSERT_EQ(nodes.size(), 2u) << "a node not seen for a day is forgotten";
  EXPECT_EQ(nodes[0].node, "n1");
  EXPECT_EQ(nodes[0].last_seen_at, store::ToInstant(At("2026-12-07T10:00:00Z")));
  EXPECT_EQ(nodes[1].node, "quiet");
  d.Drain(milliseconds{0});
}

}  // namespace
}  // namespace cronledger::engine
