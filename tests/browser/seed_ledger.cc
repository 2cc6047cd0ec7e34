// Seeds the ledger the browser tests look at, through the Store interface
// and the real planner, with explicit outcomes the tests then assert.
//
//   seed_ledger seed CONFIG     plans and finishes the last 10 business dates
//   seed_ledger finish CONFIG   claims the run still pending (daily_report,
//                               initech, today) and finishes it succeeded
//
// CONFIG is the test's cronledger.toml (sqlite store, executor "external",
// so serve never claims anything itself): jobs daily_report (acme, globex,
// initech) and billing (eu, us), both "0 0 * * *" in UTC. With D today
// (UTC), dates D-9 .. D are planned on a fake clock at each 00:00; each
// run's attempt starts at 00:00:02 and ends some minutes later:
//   daily_report: every run succeeded, except globex on D-3 and on D
//                 (failed, exit 65); initech on D is left pending (serve
//                 releases it, nobody claims it): on D, expected 3,
//                 succeeded 1, failed 1, in progress 1; 10 dates with a
//                 finish time, 2 of them incomplete.
//   billing:      (apac, eu, us) every run succeeded, except on D: eu
//                 unknown (its step timed out, its effect
//                 settlement-eu-D in doubt), apac skipped as misfired
//                 (serve's gap watch then holds it awaiting approval: missing
//                 either way), us skipped as coalesced (waived): on D,
//                 expected 3, unknown 1, missing 1, waived 1.
// The real clock is read once (through cronledger::Clock) for today.
#include <sqlite3.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>
#include <variant>

#include "config/config.h"
#include "cronledger/clock.h"
#include "cronledger/schedule.h"
#include "engine/planner.h"
#include "ledger/names.h"
#include "store/sqlite/sqlite_store.h"

namespace cronledger {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;

constexpr int kDays = 10;

int Fail(const std::string& what) {
  std::cerr << "seed_ledger: " << what << "\n";
  return 1;
}

store::Instant Ms(Clock::TimePoint t) { return store::ToInstant(t); }

// Marks the claimed run's steps done and ends its attempt at `end`.
Status Finish(store::Store& store, const store::ClaimedRun& c, const std::string& job,
              Clock::TimePoint start, Clock::TimePoint end, ledger::RunState state) {
  const std::vector<std::string> steps =
      job == "billing" ? std::vector<std::string>{"settle"}
                       : std::vector<std::string>{"generate", "deliver"};
  store::FinishParams f;
  f.run_id = c.run.id;
  f.token = c.token;
  f.node = "seed-node";
  f.now = Ms(end);
  if (state == ledger::RunState::kSucceeded) {
    for (std::size_t i = 0; i < steps.size(); ++i) {
      if (i > 0) {
        Status s = store.StepUpdate(
            {c.run.id, c.token, steps[i], ledger::StepStatus::kRunning, Ms(start), "seed-node"});
        if (!s.ok()) return s;
      }
      Status s = store.StepUpdate(
          {c.run.id, c.token, steps[i], ledger::StepStatus::kSucceeded,
           Ms(start + (end - start) * static_cast<int>(i + 1) / static_cast<int>(steps.size())),
           "seed-node"});
      if (!s.ok()) return s;
    }
    f.exit_status = 0;
    f.step = steps.back();
    f.output_tail = "report for " + c.run.business_date + " <b>delivered</b> to " +
                    c.run.partition + "\n";
    f.decision.state = ledger::RunState::kSucceeded;
  } else if (state == ledger::RunState::kFailed) {
    Status s = store.StepUpdate(
        {c.run.id, c.token, steps[0], ledger::StepStatus::kFailed, Ms(end), "seed-node"});
    if (!s.ok()) return s;
    f.end_class = ledger::EndClass::kPermanent;
    f.exit_status = 65;
    f.step = steps[0];
    f.output_tail = "error: input orders.csv has a bad row 17\n";
    f.decision.state = ledger::RunState::kFailed;
    f.decision.reason = "exit 65: permanent";
  } else {
    // The settlement was sent and never answered: its effect is in doubt.
    store::EffectBeginParams b;
    b.run_id = c.run.id;
    b.token = c.token;
    b.key = "settlement-" + c.run.partition + "-" + c.run.business_date;
    b.now = Ms(start + seconds(1));
    b.node = "seed-node";
    auto begun = store.EffectBegin(b);
    if (!begun.ok()) return begun.status();
    f.end_class = ledger::EndClass::kTimeout;
    f.step = steps[0];
    f.output_tail = "settling... (no answer from the bank)\n";
    f.decision.state = ledger::RunState::kUnknown;
    f.decision.reason = "timeout of a step that is not idempotent";
  }
  auto finished = store.RunFinishAttempts({f});
  if (!finished.ok()) return finished.status();
  return finished->at(0);
}

std::vector<store::ClaimRule> Rules(const std::string& job) {
  store::ClaimRule rule;
  rule.job = job;
  rule.overlap = ledger::Overlap::kAllow;
  rule.steps = job == "billing" ? std::vector<std::string>{"settle"}
                                : std::vector<std::string>{"generate", "deliver"};
  return {rule};
}

Status Sql(const std::string& db, const std::string& sql) {
  sqlite3* handle = nullptr;
  if (sqlite3_open(db.c_str(), &handle) != SQLITE_OK) {
    sqlite3_close(handle);
    return Status(StatusCode::kIOError, "cannot open " + db);
  }
  sqlite3_busy_timeout(handle, 10000);
  char* error = nullptr;
  const int rc = sqlite3_exec(handle, sql.c_str(), nullptr, nullptr, &error);
  const std::string message = error != nullptr ? error : "";
  sqlite3_free(error);
  sqlite3_close(handle);
  if (rc != SQLITE_OK) return Status(StatusCode::kIOError, message + ": " + sql);
  return Status::Ok();
}

int Seed(const config::Config& config, store::Store& store, const std::string& db) {
  const auto today = std::chrono::floor<std::chrono::days>(RealClock().Now());
  const std::string today_text = FormatDate(std::chrono::year_month_day(today));
  FakeClock clock(today - std::chrono::days(kDays));
  engine::Planner planner(config, store, clock);
  for (int back = kDays - 1; back >= 0; --back) {
    const Clock::TimePoint midnight = today - std::chrono::days(back);
    const int i = kDays - 1 - back;  // 0 for the oldest date
    clock.Set(midnight - seconds(30));
    if (Status s = planner.PlanOnce(clock.Now()); !s.ok()) return Fail(s.ToString());
    for (const std::string job : {"daily_report", "billing"}) {
      store::ReleaseParams release;
      release.job = job;
      release.now = Ms(midnight + seconds(1));
      if (auto r = store.RunRelease(release); !r.ok()) return Fail(r.status().ToString());
      if (back == 0) {
        // Today: daily_report/initech stays pending (unreleased: serve
        // releases it, nobody claims it); billing's apac misfired and us
        // coalesced (waived), before anything is claimed.
        const std::string where = " AND business_date = '" + today_text + "'";
        Status s = job == "daily_report"
                       ? Sql(db, "UPDATE runs SET released = 0 WHERE job = 'daily_report' AND "
                                 "partition = 'initech'" + where)
                       : Sql(db,
                             "UPDATE runs SET state = 'skipped', reason = CASE partition WHEN "
                             "'apac' THEN 'misfired' ELSE 'coalesced' END WHERE job = 'billing' "
                             "AND partition IN ('apac', 'us')" + where);
        if (!s.ok()) return Fail(s.ToString());
      }
      const Clock::TimePoint start = midnight + seconds(2);
      auto claimed = store.RunClaim({Ms(start), "seed-node", 10, Rules(job)});
      if (!claimed.ok()) return Fail(claimed.status().ToString());
      for (const auto& c : *claimed) {
        const std::string& p = c.run.partition;
        ledger::RunState state = ledger::RunState::kSucceeded;
        // Later every day: the drift the chart is there to show.
        minutes took = minutes(4 + 2 * i);
        if (job == "daily_report") {
          if (p == "initech") took = minutes(6 + 2 * i);
          if (p == "globex") {
            took = minutes(3 + i);
            if (back == 0 || back == 3) state = ledger::RunState::kFailed;
          }
        } else {
          took = minutes(1 + (i % 4) + (p == "eu" ? 2 : 0));
          if (back == 0 && p == "eu") state = ledger::RunState::kUnknown;
        }
        if (Status s = Finish(store, c, job, start, start + took, state); !s.ok()) {
          return Fail(s.ToString());
        }
      }
    }
  }
  std::cout << "seeded " << kDays << " business dates through " << today_text << "\n";
  return 0;
}

// The pending run of daily_report (initech, today) claimed and succeeded.
int FinishPending(store::Store& store) {
  const Clock::TimePoint now = RealClock().Now();
  auto claimed = store.RunClaim({Ms(now), "seed-node", 10, Rules("daily_report")});
  if (!claimed.ok()) return Fail(claimed.status().ToString());
  if (claimed->size() != 1 || claimed->front().run.partition != "initech") {
    return Fail("expected to claim exactly initech's run of today, claimed " +
                std::to_string(claimed->size()));
  }
  if (Status s = Finish(store, claimed->front(), "daily_report", now, now + seconds(1),
                        ledger::RunState::kSucceeded);
      !s.ok()) {
    return Fail(s.ToString());
  }
  std::cout << "finished run " << claimed->front().run.id << "\n";
  return 0;
}

int Main(int argc, char** argv) {
  if (argc != 3) return Fail("usage: seed_ledger seed|finish CONFIG");
  const std::string mode = argv[1];
  auto loaded = config::LoadConfig(argv[2]);
  if (!std::holds_alternative<config::Config>(loaded)) return Fail("cannot load the config");
  const config::Config config = std::get<config::Config>(loaded);
  const std::string prefix = "sqlite:";
  if (!config.server.store.starts_with(prefix)) return Fail("the config's store is not sqlite");
  std::string db = config.server.store.substr(prefix.size());
  if (!db.starts_with("/")) db = config.dir + "/" + db;
  store::SqliteOptions o;
  o.path = db;
  auto opened = store::SqliteStore::Open(o);
  if (!opened.ok()) return Fail(opened.status().ToString());
  if (mode == "seed") return Seed(config, **opened, db);
  if (mode == "finish") return FinishPending(**opened);
  return Fail("unknown mode " + mode);
}

}  // namespace
}  // namespace cronledger

int main(int argc, char** argv) { return cronledger::Main(argc, argv); }
