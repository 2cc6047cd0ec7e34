// The external-worker routes (src/api/worker_api.h) on a real store and a
// fake clock: claims and long-polls, heartbeats, step results and
// completions that move the run as the built-in executor would, fencing,
// roles, and refusals that change nothing.
#include "api/worker_api.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "api/attempt_api.h"
#include "cronledger/clock.h"
#include "engine/effect_writer.h"
#include "engine/reaper.h"
#include "store/conformance.h"

namespace cronledger::testing {
namespace {

using api::ApiRequest;
using api::ApiResponse;
using nlohmann::json;

constexpr const char* kWorker = "worker-secret-0123456789";
constexpr const char* kOperate = "operate-secret-0123456789";
constexpr const char* kOtherWorker = "other-worker-secret-0123456789";
constexpr const char* kRead = "read-secret-0123456789";

// Polls without a clock, as tests/common/serve_process.h does.
template <typename Done>
bool Eventually(Done done) {
  for (int i = 0; i < 20000; ++i) {
    if (done()) return true;
    usleep(1000);
  }
  return done();
}

class WorkerApiTest : public StoreConformance {
 protected:
  void SetUp() override {
    StoreConformance::SetUp();
    config::JobConfig x;
    x.name = "x";
    x.schedule = "0 9 * * *";
    x.timezone = "UTC";
    x.executor = config::Executor::kExternal;
    x.lease_ttl = std::chrono::minutes{5};
    x.overlap = ledger::Overlap::kAllow;
    x.retry.max_attempts = 3;
    x.retry.initial_backoff = std::chrono::seconds{10};
    x.retry.jitter = 0;
    x.retry_exit_codes = {65};  // permanent by default, retried here
    x.fail_exit_codes = {9};    // retryable by default, permanent here
    x.env = {{"REPORT_BUCKET", "reports-test"}};
    config::StepConfig generate;
    generate.name = "generate";
    generate.idempotent = true;
    config::StepConfig deliver;
    deliver.name = "deliver";
    deliver.idempotent = false;
    x.steps = {generate, deliver};
    config::JobConfig j = x;
    j.name = "j";
    j.executor = config::Executor::kSubprocess;
    config_.jobs = {x, j};
    Setup({"a", "b"}, {"09:00"}, "x");
    Setup({"a"}, {"09:00"}, "j");
    worker_api_ = MakeApi(4);
    writes_ = std::make_unique<engine::EffectWriter>(S());
    attempt_api_ = std::make_unique<api::AttemptApi>(S(), *writes_, clock_, credentials_,
                                                     api::AttemptApi::Options{.node = "n1"});
  }

  std::unique_ptr<api::WorkerApi> MakeApi(int max_long_polls) {
    return std::make_unique<api::WorkerApi>(
        config_, S(), clock_, tokens_, credentials_,
        api::WorkerApi::Options{.url = "http://127.0.0.1:8377",
                                .max_long_polls = max_long_polls,
                                .poll = std::chrono::milliseconds{250},
                                .retry_after = 1,
                                .jitter_seed = 7});
  }

  ApiResponse Call(const std::string& path, const std::string& body,
                   const std::string& secret = kWorker, const std::string& method = "POST") {
    ApiRequest r;
    r.method = method;
    r.path = path;
    r.body = body;
    if (!secret.empty()) r.authorization = "Bearer " + secret;
    auto answer = worker_api_->Handle(r);
    EXPECT_TRUE(answer.has_value()) << method << " " << path;
    return answer.value_or(ApiResponse{});
  }
  ApiResponse Call(const std::string& path, const json& body,
                   const std::string& secret = kWorker) {
    return Call(path, body.dump(), secret);
  }

  json ClaimX(int wait = 0, const std::string& worker = "w1") {
    const auto r = Call("/v1/claims", json{{"jobs", {"x"}}, {"wait", wait}, {"worker", worker}});
    EXPECT_EQ(r.status, 200) << r.body;
    return json::parse(r.body.dump());
  }

  static std::string RunPath(int64_t id, const std::string& what) {
    return "/v1/runs/" + std::to_string(id) + "/" + what;
  }

  // Everything a refused request must leave as it was: the runs, their
  // steps and attempts, the effects and (with `events`) every event.
  std::string Footprint(bool events = true) {
    json all = json::array();
    for (const std::string job : {"x", "j"}) {
      for (const auto& r : Runs(job)) {
        json run = {{"id", r.id}, {"state", ledger::Name(r.state)}, {"attempts", r.attempts}};
        // Named: a range-for over a temporary Result's value would dangle.
        const auto steps = S().StepList(r.id);
        const auto attempts = S().AttemptList(r.id);
        for (const auto& s : *steps)
          run["steps"].push_back(s.name + "=" + std::string(ledger::Name(s.state)));
        for (const auto& a : *attempts) {
          run["attempt_list"].push_back({a.token, a.end_class, a.ended_at.has_value()});
        }
        run["effects"] = S().EffectList(r.id)->size();
        all.push_back(run);
      }
      if (events) all.push_back(Events(job).size());
    }
    return all.dump();
  }

  FakeClock clock_{std::chrono::sys_seconds{SecondsAt("2026-11-05T12:01:00Z")}};
  const api::AttemptCredentials credentials_{"test-key"};
  const api::TokenAuthenticator tokens_{{{"w", config::TokenRole::kWorker, kWorker},
                                         {"w2", config::TokenRole::kWorker, kOtherWorker},
                                         {"op", config::TokenRole::kOperate, kOperate},
                                         {"dash", config::TokenRole::kRead, kRead}}};
  config::Config config_;
  std::unique_ptr<api::WorkerApi> worker_api_;
  std::unique_ptr<engine::EffectWriter> writes_;
  std::unique_ptr<api::AttemptApi> attempt_api_;
};

TEST_P(WorkerApiTest, AClaimHandsOutOneRunWithEverythingAStepGets) {
  const json answer = ClaimX(0, "host-1:42");
  ASSERT_TRUE(answer["run"].is_object()) << answer;
  const json& run = answer["run"];
  const int64_t id = run["id"];
  EXPECT_EQ(run["job"], "x");
  EXPECT_EQ(run["state"], "running");
  EXPECT_EQ(run["attempt"], 1);
  EXPECT_EQ(run["run_key"], "x/" + run["partition"].get<std::string>() + "/T09:00");
  EXPECT_EQ(run["business_date"], "2026-11-05");
  EXPECT_EQ(run["scheduled_at"], "2026-11-05T09:00:00Z");
  EXPECT_EQ(run["lease_expires_at"], "2026-11-05T12:06:00Z");
  EXPECT_EQ(run["lease_ttl_seconds"], 300);
  EXPECT_EQ(run["heartbeat_seconds"], 100);
  EXPECT_EQ(run["step"], "generate");
  EXPECT_EQ(run["steps"], json::parse(R"([{"name":"generate","state":"running"},
                                          {"name":"deliver","state":"pending"}])"));
  EXPECT_EQ(run["api"], "http://127.0.0.1:8377");
  EXPECT_EQ(run["checkpoint"], "");
  EXPECT_EQ(run["checkpoint_partition"], "");
  // The credential is the attempt's, as CRONLEDGER_TOKEN would be.
  const auto who = credentials_.Verify(run["credential"].get<std::string>());
  ASSERT_TRUE(who.has_value());
  EXPECT_EQ(who->run_id, id);
  EXPECT_EQ(who->token, run["fencing_token"].get<int64_t>());
  const json& env = run["env"];
  EXPECT_EQ(env["REPORT_BUCKET"], "reports-test");
  EXPECT_EQ(env["CRONLEDGER_JOB"], "x");
  EXPECT_EQ(env["CRONLEDGER_RUN_KEY"], run["run_key"]);
  EXPECT_EQ(env["CRONLEDGER_RUN_ID"], std::to_string(id));
  EXPECT_EQ(env["CRONLEDGER_ATTEMPT"], "1");
  EXPECT_EQ(env["CRONLEDGER_STEP"], "generate");
  EXPECT_EQ(env["CRONLEDGER_SCHEDULED_AT"], "2026-11-05T09:00:00Z");
  EXPECT_EQ(env["CRONLEDGER_FENCING_TOKEN"], std::to_string(run["fencing_token"].get<int64_t>()));
  EXPECT_EQ(env["CRONLEDGER_TOKEN"], run["credential"]);
  EXPECT_EQ(env["CRONLEDGER_API"], "http://127.0.0.1:8377");
  EXPECT_TRUE(env.contains("CRONLEDGER_CHECKPOINT_PARTITION"));
  // The worker is the attempt's node.
  EXPECT_EQ(S().AttemptList(id)->at(0).node, "external:host-1:42");
  EXPECT_EQ(Events("x", "claimed").size(), 1u);

  // The second run, then nothing; the subprocess job is never handed out.
  ASSERT_TRUE(ClaimX()["run"].is_object());
  const json empty = ClaimX();
  EXPECT_TRUE(empty["run"].is_null()) << empty;
  EXPECT_FALSE(empty.contains("retry_after"));
  EXPECT_EQ(Runs("j").at(0).state, ledger::RunState::kPending);
}

TEST_P(WorkerApiTest, OperateMayClaimAndTheTokenNameIsTheDefaultWorker) {
  const auto r = Call("/v1/claims", json{{"jobs", {"x"}}}, kOperate);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(S().AttemptList(r.body["run"]["id"].get<int64_t>())->at(0).node, "external:op");
}

TEST_P(WorkerApiTest, NothingOfAPausedJobIsClaimed) {
  ASSERT_TRUE(S().JobSetPaused({"x", true, "alice", "quarter close", InstantAt("2026-11-05T12:00:30Z")})
                  .ok());
  EXPECT_TRUE(ClaimX()["run"].is_null());
  ASSERT_TRUE(S().JobSetPaused({"x", false, "alice", "done", InstantAt("2026-11-05T12:00:40Z")})
                  .ok());
  ASSERT_TRUE(S().JobSetPaused({std::nullopt, true, "bob", "maintenance",
                                InstantAt("2026-11-05T12:00:50Z")})
                  .ok());
  EXPECT_TRUE(ClaimX()["run"].is_null());
  ASSERT_TRUE(S().JobSetPaused({std::nullopt, false, "bob", "done",
                                InstantAt("2026-11-05T12:00:55Z")})
                  .ok());
  EXPECT_TRUE(ClaimX()["run"].is_object());
}

TEST_P(WorkerApiTest, ALongPollWaitsUntilARunFallsDueWithoutBusyLooking) {
  // Nothing due: both runs of x are taken.
  ASSERT_TRUE(ClaimX()["run"].is_object());
  ASSERT_TRUE(ClaimX()["run"].is_object());
  json answer;
  std::thread poll([&] { answer = ClaimX(30); });
  ASSERT_TRUE(Eventually([&] { return worker_api_->LongPolls() == 1 && clock_.Sleepers() == 1; }));
  // A run of x falls due at 12:02 (planned and released by "serve").
  Plan("x", {Occurrence("2026-11-05T12:02:00Z", {"a"}, "T12:02")}, "2026-11-05T12:02:00Z",
       "2026-11-05T12:01:00Z");
  store::ReleaseParams release;
  release.job = "x";
  release.now = InstantAt("2026-11-05T12:02:00Z");
  release.policy.misfire_grace = std::chrono::hours{24};
  ASSERT_TRUE(S().RunRelease(release).ok());
  // Until the clock reaches it, each look finds nothing and sleeps again.
  for (int i = 0; i < 3; ++i) {
    clock_.Advance(std::chrono::milliseconds{250});
    ASSERT_TRUE(Eventually([&] { return clock_.Sleepers() == 1 || answer.contains("run"); }));
  }
  EXPECT_FALSE(answer.contains("run"));
  clock_.Set(std::chrono::sys_seconds{SecondsAt("2026-11-05T12:02:00Z")});
  poll.join();
  ASSERT_TRUE(answer["run"].is_object()) << answer;
  EXPECT_EQ(answer["run"]["period"], "T12:02");
  EXPECT_EQ(worker_api_->LongPolls(), 0);
}

TEST_P(WorkerApiTest, ALongPollThatFindsNothingAnswersNullAtItsEnd) {
  ASSERT_TRUE(ClaimX()["run"].is_object());
  ASSERT_TRUE(ClaimX()["run"].is_object());
  json answer;
  std::thread poll([&] { answer = ClaimX(2); });
  ASSERT_TRUE(Eventually([&] { return clock_.Sleepers() == 1; }));
  clock_.Advance(std::chrono::seconds{3});
  poll.join();
  EXPECT_TRUE(answer["run"].is_null()) << answer;
  EXPECT_EQ(worker_api_->LongPolls(), 0);
}

// The wait is an interval on the steady clock: a wall clock stepped back an
// hour meanwhile does not hold the caller (and one of serve's HTTP threads)
// for that hour.
TEST_P(WorkerApiTest, ALongPollEndsOnTimeWhenTheWallClockIsSteppedBack) {
  ASSERT_TRUE(ClaimX()["run"].is_object());
  ASSERT_TRUE(ClaimX()["run"].is_object());
  json answer;
  std::atomic<bool> answered{false};
  std::thread poll([&] {
    answer = ClaimX(2);
    answered = true;
  });
  ASSERT_TRUE(Eventually([&] { return clock_.Sleepers() == 1; }));
  clock_.StepWallClock(-std::chrono::hours{1});
  clock_.Advance(std::chrono::seconds{3});
  EXPECT_TRUE(Eventually([&] { return answered.load(); })) << "still waiting";
  if (!answered) clock_.Advance(std::chrono::hours{2});  // let it end either way
  poll.join();
  EXPECT_TRUE(answer["run"].is_null()) << answer;
  EXPECT_EQ(worker_api_->LongPolls(), 0);
}

TEST_P(WorkerApiTest, LongPollsAreCappedAndTheExcessIsAnsweredAtOnce) {
  worker_api_ = MakeApi(1);
  ASSERT_TRUE(ClaimX()["run"].is_object());
  ASSERT_TRUE(ClaimX()["run"].is_object());
  json first;
  std::thread poll([&] { first = ClaimX(60); });
  ASSERT_TRUE(Eventually([&] { return worker_api_->LongPolls() == 1; }));
  // The cap is reached: this one looks once and answers without waiting
  // (the fake clock does not move, so a wait would never end).
  const json second = ClaimX(60);
  EXPECT_TRUE(second["run"].is_null());
  EXPECT_EQ(second["retry_after"], 1);
  // Stopping (serve's shutdown) ends the waiting claim, and later ones
  // are refused.
  worker_api_->Stop();
  poll.join();
  EXPECT_TRUE(first["run"].is_null());
  const auto after = Call("/v1/claims", json{{"jobs", {"x"}}});
  EXPECT_EQ(after.status, 503);
  EXPECT_EQ(after.body["error"], "unavailable");
}

TEST_P(WorkerApiTest, AHeartbeatExtendsTheLease) {
  const json run = ClaimX()["run"];
  clock_.Set(std::chrono::sys_seconds{SecondsAt("2026-11-05T12:03:20Z")});
  const auto r = Call(RunPath(run["id"], "heartbeat"), json{{"fencing_token", run["fencing_token"]}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body["lease_expires_at"], "2026-11-05T12:08:20Z");
  EXPECT_EQ(r.body["lease_ttl_seconds"], 300);
  EXPECT_EQ(S().RunGetLease(run["id"])->expires_at, InstantAt("2026-11-05T12:08:20Z"));
  // The reaper finds nothing at 12:07 that it would have found without it.
  engine::Reaper reaper(config_, S());
  EXPECT_EQ(*reaper.RunOnce(clock_.Now() + std::chrono::minutes{4}), 0);
}

TEST_P(WorkerApiTest, StepsAndCompletionSucceedTheRunLikeTheBuiltInExecutor) {
  const json run = ClaimX()["run"];
  const int64_t id = run["id"];
  const json token = {{"fencing_token", run["fencing_token"]}};
  json body = token;
  body["exit_status"] = 0;
  auto r = Call(RunPath(id, "steps/generate"), body);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body["end_class"], "succeeded");
  EXPECT_EQ(r.body["next_step"], "deliver");
  EXPECT_EQ(r.body["attempt_ended"], false);
  EXPECT_EQ(S().StepList(id)->at(1).state, ledger::StepStatus::kRunning);
  // Completing before the last step has a result changes nothing.
  const std::string before = Footprint();
  r = Call(RunPath(id, "complete"), token);
  EXPECT_EQ(r.status, 409);
  EXPECT_EQ(r.body["error"], "conflict");
  EXPECT_EQ(Footprint(), before);
  body = token;
  body["outcome"] = "succeeded";
  r = Call(RunPath(id, "steps/deliver"), body);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_TRUE(r.body["next_step"].is_null());
  body = token;
  body["output_tail"] = "all done\n";
  r = Call(RunPath(id, "complete"), body);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body["run"]["state"], "succeeded");
  EXPECT_EQ(r.body["end_class"], "succeeded");
  EXPECT_EQ(r.body["attempt_ended"], true);
  const auto attempt = S().AttemptList(id)->at(0);
  EXPECT_EQ(attempt.end_class, "succeeded");
  EXPECT_EQ(attempt.output_tail, "all done\n");
  EXPECT_EQ(Events("x", "succeeded").size(), 1u);
  // Asked again (its answer was lost): the same answer, nothing written.
  const std::string done = Footprint();
  r = Call(RunPath(id, "complete"), token);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body["run"]["state"], "succeeded");
  EXPECT_EQ(Footprint(), done);
}

TEST_P(WorkerApiTest, ARetryableStepEndsTheAttemptWithABackoffAndTheRetryResumesThere) {
  json run = ClaimX()["run"];
  const int64_t id = run["id"];
  ASSERT_EQ(Call(RunPath(id, "steps/generate"),
                 json{{"fencing_token", run["fencing_token"]}, {"exit_status", 0}})
                .status,
            200);
  {
    // The same success reported again (its answer was lost): the same
    // answer, nothing written.
    const std::string once = Footprint();
    const auto again = Call(RunPath(id, "steps/generate"),
                            json{{"fencing_token", run["fencing_token"]}, {"exit_status", 0}});
    ASSERT_EQ(again.status, 200) << again.body;
    EXPECT_EQ(again.body["step_state"], "succeeded");
    EXPECT_EQ(again.body["next_step"], "deliver");
    EXPECT_EQ(Footprint(), once);
  }
  // 65 is permanent by default; this job's retry_exit_codes retry it.
  auto r = Call(RunPath(id, "steps/deliver"), json{{"fencing_token", run["fencing_token"]},
                                                   {"exit_status", 65},
                                                   {"output_tail", "smtp 451\n"}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body["end_class"], "retryable");
  EXPECT_EQ(r.body["attempt_ended"], true);
  EXPECT_EQ(r.body["run"]["state"], "pending");
  const auto attempt = S().AttemptList(id)->at(0);
  EXPECT_EQ(attempt.exit_status, 65);
  EXPECT_EQ(attempt.step, "deliver");
  EXPECT_EQ(attempt.output_tail, "smtp 451\n");
  const auto scheduled = Events("x", "retry_scheduled");
  ASSERT_EQ(scheduled.size(), 1u);
  // The backoff: initial_backoff 10s, no jitter.
  EXPECT_NE(scheduled[0].details.find("2026-11-05T12:01:10Z"), std::string::npos)
      << scheduled[0].details;
  // Completing after the attempt ended: the same answer, nothing written.
  const std::string before = Footprint();
  const std::size_t events = Events("x").size();
  r = Call(RunPath(id, "complete"), json{{"fencing_token", run["fencing_token"]}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body["end_class"], "retryable");
  EXPECT_EQ(Footprint(), before);
  // The same step report again (its answer was lost): the same answer too,
  // not a stale lease, and no stale_write_rejected (no late worker here).
  r = Call(RunPath(id, "steps/deliver"), json{{"fencing_token", run["fencing_token"]},
                                               {"exit_status", 65},
                                               {"output_tail", "smtp 451\n"}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body["step"], "deliver");
  EXPECT_EQ(r.body["step_state"], "failed");
  EXPECT_EQ(r.body["end_class"], "retryable");
  EXPECT_EQ(r.body["attempt_ended"], true);
  EXPECT_EQ(Footprint(), before);
  EXPECT_EQ(Events("x").size(), events);
  // Not before the backoff; then attempt 2 resumes at deliver.
  ASSERT_TRUE(ClaimX()["run"].is_object());  // the other partition's run
  EXPECT_TRUE(ClaimX()["run"].is_null());
  clock_.Advance(std::chrono::seconds{10});
  run = ClaimX()["run"];
  ASSERT_TRUE(run.is_object());
  EXPECT_EQ(run["id"], id);
  EXPECT_EQ(run["attempt"], 2);
  EXPECT_EQ(run["step"], "deliver");
  EXPECT_EQ(run["steps"][0]["state"], "succeeded");
}

TEST_P(WorkerApiTest, APermanentStepFailsTheRunAsADeadLetter) {
  const json run = ClaimX()["run"];
  // 9 is retryable by default; this job's fail_exit_codes make it permanent.
  auto r = Call(RunPath(run["id"], "steps/generate"),
                json{{"fencing_token", run["fencing_token"]}, {"exit_status", 9}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body["end_class"], "permanent");
  EXPECT_EQ(r.body["run"]["state"], "failed");
  EXPECT_EQ(Events("x", "failed").size(), 1u);
  // 64 (usage) is permanent by default.
  const json other = ClaimX()["run"];
  r = Call(RunPath(other["id"], "steps/generate"),
           json{{"fencing_token", other["fencing_token"]}, {"exit_status", 64}});
  EXPECT_EQ(r.body["run"]["state"], "failed");
}

TEST_P(WorkerApiTest, AnUncertainEndOfAStepThatIsNotIdempotentMakesTheRunUnknown) {
  const json run = ClaimX()["run"];
  ASSERT_EQ(Call(RunPath(run["id"], "steps/generate"),
                 json{{"fencing_token", run["fencing_token"]}, {"outcome", "succeeded"}})
                .status,
            200);
  const auto r = Call(RunPath(run["id"], "steps/deliver"),
                      json{{"fencing_token", run["fencing_token"]}, {"outcome", "timeout"}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body["end_class"], "timeout");
  EXPECT_EQ(r.body["run"]["state"], "unknown");
}

TEST_P(WorkerApiTest, AnEffectLeftInDoubtMakesTheCompletedRunUnknown) {
  const json run = ClaimX()["run"];
  const int64_t id = run["id"];
  const int64_t token = run["fencing_token"];
  // The worker begins an effect with its credential and never settles it.
  ApiRequest begin;
  begin.method = "POST";
  begin.path = "/v1/effects/begin";
  begin.authorization = "Bearer " + run["credential"].get<std::string>();
  begin.body = json{{"run_id", id}, {"fencing_token", token}, {"key", "mail-1"}}.dump();
  const auto begun = attempt_api_->Handle(begin);
  ASSERT_TRUE(begun.has_value());
  ASSERT_EQ(begun->status, 200) << begun->body;
  for (const std::string step : {"generate", "deliver"}) {
    ASSERT_EQ(Call(RunPath(id, "steps/" + step), json{{"fencing_token", token}, {"exit_status", 0}})
                  .status,
              200);
  }
  const auto r = Call(RunPath(id, "complete"), json{{"fencing_token", token}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body["run"]["state"], "unknown");
  EXPECT_EQ(r.body["end_class"], "in_doubt");
}

TEST_P(WorkerApiTest, EveryRouteWithAStaleTokenIs409AndChangesNothing) {
  const json first = ClaimX(0, "stalled")["run"];
  const int64_t id = first["id"];
  // The worker stalls past its lease; the reaper takes it back (generate
  // is idempotent: a retry) and another worker claims the run.
  engine::Reaper reaper(config_, S());
  clock_.Set(std::chrono::sys_seconds{SecondsAt("2026-11-05T12:06:01Z")});
  ASSERT_EQ(*reaper.RunOnce(clock_.Now()), 1);
  clock_.Advance(std::chrono::seconds{10});
  json second;
  for (int i = 0; i < 3 && !(second.is_object() && second["id"] == id); ++i) {
    second = ClaimX(0, "fresh")["run"];
  }
  ASSERT_TRUE(second.is_object());
  ASSERT_EQ(second["id"], id);
  ASSERT_EQ(second["attempt"], 2);
  const std::size_t rejected = Events("x", "stale_write_rejected").size();
  const std::size_t events = Events("x").size();
  const std::string before = Footprint(false);
  const json stale = {{"fencing_token", first["fencing_token"]}};
  json step = stale;
  step["exit_status"] = 0;
  for (const auto& [path, body] : std::vector<std::pair<std::string, json>>{
           {RunPath(id, "heartbeat"), stale},
           {RunPath(id, "steps/generate"), step},
           {RunPath(id, "complete"), stale}}) {
    const auto r = Call(path, body);
    EXPECT_EQ(r.status, 409) << path << " " << r.body;
    EXPECT_EQ(r.body["error"], "stale_lease") << path;
  }
  // The effect endpoints fence its credential the same way.
  ApiRequest begin;
  begin.method = "POST";
  begin.path = "/v1/effects/begin";
  begin.authorization = "Bearer " + first["credential"].get<std::string>();
  begin.body = json{{"run_id", id}, {"fencing_token", first["fencing_token"]}, {"key", "k"}}.dump();
  const auto effect = attempt_api_->Handle(begin);
  ASSERT_TRUE(effect.has_value());
  EXPECT_EQ(effect->status, 409);
  EXPECT_EQ(effect->body["error"], "stale_lease");
  // Each refusal is recorded; nothing else moved. The late worker's
  // reports name it as it claimed, not by its token.
  const auto refusals = Events("x", "stale_write_rejected");
  EXPECT_EQ(refusals.size(), rejected + 4);
  for (std::size_t i = rejected; i < refusals.size() && i < rejected + 3; ++i) {
    EXPECT_EQ(refusals[i].actor, "external:stalled") << refusals[i].reason;
  }
  EXPECT_EQ(Events("x").size(), events + 4);
  EXPECT_EQ(S().StaleWritesRejected(), static_cast<int64_t>(refusals.size()));
  EXPECT_EQ(Footprint(false), before);
  EXPECT_EQ(S().RunGetLease(id)->token, second["fencing_token"].get<int64_t>());
  EXPECT_EQ(S().StepList(id)->at(0).state, ledger::StepStatus::kRunning);
  EXPECT_EQ(S().AttemptList(id)->at(0).end_class, "lease_expired");
  EXPECT_FALSE(S().AttemptList(id)->at(1).ended_at.has_value());
  EXPECT_TRUE(S().EffectList(id)->empty());
  // The current holder goes on.
  for (const std::string s : {"generate", "deliver"}) {
    ASSERT_EQ(Call(RunPath(id, "steps/" + s),
                   json{{"fencing_token", second["fencing_token"]}, {"exit_status", 0}})
                  .status,
              200);
  }
  const auto done = Call(RunPath(id, "complete"), json{{"fencing_token", second["fencing_token"]}});
  EXPECT_EQ(done.body["run"]["state"], "succeeded");
}

TEST_P(WorkerApiTest, OnlyTheTokenThatClaimedAnAttemptMayWriteToIt) {
  const json run = ClaimX(0, "a")["run"];
  const int64_t id = run["id"];
  const json mine = {{"fencing_token", run["fencing_token"]}};
  EXPECT_EQ(S().AttemptList(id)->at(0).claimant, "w");
  const std::size_t rejected = Events("x", "stale_write_rejected").size();
  const std::string before = Footprint(false);
  // Another worker token, even naming the claim's worker in its body, and
  // a token of role operate: 403 before anything else is looked at.
  json step = mine;
  step["exit_status"] = 0;
  json impersonating = mine;
  impersonating["worker"] = "a";
  const std::vector<std::tuple<std::string, json, std::string, std::string>> writes = {
      {RunPath(id, "heartbeat"), mine, kOtherWorker, "heartbeat"},
      {RunPath(id, "steps/generate"), step, kOtherWorker, "step generate"},
      {RunPath(id, "complete"), mine, kOtherWorker, "finish"},
      {RunPath(id, "heartbeat"), impersonating, kOtherWorker, "heartbeat"},
      {RunPath(id, "complete"), mine, kOperate, "finish"}};
  for (const auto& [path, body, secret, write] : writes) {
    const auto r = Call(path, body, secret);
    EXPECT_EQ(r.status, 403) << path << " " << r.body;
    EXPECT_EQ(r.body["error"], "forbidden") << path;
  }
  EXPECT_EQ(Footprint(false), before);
  EXPECT_EQ(S().RunGetLease(id)->token, run["fencing_token"].get<int64_t>());
  // Each refusal is recorded as the caller's, naming both tokens.
  const auto refusals = Events("x", "stale_write_rejected");
  ASSERT_EQ(refusals.size(), rejected + writes.size());
  const std::vector<std::string> actors = {"external:w2", "external:w2", "external:w2",
                                           "external:w2", "external:op"};
  for (std::size_t i = 0; i < writes.size(); ++i) {
    const auto& e = refusals[rejected + i];
    EXPECT_EQ(e.actor, actors[i]) << e.reason;
    const json details = json::parse(e.details);
    EXPECT_EQ(details["write"], std::get<3>(writes[i]));
    EXPECT_EQ(details["caller_token"], i == 4 ? "op" : "w2");
    EXPECT_EQ(details["claimant_token"], "w");
    EXPECT_EQ(details["token"], run["fencing_token"]);
    EXPECT_NE(e.reason.find("\"w\""), std::string::npos) << e.reason;
  }
  EXPECT_EQ(json::parse(refusals[rejected + 3].details)["worker"], "a");
  EXPECT_EQ(S().StaleWritesRejected(), static_cast<int64_t>(refusals.size()));
  // The claim's own token goes on, and its completion, asked again, is
  // answered again; the other token's still is not.
  EXPECT_EQ(Call(RunPath(id, "heartbeat"), mine).status, 200);
  for (const std::string s : {"generate", "deliver"}) {
    json ok = mine;
    ok["exit_status"] = 0;
    ASSERT_EQ(Call(RunPath(id, "steps/" + s), ok).status, 200) << s;
  }
  EXPECT_EQ(Call(RunPath(id, "complete"), mine).body["run"]["state"], "succeeded");
  EXPECT_EQ(Call(RunPath(id, "complete"), mine).status, 200);
  EXPECT_EQ(Call(RunPath(id, "complete"), mine, kOtherWorker).status, 403);
  const auto events = Events("x");
  EXPECT_TRUE(std::none_of(events.begin(), events.end(), [](const store::EventRecord& e) {
    return e.type != "stale_write_rejected" &&
           (e.actor == "external:w2" || e.actor == "external:op");
  }));
}

TEST_P(WorkerApiTest, RolesAndCredentials) {
  const json run = ClaimX()["run"];
  const json token = {{"fencing_token", run["fencing_token"]}};
  const std::string before = Footprint();
  // No token, an unknown one, another scheme: 401.
  EXPECT_EQ(Call("/v1/claims", json{{"jobs", {"x"}}}, "").status, 401);
  EXPECT_EQ(Call("/v1/claims", json{{"jobs", {"x"}}}, "not-a-token").status, 401);
  ApiRequest basic;
  basic.method = "POST";
  basic.path = "/v1/claims";
  basic.authorization = "Basic dXNlcjpwYXNz";
  EXPECT_EQ(worker_api_->Handle(basic)->status, 401);
  // Role read may not claim nor report.
  auto r = Call("/v1/claims", json{{"jobs", {"x"}}}, kRead);
  EXPECT_EQ(r.status, 403);
  EXPECT_EQ(r.body["error"], "forbidden");
  EXPECT_EQ(Call(RunPath(run["id"], "heartbeat"), token, kRead).status, 403);
  // A step's per-attempt credential is not a worker token.
  EXPECT_EQ(Call("/v1/claims", json{{"jobs", {"x"}}}, run["credential"].get<std::string>()).status,
            403);
  // A job serve runs itself is not for workers, whatever the role.
  r = Call("/v1/claims", json{{"jobs", {"x", "j"}}});
  EXPECT_EQ(r.status, 403);
  EXPECT_NE(r.body["message"].get<std::string>().find("\"j\""), std::string::npos);
  EXPECT_EQ(Call("/v1/claims", json{{"jobs", {"j"}}}, kOperate).status, 403);
  const int64_t j_run = Runs("j").at(0).id;
  EXPECT_EQ(Call(RunPath(j_run, "heartbeat"), json{{"fencing_token", 1}}).status, 403);
  EXPECT_EQ(Call(RunPath(j_run, "complete"), json{{"fencing_token", 1}}, kOperate).status, 403);
  // Unknown job or run: 404.
  EXPECT_EQ(Call("/v1/claims", json{{"jobs", {"nope"}}}).status, 404);
  EXPECT_EQ(Call(RunPath(99999, "heartbeat"), token).status, 404);
  // Another method: 405.
  EXPECT_EQ(Call("/v1/claims", "", kWorker, "GET").status, 405);
  EXPECT_EQ(Call(RunPath(run["id"], "complete"), "", kWorker, "PUT").status, 405);
  EXPECT_EQ(Footprint(), before);
  // Paths that are not these routes are left to others.
  ApiRequest other;
  other.method = "POST";
  other.path = "/v1/runs/1/retry";
  EXPECT_FALSE(worker_api_->Handle(other).has_value());
  other.path = "/v1/runs/1";
  EXPECT_FALSE(worker_api_->Handle(other).has_value());
}

TEST_P(WorkerApiTest, MalformedRequestsAre400AndChangeNothing) {
  const json run = ClaimX()["run"];
  const int64_t id = run["id"];
  const int64_t token = run["fencing_token"];
  const std::string before = Footprint();
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"/v1/claims", "{"},
      {"/v1/claims", "[]"},
      {"/v1/claims", "{}"},
      {"/v1/claims", R"({"jobs": []})"},
      {"/v1/claims", R"({"jobs": "x"})"},
      {"/v1/claims", R"({"jobs": ["x"], "wait": 61})"},
      {"/v1/claims", R"({"jobs": ["x"], "wait": -1})"},
      {"/v1/claims", R"({"jobs": ["x"], "wait": 1.5})"},
      {"/v1/claims", R"({"jobs": ["x"], "worker": ""})"},
      {"/v1/claims", R"({"jobs": ["x"], "worker": "a\nb"})"},
      {"/v1/claims", R"({"jobs": ["x"], "limit": 2})"},
      {RunPath(id, "heartbeat"), "{}"},
      {RunPath(id, "heartbeat"), R"({"fencing_token": "1"})"},
      {RunPath(id, "heartbeat"), R"({"fencing_token": 0})"},
      {RunPath(id, "heartbeat"), fmt::format(R"({{"fencing_token": {}, "ttl": 5}})", token)},
      {RunPath(id, "steps/generate"), fmt::format(R"({{"fencing_token": {}}})", token)},
      {RunPath(id, "steps/generate"),
       fmt::format(R"({{"fencing_token": {}, "exit_status": 0, "outcome": "succeeded"}})", token)},
      {RunPath(id, "steps/generate"),
       fmt::format(R"({{"fencing_token": {}, "exit_status": 256}})", token)},
      {RunPath(id, "steps/generate"),
       fmt::format(R"({{"fencing_token": {}, "outcome": "in_doubt"}})", token)},
      {RunPath(id, "steps/generate"),
       fmt::format(R"({{"fencing_token": {}, "outcome": "great"}})", token)},
      {RunPath(id, "steps/generate"),
       fmt::format(R"({{"fencing_token": {}, "exit_status": 0, "output_tail": 5}})", token)},
      {RunPath(id, "complete"), fmt::format(R"({{"fencing_token": {}, "state": "ok"}})", token)},
      {"/v1/runs/abc/heartbeat", fmt::format(R"({{"fencing_token": {}}})", token)},
      {"/v1/runs/0/complete", fmt::format(R"({{"fencing_token": {}}})", token)},
      {"/v1/runs/-3/steps/generate", fmt::format(R"({{"fencing_token": {}}})", token)},
  };
  for (const auto& [path, body] : bad) {
    const auto r = Call(path, body);
    EXPECT_EQ(r.status, 400) << path << " " << body << " -> " << r.body;
    EXPECT_EQ(r.body["error"], "invalid_request") << path << " " << body;
    EXPECT_TRUE(r.body["message"].is_string());
  }
  // A step the job does not have: 404; a step out of turn: 409.
  auto r = Call(RunPath(id, "steps/publish"), json{{"fencing_token", token}, {"exit_status", 0}});
  EXPECT_EQ(r.status, 404);
  r = Call(RunPath(id, "steps/deliver"), json{{"fencing_token", token}, {"exit_status", 0}});
  EXPECT_EQ(r.status, 409);
  EXPECT_EQ(r.body["error"], "conflict");
  // Oversized: 413.
  r = Call(RunPath(id, "heartbeat"), std::string(api::kMaxWorkerBodyBytes + 1, ' '));
  EXPECT_EQ(r.status, 413);
  EXPECT_EQ(r.body["error"], "too_large");
  EXPECT_EQ(Footprint(), before);
}

INSTANTIATE_TEST_SUITE_P(Backends, WorkerApiTest, ::testing::ValuesIn(AllStoreFactories()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace cronledger::testing
