// The step endpoints' request validators (docs/api.md, effects and
// checkpoints): each JSON body or query turned into a checked request, or
// the 400 answer naming the first problem. Pure functions of the request,
// apart from AttemptApi (which checks them against the caller's credential
// and writes) so that they are fuzzed (tests/fuzz) without a store.
#ifndef CRONLEDGER_API_ATTEMPT_REQUESTS_H_
#define CRONLEDGER_API_ATTEMPT_REQUESTS_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>

#include "api/request.h"
#include "ledger/names.h"
#include "store/store.h"

namespace cronledger::api {

// Largest fields a request may carry (bodies are capped by the server too).
inline constexpr std::size_t kMaxFingerprintBytes = 4096;
inline constexpr std::size_t kMaxRequestIdBytes = 256;
inline constexpr std::size_t kMaxCheckpointBytes = 64 * 1024;

// POST /v1/effects/begin.
struct EffectBeginRequest {
  int64_t run_id = 0;
  int64_t fencing_token = 0;
  std::string key;
  std::optional<std::string> fingerprint;
  std::optional<std::string> request_id;  // the body's "request"
};
std::variant<EffectBeginRequest, ApiResponse> ParseEffectBegin(const ApiRequest& request);

// POST /v1/effects/commit (`commit`, which may carry a checkpoint) and
// /v1/effects/fail. `max_result_bytes`: the longest `result` accepted.
struct EffectSettleRequest {
  int64_t run_id = 0;
  int64_t fencing_token = 0;
  std::string key;
  std::optional<int64_t> exit_status;
  std::optional<std::string> result;
  std::optional<store::CheckpointWrite> checkpoint;
};
std::variant<EffectSettleRequest, ApiResponse> ParseEffectSettle(const ApiRequest& request,
                                                                 bool commit,
                                                                 std::size_t max_result_bytes);

// GET /v1/checkpoints: run_id and fencing_token, both optional (the
// credential's when absent).
struct CheckpointRead {
  std::optional<int64_t> run_id;
  std::optional<int64_t> fencing_token;
};
std::variant<CheckpointRead, ApiResponse> ParseCheckpointRead(const ApiRequest& request);

// PUT /v1/checkpoints.
struct CheckpointPut {
  int64_t run_id = 0;
  int64_t fencing_token = 0;
  ledger::CheckpointScope scope = ledger::CheckpointScope::kRun;
  std::string value;
};
std::variant<CheckpointPut, ApiResponse> ParseCheckpointPut(const ApiRequest& request);

}  // namespace cronledger::api

#endif  // CRONLEDGER_API_ATTEMPT_REQUESTS_H_
