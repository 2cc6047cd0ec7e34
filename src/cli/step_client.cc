#include "cli/step_client.h"

#include <charconv>
#include <cstdlib>

#include "cli/loopback_http.h"

namespace cronledger::cli {
namespace {

std::optional<int64_t> PositiveId(const char* text) {
  if (text == nullptr) return std::nullopt;
  const std::string_view t(text);
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc() || end != t.data() + t.size() || v <= 0) return std::nullopt;
  return v;
}

// Tries: about 10 s in all (CallWithRetries waits 50 ms, doubling up to
// 2 s: 9.15 s before the tenth), enough for a busy store; a server that is
// gone for longer makes the step retry later.
constexpr int kTries = 10;

}  // namespace

std::optional<StepEnvironment> ReadStepEnvironment(const char* command, std::ostream& err) {
  StepEnvironment env;
  const char* api = std::getenv("CRONLEDGER_API");
  const char* token = std::getenv("CRONLEDGER_TOKEN");
  const auto run_id = PositiveId(std::getenv("CRONLEDGER_RUN_ID"));
  const auto fencing = PositiveId(std::getenv("CRONLEDGER_FENCING_TOKEN"));
  const char* missing = api == nullptr || *api == '\0'         ? "CRONLEDGER_API"
                        : token == nullptr || *token == '\0'   ? "CRONLEDGER_TOKEN"
                        : !run_id                              ? "CRONLEDGER_RUN_ID"
                        : !fencing                             ? "CRONLEDGER_FENCING_TOKEN"
                                                               : nullptr;
  if (missing != nullptr) {
    err << "cronledger " << command << ": not inside a cronledger step (" << missing
        << " is not set); it works only in a step that `cronledger serve` runs, and did "
           "nothing\n";
    return std::nullopt;
  }
  env.api = api;
  env.token = token;
  env.run_id = *run_id;
  env.fencing_token = *fencing;
  return env;
}

StepClient::StepClient(StepEnvironment env) : env_(std::move(env)) {}

std::optional<StepReply> StepClient::Call(const std::string& method, const std::string& path,
                                          const nlohmann::json& body,
                                          std::string* transport_error) const {
  const std::string text =
      body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  auto res = CallWithRetries(kTries, transport_error, [&](std::string* error) {
    return LoopbackCall(env_.api, method, path, text, env_.token, error);
  });
  if (!res) return std::nullopt;
  StepReply reply;
  reply.status = res->status;
  reply.body = nlohmann::json::parse(res->body, nullptr, /*allow_exceptions=*/false);
  if (reply.body.is_discarded()) reply.body = nlohmann::json::object();
  return reply;
}

int StepExitFor(const StepReply& reply, const char* command, std::ostream& err) {
  const std::string code = reply.body.value("error", "");
  const std::string message = reply.body.value("message", "");
  err << "cronledger " << command << ": " << (message.empty() ? code : message);
  if (code == "stale_lease") {
    err << " (this attempt no longer holds the run's lease; it must stop)\n";
    return kStepFenced;
  }
  err << "\n";
  if (code == "fingerprint_mismatch") return kStepDataError;
  if (code == "conflict") return kStepTempFail;
  if (reply.status >= 500) return kStepTempFail;
  return kStepUsage;
}

int StepUnreachable(const StepEnvironment& env, const char* command, const std::string& why,
                    std::ostream& err) {
  err << "cronledger " << command << ": the server at " << env.api << " cannot be reached: " << why
      << " (try again later)\n";
  return kStepTempFail;
}

}  // namespace cronledger::cli
