#include "ledger/release_policy.h"

#include <gtest/gtest.h>

#include "cronledger/schedule.h"

namespace cronledger::ledger {
namespace {

using std::chrono::minutes;
using std::chrono::sys_seconds;

sys_seconds T(const char* hhmm) {
  return *ParseRfc3339(std::string("2026-11-05T") + hhmm + ":00Z");
}

ReleaseDecision Released(int64_t id) { return {id, ReleaseAction::kRelease, SkipReason::kMisfired}; }
ReleaseDecision Skip(int64_t id, SkipReason r) { return {id, ReleaseAction::kSkip, r}; }
ReleaseDecision Hold(int64_t id) { return {id, ReleaseAction::kHold, SkipReason::kMisfired}; }

std::vector<ReleaseDecision> Sorted(std::vector<ReleaseDecision> v) {
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  return v;
}

TEST(ReleasePolicy, LoneRunWithinAndBeyondGrace) {
  ReleasePolicy p;
  p.misfire_grace = minutes{10};
  EXPECT_EQ(DecideRelease({{1, "a", T("09:00"), false}}, p, T("09:10")),
            (std::vector<ReleaseDecision>{Released(1)}));
  EXPECT_EQ(DecideRelease({{1, "a", T("09:00"), false}}, p, T("09:11")),
            (std::vector<ReleaseDecision>{Skip(1, SkipReason::kMisfired)}));
}

TEST(ReleasePolicy, CatchupIsPerPartition) {
  ReleasePolicy p;
  p.catchup = ledger::Catchup::kLatest;
  // Partition a has two overdue, b one: only a coalesces.
  const auto d = Sorted(DecideRelease(
      {{1, "a", T("08:00"), false}, {2, "a", T("09:00"), false}, {3, "b", T("09:00"), false}},
      p, T("09:05")));
  EXPECT_EQ(d, (std::vector<ReleaseDecision>{Skip(1, SkipReason::kCoalesced), Released(2), Released(3)}));
}

TEST(ReleasePolicy, CatchupNoneWaivesEverySeveralOverdue) {
  ReleasePolicy p;
  p.catchup = ledger::Catchup::kNone;
  const auto d = Sorted(
      DecideRelease({{2, "a", T("09:00"), false}, {1, "a", T("08:00"), false}}, p, T("09:00")));
  EXPECT_EQ(d, (std::vector<ReleaseDecision>{Skip(1, SkipReason::kCatchupNone),
                                             Skip(2, SkipReason::kCatchupNone)}));
  EXPECT_TRUE(IsWaived(SkipReason::kCatchupNone));
  EXPECT_FALSE(IsWaived(SkipReason::kMisfired));
}

TEST(ReleasePolicy, ExemptRunsIgnoreGraceAndCatchup) {
  ReleasePolicy p;
  p.misfire_grace = minutes{1};
  p.catchup = ledger::Catchup::kNone;
  const auto d = Sorted(DecideRelease(
      {{1, "a", T("01:00"), true}, {2, "a", T("02:00"), true}}, p, T("09:00")));
  EXPECT_EQ(d, (std::vector<ReleaseDecision>{Released(1), Released(2)}));
}

TEST(ReleasePolicy, PausedHoldsOrSkips) {
  ReleasePolicy p;
  p.paused = true;
  p.on_pause = ledger::OnPause::kHold;
  EXPECT_EQ(DecideRelease({{1, "a", T("09:00"), false}, {2, "a", T("09:00"), true}}, p,
                          T("09:00")),
            (std::vector<ReleaseDecision>{Hold(1)}));
  p.on_pause = ledger::OnPause::kSkip;
  EXPECT_EQ(DecideRelease({{1, "a", T("09:00"), false}}, p, T("09:00")),
            (std::vector<ReleaseDecision>{Skip(1, SkipReason::kPaused)}));
}

TEST(RunStateNames, RoundTrip) {
  for (auto s : {RunState::kPending, RunState::kRunning, RunState::kSucceeded, RunState::kFailed,
                 RunState::kUnknown, RunState::kSkipped, RunState::kAwaitingApproval,
                 RunState::kCancelled}) {
    EXPECT_EQ(ParseRunState(Name(s)), s);
  }
  EXPECT_EQ(Name(RunState::kAwaitingApproval), "awaiting_approval");
  EXPECT_EQ(Name(SkipReason::kCatchupNone), "catchup_none");
  EXPECT_FALSE(ParseRunState("done").has_value());
}

}  // namespace
}  // namespace cronledger::ledger
