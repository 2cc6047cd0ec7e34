// Dashboard sessions on a fake clock: login codes are single-use and expire
// after 10 minutes, sessions after 12 hours; CSRF tokens are per session;
// kept in a ledger, they outlive a restart and hold across nodes.
#include "api/dashboard_session.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <set>

#include "store/sqlite/sqlite_store.h"

namespace cronledger::api {
namespace {

using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;

class SessionStoreTest : public ::testing::Test {
 protected:
  FakeClock clock_{Clock::TimePoint{} + hours(24 * 365 * 50)};
  SessionStore sessions_{clock_};
  ApiToken operate_{"oncall", TokenRole::kOperate, "secret"};
};

TEST_F(SessionStoreTest, ALoginCodeWorksOnceAndNeverLooksLikeTheToken) {
  const std::string code = sessions_.IssueLoginCode(&operate_);
  EXPECT_EQ(code.size(), 64u);
  EXPECT_EQ(code.find("secret"), std::string::npos);
  EXPECT_EQ(sessions_.RedeemLoginCode(code), &operate_);
  EXPECT_EQ(sessions_.RedeemLoginCode(code), nullptr) << "single use";
  EXPECT_EQ(sessions_.RedeemLoginCode(""), nullptr);
  EXPECT_EQ(sessions_.RedeemLoginCode("0123"), nullptr);
}

TEST_F(SessionStoreTest, ALoginCodeExpiresAfterTenMinutes) {
  const std::string fresh = sessions_.IssueLoginCode(&operate_);
  const std::string late = sessions_.IssueLoginCode(&operate_);
  EXPECT_NE(fresh, late);
  clock_.Advance(minutes(10) - seconds(1));
  EXPECT_EQ(sessions_.RedeemLoginCode(fresh), &operate_);
  clock_.Advance(seconds(1));
  EXPECT_EQ(sessions_.RedeemLoginCode(late), nullptr) << "expired at 10 minutes";
}

TEST_F(SessionStoreTest, ASessionCarriesItsTokenAndExpiresAfterTwelveHours) {
  const std::string id = sessions_.Create(&operate_);
  EXPECT_EQ(id.size(), 64u);
  auto s = sessions_.Find(id);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->token, &operate_);
  EXPECT_EQ(s->csrf_token.size(), 64u);
  EXPECT_EQ(s->expires_at, clock_.Now() + hours(12));
  EXPECT_FALSE(sessions_.Find(id + "0"));
  EXPECT_FALSE(sessions_.Find(""));
  clock_.Advance(hours(12) - seconds(1));
  EXPECT_TRUE(sessions_.Find(id));
  clock_.Advance(seconds(1));
  EXPECT_FALSE(sessions_.Find(id));
}

TEST_F(SessionStoreTest, EndingASessionLogsOut) {
  const std::string id = sessions_.Create(&operate_);
  const std::string other = sessions_.Create(&operate_);
  sessions_.End(id);
  EXPECT_FALSE(sessions_.Find(id));
  EXPECT_TRUE(sessions_.Find(other));
}

TEST_F(SessionStoreTest, EachSessionHasItsOwnCsrfToken) {
  const auto a = sessions_.Find(sessions_.Create(&operate_));
  const auto b = sessions_.Find(sessions_.Create(&operate_));
  ASSERT_TRUE(a && b);
  EXPECT_NE(a->csrf_token, b->csrf_token);
  EXPECT_TRUE(SessionStore::CsrfMatches(*a, a->csrf_token));
  EXPECT_FALSE(SessionStore::CsrfMatches(*a, b->csrf_token));
  EXPECT_FALSE(SessionStore::CsrfMatches(*a, ""));
  EXPECT_FALSE(SessionStore::CsrfMatches(*a, a->csrf_token.substr(1)));
}

TEST_F(SessionStoreTest, TheOldestSessionGivesWayBeyondTheLimit) {
  const std::string first = sessions_.Create(&operate_);
  clock_.Advance(seconds(1));
  std::set<std::string> ids;
  for (std::size_t i = 1; i < kMaxSessions; ++i) ids.insert(sessions_.Create(&operate_));
  EXPECT_TRUE(sessions_.Find(first));
  clock_.Advance(seconds(1));
  const std::string last = sessions_.Create(&operate_);
  EXPECT_FALSE(sessions_.Find(first));
  EXPECT_TRUE(sessions_.Find(last));
  EXPECT_TRUE(sessions_.Find(*ids.begin()));
}

// Kept in the ledger (real SQLite): a restarted serve (a new store of
// sessions over the same ledger) still knows every session, a logout on one
// node ends it on another, a code is spent once across nodes, and a session
// ends when the token that logged in is removed or its secret changes.
class LedgerSessionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/cronledger-sessions-XXXXXX";
    dir_ = mkdtemp(tmpl);
    store::SqliteOptions o;
    o.path = dir_ + "/ledger.db";
    o.synchronous_full = false;
    auto opened = store::SqliteStore::Open(o);
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    ledger_ = std::move(*opened);
  }
  void TearDown() override {
    ledger_.reset();
    std::filesystem::remove_all(dir_);
  }

  std::string dir_;
  std::unique_ptr<store::SqliteStore> ledger_;
  FakeClock clock_{Clock::TimePoint{} + hours(24 * 365 * 50)};
  TokenAuthenticator tokens_{
      {{"oncall", TokenRole::kOperate, "secret"}, {"viewer", TokenRole::kRead, "other"}}};
};

TEST_F(LedgerSessionsTest, SessionsOutliveARestartAndStayBoundToTheirToken) {
  std::string id;
  std::string csrf;
  {
    SessionStore before(clock_, ledger_.get(), &tokens_);
    id = before.Create(tokens_.ByName("oncall"));
    csrf = before.Find(id)->csrf_token;
  }
  // serve restarted: a new process, the same ledger and tokens.
  TokenAuthenticator restarted({{"oncall", TokenRole::kOperate, "secret"}});
  SessionStore after(clock_, ledger_.get(), &restarted);
  auto s = after.Find(id);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->token, restarted.ByName("oncall"));
  EXPECT_EQ(s->csrf_token, csrf);
  EXPECT_EQ(s->expires_at, clock_.Now() + hours(12));
  clock_.Advance(hours(12));
  EXPECT_FALSE(after.Find(id)) << "expired at 12 hours, restart or not";

  // The token's secret rotated, or the token removed: its sessions end.
  const std::string again = after.Create(restarted.ByName("oncall"));
  TokenAuthenticator rotated({{"oncall", TokenRole::kOperate, "new-secret"}});
  EXPECT_FALSE(SessionStore(clock_, ledger_.get(), &rotated).Find(again));
  TokenAuthenticator removed({{"viewer", TokenRole::kRead, "other"}});
  EXPECT_FALSE(SessionStore(clock_, ledger_.get(), &removed).Find(again));
  EXPECT_TRUE(after.Find(again));
}

TEST_F(LedgerSessionsTest, ALogoutOrACodeSpentOnOneNodeHoldsOnAnother) {
  SessionStore a(clock_, ledger_.get(), &tokens_);
  SessionStore b(clock_, ledger_.get(), &tokens_);
  const std::string id = a.Create(tokens_.ByName("viewer"));
  ASSERT_TRUE(b.Find(id));
  EXPECT_EQ(b.Find(id)->token->role, TokenRole::kRead);
  b.End(id);
  EXPECT_FALSE(a.Find(id));

  const std::string code = a.IssueLoginCode(tokens_.ByName("oncall"));
  EXPECT_EQ(b.RedeemLoginCode(code), tokens_.ByName("oncall"));
  EXPECT_EQ(a.RedeemLoginCode(code), nullptr) << "single use, whichever node";
  const std::string late = a.IssueLoginCode(tokens_.ByName("oncall"));
  clock_.Advance(minutes(10));
  EXPECT_EQ(b.RedeemLoginCode(late), nullptr) << "expired at 10 minutes";
  // The ledger holds digests, never a session id or a code.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir_ + "/ledger.db").c_str(), &db), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT digest FROM dashboard_grants", -1, &st, nullptr),
            SQLITE_OK);
  const std::string other = a.Create(tokens_.ByName("oncall"));
  int rows = 0;
  while (sqlite3_step(st) == SQLITE_ROW) {
    const std::string digest = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
    EXPECT_NE(digest, other);
    ++rows;
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  EXPECT_EQ(rows, 1);
}

TEST(CookieValue, FindsTheNamedCookie) {
  EXPECT_EQ(CookieValue("cronledger_session=abc", "cronledger_session"), "abc");
  EXPECT_EQ(CookieValue("theme=dark; cronledger_session=abc; x=1", "cronledger_session"), "abc");
  EXPECT_EQ(CookieValue("theme=dark;cronledger_session=abc", "cronledger_session"), "abc");
  EXPECT_EQ(CookieValue("theme=dark", "cronledger_session"), "");
  EXPECT_EQ(CookieValue("", "cronledger_session"), "");
  EXPECT_EQ(CookieValue("xcronledger_session=abc", "cronledger_session"), "");
}

}  // namespace
}  // namespace cronledger::api
