#include "api/attempt_requests.h"

#include <fmt/format.h>

#include <charconv>
#include <limits>

namespace cronledger::api {
namespace {

constexpr const char* kScopeChoices = "must be \"run\" or \"partition\"";

// nullopt when absent, -1 when not a positive integer.
std::optional<int64_t> QueryId(const ApiRequest& r, const char* name) {
  const auto it = r.query.find(name);
  if (it == r.query.end()) return std::nullopt;
  int64_t v = 0;
  const auto& t = it->second;
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc() || end != t.data() + t.size() || v <= 0) return -1;
  return v;
}

}  // namespace

std::variant<EffectBeginRequest, ApiResponse> ParseEffectBegin(const ApiRequest& request) {
  BodyReader body(request.body);
  const auto run_id = body.Integer("run_id", true, 1, kMaxId);
  const auto token = body.Integer("fencing_token", true, 1, kMaxId);
  const auto key = body.String("key", true, store::kMaxEffectKeyBytes);
  const auto fingerprint = body.String("fingerprint", false, kMaxFingerprintBytes);
  const auto request_id = body.String("request", false, kMaxRequestIdBytes);
  if (auto problem = body.Problem()) return *problem;
  return EffectBeginRequest{*run_id, *token, *key, fingerprint, request_id};
}

std::variant<EffectSettleRequest, ApiResponse> ParseEffectSettle(const ApiRequest& request,
                                                                 bool commit,
                                                                 std::size_t max_result_bytes) {
  BodyReader body(request.body);
  const auto run_id = body.Integer("run_id", true, 1, kMaxId);
  const auto token = body.Integer("fencing_token", true, 1, kMaxId);
  const auto key = body.String("key", true, store::kMaxEffectKeyBytes);
  const auto exit_status = body.Integer("exit_status", false, 0, 255);
  const auto result = body.String("result", false, max_result_bytes);
  std::optional<store::CheckpointWrite> checkpoint;
  if (commit) {
    body.Object("checkpoint", [&](BodyReader& c) {
      const auto scope = c.String("scope", false, 16);
      const auto value = c.String("value", true, kMaxCheckpointBytes);
      const auto parsed = ledger::ParseCheckpointScope(scope.value_or("run"));
      if (!parsed) c.Invalid("scope", kScopeChoices);
      if (value && parsed) checkpoint = store::CheckpointWrite{*parsed, *value};
    });
  }
  if (auto problem = body.Problem()) return *problem;
  return EffectSettleRequest{*run_id, *token, *key, exit_status, result, checkpoint};
}

std::variant<CheckpointRead, ApiResponse> ParseCheckpointRead(const ApiRequest& request) {
  for (const auto& [name, _] : request.query) {
    if (name != "run_id" && name != "fencing_token") {
      return Error(400, "invalid_request", fmt::format("unknown parameter \"{}\"", name));
    }
  }
  const auto run_id = QueryId(request, "run_id");
  const auto token = QueryId(request, "fencing_token");
  if (run_id == -1 || token == -1) {
    return Error(400, "invalid_request", "run_id and fencing_token must be positive integers");
  }
  return CheckpointRead{run_id, token};
}

std::variant<CheckpointPut, ApiResponse> ParseCheckpointPut(const ApiRequest& request) {
  BodyReader body(request.body);
  const auto run_id = body.Integer("run_id", true, 1, kMaxId);
  const auto token = body.Integer("fencing_token", true, 1, kMaxId);
  const auto scope = body.String("scope", false, 16);
  const auto value = body.String("value", true, kMaxCheckpointBytes);
  const auto parsed = ledger::ParseCheckpointScope(scope.value_or("run"));
  if (!parsed) body.Invalid("scope", kScopeChoices);
  if (auto problem = body.Problem()) return *problem;
  return CheckpointPut{*run_id, *token, *parsed, *value};
}

}  // namespace cronledger::api
