// The external-worker protocol (docs/api.md, external workers): runs of
// `executor = "external"` jobs are claimed and worked over HTTP by programs
// in any language, fenced exactly like the built-in executor.
//   POST /v1/claims                    claim one due run (long-poll up to `wait`)
//   POST /v1/runs/{id}/heartbeat       extend the lease
//   POST /v1/runs/{id}/steps/{step}    a step's result
//   POST /v1/runs/{id}/complete        end the attempt after its last step
// need a bearer token of role worker or operate. Every write after the
// claim names the attempt's fencing token; a stale one answers 409
// stale_lease, records stale_write_rejected and changes nothing. Effects and
// checkpoints go through AttemptApi with the claim's per-attempt credential.
#ifndef CRONLEDGER_API_WORKER_API_H_
#define CRONLEDGER_API_WORKER_API_H_

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <random>
#include <stop_token>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "api/auth.h"
#include "api/credential.h"
#include "api/request.h"
#include "api/worker_requests.h"
#include "config/config.h"
#include "cronledger/clock.h"
#include "store/store.h"

namespace cronledger::api {

class WorkerApi {
 public:
  struct Options {
    // The API's address, handed to workers as CRONLEDGER_API.
    std::string url;
    // Claims that may wait at once (each holds an HTTP thread while it
    // waits); a claim beyond this looks once and answers at once.
    int max_long_polls = 2;
    // How often a waiting claim looks for a due run.
    std::chrono::milliseconds poll{250};
    // Seconds a worker whose claim found nothing is told to wait before
    // asking again when it could not wait here (`retry_after`).
    int retry_after = 1;
    uint64_t jitter_seed = 0;  // 0: nondeterministic
  };

  // Everything must outlive it. `credentials` issues the per-attempt
  // credential a claim hands out (the one AttemptApi verifies).
  WorkerApi(const config::Config& config, store::Store& store, Clock& clock,
            const TokenAuthenticator& tokens, const AttemptCredentials& credentials,
            Options options);

  // The answer, or nullopt when the path is none of these routes.
  // Thread-safe; a claim may block for up to its `wait`.
  std::optional<ApiResponse> Handle(const ApiRequest& request) const;
  // Before the body is read: whether the path is a worker route and the
  // caller's token one of role worker or operate.
  HeadVerdict JudgeHead(const ApiRequest& head) const;

  // Ends every waiting claim now (each answers `{"run": null}`), and makes
  // later claims answer 503: serve is stopping and claims no more.
  void Stop();

  // Claims waiting right now (tests, metrics).
  int LongPolls() const;

 private:
  struct Caller {
    const ApiToken* token = nullptr;
  };
  std::variant<Caller, ApiResponse> Authenticate(const ApiRequest& request) const;
  // The 403 for a token of another role than worker or operate.
  static std::optional<ApiResponse> RoleRefusal(const Caller& caller, const ApiRequest& request);

  ApiResponse Claim(const ApiRequest& request, const Caller& caller) const;
  ApiResponse Heartbeat(const ApiRequest& request, const Caller& caller, int64_t run_id) const;
  ApiResponse Step(const ApiRequest& request, const Caller& caller, int64_t run_id,
                   const std::string& step) const;
  ApiResponse Complete(const ApiRequest& request, const Caller& caller, int64_t run_id) const;

  // The run's configured external job, or the answer refusing the route:
  // 404 for no such run, 403 for a run of a job that is not external here.
  std::variant<const config::JobConfig*, ApiResponse> ExternalJobOf(int64_t run_id,
                                                                   store::RunRecord* run) const;
  // A claim is bound to the API token that made it: the 403 for a write
  // (`write`: "heartbeat", "step NAME", "finish") with a fencing token
  // another token claimed, its stale_write_rejected event naming the
  // caller written first; none when the claim is the caller's, a node's
  // own, or no attempt has that fencing token (the store's fence answers).
  // `attempts` caches the run's attempts when they had to be read.
  std::optional<ApiResponse> RefuseForeignClaim(
      const Caller& caller, const std::optional<std::string>& worker, const store::RunRecord& run,
      const Result<store::RunLease>& lease, int64_t token, std::string_view write,
      std::optional<std::vector<store::AttemptRecord>>& attempts) const;
  // The claim's answer for one claimed run.
  ApiResponse ClaimAnswer(const store::ClaimedRun& claim, const config::JobConfig& job) const;
  double JitterSample() const;

  const config::Config& config_;
  store::Store& store_;
  Clock& clock_;
  const TokenAuthenticator& tokens_;
  const AttemptCredentials& credentials_;
  Options options_;

  mutable std::mutex mu_;
  mutable int long_polls_ = 0;
  mutable std::mt19937_64 rng_;
  std::stop_source stop_;
};

}  // namespace cronledger::api

#endif  // CRONLEDGER_API_WORKER_API_H_
