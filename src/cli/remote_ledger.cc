#include "cli/remote_ledger.h"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>

#include "api/auth.h"
#include "api/operator_requests.h"
#include "cli/exit_codes.h"
#include "config/config.h"
#include "cronledger/schedule.h"
#include "ledger/names.h"
#include "ops/json_shapes.h"

namespace cronledger::cli {
namespace {

using nlohmann::ordered_json;

constexpr const char* kTokenEnv = "CRONLEDGER_AUTH_TOKEN";

// The API records its token as the actor and `by` beside it: --by, else
// the OS user who ran the command.
const std::string& ByOf(const ops::Actor& who) {
  return who.on_behalf_of.empty() ? who.actor : who.on_behalf_of;
}

}  // namespace

int FindOperatorToken(const std::string& command, const std::string& config_path,
                      OperatorToken* out, std::ostream& err) {
  if (const char* env = std::getenv(kTokenEnv); env != nullptr && *env != '\0') {
    out->secret = env;
    out->source = std::string("$") + kTokenEnv;
    return kExitOk;
  }
  const std::string folder = config::ConfigDir(config_path);
  auto token = api::ReadLocalToken(folder);
  if (token.ok()) {
    out->secret = std::move(token->secret);
    out->source = token->path;
    return kExitOk;
  }
  err << "cronledger " << command << ": no API token for --server: ";
  if (token.status().code() == StatusCode::kNotFound) {
    err << "set " << kTokenEnv << ", or put the server's token in "
        << (std::filesystem::path(folder) / api::kLocalTokenFile).string()
        << " (serve keeps it there, beside its config file, when no [[auth.token]] is "
           "configured; --config or $CRONLEDGER_CONFIG names that folder)\n";
  } else {
    err << token.status().message() << "\n";
  }
  return kExitUsage;
}

RemoteLedger::RemoteLedger(std::string url, OperatorToken token)
    : client_(std::move(url), std::move(token.secret), /*tries=*/1),
      token_source_(std::move(token.source)) {}

int RemoteLedger::Connect(const std::string& command, const std::string& server,
                          const std::string& config_path, std::unique_ptr<RemoteLedger>* out,
                          std::ostream& err) {
  if (!IsServerUrl(server)) {
    err << "cronledger " << command << ": --server \"" << server
        << "\" is not a server URL; use http://HOST:PORT, e.g. http://127.0.0.1:8377\n";
    return kExitUsage;
  }
  OperatorToken token;
  if (int rc = FindOperatorToken(command, config_path, &token, err); rc != kExitOk) return rc;
  out->reset(new RemoteLedger(server, std::move(token)));
  return kExitOk;
}

Result<ordered_json> RemoteLedger::Get(const std::string& path, const Query& query,
                                       StatusCode not_found) const {
  std::string target = path;
  char separator = '?';
  for (const auto& [name, value] : query) {
    target += separator + name + "=" + QueryEscape(value);
    separator = '&';
  }
  return Call("GET", target, "", not_found, nullptr);
}

Result<ordered_json> RemoteLedger::Post(const std::string& path, const ordered_json& body,
                                        StatusCode not_found, ordered_json* refusal) const {
  return Call("POST", path, ops::Dump(body), not_found, refusal);
}

Result<ordered_json> RemoteLedger::Call(const std::string& method, const std::string& path,
                                        const std::string& body, StatusCode not_found,
                                        ordered_json* refusal) const {
  const std::string& url = client_.base_url();
  std::string why;
  const auto reply = client_.Call(method, path, body, &why);
  if (!reply) {
    return Status(StatusCode::kUnavailable,
                  fmt::format("the server at {} cannot be reached: {}", url, why));
  }
  ordered_json answer = ordered_json::parse(reply->body, nullptr, /*allow_exceptions=*/false);
  if (reply->status == 200) {
    if (answer.is_discarded() || !answer.is_object()) {
      return Status(StatusCode::kUnavailable,
                    fmt::format("the server at {} answered {} {} with something that is not a "
                                "JSON object; is it a cronledger serve?",
                                url, method, path));
    }
    return answer;
  }
  std::string message;
  if (!answer.is_discarded() && answer.is_object()) {
    if (refusal != nullptr) *refusal = answer;
    const auto m = answer.find("message");
    if (m != answer.end() && m->is_string()) message = m->get<std::string>();
  }
  if (message.empty()) message = fmt::format("HTTP {} for {} {}", reply->status, method, path);
  switch (reply->status) {
    case 401:
      return Status(StatusCode::kInvalidArgument,
                    fmt::format("the server at {} refused the token from {}: {}; give one it "
                                "knows in ${} (an [[auth.token]] secret, or its "
                                "cronledger.token)",
                                url, token_source_, message, "CRONLEDGER_AUTH_TOKEN"));
    case 403:
      return Status(StatusCode::kInvalidArgument,
                    fmt::format("the token from {} may not do this: {}", token_source_, message));
    case 404:
      return Status(not_found, message);
    case 409:
      return Status(StatusCode::kConflict, message);
    default:
      break;
  }
  if (reply->status >= 500) {
    return Status(StatusCode::kUnavailable,
                  fmt::format("the server at {} is unavailable: {} (HTTP {})", url, message,
                              reply->status));
  }
  if (reply->status >= 400) return Status(StatusCode::kInvalidArgument, message);
  return Status(StatusCode::kUnavailable,
                fmt::format("the server at {} answered HTTP {} to {} {}", url, reply->status,
                            method, path));
}

namespace {

std::string DateText(const std::chrono::year_month_day& d) {
  return fmt::format("{:04}-{:02}-{:02}", static_cast<int>(d.year()),
                     static_cast<unsigned>(d.month()), static_cast<unsigned>(d.day()));
}

// A 404 of a request that names a job is the job the server does not know:
// the same kInvalidArgument as locally (ops::Ledger).
StatusCode NotFoundFor(const std::optional<std::string>& job) {
  return job ? StatusCode::kInvalidArgument : StatusCode::kNotFound;
}

}  // namespace

Result<ordered_json> RemoteLedger::Jobs() { return Get("/v1/jobs"); }

Result<ordered_json> RemoteLedger::Runs(const store::RunQuery& q, bool /*with_steps*/) {
  ordered_json list = ordered_json::array();
  std::optional<std::string> cursor;
  const int64_t limit = q.limit;
  while (static_cast<int64_t>(list.size()) < limit) {
    Query query;
    if (q.job) query.emplace_back("job", *q.job);
    if (q.state) query.emplace_back("state", std::string(ledger::Name(*q.state)));
    if (q.business_date) query.emplace_back("date", *q.business_date);
    if (q.partition) query.emplace_back("partition", *q.partition);
    query.emplace_back("limit", std::to_string(std::min<int64_t>(
                                    limit - static_cast<int64_t>(list.size()), api::kMaxPageLimit)));
    if (cursor) query.emplace_back("cursor", *cursor);
    auto page = Get("/v1/runs", query, NotFoundFor(q.job));
    if (!page.ok()) return page.status();
    for (auto& run : (*page)["runs"]) list.push_back(std::move(run));
    const auto next = page->find("next_cursor");
    if (next == page->end() || !next->is_string()) break;
    cursor = next->get<std::string>();
  }
  ordered_json doc;
  doc["runs"] = std::move(list);
  return doc;
}

Result<ordered_json> RemoteLedger::Run(int64_t id) { return Get("/v1/runs/" + std::to_string(id)); }

int64_t RemoteLedger::MaxEvents() const { return api::kMaxPageLimit; }

Result<ordered_json> RemoteLedger::Events(const store::EventQuery& q) {
  Query query;
  if (q.job) query.emplace_back("job", *q.job);
  if (q.run_id) query.emplace_back("run_id", std::to_string(*q.run_id));
  if (q.since) {
    query.emplace_back("since", FormatUtc(std::chrono::floor<std::chrono::seconds>(*q.since)));
  }
  if (q.type) query.emplace_back("type", *q.type);
  if (q.actor) query.emplace_back("actor", *q.actor);
  query.emplace_back("limit", std::to_string(q.limit));
  return Get("/v1/events", query, q.run_id ? StatusCode::kNotFound : NotFoundFor(q.job));
}

Status RemoteLedger::Gaps(const ops::GapsQuery& q,
                          const std::function<Status(const ordered_json&)>& each) {
  Query query;
  if (q.job) query.emplace_back("job", *q.job);
  if (q.from) query.emplace_back("from", DateText(*q.from));
  if (q.to) query.emplace_back("to", DateText(*q.to));
  if (q.include_waived) query.emplace_back("include_waived", "true");
  auto answer = Get("/v1/gaps", query, NotFoundFor(q.job));
  if (!answer.ok()) return answer.status();
  const auto gaps = answer->find("gaps");
  if (gaps == answer->end() || !gaps->is_array()) return Status::Ok();
  for (const auto& g : *gaps) {
    if (Status s = each(g); !s.ok()) return s;
  }
  return Status::Ok();
}

Result<ordered_json> RemoteLedger::Verify(const ops::VerifyQuery& q) {
  return Get("/v1/verify", {{"job", q.job}, {"date", q.date_text}}, StatusCode::kInvalidArgument);
}

namespace {

// The answer of an action refusable with something to show: a 409 whose
// "error" names the kind (the body in `refusal`), else as Post answered.
Result<ops::ActionAnswer> AnswerOf(Result<ordered_json> posted, const ordered_json& refusal) {
  ops::ActionAnswer answer;
  if (posted.ok()) {
    answer.doc = std::move(*posted);
    return answer;
  }
  if (posted.status().code() != StatusCode::kConflict || !refusal.is_object()) {
    return posted.status();
  }
  const auto text = [&](const char* key) {
    const auto it = refusal.find(key);
    return it != refusal.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  const std::string error = text("error");
  answer.message = text("message");
  if (error == "stale_preview") {
    answer.kind = ops::ActionAnswer::Kind::kStale;
    answer.doc = refusal.value("preview", ordered_json());
    return answer;
  }
  if (error == "nothing_to_do") {
    answer.kind = ops::ActionAnswer::Kind::kNothingToDo;
    answer.doc = refusal.value("preview", ordered_json());
    return answer;
  }
  if (const auto existing = refusal.find("existing");
      error == "conflict" && existing != refusal.end() && existing->is_array()) {
    answer.kind = ops::ActionAnswer::Kind::kExists;
    for (const auto& e : *existing) {
      if (e.is_string()) answer.existing.push_back(e.get<std::string>());
    }
    return answer;
  }
  return posted.status();
}

}  // namespace

Result<ordered_json> RemoteLedger::SetPaused(const ops::PauseAction& a) {
  ordered_json body;
  if (a.job) {
    body["job"] = *a.job;
  } else {
    body["all"] = true;
  }
  body["reason"] = a.who.reason;
  body["by"] = ByOf(a.who);
  return Post(a.pause ? "/v1/pause" : "/v1/resume", body, StatusCode::kInvalidArgument);
}

Result<ordered_json> RemoteLedger::ActOnRun(const ops::RunAction& a) {
  ordered_json body;
  std::string action;
  switch (a.kind) {
    case ops::RunActionKind::kRetry:
      action = "retry";
      break;
    case ops::RunActionKind::kCancel:
      action = "cancel";
      break;
    case ops::RunActionKind::kResolve:
      action = "resolve";
      if (a.effect) body["effect"] = *a.effect;
      body["as"] = a.effect_as ? std::string(ledger::Name(*a.effect_as))
                               : std::string(store::Name(a.run_as.value_or(
                                     store::RunResolution::kRetry)));
      break;
  }
  body["reason"] = a.who.reason;
  body["by"] = ByOf(a.who);
  return Post(fmt::format("/v1/runs/{}/{}", a.run_id, action), body);
}

Result<ops::ActionAnswer> RemoteLedger::Approve(const ops::ApproveAction& a) {
  ordered_json body;
  body["job"] = a.job;
  if (a.from) body["from"] = DateText(*a.from);
  if (a.to) body["to"] = DateText(*a.to);
  if (a.run) body["run"] = *a.run;
  body["reason"] = a.who.reason;
  body["by"] = ByOf(a.who);
  ordered_json refusal;
  return AnswerOf(Post("/v1/approve", body, StatusCode::kInvalidArgument, &refusal), refusal);
}

Result<ops::ActionAnswer> RemoteLedger::Impact(const ops::ImpactOrder& a) {
  const ops::ImpactRequest& r = a.request;
  const bool rerun = r.action == ops::ImpactAction::kRerun;
  ordered_json body;
  body["job"] = a.job;
  if (rerun) {
    body["date"] = DateText(r.from);
    body["only"] = std::string(ops::Name(r.only));
    body["force"] = r.force;
  } else {
    body["from"] = DateText(r.from);
    body["to"] = DateText(r.to);
  }
  if (!r.partitions.empty()) body["partitions"] = r.partitions;
  body["include_waived"] = r.include_waived;
  if (!a.who.reason.empty()) body["reason"] = a.who.reason;  // a preview needs none
  body["by"] = ByOf(a.who);
  const std::string path = rerun ? "/v1/rerun" : "/v1/backfill";
  ordered_json refusal;
  auto preview = AnswerOf(Post(path, body, StatusCode::kInvalidArgument, &refusal), refusal);
  if (!preview.ok()) return preview;
  if (!a.yes) {
    preview->kind = ops::ActionAnswer::Kind::kPreview;
    return preview;
  }
  body["yes"] = true;
  body["preview_digest"] =
      a.digest.value_or(preview->doc.value("preview_digest", std::string()));
  refusal = ordered_json();
  auto done = AnswerOf(Post(path, body, StatusCode::kInvalidArgument, &refusal), refusal);
  // A refusal for nothing to do carries no preview: the one just asked for.
  if (done.ok() && done->kind == ops::ActionAnswer::Kind::kNothingToDo && done->doc.is_null()) {
    done->doc = std::move(preview->doc);
  }
  return done;
}

Result<ops::ActionAnswer> RemoteLedger::Trigger(const ops::TriggerAction& a) {
  ordered_json body;
  body["job"] = a.job;
  if (!a.partitions.empty()) body["partitions"] = a.partitions;
  if (a.target.date) body["date"] = *a.target.date;
  if (a.target.period) body["period"] = *a.target.period;
  body["reason"] = a.who.reason;
  body["by"] = ByOf(a.who);
  ordered_json refusal;
  return AnswerOf(Post("/v1/trigger", body, StatusCode::kInvalidArgument, &refusal), refusal);
}

}  // namespace cronledger::cli
