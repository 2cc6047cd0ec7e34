// The dispatcher on PostgreSQL with the database's clock (docs/architecture.md,
// Time: every ledger decision, backoff included, on the database's clock; a
// node's own clock only times local waits), on a node whose clock is an
// hour ahead. Against the test server (ctest's pg_server fixture).
#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>

#include "cronledger/clock.h"
#include "engine/dispatcher.h"
#include "store/conformance.h"
#include "store/postgres/postgres_store.h"
#include "store/store_factory.h"

namespace cronledger::engine {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;

void Admin(const std::string& sql) {
  PGconn* c = PQconnectdb(testing::TestPostgresUrl().c_str());
  PQsetNoticeProcessor(c, [](void*, const char*) {}, nullptr);
  PQclear(PQexec(c, sql.c_str()));
  PQfinish(c);
}

class DispatcherOnPostgres : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(testing::TestPostgresUrl().empty()) << "no PostgreSQL test server";
    static std::atomic<int> n{0};
    schema_ = "d_" + std::to_string(getpid()) + "_" + std::to_string(n++);
    Admin("CREATE SCHEMA " + schema_);
    store::PostgresOptions o;
    o.url = testing::TestPostgresSchemaUrl(schema_);
    o.database_clock = true;
    auto s = store::PostgresStore::Open(o);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(*s);
  }
  void TearDown() override {
    store_.reset();
    if (!schema_.empty()) Admin("DROP SCHEMA IF EXISTS " + schema_ + " CASCADE");
  }

  std::string schema_;
  std::unique_ptr<store::PostgresStore> store_;
};

// The first attempt exits 75 (retryable), with no backoff: the retry is due
// at once by the database's clock. Decided on the node's own clock, an hour
// ahead, it would wait an hour.
TEST_F(DispatcherOnPostgres, ARetryIsDueByTheDatabasesClockNotTheNodes) {
  config::Config config;
  char tmpl[] = "/tmp/cronledger-dispatch-pg-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  config.dir = dir;
  config.server.log_dir = dir + "/logs";
  config::JobConfig job;
  job.name = "j";
  job.schedule = "0 9 * * *";
  job.timezone = "UTC";
  job.executor = config::Executor::kInprocess;
  config::StepConfig step;
  step.name = "work";
  step.timeout = std::chrono::seconds{60};
  job.steps = {step};
  job.retry.initial_backoff = milliseconds{0};
  job.retry.max_backoff = milliseconds{0};
  job.retry.jitter = 0.0;
  config.jobs.push_back(job);

  // One run, due long ago (planned and released on the database's clock).
  ASSERT_TRUE(store_->JobSync({"j", R"({"schedule":"0 9 * * *"})", testing::InstantAt(
                                                                       "2026-11-01T00:00:00Z")})
                  .ok());
  store::PlannedOccurrence occ;
  occ.scheduled_at = testing::SecondsAt("2026-11-05T09:00:00Z");
  occ.local_time = "2026-11-05T09:00:00Z";
  occ.job_version = 1;
  occ.tzdata = "2025b";
  occ.runs.push_back({"default", "2026-11-05", "2026-11-05"});
  store::PlanParams plan;
  plan.job = "j";
  plan.occurrences = {occ};
  plan.planned_through = occ.scheduled_at;
  ASSERT_TRUE(store_->RunPlan(plan).ok());
  store::ReleaseParams release;
  release.job = "j";
  release.policy.misfire_grace = hours{24 * 365 * 100};
  ASSERT_EQ(store_->RunRelease(release)->released, 1);

  // This node's clock: an hour ahead of the database's.
  const store::Instant db_now = *store_->LedgerNow(store::Instant{});
  FakeClock clock{Clock::TimePoint{(db_now + hours{1}).time_since_epoch()}};
  HandlerRegistry handlers;
  std::atomic<int> calls{0};
  handlers.Register("j", [&](const RunContext&) { return ++calls == 1 ? 75 : 0; });
  DefaultStepRunner runner(config, clock, &handlers);
  DispatcherOptions o;
  o.node = "ahead";
  o.max_workers = 1;
  o.jitter_seed = 42;
  o.handlers = &handlers;
  {
    Dispatcher d(config, *store_, clock, runner, o);
    auto first = d.ClaimOnce(clock.Now());
    ASSERT_TRUE(first.ok()) << first.status().ToString();
    ASSERT_EQ(*first, 1);
    d.WaitIdle();
    // Pending again, its retry due now by the database's clock: claimed at
    // once, and it succeeds.
    auto second = d.ClaimOnce(clock.Now());
    ASSERT_TRUE(second.ok()) << second.status().ToString();
    EXPECT_EQ(*second, 1) << "the retry waits for the node's clock, an hour ahead";
    d.WaitIdle();
  }
  store::RunQuery q;
  q.job = "j";
  const auto runs = *store_->RunList(q);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].state, ledger::RunState::kSucceeded);
  EXPECT_EQ(runs[0].attempts, 2);
  EXPECT_EQ(calls.load(), 2);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace cronledger::engine
