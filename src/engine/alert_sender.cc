#include "engine/alert_sender.h"

#include <httplib.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cronledger/schedule.h"
#include "exec/command_runner.h"

namespace cronledger::engine {
namespace {

// Splits "scheme://[userinfo@]host[:port][/path...]" into the origin
// without userinfo and the path (with its query), "/" when absent.
void SplitUrl(std::string_view url, std::string* origin, std::string* path) {
  const std::size_t scheme_end = url.find("://");
  const std::size_t host_start = scheme_end == std::string_view::npos ? 0 : scheme_end + 3;
  std::size_t host_end = url.find_first_of("/?#", host_start);
  if (host_end == std::string_view::npos) host_end = url.size();
  std::string_view authority = url.substr(host_start, host_end - host_start);
  if (const std::size_t at = authority.rfind('@'); at != std::string_view::npos) {
    authority.remove_prefix(at + 1);
  }
  *origin = std::string(url.substr(0, host_start)) + std::string(authority);
  std::string rest(url.substr(host_end));
  if (const std::size_t hash = rest.find('#'); hash != std::string::npos) rest.resize(hash);
  if (rest.empty() || rest.front() != '/') rest.insert(0, "/");
  *path = rest;
}

// Slack's text escapes: & < > (its own markup uses them).
std::string SlackEscape(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '&') {
      out += "&amp;";
    } else if (c == '<') {
      out += "&lt;";
    } else if (c == '>') {
      out += "&gt;";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::string AlertNotice::Json() const {
  nlohmann::json j = {
      {"alert", alert},
      {"state", firing ? "firing" : "resolved"},
      {"job", job},
      {"business_date", business_date.empty() ? nlohmann::json() : nlohmann::json(business_date)},
      {"details", nlohmann::json::parse(details, nullptr, false)},
      {"at", FormatUtc(at)},
      {"condition", condition},
      {"summary", summary},
  };
  if (j["details"].is_discarded()) j["details"] = nlohmann::json::object();
  if (!run_key.empty()) j["run_key"] = run_key;
  if (run_id) j["run_id"] = *run_id;
  if (!url.empty()) j["url"] = url;
  return j.dump();
}

std::string AlertNotice::SlackJson() const {
  const std::string text =
      fmt::format("{} *{}* {} (job `{}`{}{})\n{}", firing ? ":rotating_light:" : ":white_check_mark:",
                  firing ? "FIRING" : "RESOLVED", alert, job,
                  business_date.empty() ? "" : ", business date ", business_date, summary);
  // Slack's link syntax is the one markup left unescaped.
  const std::string link = url.empty() ? "" : fmt::format("\n<{}|Open in cronledger>", url);
  return nlohmann::json{{"text", SlackEscape(text) + link}}.dump();
}

std::string AlertTarget::Describe() const {
  if (kind == Kind::kWebhook) return "webhook " + UrlOrigin(url);
  return "command " + (argv.empty() ? std::string() : argv[0]);
}

std::vector<AlertTarget> TargetsOf(const config::JobConfig& job, const std::string& config_dir) {
  std::vector<AlertTarget> out;
  if (!job.alert.webhook.empty()) {
    AlertTarget t;
    t.kind = AlertTarget::Kind::kWebhook;
    t.url = job.alert.webhook;
    t.format = job.alert.format;
    out.push_back(std::move(t));
  }
  if (!job.alert.command.empty()) {
    AlertTarget t;
    t.kind = AlertTarget::Kind::kCommand;
    t.argv = job.alert.command;
    t.dir = config_dir;
    out.push_back(std::move(t));
  }
  return out;
}

std::string UrlOrigin(std::string_view url) {
  std::string origin;
  std::string path;
  SplitUrl(url, &origin, &path);
  return origin;
}

Status HttpRequest(const std::string& method, const std::string& url, const std::string& body,
                   const std::string& content_type, std::chrono::milliseconds timeout) {
  std::string origin;
  std::string path;
  SplitUrl(url, &origin, &path);
  httplib::Client client(origin);
  const auto secs = static_cast<time_t>(timeout.count() / 1000);
  const auto usecs = static_cast<time_t>((timeout.count() % 1000) * 1000);
  client.set_connection_timeout(secs, usecs);
  client.set_read_timeout(secs, usecs);
  client.set_write_timeout(secs, usecs);
  auto answer = method == "GET" ? client.Get(path) : client.Post(path, body, content_type);
  if (!answer) {
    return Status(StatusCode::kUnavailable,
                  fmt::format("{} {}: {}", method, origin, httplib::to_string(answer.error())));
  }
  if (answer->status < 200 || answer->status > 299) {
    return Status(StatusCode::kUnavailable,
                  fmt::format("{} {}: HTTP {}", method, origin, answer->status));
  }
  return Status::Ok();
}

Status RealAlertSender::Send(const AlertTarget& target, const AlertNotice& notice) {
  if (target.kind == AlertTarget::Kind::kWebhook) {
    const bool slack = target.format == config::AlertFormat::kSlack;
    return HttpRequest("POST", target.url, slack ? notice.SlackJson() : notice.Json(),
                       "application/json", http_timeout_);
  }
  exec::CommandSpec spec;
  spec.argv = target.argv;
  spec.cwd = target.dir;
  spec.environment = exec::BaseEnvironment();
  spec.timeout = command_timeout_;
  spec.output_cap = 4096;
  spec.input = notice.Json();
  const exec::CommandResult r = exec::RunCommand(spec, clock_);
  if (r.spawn_failed) return Status(StatusCode::kUnavailable, r.err);
  if (r.timed_out) {
    return Status(StatusCode::kUnavailable,
                  fmt::format("{} timed out after {} ms", target.argv[0], command_timeout_.count()));
  }
  if (r.exit_code != 0) {
    std::string err = r.err.substr(0, 200);
    while (!err.empty() && (err.back() == '\n' || err.back() == '\r')) err.pop_back();
    return Status(StatusCode::kUnavailable,
                  r.signal != 0 ? fmt::format("{} killed by signal {}", target.argv[0], r.signal)
                                : fmt::format("{} exited {}{}{}", target.argv[0], r.exit_code,
                                              err.empty() ? "" : ": ", err));
  }
  return Status::Ok();
}

}  // namespace cronledger::engine
