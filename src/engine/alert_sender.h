// Where alert notices go (docs/alerts.md): a job's alert.webhook (an HTTP
// POST of the notice as JSON or as a Slack message) and its alert.command
// (argv, the notice as JSON on stdin), and the notice itself.
//
// A webhook URL may carry a secret (a token in its path or query): only
// its scheme and host ever reach a log, an event or an error message.
#ifndef CRONLEDGER_ENGINE_ALERT_SENDER_H_
#define CRONLEDGER_ENGINE_ALERT_SENDER_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "cronledger/clock.h"
#include "cronledger/status.h"

namespace cronledger::engine {

// Alert names (stable lowercase strings, docs/alerts.md).
namespace alert {
inline constexpr std::string_view kLag = "lag";
inline constexpr std::string_view kMissingRuns = "missing_runs";
inline constexpr std::string_view kRunFailed = "run_failed";
inline constexpr std::string_view kRunUnknown = "run_unknown";
}  // namespace alert

// One notice about one condition: it fires, or it has resolved.
struct AlertNotice {
  // The condition's identity within its job, stable across restarts:
  // "lag", "missing_runs/2026-11-28", "run_failed/42/3" (run id, attempts).
  std::string condition;
  std::string alert;  // an alert:: name
  bool firing = true;
  std::string job;
  std::string business_date;  // YYYY-MM-DD; empty when none applies
  std::optional<int64_t> run_id;
  std::string run_key;
  std::string details = "{}";  // a JSON object, per alert (docs/alerts.md)
  std::string summary;         // one line for people: Slack's text, logs, events
  std::chrono::sys_seconds at{};
  // The dashboard page of the run (one run) or the job, under
  // server.public_url; empty without one.
  std::string url;
  // A run alert's notice: the run conditions it speaks for ("run_failed/42/3"),
  // recorded in its event (not sent) so that a restarted alerter knows
  // when the whole group has cleared.
  std::vector<std::string> members;

  // {"alert", "state", "job", "business_date", "details", "at", "condition",
  // "summary", "run_key", "run_id", "url"}: the webhook's JSON body and the
  // command's stdin.
  std::string Json() const;
  // Slack's incoming-webhook body: {"text": "..."}.
  std::string SlackJson() const;
};

struct AlertTarget {
  enum class Kind { kWebhook, kCommand };
  Kind kind = Kind::kWebhook;
  std::string url;  // kWebhook
  config::AlertFormat format = config::AlertFormat::kJson;
  std::vector<std::string> argv;  // kCommand
  std::string dir;                // kCommand: its working folder (the config's)

  // "webhook https://hooks.example.com" or "command /etc/cronledger/bin/page":
  // safe to log.
  std::string Describe() const;
};

// The targets of a job's alert table, webhook first; none when it has none.
std::vector<AlertTarget> TargetsOf(const config::JobConfig& job, const std::string& config_dir);

// "https://user:pw@host:8443/hook/SECRET?x" -> "https://host:8443".
std::string UrlOrigin(std::string_view url);

// An HTTP GET or POST (body, content type) of `url` with `timeout` for the
// connection and each read and write; ok for a 2xx answer. Error messages
// name only the URL's origin.
Status HttpRequest(const std::string& method, const std::string& url, const std::string& body,
                   const std::string& content_type, std::chrono::milliseconds timeout);

// Delivers one notice to one target. Implementations are thread-safe.
class AlertSender {
 public:
  virtual ~AlertSender() = default;
  // Ok when the target took it: a 2xx answer, or the command exited 0.
  virtual Status Send(const AlertTarget& target, const AlertNotice& notice) = 0;
};

// The real one: HTTP through cpp-httplib, commands through
// exec::RunCommand (their own process group, killed on timeout).
class RealAlertSender final : public AlertSender {
 public:
  explicit RealAlertSender(Clock& clock, std::chrono::milliseconds http_timeout =
                                             std::chrono::seconds(5),
                           std::chrono::milliseconds command_timeout = std::chrono::seconds(30))
      : clock_(clock), http_timeout_(http_timeout), command_timeout_(command_timeout) {}
  Status Send(const AlertTarget& target, const AlertNotice& notice) override;

 private:
  Clock& clock_;
  std::chrono::milliseconds http_timeout_;
  std::chrono::milliseconds command_timeout_;
};

}  // namespace cronledger::engine

#endif  // CRONLEDGER_ENGINE_ALERT_SENDER_H_
