#include "cronledger/status.h"

#include <string>

#include <gtest/gtest.h>

namespace cronledger {
namespace {

Result<int> Half(int v) {
  if (v % 2 != 0) return InvalidArgument("odd: " + std::to_string(v));
  return v / 2;
}

TEST(Status, OkAndErrors) {
  EXPECT_TRUE(Status::Ok().ok());
  EXPECT_EQ(Status::Ok().ToString(), "ok");
  const Status s = NotFound("no run 7");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.ToString(), "not_found: no run 7");
}

TEST(Status, CodeNamesAreStableLowercase) {
  EXPECT_EQ(StatusCodeName(StatusCode::kInvalidArgument), "invalid_argument");
  EXPECT_EQ(StatusCodeName(StatusCode::kStaleLease), "stale_lease");
  EXPECT_EQ(StatusCodeName(StatusCode::kUnavailable), "unavailable");
  EXPECT_EQ(StatusCodeName(StatusCode::kConflict), "conflict");
}

TEST(Result, HoldsValueOrStatus) {
  auto ok = Half(8);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, 4);
  EXPECT_TRUE(ok.status().ok());
  auto bad = Half(3);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(), "odd: 3");
}

}  // namespace
}  // namespace cronledger
