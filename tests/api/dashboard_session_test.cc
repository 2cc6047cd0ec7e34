// Dashboard sessions on a fake clock: login codes are single-use and expire
// after 10 minutes, sessions after 12 hours; CSRF tokens are per session.
#include "api/dashboard_session.h"

#include <gtest/gtest.h>

#include <chrono>
#include <set>

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
