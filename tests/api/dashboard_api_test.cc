// The dashboard's server side against a real `cronledger serve` on SQLite
// (docs/dashboard.md): the embedded page, the one-time login link, the
// token login, the session cookie on /v1, CSRF on every action sent with
// the cookie, logout, and GET /v1/jobs/{name}/history.
//
// The ledger is seeded in this process on a fake clock around today (read
// once from the real clock): job "daily" (partitions a, b; "0 0 * * *"
// UTC; executor external, so serve claims nothing), business dates D-2 ..
// D, each run's attempt from 00:00:02 for 5 minutes; every run succeeded
// except b's of D (failed, exit 65).
#include <gtest/gtest.h>
#include <httplib.h>
#include <stdlib.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <variant>

#include "cli/subprocess.h"
#include "common/serve_fixture.h"
#include "common/temp_dir.h"
#include "config/config.h"
#include "cronledger/clock.h"
#include "cronledger/schedule.h"
#include "engine/planner.h"
#include "ledger/names.h"
#include "store/sqlite/sqlite_store.h"

namespace cronledger {
namespace {

using Json = nlohmann::json;
using testing::ReadFile;
using testing::ServeFixture;
using testing::TempDir;
using testing::WaitFor;

constexpr const char* kReadSecret = "dash-read-secret-0123456789";
constexpr const char* kOperateSecret = "dash-operate-secret-0123456789";
constexpr const char* kWorkerSecret = "dash-worker-secret-0123456789";

std::string Config(const std::string& extra) {
  return R"([server]
store = "sqlite:ledger.db"
listen = "127.0.0.1:0"

[[job]]
name = "daily"
schedule = "0 0 * * *"
timezone = "UTC"
partitions = ["a", "b"]
executor = "external"
misfire_grace = "3d"

  [[job.step]]
  name = "work"
)" + extra;
}

constexpr const char* kTokens = R"(
[[auth.token]]
name = "viewer"
role = "read"
secret_env = "CL_DASH_READ"

[[auth.token]]
name = "oncall"
role = "operate"
secret_env = "CL_DASH_OPERATE"

[[auth.token]]
name = "w1"
role = "worker"
secret_env = "CL_DASH_WORKER"
)";

std::chrono::sys_days Today() { return std::chrono::floor<std::chrono::days>(RealClock().Now()); }
std::string DateOf(std::chrono::sys_days d) { return FormatDate(std::chrono::year_month_day(d)); }

void Seed(const std::string& config_path, const std::string& db) {
  auto loaded = config::LoadConfig(config_path);
  ASSERT_TRUE(std::holds_alternative<config::Config>(loaded));
  const config::Config config = std::get<config::Config>(loaded);
  store::SqliteOptions o;
  o.path = db;
  o.synchronous_full = false;
  auto opened = store::SqliteStore::Open(o);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  store::Store& store = **opened;
  const auto today = Today();
  FakeClock clock(today - std::chrono::days(3));
  engine::Planner planner(config, store, clock);
  store::ClaimRule rule;
  rule.job = "daily";
  rule.overlap = ledger::Overlap::kAllow;
  rule.steps = {"work"};
  for (int back = 2; back >= 0; --back) {
    const Clock::TimePoint midnight = today - std::chrono::days(back);
    ASSERT_TRUE(planner.PlanOnce(midnight - std::chrono::seconds(30)).ok());
    store::ReleaseParams release;
    release.job = "daily";
    release.now = store::ToInstant(midnight + std::chrono::seconds(1));
    ASSERT_TRUE(store.RunRelease(release).ok());
    const auto start = midnight + std::chrono::seconds(2);
    auto claimed = store.RunClaim({store::ToInstant(start), "seed", 10, {rule}});
    ASSERT_TRUE(claimed.ok());
    ASSERT_EQ(claimed->size(), 2u);
    for (const auto& c : *claimed) {
      store::FinishParams f;
      f.run_id = c.run.id;
      f.token = c.token;
      f.node = "seed";
      f.now = store::ToInstant(start + std::chrono::minutes(5));
      f.step = "work";
      if (back == 0 && c.run.partition == "b") {
        f.end_class = ledger::EndClass::kPermanent;
        f.exit_status = 65;
        f.decision.state = ledger::RunState::kFailed;
        f.decision.reason = "exit 65: permanent";
      } else {
        ASSERT_TRUE(store
                        .StepUpdate({c.run.id, c.token, "work", ledger::StepStatus::kSucceeded,
                                     f.now, "seed"})
                        .ok());
        f.exit_status = 0;
        f.decision.state = ledger::RunState::kSucceeded;
      }
      auto finished = store.RunFinishAttempts({f});
      ASSERT_TRUE(finished.ok() && finished->at(0).ok());
    }
  }
}

struct Answer {
  int status = 0;
  Json body;
  std::string text;
  httplib::Headers headers;
  std::string Header(const char* name) const {
    const auto it = headers.find(name);
    return it == headers.end() ? "" : it->second;
  }
};

Answer Call(int port, const std::string& method, const std::string& path,
            const httplib::Headers& headers = {}, const std::string& body = "",
            const std::string& content_type = "application/json") {
  httplib::Client client("127.0.0.1", port);
  httplib::Result r = method == "GET"      ? client.Get(path, headers)
                      : method == "DELETE" ? client.Delete(path, headers, body, content_type)
                                           : client.Post(path, headers, body, content_type);
  Answer a;
  if (!r) {
    ADD_FAILURE() << method << " " << path << ": " << httplib::to_string(r.error());
    return a;
  }
  a.status = r->status;
  a.text = r->body;
  a.headers = r->headers;
  a.body = Json::parse(r->body, nullptr, false);
  return a;
}

// "cronledger_session=ID" out of a Set-Cookie header.
std::string CookieOf(const Answer& a) {
  const std::string set = a.Header("Set-Cookie");
  return set.substr(0, set.find(';'));
}

// ---- without [[auth.token]]: the local token and its one-time link ---------------------------

class DashboardLocal : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    serve_ = new ServeFixture("cronledger-dashboard-local");
    dir_ = &serve_->dir();
    config_ = serve_->WriteConfig(Config(""));
    Seed(config_, dir_->File("ledger.db"));
    if (!serve_->Start()) return;
    port_ = serve_->port();
    WaitFor([] { return serve_->Log().find("/login?code=") != std::string::npos; }, 600);
    const std::string log = serve_->Log();
    const std::size_t at = log.find("/login?code=");
    if (at != std::string::npos) {
      const std::size_t from = at + std::string("/login?code=").size();
      code_ = log.substr(from, log.find_first_not_of("0123456789abcdef", from) - from);
    }
  }
  static void TearDownTestSuite() { delete serve_; }
  void SetUp() override {
    ASSERT_GT(port_, 0) << serve_->Log();
    ASSERT_FALSE(code_.empty()) << serve_->Log();
  }
  static inline ServeFixture* serve_ = nullptr;
  static inline const TempDir* dir_ = nullptr;  // serve_'s
  static inline std::string config_;
  static inline int port_ = 0;
  static inline std::string code_;
};

TEST_F(DashboardLocal, ServesThePageAndItsAssetsWithoutACdn) {
  const Answer page = Call(port_, "GET", "/");
  EXPECT_EQ(page.status, 200);
  EXPECT_EQ(page.Header("Content-Type"), "text/html; charset=utf-8");
  EXPECT_NE(page.text.find("<script src=\"/assets/app.js\">"), std::string::npos);
  EXPECT_EQ(page.text.find("http"), std::string::npos) << "nothing from another site";
  EXPECT_NE(page.Header("Content-Security-Policy").find("script-src 'self'"), std::string::npos);
  EXPECT_EQ(page.Header("X-Content-Type-Options"), "nosniff");
  EXPECT_EQ(page.Header("Referrer-Policy"), "no-referrer");
  const Answer js = Call(port_, "GET", "/assets/app.js");
  EXPECT_EQ(js.status, 200);
  EXPECT_EQ(js.Header("Content-Type"), "text/javascript; charset=utf-8");
  EXPECT_EQ(js.text.find("innerHTML"), std::string::npos) << "ledger values go in as text";
  EXPECT_EQ(Call(port_, "GET", "/assets/app.css").status, 200);
  const Answer missing = Call(port_, "GET", "/assets/nope.js");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.body["error"], "not_found");
  EXPECT_EQ(Call(port_, "POST", "/", {}, "{}").status, 405);
}

TEST_F(DashboardLocal, TheLoginLinkLogsInOnceAndNeverShowsTheToken) {
  const std::string token = ReadFile(dir_->File("cronledger.token"));
  const std::string secret = token.substr(0, token.find('\n'));
  EXPECT_EQ(serve_->Log().find(secret), std::string::npos) << "the token is never printed";
  // Plainly on stderr, where the person starting serve looks, and once: the
  // text log shares stderr, so its line leaves the link out.
  const std::string log = serve_->Log();
  const std::size_t link = log.find("cronledger serve: dashboard login (one-time link, valid 10 min): "
                                    "http://127.0.0.1:" +
                                    std::to_string(port_) + "/login?code=");
  EXPECT_NE(link, std::string::npos) << log;
  EXPECT_EQ(log.find("/login?code="), log.rfind("/login?code=")) << log;

  const Answer first = Call(port_, "GET", "/login?code=" + code_);
  EXPECT_EQ(first.status, 303);
  EXPECT_EQ(first.Header("Location"), "/");
  const std::string set = first.Header("Set-Cookie");
  EXPECT_TRUE(set.starts_with("cronledger_session=")) << set;
  EXPECT_NE(set.find("; HttpOnly"), std::string::npos) << set;
  EXPECT_NE(set.find("; SameSite=Strict"), std::string::npos) << set;
  EXPECT_NE(set.find("; Path=/"), std::string::npos) << set;
  EXPECT_NE(set.find("; Max-Age=43200"), std::string::npos) << set;

  const Answer again = Call(port_, "GET", "/login?code=" + code_);
  EXPECT_EQ(again.status, 303);
  EXPECT_EQ(again.Header("Location"), "/#/login?link=invalid") << "single use";
  EXPECT_EQ(again.Header("Set-Cookie"), "");
  EXPECT_EQ(Call(port_, "GET", "/login?code=0123").Header("Location"), "/#/login?link=invalid");
  EXPECT_EQ(Call(port_, "GET", "/login").Header("Location"), "/#/login?link=invalid");

  const Answer session = Call(port_, "GET", "/v1/session", {{"Cookie", CookieOf(first)}});
  ASSERT_EQ(session.status, 200) << session.text;
  EXPECT_EQ(session.body["token_name"], "local");
  EXPECT_EQ(session.body["role"], "operate");
  EXPECT_EQ(session.body["csrf_token"].get<std::string>().size(), 64u);
  EXPECT_EQ(session.text.find(secret), std::string::npos);
  // The local token logs in through the form too.
  const Answer form = Call(port_, "POST", "/v1/session", {}, Json{{"token", secret}}.dump());
  EXPECT_EQ(form.status, 200) << form.text;
  EXPECT_EQ(form.body["role"], "operate");
}

// ---- with [[auth.token]]: roles, cookies, CSRF, history -----------------------------------------

class Dashboard : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    serve_ = new ServeFixture("cronledger-dashboard");
    dir_ = &serve_->dir();
    config_ = serve_->WriteConfig(Config(kTokens));
    Seed(config_, dir_->File("ledger.db"));
    setenv("CL_DASH_READ", kReadSecret, 1);
    setenv("CL_DASH_OPERATE", kOperateSecret, 1);
    setenv("CL_DASH_WORKER", kWorkerSecret, 1);
    if (serve_->Start()) port_ = serve_->port();
  }
  static void TearDownTestSuite() { delete serve_; }
  void SetUp() override { ASSERT_GT(port_, 0) << serve_->Log(); }

  struct Login {
    std::string cookie;
    std::string csrf;
  };
  static Login LogIn(const char* secret) {
    const Answer a = Call(port_, "POST", "/v1/session", {}, Json{{"token", secret}}.dump());
    EXPECT_EQ(a.status, 200) << a.text;
    return {CookieOf(a), a.body.value("csrf_token", "")};
  }
  static std::string JobState() {
    return Call(port_, "GET", "/v1/jobs/daily", {{"Authorization", std::string("Bearer ") + kReadSecret}})
        .body.value("state", "");
  }
  static std::size_t Events(const std::string& type) {
    return Call(port_, "GET", "/v1/events?type=" + type,
                {{"Authorization", std::string("Bearer ") + kReadSecret}})
        .body["events"]
        .size();
  }

  static inline ServeFixture* serve_ = nullptr;
  static inline const TempDir* dir_ = nullptr;  // serve_'s
  static inline std::string config_;
  static inline int port_ = 0;
};

TEST_F(Dashboard, NoLoginLinkWhenTokensAreConfigured) {
  EXPECT_EQ(serve_->Log().find("/login?code="), std::string::npos);
}

TEST_F(Dashboard, TheLoginFormTakesReadAndOperateTokensOnly) {
  const Answer read = Call(port_, "POST", "/v1/session", {}, Json{{"token", kReadSecret}}.dump());
  EXPECT_EQ(read.status, 200);
  EXPECT_EQ(read.body["token_name"], "viewer");
  EXPECT_EQ(read.body["role"], "read");
  EXPECT_TRUE(read.Header("Set-Cookie").starts_with("cronledger_session="));
  const Answer worker = Call(port_, "POST", "/v1/session", {}, Json{{"token", kWorkerSecret}}.dump());
  EXPECT_EQ(worker.status, 403);
  EXPECT_EQ(worker.body["error"], "forbidden");
  EXPECT_EQ(worker.Header("Set-Cookie"), "");
  const Answer wrong = Call(port_, "POST", "/v1/session", {}, Json{{"token", "nope-nope"}}.dump());
  EXPECT_EQ(wrong.status, 401);
  EXPECT_EQ(wrong.body["error"], "unauthenticated");
  // Only JSON: a cross-site form cannot log a browser in.
  const Answer form = Call(port_, "POST", "/v1/session", {},
                           std::string("token=") + kReadSecret,
                           "application/x-www-form-urlencoded");
  EXPECT_EQ(form.status, 400);
  const Answer text_plain = Call(port_, "POST", "/v1/session", {},
                                 Json{{"token", kReadSecret}}.dump(), "text/plain");
  EXPECT_EQ(text_plain.status, 400);
  EXPECT_EQ(Call(port_, "POST", "/v1/session", {}, R"({"token": "x", "more": 1})").status, 400);
  EXPECT_EQ(Call(port_, "GET", "/v1/session").status, 401);
}

TEST_F(Dashboard, TheSessionCookieAuthenticatesV1) {
  const Login s = LogIn(kReadSecret);
  const Answer jobs = Call(port_, "GET", "/v1/jobs", {{"Cookie", "other=1; " + s.cookie}});
  EXPECT_EQ(jobs.status, 200) << jobs.text;
  EXPECT_EQ(jobs.body["jobs"][0]["name"], "daily");
  EXPECT_EQ(Call(port_, "GET", "/v1/runs?job=daily", {{"Cookie", s.cookie}}).status, 200);
  const Answer bogus = Call(port_, "GET", "/v1/jobs", {{"Cookie", "cronledger_session=f00d"}});
  EXPECT_EQ(bogus.status, 401);
  EXPECT_EQ(bogus.body["error"], "unauthenticated");
  // Another cookie of the host is not a session.
  EXPECT_EQ(Call(port_, "GET", "/v1/jobs", {{"Cookie", "theme=dark"}}).status, 401);
}

TEST_F(Dashboard, AnActionWithTheCookieNeedsTheCsrfToken) {
  const Login s = LogIn(kOperateSecret);
  const std::string pause = R"({"job": "daily", "reason": "maintenance"})";
  const Answer missing = Call(port_, "POST", "/v1/pause", {{"Cookie", s.cookie}}, pause);
  EXPECT_EQ(missing.status, 403);
  EXPECT_EQ(missing.body["error"], "forbidden");
  EXPECT_NE(missing.body["message"].get<std::string>().find("X-CSRF-Token"), std::string::npos);
  const Answer wrong = Call(port_, "POST", "/v1/pause",
                            {{"Cookie", s.cookie}, {"X-CSRF-Token", std::string(64, 'a')}}, pause);
  EXPECT_EQ(wrong.status, 403);
  // Another session's token is wrong too.
  const Login other = LogIn(kOperateSecret);
  EXPECT_EQ(Call(port_, "POST", "/v1/pause", {{"Cookie", s.cookie}, {"X-CSRF-Token", other.csrf}},
                 pause)
                .status,
            403);
  // A form post (no JSON, no token) as another site would make it.
  EXPECT_EQ(Call(port_, "POST", "/v1/pause", {{"Cookie", s.cookie}}, "reason=x",
                 "application/x-www-form-urlencoded")
                .status,
            403);
  EXPECT_EQ(JobState(), "active") << "nothing changed";
  EXPECT_EQ(Events("paused"), 0u);

  const Answer ok =
      Call(port_, "POST", "/v1/pause", {{"Cookie", s.cookie}, {"X-CSRF-Token", s.csrf}}, pause);
  EXPECT_EQ(ok.status, 200) << ok.text;
  EXPECT_EQ(JobState(), "paused");
  const Answer events = Call(port_, "GET", "/v1/events?type=paused", {{"Cookie", s.cookie}});
  ASSERT_EQ(events.body["events"].size(), 1u);
  EXPECT_EQ(events.body["events"][0]["actor"], "oncall") << "the session's token acts";
  EXPECT_EQ(events.body["events"][0]["reason"], "maintenance");
  // A bearer request needs no CSRF token, even with a cookie beside it.
  const Answer bearer = Call(port_, "POST", "/v1/resume",
                             {{"Authorization", std::string("Bearer ") + kOperateSecret},
                              {"Cookie", s.cookie}},
                             R"({"job": "daily", "reason": "done"})");
  EXPECT_EQ(bearer.status, 200) << bearer.text;
  EXPECT_EQ(JobState(), "active");
}

TEST_F(Dashboard, AReadSessionCannotAct) {
  const Login s = LogIn(kReadSecret);
  const Answer a = Call(port_, "POST", "/v1/pause", {{"Cookie", s.cookie}, {"X-CSRF-Token", s.csrf}},
                        R"({"job": "daily", "reason": "x"})");
  EXPECT_EQ(a.status, 403);
  EXPECT_NE(a.body["message"].get<std::string>().find("role read"), std::string::npos) << a.text;
  EXPECT_EQ(JobState(), "active");
}

TEST_F(Dashboard, LogoutNeedsTheCsrfTokenAndEndsTheSession) {
  const Login s = LogIn(kOperateSecret);
  EXPECT_EQ(Call(port_, "DELETE", "/v1/session", {{"Cookie", s.cookie}}).status, 403);
  EXPECT_EQ(Call(port_, "GET", "/v1/jobs", {{"Cookie", s.cookie}}).status, 200);
  const Answer out =
      Call(port_, "DELETE", "/v1/session", {{"Cookie", s.cookie}, {"X-CSRF-Token", s.csrf}});
  EXPECT_EQ(out.status, 200);
  EXPECT_NE(out.Header("Set-Cookie").find("Max-Age=0"), std::string::npos);
  EXPECT_EQ(Call(port_, "GET", "/v1/jobs", {{"Cookie", s.cookie}}).status, 401);
  EXPECT_EQ(Call(port_, "GET", "/v1/session", {{"Cookie", s.cookie}}).status, 401);
}

TEST_F(Dashboard, JobHistoryHasEveryKeyAndEachDatesFinish) {
  const auto today = Today();
  const Answer a = Call(port_, "GET", "/v1/jobs/daily/history?days=3",
                        {{"Authorization", std::string("Bearer ") + kReadSecret}});
  ASSERT_EQ(a.status, 200) << a.text;
  EXPECT_EQ(a.body["job"], "daily");
  EXPECT_EQ(a.body["from"], DateOf(today - std::chrono::days(2)));
  EXPECT_EQ(a.body["to"], DateOf(today));
  EXPECT_EQ(a.body["partitions"], Json::array({"a", "b"}));
  EXPECT_EQ(a.body["truncated"], false);
  ASSERT_EQ(a.body["keys"].size(), 6u);
  for (const auto& k : a.body["keys"]) {
    const bool failed = k["partition"] == "b" && k["business_date"] == DateOf(today);
    EXPECT_EQ(k["state"], failed ? "failed" : "succeeded") << k.dump();
    EXPECT_EQ(k["duration_seconds"], 300) << k.dump();
    EXPECT_EQ(k["attempts"], 1);
    EXPECT_TRUE(k["run_id"].is_number_integer());
    EXPECT_EQ(k["cause"], failed ? Json("failed") : Json(nullptr));
  }
  ASSERT_EQ(a.body["dates"].size(), 3u);
  for (int i = 0; i < 3; ++i) {
    const auto& d = a.body["dates"][i];
    const std::string date = DateOf(today - std::chrono::days(2 - i));
    EXPECT_EQ(d["business_date"], date);
    EXPECT_EQ(d["scheduled_at"], date + "T00:00:00Z");
    EXPECT_EQ(d["finished_at"], date + "T00:05:02Z");
    EXPECT_EQ(d["expected"], 2);
    EXPECT_EQ(d["complete"], i < 2);
    EXPECT_EQ(d["succeeded"], i < 2 ? 2 : 1);
    EXPECT_EQ(d["failed"], i < 2 ? 0 : 1);
  }
  // The default window is 30 days: the same three dates with keys.
  const Login s = LogIn(kReadSecret);
  const Answer by_cookie = Call(port_, "GET", "/v1/jobs/daily/history", {{"Cookie", s.cookie}});
  EXPECT_EQ(by_cookie.status, 200);
  EXPECT_EQ(by_cookie.body["days"], 30);
  EXPECT_EQ(by_cookie.body["dates"].size(), 3u);
}

TEST_F(Dashboard, JobHistoryRefusesBadParameters) {
  const httplib::Headers auth = {{"Authorization", std::string("Bearer ") + kReadSecret}};
  for (const char* q : {"?days=0", "?days=91", "?days=x", "?days=-1", "?since=1", "?days=3&days=4"}) {
    const Answer a = Call(port_, "GET", std::string("/v1/jobs/daily/history") + q, auth);
    EXPECT_EQ(a.status, 400) << q;
    EXPECT_EQ(a.body["error"], "invalid_request") << q;
  }
  EXPECT_EQ(Call(port_, "GET", "/v1/jobs/nope/history", auth).status, 404);
  EXPECT_EQ(Call(port_, "GET", "/v1/jobs/daily/history").status, 401);
  EXPECT_EQ(Call(port_, "GET", "/v1/jobs/daily/history",
                 {{"Authorization", std::string("Bearer ") + kWorkerSecret}})
                .status,
            403);
  EXPECT_EQ(Call(port_, "POST", "/v1/jobs/daily/history", auth, "{}").status, 405);
}

// ---- sessions kept in the ledger; `cronledger login-link` ---------------------------------------

// A session outlives a restart of serve; a logout ends it for good; and
// `cronledger login-link` prints a new one-time link at the running node's
// address, the local token's without [[auth.token]], a named token's with.
TEST(DashboardSessions, SurviveARestartAndLoginLinkPrintsANewLink) {
  ServeFixture serve("cronledger-dashboard-restart");
  const std::string config = serve.WriteConfig(Config(""));
  ASSERT_TRUE(serve.Start()) << serve.Log();
  auto linked = testing::Cronledger({"login-link", "--config", config});
  ASSERT_EQ(linked.exit_code, 0) << linked.err;
  const std::string prefix = serve.url() + "/login?code=";
  ASSERT_EQ(linked.out.rfind(prefix, 0), 0u) << linked.out;
  EXPECT_EQ(linked.out.size(), prefix.size() + 64 + 1) << linked.out;
  EXPECT_NE(linked.err.find("token \"local\" (operate), valid 10 min, works once"),
            std::string::npos)
      << linked.err;
  const std::string code = linked.out.substr(prefix.size(), 64);
  const Answer first = Call(serve.port(), "GET", "/login?code=" + code);
  ASSERT_EQ(first.status, 303);
  ASSERT_EQ(first.Header("Location"), "/");
  const std::string cookie = CookieOf(first);
  EXPECT_EQ(Call(serve.port(), "GET", "/login?code=" + code).Header("Location"),
            "/#/login?link=invalid");

  ASSERT_TRUE(serve.Restart()) << serve.Log();
  const Answer after = Call(serve.port(), "GET", "/v1/session", {{"Cookie", cookie}});
  ASSERT_EQ(after.status, 200) << after.text;
  EXPECT_EQ(after.body["token_name"], "local");
  const Answer out = Call(serve.port(), "DELETE", "/v1/session",
                          {{"Cookie", cookie}, {"X-CSRF-Token", after.body["csrf_token"]}});
  EXPECT_EQ(out.status, 200) << out.text;
  ASSERT_TRUE(serve.Restart()) << serve.Log();
  EXPECT_EQ(Call(serve.port(), "GET", "/v1/session", {{"Cookie", cookie}}).status, 401);

  auto refused = testing::Cronledger({"login-link", "--config", config, "--token", "oncall"});
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("--token names an [[auth.token]], and the config has none"),
            std::string::npos)
      << refused.err;
  EXPECT_EQ(serve.Stop(), 0);

  // With [[auth.token]]: --token names the one the link logs in as.
  const std::string with_tokens = serve.WriteConfig(Config(kTokens));
  auto missing = testing::Cronledger({"login-link", "--config", with_tokens});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("--token NAME is required with [[auth.token]]: the token the link "
                             "logs in as, one of viewer, oncall"),
            std::string::npos)
      << missing.err;
  auto worker = testing::Cronledger({"login-link", "--config", with_tokens, "--token", "w1"});
  EXPECT_EQ(worker.exit_code, 2) << worker.err;
  auto viewer = testing::Cronledger({"login-link", "--config", with_tokens, "--token", "viewer"});
  EXPECT_EQ(viewer.exit_code, 0) << viewer.err;
  EXPECT_NE(viewer.err.find("token \"viewer\" (read)"), std::string::npos) << viewer.err;
}

}  // namespace
}  // namespace cronledger
