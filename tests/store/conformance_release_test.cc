// Store conformance: release (misfire, catch-up, pause), queries, events,
// statistics.
#include "store/conformance.h"

namespace cronledger::testing {
namespace {

using ledger::RunState;
using ledger::SkipReason;

class StoreRelease : public StoreConformance {
 protected:
  store::ReleaseResult Release(const std::string& job, const std::string& now,
                               ledger::Catchup catchup = ledger::Catchup::kAll,
                               ledger::OnPause on_pause = ledger::OnPause::kHold,
                               std::chrono::seconds grace = std::chrono::hours{1}) {
    store::ReleaseParams p;
    p.job = job;
    p.policy.misfire_grace = grace;
    p.policy.catchup = catchup;
    p.policy.on_pause = on_pause;
    p.now = InstantAt(now);
    auto r = S().RunRelease(p);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : store::ReleaseResult{};
  }

  // "period:state[:reason][:released]" for each run, oldest first.
  std::vector<std::string> Summary(const std::string& job) {
    auto runs = Runs(job);
    std::sort(runs.begin(), runs.end(),
              [](const auto& a, const auto& b) { return a.id < b.id; });
    std::vector<std::string> out;
    for (const auto& r : runs) {
      std::string s = r.partition + ":" + r.period + ":" + std::string(ledger::Name(r.state));
      if (r.reason) s += ":" + std::string(ledger::Name(*r.reason));
      if (r.released) s += ":released";
      out.push_back(s);
    }
    return out;
  }

  // Hourly occurrences 06:00 .. 09:00 on 2026-11-05 for `partitions`.
  void PlanFourHours(const std::string& job, const std::vector<std::string>& partitions) {
    std::vector<store::PlannedOccurrence> occs;
    for (const char* h : {"06", "07", "08", "09"}) {
      const std::string at = std::string("2026-11-05T") + h + ":00:00Z";
      occs.push_back(Occurrence(at, partitions, std::string("T") + h));
    }
    Plan(job, occs, "2026-11-05T09:00:00Z", "2026-11-05T05:00:00Z");
  }
};

TEST_P(StoreRelease, NothingBeforeItIsDue) {
  AddJob("j");
  PlanFourHours("j", {"a"});
  const auto r = Release("j", "2026-11-05T05:59:59Z");
  EXPECT_EQ(r.released, 0);
  EXPECT_EQ(r.skipped, 0);
  auto due = S().RunListDue(InstantAt("2026-11-05T12:00:00Z"), 10);
  ASSERT_TRUE(due.ok());
  EXPECT_TRUE(due->empty());
}

// The outlook tells an idle server which jobs have runs to judge now and
// when the next planned run falls due.
TEST_P(StoreRelease, OutlookNamesDueJobsAndTheNextInstant) {
  AddJob("j");
  AddJob("k");
  PlanFourHours("j", {"a", "b"});
  Plan("k", {Occurrence("2026-11-05T07:30:00Z", {"a"}, "T0730")}, "2026-11-05T07:30:00Z",
       "2026-11-05T05:00:00Z");
  auto o = S().RunReleaseOutlook(InstantAt("2026-11-05T05:00:00Z"));
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_TRUE(o->due_jobs.empty());
  EXPECT_EQ(o->next_at, SecondsAt("2026-11-05T06:00:00Z"));

  o = S().RunReleaseOutlook(InstantAt("2026-11-05T07:45:00Z"));
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->due_jobs, (std::vector<std::string>{"j", "k"}));
  EXPECT_EQ(o->next_at, SecondsAt("2026-11-05T08:00:00Z"));

  Release("j", "2026-11-05T07:45:00Z");
  o = S().RunReleaseOutlook(InstantAt("2026-11-05T07:45:00Z"));
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->due_jobs, (std::vector<std::string>{"k"}));

  // Held runs of a paused job stay due until a release pass lets them go.
  ASSERT_TRUE(S().JobSetPaused({"k", true, "alice", "maintenance",
                                InstantAt("2026-11-05T07:46:00Z")})
                  .ok());
  Release("k", "2026-11-05T07:46:00Z");
  o = S().RunReleaseOutlook(InstantAt("2026-11-05T09:30:00Z"));
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->due_jobs, (std::vector<std::string>{"j", "k"}));
  EXPECT_FALSE(o->next_at.has_value());
}

TEST_P(StoreRelease, DueRunWithinGraceIsReleasedOnce) {
  AddJob("j");
  PlanFourHours("j", {"a"});
  EXPECT_EQ(Release("j", "2026-11-05T06:00:00Z").released, 1);
  EXPECT_EQ(Release("j", "2026-11-05T06:00:01Z").released, 0);
  EXPECT_EQ(Summary("j"), (std::vector<std::string>{"a:T06:pending:released", "a:T07:pending",
                                                    "a:T08:pending", "a:T09:pending"}));
  auto due = S().RunListDue(InstantAt("2026-11-05T06:00:01Z"), 10);
  ASSERT_TRUE(due.ok());
  ASSERT_EQ(due->size(), 1u);
  EXPECT_EQ((*due)[0].period, "T06");
}

TEST_P(StoreRelease, LoneRunBeyondGraceIsMisfired) {
  AddJob("j");
  PlanFourHours("j", {"a"});
  const auto r = Release("j", "2026-11-05T06:30:01Z", ledger::Catchup::kAll,
                         ledger::OnPause::kHold, std::chrono::minutes{30});
  EXPECT_EQ(r.skipped, 1);
  EXPECT_EQ(Summary("j")[0], "a:T06:skipped:misfired");
  const auto skipped = Events("j", "skipped");
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_EQ(skipped[0].reason, "misfired");
  EXPECT_NE(skipped[0].details.find("\"waived\":false"), std::string::npos);
  EXPECT_NE(skipped[0].details.find("\"late_seconds\":1801"), std::string::npos)
      << skipped[0].details;
}

TEST_P(StoreRelease, CatchupAllRunsEachWithinGrace) {
  AddJob("j");
  PlanFourHours("j", {"a", "b"});
  Release("j", "2026-11-05T09:30:00Z", ledger::Catchup::kAll, ledger::OnPause::kHold,
          std::chrono::hours{2});
  EXPECT_EQ(Summary("j"), (std::vector<std::string>{
                              "a:T06:skipped:misfired", "b:T06:skipped:misfired",
                              "a:T07:skipped:misfired", "b:T07:skipped:misfired",
                              "a:T08:pending:released", "b:T08:pending:released",
                              "a:T09:pending:released", "b:T09:pending:released"}));
}

TEST_P(StoreRelease, CatchupLatestCoalescesOlderOnes) {
  AddJob("j");
  PlanFourHours("j", {"a"});
  Release("j", "2026-11-05T09:30:00Z", ledger::Catchup::kLatest);
  EXPECT_EQ(Summary("j"), (std::vector<std::string>{
                              "a:T06:skipped:coalesced", "a:T07:skipped:coalesced",
                              "a:T08:skipped:coalesced", "a:T09:pending:released"}));
  // The newest beyond grace is misfired, not run.
  AddJob("k");
  PlanFourHours("k", {"a"});
  Release("k", "2026-11-05T12:00:00Z", ledger::Catchup::kLatest, ledger::OnPause::kHold,
          std::chrono::minutes{30});
  EXPECT_EQ(Summary("k")[3], "a:T09:skipped:misfired");
  EXPECT_EQ(Summary("k")[0], "a:T06:skipped:coalesced");
}

TEST_P(StoreRelease, CatchupNoneSkipsAllOverdue) {
  AddJob("j");
  PlanFourHours("j", {"a"});
  Release("j", "2026-11-05T08:00:00Z", ledger::Catchup::kNone);
  EXPECT_EQ(Summary("j"), (std::vector<std::string>{"a:T06:skipped:catchup_none",
                                                    "a:T07:skipped:catchup_none",
                                                    "a:T08:skipped:catchup_none",
                                                    "a:T09:pending"}));
  // Afterwards a single due run is released as usual.
  Release("j", "2026-11-05T09:00:05Z", ledger::Catchup::kNone);
  EXPECT_EQ(Summary("j")[3], "a:T09:pending:released");
  const auto skipped = Events("j", "skipped");
  ASSERT_EQ(skipped.size(), 3u);
  EXPECT_NE(skipped[0].details.find("\"waived\":true"), std::string::npos);
}

TEST_P(StoreRelease, PauseWithHoldKeepsRunsThenRunsThemWhateverTheirAge) {
  AddJob("j");
  PlanFourHours("j", {"a"});
  ASSERT_TRUE(S().JobSetPaused({"j", true, "alice", "maintenance",
                                InstantAt("2026-11-05T05:30:00Z")})
                  .ok());
  Release("j", "2026-11-05T07:00:00Z", ledger::Catchup::kAll, ledger::OnPause::kHold,
          std::chrono::minutes{10});
  EXPECT_EQ(Summary("j")[0], "a:T06:pending");
  EXPECT_EQ(Summary("j")[1], "a:T07:pending");
  ASSERT_TRUE(S().JobSetPaused({"j", false, "alice", "done", InstantAt("2026-11-05T09:30:00Z")})
                  .ok());
  Release("j", "2026-11-05T09:30:00Z", ledger::Catchup::kAll, ledger::OnPause::kHold,
          std::chrono::minutes{10});
  // Held ones run; the ones that came due after the last pass while paused
  // were never held and are judged normally.
  EXPECT_EQ(Summary("j"), (std::vector<std::string>{
                              "a:T06:pending:released", "a:T07:pending:released",
                              "a:T08:skipped:misfired", "a:T09:skipped:misfired"}));
}

TEST_P(StoreRelease, PauseWithSkipRecordsPausedSkips) {
  AddJob("j");
  PlanFourHours("j", {"a"});
  ASSERT_TRUE(S().JobSetPaused({"j", true, "bob", "incident", InstantAt("2026-11-05T05:30:00Z")})
                  .ok());
  Release("j", "2026-11-05T07:00:00Z", ledger::Catchup::kAll, ledger::OnPause::kSkip);
  EXPECT_EQ(Summary("j")[0], "a:T06:skipped:paused");
  EXPECT_EQ(Summary("j")[1], "a:T07:skipped:paused");
  EXPECT_EQ(Summary("j")[2], "a:T08:pending");
}

TEST_P(StoreRelease, PauseAllAppliesToEveryJob) {
  AddJob("j");
  PlanFourHours("j", {"a"});
  ASSERT_TRUE(S().JobSetPaused({std::nullopt, true, "ops", "freeze",
                                InstantAt("2026-11-05T05:00:00Z")})
                  .ok());
  auto paused = S().IsPausedAll();
  ASSERT_TRUE(paused.ok());
  EXPECT_TRUE(*paused);
  EXPECT_EQ(Release("j", "2026-11-05T06:00:00Z").released, 0);
  ASSERT_TRUE(S().JobSetPaused({std::nullopt, false, "ops", "thaw",
                                InstantAt("2026-11-05T06:10:00Z")})
                  .ok());
  EXPECT_EQ(Release("j", "2026-11-05T06:10:00Z").released, 1);
}

TEST_P(StoreRelease, PauseTwiceIsAConflictAndUnknownJobNotFound) {
  AddJob("j");
  ASSERT_TRUE(S().JobSetPaused({"j", true, "a", "r", InstantAt("2026-11-05T05:00:00Z")}).ok());
  const Status again = S().JobSetPaused({"j", true, "a", "r", InstantAt("2026-11-05T05:01:00Z")});
  EXPECT_EQ(again.code(), StatusCode::kConflict);
  EXPECT_EQ(again.message(), "job \"j\" is already paused");
  const Status resume_all =
      S().JobSetPaused({std::nullopt, false, "a", "r", InstantAt("2026-11-05T05:01:00Z")});
  EXPECT_EQ(resume_all.code(), StatusCode::kConflict);
  EXPECT_EQ(resume_all.message(), "everything is not paused");
  const Status ghost = S().JobSetPaused({"ghost", true, "a", "r", InstantAt("2026-11-05T05:00:00Z")});
  EXPECT_EQ(ghost.code(), StatusCode::kNotFound);
  auto job = S().JobGet("j");
  ASSERT_TRUE(job.ok());
  EXPECT_TRUE(job->paused);
  EXPECT_EQ(job->paused_by, "a");
  EXPECT_EQ(job->pause_reason, "r");
  const auto events = Events("j", "paused");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].actor, "a");
  EXPECT_EQ(events[0].reason, "r");
}

TEST_P(StoreRelease, RunListFiltersAndPaginates) {
  AddJob("j");
  PlanFourHours("j", {"a", "b"});
  store::RunQuery q;
  q.job = "j";
  q.partition = "b";
  auto b = S().RunList(q);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->size(), 4u);
  q.partition.reset();
  q.limit = 3;
  auto page1 = S().RunList(q);
  ASSERT_TRUE(page1.ok());
  ASSERT_EQ(page1->size(), 3u);
  EXPECT_GT((*page1)[0].id, (*page1)[1].id);  // newest first
  q.before_id = page1->back().id;
  q.limit = 100;
  auto rest = S().RunList(q);
  ASSERT_TRUE(rest.ok());
  EXPECT_EQ(rest->size(), 5u);
  Release("j", "2026-11-05T09:30:00Z", ledger::Catchup::kLatest);
  store::RunQuery skipped;
  skipped.state = RunState::kSkipped;
  auto s = S().RunList(skipped);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->size(), 6u);
  store::RunQuery by_date;
  by_date.business_date = "2026-11-06";
  auto none = S().RunList(by_date);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  auto one = S().RunGet(page1->front().id);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->id, page1->front().id);
  EXPECT_EQ(S().RunGet(987654).status().code(), StatusCode::kNotFound);
}

TEST_P(StoreRelease, EventsAppendedTogetherKeepTheirOrder) {
  AddJob("j");
  ASSERT_TRUE(S().EventAppendAll({}).ok());
  std::vector<store::EventRecord> batch;
  for (int i = 0; i < 3; ++i) {
    store::EventRecord e;
    e.at = InstantAt("2026-11-05T00:00:00Z");
    e.type = "gap_found";
    e.job = "j";
    e.run_key = "j/default/2026-11-0" + std::to_string(i + 1);
    e.actor = "scanner";
    e.details = R"({"n":)" + std::to_string(i) + "}";
    batch.push_back(e);
  }
  ASSERT_TRUE(S().EventAppendAll(batch).ok());
  const auto all = Events("j");
  ASSERT_EQ(all.size(), 4u);  // config_changed, then the batch
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(all[i + 1].run_key, batch[i].run_key);
    EXPECT_EQ(all[i + 1].details, batch[i].details);
    EXPECT_EQ(all[i + 1].actor, "scanner");
  }
}

TEST_P(StoreRelease, EventsAreAppendOnlyAndQueryable) {
  AddJob("j");
  store::EventRecord e;
  e.at = InstantAt("2026-11-05T00:00:00Z");
  e.type = "trigger";
  e.job = "j";
  e.actor = "carol";
  e.reason = "customer asked";
  e.details = R"({"x":1})";
  ASSERT_TRUE(S().EventAppend(e).ok());
  const auto all = Events("j");
  ASSERT_EQ(all.size(), 2u);  // config_changed, trigger
  EXPECT_LT(all[0].id, all[1].id);
  EXPECT_EQ(all[1].type, "trigger");
  EXPECT_EQ(all[1].actor, "carol");
  EXPECT_EQ(all[1].reason, "customer asked");
  EXPECT_EQ(all[1].details, R"({"x":1})");
  EXPECT_EQ(FormatUtc(std::chrono::floor<std::chrono::seconds>(all[1].at)),
            "2026-11-05T00:00:00Z");

  store::EventQuery tail;
  tail.limit = 1;
  auto last = S().EventList(tail);
  ASSERT_TRUE(last.ok());
  ASSERT_EQ(last->size(), 1u);
  EXPECT_EQ((*last)[0].type, "trigger");
  store::EventQuery since;
  since.since = InstantAt("2026-11-04T00:00:00Z");
  auto after = S().EventList(since);
  ASSERT_TRUE(after.ok());
  ASSERT_EQ(after->size(), 1u);
}

TEST_P(StoreRelease, StatsCountTheBusinessDateAndFindLag) {
  AddJob("j");
  Plan("j",
       {Occurrence("2026-11-04T09:00:00Z", {"a", "b", "c"}),
        Occurrence("2026-11-05T09:00:00Z", {"a", "b", "c"})},
       "2026-11-05T09:00:00Z", "2026-11-04T00:00:00Z");
  // The 04th is misfired (beyond grace); the 05th released.
  Release("j", "2026-11-05T09:10:00Z", ledger::Catchup::kAll, ledger::OnPause::kHold,
          std::chrono::hours{1});
  store::StatsParams p;
  p.job = "j";
  p.business_date = "2026-11-05";
  p.now = InstantAt("2026-11-05T09:10:00Z");
  p.horizon_from = SecondsAt("2026-10-06T00:00:00Z");
  auto stats = S().StatsGet(p);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(stats->by_state["pending"], 3);
  EXPECT_EQ(stats->by_state.count("skipped"), 0u);
  // Runs planned ahead but not yet due are not counted.
  Plan("j", {Occurrence("2026-11-05T23:00:00Z", {"a"}, "late")}, "2026-11-05T23:00:00Z",
       "2026-11-05T09:10:00Z");
  auto with_future = S().StatsGet(p);
  ASSERT_TRUE(with_future.ok());
  EXPECT_EQ(with_future->by_state["pending"], 3);
  EXPECT_EQ(stats->in_flight, 3);
  EXPECT_FALSE(stats->last_success_at.has_value());
  ASSERT_TRUE(stats->oldest_open_scheduled_at.has_value());
  EXPECT_EQ(FormatUtc(*stats->oldest_open_scheduled_at), "2026-11-04T09:00:00Z");

  p.business_date = "2026-11-04";
  auto old = S().StatsGet(p);
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(old->by_state["skipped"], 3);
  EXPECT_EQ(old->by_reason["misfired"], 3);

  // Outside the horizon nothing counts as open.
  p.horizon_from = SecondsAt("2026-11-05T10:00:00Z");
  auto none = S().StatsGet(p);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->oldest_open_scheduled_at.has_value());
}

INSTANTIATE_TEST_SUITE_P(Backends, StoreRelease, ::testing::ValuesIn(AllStoreFactories()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace cronledger::testing
