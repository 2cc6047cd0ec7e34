#include "cli/remote_ledger.h"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>

#include "api/auth.h"
#include "api/json_shapes.h"
#include "cli/exit_codes.h"

namespace cronledger::cli {
namespace {

using nlohmann::ordered_json;

constexpr const char* kTokenEnv = "CRONLEDGER_AUTH_TOKEN";

// The folder serve keeps cronledger.token in: the config file's.
std::string ConfigFolder(const std::string& config_path) {
  std::error_code ec;
  std::filesystem::path abs = std::filesystem::absolute(config_path, ec);
  if (ec) abs = config_path;
  return abs.lexically_normal().parent_path().string();
}

}  // namespace

int FindOperatorToken(const std::string& command, const std::string& config_path,
                      OperatorToken* out, std::ostream& err) {
  if (const char* env = std::getenv(kTokenEnv); env != nullptr && *env != '\0') {
    out->secret = env;
    out->source = std::string("$") + kTokenEnv;
    return kExitOk;
  }
  const std::string folder = ConfigFolder(config_path);
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
  return Call("POST", path, api::Dump(body), not_found, refusal);
}

Result<ordered_json> RemoteLedger::Call(const std::string& method, const std::string& path,
                                        const std::string& body, StatusCode not_found,
                                        ordered_json* refusal) const {
  const std::string& url = client_.base_url();
  std::string why;
  const auto reply = client_.Call(method, path, body, &why);
  if (!reply) {
    return Status(StatusCode::kUnavailable,
                  fmt::format("the server at {} cannot be reached ({})", url, why));
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

}  // namespace cronledger::cli
