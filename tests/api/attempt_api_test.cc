// The endpoints a step calls (src/api/attempt_api.h), on a real store: the
// credential decides who may call, the token fences every write, and a
// refused request changes nothing.
#include "api/attempt_api.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include "api/http_server.h"

#include "cronledger/clock.h"
#include "store/conformance.h"

namespace cronledger::testing {
namespace {

using api::ApiRequest;
using api::ApiResponse;
using nlohmann::json;

class AttemptApiTest : public StoreConformance {
 protected:
  void SetUp() override {
    StoreConformance::SetUp();
    writes_ = std::make_unique<engine::EffectWriter>(S());
    attempt_api_ = std::make_unique<api::AttemptApi>(
        S(), *writes_, clock_, credentials_,
        api::AttemptApi::Options{.node = "n1", .output_cap = 16});
  }

  ApiResponse Call(const std::string& method, const std::string& path, const json& body,
                   const store::ClaimedRun& as) {
    return Call(method, path, body.dump(), "Bearer " + credentials_.Issue(as.run.id, as.token));
  }
  ApiResponse Call(const std::string& method, const std::string& path, const std::string& body,
                   const std::string& authorization) {
    ApiRequest r;
    r.method = method;
    r.path = path;
    r.body = body;
    r.authorization = authorization;
    auto answer = attempt_api_->Handle(r);
    EXPECT_TRUE(answer.has_value()) << method << " " << path;
    return answer.value_or(ApiResponse{});
  }

  static json Begin(const store::ClaimedRun& c, const std::string& key,
                    const std::string& fingerprint = "") {
    return {{"run_id", c.run.id}, {"fencing_token", c.token}, {"key", key},
            {"fingerprint", fingerprint}, {"request", "r1"}};
  }
  static json Commit(const store::ClaimedRun& c, const std::string& key,
                     const std::string& result) {
    return {{"run_id", c.run.id}, {"fencing_token", c.token}, {"key", key}, {"result", result}};
  }

  // The effects of a run and its events: what a refused request must not change.
  std::pair<std::size_t, std::size_t> Footprint(int64_t run_id) {
    auto effects = S().EffectList(run_id);
    EXPECT_TRUE(effects.ok());
    return {effects.ok() ? effects->size() : 0, Events("j").size()};
  }

  FakeClock clock_{std::chrono::sys_seconds{SecondsAt("2026-11-05T12:01:00Z")}};
  const api::AttemptCredentials credentials_{"test-key"};
  std::unique_ptr<engine::EffectWriter> writes_;
  std::unique_ptr<api::AttemptApi> attempt_api_;
};

TEST_P(AttemptApiTest, ACommittedKeyIsReplayedWithItsStoredResultAndNeverProceedsAgain) {
  Setup({"a", "b"});
  const auto first = ClaimOne("2026-11-05T12:00:00Z");
  auto r = Call("POST", "/v1/effects/begin", Begin(first, "mail-1", "fp"), first);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body["outcome"], "proceed");
  EXPECT_EQ(r.body["effect"]["state"], "started");
  // The result is capped at output_cap (16 bytes here) on a UTF-8 boundary:
  // "é" is two bytes and does not fit whole at byte 16.
  r = Call("POST", "/v1/effects/commit", Commit(first, "mail-1", "sent id=12345678é"), first);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body["state"], "committed") << r.body;

  const auto second = ClaimOne("2026-11-05T12:00:00Z");
  r = Call("POST", "/v1/effects/begin", Begin(second, "mail-1", "fp"), second);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body["outcome"], "replay");
  EXPECT_EQ(r.body["effect"]["result"], "sent id=12345678");
  EXPECT_EQ(r.body["effect"]["run_id"], first.run.id);
}

TEST_P(AttemptApiTest, AnotherFingerprintIsRefusedNamingBothAndChangesNothing) {
  Setup({"a"});
  const auto c = ClaimOne("2026-11-05T12:00:00Z");
  ASSERT_EQ(Call("POST", "/v1/effects/begin", Begin(c, "k", "amount=10"), c).status, 200);
  const auto before = Footprint(c.run.id);
  const auto r = Call("POST", "/v1/effects/begin", Begin(c, "k", "amount=20"), c);
  EXPECT_EQ(r.status, 409);
  EXPECT_EQ(r.body["error"], "fingerprint_mismatch");
  const std::string message = r.body["message"];
  EXPECT_NE(message.find("amount=10"), std::string::npos) << message;
  EXPECT_NE(message.find("amount=20"), std::string::npos) << message;
  EXPECT_EQ(Footprint(c.run.id), before);
}

TEST_P(AttemptApiTest, AnAttemptWhoseLeaseMovedOnIsFencedOff) {
  Setup({"a"});
  const auto c = ClaimOne("2026-11-05T12:00:00Z");
  End(c, "2026-11-05T12:00:30Z", ledger::RunState::kPending);
  const std::size_t effects_before = Footprint(c.run.id).first;
  auto r = Call("POST", "/v1/effects/begin", Begin(c, "k"), c);
  EXPECT_EQ(r.status, 409);
  EXPECT_EQ(r.body["error"], "stale_lease");
  r = Call("PUT", "/v1/checkpoints",
           json{{"run_id", c.run.id}, {"fencing_token", c.token}, {"value", "7"}}, c);
  EXPECT_EQ(r.status, 409);
  EXPECT_EQ(r.body["error"], "stale_lease");
  r = Call("GET", "/v1/checkpoints", json(), c);
  EXPECT_EQ(r.status, 409);
  EXPECT_EQ(r.body["error"], "stale_lease");
  EXPECT_EQ(Footprint(c.run.id).first, effects_before);
  EXPECT_FALSE(S().CheckpointGet(c.run.id)->run.has_value());
  // The refused effect and checkpoint writes are recorded, and counted for
  // cronledger_stale_writes_rejected_total as the store committed them.
  const auto refused = Events("j", "stale_write_rejected");
  EXPECT_GE(refused.size(), 2u);
  EXPECT_EQ(S().StaleWritesRejected(), static_cast<int64_t>(refused.size()));
}

TEST_P(AttemptApiTest, TwoRunsRacingOnOneKeyOnlyOneProceeds) {
  Setup({"a", "b"});
  const auto a = ClaimOne("2026-11-05T12:00:00Z");
  const auto b = ClaimOne("2026-11-05T12:00:00Z");
  auto ra = Call("POST", "/v1/effects/begin", Begin(a, "shared"), a);
  auto rb = Call("POST", "/v1/effects/begin", Begin(b, "shared"), b);
  EXPECT_EQ(ra.body["outcome"], "proceed") << ra.body;
  EXPECT_EQ(rb.status, 409) << rb.body;
  EXPECT_EQ(rb.body["error"], "conflict");
}

TEST_P(AttemptApiTest, CredentialsDecideWhoMayCall) {
  Setup({"a", "b"});
  const auto a = ClaimOne("2026-11-05T12:00:00Z");
  const auto b = ClaimOne("2026-11-05T12:00:00Z");
  const std::string body = Begin(a, "k").dump();
  const auto before = Footprint(a.run.id);

  auto r = Call("POST", "/v1/effects/begin", body, "");
  EXPECT_EQ(r.status, 401);
  EXPECT_EQ(r.body["error"], "unauthenticated");
  r = Call("POST", "/v1/effects/begin", body, "Basic dXNlcjpwYXNz");
  EXPECT_EQ(r.status, 401);
  const api::AttemptCredentials other("another-server");
  r = Call("POST", "/v1/effects/begin", body, "Bearer " + other.Issue(a.run.id, a.token));
  EXPECT_EQ(r.status, 401);
  // b's credential asking for a's run: a credential is for its own attempt.
  r = Call("POST", "/v1/effects/begin", body, "Bearer " + credentials_.Issue(b.run.id, b.token));
  EXPECT_EQ(r.status, 403);
  EXPECT_EQ(r.body["error"], "forbidden");
  // The right run with another token is another attempt.
  r = Call("POST", "/v1/effects/begin", body,
           "bearer " + credentials_.Issue(a.run.id, a.token + 1));
  EXPECT_EQ(r.status, 403);
  EXPECT_EQ(Footprint(a.run.id), before);
}

TEST_P(AttemptApiTest, MalformedRequestsAreRefusedByNameAndChangeNothing) {
  Setup({"a"});
  const auto c = ClaimOne("2026-11-05T12:00:00Z");
  const auto before = Footprint(c.run.id);
  const std::string auth = "Bearer " + credentials_.Issue(c.run.id, c.token);
  const auto message = [&](const std::string& path, const std::string& body,
                           const std::string& method = "POST") {
    const auto r = Call(method, path, body, auth);
    EXPECT_EQ(r.status, 400) << body << " -> " << r.body;
    EXPECT_EQ(r.body["error"], "invalid_request");
    return r.body.value("message", "");
  };
  const std::string ids =
      R"("run_id": )" + std::to_string(c.run.id) + R"(, "fencing_token": )" +
      std::to_string(c.token);
  EXPECT_EQ(message("/v1/effects/begin", "{not json"), "the body is not valid JSON");
  EXPECT_EQ(message("/v1/effects/begin", "[1]"), "the body must be a JSON object");
  EXPECT_EQ(message("/v1/effects/begin", "{" + ids + "}"), "field \"key\" is required");
  EXPECT_EQ(message("/v1/effects/begin", "{" + ids + R"(, "key": 5})"),
            "field \"key\" must be a string");
  EXPECT_EQ(message("/v1/effects/begin", "{" + ids + R"(, "key": "k", "colour": "red"})"),
            "unknown field \"colour\"");
  EXPECT_EQ(message("/v1/effects/begin",
                    "{" + ids + R"(, "key": ")" + std::string(1025, 'k') + "\"}"),
            "field \"key\" is 1025 bytes; at most 1024 are allowed");
  EXPECT_EQ(message("/v1/effects/begin", R"({"run_id": -1, "fencing_token": 1, "key": "k"})"),
            "field \"run_id\" must be from 1 to 9223372036854775807");
  EXPECT_EQ(message("/v1/effects/commit", "{" + ids + R"(, "key": "k", "exit_status": 300})"),
            "field \"exit_status\" must be from 0 to 255");
  EXPECT_EQ(message("/v1/effects/commit",
                    "{" + ids + R"(, "key": "k", "checkpoint": {"value": "1", "x": 2}})"),
            "unknown field \"checkpoint.x\"");
  EXPECT_EQ(message("/v1/effects/commit",
                    "{" + ids + R"(, "key": "k", "checkpoint": {"scope": "job", "value": "1"}})"),
            "field \"checkpoint.scope\" must be \"run\" or \"partition\"");
  EXPECT_EQ(message("/v1/checkpoints", "{" + ids + R"(, "scope": "job", "value": "1"})", "PUT"),
            "field \"scope\" must be \"run\" or \"partition\"");
  EXPECT_EQ(Footprint(c.run.id), before);
  EXPECT_FALSE(S().CheckpointGet(c.run.id)->run.has_value());

  auto r = Call("GET", "/v1/effects/begin", "", auth);
  EXPECT_EQ(r.status, 405);
  ApiRequest elsewhere;
  elsewhere.method = "GET";
  elsewhere.path = "/v1/jobs";
  EXPECT_FALSE(attempt_api_->Handle(elsewhere).has_value());
}

TEST_P(AttemptApiTest, WatermarksMoveWithTheirEffectAndAloneAndAreReadBack) {
  Setup({"a"});
  const auto c = ClaimOne("2026-11-05T12:00:00Z");
  auto r = Call("GET", "/v1/checkpoints", json(), c);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_TRUE(r.body["run"].is_null()) << r.body;
  EXPECT_TRUE(r.body["partition"].is_null()) << r.body;

  ASSERT_EQ(Call("POST", "/v1/effects/begin", Begin(c, "item-1"), c).status, 200);
  json commit = Commit(c, "item-1", "ok");
  commit["checkpoint"] = {{"scope", "partition"}, {"value", "1"}};
  ASSERT_EQ(Call("POST", "/v1/effects/commit", commit, c).status, 200);
  r = Call("PUT", "/v1/checkpoints",
           json{{"run_id", c.run.id}, {"fencing_token", c.token}, {"value", "page-3"}}, c);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body["scope"], "run");
  EXPECT_EQ(r.body["value"], "page-3");

  r = Call("GET", "/v1/checkpoints", json(), c);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body["run"]["value"], "page-3");
  EXPECT_EQ(r.body["partition"]["value"], "1");

  RunContext ctx;
  ctx.run_id = c.run.id;
  ctx.fencing_token = c.token;
  const auto env = api::AttemptEnvironment(S(), credentials_, "http://127.0.0.1:1", ctx);
  ASSERT_TRUE(env.ok()) << env.status().ToString();
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"CRONLEDGER_API", "http://127.0.0.1:1"},
      {"CRONLEDGER_TOKEN", credentials_.Issue(c.run.id, c.token)},
      {"CRONLEDGER_CHECKPOINT", "page-3"},
      {"CRONLEDGER_CHECKPOINT_PARTITION", "1"}};
  EXPECT_EQ(*env, expected);
}

TEST_P(AttemptApiTest, AFailedEffectIsDoneAgainByTheNextAttempt) {
  Setup({"a"});
  const auto first = ClaimOne("2026-11-05T12:00:00Z");
  ASSERT_EQ(Call("POST", "/v1/effects/begin", Begin(first, "k"), first).status, 200);
  json fail = Commit(first, "k", "smtp 550");
  fail["exit_status"] = 3;
  auto r = Call("POST", "/v1/effects/fail", fail, first);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body["state"], "failed");
  // Asking again (a retried call whose answer was lost) is harmless.
  EXPECT_EQ(Call("POST", "/v1/effects/fail", fail, first).status, 200);
  End(first, "2026-11-05T12:00:30Z", ledger::RunState::kPending);
  const auto second = ClaimOne("2026-11-05T12:01:00Z");
  r = Call("POST", "/v1/effects/begin", Begin(second, "k"), second);
  EXPECT_EQ(r.body["outcome"], "proceed") << r.body;
}

// The same endpoints through serve's HTTP server on a real socket: its own
// errors (unknown path, oversized body) keep the API's shape.
TEST_P(AttemptApiTest, AreServedOverHttpOnLoopback) {
  Setup({"a"});
  const auto c = ClaimOne("2026-11-05T12:00:00Z");
  api::HttpServer server(2);
  ASSERT_TRUE(server.Bind("127.0.0.1:0").ok());
  ASSERT_GT(server.port(), 0);
  EXPECT_EQ(server.url(), "http://127.0.0.1:" + std::to_string(server.port()));
  server.Serve(*attempt_api_);

  httplib::Client client(server.url());
  auto health = client.Get("/healthz");
  ASSERT_TRUE(health) << httplib::to_string(health.error());
  EXPECT_EQ(health->status, 200);

  client.set_bearer_token_auth(credentials_.Issue(c.run.id, c.token));
  auto begun = client.Post("/v1/effects/begin", Begin(c, "k").dump(), "application/json");
  ASSERT_TRUE(begun);
  EXPECT_EQ(begun->status, 200) << begun->body;
  EXPECT_EQ(json::parse(begun->body)["outcome"], "proceed");

  auto nowhere = client.Get("/v1/nowhere");
  ASSERT_TRUE(nowhere);
  EXPECT_EQ(nowhere->status, 404);
  EXPECT_EQ(json::parse(nowhere->body)["error"], "not_found");

  const std::string huge(attempt_api_->MaxBodyBytes() + 1, ' ');
  auto too_big = client.Post("/v1/effects/commit", huge, "application/json");
  ASSERT_TRUE(too_big);
  EXPECT_EQ(too_big->status, 413);
  EXPECT_EQ(json::parse(too_big->body)["error"], "too_large");

  // A second server cannot take the same port, and says which.
  api::HttpServer second(1);
  const Status taken = second.Bind("127.0.0.1:" + std::to_string(server.port()));
  EXPECT_EQ(taken.code(), StatusCode::kUnavailable);
  EXPECT_NE(taken.message().find("cannot listen on 127.0.0.1:"), std::string::npos)
      << taken.message();
  server.Stop();
}

INSTANTIATE_TEST_SUITE_P(Backends, AttemptApiTest, ::testing::ValuesIn(AllStoreFactories()),
                         [](const auto& info) { return info.param.name; });

// ---- credentials ------------------------------------------------------------

TEST(AttemptCredentials, NameOneAttemptAndCannotBeForged) {
  const api::AttemptCredentials mine("k1");
  const std::string c = mine.Issue(42, 7);
  EXPECT_TRUE(c.starts_with("clt1.42.7."));
  const auto who = mine.Verify(c);
  ASSERT_TRUE(who.has_value());
  EXPECT_EQ(who->run_id, 42);
  EXPECT_EQ(who->token, 7);

  EXPECT_FALSE(api::AttemptCredentials("k2").Verify(c).has_value());
  std::string tampered = c;
  tampered.replace(5, 2, "43");
  EXPECT_FALSE(mine.Verify(tampered).has_value());
  for (const char* bad : {"", "clt1.", "clt1.42.7", "clt1.42.7.", "clt1.042.7.00", "clt2.42.7.ab",
                          "clt1.-4.7.ab", "clt1.42..ab", "clt1.4 2.7.ab"}) {
    EXPECT_FALSE(mine.Verify(bad).has_value()) << bad;
  }
  // Two processes' random keys differ: one node's credentials are its own.
  const api::AttemptCredentials a, b;
  EXPECT_FALSE(b.Verify(a.Issue(1, 1)).has_value());
}

}  // namespace
}  // namespace cronledger::testing
