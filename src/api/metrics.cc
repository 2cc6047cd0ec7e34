#include "api/metrics.h"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <set>

#include "ops/json_shapes.h"
#include "engine/closed_dates.h"
#include "engine/store_health.h"

namespace cronledger::api {
namespace {

constexpr std::array<std::string_view, 8> kRunStates = {
    "pending", "running", "succeeded",         "failed",
    "unknown", "skipped", "awaiting_approval", "cancelled"};
constexpr std::array<std::string_view, 9> kEndClasses = {
    "succeeded",     "retryable",    "permanent", "timeout", "signal",
    "lease_expired", "spawn_failed", "in_doubt",  "stale"};
// Operator (and policy) actions that recover a run: their event types
// (docs/events.md).
constexpr std::array<std::string_view, 7> kRecoveryEvents = {
    "retry", "resolve", "approve", "backfill", "rerun", "cancel", "trigger"};
// The gap scanner's own backfills are automatic, not manual.
constexpr std::string_view kAutomaticActor = "scanner";

int64_t Find(const std::map<std::string, int64_t>& m, std::string_view key) {
  auto it = m.find(std::string(key));
  return it == m.end() ? 0 : it->second;
}

// `fixed` first (zero when absent), then any other key of `m`, sorted.
template <std::size_t N>
std::vector<std::pair<std::string, int64_t>> WithFixed(const std::array<std::string_view, N>& fixed,
                                                       const std::map<std::string, int64_t>* m) {
  static const std::map<std::string, int64_t> kEmpty;
  const auto& counts = m ? *m : kEmpty;
  std::vector<std::pair<std::string, int64_t>> out;
  for (std::string_view k : fixed) out.emplace_back(std::string(k), Find(counts, k));
  for (const auto& [k, n] : counts) {
    bool known = false;
    for (std::string_view f : fixed) known = known || f == k;
    if (!known) out.emplace_back(k, n);
  }
  return out;
}

template <typename V>
const V* Lookup(const std::map<std::string, V>& m, const std::string& key) {
  auto it = m.find(key);
  return it == m.end() ? nullptr : &it->second;
}

// The exposition format escapes \ and newlines in HELP text, and also "
// in label values.
std::string Escape(std::string_view text, bool quotes) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && quotes) {
      out += "\\\"";
    } else {
      out += c;
    }
  }
  return out;
}

void RenderNode(PrometheusText& out, const engine::NodeSnapshot& node);

}  // namespace

std::string EscapeLabelValue(std::string_view value) { return Escape(value, true); }

std::string EscapeHelp(std::string_view help) { return Escape(help, false); }

std::string FormatSampleValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", value);
}

void PrometheusText::Family(std::string_view name, std::string_view type, std::string_view help) {
  text_ += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, EscapeHelp(help), name, type);
}

void PrometheusText::Sample(std::string_view name, const MetricLabels& labels, double value) {
  text_ += name;
  if (!labels.empty()) {
    text_ += '{';
    for (std::size_t i = 0; i < labels.size(); ++i) {
      if (i > 0) text_ += ',';
      text_ += fmt::format("{}=\"{}\"", labels[i].first, EscapeLabelValue(labels[i].second));
    }
    text_ += '}';
  }
  text_ += ' ';
  text_ += FormatSampleValue(value);
  text_ += '\n';
}

void PrometheusText::Histogram(std::string_view name, const MetricLabels& labels,
                               std::span<const double> bounds, std::span<const int64_t> cumulative,
                               double sum, int64_t count) {
  const std::string bucket = fmt::format("{}_bucket", name);
  for (std::size_t i = 0; i < bounds.size(); ++i) {
    MetricLabels with_le = labels;
    with_le.emplace_back("le", FormatSampleValue(bounds[i]));
    Sample(bucket, with_le, static_cast<double>(i < cumulative.size() ? cumulative[i] : 0));
  }
  MetricLabels inf = labels;
  inf.emplace_back("le", "+Inf");
  Sample(bucket, inf, static_cast<double>(count));
  Sample(fmt::format("{}_sum", name), labels, sum);
  Sample(fmt::format("{}_count", name), labels, static_cast<double>(count));
}

std::string RenderMetrics(const MetricsInput& in) {
  PrometheusText out;
  const auto n = [](int64_t v) { return static_cast<double>(v); };
  // Configured jobs, then jobs only the ledger still has (removed from the
  // configuration: their history stays visible).
  std::vector<std::string> jobs;
  std::set<std::string> seen;
  for (const auto& j : in.jobs) {
    if (seen.insert(j.name).second) jobs.push_back(j.name);
  }
  for (const auto& [job, states] : in.ledger.runs) {
    if (seen.insert(job).second) jobs.push_back(job);
  }

  out.Family("cronledger_runs", "gauge", "Runs in the ledger by job and state, over every date.");
  for (const auto& job : jobs) {
    for (const auto& [state, count] : WithFixed(kRunStates, Lookup(in.ledger.runs, job))) {
      out.Sample("cronledger_runs", {{"job", job}, {"state", state}}, n(count));
    }
  }
  out.Family("cronledger_last_success_timestamp_seconds", "gauge",
             "Unix time of the job's last successful run completion.");
  for (const auto& j : in.jobs) {
    if (j.last_success_at.empty()) continue;
    if (auto t = ParseRfc3339(j.last_success_at); t.ok()) {
      out.Sample("cronledger_last_success_timestamp_seconds", {{"job", j.name}},
                 n(t->time_since_epoch().count()));
    }
  }
  out.Family("cronledger_last_success_business_date_info", "gauge",
             "The business date of the job's last successful run (value 1).");
  for (const auto& j : in.jobs) {
    if (j.last_success_business_date.empty()) continue;
    out.Sample("cronledger_last_success_business_date_info",
               {{"job", j.name}, {"business_date", j.last_success_business_date}}, 1);
  }
  out.Family("cronledger_lag_seconds", "gauge",
             "Now minus the scheduled time of the job's oldest due run key that is neither "
             "succeeded nor waived (0 when none).");
  for (const auto& j : in.jobs) {
    out.Sample("cronledger_lag_seconds", {{"job", j.name}}, n(j.lag_seconds));
  }
  out.Family("cronledger_missing_runs", "gauge",
             "Run keys never planned, misfired or awaiting approval on the job's closed business "
             "dates within backfill.horizon.");
  for (const auto& j : in.jobs) {
    out.Sample("cronledger_missing_runs", {{"job", j.name}}, n(Find(in.missing_closed, j.name)));
  }
  out.Family("cronledger_unknown_runs", "gauge",
             "Runs in state unknown (an uncertain end waiting for an operator), over every date.");
  for (const auto& job : jobs) {
    const auto* states = Lookup(in.ledger.runs, job);
    out.Sample("cronledger_unknown_runs", {{"job", job}}, n(states ? Find(*states, "unknown") : 0));
  }
  out.Family("cronledger_dead_letters", "gauge",
             "Runs in state failed (permanent failure or retries exhausted), over every date.");
  for (const auto& job : jobs) {
    const auto* states = Lookup(in.ledger.runs, job);
    out.Sample("cronledger_dead_letters", {{"job", job}}, n(states ? Find(*states, "failed") : 0));
  }
  out.Family("cronledger_attempts_total", "counter",
             "Ended attempts in the ledger by job and end class.");
  for (const auto& job : jobs) {
    for (const auto& [cls, count] : WithFixed(kEndClasses, Lookup(in.ledger.attempts, job))) {
      out.Sample("cronledger_attempts_total", {{"job", job}, {"class", cls}}, n(count));
    }
  }
  out.Family("cronledger_retry_successes_total", "counter",
             "Successful attempts whose previous attempt of the run did not succeed.");
  for (const auto& job : jobs) {
    out.Sample("cronledger_retry_successes_total", {{"job", job}},
               n(Find(in.ledger.retry_successes, job)));
  }
  out.Family("cronledger_manual_recoveries_total", "counter",
             "Operator recovery actions recorded in the ledger by job and action (event type).");
  for (const auto& job : jobs) {
    for (const auto& [action, count] :
         WithFixed(kRecoveryEvents, Lookup(in.ledger.recoveries, job))) {
      out.Sample("cronledger_manual_recoveries_total", {{"job", job}, {"action", action}},
                 n(count));
    }
  }
  out.Family("cronledger_run_duration_seconds", "histogram",
             "Duration of each ended attempt, from its claim to its end.");
  for (const auto& job : jobs) {
    static const store::DurationHistogram kNone;
    const store::DurationHistogram* h = Lookup(in.ledger.durations, job);
    if (h == nullptr) h = &kNone;
    out.Histogram("cronledger_run_duration_seconds", {{"job", job}}, kDurationBuckets,
                  h->cumulative, static_cast<double>(h->sum_ms) / 1000.0, h->count);
  }

  RenderNode(out, in.node);
  return out.text();
}

std::string RenderNodeMetrics(const engine::NodeSnapshot& node) {
  PrometheusText out;
  RenderNode(out, node);
  return out.text();
}

namespace {

void RenderNode(PrometheusText& out, const engine::NodeSnapshot& node) {
  const auto n = [](int64_t v) { return static_cast<double>(v); };
  out.Family("cronledger_claims_total", "counter",
             "This node's claims: runs claimed (claimed), claim transactions that found nothing "
             "due (empty) or failed (error).");
  out.Sample("cronledger_claims_total", {{"result", "claimed"}}, n(node.claims_claimed));
  out.Sample("cronledger_claims_total", {{"result", "empty"}}, n(node.claims_empty));
  out.Sample("cronledger_claims_total", {{"result", "error"}}, n(node.claims_error));
  out.Single("cronledger_leases_expired_total", "counter",
             "Expired leases this node's reaper took back.", n(node.leases_expired));
  out.Single("cronledger_stale_writes_rejected_total", "counter",
             "Writes of this node's workers refused for a stale fencing token.",
             n(node.stale_writes_rejected));
  out.Single("cronledger_deduplicated_total", "counter",
             "Occurrences this node's planner found already planned under their run key.",
             n(node.deduplicated));
  out.Single("cronledger_executor_busy", "gauge", "Runs this node is executing now.",
             n(node.executor_busy));
  out.Single("cronledger_executor_capacity", "gauge",
             "Runs this node executes at most at once (server.max_workers).",
             n(node.executor_capacity));
  out.Family("cronledger_planner_last_pass_timestamp_seconds", "gauge",
             "Unix time of this node's last successful planner pass (absent before the first).");
  if (node.planner_last_pass_seconds) {
    out.Sample("cronledger_planner_last_pass_timestamp_seconds", {},
               *node.planner_last_pass_seconds);
  }
  out.Single("cronledger_store_up", "gauge",
             "1 when this node's last store call reached the database, 0 while they fail.",
             node.store_up ? 1 : 0);
  out.Single("cronledger_store_errors_total", "counter",
             "Store calls of this node that failed for want of the database (unreachable, "
             "connection lost, a commit whose outcome is unknown).",
             n(node.store_errors));
}

}  // namespace

Result<int64_t> MissingOnClosedDates(const config::JobConfig& job, store::Store& store,
                                     Clock::TimePoint now) {
  auto by_date = engine::MissingByClosedDate(job, store, now);
  if (!by_date.ok()) return by_date.status();
  int64_t missing = 0;
  for (const auto& [date, m] : *by_date) missing += m.missing;
  return missing;
}

MetricsEndpoint::MetricsEndpoint(const config::Config& config, store::Store& store, Clock& clock,
                                 const TokenAuthenticator& tokens,
                                 std::function<engine::NodeSnapshot()> node)
    : config_(config), store_(store), clock_(clock), tokens_(tokens), node_(std::move(node)) {}

MetricsEndpoint::Answer MetricsEndpoint::Handle(const ApiRequest& request) const {
  const auto json = [](const ApiResponse& r) {
    return Answer{r.status, "application/json", ops::Dump(r.body)};
  };
  const ApiToken* token = nullptr;
  if (!config_.server.metrics_public) {
    auto found = AuthenticateBearer(
        request, tokens_,
        "no token: send \"Authorization: Bearer TOKEN\" with a token of role read or operate (or "
        "set [server] metrics_public = true)");
    if (const auto* refused = std::get_if<ApiResponse>(&found)) return json(*refused);
    token = std::get<const ApiToken*>(found);
  }
  if (request.method != "GET" && request.method != "HEAD") {
    return json(
        Error(405, "method_not_allowed",
              fmt::format("/metrics does not accept {}; it is read with GET", request.method)));
  }
  if (token != nullptr && !RoleAllows(token->role, TokenRole::kRead)) {
    return json(Error(403, "forbidden",
                      fmt::format("token \"{}\" has role {}; /metrics needs role read or operate",
                                  token->name, RoleName(token->role))));
  }

  MetricsInput input;
  if (node_) input.node = node_();
  const auto degraded = [&](const Status& s) -> std::optional<Answer> {
    if (!engine::IsStoreFailure(s)) return std::nullopt;
    // The ledger cannot be read: what this node knows of itself still can.
    engine::NodeSnapshot node = input.node;
    node.store_up = false;
    return Answer{200, std::string(kMetricsContentType), RenderNodeMetrics(node)};
  };
  // Lag, due and closed dates on the ledger's clock (PostgreSQL: the
  // database's), so every node reports the same whatever its own clock says.
  auto ledger_now = store_.LedgerNow(store::ToInstant(clock_.Now()));
  if (!ledger_now.ok()) {
    if (auto a = degraded(ledger_now.status())) return *a;
    return json(ErrorFor(ledger_now.status()));
  }
  const Clock::TimePoint now = *ledger_now;
  auto report = engine::BuildStatus(config_, store_, now);
  if (!report.ok()) {
    if (auto a = degraded(report.status())) return *a;
    return json(ErrorFor(report.status()));
  }
  input.jobs = std::move(report->jobs);
  store::LedgerMetricsParams params;
  for (double b : kDurationBuckets) {
    params.duration_bounds.push_back(
        std::chrono::milliseconds(static_cast<int64_t>(std::llround(b * 1000))));
  }
  for (std::string_view e : kRecoveryEvents) params.recovery_events.emplace_back(e);
  params.automatic_actor = std::string(kAutomaticActor);
  auto ledger = store_.MetricsGet(params);
  if (!ledger.ok()) {
    if (auto a = degraded(ledger.status())) return *a;
    return json(ErrorFor(ledger.status()));
  }
  input.ledger = std::move(*ledger);
  for (const auto& job : config_.jobs) {
    auto missing = MissingOnClosedDates(job, store_, now);
    if (!missing.ok()) {
      if (auto a = degraded(missing.status())) return *a;
      return json(ErrorFor(missing.status()));
    }
    input.missing_closed[job.name] = *missing;
  }
  return Answer{200, std::string(kMetricsContentType), RenderMetrics(input)};
}

}  // namespace cronledger::api
