// The Prometheus text rendering of GET /metrics (api/metrics.h): escaping,
// histogram buckets, HELP and TYPE lines. The endpoint against a real serve
// is tested in metrics_serve_test.cc.
#include "api/metrics.h"

#include <gtest/gtest.h>

#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace cronledger::api {
namespace {

std::vector<std::string> SplitLines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// "name{labels}" -> value, for every sample line.
std::map<std::string, std::string> Samples(const std::string& text) {
  std::map<std::string, std::string> out;
  for (const auto& line : SplitLines(text)) {
    if (line.empty() || line[0] == '#') continue;
    const std::size_t space = line.rfind(' ');
    out[line.substr(0, space)] = line.substr(space + 1);
  }
  return out;
}

TEST(MetricsText, LabelValuesAndHelpAreEscaped) {
  EXPECT_EQ(EscapeLabelValue("plain"), "plain");
  EXPECT_EQ(EscapeLabelValue("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
  EXPECT_EQ(EscapeHelp("line\none \\ \"quoted\""), "line\\none \\\\ \"quoted\"");
  PrometheusText t;
  t.Family("x_total", "counter", "Help with a\nnewline.");
  t.Sample("x_total", {{"job", "we\"ird\\job\n"}, {"class", "ok"}}, 3);
  EXPECT_EQ(t.text(),
            "# HELP x_total Help with a\\nnewline.\n"
            "# TYPE x_total counter\n"
            "x_total{job=\"we\\\"ird\\\\job\\n\",class=\"ok\"} 3\n");
}

TEST(MetricsText, ValuesAreShortestDecimals) {
  EXPECT_EQ(FormatSampleValue(0), "0");
  EXPECT_EQ(FormatSampleValue(42), "42");
  EXPECT_EQ(FormatSampleValue(0.5), "0.5");
  EXPECT_EQ(FormatSampleValue(1709197290), "1709197290");
  EXPECT_EQ(FormatSampleValue(1709197290.25), "1709197290.25");
  EXPECT_EQ(FormatSampleValue(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(FormatSampleValue(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(FormatSampleValue(std::numeric_limits<double>::quiet_NaN()), "NaN");
}

TEST(MetricsText, HistogramBucketsAreCumulativeAndEndWithInf) {
  PrometheusText t;
  const double bounds[] = {1, 5, 30};
  const int64_t cumulative[] = {1, 2, 3};
  t.Family("d_seconds", "histogram", "Durations.");
  t.Histogram("d_seconds", {{"job", "j"}}, bounds, cumulative, 132.5, 4);
  EXPECT_EQ(t.text(),
            "# HELP d_seconds Durations.\n"
            "# TYPE d_seconds histogram\n"
            "d_seconds_bucket{job=\"j\",le=\"1\"} 1\n"
            "d_seconds_bucket{job=\"j\",le=\"5\"} 2\n"
            "d_seconds_bucket{job=\"j\",le=\"30\"} 3\n"
            "d_seconds_bucket{job=\"j\",le=\"+Inf\"} 4\n"
            "d_seconds_sum{job=\"j\"} 132.5\n"
            "d_seconds_count{job=\"j\"} 4\n");
}

MetricsInput SampleInput() {
  MetricsInput in;
  engine::JobStatus s;
  s.name = "report";
  s.last_success_at = "2024-02-29T09:01:30Z";
  s.last_success_business_date = "2024-02-29";
  s.lag_seconds = 120;
  in.jobs.push_back(s);
  engine::JobStatus idle;
  idle.name = "idle";  // configured, never run
  in.jobs.push_back(idle);
  in.ledger.runs["report"] = {{"succeeded", 30}, {"failed", 1}, {"unknown", 2}};
  in.ledger.runs["removed"] = {{"succeeded", 5}};  // in the ledger only
  in.ledger.attempts["report"] = {{"permanent", 1}, {"succeeded", 2}, {"custom", 7}};
  in.ledger.retry_successes["report"] = 1;
  in.ledger.recoveries["report"] = {{"retry", 3}};
  store::DurationHistogram h;
  h.cumulative.assign(std::size(kDurationBuckets), 4);
  h.cumulative[0] = 1;
  h.count = 5;
  h.sum_ms = 1500;
  in.ledger.durations["report"] = h;
  in.missing_closed["report"] = 2;
  in.node.claims_claimed = 9;
  in.node.claims_empty = 4;
  in.node.leases_expired = 1;
  in.node.stale_writes_rejected = 2;
  in.node.deduplicated = 3;
  in.node.executor_busy = 1;
  in.node.executor_capacity = 8;
  in.node.planner_last_pass_seconds = 1764477000.5;
  in.node.store_errors = 6;
  return in;
}

TEST(MetricsRender, EveryFamilyHasHelpAndTypeBeforeItsSamples) {
  const std::string text = RenderMetrics(SampleInput());
  const std::vector<std::string> families = {"runs",
                                             "last_success_timestamp_seconds",
                                             "last_success_business_date_info",
                                             "lag_seconds",
                                             "missing_runs",
                                             "unknown_runs",
                                             "dead_letters",
                                             "attempts_total",
                                             "retry_successes_total",
                                             "manual_recoveries_total",
                                             "run_duration_seconds",
                                             "claims_total",
                                             "leases_expired_total",
                                             "stale_writes_rejected_total",
                                             "deduplicated_total",
                                             "executor_busy",
                                             "executor_capacity",
                                             "planner_last_pass_timestamp_seconds",
                                             "store_up",
                                             "store_errors_total"};
  std::map<std::string, std::string> type_of;
  std::set<std::string> helped;
  std::string current;  // the family whose samples may follow
  for (const auto& line : SplitLines(text)) {
    if (line.rfind("# HELP ", 0) == 0) {
      const std::string name = line.substr(7, line.find(' ', 7) - 7);
      EXPECT_TRUE(helped.insert(name).second) << "two HELP lines for " << name;
      current.clear();
    } else if (line.rfind("# TYPE ", 0) == 0) {
      std::istringstream in(line.substr(7));
      std::string name, type;
      in >> name >> type;
      EXPECT_TRUE(helped.count(name)) << "TYPE before HELP: " << line;
      type_of[name] = type;
      current = name;
    } else {
      ASSERT_FALSE(current.empty()) << "a sample outside its family: " << line;
      const std::string name = line.substr(0, line.find_first_of("{ "));
      const bool histogram_part =
          type_of[current] == "histogram" &&
          (name == current + "_bucket" || name == current + "_sum" || name == current + "_count");
      EXPECT_TRUE(name == current || histogram_part) << line << " under " << current;
    }
  }
  for (const auto& f : families) {
    EXPECT_TRUE(type_of.count("cronledger_" + f)) << "no TYPE line for cronledger_" << f;
  }
  EXPECT_EQ(type_of.size(), families.size());
  EXPECT_EQ(type_of["cronledger_attempts_total"], "counter");
  EXPECT_EQ(type_of["cronledger_runs"], "gauge");
  EXPECT_EQ(type_of["cronledger_run_duration_seconds"], "histogram");
}

TEST(MetricsRender, SeriesCarryTheInputsValues) {
  const auto s = Samples(RenderMetrics(SampleInput()));
  EXPECT_EQ(s.at("cronledger_runs{job=\"report\",state=\"succeeded\"}"), "30");
  EXPECT_EQ(s.at("cronledger_runs{job=\"report\",state=\"pending\"}"), "0");
  EXPECT_EQ(s.at("cronledger_runs{job=\"idle\",state=\"succeeded\"}"), "0");
  EXPECT_EQ(s.at("cronledger_runs{job=\"removed\",state=\"succeeded\"}"), "5");
  EXPECT_EQ(s.at("cronledger_last_success_timestamp_seconds{job=\"report\"}"), "1709197290");
  EXPECT_FALSE(s.count("cronledger_last_success_timestamp_seconds{job=\"idle\"}"));
  EXPECT_EQ(s.at("cronledger_last_success_business_date_info{job=\"report\","
                 "business_date=\"2024-02-29\"}"),
            "1");
  EXPECT_EQ(s.at("cronledger_lag_seconds{job=\"report\"}"), "120");
  EXPECT_EQ(s.at("cronledger_missing_runs{job=\"report\"}"), "2");
  EXPECT_EQ(s.at("cronledger_missing_runs{job=\"idle\"}"), "0");
  EXPECT_EQ(s.at("cronledger_unknown_runs{job=\"report\"}"), "2");
  EXPECT_EQ(s.at("cronledger_dead_letters{job=\"report\"}"), "1");
  EXPECT_EQ(s.at("cronledger_attempts_total{job=\"report\",class=\"permanent\"}"), "1");
  EXPECT_EQ(s.at("cronledger_attempts_total{job=\"report\",class=\"timeout\"}"), "0");
  EXPECT_EQ(s.at("cronledger_attempts_total{job=\"report\",class=\"custom\"}"), "7");
  EXPECT_EQ(s.at("cronledger_retry_successes_total{job=\"report\"}"), "1");
  EXPECT_EQ(s.at("cronledger_manual_recoveries_total{job=\"report\",action=\"retry\"}"), "3");
  EXPECT_EQ(s.at("cronledger_manual_recoveries_total{job=\"report\",action=\"rerun\"}"), "0");
  EXPECT_EQ(s.at("cronledger_run_duration_seconds_bucket{job=\"report\",le=\"1\"}"), "1");
  EXPECT_EQ(s.at("cronledger_run_duration_seconds_bucket{job=\"report\",le=\"86400\"}"), "4");
  EXPECT_EQ(s.at("cronledger_run_duration_seconds_bucket{job=\"report\",le=\"+Inf\"}"), "5");
  EXPECT_EQ(s.at("cronledger_run_duration_seconds_sum{job=\"report\"}"), "1.5");
  EXPECT_EQ(s.at("cronledger_run_duration_seconds_count{job=\"report\"}"), "5");
  EXPECT_EQ(s.at("cronledger_run_duration_seconds_count{job=\"idle\"}"), "0");
  EXPECT_EQ(s.at("cronledger_claims_total{result=\"claimed\"}"), "9");
  EXPECT_EQ(s.at("cronledger_claims_total{result=\"empty\"}"), "4");
  EXPECT_EQ(s.at("cronledger_claims_total{result=\"error\"}"), "0");
  EXPECT_EQ(s.at("cronledger_leases_expired_total"), "1");
  EXPECT_EQ(s.at("cronledger_stale_writes_rejected_total"), "2");
  EXPECT_EQ(s.at("cronledger_deduplicated_total"), "3");
  EXPECT_EQ(s.at("cronledger_executor_busy"), "1");
  EXPECT_EQ(s.at("cronledger_executor_capacity"), "8");
  EXPECT_EQ(s.at("cronledger_planner_last_pass_timestamp_seconds"), "1764477000.5");
  EXPECT_EQ(s.at("cronledger_store_up"), "1");
  EXPECT_EQ(s.at("cronledger_store_errors_total"), "6");
}

// While the ledger cannot be read, a scrape still shows the node: its own
// families, with the store down, and no ledger series.
TEST(MetricsRender, TheNodeAloneWhileItsStoreIsDown) {
  engine::NodeSnapshot node = SampleInput().node;
  node.store_up = false;
  const std::string text = RenderNodeMetrics(node);
  const auto s = Samples(text);
  EXPECT_EQ(s.at("cronledger_store_up"), "0");
  EXPECT_EQ(s.at("cronledger_store_errors_total"), "6");
  EXPECT_EQ(s.at("cronledger_claims_total{result=\"claimed\"}"), "9");
  EXPECT_EQ(text.find("cronledger_runs"), std::string::npos);
  EXPECT_EQ(text.find("cronledger_lag_seconds"), std::string::npos);
}

TEST(MetricsRender, NoPlannerPassYetLeavesItsGaugeOut) {
  MetricsInput in = SampleInput();
  in.node.planner_last_pass_seconds.reset();
  const std::string text = RenderMetrics(in);
  EXPECT_NE(text.find("# TYPE cronledger_planner_last_pass_timestamp_seconds gauge\n"),
            std::string::npos);
  EXPECT_FALSE(Samples(text).count("cronledger_planner_last_pass_timestamp_seconds"));
}

}  // namespace
}  // namespace cronledger::api
