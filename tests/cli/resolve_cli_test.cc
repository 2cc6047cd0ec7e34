// `cronledger resolve`, run as a real subprocess against a SQLite ledger in a
// temporary folder. The `unknown` runs it settles are made through the store
// API (as the conformance suite does): plan, release, claim, begin effects
// with the attempt's token, then end the attempt `unknown` (in_doubt), so
// those effects are in doubt for the run.
#include <gtest/gtest.h>
#include <pwd.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/subprocess.h"
#include "common/temp_dir.h"
#include "cronledger/schedule.h"
#include "ledger/names.h"
#include "store/sqlite/sqlite_store.h"
#include "store/store.h"

namespace cronledger {
namespace {

using Json = nlohmann::ordered_json;
using testing::Cronledger;
using testing::ProcessResult;
using TempDir = testing::TempDir;

store::Instant At(const std::string& rfc3339) {
  return std::chrono::time_point_cast<std::chrono::milliseconds>(*ParseRfc3339(rfc3339));
}


std::string ConfigText(const std::string& store) {
  return R"([server]
listen = "127.0.0.1:0"
store = ")" + store + R"("

[[job]]
name = "deliver"
schedule = "0 9 * * *"
timezone = "UTC"

  [[job.step]]
  name = "send"
  command = ["/bin/true"]
)";
}

class ResolveCli : public ::testing::Test {
 protected:
  void SetUp() override {
    config_ = dir_.Write("cronledger.toml", ConfigText("sqlite:ledger.db"));
    store::SqliteOptions o;
    o.path = dir_.File("ledger.db");
    o.synchronous_full = false;
    auto s = store::SqliteStore::Open(o);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(*s);
  }

  // A run of a new job `job` that ends `unknown` (end class in_doubt) after
  // beginning the effects `keys`, which are then in doubt for it. Its id.
  int64_t UnknownRun(const std::string& job, const std::vector<std::string>& keys) {
    auto synced = store_->JobSync({job, R"({"schedule":"0 9 * * *"})", At("2024-01-01T00:00:00Z")});
    EXPECT_TRUE(synced.ok()) << synced.status().ToString();
    store::PlannedOccurrence occ;
    occ.scheduled_at = *ParseRfc3339("2024-01-05T09:00:00Z");
    occ.local_time = "2024-01-05T09:00:00Z";
    occ.job_version = 1;
    occ.tzdata = "2025b";
    occ.runs.push_back({"a", "2024-01-05", "2024-01-05"});
    store::PlanParams plan;
    plan.job = job;
    plan.occurrences = {occ};
    plan.planned_through = occ.scheduled_at;
    plan.now = At("2024-01-05T08:00:00Z");
    EXPECT_TRUE(store_->RunPlan(plan).ok());
    store::ReleaseParams rel;
    rel.job = job;
    rel.policy.misfire_grace = std::chrono::hours{1};
    rel.now = At("2024-01-05T09:00:01Z");
    EXPECT_TRUE(store_->RunRelease(rel).ok());
    store::ClaimRule rule;
    rule.job = job;
    rule.overlap = ledger::Overlap::kAllow;
    rule.steps = {"send"};
    auto claimed = store_->RunClaim({At("2024-01-05T09:00:02Z"), "n1", 1, {rule}});
    EXPECT_TRUE(claimed.ok() && claimed->size() == 1u);
    if (!claimed.ok() || claimed->empty()) return 0;
    const store::ClaimedRun c = claimed->at(0);
    for (const auto& key : keys) {
      auto b = store_->EffectBegin({c.run.id, c.token, key, "fp-" + key,
                                    At("2024-01-05T09:00:03Z"), "n1", ""});
      EXPECT_TRUE(b.ok() && b->outcome == store::EffectBeginOutcome::kProceed);
    }
    store::FinishParams f;
    f.run_id = c.run.id;
    f.token = c.token;
    f.now = At("2024-01-05T09:00:04Z");
    f.node = "n1";
    f.end_class = ledger::EndClass::kInDoubt;
    f.step = "send";
    f.decision.state = ledger::RunState::kUnknown;
    auto r = store_->RunFinishAttempts({f});
    EXPECT_TRUE(r.ok() && r->at(0).ok());
    EXPECT_EQ(store_->RunGet(c.run.id)->state, ledger::RunState::kUnknown);
    return c.run.id;
  }

  ProcessResult Resolve(std::vector<std::string> args) {
    args.insert(args.begin(), {"resolve", "--config", config_});
    return Cronledger(std::move(args));
  }
  Json ShowRun(int64_t id) {
    auto r = Cronledger({"runs", "--config", config_, "--run", std::to_string(id), "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return Json::parse(r.out);
  }
  Json ResolveEvents(int64_t id) {
    Json out = Json::array();
    const Json run = ShowRun(id);  // kept alive: the loop ranges over a part of it
    for (const auto& e : run["events"]) {
      if (e["type"] == "resolve") out.push_back(e);
    }
    return out;
  }
  ledger::RunState StateOf(int64_t id) { return store_->RunGet(id)->state; }

  TempDir dir_;
  std::string config_;
  std::unique_ptr<store::Store> store_;
};

TEST_F(ResolveCli, AnEffectInDoubtResolvedEitherWayPutsTheRunBackToPending) {
  for (const std::string as : {"committed", "failed"}) {
    SCOPED_TRACE(as);
    const int64_t id = UnknownRun("job_" + as, {"mail"});
    ASSERT_GT(id, 0);
    // Before: the run detail shows the effect in doubt.
    const Json before = ShowRun(id);
    ASSERT_EQ(before["effects"].size(), 1u) << before.dump();
    EXPECT_EQ(before["effects"][0]["key"], "mail");
    EXPECT_EQ(before["effects"][0]["state"], "started");
    EXPECT_EQ(before["effects"][0]["fingerprint"], "fp-mail");
    EXPECT_EQ(before["effects"][0]["in_doubt"], true);
    EXPECT_EQ(before["effects"][0]["started_attempt"], 1);

    const auto r = Resolve({std::to_string(id), "--effect", "mail", "--as", as, "--reason",
                            "checked the mail log", "--by", "alice", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err, "");
    const Json run = Json::parse(r.out);
    EXPECT_EQ(run["id"], id);
    EXPECT_EQ(run["state"], "pending");
    EXPECT_EQ(StateOf(id), ledger::RunState::kPending);

    const Json events = ResolveEvents(id);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0]["on_behalf_of"], "alice");
    EXPECT_EQ(events[0]["reason"], "checked the mail log");
    EXPECT_EQ(events[0]["details"]["effect"], "mail");
    EXPECT_EQ(events[0]["details"]["as"], as);
    EXPECT_EQ(events[0]["details"]["to"], "pending");

    const Json after = ShowRun(id)["effects"];
    ASSERT_EQ(after.size(), 1u);
    EXPECT_EQ(after[0]["state"], as);
    EXPECT_EQ(after[0]["in_doubt"], false);
    // Settled by who ran the command (the actor), not by the --by name.
    const passwd* pw = getpwuid(geteuid());
    ASSERT_NE(pw, nullptr);
    EXPECT_EQ(after[0]["settled_by"], std::string(pw->pw_name));

    // Settled once: again is refused, exit 1, nothing written.
    const auto again = Resolve({std::to_string(id), "--effect", "mail", "--as", as, "--reason",
                                "again", "--by", "alice"});
    EXPECT_EQ(again.exit_code, 1);
    EXPECT_EQ(again.out, "");
    EXPECT_NE(again.err.find("is pending"), std::string::npos) << again.err;
    EXPECT_EQ(ResolveEvents(id).size(), 1u);
  }
}

TEST_F(ResolveCli, TextOutputIsOneLineAndTheRunDetailListsEffects) {
  const int64_t id = UnknownRun("deliver", {"mail"});
  const auto text = Cronledger({"runs", "--config", config_, "--run", std::to_string(id)});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("\neffects:\n  mail"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("started (in doubt) started by attempt #1"), std::string::npos)
      << text.out;
  const auto r = Resolve({std::to_string(id), "--effect", "mail", "--as", "committed",
                          "--reason", "it went out"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "effect \"mail\" of run " + std::to_string(id) +
                       " resolved as committed; run " + std::to_string(id) +
                       " queued for a new attempt\n");
  // Without --by the actor is the OS user.
  const Json events = ResolveEvents(id);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_TRUE(events[0]["actor"].is_string());
  EXPECT_NE(events[0]["actor"], "");
}

TEST_F(ResolveCli, ARunWithTwoEffectsInDoubtStaysUnknownUntilBothAreResolved) {
  const int64_t id = UnknownRun("deliver", {"x", "y"});
  // The run as a whole cannot be resolved while effects are in doubt.
  const auto whole =
      Resolve({std::to_string(id), "--as", "succeeded", "--reason", "looks done"});
  EXPECT_EQ(whole.exit_code, 1);
  EXPECT_NE(whole.err.find("x, y"), std::string::npos) << whole.err;
  EXPECT_NE(whole.err.find("--effect"), std::string::npos) << whole.err;

  const auto first =
      Resolve({std::to_string(id), "--effect", "x", "--as", "committed", "--reason", "seen"});
  EXPECT_EQ(first.exit_code, 0) << first.err;
  EXPECT_NE(first.out.find("stays unknown"), std::string::npos) << first.out;
  EXPECT_NE(first.err.find("still in doubt: y"), std::string::npos) << first.err;
  EXPECT_EQ(StateOf(id), ledger::RunState::kUnknown);

  const auto second = Resolve(
      {std::to_string(id), "--effect", "y", "--as", "failed", "--reason", "not seen", "--json"});
  EXPECT_EQ(second.exit_code, 0) << second.err;
  EXPECT_EQ(Json::parse(second.out)["state"], "pending");
  EXPECT_EQ(ResolveEvents(id).size(), 2u);
}

TEST_F(ResolveCli, AnUnknownRunWithoutEffectsIsResolvedByTheOperatorsWord) {
  const struct {
    std::string as;
    std::string state;
    std::string line;
  } cases[] = {
      {"succeeded", "succeeded", "resolved as succeeded"},
      {"failed", "failed", "resolved as failed"},
      {"retry", "pending", "resolved: queued for a new attempt"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.as);
    const int64_t id = UnknownRun("job_" + c.as, {});
    const auto text =
        Resolve({std::to_string(id), "--as", c.as, "--reason", "read the logs", "--by", "bob"});
    ASSERT_EQ(text.exit_code, 0) << text.err;
    EXPECT_EQ(text.out, "run " + std::to_string(id) + " " + c.line + "\n");
    EXPECT_EQ(text.err, "");
    const Json run = ShowRun(id);
    EXPECT_EQ(run["state"], c.state);
    const Json events = ResolveEvents(id);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0]["on_behalf_of"], "bob");
    EXPECT_EQ(events[0]["reason"], "read the logs");
    EXPECT_EQ(events[0]["details"]["as"], c.as);
    EXPECT_EQ(events[0]["details"]["to"], c.state);
  }
  // --json prints the run.
  const int64_t id = UnknownRun("json_job", {});
  const auto r = Resolve({std::to_string(id), "--as", "failed", "--reason", "r", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json run = Json::parse(r.out);
  EXPECT_EQ(run["id"], id);
  EXPECT_EQ(run["state"], "failed");
  EXPECT_EQ(run["job"], "json_job");
}

TEST_F(ResolveCli, UsageErrorsExitTwoAndChangeNothing) {
  const int64_t id = UnknownRun("deliver", {"mail"});
  const std::string run = std::to_string(id);
  const struct {
    std::vector<std::string> args;
    std::string err_contains;
  } cases[] = {
      {{run, "--effect", "mail", "--as", "committed"}, "--reason TEXT is required"},
      {{run, "--effect", "mail", "--as", "committed", "--reason", "  "},
       "--reason TEXT is required"},
      {{run, "--as", "retry"}, "--reason TEXT is required"},
      {{run, "--effect", "mail", "--reason", "r"}, "--as is required: with --effect, use --as "
                                                   "committed or failed"},
      {{run, "--reason", "r"}, "--as is required: use --as succeeded, failed or retry"},
      {{run, "--effect", "mail", "--as", "started", "--reason", "r"},
       "--as \"started\" is not allowed with --effect; use committed or failed"},
      {{run, "--effect", "mail", "--as", "succeeded", "--reason", "r"},
       "--as \"succeeded\" is not allowed with --effect; use committed or failed"},
      {{run, "--as", "committed", "--reason", "r"},
       "--as \"committed\" is not allowed without --effect; use succeeded, failed or retry"},
      {{run, "--as", "bogus", "--reason", "r"}, "use succeeded, failed or retry"},
      {{run, "--effect", "", "--as", "failed", "--reason", "r"}, "--effect KEY"},
      {{"0", "--as", "retry", "--reason", "r"}, "run ids are positive"},
      {{"--as", "retry", "--reason", "r"}, "RUN_ID"},
  };
  for (const auto& c : cases) {
    const auto r = Resolve(c.args);
    EXPECT_EQ(r.exit_code, 2) << ::testing::PrintToString(c.args) << ": " << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_NE(r.err.find(c.err_contains), std::string::npos) << r.err;
  }
  EXPECT_EQ(StateOf(id), ledger::RunState::kUnknown);
  EXPECT_TRUE(ResolveEvents(id).empty());
  EXPECT_EQ(ShowRun(id)["effects"][0]["state"], "started");
}

TEST_F(ResolveCli, RefusalsExitOneWithTheReason) {
  const int64_t id = UnknownRun("deliver", {"mail"});
  const std::string run = std::to_string(id);
  // No such run, no such effect.
  auto r = Resolve({"999", "--as", "retry", "--reason", "r"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "cronledger resolve: no run with id 999\n");
  r = Resolve({"999", "--effect", "mail", "--as", "failed", "--reason", "r"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no run with id 999"), std::string::npos) << r.err;
  r = Resolve({run, "--effect", "nope", "--as", "failed", "--reason", "r"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("has no effect \"nope\""), std::string::npos) << r.err;
  // A run that is not unknown.
  ASSERT_EQ(Resolve({run, "--effect", "mail", "--as", "committed", "--reason", "r"}).exit_code, 0);
  r = Resolve({run, "--as", "succeeded", "--reason", "r"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "cronledger resolve: run " + run +
                       " is pending; only an unknown run can be resolved\n");
  EXPECT_EQ(ResolveEvents(id).size(), 1u);
  EXPECT_EQ(StateOf(id), ledger::RunState::kPending);
}

TEST(ResolveCliErrors, UnavailableStoreExitsThree) {
  TempDir dir;
  const std::string config = dir.Write("cronledger.toml", ConfigText("sqlite:ledger.db"));
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"1", "--as", "retry", "--reason", "r"},
        std::vector<std::string>{"1", "--effect", "k", "--as", "failed", "--reason", "r"}}) {
    std::vector<std::string> full = {"resolve", "--config", config};
    full.insert(full.end(), args.begin(), args.end());
    const auto r = Cronledger(full);
    EXPECT_EQ(r.exit_code, 3) << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err.rfind("cronledger resolve: store unavailable: ", 0), 0u) << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists(dir.File("ledger.db"))) << "resolve invents no ledger";
}

}  // namespace
}  // namespace cronledger
