// Store conformance: MetricsGet, the ledger-wide aggregates of GET /metrics
// (runs by state, attempts by end class, retry successes, recoveries and
// the attempt-duration histogram).
#include "store/conformance.h"

namespace cronledger::testing {
namespace {

using ledger::EndClass;
using ledger::RunState;

class StoreMetrics : public StoreConformance {};

TEST_P(StoreMetrics, CountsTheLedgerByJob) {
  Setup({"a", "b"});
  auto first = Claim("2026-11-05T12:00:01Z", 2);
  ASSERT_EQ(first.size(), 2u);
  const auto& a = first[0].run.partition == "a" ? first[0] : first[1];
  const auto& b = first[0].run.partition == "a" ? first[1] : first[0];
  End(a, "2026-11-05T12:00:05Z", RunState::kPending, EndClass::kRetryable);  // 4 s
  End(b, "2026-11-05T12:00:02Z", RunState::kFailed, EndClass::kPermanent);   // 1 s
  const auto again = ClaimOne("2026-11-05T12:00:10Z");
  ASSERT_EQ(again.run.partition, "a");
  End(again, "2026-11-05T12:00:40Z", RunState::kSucceeded, EndClass::kSucceeded);  // 30 s
  for (const auto& [type, actor] : std::vector<std::pair<std::string, std::string>>{
           {"retry", "alice"}, {"retry", "bob"}, {"backfill", "scanner"}, {"paused", "carol"}}) {
    store::EventRecord e;
    e.at = InstantAt("2026-11-05T13:00:00Z");
    e.type = type;
    e.job = "j";
    e.actor = actor;
    ASSERT_TRUE(S().EventAppend(e).ok());
  }

  store::LedgerMetricsParams p;
  p.duration_bounds = {std::chrono::seconds{1}, std::chrono::seconds{5}, std::chrono::seconds{60}};
  p.recovery_events = {"retry", "backfill"};
  p.automatic_actor = "scanner";
  auto m = S().MetricsGet(p);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->runs["j"], (std::map<std::string, int64_t>{{"failed", 1}, {"succeeded", 1}}));
  EXPECT_EQ(m->attempts["j"],
            (std::map<std::string, int64_t>{{"permanent", 1}, {"retryable", 1}, {"succeeded", 1}}));
  EXPECT_EQ(m->retry_successes["j"], 1);
  EXPECT_EQ(m->recoveries["j"], (std::map<std::string, int64_t>{{"retry", 2}}));
  const store::DurationHistogram& h = m->durations["j"];
  EXPECT_EQ(h.cumulative, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(h.count, 3);
  EXPECT_EQ(h.sum_ms, 35000);
}

TEST_P(StoreMetrics, AnEmptyLedgerCountsNothing) {
  store::LedgerMetricsParams p;
  p.duration_bounds = {std::chrono::seconds{1}};
  p.recovery_events = {"retry"};
  auto m = S().MetricsGet(p);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_TRUE(m->runs.empty());
  EXPECT_TRUE(m->attempts.empty());
  EXPECT_TRUE(m->retry_successes.empty());
  EXPECT_TRUE(m->recoveries.empty());
  EXPECT_TRUE(m->durations.empty());
}

INSTANTIATE_TEST_SUITE_P(Backends, StoreMetrics, ::testing::ValuesIn(AllStoreFactories()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace cronledger::testing
