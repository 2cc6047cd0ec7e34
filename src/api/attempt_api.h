// The endpoints a running step calls (docs/api.md, Step credentials;
// docs/effects.md): effects and checkpoints, each authorised by the
// attempt's credential and fenced by its token.
//   POST /v1/effects/begin   POST /v1/effects/commit   POST /v1/effects/fail
//   GET  /v1/checkpoints     PUT  /v1/checkpoints
#ifndef CRONLEDGER_API_ATTEMPT_API_H_
#define CRONLEDGER_API_ATTEMPT_API_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "api/attempt_requests.h"
#include "api/credential.h"
#include "api/request.h"
#include "cronledger/clock.h"
#include "cronledger/handler.h"
#include "engine/effect_writer.h"
#include "store/store.h"

namespace cronledger::api {

class AttemptApi {
 public:
  struct Options {
    std::string node;               // actor of the events the calls record
    uint64_t output_cap = 1 << 20;  // bytes of an effect's result that are kept
  };
  // Everything must outlive it.
  // `writes`: the group committer the node's in-process handlers share, so
  // that a step's calls join their batches.
  AttemptApi(store::Store& store, engine::EffectWriter& writes, Clock& clock,
             const AttemptCredentials& credentials, Options options);

  // The answer, or nullopt when the path is none of these endpoints.
  std::optional<ApiResponse> Handle(const ApiRequest& request) const;
  // Before the body is read: whether the path is one of these endpoints
  // and the Authorization header a per-attempt credential.
  HeadVerdict JudgeHead(const ApiRequest& head) const;

  // The largest body an endpoint accepts: a capped result and its JSON
  // escaping, plus the other fields.
  std::size_t MaxBodyBytes() const;

 private:
  // The attempt named by the Authorization header, or a 401 answer.
  std::variant<AttemptIdentity, ApiResponse> Authenticate(const ApiRequest& request) const;

  ApiResponse Begin(const AttemptIdentity& who, const ApiRequest& request) const;
  ApiResponse Settle(const AttemptIdentity& who, const ApiRequest& request, bool commit) const;
  ApiResponse GetCheckpoints(const AttemptIdentity& who, const ApiRequest& request) const;
  ApiResponse PutCheckpoint(const AttemptIdentity& who, const ApiRequest& request) const;
  // A fenced write's params: the attempt, this node, and now.
  template <typename Params>
  Params Fenced(int64_t run_id, int64_t token) const;

  store::Store& store_;
  engine::EffectWriter& writes_;
  Clock& clock_;
  const AttemptCredentials& credentials_;
  Options options_;
};

// The variables a subprocess step gets to call these endpoints:
// CRONLEDGER_API (`url`), CRONLEDGER_TOKEN (the attempt's credential),
// CRONLEDGER_CHECKPOINT and CRONLEDGER_CHECKPOINT_PARTITION (its run's and
// partition's last watermarks, empty if none).
Result<std::vector<std::pair<std::string, std::string>>> AttemptEnvironment(
    store::Store& store, const AttemptCredentials& credentials, const std::string& url,
    const RunContext& ctx);

}  // namespace cronledger::api

#endif  // CRONLEDGER_API_ATTEMPT_API_H_
