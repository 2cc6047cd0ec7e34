// The Ledger of a command with --server: instead of opening the store it
// asks a `cronledger serve` over its HTTP API (docs/api.md), which answers
// through the same ops::LocalLedger a command without --server uses. The
// command renders the documents exactly as it renders the local ones.
#ifndef CRONLEDGER_CLI_REMOTE_LEDGER_H_
#define CRONLEDGER_CLI_REMOTE_LEDGER_H_

#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "cli/api_client.h"
#include "cronledger/status.h"
#include "ops/ledger.h"

namespace cronledger::cli {

// The API token the command line sends: $CRONLEDGER_AUTH_TOKEN when set and
// not empty, else the cronledger.token file serve keeps beside the config
// file (`config_path`'s folder; the file itself need not exist).
struct OperatorToken {
  std::string secret;  // never printed
  std::string source;  // "$CRONLEDGER_AUTH_TOKEN" or the file's path, for messages
};

// Finds the token. On failure (none anywhere, or an unusable file) prints
// why and how to give one, as `command`, and returns kExitUsage.
int FindOperatorToken(const std::string& command, const std::string& config_path,
                      OperatorToken* out, std::ostream& err);

class RemoteLedger : public ops::Ledger {
 public:
  using Query = std::vector<std::pair<std::string, std::string>>;

  // Checks `server` and finds the token (FindOperatorToken). kExitOk, or
  // kExitUsage after printing the problem as `command`.
  static int Connect(const std::string& command, const std::string& server,
                     const std::string& config_path, std::unique_ptr<RemoteLedger>* out,
                     std::ostream& err);

  Result<nlohmann::ordered_json> Jobs() override;
  // Page by page (GET /v1/runs answers at most 1000 runs a page).
  Result<nlohmann::ordered_json> Runs(const store::RunQuery& query, bool with_steps) override;
  Result<nlohmann::ordered_json> Run(int64_t id) override;
  // GET /v1/events has no cursor: at most MaxEvents() in one answer.
  Result<nlohmann::ordered_json> Events(const store::EventQuery& query) override;
  int64_t MaxEvents() const override;
  // The server answers the whole list at once; `each` is called after it.
  Status Gaps(const ops::GapsQuery& query,
              const std::function<Status(const nlohmann::ordered_json&)>& each) override;
  Result<nlohmann::ordered_json> Verify(const ops::VerifyQuery& query) override;
  Result<nlohmann::ordered_json> SetPaused(const ops::PauseAction& action) override;
  Result<nlohmann::ordered_json> ActOnRun(const ops::RunAction& action) override;
  Result<ops::ActionAnswer> Approve(const ops::ApproveAction& action) override;
  // With `yes` and no digest, asks for the preview first and confirms its
  // digest: over HTTP acting needs one, and this acts, as locally, on the
  // ledger as it is found.
  Result<ops::ActionAnswer> Impact(const ops::ImpactOrder& order) override;
  Result<ops::ActionAnswer> Trigger(const ops::TriggerAction& action) override;

  // GET `path` with `query` (escaped here). The 200 answer, or a Status
  // whose code gives the exit code through ExitCodeFor and whose message
  // is the server's (or says why there was no answer):
  //   400, 405, 413 kInvalidArgument; 401, 403 kInvalidArgument naming the
  //   token's source; 404 `not_found` (kNotFound, or kInvalidArgument where
  //   the command treats an unknown job as a usage error, as it does
  //   locally); 409 kConflict; 5xx and no answer kUnavailable.
  Result<nlohmann::ordered_json> Get(const std::string& path, const Query& query = {},
                                     StatusCode not_found = StatusCode::kNotFound) const;

  // POST `body` to `path`, answered as Get. On a refusal with a JSON body
  // (e.g. 409 stale_preview with its "preview") `*refusal` holds it.
  Result<nlohmann::ordered_json> Post(const std::string& path, const nlohmann::ordered_json& body,
                                      StatusCode not_found = StatusCode::kNotFound,
                                      nlohmann::ordered_json* refusal = nullptr) const;

 private:
  RemoteLedger(std::string url, OperatorToken token);
  Result<nlohmann::ordered_json> Call(const std::string& method, const std::string& path,
                                      const std::string& body, StatusCode not_found,
                                      nlohmann::ordered_json* refusal) const;

  ApiClient client_;
  std::string token_source_;
};

}  // namespace cronledger::cli

#endif  // CRONLEDGER_CLI_REMOTE_LEDGER_H_
