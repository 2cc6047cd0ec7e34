// The operator API's path matching and request validators
// (src/api/operator_requests.h), without a store. Cases the fuzzer found
// (tests/fuzz) are kept here as regressions.
#include "api/operator_requests.h"

#include <gtest/gtest.h>

#include <string>

namespace cronledger::api {
namespace {

TEST(OperatorPath, RoutesAndArguments) {
  const auto history = MatchOperatorPath("/v1/jobs/daily_report/history");
  ASSERT_TRUE(history);
  EXPECT_EQ(history->route, OperatorRoute::kHistory);
  EXPECT_EQ(history->argument, "daily_report");

  const auto action = MatchOperatorPath("/v1/runs/12/resolve");
  ASSERT_TRUE(action);
  EXPECT_EQ(action->route, OperatorRoute::kRunAction);
  EXPECT_EQ(action->argument, "12");
  EXPECT_EQ(action->action, "resolve");

  EXPECT_FALSE(MatchOperatorPath("/v1/jobs//history"));
  EXPECT_FALSE(MatchOperatorPath("/v1/runs/12/delete"));
  EXPECT_FALSE(MatchOperatorPath("/v1/jobs/a/b"));
}

// Found by api_fuzzer: "/v1/jobs/" and "/history" overlap in
// "/v1/jobs/history", which was taken for the history of a job named
// "history" (the name's length underflowed to "the rest of the path").
// A job may be named history: the path is that job's status.
TEST(OperatorPath, JobNamedHistoryIsTheJobNotItsHistory) {
  const auto job = MatchOperatorPath("/v1/jobs/history");
  ASSERT_TRUE(job);
  EXPECT_EQ(job->route, OperatorRoute::kJob);
  EXPECT_EQ(job->argument, "history");

  const auto its_history = MatchOperatorPath("/v1/jobs/history/history");
  ASSERT_TRUE(its_history);
  EXPECT_EQ(its_history->route, OperatorRoute::kHistory);
  EXPECT_EQ(its_history->argument, "history");
}

TEST(OperatorRequests, RunsQueryIsChecked) {
  ApiRequest request;
  request.method = "GET";
  request.path = "/v1/runs";
  request.query = {{"limit", "1001"}};
  const auto refused = ParseRunsRequest(request);
  ASSERT_TRUE(std::holds_alternative<ApiResponse>(refused));
  EXPECT_EQ(std::get<ApiResponse>(refused).status, 400);

  request.query = {{"limit", "5"}, {"cursor", EncodeRunCursor(42)}, {"state", "failed"}};
  const auto parsed = ParseRunsRequest(request);
  ASSERT_TRUE(std::holds_alternative<RunsRequest>(parsed));
  EXPECT_EQ(std::get<RunsRequest>(parsed).limit, 5);
  EXPECT_EQ(std::get<RunsRequest>(parsed).query.before_id, 42);
}

}  // namespace
}  // namespace cronledger::api
