#include "api/auth.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "common/text.h"

namespace cronledger::api {
namespace {

constexpr std::size_t kMinLocalTokenBytes = 16;

std::array<unsigned char, 32> Sha256(std::string_view text) {
  std::array<unsigned char, 32> out{};
  unsigned int len = 0;
  EVP_Digest(text.data(), text.size(), out.data(), &len, EVP_sha256(), nullptr);
  return out;
}

Status IoError(const std::string& what, const std::string& path) {
  return Status(StatusCode::kIOError, fmt::format("{} {}: {}", what, path, std::strerror(errno)));
}

Result<std::string> ReadTokenFile(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return IoError("cannot read", path);
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    const Status s = IoError("cannot read", path);
    close(fd);
    return s;
  }
  if ((st.st_mode & 077) != 0) {
    close(fd);
    return Status(StatusCode::kInvalidArgument,
                  fmt::format("{} may be read by others (mode {:04o}): it holds the operator "
                              "token; chmod 600 it, or delete it for a new token",
                              path, st.st_mode & 07777));
  }
  std::string text;
  char buf[512];
  ssize_t n = 0;
  while ((n = read(fd, buf, sizeof buf)) > 0 && text.size() < 4096) {
    text.append(buf, static_cast<std::size_t>(n));
  }
  close(fd);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) {
    text.pop_back();
  }
  const bool printable = std::all_of(text.begin(), text.end(), [](char c) {
    return static_cast<unsigned char>(c) > ' ' && c != 0x7f;
  });
  if (text.size() < kMinLocalTokenBytes || !printable) {
    return Status(StatusCode::kInvalidArgument,
                  fmt::format("{} holds no usable token (one line of at least {} printable "
                              "characters); delete it for a new one",
                              path, kMinLocalTokenBytes));
  }
  return text;
}

}  // namespace

std::string_view RoleName(TokenRole role) {
  switch (role) {
    case TokenRole::kRead:
      return "read";
    case TokenRole::kOperate:
      return "operate";
    case TokenRole::kWorker:
      return "worker";
  }
  return "read";
}

bool RoleAllows(TokenRole have, TokenRole need) {
  if (have == need) return true;
  return have == TokenRole::kOperate && need == TokenRole::kRead;
}

std::optional<std::string_view> BearerCredential(std::string_view header) {
  constexpr std::string_view kBearer = "bearer ";
  if (header.size() <= kBearer.size()) return std::nullopt;
  for (std::size_t i = 0; i < kBearer.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(header[i])) != kBearer[i]) return std::nullopt;
  }
  return header.substr(kBearer.size());
}

std::variant<const ApiToken*, ApiResponse> AuthenticateBearer(
    const ApiRequest& request, const TokenAuthenticator& tokens, std::string_view missing,
    const AttemptCredentials* step_credentials, std::string_view step_refusal) {
  if (request.authorization.empty()) return Error(401, "unauthenticated", std::string(missing));
  const auto credential = BearerCredential(request.authorization);
  if (!credential) {
    return Error(401, "unauthenticated", "the Authorization header is not \"Bearer TOKEN\"");
  }
  if (const ApiToken* token = tokens.Find(*credential)) return token;
  if (step_credentials != nullptr && step_credentials->Verify(*credential)) {
    return Error(403, "forbidden", std::string(step_refusal));
  }
  return Error(401, "unauthenticated", "the token is not valid here");
}

TokenAuthenticator::TokenAuthenticator(std::vector<ApiToken> tokens) {
  for (auto& t : tokens) {
    const auto digest = Sha256(t.secret);
    entries_.push_back({std::move(t), digest});
  }
}

const ApiToken* TokenAuthenticator::Find(std::string_view presented) const {
  const auto digest = Sha256(presented);
  const ApiToken* found = nullptr;
  // No early exit: every token is compared whatever matched.
  for (const Entry& e : entries_) {
    if (CRYPTO_memcmp(e.digest.data(), digest.data(), digest.size()) == 0) found = &e.token;
  }
  return found;
}

const ApiToken* TokenAuthenticator::ByName(std::string_view name) const {
  for (const Entry& e : entries_) {
    if (e.token.name == name) return &e.token;
  }
  return nullptr;
}

Result<LocalToken> LoadOrCreateLocalToken(const std::string& dir) {
  LocalToken out;
  out.path = (std::filesystem::path(dir) / kLocalTokenFile).string();
  if (access(out.path.c_str(), F_OK) != 0) {
    // Written whole under a temporary name, then linked into place: link
    // fails when another serve got there first, and then its token is read.
    unsigned char random[32];
    if (RAND_bytes(random, sizeof random) != 1) {
      return Status(StatusCode::kInternal, "cannot draw random bytes for the operator token");
    }
    const std::string secret = Hex(random, sizeof random);
    const std::string tmp = fmt::format("{}.{}.tmp", out.path, getpid());
    const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) return IoError("cannot create", tmp);
    const std::string line = secret + "\n";
    const bool written = fchmod(fd, 0600) == 0 &&
                         write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size()) &&
                         fsync(fd) == 0;
    const Status write_error = written ? Status::Ok() : IoError("cannot write", tmp);
    close(fd);
    if (!written) {
      unlink(tmp.c_str());
      return write_error;
    }
    const int linked = link(tmp.c_str(), out.path.c_str());
    const int link_errno = errno;
    unlink(tmp.c_str());
    if (linked == 0) {
      out.secret = std::move(secret);
      out.created = true;
      return out;
    }
    if (link_errno != EEXIST) {
      errno = link_errno;
      return IoError("cannot create", out.path);
    }
  }
  auto secret = ReadTokenFile(out.path);
  if (!secret.ok()) return secret.status();
  out.secret = std::move(*secret);
  return out;
}

Result<LocalToken> ReadLocalToken(const std::string& dir) {
  LocalToken out;
  out.path = (std::filesystem::path(dir) / kLocalTokenFile).string();
  if (access(out.path.c_str(), F_OK) != 0) {
    return Status(StatusCode::kNotFound, fmt::format("there is no {}", out.path));
  }
  auto secret = ReadTokenFile(out.path);
  if (!secret.ok()) return secret.status();
  out.secret = std::move(*secret);
  return out;
}

}  // namespace cronledger::api
