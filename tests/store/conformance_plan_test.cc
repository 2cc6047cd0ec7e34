// Store conformance: schema, jobs and versions, partitions, planning.
#include <set>

#include "store/conformance.h"

namespace cronledger::testing {
namespace {

using ledger::RunState;

TEST_P(StoreConformance, SchemaRecordsVersionAndCompatibility) {
  auto info = S().GetSchemaInfo();
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_GE(info->version, 1);
  EXPECT_GE(info->compatible_from, 1);
  EXPECT_LE(info->compatible_from, info->version);
  Reopen();  // reopening migrates nothing and keeps the data
  auto again = S().GetSchemaInfo();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->version, info->version);
}

TEST_P(StoreConformance, RefusesADatabaseThatNeedsANewerBinary) {
  AddJob("report");
  store_.reset();
  backend_->SetCompatibleFrom(999);
  auto s = backend_->Open();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.status().message().find("needs cronledger with schema version 999 or newer"),
            std::string::npos)
      << s.status().message();
}

TEST_P(StoreConformance, JobSyncVersionsOnlyOnChange) {
  auto first = S().JobSync({"report", R"({"schedule":"0 9 * * *","timezone":"UTC"})",
                            InstantAt("2026-11-01T00:00:00Z")});
  ASSERT_TRUE(first.ok());
  EXPECT_TRUE(first->created);
  EXPECT_TRUE(first->version_added);
  ASSERT_EQ(first->versions.size(), 1u);
  EXPECT_EQ(first->versions[0].version, 1);
  EXPECT_EQ(FormatUtc(first->versions[0].effective_from), "2026-11-01T00:00:00Z");

  auto same = S().JobSync({"report", R"({"schedule":"0 9 * * *","timezone":"UTC"})",
                           InstantAt("2026-11-02T00:00:00Z")});
  ASSERT_TRUE(same.ok());
  EXPECT_FALSE(same->created);
  EXPECT_FALSE(same->version_added);
  EXPECT_EQ(same->versions.size(), 1u);

  auto changed = S().JobSync({"report", R"({"schedule":"0 10 * * *","timezone":"UTC"})",
                              InstantAt("2026-11-03T00:00:00Z") + std::chrono::milliseconds{250}});
  ASSERT_TRUE(changed.ok());
  EXPECT_TRUE(changed->version_added);
  ASSERT_EQ(changed->versions.size(), 2u);
  EXPECT_EQ(changed->versions[1].version, 2);
  // Effective from the next whole second, never in the past.
  EXPECT_EQ(FormatUtc(changed->versions[1].effective_from), "2026-11-03T00:00:01Z");

  const auto events = Events("report", "config_changed");
  ASSERT_EQ(events.size(), 2u);
  EXPECT_NE(events[1].details.find(R"("schedule":{"from":"0 9 * * *","to":"0 10 * * *"})"),
            std::string::npos)
      << events[1].details;
  EXPECT_EQ(events[1].details.find("timezone"), std::string::npos) << events[1].details;
  auto job = S().JobGet("report");
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(job->current_version, 2);
}

TEST_P(StoreConformance, NewVersionTakesEffectAfterWhatIsPlanned) {
  AddJob("report");
  Plan("report", {Occurrence("2026-11-05T09:00:00Z", {"default"})}, "2026-11-05T09:00:00Z",
       "2026-11-05T08:59:00Z");
  auto changed = S().JobSync({"report", R"({"schedule":"0 10 * * *"})",
                              InstantAt("2026-11-05T08:59:30Z")});
  ASSERT_TRUE(changed.ok());
  ASSERT_EQ(changed->versions.size(), 2u);
  EXPECT_EQ(FormatUtc(changed->versions[1].effective_from), "2026-11-05T09:00:01Z");
}

TEST_P(StoreConformance, PartitionSyncKeepsMembershipHistory) {
  AddJob("report");
  auto a = S().PartitionSync({"report", {"acme", "globex"}, InstantAt("2026-11-01T00:00:00Z")});
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->added, (std::vector<std::string>{"acme", "globex"}));
  EXPECT_TRUE(a->removed.empty());

  auto same = S().PartitionSync({"report", {"globex", "acme"}, InstantAt("2026-11-02T00:00:00Z")});
  ASSERT_TRUE(same.ok());
  EXPECT_TRUE(same->added.empty());
  EXPECT_TRUE(same->removed.empty());

  auto b = S().PartitionSync({"report", {"acme", "initech"}, InstantAt("2026-11-03T00:00:00Z")});
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->added, (std::vector<std::string>{"initech"}));
  EXPECT_EQ(b->removed, (std::vector<std::string>{"globex"}));

  auto c = S().PartitionSync({"report", {"acme", "globex", "initech"},
                              InstantAt("2026-11-04T00:00:00Z")});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->added, (std::vector<std::string>{"globex"}));

  auto history = S().PartitionHistory("report");
  ASSERT_TRUE(history.ok());
  std::vector<std::string> rows;
  for (const auto& i : *history) {
    rows.push_back(i.partition + " " + FormatUtc(i.active_from) + " " +
                   (i.active_to ? FormatUtc(*i.active_to) : "-"));
  }
  EXPECT_EQ(rows, (std::vector<std::string>{
                      "acme 2026-11-01T00:00:00Z -",
                      "globex 2026-11-01T00:00:00Z 2026-11-03T00:00:00Z",
                      "globex 2026-11-04T00:00:00Z -",
                      "initech 2026-11-03T00:00:00Z -",
                  }));
  EXPECT_EQ(Events("report", "partitions_changed").size(), 3u);
}

TEST_P(StoreConformance, PartitionSyncOfUnknownJobIsNotFound) {
  auto r = S().PartitionSync({"nope", {"a"}, InstantAt("2026-11-01T00:00:00Z")});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
}

TEST_P(StoreConformance, PlanCreatesOnePendingRunPerKeyWithEvents) {
  AddJob("report");
  const auto r = Plan("report",
                      {Occurrence("2026-11-05T09:00:00Z", {"acme", "globex"}),
                       Occurrence("2026-11-06T09:00:00Z", {"acme", "globex"})},
                      "2026-11-06T09:00:00Z", "2026-11-05T00:00:00Z");
  EXPECT_EQ(r.occurrences_new, 2);
  EXPECT_EQ(r.runs_planned, 4);
  EXPECT_EQ(r.runs_deduplicated, 0);
  const auto runs = Runs("report");
  ASSERT_EQ(runs.size(), 4u);
  std::set<std::string> keys;
  for (const auto& run : runs) {
    EXPECT_EQ(run.state, RunState::kPending);
    EXPECT_FALSE(run.released);
    EXPECT_EQ(run.attempts, 0);
    keys.insert(run.RunKey());
  }
  EXPECT_EQ(keys, (std::set<std::string>{"report/acme/2026-11-05", "report/acme/2026-11-06",
                                         "report/globex/2026-11-05",
                                         "report/globex/2026-11-06"}));
  const auto planned = Events("report", "planned");
  ASSERT_EQ(planned.size(), 4u);
  for (const auto& e : planned) {
    EXPECT_TRUE(e.run_id.has_value());
    EXPECT_EQ(e.actor, "planner");
    EXPECT_NE(e.details.find("\"tzdata\":\"2025b\""), std::string::npos) << e.details;
  }
  auto job = S().JobGet("report");
  ASSERT_TRUE(job.ok());
  ASSERT_TRUE(job->planned_through.has_value());
  EXPECT_EQ(FormatUtc(*job->planned_through), "2026-11-06T09:00:00Z");
}

TEST_P(StoreConformance, ReplanningIsANoOp) {
  AddJob("report");
  const auto occs = std::vector<store::PlannedOccurrence>{
      Occurrence("2026-11-05T09:00:00Z", {"acme", "globex"})};
  Plan("report", occs, "2026-11-05T09:00:00Z", "2026-11-05T00:00:00Z");
  const auto again = Plan("report", occs, "2026-11-05T09:00:00Z", "2026-11-05T01:00:00Z");
  EXPECT_EQ(again.occurrences_new, 0);
  EXPECT_EQ(again.runs_planned, 0);
  EXPECT_EQ(again.runs_deduplicated, 0);
  EXPECT_EQ(Runs("report").size(), 2u);
  EXPECT_EQ(Events("report", "planned").size(), 2u);
  EXPECT_TRUE(Events("report", "deduplicated").empty());
}

TEST_P(StoreConformance, WatermarkNeverMovesBack) {
  AddJob("report");
  Plan("report", {}, "2026-11-06T00:00:00Z", "2026-11-05T00:00:00Z");
  Plan("report", {}, "2026-11-04T00:00:00Z", "2026-11-05T00:00:00Z");
  auto job = S().JobGet("report");
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(FormatUtc(*job->planned_through), "2026-11-06T00:00:00Z");
}

TEST_P(StoreConformance, LaterOccurrencesOfAPlannedPeriodAreDeduplicated) {
  AddJob("report");
  Plan("report", {Occurrence("2026-11-05T09:00:00Z", {"acme"}, "2026-11-05")},
       "2026-11-05T09:00:00Z", "2026-11-05T00:00:00Z");
  const auto r = Plan("report",
                      {Occurrence("2026-11-05T09:15:00Z", {"acme"}, "2026-11-05"),
                       Occurrence("2026-11-05T09:30:00Z", {"acme"}, "2026-11-05")},
                      "2026-11-05T09:30:00Z", "2026-11-05T00:00:00Z");
  EXPECT_EQ(r.occurrences_new, 2);
  EXPECT_EQ(r.runs_planned, 0);
  EXPECT_EQ(r.runs_deduplicated, 2);
  const auto runs = Runs("report");
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(FormatUtc(runs[0].scheduled_at), "2026-11-05T09:00:00Z");
  const auto dedup = Events("report", "deduplicated");
  ASSERT_EQ(dedup.size(), 2u);
  EXPECT_NE(dedup[0].details.find("2026-11-05T09:15:00Z"), std::string::npos);
  // Re-planning the same window records nothing twice.
  Plan("report", {Occurrence("2026-11-05T09:15:00Z", {"acme"}, "2026-11-05")},
       "2026-11-05T09:30:00Z", "2026-11-05T00:00:00Z");
  EXPECT_EQ(Events("report", "deduplicated").size(), 2u);
}

TEST_P(StoreConformance, PlanForUnknownJobChangesNothing) {
  store::PlanParams p;
  p.job = "ghost";
  p.occurrences = {Occurrence("2026-11-05T09:00:00Z", {"acme"})};
  p.planned_through = SecondsAt("2026-11-05T09:00:00Z");
  p.now = InstantAt("2026-11-05T00:00:00Z");
  auto r = S().RunPlan(p);
  ASSERT_FALSE(r.ok());
  store::RunQuery q;
  q.limit = 10;
  auto all = S().RunList(q);
  ASSERT_TRUE(all.ok());
  EXPECT_TRUE(all->empty());
}

TEST_P(StoreConformance, RunKeyIsUniqueAcrossOccurrences) {
  AddJob("report");
  // Two occurrences that map to the same period in one plan: one run.
  const auto r = Plan("report",
                      {Occurrence("2026-11-05T09:00:00Z", {"acme"}, "P"),
                       Occurrence("2026-11-05T10:00:00Z", {"acme"}, "P")},
                      "2026-11-05T10:00:00Z", "2026-11-05T00:00:00Z");
  EXPECT_EQ(r.runs_planned, 1);
  EXPECT_EQ(r.runs_deduplicated, 1);
  EXPECT_EQ(Runs("report").size(), 1u);
}

INSTANTIATE_TEST_SUITE_P(Backends, StoreConformance, ::testing::ValuesIn(AllStoreFactories()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace cronledger::testing
