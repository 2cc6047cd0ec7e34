// The store conformance suite's fixture: parameterised by backend, with
// helpers that build the params a planner would.
#ifndef CRONLEDGER_TESTS_STORE_CONFORMANCE_H_
#define CRONLEDGER_TESTS_STORE_CONFORMANCE_H_

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cronledger/schedule.h"
#include "store/store.h"
#include "store/store_factory.h"

namespace cronledger::testing {

inline store::Instant InstantAt(const std::string& rfc3339) {
  auto t = ParseRfc3339(rfc3339);
  EXPECT_TRUE(t.ok()) << rfc3339;
  return std::chrono::time_point_cast<std::chrono::milliseconds>(*t);
}
inline std::chrono::sys_seconds SecondsAt(const std::string& rfc3339) {
  return *ParseRfc3339(rfc3339);
}

// For tests outside the fixture: job "j" with `n` partitions ("p0", ...)
// due at 2026-11-05T09:00Z, planned at 08:00.
inline void PlanPartitionsDue(store::Store& s, int n) {
  ASSERT_TRUE(
      s.JobSync({"j", R"({"schedule":"0 9 * * *"})", InstantAt("2026-11-01T00:00:00Z")}).ok());
  store::PlannedOccurrence occ;
  occ.scheduled_at = SecondsAt("2026-11-05T09:00:00Z");
  occ.local_time = "2026-11-05T09:00:00Z";
  occ.job_version = 1;
  occ.tzdata = "2025b";
  for (int i = 0; i < n; ++i) occ.runs.push_back({"p" + std::to_string(i), "d", "2026-11-05"});
  store::PlanParams p;
  p.job = "j";
  p.occurrences = {occ};
  p.planned_through = occ.scheduled_at;
  p.now = InstantAt("2026-11-05T08:00:00Z");
  ASSERT_TRUE(s.RunPlan(p).ok());
}
// Releases them a second after they are due; how many were released.
inline int ReleasePartitionsDue(store::Store& s) {
  store::ReleaseParams r;
  r.job = "j";
  r.policy.misfire_grace = std::chrono::hours{24};
  r.now = InstantAt("2026-11-05T09:00:01Z");
  auto released = s.RunRelease(r);
  EXPECT_TRUE(released.ok()) << released.status().ToString();
  return released.ok() ? released->released : -1;
}

class StoreConformance : public ::testing::TestWithParam<StoreFactory> {
 protected:
  void SetUp() override {
    backend_ = GetParam().make();
    auto s = backend_->Open();
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(*s);
  }

  store::Store& S() { return *store_; }

  void Reopen() {
    store_.reset();
    auto s = backend_->Open();
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(*s);
  }

  // Creates `job` with a simple definition.
  void AddJob(const std::string& job, const std::string& now = "2026-11-01T00:00:00Z",
              const std::string& definition = R"({"schedule":"0 9 * * *"})") {
    auto r = S().JobSync({job, definition, InstantAt(now)});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }

  // Plans, for job `job`, one run per partition at each time ("HH:MM" on
  // 2026-11-05, period "THH:MM") and releases everything due at 12:00.
  void Setup(const std::vector<std::string>& partitions,
             const std::vector<std::string>& times = {"09:00"}, const std::string& job = "j") {
    AddJob(job);
    std::vector<store::PlannedOccurrence> occs;
    for (const auto& t : times) {
      const std::string at = "2026-11-05T" + t + ":00Z";
      occs.push_back(Occurrence(at, partitions, "T" + t));
    }
    Plan(job, occs, "2026-11-05T" + times.back() + ":00Z", "2026-11-05T08:00:00Z");
    store::ReleaseParams r;
    r.job = job;
    r.policy.misfire_grace = std::chrono::hours{24};
    r.now = InstantAt("2026-11-05T12:00:00Z");
    ASSERT_TRUE(S().RunRelease(r).ok());
  }

  // One occurrence at `at` with one run per partition, period = date part.
  static store::PlannedOccurrence Occurrence(const std::string& at,
                                             const std::vector<std::string>& partitions,
                                             const std::string& period = "") {
    store::PlannedOccurrence o;
    o.scheduled_at = SecondsAt(at);
    o.local_time = at;
    o.job_version = 1;
    o.tzdata = "2025b";
    const std::string p = period.empty() ? at.substr(0, 10) : period;
    for (const auto& part : partitions) o.runs.push_back({part, p, at.substr(0, 10)});
    return o;
  }

  store::PlanResult Plan(const std::string& job, std::vector<store::PlannedOccurrence> occs,
                         const std::string& through, const std::string& now) {
    store::PlanParams p;
    p.job = job;
    p.occurrences = std::move(occs);
    p.planned_through = SecondsAt(through);
    p.now = InstantAt(now);
    auto r = S().RunPlan(p);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : store::PlanResult{};
  }

  std::vector<store::RunRecord> Runs(const std::string& job) {
    store::RunQuery q;
    q.job = job;
    q.limit = 100000;
    auto r = S().RunList(q);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : std::vector<store::RunRecord>{};
  }

  std::vector<store::EventRecord> Events(const std::string& job, const std::string& type = "") {
    store::EventQuery q;
    q.job = job;
    if (!type.empty()) q.type = type;
    q.limit = 100000;
    auto r = S().EventList(q);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : std::vector<store::EventRecord>{};
  }

  // Claims up to `limit` due runs of job "j" (one step, "deliver").
  std::vector<store::ClaimedRun> Claim(const std::string& now, int limit,
                                       const std::string& node = "n1") {
    store::ClaimRule rule;
    rule.job = "j";
    rule.lease_ttl = std::chrono::minutes{5};
    rule.overlap = ledger::Overlap::kAllow;
    rule.steps = {"deliver"};
    store::ClaimParams p;
    p.now = InstantAt(now);
    p.node = node;
    p.limit = limit;
    p.rules = {rule};
    auto r = S().RunClaim(p);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : std::vector<store::ClaimedRun>{};
  }

  store::ClaimedRun ClaimOne(const std::string& now, const std::string& node = "n1") {
    auto claimed = Claim(now, 1, node);
    EXPECT_EQ(claimed.size(), 1u);
    return claimed.empty() ? store::ClaimedRun{} : claimed[0];
  }

  // Ends the attempt; the run becomes `state` (pending: a retry).
  void End(const store::ClaimedRun& c, const std::string& now, ledger::RunState state,
           ledger::EndClass end = ledger::EndClass::kRetryable) {
    store::FinishParams f;
    f.run_id = c.run.id;
    f.token = c.token;
    f.now = InstantAt(now);
    f.node = "n1";
    f.end_class = end;
    f.decision.state = state;
    auto r = S().RunFinishAttempts({f});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_TRUE(r->at(0).ok()) << r->at(0).ToString();
  }

  std::unique_ptr<StoreBackend> backend_;
  std::unique_ptr<store::Store> store_;
};

}  // namespace cronledger::testing

#endif  // CRONLEDGER_TESTS_STORE_CONFORMANCE_H_
