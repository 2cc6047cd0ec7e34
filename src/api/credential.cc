#include "api/credential.h"

#include <fmt/format.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/random.h>

#include <charconv>
#include <stdexcept>

#include "common/text.h"

namespace cronledger::api {
namespace {

constexpr std::string_view kPrefix = "clt1.";

// A positive decimal integer with no sign, no leading zero and no junk.
std::optional<int64_t> ParseId(std::string_view text) {
  if (text.empty() || text.size() > 18 || text[0] == '0') return std::nullopt;
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v <= 0) return std::nullopt;
  return v;
}

}  // namespace

AttemptCredentials::AttemptCredentials() {
  std::size_t got = 0;
  while (got < key_.size()) {
    const ssize_t n = getrandom(key_.data() + got, key_.size() - got, 0);
    if (n < 0) throw std::runtime_error("getrandom failed: cannot make a signing key");
    got += static_cast<std::size_t>(n);
  }
}

AttemptCredentials::AttemptCredentials(std::string_view key) {
  for (std::size_t i = 0; i < key_.size(); ++i) {
    key_[i] = key.empty() ? 0 : static_cast<unsigned char>(key[i % key.size()]);
  }
}

std::string AttemptCredentials::Sign(std::string_view payload) const {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key_.data(), static_cast<int>(key_.size()),
       reinterpret_cast<const unsigned char*>(payload.data()), payload.size(), mac, &len);
  return Hex(mac, len);
}

std::string AttemptCredentials::Issue(int64_t run_id, int64_t token) const {
  const std::string payload = fmt::format("{}{}.{}", kPrefix, run_id, token);
  return payload + "." + Sign(payload);
}

std::optional<AttemptIdentity> AttemptCredentials::Verify(std::string_view credential) const {
  if (!credential.starts_with(kPrefix)) return std::nullopt;
  const std::size_t mac_dot = credential.rfind('.');
  const std::size_t id_dot = credential.find('.', kPrefix.size());
  if (mac_dot == std::string_view::npos || id_dot == std::string_view::npos ||
      id_dot >= mac_dot) {
    return std::nullopt;
  }
  const auto run_id = ParseId(credential.substr(kPrefix.size(), id_dot - kPrefix.size()));
  const auto token = ParseId(credential.substr(id_dot + 1, mac_dot - id_dot - 1));
  if (!run_id || !token) return std::nullopt;
  const std::string expected = Sign(credential.substr(0, mac_dot));
  const std::string_view given = credential.substr(mac_dot + 1);
  if (given.size() != expected.size() ||
      CRYPTO_memcmp(given.data(), expected.data(), expected.size()) != 0) {
    return std::nullopt;
  }
  return AttemptIdentity{*run_id, *token};
}

}  // namespace cronledger::api
