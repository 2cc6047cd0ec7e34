// GET /metrics: the Prometheus text exposition format (version 0.0.4),
// prefix cronledger_ (docs/metrics.md). Per job from the ledger (the status
// report, the closed dates' gaps and a few aggregate queries, so counters
// survive restarts); per node from this process's counters.
#ifndef CRONLEDGER_API_METRICS_H_
#define CRONLEDGER_API_METRICS_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/auth.h"
#include "api/request.h"
#include "config/config.h"
#include "cronledger/clock.h"
#include "engine/node_metrics.h"
#include "engine/status_report.h"
#include "store/store.h"

namespace cronledger::api {

inline constexpr std::string_view kMetricsContentType = "text/plain; version=0.0.4; charset=utf-8";

// Upper bounds of cronledger_run_duration_seconds, in seconds.
inline constexpr double kDurationBuckets[] = {1,   5,    15,   30,   60,    120,  300,
                                              600, 1800, 3600, 7200, 21600, 86400};

// A label value as the format wants it: \ " and newline escaped.
std::string EscapeLabelValue(std::string_view value);
// HELP text: \ and newline escaped.
std::string EscapeHelp(std::string_view help);
// A sample value: shortest round-trip decimal, +Inf, -Inf, NaN.
std::string FormatSampleValue(double value);

using MetricLabels = std::vector<std::pair<std::string, std::string>>;

// Writes families in order; each starts with its HELP and TYPE lines.
class PrometheusText {
 public:
  // `type`: counter, gauge, histogram. `name` is the family's full name.
  void Family(std::string_view name, std::string_view type, std::string_view help);
  void Sample(std::string_view name, const MetricLabels& labels, double value);
  // A family of one sample without labels.
  void Single(std::string_view name, std::string_view type, std::string_view help, double value) {
    Family(name, type, help);
    Sample(name, {}, value);
  }
  // `name`_bucket (cumulative, with le="+Inf" = count), _sum and _count.
  void Histogram(std::string_view name, const MetricLabels& labels, std::span<const double> bounds,
                 std::span<const int64_t> cumulative, double sum, int64_t count);
  const std::string& text() const { return text_; }

 private:
  std::string text_;
};

// Everything a scrape shows, gathered first (the renderer does no I/O).
struct MetricsInput {
  std::vector<engine::JobStatus> jobs;            // the status report, configured jobs
  store::LedgerMetrics ledger;                    // every job in the ledger
  std::map<std::string, int64_t> missing_closed;  // job -> missing keys on closed dates
  engine::NodeSnapshot node;
};

std::string RenderMetrics(const MetricsInput& input);
// Only the per-node families: the scrape while the ledger cannot be read.
std::string RenderNodeMetrics(const engine::NodeSnapshot& node);

// Missing run keys (never planned, misfired, awaiting approval) of `job`
// on its closed business dates within backfill.horizon: dates whose last
// occurrence is older than alert.max_lag (docs/alerts.md).
Result<int64_t> MissingOnClosedDates(const config::JobConfig& job, store::Store& store,
                                     Clock::TimePoint now);

class MetricsEndpoint {
 public:
  struct Answer {
    int status = 200;
    std::string content_type;
    std::string body;
  };

  // Everything must outlive it. `node` reads the node-local counters.
  MetricsEndpoint(const config::Config& config, store::Store& store, Clock& clock,
                  const TokenAuthenticator& tokens, std::function<engine::NodeSnapshot()> node);

  // The answer to a request for /metrics (the caller matched the path):
  // 401 without a valid token (unless server.metrics_public), 405 for a
  // method other than GET or HEAD, 403 for a worker token. While the
  // database cannot be used (kUnavailable, kIOError) it answers the
  // per-node families only, with cronledger_store_up 0: the node is up and
  // says its store is not. 503 for another store error.
  Answer Handle(const ApiRequest& request) const;

 private:
  const config::Config& config_;
  store::Store& store_;
  Clock& clock_;
  const TokenAuthenticator& tokens_;
  std::function<engine::NodeSnapshot()> node_;
};

}  // namespace cronledger::api

#endif  // CRONLEDGER_API_METRICS_H_
