// Operator authentication (docs/api.md, authentication): the bearer tokens
// of [[auth.token]], or the local operator token serve keeps in
// cronledger.token when none are configured, and what each role may do.
// A step's per-attempt credential is another thing (api/credential.h).
#ifndef CRONLEDGER_API_AUTH_H_
#define CRONLEDGER_API_AUTH_H_

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "api/credential.h"
#include "api/request.h"
#include "config/config.h"
#include "cronledger/status.h"

namespace cronledger::api {

using config::TokenRole;

// "read", "operate", "worker".
std::string_view RoleName(TokenRole role);

// Whether a caller of role `have` may use a route that needs `need`:
// operate includes read; worker is only itself.
bool RoleAllows(TokenRole have, TokenRole need);

// The credential of an "Authorization: Bearer CREDENTIAL" header (the
// scheme in any case); nullopt when the header is empty or another scheme.
std::optional<std::string_view> BearerCredential(std::string_view header);

struct ApiToken {
  std::string name;  // for logs; never the secret
  TokenRole role = TokenRole::kRead;
  std::string secret;
};

// Finds the token a caller presents. Every presented credential is hashed
// and compared with every token's hash by CRYPTO_memcmp, so neither the
// position of the first differing byte nor the lengths show in the time.
class TokenAuthenticator {
 public:
  explicit TokenAuthenticator(std::vector<ApiToken> tokens);

  // The token whose secret is `presented`, or null.
  const ApiToken* Find(std::string_view presented) const;
  // The token named `name`, or null.
  const ApiToken* ByName(std::string_view name) const;

 private:
  struct Entry {
    ApiToken token;
    std::array<unsigned char, 32> digest{};
  };
  std::vector<Entry> entries_;
};

// The local operator token of a server without [[auth.token]].
// The token an "Authorization: Bearer TOKEN" header names, or the 401 that
// says what is wrong (`missing` when there is no header at all). With
// `step_credentials`, a step's per-attempt credential gets 403 with
// `step_refusal` instead (it is valid, just not here).
std::variant<const ApiToken*, ApiResponse> AuthenticateBearer(
    const ApiRequest& request, const TokenAuthenticator& tokens, std::string_view missing,
    const AttemptCredentials* step_credentials = nullptr, std::string_view step_refusal = "");

struct LocalToken {
  std::string path;    // <config folder>/cronledger.token
  std::string secret;  // never logged
  bool created = false;
};

inline constexpr std::string_view kLocalTokenFile = "cronledger.token";

// Reads `dir`/cronledger.token, or creates it (mode 0600, 32 random bytes
// as hex) when it does not exist; two serve processes starting at once end
// up with the same token. kInvalidArgument for a file others may read or
// with no usable token in it; kIOError when it cannot be read or written.
Result<LocalToken> LoadOrCreateLocalToken(const std::string& dir);

// Reads `dir`/cronledger.token without ever creating it: what the command
// line sends to a server on the same machine. kNotFound when there is no
// such file; otherwise as LoadOrCreateLocalToken.
Result<LocalToken> ReadLocalToken(const std::string& dir);

}  // namespace cronledger::api

#endif  // CRONLEDGER_API_AUTH_H_
