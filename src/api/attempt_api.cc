#include "api/attempt_api.h"

#include <fmt/format.h>

#include "ops/json_shapes.h"
#include "ledger/names.h"

namespace cronledger::api {
namespace {

std::string_view OutcomeName(store::EffectBeginOutcome o) {
  switch (o) {
    case store::EffectBeginOutcome::kProceed: return "proceed";
    case store::EffectBeginOutcome::kReplay: return "replay";
    case store::EffectBeginOutcome::kInDoubt: return "in_doubt";
  }
  return "proceed";
}

// A body's run_id and fencing_token must name the credential's attempt.
std::optional<ApiResponse> Foreign(const AttemptIdentity& who, int64_t run_id, int64_t token) {
  if (run_id == who.run_id && token == who.token) return std::nullopt;
  return Error(403, "forbidden",
               fmt::format("the credential is for run {} with fencing token {}, not run {} "
                           "with fencing token {}",
                           who.run_id, who.token, run_id, token));
}

nlohmann::ordered_json CheckpointJson(const std::optional<store::CheckpointRecord>& c) {
  if (!c) return nullptr;
  return {{"value", c->value}, {"updated_at", ops::FormatInstant(c->updated_at)}};
}

}  // namespace

AttemptApi::AttemptApi(store::Store& store, engine::EffectWriter& writes, Clock& clock,
                       const AttemptCredentials& credentials, Options options)
    : store_(store),
      writes_(writes),
      clock_(clock),
      credentials_(credentials),
      options_(std::move(options)) {}

std::size_t AttemptApi::MaxBodyBytes() const {
  // A result may grow sixfold when every byte is escaped (\u00XX).
  return static_cast<std::size_t>(options_.output_cap) * 6 + 2 * kMaxCheckpointBytes + 64 * 1024;
}

std::variant<AttemptIdentity, ApiResponse> AttemptApi::Authenticate(
    const ApiRequest& request) const {
  std::string_view header = request.authorization;
  constexpr std::string_view kBearer = "Bearer ";
  if (header.empty()) {
    return Error(401, "unauthenticated",
                 "no credential: send \"Authorization: Bearer $CRONLEDGER_TOKEN\" (the step's "
                 "per-attempt credential)");
  }
  if (header.size() <= kBearer.size() ||
      !std::equal(kBearer.begin(), kBearer.end(), header.begin(),
                  [](char a, char b) { return std::tolower(a) == std::tolower(b); })) {
    return Error(401, "unauthenticated", "the Authorization header is not \"Bearer CREDENTIAL\"");
  }
  const auto who = credentials_.Verify(header.substr(kBearer.size()));
  if (!who) {
    return Error(401, "unauthenticated",
                 "the credential is not valid here: it is not one this server issued");
  }
  return *who;
}

HeadVerdict AttemptApi::JudgeHead(const ApiRequest& head) const {
  if (head.path != "/v1/effects/begin" && head.path != "/v1/effects/commit" &&
      head.path != "/v1/effects/fail" && head.path != "/v1/checkpoints") {
    return {};
  }
  auto who = Authenticate(head);
  if (auto* refused = std::get_if<ApiResponse>(&who)) return {true, std::move(*refused)};
  return {true, std::nullopt};
}

std::optional<ApiResponse> AttemptApi::Handle(const ApiRequest& request) const {
  struct Route {
    const char* path;
    const char* method;
    ApiResponse (AttemptApi::*handler)(const AttemptIdentity&, const ApiRequest&) const;
  };
  static const Route kRoutes[] = {
      {"/v1/effects/begin", "POST", &AttemptApi::Begin},
      {"/v1/effects/commit", "POST", nullptr},
      {"/v1/effects/fail", "POST", nullptr},
      {"/v1/checkpoints", "GET", &AttemptApi::GetCheckpoints},
      {"/v1/checkpoints", "PUT", &AttemptApi::PutCheckpoint},
  };
  bool path_known = false;
  for (const Route& route : kRoutes) {
    if (request.path != route.path) continue;
    path_known = true;
    if (request.method != route.method) continue;
    auto who = Authenticate(request);
    if (auto* refused = std::get_if<ApiResponse>(&who)) return *refused;
    const auto& id = std::get<AttemptIdentity>(who);
    if (route.handler != nullptr) return (this->*route.handler)(id, request);
    return Settle(id, request, request.path == "/v1/effects/commit");
  }
  if (!path_known) return std::nullopt;
  return Error(405, "method_not_allowed",
               fmt::format("{} does not accept {}", request.path, request.method));
}

template <typename Params>
Params AttemptApi::Fenced(int64_t run_id, int64_t token) const {
  Params p;
  p.run_id = run_id;
  p.token = token;
  p.now = store::ToInstant(clock_.Now());
  p.node = options_.node;
  return p;
}

ApiResponse AttemptApi::Begin(const AttemptIdentity& who, const ApiRequest& request) const {
  const auto parsed = ParseEffectBegin(request);
  if (auto* refused = std::get_if<ApiResponse>(&parsed)) return *refused;
  const auto& [run_id, token, key, fingerprint, request_id] = std::get<EffectBeginRequest>(parsed);
  if (auto foreign = Foreign(who, run_id, token)) return *foreign;

  auto p = Fenced<store::EffectBeginParams>(run_id, token);
  p.key = key;
  p.fingerprint = fingerprint.value_or("");
  p.request = request_id.value_or("");
  auto begun = writes_.Begin(p);
  if (!begun.ok()) return ErrorFor(begun.status());
  ApiResponse r;
  r.body = {{"outcome", std::string(OutcomeName(begun->outcome))},
            {"effect", ops::EffectJson(begun->effect,
                                  begun->outcome == store::EffectBeginOutcome::kInDoubt)}};
  return r;
}

ApiResponse AttemptApi::Settle(const AttemptIdentity& who, const ApiRequest& request,
                               bool commit) const {
  const auto parsed = ParseEffectSettle(request, commit, MaxBodyBytes());
  if (auto* refused = std::get_if<ApiResponse>(&parsed)) return *refused;
  const auto& [run_id, token, key, exit_status, result, checkpoint] =
      std::get<EffectSettleRequest>(parsed);
  if (auto foreign = Foreign(who, run_id, token)) return *foreign;

  const std::string stored = ops::Utf8Prefix(result.value_or(""), options_.output_cap);
  Status s;
  if (commit) {
    auto p = Fenced<store::EffectCommitParams>(run_id, token);
    p.key = key;
    p.exit_status = exit_status.value_or(0);
    p.result = stored;
    p.checkpoint = checkpoint;
    s = writes_.Commit(p);
  } else {
    auto p = Fenced<store::EffectFailParams>(run_id, token);
    p.key = key;
    p.exit_status = exit_status;
    p.result = stored;
    s = writes_.Fail(p);
  }
  if (!s.ok()) return ErrorFor(s);
  ApiResponse r;
  r.body = {{"key", key}, {"state", commit ? "committed" : "failed"}};
  return r;
}

ApiResponse AttemptApi::GetCheckpoints(const AttemptIdentity& who,
                                       const ApiRequest& request) const {
  const auto parsed = ParseCheckpointRead(request);
  if (auto* refused = std::get_if<ApiResponse>(&parsed)) return *refused;
  const auto& [run_id, token] = std::get<CheckpointRead>(parsed);
  if (auto foreign = Foreign(who, run_id.value_or(who.run_id), token.value_or(who.token))) {
    return *foreign;
  }
  // Reads are for the lease holder too: a step whose lease moved on learns
  // it here rather than acting on a watermark another attempt now owns.
  auto run = store_.RunGet(who.run_id);
  if (!run.ok()) return ErrorFor(run.status());
  bool current = false;
  if (run->state == ledger::RunState::kRunning) {
    auto attempts = store_.AttemptList(who.run_id);
    if (!attempts.ok()) return ErrorFor(attempts.status());
    for (const auto& a : *attempts) current = current || (a.token == who.token && !a.ended_at);
  }
  if (!current) {
    return Error(409, "stale_lease",
                 fmt::format("run {}: fencing token {} no longer holds the lease", who.run_id,
                             who.token));
  }
  auto checkpoints = store_.CheckpointGet(who.run_id);
  if (!checkpoints.ok()) return ErrorFor(checkpoints.status());
  ApiResponse r;
  r.body = {{"run", CheckpointJson(checkpoints->run)},
            {"partition", CheckpointJson(checkpoints->partition)}};
  return r;
}

ApiResponse AttemptApi::PutCheckpoint(const AttemptIdentity& who,
                                      const ApiRequest& request) const {
  const auto parsed = ParseCheckpointPut(request);
  if (auto* refused = std::get_if<ApiResponse>(&parsed)) return *refused;
  const auto& [run_id, token, scope, value] = std::get<CheckpointPut>(parsed);
  if (auto foreign = Foreign(who, run_id, token)) return *foreign;
  auto p = Fenced<store::CheckpointSetParams>(run_id, token);
  p.scope = scope;
  p.value = value;
  if (Status s = writes_.SetCheckpoint(p); !s.ok()) return ErrorFor(s);
  ApiResponse r;
  r.body = {{"scope", std::string(ledger::Name(scope))}, {"value", value}};
  return r;
}

Result<std::vector<std::pair<std::string, std::string>>> AttemptEnvironment(
    store::Store& store, const AttemptCredentials& credentials, const std::string& url,
    const RunContext& ctx) {
  auto checkpoints = store.CheckpointGet(ctx.run_id);
  if (!checkpoints.ok()) {
    return Status(checkpoints.status().code(),
                  "cannot read the run's checkpoints: " + checkpoints.status().message());
  }
  const auto value = [](const std::optional<store::CheckpointRecord>& c) {
    return c ? c->value : std::string();
  };
  return std::vector<std::pair<std::string, std::string>>{
      {"CRONLEDGER_API", url},
      {"CRONLEDGER_TOKEN", credentials.Issue(ctx.run_id, ctx.fencing_token)},
      {"CRONLEDGER_CHECKPOINT", value(checkpoints->run)},
      {"CRONLEDGER_CHECKPOINT_PARTITION", value(checkpoints->partition)},
  };
}

}  // namespace cronledger::api
