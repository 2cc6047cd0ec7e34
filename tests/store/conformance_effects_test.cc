// Store conformance: effects (idempotency keys scoped to a job), in-doubt
// detection, operator resolution, and checkpoints (docs/effects.md).
#include <atomic>
#include <span>
#include <thread>

#include "store/conformance.h"

namespace cronledger::testing {
namespace {

using ledger::CheckpointScope;
using ledger::EffectState;
using ledger::EndClass;
using ledger::RunState;
using ledger::StepStatus;
using store::EffectBeginOutcome;

class StoreEffects : public StoreConformance {
 protected:
  Result<store::EffectBeginResult> Begin(const store::ClaimedRun& c, const std::string& key,
                                         const std::string& fingerprint = "",
                                         const std::string& now = "2026-11-05T12:01:00Z") {
    return S().EffectBegin({c.run.id, c.token, key, fingerprint, InstantAt(now), "n1", ""});
  }

  Status Commit(const store::ClaimedRun& c, const std::string& key, const std::string& result,
                std::optional<store::CheckpointWrite> checkpoint = std::nullopt,
                const std::string& now = "2026-11-05T12:02:00Z") {
    store::EffectCommitParams p;
    p.run_id = c.run.id;
    p.token = c.token;
    p.key = key;
    p.exit_status = 0;
    p.result = result;
    p.checkpoint = std::move(checkpoint);
    p.now = InstantAt(now);
    p.node = "n1";
    return S().EffectCommit(p);
  }

  Status Fail(const store::ClaimedRun& c, const std::string& key, int exit_status = 1,
              const std::string& now = "2026-11-05T12:02:00Z") {
    store::EffectFailParams p;
    p.run_id = c.run.id;
    p.token = c.token;
    p.key = key;
    p.exit_status = exit_status;
    p.result = "";
    p.now = InstantAt(now);
    p.node = "n1";
    return S().EffectFail(p);
  }

  store::EffectRecord Effect(const std::string& key, const std::string& job = "j") {
    auto e = S().EffectGet(job, key);
    EXPECT_TRUE(e.ok()) << e.status().ToString();
    return e.ok() ? *e : store::EffectRecord{};
  }

  RunState StateOf(int64_t id) { return S().RunGet(id)->state; }

  static bool Has(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
  }
};

TEST_P(StoreEffects, FirstBeginProceedsAndIsDurable) {
  Setup({"a"});
  const auto c = ClaimOne("2026-11-05T12:00:00Z");
  auto r = Begin(c, "mail:acme:2026-11-05", "sha256:1");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->outcome, EffectBeginOutcome::kProceed);
  EXPECT_EQ(r->effect.state, EffectState::kStarted);
  EXPECT_EQ(r->effect.started_token, c.token);
  // Durable once the begin answered: another connection (a restart) sees it.
  Reopen();
  const auto e = Effect("mail:acme:2026-11-05");
  EXPECT_EQ(e.job, "j");
  EXPECT_EQ(e.state, EffectState::kStarted);
  EXPECT_EQ(e.fingerprint, "sha256:1");
  EXPECT_EQ(e.run_id, c.run.id);
  EXPECT_EQ(e.run_key, "j/a/T09:00");
  EXPECT_EQ(e.started_attempt, 1);
  EXPECT_EQ(e.started_token, c.token);
  EXPECT_FALSE(e.settled_token.has_value());
  EXPECT_FALSE(e.exit_status.has_value());
  EXPECT_EQ(e.started_at, InstantAt("2026-11-05T12:01:00Z"));
  auto list = S().EffectList(c.run.id);
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ(list->at(0).key, "mail:acme:2026-11-05");
  // The same attempt beginning again (a retried request) proceeds again,
  // without a second record or event.
  auto again = Begin(c, "mail:acme:2026-11-05", "sha256:1", "2026-11-05T12:01:30Z");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->outcome, EffectBeginOutcome::kProceed);
  const auto started = Events("j", "effect_started");
  ASSERT_EQ(started.size(), 1u);
  EXPECT_EQ(started[0].actor, "n1");
  EXPECT_EQ(started[0].run_id, c.run.id);
  EXPECT_TRUE(Has(started[0].details, "\"key\":\"mail:acme:2026-11-05\"")) << started[0].details;
  EXPECT_EQ(S().EffectGet("j", "other").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(S().EffectGet("k", "mail:acme:2026-11-05").status().code(), StatusCode::kNotFound)
      << "keys are scoped to their job";
  EXPECT_EQ(Begin(c, "").status().code(), StatusCode::kInvalidArgument);
}

TEST_P(StoreEffects, CommitThenReplayReturnsTheStoredResult) {
  Setup({"a", "b"});
  const auto claimed = Claim("2026-11-05T12:00:00Z", 2);
  ASSERT_EQ(claimed.size(), 2u);
  const auto& c = claimed[0];
  ASSERT_EQ(Begin(c, "pay:42", "100 EUR")->outcome, EffectBeginOutcome::kProceed);
  ASSERT_TRUE(Commit(c, "pay:42", "txn-981\n").ok());
  auto e = Effect("pay:42");
  EXPECT_EQ(e.state, EffectState::kCommitted);
  EXPECT_EQ(e.exit_status, 0);
  EXPECT_EQ(e.result, "txn-981\n");
  EXPECT_EQ(e.settled_attempt, 1);
  EXPECT_EQ(e.settled_token, c.token);
  EXPECT_EQ(e.updated_at, InstantAt("2026-11-05T12:02:00Z"));
  ASSERT_EQ(Events("j", "effect_committed").size(), 1u);
  // Committing again by the same attempt (a retried request) is a no-op.
  EXPECT_TRUE(Commit(c, "pay:42", "txn-981\n").ok());
  const auto before = Events("j").size();
  Reopen();
  // Replays: the same attempt, and another run of the job.
  for (const auto* run : {&claimed[0], &claimed[1]}) {
    auto r = Begin(*run, "pay:42", "100 EUR", "2026-11-05T12:03:00Z");
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->outcome, EffectBeginOutcome::kReplay);
    EXPECT_EQ(r->effect.result, "txn-981\n");
    EXPECT_EQ(r->effect.exit_status, 0);
    EXPECT_EQ(r->effect.state, EffectState::kCommitted);
  }
  EXPECT_EQ(Events("j").size(), before) << "a replay writes nothing";
  EXPECT_EQ(Effect("pay:42").updated_at, InstantAt("2026-11-05T12:02:00Z"));
  // Committed at most once: failing it, or committing it from elsewhere, is refused.
  EXPECT_EQ(Fail(c, "pay:42").code(), StatusCode::kConflict);
  EXPECT_EQ(Commit(claimed[1], "pay:42", "again").code(), StatusCode::kConflict);
  EXPECT_EQ(Effect("pay:42").result, "txn-981\n");
  EXPECT_EQ(Commit(c, "never-begun", "x").code(), StatusCode::kNotFound);
}

TEST_P(StoreEffects, FingerprintMismatchNamesBothAndChangesNothing) {
  Setup({"a"});
  const auto c = ClaimOne("2026-11-05T12:00:00Z");
  ASSERT_EQ(Begin(c, "pay:42", "100 EUR")->outcome, EffectBeginOutcome::kProceed);
  const auto check = [&](const char* when) {
    const auto events = Events("j").size();
    const auto stored = Effect("pay:42");
    auto r = Begin(c, "pay:42", "200 EUR", "2026-11-05T12:04:00Z");
    ASSERT_FALSE(r.ok()) << when;
    EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition) << when;
    EXPECT_TRUE(Has(r.status().message(), "\"100 EUR\"")) << r.status().message();
    EXPECT_TRUE(Has(r.status().message(), "\"200 EUR\"")) << r.status().message();
    EXPECT_TRUE(Has(r.status().message(), "pay:42")) << r.status().message();
    const auto after = Effect("pay:42");
    EXPECT_EQ(after.state, stored.state) << when;
    EXPECT_EQ(after.fingerprint, "100 EUR") << when;
    EXPECT_EQ(after.updated_at, stored.updated_at) << when;
    EXPECT_EQ(Events("j").size(), events) << when;
  };
  check("started");
  ASSERT_TRUE(Commit(c, "pay:42", "ok").ok());
  check("committed");
  // The default fingerprint is empty, and differs from any other.
  auto r = Begin(c, "pay:42");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Has(r.status().message(), "\"\"")) << r.status().message();
}

TEST_P(StoreEffects, StaleTokensChangeNothingAndAreRecorded) {
  Setup({"a"});
  const auto c = ClaimOne("2026-11-05T12:00:00Z");
  ASSERT_EQ(Begin(c, "k1")->outcome, EffectBeginOutcome::kProceed);
  auto stale = c;
  stale.token = c.token + 1000;
  const auto begin = Begin(stale, "k2");
  EXPECT_EQ(begin.status().code(), StatusCode::kStaleLease);
  EXPECT_EQ(Commit(stale, "k1", "x", store::CheckpointWrite{CheckpointScope::kRun, "9"}).code(),
            StatusCode::kStaleLease);
  EXPECT_EQ(Fail(stale, "k1").code(), StatusCode::kStaleLease);
  store::CheckpointSetParams cp{c.run.id, stale.token, CheckpointScope::kPartition, "7",
                                InstantAt("2026-11-05T12:02:00Z"), "n2"};
  EXPECT_EQ(S().CheckpointSet(cp).code(), StatusCode::kStaleLease);
  // Nothing changed.
  EXPECT_EQ(S().EffectGet("j", "k2").status().code(), StatusCode::kNotFound);
  const auto k1 = Effect("k1");
  EXPECT_EQ(k1.state, EffectState::kStarted);
  EXPECT_FALSE(k1.settled_token.has_value());
  auto checkpoints = S().CheckpointGet(c.run.id);
  ASSERT_TRUE(checkpoints.ok());
  EXPECT_FALSE(checkpoints->run.has_value());
  EXPECT_FALSE(checkpoints->partition.has_value());
  EXPECT_EQ(Events("j", "effect_started").size(), 1u);
  EXPECT_TRUE(Events("j", "effect_committed").empty());
  EXPECT_TRUE(Events("j", "effect_failed").empty());
  const auto rejected = Events("j", "stale_write_rejected");
  ASSERT_EQ(rejected.size(), 4u);
  for (const auto& e : rejected) {
    EXPECT_EQ(e.run_id, c.run.id);
    EXPECT_TRUE(Has(e.details, "\"current_token\":" + std::to_string(c.token))) << e.details;
  }
  EXPECT_EQ(rejected[3].actor, "n2");
  // A run that ended fences its late attempt off the same way.
  End(c, "2026-11-05T12:03:00Z", RunState::kPending);
  EXPECT_EQ(Commit(c, "k1", "late").code(), StatusCode::kStaleLease);
  EXPECT_EQ(Effect("k1").state, EffectState::kStarted);
  // No such run.
  store::ClaimedRun ghost;
  ghost.run.id = 999;
  ghost.token = 1;
  EXPECT_EQ(Begin(ghost, "k").status().code(), StatusCode::kNotFound);
}

TEST_P(StoreEffects, AFailedEffectIsDoneAgain) {
  Setup({"a"});
  const auto first = ClaimOne("2026-11-05T12:00:00Z");
  ASSERT_EQ(Begin(first, "mail")->outcome, EffectBeginOutcome::kProceed);
  ASSERT_TRUE(Fail(first, "mail", 75).ok());
  auto e = Effect("mail");
  EXPECT_EQ(e.state, EffectState::kFailed);
  EXPECT_EQ(e.exit_status, 75);
  EXPECT_EQ(e.settled_token, first.token);
  ASSERT_EQ(Events("j", "effect_failed").size(), 1u);
  EXPECT_TRUE(Fail(first, "mail", 75).ok()) << "failing again by the same attempt is a no-op";
  EXPECT_EQ(Commit(first, "mail", "x").code(), StatusCode::kConflict)
      << "a failed effect is begun again before it is committed";
  // The next attempt does it again.
  End(first, "2026-11-05T12:03:00Z", RunState::kPending);
  const auto second = ClaimOne("2026-11-05T12:04:00Z");
  ASSERT_EQ(second.attempt, 2);
  auto r = Begin(second, "mail", "", "2026-11-05T12:05:00Z");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->outcome, EffectBeginOutcome::kProceed);
  EXPECT_EQ(r->effect.state, EffectState::kStarted);
  EXPECT_EQ(r->effect.started_attempt, 2);
  EXPECT_EQ(r->effect.started_token, second.token);
  EXPECT_FALSE(r->effect.settled_token.has_value());
  EXPECT_FALSE(r->effect.exit_status.has_value());
  const auto started = Events("j", "effect_started");
  ASSERT_EQ(started.size(), 2u);
  EXPECT_TRUE(Has(started[1].details, "\"again\":true")) << started[1].details;
  ASSERT_TRUE(Commit(second, "mail", "sent").ok());
  EXPECT_EQ(Effect("mail").state, EffectState::kCommitted);
}

TEST_P(StoreEffects, TwoRunsRacingOnAKeyExactlyOneProceeds) {
  Setup({"a", "b"});
  const auto claimed = Claim("2026-11-05T12:00:00Z", 2);
  ASSERT_EQ(claimed.size(), 2u);
  ASSERT_EQ(Begin(claimed[0], "k")->outcome, EffectBeginOutcome::kProceed);
  const auto other = Begin(claimed[1], "k");
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.status().code(), StatusCode::kConflict);
  EXPECT_TRUE(Has(other.status().message(), "in progress")) << other.status().message();
  EXPECT_TRUE(Has(other.status().message(), "j/a/T09:00")) << other.status().message();
  EXPECT_EQ(Commit(claimed[1], "k", "mine").code(), StatusCode::kConflict);
  EXPECT_EQ(Fail(claimed[1], "k").code(), StatusCode::kConflict);
  EXPECT_EQ(Effect("k").started_token, claimed[0].token);
  EXPECT_EQ(Events("j", "effect_in_doubt").size(), 0u);
  // Once the holder settles it, the other replays.
  ASSERT_TRUE(Commit(claimed[0], "k", "done").ok());
  EXPECT_EQ(Begin(claimed[1], "k")->outcome, EffectBeginOutcome::kReplay);
}

// Many runs, each on its own connection (as on several nodes), begin one
// key at once: exactly one proceeds.
TEST_P(StoreEffects, ConcurrentBeginsOfOneKeyLetExactlyOneProceed) {
  constexpr int kRuns = 6;
  std::vector<std::string> partitions;
  for (int i = 0; i < kRuns; ++i) partitions.push_back("p" + std::to_string(i));
  Setup(partitions);
  const auto claimed = Claim("2026-11-05T12:00:00Z", kRuns);
  ASSERT_EQ(claimed.size(), static_cast<size_t>(kRuns));
  std::vector<std::unique_ptr<store::Store>> stores;
  for (int i = 0; i < kRuns; ++i) {
    auto s = backend_->Open();
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    stores.push_back(std::move(*s));
  }
  std::atomic<int> ready{0};
  std::vector<Status> answers(kRuns);
  std::vector<EffectBeginOutcome> outcomes(kRuns);
  std::vector<std::thread> threads;
  for (int i = 0; i < kRuns; ++i) {
    threads.emplace_back([&, i] {
      ++ready;
      while (ready < kRuns) std::this_thread::yield();
      auto r = stores[i]->EffectBegin({claimed[i].run.id, claimed[i].token, "once", "",
                                       InstantAt("2026-11-05T12:01:00Z"), "n1", ""});
      answers[i] = r.status();
      if (r.ok()) outcomes[i] = r->outcome;
    });
  }
  for (auto& t : threads) t.join();
  int proceeded = 0;
  for (int i = 0; i < kRuns; ++i) {
    if (answers[i].ok()) {
      EXPECT_EQ(outcomes[i], EffectBeginOutcome::kProceed);
      ++proceeded;
    } else {
      EXPECT_EQ(answers[i].code(), StatusCode::kConflict) << answers[i].ToString();
    }
  }
  EXPECT_EQ(proceeded, 1);
  EXPECT_EQ(Events("j", "effect_started").size(), 1u);
}

// docs/effects.md: an attempt that finds an effect in doubt and
// does not settle it ends the run `unknown`, whatever its exit status.
TEST_P(StoreEffects, AnEffectLeftInDoubtMakesTheRunUnknownWhateverTheExitStatus) {
  Setup({"a", "b"});
  const auto a1 = ClaimOne("2026-11-05T12:00:00Z");
  const auto b1 = ClaimOne("2026-11-05T12:00:00Z");
  ASSERT_EQ(Begin(a1, "mail-a", "fp")->outcome, EffectBeginOutcome::kProceed);
  ASSERT_EQ(Begin(b1, "mail-b", "fp")->outcome, EffectBeginOutcome::kProceed);
  End(a1, "2026-11-05T12:03:00Z", RunState::kPending, EndClass::kTimeout);
  End(b1, "2026-11-05T12:03:00Z", RunState::kPending, EndClass::kTimeout);
  const auto a2 = ClaimOne("2026-11-05T12:04:00Z");
  const auto b2 = ClaimOne("2026-11-05T12:04:00Z");
  ASSERT_EQ(a2.run.id, a1.run.id);
  ASSERT_EQ(Begin(a2, "mail-a", "fp")->outcome, EffectBeginOutcome::kInDoubt);
  ASSERT_EQ(Begin(b2, "mail-b", "fp")->outcome, EffectBeginOutcome::kInDoubt);
  // b's reconciliation settles it; a's step exits 0 without settling.
  ASSERT_TRUE(Commit(b2, "mail-b", "sent\n").ok());
  End(a2, "2026-11-05T12:05:00Z", RunState::kSucceeded, EndClass::kSucceeded);
  End(b2, "2026-11-05T12:05:00Z", RunState::kSucceeded, EndClass::kSucceeded);

  EXPECT_EQ(S().RunGet(a2.run.id)->state, RunState::kUnknown);
  const auto attempts = *S().AttemptList(a2.run.id);
  ASSERT_EQ(attempts.size(), 2u);
  EXPECT_EQ(attempts[1].end_class, "in_doubt");
  EXPECT_EQ(S().RunGet(b2.run.id)->state, RunState::kSucceeded);
  const auto unknown = Events("j", "unknown");
  ASSERT_EQ(unknown.size(), 1u);
  EXPECT_EQ(unknown[0].run_id, a2.run.id);
  EXPECT_EQ(unknown[0].reason, "effect \"mail-a\" is in doubt");
}

// An attempt that began an effect and ends the run without settling it
// (its step exited 0 after losing track of it) leaves the run unknown, not
// succeeded; ending it for a retry is fine (the retry reconciles).
TEST_P(StoreEffects, AnAttemptEndingTheRunWithItsOwnEffectUnsettledLeavesItUnknown) {
  Setup({"a", "b"});
  const auto a = ClaimOne("2026-11-05T12:00:00Z");
  const auto b = ClaimOne("2026-11-05T12:00:00Z");
  ASSERT_EQ(Begin(a, "mail-a")->outcome, EffectBeginOutcome::kProceed);
  ASSERT_EQ(Begin(b, "mail-b")->outcome, EffectBeginOutcome::kProceed);
  End(a, "2026-11-05T12:01:00Z", RunState::kSucceeded, EndClass::kSucceeded);
  End(b, "2026-11-05T12:01:00Z", RunState::kPending, EndClass::kRetryable);
  EXPECT_EQ(S().RunGet(a.run.id)->state, RunState::kUnknown);
  EXPECT_EQ(S().AttemptList(a.run.id)->at(0).end_class, "in_doubt");
  EXPECT_EQ(S().RunGet(b.run.id)->state, RunState::kPending);
}

// The same request asking again goes on (a retried begin); another call of
// the same attempt cannot know whether the first one's effect happened: in
// doubt, never done twice.
TEST_P(StoreEffects, AnotherCallOfTheSameAttemptFindsItsEffectInDoubt) {
  Setup({"a"});
  const auto c = ClaimOne("2026-11-05T12:00:00Z");
  const auto begin = [&](const std::string& request) {
    store::EffectBeginParams p;
    p.run_id = c.run.id;
    p.token = c.token;
    p.key = "mail";
    p.now = InstantAt("2026-11-05T12:01:00Z");
    p.node = "n1";
    p.request = request;
    auto r = S().EffectBegin(p);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? r->outcome : EffectBeginOutcome::kReplay;
  };
  EXPECT_EQ(begin("call-1"), EffectBeginOutcome::kProceed);
  EXPECT_EQ(begin("call-1"), EffectBeginOutcome::kProceed) << "the same request, asked again";
  EXPECT_EQ(begin("call-2"), EffectBeginOutcome::kInDoubt);
  const auto doubt = Events("j", "effect_in_doubt");
  ASSERT_EQ(doubt.size(), 1u);
  EXPECT_TRUE(Has(doubt[0].reason, "earlier call of this attempt")) << doubt[0].reason;
  // Reconciled by this attempt: it happened.
  ASSERT_TRUE(Commit(c, "mail", "found\n").ok());
  EXPECT_EQ(begin("call-3"), EffectBeginOutcome::kReplay);
}

TEST_P(StoreEffects, AnAttemptThatEndedLeavesItsEffectInDoubt) {
  Setup({"a"});
  const auto first = ClaimOne("2026-11-05T12:00:00Z");
  ASSERT_EQ(Begin(first, "mail", "fp")->outcome, EffectBeginOutcome::kProceed);
  // The attempt ends without settling it (killed between begin and commit).
  End(first, "2026-11-05T12:03:00Z", RunState::kPending);
  const auto second = ClaimOne("2026-11-05T12:04:00Z");
  ASSERT_EQ(second.attempt, 2);
  // Settling it without having begun it is refused: begin, reconcile, then settle.
  EXPECT_EQ(Commit(second, "mail", "x").code(), StatusCode::kConflict);
  auto r = Begin(second, "mail", "fp", "2026-11-05T12:05:00Z");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->outcome, EffectBeginOutcome::kInDoubt);
  EXPECT_EQ(r->effect.state, EffectState::kStarted);
  EXPECT_EQ(r->effect.started_attempt, 1);
  EXPECT_EQ(r->effect.started_token, first.token);
  EXPECT_EQ(r->effect.doubt_run_id, second.run.id);
  EXPECT_EQ(r->effect.doubt_token, second.token);
  const auto doubt = Events("j", "effect_in_doubt");
  ASSERT_EQ(doubt.size(), 1u);
  EXPECT_EQ(doubt[0].actor, "n1");
  EXPECT_TRUE(Has(doubt[0].details, "\"started_token\":" + std::to_string(first.token)))
      << doubt[0].details;
  EXPECT_TRUE(Has(doubt[0].reason, "attempt 1")) << doubt[0].reason;
  // Asking again answers the same, recorded once.
  EXPECT_EQ(Begin(second, "mail", "fp")->outcome, EffectBeginOutcome::kInDoubt);
  EXPECT_EQ(Events("j", "effect_in_doubt").size(), 1u);
  // Reconciliation says it happened: this attempt commits it.
  ASSERT_TRUE(Commit(second, "mail", "found it\n").ok());
  const auto e = Effect("mail");
  EXPECT_EQ(e.state, EffectState::kCommitted);
  EXPECT_EQ(e.result, "found it\n");
  EXPECT_EQ(e.started_attempt, 1);
  EXPECT_EQ(e.settled_attempt, 2);
  EXPECT_EQ(e.settled_token, second.token);
  const auto reconciled = Events("j", "effect_reconciled");
  ASSERT_EQ(reconciled.size(), 1u);
  EXPECT_TRUE(Has(reconciled[0].details, "\"as\":\"committed\"")) << reconciled[0].details;
  EXPECT_EQ(reconciled[0].reason, "reconciled: it happened");
  EXPECT_TRUE(Events("j", "effect_committed").empty());
  EXPECT_EQ(Begin(second, "mail", "fp")->outcome, EffectBeginOutcome::kReplay);
}

TEST_P(StoreEffects, AnEffectInDoubtThatDidNotHappenIsDoneAgain) {
  Setup({"a"});
  const auto first = ClaimOne("2026-11-05T12:00:00Z");
  ASSERT_EQ(Begin(first, "mail")->outcome, EffectBeginOutcome::kProceed);
  End(first, "2026-11-05T12:03:00Z", RunState::kPending);
  const auto second = ClaimOne("2026-11-05T12:04:00Z");
  ASSERT_EQ(Begin(second, "mail")->outcome, EffectBeginOutcome::kInDoubt);
  // Reconciliation says it did not happen: fail it, then begin again.
  ASSERT_TRUE(Fail(second, "mail", 1).ok());
  EXPECT_EQ(Effect("mail").state, EffectState::kFailed);
  const auto reconciled = Events("j", "effect_reconciled");
  ASSERT_EQ(reconciled.size(), 1u);
  EXPECT_TRUE(Has(reconciled[0].details, "\"as\":\"failed\"")) << reconciled[0].details;
  auto r = Begin(second, "mail");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->outcome, EffectBeginOutcome::kProceed);
  EXPECT_EQ(r->effect.started_token, second.token);
  EXPECT_FALSE(r->effect.doubt_token.has_value());
  ASSERT_TRUE(Commit(second, "mail", "sent").ok());
  EXPECT_EQ(Events("j", "effect_committed").size(), 1u);
}

TEST_P(StoreEffects, AnotherRunFindsAnEffectInDoubtAndListsIt) {
  Setup({"a", "b"});
  const auto a = ClaimOne("2026-11-05T12:00:00Z");
  ASSERT_EQ(Begin(a, "shared")->outcome, EffectBeginOutcome::kProceed);
  End(a, "2026-11-05T12:01:00Z", RunState::kUnknown, EndClass::kLeaseExpired);
  const auto b = ClaimOne("2026-11-05T12:02:00Z");
  ASSERT_NE(b.run.id, a.run.id);
  ASSERT_EQ(Begin(b, "shared", "", "2026-11-05T12:03:00Z")->outcome,
            EffectBeginOutcome::kInDoubt);
  for (const int64_t id : {a.run.id, b.run.id}) {
    auto list = S().EffectList(id);
    ASSERT_TRUE(list.ok());
    ASSERT_EQ(list->size(), 1u) << id;
    EXPECT_EQ(list->at(0).key, "shared");
  }
  EXPECT_EQ(Effect("shared").run_id, a.run.id);
  EXPECT_EQ(Effect("shared").doubt_run_id, b.run.id);
}

// An operator cannot settle an effect that another live run is reconciling:
// that run's word would be overridden mid-way.
TEST_P(StoreEffects, AnEffectBeingReconciledElsewhereCannotBeResolved) {
  Setup({"a", "b"});
  const auto a = ClaimOne("2026-11-05T12:00:00Z");
  ASSERT_EQ(Begin(a, "shared")->outcome, EffectBeginOutcome::kProceed);
  End(a, "2026-11-05T12:01:00Z", RunState::kUnknown, EndClass::kLeaseExpired);
  const auto b = ClaimOne("2026-11-05T12:02:00Z");
  ASSERT_EQ(Begin(b, "shared", "", "2026-11-05T12:03:00Z")->outcome,
            EffectBeginOutcome::kInDoubt);
  store::EffectResolveParams p;
  p.run_id = a.run.id;
  p.key = "shared";
  p.as = EffectState::kFailed;
  p.actor = "alice";
  p.reason = "not in the outbox";
  p.now = InstantAt("2026-11-05T12:04:00Z");
  const auto refused = S().EffectResolve(p);
  ASSERT_EQ(refused.status().code(), StatusCode::kConflict);
  EXPECT_TRUE(Has(refused.status().message(), "being reconciled by run")) << refused.status().message();
  EXPECT_EQ(Effect("shared").state, EffectState::kStarted);
  // Once b's attempt is over (unknown: it left the effect in doubt), the
  // operator decides.
  End(b, "2026-11-05T12:05:00Z", RunState::kSucceeded, EndClass::kSucceeded);
  EXPECT_EQ(S().RunGet(b.run.id)->state, RunState::kUnknown);
  p.now = InstantAt("2026-11-05T12:06:00Z");
  const auto resolved = S().EffectResolve(p);
  ASSERT_TRUE(resolved.ok()) << resolved.status().ToString();
  EXPECT_EQ(Effect("shared").state, EffectState::kFailed);
}

// The stalled-worker case: an attempt that lost its lease writes with its
// old token while the run runs again under a newer one. Nothing it sends
// applies, and a stale begin of a committed key learns nothing (no replay).
TEST_P(StoreEffects, AnOldTokenChangesNothingWhileTheRunHoldsANewerOne) {
  Setup({"a"});
  const auto old = ClaimOne("2026-11-05T12:00:00Z");
  ASSERT_EQ(Begin(old, "mail")->outcome, EffectBeginOutcome::kProceed);
  ASSERT_EQ(Begin(old, "receipt")->outcome, EffectBeginOutcome::kProceed);
  ASSERT_TRUE(Commit(old, "receipt", "r-1").ok());
  End(old, "2026-11-05T12:01:00Z", RunState::kPending, EndClass::kLeaseExpired);
  const auto current = ClaimOne("2026-11-05T12:02:00Z");
  ASSERT_EQ(current.run.id, old.run.id);
  ASSERT_GT(current.token, old.token);

  EXPECT_EQ(Begin(old, "mail").status().code(), StatusCode::kStaleLease);
  EXPECT_EQ(Begin(old, "receipt").status().code(), StatusCode::kStaleLease)
      << "no replay for a stale caller";
  EXPECT_EQ(Begin(old, "new-key").status().code(), StatusCode::kStaleLease);
  EXPECT_EQ(Commit(old, "mail", "sent").code(), StatusCode::kStaleLease);
  store::CheckpointSetParams cp;
  cp.run_id = old.run.id;
  cp.token = old.token;
  cp.value = "99";
  cp.now = InstantAt("2026-11-05T12:03:00Z");
  cp.node = "n1";
  EXPECT_EQ(S().CheckpointSet(cp).code(), StatusCode::kStaleLease);

  EXPECT_EQ(Effect("mail").state, EffectState::kStarted);
  EXPECT_EQ(Effect("mail").started_token, old.token);
  EXPECT_EQ(S().EffectGet("j", "new-key").status().code(), StatusCode::kNotFound);
  EXPECT_FALSE(S().CheckpointGet(old.run.id)->run.has_value());
  EXPECT_EQ(Events("j", "stale_write_rejected").size(), 5u);
  // The current attempt is unaffected.
  EXPECT_EQ(Begin(current, "mail")->outcome, EffectBeginOutcome::kInDoubt);
}

// Several runs of a job may find one effect in doubt; each finding holds
// (one does not erase another's), and each finder ends unknown unless it
// settles the effect.
TEST_P(StoreEffects, EveryRunThatFindsAnEffectInDoubtIsAccountable) {
  Setup({"a", "b", "c"});
  const auto a = ClaimOne("2026-11-05T12:00:00Z");
  ASSERT_EQ(Begin(a, "shared")->outcome, EffectBeginOutcome::kProceed);
  End(a, "2026-11-05T12:01:00Z", RunState::kUnknown, EndClass::kLeaseExpired);
  const auto b = ClaimOne("2026-11-05T12:02:00Z");
  const auto c = ClaimOne("2026-11-05T12:02:00Z");
  ASSERT_EQ(Begin(b, "shared", "", "2026-11-05T12:03:00Z")->outcome, EffectBeginOutcome::kInDoubt);
  ASSERT_EQ(Begin(c, "shared", "", "2026-11-05T12:03:00Z")->outcome, EffectBeginOutcome::kInDoubt);
  EXPECT_EQ(Begin(b, "shared", "", "2026-11-05T12:03:30Z")->outcome, EffectBeginOutcome::kInDoubt)
      << "b's finding still stands after c's";
  EXPECT_EQ(Events("j", "effect_in_doubt").size(), 2u);
  for (const int64_t id : {b.run.id, c.run.id}) {
    ASSERT_EQ(S().EffectList(id)->size(), 1u) << id;
  }
  End(b, "2026-11-05T12:04:00Z", RunState::kSucceeded, EndClass::kSucceeded);
  End(c, "2026-11-05T12:04:00Z", RunState::kSucceeded, EndClass::kSucceeded);
  EXPECT_EQ(S().RunGet(b.run.id)->state, RunState::kUnknown);
  EXPECT_EQ(S().RunGet(c.run.id)->state, RunState::kUnknown);
}

TEST_P(StoreEffects, CommitWithACheckpointWritesBoth) {
  Setup({"a"}, {"09:00", "10:00"});
  const auto c = ClaimOne("2026-11-05T12:00:00Z");
  ASSERT_EQ(c.run.period, "T09:00");
  auto none = S().CheckpointGet(c.run.id);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->run || none->partition);
  ASSERT_EQ(Begin(c, "item:17")->outcome, EffectBeginOutcome::kProceed);
  ASSERT_TRUE(
      Commit(c, "item:17", "ok", store::CheckpointWrite{CheckpointScope::kPartition, "17"}).ok());
  ASSERT_EQ(Begin(c, "item:18")->outcome, EffectBeginOutcome::kProceed);
  ASSERT_TRUE(Commit(c, "item:18", "ok", store::CheckpointWrite{CheckpointScope::kRun, "r18"}).ok());
  auto got = S().CheckpointGet(c.run.id);
  ASSERT_TRUE(got.ok());
  ASSERT_TRUE(got->partition.has_value());
  EXPECT_EQ(got->partition->value, "17");
  EXPECT_EQ(got->partition->job, "j");
  EXPECT_EQ(got->partition->partition, "a");
  EXPECT_FALSE(got->partition->run_id.has_value());
  EXPECT_EQ(got->partition->writer_token, c.token);
  ASSERT_TRUE(got->run.has_value());
  EXPECT_EQ(got->run->value, "r18");
  EXPECT_EQ(got->run->run_id, c.run.id);
  EXPECT_EQ(got->run->updated_at, InstantAt("2026-11-05T12:02:00Z"));
  EXPECT_EQ(Effect("item:17").state, EffectState::kCommitted);
  const auto committed = Events("j", "effect_committed");
  ASSERT_EQ(committed.size(), 2u);
  EXPECT_TRUE(Has(committed[0].details, "\"checkpoint\":{\"scope\":\"partition\",\"value\":\"17\"}"))
      << committed[0].details;
  // A plain fenced write moves it on; the next period of the partition sees
  // the partition's watermark but not the other run's own.
  ASSERT_TRUE(S().CheckpointSet({c.run.id, c.token, CheckpointScope::kPartition, "20",
                                 InstantAt("2026-11-05T12:03:00Z"), "n1"})
                  .ok());
  End(c, "2026-11-05T12:04:00Z", RunState::kSucceeded, EndClass::kSucceeded);
  const auto next = ClaimOne("2026-11-05T12:05:00Z");
  ASSERT_EQ(next.run.period, "T10:00");
  auto seen = S().CheckpointGet(next.run.id);
  ASSERT_TRUE(seen.ok());
  ASSERT_TRUE(seen->partition.has_value());
  EXPECT_EQ(seen->partition->value, "20");
  EXPECT_FALSE(seen->run.has_value());
  EXPECT_EQ(S().CheckpointGet(999).status().code(), StatusCode::kNotFound);
}

TEST_P(StoreEffects, ResolvingAnEffectInDoubtPutsTheRunBackToPending) {
  for (const EffectState as : {EffectState::kCommitted, EffectState::kFailed}) {
    SCOPED_TRACE(std::string(ledger::Name(as)));
    const std::string job = as == EffectState::kCommitted ? "c" : "f";
    AddJob(job);
    Plan(job, {Occurrence("2026-11-05T09:00:00Z", {"a"})}, "2026-11-05T09:00:00Z",
         "2026-11-05T08:00:00Z");
    store::ReleaseParams rel;
    rel.job = job;
    rel.policy.misfire_grace = std::chrono::hours{24};
    rel.now = InstantAt("2026-11-05T12:00:00Z");
    ASSERT_TRUE(S().RunRelease(rel).ok());
    store::ClaimRule rule;
    rule.job = job;
    rule.overlap = ledger::Overlap::kAllow;
    rule.steps = {"deliver"};
    store::ClaimParams cp{InstantAt("2026-11-05T12:00:00Z"), "n1", 1, {rule}};
    const auto c = S().RunClaim(cp)->at(0);
    ASSERT_EQ(Begin(c, "mail")->outcome, EffectBeginOutcome::kProceed);
    // Not while the run is running.
    store::EffectResolveParams p{c.run.id, "mail", as, "alice", "checked the mail log",
                                 InstantAt("2026-11-05T13:00:00Z")};
    EXPECT_EQ(S().EffectResolve(p).status().code(), StatusCode::kConflict);
    End(c, "2026-11-05T12:03:00Z", RunState::kUnknown, EndClass::kInDoubt);
    ASSERT_EQ(StateOf(c.run.id), RunState::kUnknown);
    auto missing = p;
    missing.key = "nope";
    EXPECT_EQ(S().EffectResolve(missing).status().code(), StatusCode::kNotFound);
    missing = p;
    missing.run_id = 999;
    EXPECT_EQ(S().EffectResolve(missing).status().code(), StatusCode::kNotFound);

    auto r = S().EffectResolve(p);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->run_state, RunState::kPending);
    EXPECT_TRUE(r->still_in_doubt.empty());
    const auto run = *S().RunGet(c.run.id);
    EXPECT_EQ(run.state, RunState::kPending);
    EXPECT_TRUE(run.released);
    EXPECT_TRUE(run.misfire_exempt);
    const auto e = Effect("mail", job);
    EXPECT_EQ(e.state, as);
    EXPECT_EQ(e.settled_by, "alice");
    EXPECT_FALSE(e.settled_token.has_value());
    const auto resolve = Events(job, "resolve");
    ASSERT_EQ(resolve.size(), 1u);
    EXPECT_EQ(resolve[0].actor, "alice");
    EXPECT_EQ(resolve[0].reason, "checked the mail log");
    EXPECT_TRUE(Has(resolve[0].details, "\"effect\":\"mail\"")) << resolve[0].details;
    EXPECT_TRUE(Has(resolve[0].details, "\"to\":\"pending\"")) << resolve[0].details;
    // Settled once: resolving again is refused.
    EXPECT_EQ(S().EffectResolve(p).status().code(), StatusCode::kConflict);
    // The step resumes with the effect settled.
    const auto again = S().RunClaim({InstantAt("2026-11-05T13:00:01Z"), "n1", 1, {rule}})->at(0);
    EXPECT_EQ(again.run.id, c.run.id);
    EXPECT_EQ(again.budget_attempts, 1) << "a fresh budget, as after an operator retry";
    auto b = Begin(again, "mail", "", "2026-11-05T13:00:02Z");
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    EXPECT_EQ(b->outcome, as == EffectState::kCommitted ? EffectBeginOutcome::kReplay
                                                        : EffectBeginOutcome::kProceed);
  }
}

// A step may swallow `effect run`'s failure and exit 0: the run still ends
// unknown (its effect is in doubt), with the step recorded succeeded. When
// the operator says the effect did not happen, the step that began it must
// run again, or the run would succeed without the effect ever happening.
TEST_P(StoreEffects, ResolvingAsFailedRunsTheStepThatBeganTheEffectAgain) {
  AddJob("sw");
  Plan("sw", {Occurrence("2026-11-05T09:00:00Z", {"a"})}, "2026-11-05T09:00:00Z",
       "2026-11-05T08:00:00Z");
  store::ReleaseParams rel;
  rel.job = "sw";
  rel.policy.misfire_grace = std::chrono::hours{24};
  rel.now = InstantAt("2026-11-05T12:00:00Z");
  ASSERT_TRUE(S().RunRelease(rel).ok());
  store::ClaimRule rule;
  rule.job = "sw";
  rule.overlap = ledger::Overlap::kAllow;
  rule.steps = {"generate", "pay", "notify"};
  const auto c =
      S().RunClaim({InstantAt("2026-11-05T12:00:00Z"), "n1", 1, {rule}})->at(0);
  const auto step = [&](const store::ClaimedRun& run, const std::string& name, StepStatus state,
                        const std::string& now) {
    const Status s = S().StepUpdate({run.run.id, run.token, name, state, InstantAt(now), "n1"});
    ASSERT_TRUE(s.ok()) << name << " " << ledger::Name(state) << ": " << s.ToString();
  };
  step(c, "generate", StepStatus::kSucceeded, "2026-11-05T12:00:10Z");
  step(c, "pay", StepStatus::kRunning, "2026-11-05T12:00:11Z");
  ASSERT_EQ(Begin(c, "pay-a", "", "2026-11-05T12:00:12Z")->outcome, EffectBeginOutcome::kProceed);
  // `effect run` was killed; the step swallowed it.
  step(c, "pay", StepStatus::kSucceeded, "2026-11-05T12:00:13Z");
  step(c, "notify", StepStatus::kRunning, "2026-11-05T12:00:14Z");
  step(c, "notify", StepStatus::kSucceeded, "2026-11-05T12:00:15Z");
  End(c, "2026-11-05T12:00:16Z", RunState::kSucceeded, EndClass::kSucceeded);
  ASSERT_EQ(StateOf(c.run.id), RunState::kUnknown);

  auto r = S().EffectResolve({c.run.id, "pay-a", EffectState::kFailed, "alice",
                              "not in the bank's statement", InstantAt("2026-11-05T13:00:00Z")});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->run_state, RunState::kPending);
  // The step that began it and every step after it run again; the one
  // before stays done.
  EXPECT_EQ(*S().StepList(c.run.id),
            (std::vector<store::StepState>{{"generate", StepStatus::kSucceeded},
                                           {"pay", StepStatus::kPending},
                                           {"notify", StepStatus::kPending}}));
  const auto resolve = Events("sw", "resolve");
  ASSERT_EQ(resolve.size(), 1u);
  EXPECT_TRUE(Has(resolve[0].details, "\"redo_from_step\":\"pay\"")) << resolve[0].details;
  const auto again =
      S().RunClaim({InstantAt("2026-11-05T13:00:01Z"), "n1", 1, {rule}})->at(0);
  ASSERT_EQ(again.run.id, c.run.id);
  EXPECT_EQ(again.steps, (std::vector<store::StepState>{{"generate", StepStatus::kSucceeded},
                                                        {"pay", StepStatus::kRunning},
                                                        {"notify", StepStatus::kPending}}));
  EXPECT_EQ(Begin(again, "pay-a", "", "2026-11-05T13:00:02Z")->outcome,
            EffectBeginOutcome::kProceed);
}

TEST_P(StoreEffects, ARunWithTwoEffectsInDoubtStaysUnknownUntilBothAreResolved) {
  Setup({"a"});
  const auto c = ClaimOne("2026-11-05T12:00:00Z");
  ASSERT_EQ(Begin(c, "x")->outcome, EffectBeginOutcome::kProceed);
  ASSERT_EQ(Begin(c, "y")->outcome, EffectBeginOutcome::kProceed);
  End(c, "2026-11-05T12:03:00Z", RunState::kUnknown, EndClass::kTimeout);
  store::RunResolveParams rr{c.run.id, store::RunResolution::kSucceeded, "bob", "looks done",
                             InstantAt("2026-11-05T13:00:00Z")};
  const Status blocked = S().RunResolve(rr);
  EXPECT_EQ(blocked.code(), StatusCode::kConflict);
  EXPECT_TRUE(Has(blocked.message(), "x, y")) << blocked.message();
  auto first = S().EffectResolve({c.run.id, "x", EffectState::kCommitted, "bob", "sent",
                                  InstantAt("2026-11-05T13:00:00Z")});
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->run_state, RunState::kUnknown);
  EXPECT_EQ(first->still_in_doubt, (std::vector<std::string>{"y"}));
  EXPECT_EQ(StateOf(c.run.id), RunState::kUnknown);
  auto second = S().EffectResolve({c.run.id, "y", EffectState::kFailed, "bob", "not sent",
                                   InstantAt("2026-11-05T13:01:00Z")});
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(second->run_state, RunState::kPending);
  EXPECT_EQ(StateOf(c.run.id), RunState::kPending);
  EXPECT_EQ(Events("j", "resolve").size(), 2u);
}

TEST_P(StoreEffects, ResolvingAnUnknownRunThreeWays) {
  Setup({"a", "b", "c", "d"});
  const auto claimed = Claim("2026-11-05T12:00:00Z", 4);
  ASSERT_EQ(claimed.size(), 4u);
  for (const auto& c : claimed) End(c, "2026-11-05T12:01:00Z", RunState::kUnknown, EndClass::kSignal);
  const auto at = InstantAt("2026-11-05T13:00:00Z");
  using store::RunResolution;
  ASSERT_TRUE(S().RunResolve({claimed[0].run.id, RunResolution::kSucceeded, "carol",
                              "the report is in the bucket", at})
                  .ok());
  ASSERT_TRUE(S().RunResolve({claimed[1].run.id, RunResolution::kFailed, "carol",
                              "the input was corrupt", at})
                  .ok());
  ASSERT_TRUE(S().RunResolve({claimed[2].run.id, RunResolution::kRetry, "carol",
                              "safe to run again", at})
                  .ok());
  EXPECT_EQ(StateOf(claimed[0].run.id), RunState::kSucceeded);
  EXPECT_EQ(StateOf(claimed[1].run.id), RunState::kFailed);
  const auto retried = *S().RunGet(claimed[2].run.id);
  EXPECT_EQ(retried.state, RunState::kPending);
  EXPECT_TRUE(retried.released);
  EXPECT_TRUE(retried.misfire_exempt);
  const auto resolve = Events("j", "resolve");
  ASSERT_EQ(resolve.size(), 3u);
  const char* expected[] = {"\"as\":\"succeeded\"", "\"as\":\"failed\"", "\"as\":\"retry\""};
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(resolve[i].actor, "carol");
    EXPECT_EQ(resolve[i].run_id, claimed[i].run.id);
    EXPECT_FALSE(resolve[i].reason.empty());
    EXPECT_TRUE(Has(resolve[i].details, expected[i])) << resolve[i].details;
    EXPECT_TRUE(Has(resolve[i].details, "\"from\":\"unknown\"")) << resolve[i].details;
  }
  EXPECT_EQ(resolve[0].reason, "the report is in the bucket");
  EXPECT_TRUE(Has(resolve[2].details, "\"to\":\"pending\"")) << resolve[2].details;
  // Only unknown runs.
  const Status again = S().RunResolve({claimed[0].run.id, RunResolution::kFailed, "c", "r", at});
  EXPECT_EQ(again.code(), StatusCode::kConflict);
  EXPECT_TRUE(Has(again.message(), "is succeeded")) << again.message();
  EXPECT_EQ(S().RunResolve({999, RunResolution::kFailed, "c", "r", at}).code(),
            StatusCode::kNotFound);
  EXPECT_EQ(StateOf(claimed[3].run.id), RunState::kUnknown) << "the others are untouched";
}

TEST_P(StoreEffects, SettledEffectsDoNotBlockResolvingTheRun) {
  Setup({"a"});
  const auto c = ClaimOne("2026-11-05T12:00:00Z");
  ASSERT_EQ(Begin(c, "done")->outcome, EffectBeginOutcome::kProceed);
  ASSERT_TRUE(Commit(c, "done", "ok").ok());
  ASSERT_EQ(Begin(c, "nope")->outcome, EffectBeginOutcome::kProceed);
  ASSERT_TRUE(Fail(c, "nope").ok());
  End(c, "2026-11-05T12:03:00Z", RunState::kUnknown, EndClass::kTimeout);
  ASSERT_TRUE(S().RunResolve({c.run.id, store::RunResolution::kSucceeded, "dan", "verified",
                              InstantAt("2026-11-05T13:00:00Z")})
                  .ok());
  EXPECT_EQ(StateOf(c.run.id), RunState::kSucceeded);
}

// ---- RunEffectBatch: many workers' effect writes in one transaction ----------

store::EffectOp BeginOp(const store::ClaimedRun& c, const std::string& key,
                        const std::string& fingerprint = "",
                        const std::string& now = "2026-11-05T12:01:00Z") {
  return {store::EffectBeginParams{c.run.id, c.token, key, fingerprint, InstantAt(now), "n1", ""},
          {}, {}};
}

store::EffectOp CommitOp(const store::ClaimedRun& c, const std::string& key,
                         const std::string& result,
                         std::optional<store::CheckpointWrite> checkpoint = std::nullopt) {
  store::EffectCommitParams p;
  p.run_id = c.run.id;
  p.token = c.token;
  p.key = key;
  p.exit_status = 0;
  p.result = result;
  p.checkpoint = std::move(checkpoint);
  p.now = InstantAt("2026-11-05T12:02:00Z");
  p.node = "n1";
  return {std::move(p), {}, {}};
}

TEST_P(StoreEffects, ABatchRefusesOnlyItsStaleAndMismatchedOps) {
  Setup({"a", "b", "c"});
  const auto claimed = Claim("2026-11-05T12:00:00Z", 3);
  ASSERT_EQ(claimed.size(), 3u);
  const auto& a = claimed[0];
  const auto& b = claimed[1];
  auto stale = claimed[2];
  End(stale, "2026-11-05T12:00:30Z", RunState::kPending);  // its token is over
  ASSERT_EQ(Begin(a, "pay:42", "100 EUR")->outcome, EffectBeginOutcome::kProceed);
  const auto before = Events("j").size();

  std::vector<store::EffectOp> ops;
  ops.push_back(BeginOp(a, "mail:a"));                        // 0: proceeds
  ops.push_back(BeginOp(stale, "mail:c"));                    // 1: stale
  ops.push_back(BeginOp(b, "pay:42", "200 EUR"));             // 2: another fingerprint
  ops.push_back(BeginOp(b, "mail:b"));                        // 3: proceeds
  ops.push_back(CommitOp(stale, "pay:42", "stolen"));         // 4: stale
  ops.push_back(CommitOp(a, "pay:42", "txn-1",                // 5: with its watermark
                         store::CheckpointWrite{CheckpointScope::kPartition, "42"}));
  ops.push_back({store::CheckpointSetParams{b.run.id, b.token, CheckpointScope::kRun, "b-7",
                                            InstantAt("2026-11-05T12:02:00Z"), "n1"},
                 {}, {}});                                    // 6: a watermark alone
  ops.push_back({store::CheckpointSetParams{stale.run.id, stale.token, CheckpointScope::kRun,
                                            "c-1", InstantAt("2026-11-05T12:02:00Z"), "n1"},
                 {}, {}});                                    // 7: stale
  ops.push_back(BeginOp(a, ""));                              // 8: malformed
  ASSERT_TRUE(S().RunEffectBatch(ops).ok());

  EXPECT_TRUE(ops[0].status.ok()) << ops[0].status.ToString();
  EXPECT_EQ(ops[0].begun.outcome, EffectBeginOutcome::kProceed);
  EXPECT_EQ(ops[0].begun.effect.key, "mail:a");
  EXPECT_EQ(ops[0].begun.effect.started_token, a.token);
  EXPECT_EQ(ops[1].status.code(), StatusCode::kStaleLease);
  EXPECT_EQ(ops[2].status.code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Has(ops[2].status.message(), "\"200 EUR\"")) << ops[2].status.message();
  EXPECT_TRUE(ops[3].status.ok()) << ops[3].status.ToString();
  EXPECT_EQ(ops[3].begun.outcome, EffectBeginOutcome::kProceed);
  EXPECT_EQ(ops[3].begun.effect.started_token, b.token);
  EXPECT_EQ(ops[4].status.code(), StatusCode::kStaleLease);
  EXPECT_TRUE(ops[5].status.ok()) << ops[5].status.ToString();
  EXPECT_TRUE(ops[6].status.ok()) << ops[6].status.ToString();
  EXPECT_EQ(ops[7].status.code(), StatusCode::kStaleLease);
  EXPECT_EQ(ops[8].status.code(), StatusCode::kInvalidArgument);

  // Durable, and only what was accepted; a begin answers the record as
  // stored.
  Reopen();
  const auto mail_a = Effect("mail:a");
  const auto& answered = ops[0].begun.effect;
  EXPECT_EQ(answered.id, mail_a.id);
  EXPECT_EQ(answered.job, mail_a.job);
  EXPECT_EQ(answered.fingerprint, mail_a.fingerprint);
  EXPECT_EQ(answered.state, mail_a.state);
  EXPECT_EQ(answered.exit_status, mail_a.exit_status);
  EXPECT_EQ(answered.result, mail_a.result);
  EXPECT_EQ(answered.run_id, mail_a.run_id);
  EXPECT_EQ(answered.run_key, mail_a.run_key);
  EXPECT_EQ(answered.started_attempt, mail_a.started_attempt);
  EXPECT_EQ(answered.started_request, mail_a.started_request);
  EXPECT_EQ(answered.settled_attempt, mail_a.settled_attempt);
  EXPECT_EQ(answered.settled_token, mail_a.settled_token);
  EXPECT_EQ(answered.settled_by, mail_a.settled_by);
  EXPECT_EQ(answered.doubt_run_id, mail_a.doubt_run_id);
  EXPECT_EQ(answered.doubt_token, mail_a.doubt_token);
  EXPECT_EQ(answered.started_at, mail_a.started_at);
  EXPECT_EQ(answered.updated_at, mail_a.updated_at);
  EXPECT_EQ(mail_a.state, EffectState::kStarted);
  EXPECT_EQ(Effect("mail:b").state, EffectState::kStarted);
  EXPECT_EQ(S().EffectGet("j", "mail:c").status().code(), StatusCode::kNotFound);
  const auto pay = Effect("pay:42");
  EXPECT_EQ(pay.state, EffectState::kCommitted);
  EXPECT_EQ(pay.fingerprint, "100 EUR");
  EXPECT_EQ(pay.result, "txn-1");
  EXPECT_EQ(pay.settled_token, a.token);
  const auto a_marks = S().CheckpointGet(a.run.id);
  ASSERT_TRUE(a_marks.ok());
  ASSERT_TRUE(a_marks->partition.has_value());
  EXPECT_EQ(a_marks->partition->value, "42");
  EXPECT_EQ(a_marks->partition->writer_token, a.token);
  const auto b_marks = S().CheckpointGet(b.run.id);
  ASSERT_TRUE(b_marks->run.has_value());
  EXPECT_EQ(b_marks->run->value, "b-7");
  EXPECT_FALSE(S().CheckpointGet(stale.run.id)->run.has_value());
  // Each refusal as the call alone answers it: the stale ones recorded,
  // the mismatch nothing.
  EXPECT_EQ(Events("j", "stale_write_rejected").size(), 3u);
  EXPECT_EQ(Events("j", "effect_started").size(), 3u);  // pay:42 before, mail:a, mail:b
  const auto committed = Events("j", "effect_committed");
  ASSERT_EQ(committed.size(), 1u);
  EXPECT_TRUE(Has(committed[0].details, "\"checkpoint\"")) << committed[0].details;
  EXPECT_EQ(Events("j").size(), before + 6);
}

TEST_P(StoreEffects, LaterOpsOfABatchSeeWhatEarlierOnesWrote) {
  Setup({"a", "b"});
  const auto claimed = Claim("2026-11-05T12:00:00Z", 2);
  ASSERT_EQ(claimed.size(), 2u);
  const auto& a = claimed[0];
  const auto& b = claimed[1];
  std::vector<store::EffectOp> ops;
  ops.push_back(BeginOp(a, "once"));       // proceeds
  ops.push_back(BeginOp(b, "once"));       // a's attempt holds it: in progress
  ops.push_back(CommitOp(a, "once", "r"));
  ops.push_back(BeginOp(b, "once"));       // now committed: a replay
  ops.push_back(CommitOp(b, "once", "x")); // committed at most once
  ASSERT_TRUE(S().RunEffectBatch(ops).ok());
  EXPECT_EQ(ops[0].begun.outcome, EffectBeginOutcome::kProceed);
  EXPECT_EQ(ops[1].status.code(), StatusCode::kConflict) << ops[1].status.ToString();
  EXPECT_TRUE(ops[2].status.ok()) << ops[2].status.ToString();
  ASSERT_TRUE(ops[3].status.ok()) << ops[3].status.ToString();
  EXPECT_EQ(ops[3].begun.outcome, EffectBeginOutcome::kReplay);
  EXPECT_EQ(ops[3].begun.effect.result, "r");
  EXPECT_EQ(ops[4].status.code(), StatusCode::kConflict);
  EXPECT_EQ(Effect("once").result, "r");
  EXPECT_EQ(Effect("once").settled_token, a.token);
  // An empty batch, and one with nothing for the database, are fine.
  EXPECT_TRUE(S().RunEffectBatch(std::span<store::EffectOp>()).ok());
  std::vector<store::EffectOp> bad;
  bad.push_back(BeginOp(a, std::string(store::kMaxEffectKeyBytes + 1, 'k')));
  EXPECT_TRUE(S().RunEffectBatch(bad).ok());
  EXPECT_EQ(bad[0].status.code(), StatusCode::kInvalidArgument);
}

// Hands over its lots one by one, as a group committer hands over what
// queued while the store worked on the earlier ones.
class Lots final : public store::EffectOpSource {
 public:
  explicit Lots(std::vector<std::vector<store::EffectOp>>& lots) : lots_(lots) {}
  std::span<store::EffectOp> Next() override {
    if (next_ == lots_.size()) return {};
    return lots_[next_++];
  }
  std::size_t taken() const { return next_; }

 private:
  std::vector<std::vector<store::EffectOp>>& lots_;
  std::size_t next_ = 0;
};

TEST_P(StoreEffects, OpsHandedOverLotByLotShareOneTransaction) {
  Setup({"a", "b", "c"});
  const auto claimed = Claim("2026-11-05T12:00:00Z", 3);
  ASSERT_EQ(claimed.size(), 3u);
  const auto& a = claimed[0];
  const auto& b = claimed[1];
  auto stale = claimed[2];
  End(stale, "2026-11-05T12:00:30Z", RunState::kPending);
  ASSERT_EQ(Begin(a, "pay:42", "100 EUR")->outcome, EffectBeginOutcome::kProceed);

  std::vector<std::vector<store::EffectOp>> lots(3);
  lots[0].push_back(BeginOp(b, "pay:42", "200 EUR"));  // refused, first of the transaction
  lots[1].push_back(BeginOp(b, "mail:b"));
  lots[1].push_back(BeginOp(stale, "mail:c"));
  lots[2].push_back(BeginOp(b, "pay:42", "300 EUR"));  // refused, after others
  lots[2].push_back(CommitOp(b, "mail:b", "sent"));    // sees mail:b begun in lot 1
  lots[2].push_back(CommitOp(a, "pay:42", "txn-1"));
  Lots source(lots);
  ASSERT_TRUE(S().RunEffectBatch(source).ok());
  EXPECT_EQ(source.taken(), 3u) << "the store asks until there is no more";

  EXPECT_EQ(lots[0][0].status.code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(lots[1][0].status.ok()) << lots[1][0].status.ToString();
  EXPECT_EQ(lots[1][0].begun.outcome, EffectBeginOutcome::kProceed);
  EXPECT_EQ(lots[1][1].status.code(), StatusCode::kStaleLease);
  EXPECT_EQ(lots[2][0].status.code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(lots[2][1].status.ok()) << lots[2][1].status.ToString();
  EXPECT_TRUE(lots[2][2].status.ok()) << lots[2][2].status.ToString();
  Reopen();
  EXPECT_EQ(Effect("mail:b").state, EffectState::kCommitted);
  EXPECT_EQ(Effect("mail:b").result, "sent");
  EXPECT_EQ(Effect("pay:42").state, EffectState::kCommitted);
  EXPECT_EQ(Effect("pay:42").fingerprint, "100 EUR");
  EXPECT_EQ(S().EffectGet("j", "mail:c").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(Events("j", "stale_write_rejected").size(), 1u);
  EXPECT_EQ(Events("j", "effect_committed").size(), 2u);
}

INSTANTIATE_TEST_SUITE_P(Backends, StoreEffects, ::testing::ValuesIn(AllStoreFactories()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace cronledger::testing
