// engine::EffectWriter, the group commit of effect writes, against a real
// SQLite store: 16 threads at once, each with its own claimed run.
#include "engine/effect_writer.h"

#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "cronledger/schedule.h"
#include "store/sqlite/sqlite_store.h"

namespace cronledger::engine {
namespace {

using store::EffectBeginOutcome;

constexpr int kThreads = 16;

store::Instant At(const std::string& rfc3339) {
  return std::chrono::time_point_cast<std::chrono::milliseconds>(*ParseRfc3339(rfc3339));
}

class EffectWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/cronledger-effect-writer-XXXXXX";
    dir_ = mkdtemp(tmpl);
    store::SqliteOptions o;
    o.path = dir_ + "/ledger.db";
    o.synchronous_full = false;
    store_ = std::move(store::SqliteStore::Open(o)).value();
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  // `n` claimed runs of job "j" (partitions p00, p01, ...), one attempt each.
  std::vector<store::ClaimedRun> ClaimRuns(int n) {
    EXPECT_TRUE(store_->JobSync({"j", R"({"schedule":"0 9 * * *"})", At("2026-11-01T00:00:00Z")})
                    .ok());
    store::PlannedOccurrence o;
    o.scheduled_at = *ParseRfc3339("2026-11-05T09:00:00Z");
    o.local_time = "2026-11-05T09:00:00Z";
    o.job_version = 1;
    o.tzdata = "2025b";
    for (int i = 0; i < n; ++i) o.runs.push_back({fmt::format("p{:02d}", i), "2026-11-05", "2026-11-05"});
    store::PlanParams plan;
    plan.job = "j";
    plan.occurrences = {o};
    plan.planned_through = o.scheduled_at;
    plan.now = At("2026-11-05T08:00:00Z");
    EXPECT_TRUE(store_->RunPlan(plan).ok());
    store::ReleaseParams r;
    r.job = "j";
    r.policy.misfire_grace = std::chrono::hours{24};
    r.now = At("2026-11-05T12:00:00Z");
    EXPECT_TRUE(store_->RunRelease(r).ok());
    store::ClaimRule rule;
    rule.job = "j";
    rule.overlap = ledger::Overlap::kAllow;
    rule.steps = {"deliver"};
    auto claimed = store_->RunClaim({At("2026-11-05T12:00:00Z"), "n1", n, {rule}});
    EXPECT_TRUE(claimed.ok());
    EXPECT_EQ(claimed->size(), static_cast<std::size_t>(n));
    return *claimed;
  }

  // Ends `c`'s attempt (a retry): its token is stale from now on.
  void EndAttempt(const store::ClaimedRun& c) {
    store::FinishParams f;
    f.run_id = c.run.id;
    f.token = c.token;
    f.now = At("2026-11-05T12:00:30Z");
    f.node = "n1";
    f.end_class = ledger::EndClass::kRetryable;
    f.decision.state = ledger::RunState::kPending;
    auto r = store_->RunFinishAttempts({f});
    ASSERT_TRUE(r.ok() && r->at(0).ok());
  }

  static store::EffectBeginParams BeginParams(const store::ClaimedRun& c, const std::string& key,
                                              const std::string& fingerprint = "") {
    return {c.run.id, c.token, key, fingerprint, At("2026-11-05T12:01:00Z"), "n1", ""};
  }

  static store::EffectCommitParams CommitParams(const store::ClaimedRun& c, const std::string& key,
                                                const std::string& result) {
    store::EffectCommitParams p;
    p.run_id = c.run.id;
    p.token = c.token;
    p.key = key;
    p.exit_status = 0;
    p.result = result;
    p.now = At("2026-11-05T12:02:00Z");
    p.node = "n1";
    return p;
  }

  size_t EventCount(const std::string& type) {
    store::EventQuery q;
    q.job = "j";
    q.type = type;
    q.limit = 100000;
    return store_->EventList(q)->size();
  }

  std::string dir_;
  std::unique_ptr<store::SqliteStore> store_;
};

TEST_F(EffectWriterTest, SixteenThreadsCommitEveryEffectExactlyOnce) {
  constexpr int kEffects = 40;
  const auto runs = ClaimRuns(kThreads);
  EffectWriter writer(*store_);
  std::atomic<int> shared_proceeded{0};
  std::vector<std::string> problems(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const store::ClaimedRun& c = runs[t];
      std::string& problem = problems[t];
      // One key every thread wants: exactly one of them proceeds.
      auto shared = writer.Begin(BeginParams(c, "shared"));
      if (shared.ok() && shared->outcome == EffectBeginOutcome::kProceed) {
        ++shared_proceeded;
        if (!writer.Commit(CommitParams(c, "shared", std::to_string(t))).ok()) problem += "shared;";
      } else if (!shared.ok() && shared.status().code() != StatusCode::kConflict) {
        problem += "shared: " + shared.status().ToString() + ";";
      }
      for (int i = 0; i < kEffects; ++i) {
        const std::string key = fmt::format("k/{}/{}", t, i);
        auto begun = writer.Begin(BeginParams(c, key, "fp"));
        if (!begun.ok()) {
          problem += key + ": " + begun.status().ToString() + ";";
          continue;
        }
        // Each answer is this caller's own.
        if (begun->outcome != EffectBeginOutcome::kProceed || begun->effect.key != key ||
            begun->effect.started_token != c.token || begun->effect.run_id != c.run.id) {
          problem += key + ": wrong answer;";
          continue;
        }
        const Status committed = writer.Commit(CommitParams(c, key, key + " done"));
        if (!committed.ok()) problem += key + ": " + committed.ToString() + ";";
        // Asked again, it replays.
        auto again = writer.Begin(BeginParams(c, key, "fp"));
        if (!again.ok() || again->outcome != EffectBeginOutcome::kReplay ||
            again->effect.result != key + " done") {
          problem += key + ": no replay;";
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(problems[t], "") << "thread " << t;
  EXPECT_EQ(shared_proceeded.load(), 1);

  for (int t = 0; t < kThreads; ++t) {
    for (int i = 0; i < kEffects; ++i) {
      const std::string key = fmt::format("k/{}/{}", t, i);
      auto e = store_->EffectGet("j", key);
      ASSERT_TRUE(e.ok()) << key;
      EXPECT_EQ(e->state, ledger::EffectState::kCommitted) << key;
      EXPECT_EQ(e->result, key + " done");
      EXPECT_EQ(e->settled_token, runs[t].token) << key;
    }
  }
  EXPECT_EQ(store_->EffectGet("j", "shared")->state, ledger::EffectState::kCommitted);
  EXPECT_EQ(EventCount("effect_started"), static_cast<size_t>(kThreads * kEffects + 1));
  EXPECT_EQ(EventCount("effect_committed"), static_cast<size_t>(kThreads * kEffects + 1));
  const auto& n = writer.counters();
  EXPECT_EQ(n.failed_batches.load(), 0);
  EXPECT_GE(n.ops.load(), kThreads * kEffects * 3 + kThreads);
  EXPECT_LE(n.batches.load(), n.ops.load());
  EXPECT_EQ(writer.Queued(), 0);
}

TEST_F(EffectWriterTest, AStaleCallerIsRefusedWhileTheOthersCommit) {
  constexpr int kEffects = 20;
  const auto runs = ClaimRuns(kThreads);
  EndAttempt(runs[0]);  // thread 0 is an attempt that is over
  EffectWriter writer(*store_);
  std::vector<std::string> problems(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const store::ClaimedRun& c = runs[t];
      for (int i = 0; i < kEffects; ++i) {
        const std::string key = fmt::format("k/{}/{}", t, i);
        auto begun = writer.Begin(BeginParams(c, key));
        const Status committed = writer.Commit(CommitParams(c, key, "ok"));
        store::CheckpointSetParams mark{c.run.id, c.token, ledger::CheckpointScope::kRun,
                                        std::to_string(i), At("2026-11-05T12:02:00Z"), "n1"};
        const Status marked = writer.SetCheckpoint(mark);
        if (t == 0) {
          if (begun.status().code() != StatusCode::kStaleLease ||
              committed.code() != StatusCode::kStaleLease ||
              marked.code() != StatusCode::kStaleLease) {
            problems[t] += key + ": not fenced;";
          }
        } else if (!begun.ok() || !committed.ok() || !marked.ok()) {
          problems[t] += key + ": " + begun.status().ToString() + " " + committed.ToString() +
                         " " + marked.ToString() + ";";
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(problems[t], "") << "thread " << t;
  for (int i = 0; i < kEffects; ++i) {
    EXPECT_EQ(store_->EffectGet("j", fmt::format("k/0/{}", i)).status().code(),
              StatusCode::kNotFound);
  }
  EXPECT_FALSE(store_->CheckpointGet(runs[0].run.id)->run.has_value());
  for (int t = 1; t < kThreads; ++t) {
    EXPECT_EQ(store_->EffectGet("j", fmt::format("k/{}/{}", t, kEffects - 1))->state,
              ledger::EffectState::kCommitted);
    EXPECT_EQ(store_->CheckpointGet(runs[t].run.id)->run->value, std::to_string(kEffects - 1));
  }
  EXPECT_EQ(EventCount("stale_write_rejected"), static_cast<size_t>(3 * kEffects));
  EXPECT_EQ(EventCount("effect_committed"), static_cast<size_t>((kThreads - 1) * kEffects));
}

// Holds the first statement starting with `at` until released, so that the
// other callers queue behind it; optionally fails the second COMMIT.
class Gate {
 public:
  explicit Gate(std::string_view at, bool fail_second_commit = false)
      : at_(at), fail_second_(fail_second_commit) {}

  store::sqlite::StatementHook Hook() {
    return [this](std::string_view sql) -> Status {
      std::unique_lock lock(mu_);
      if (sql.substr(0, at_.size()) == at_ && !held_) {
        held_ = true;
        cv_.notify_all();
        cv_.wait(lock, [&] { return released_; });
      }
      if (sql != "COMMIT") return Status::Ok();
      const int n = ++commits_;
      if (n == 2 && fail_second_) return Status(StatusCode::kIOError, "injected: disk I/O error");
      return Status::Ok();
    };
  }
  void WaitHeld() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return held_; });
  }
  void Release() {
    std::lock_guard lock(mu_);
    released_ = true;
    cv_.notify_all();
  }

  int commits() {
    std::lock_guard lock(mu_);
    return commits_;
  }

 private:
  const std::string at_;
  const bool fail_second_;
  std::mutex mu_;
  std::condition_variable cv_;
  int commits_ = 0;
  bool held_ = false;
  bool released_ = false;
};

TEST_F(EffectWriterTest, CallersQueuedBehindABatchCommitTogetherEachAnsweredOnItsOwn) {
  const auto runs = ClaimRuns(kThreads + 1);
  const store::ClaimedRun& first = runs[0];
  EndAttempt(runs[1]);  // runs[1]'s caller is stale
  ASSERT_TRUE(store_->EffectBegin(BeginParams(runs[2], "taken", "v1")).ok());
  Gate gate("COMMIT");
  store_->SetStatementHook(gate.Hook());
  EffectWriter writer(*store_);

  // The first caller leads a batch of one and is held at its COMMIT.
  std::thread leader([&] { EXPECT_TRUE(writer.Begin(BeginParams(first, "first")).ok()); });
  gate.WaitHeld();
  // Sixteen more arrive meanwhile and queue.
  std::vector<Result<store::EffectBeginResult>> answers(kThreads, Status(StatusCode::kInternal, "unset"));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const store::ClaimedRun& c = runs[t + 1];
      // runs[2] asks for "taken" with another fingerprint: a mismatch.
      answers[t] = t == 1 ? writer.Begin(BeginParams(c, "taken", "v2"))
                          : writer.Begin(BeginParams(c, fmt::format("k/{}", t)));
    });
  }
  while (writer.Queued() < kThreads) std::this_thread::yield();
  gate.Release();
  leader.join();
  for (auto& t : threads) t.join();
  store_->SetStatementHook(nullptr);

  // One transaction for the sixteen, each with its own answer.
  EXPECT_EQ(writer.counters().batches.load(), 2);
  EXPECT_EQ(writer.counters().largest_batch.load(), kThreads);
  EXPECT_EQ(answers[0].status().code(), StatusCode::kStaleLease);
  EXPECT_EQ(answers[1].status().code(), StatusCode::kFailedPrecondition);
  for (int t = 2; t < kThreads; ++t) {
    ASSERT_TRUE(answers[t].ok()) << t << ": " << answers[t].status().ToString();
    EXPECT_EQ(answers[t]->outcome, EffectBeginOutcome::kProceed);
    EXPECT_EQ(answers[t]->effect.key, fmt::format("k/{}", t));
    EXPECT_EQ(answers[t]->effect.started_token, runs[t + 1].token);
    EXPECT_EQ(store_->EffectGet("j", fmt::format("k/{}", t))->state, ledger::EffectState::kStarted);
  }
  EXPECT_EQ(store_->EffectGet("j", "k/0").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->EffectGet("j", "taken")->fingerprint, "v1");
  EXPECT_EQ(EventCount("stale_write_rejected"), 1u);
}

// Callers that queue while the store applies a batch's ops (before its
// COMMIT) join that batch: one transaction, one fsync for all of them.
TEST_F(EffectWriterTest, CallersArrivingWhileABatchIsAppliedJoinIt) {
  const auto runs = ClaimRuns(kThreads);
  Gate gate("INSERT INTO effects");  // the leader's own begin, mid-transaction
  store_->SetStatementHook(gate.Hook());
  EffectWriter writer(*store_);
  std::thread leader([&] { EXPECT_TRUE(writer.Begin(BeginParams(runs[0], "first")).ok()); });
  gate.WaitHeld();
  std::vector<Status> answers(kThreads - 1);
  std::vector<std::thread> threads;
  for (int t = 1; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      answers[t - 1] = writer.Begin(BeginParams(runs[t], fmt::format("k/{}", t))).status();
    });
  }
  while (writer.Queued() < kThreads - 1) std::this_thread::yield();
  gate.Release();
  leader.join();
  for (auto& t : threads) t.join();
  store_->SetStatementHook(nullptr);

  EXPECT_EQ(writer.counters().batches.load(), 1);
  EXPECT_EQ(writer.counters().largest_batch.load(), kThreads);
  EXPECT_EQ(gate.commits(), 1);
  for (int t = 1; t < kThreads; ++t) {
    EXPECT_TRUE(answers[t - 1].ok()) << t << ": " << answers[t - 1].ToString();
    EXPECT_EQ(store_->EffectGet("j", fmt::format("k/{}", t))->started_token, runs[t].token);
  }
}

TEST_F(EffectWriterTest, ABatchThatFailsToCommitFailsEveryCallerInIt) {
  const auto runs = ClaimRuns(kThreads + 1);
  Gate gate("COMMIT", /*fail_second_commit=*/true);
  store_->SetStatementHook(gate.Hook());
  EffectWriter writer(*store_);
  std::thread leader([&] { EXPECT_TRUE(writer.Begin(BeginParams(runs[0], "first")).ok()); });
  gate.WaitHeld();
  std::vector<Status> answers(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      answers[t] = writer.Begin(BeginParams(runs[t + 1], fmt::format("k/{}", t))).status();
    });
  }
  while (writer.Queued() < kThreads) std::this_thread::yield();
  gate.Release();
  leader.join();
  for (auto& t : threads) t.join();
  store_->SetStatementHook(nullptr);

  EXPECT_EQ(writer.counters().batches.load(), 2);
  EXPECT_EQ(writer.counters().failed_batches.load(), 1);
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(answers[t].code(), StatusCode::kIOError) << t << ": " << answers[t].ToString();
    // Not durable, so not claimed: a retried begin proceeds.
    EXPECT_EQ(store_->EffectGet("j", fmt::format("k/{}", t)).status().code(),
              StatusCode::kNotFound);
  }
  EXPECT_EQ(store_->EffectGet("j", "first")->state, ledger::EffectState::kStarted);
  auto retried = writer.Begin(BeginParams(runs[1], "k/0"));
  ASSERT_TRUE(retried.ok()) << retried.status().ToString();
  EXPECT_EQ(retried->outcome, EffectBeginOutcome::kProceed);
}

}  // namespace
}  // namespace cronledger::engine
