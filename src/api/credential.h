// Per-attempt credentials (docs/api.md, Step credentials): what a step presents
// as CRONLEDGER_TOKEN when it calls the effect and checkpoint endpoints. A
// credential names one attempt (run id and fencing token) and is signed with a
// key only this server process knows, so a step cannot forge another run's;
// whether the attempt still holds its lease is the store's fencing, checked on
// every call.
#ifndef CRONLEDGER_API_CREDENTIAL_H_
#define CRONLEDGER_API_CREDENTIAL_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace cronledger::api {

struct AttemptIdentity {
  int64_t run_id = 0;
  int64_t token = 0;
};

class AttemptCredentials {
 public:
  // A fresh random signing key (getrandom). Credentials issued by one
  // process are not valid for another: a step talks to the node that runs it.
  AttemptCredentials();
  // A fixed key, for tests.
  explicit AttemptCredentials(std::string_view key);

  // "clt1.<run_id>.<token>.<hex HMAC-SHA256>".
  std::string Issue(int64_t run_id, int64_t token) const;
  // The attempt a credential names; nullopt when it is malformed or its
  // signature is not ours (compared in constant time).
  std::optional<AttemptIdentity> Verify(std::string_view credential) const;

 private:
  std::string Sign(std::string_view payload) const;
  std::array<unsigned char, 32> key_{};
};

}  // namespace cronledger::api

#endif  // CRONLEDGER_API_CREDENTIAL_H_
