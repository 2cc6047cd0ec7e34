#include "cli/login_link_command.h"

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <stdexcept>

#include "api/auth.h"
#include "api/dashboard_session.h"
#include "cli/context.h"
#include "cli/exit_codes.h"
#include "store/store.h"

namespace cronledger::cli {
namespace {

constexpr const char* kCommand = "login-link";

// Where the browser reaches serve: the configured public address, else the
// address of the node that beat last (the one running), else the config's.
std::string BaseUrl(const config::Config& config, store::Store& store) {
  if (!config.server.public_url.empty()) return config.server.public_url;
  const store::NodeRecord* seen = nullptr;
  auto nodes = store.NodeList();
  if (nodes.ok()) {
    for (const auto& n : *nodes) {
      if (n.listen.empty() || n.stopped_at) continue;
      if (seen == nullptr || n.last_seen_at > seen->last_seen_at) seen = &n;
    }
    if (seen != nullptr) return "http://" + seen->listen;
  }
  return "http://" + config.server.listen;
}

}  // namespace

int RunLoginLink(const LoginLinkArgs& args, Clock& clock, std::ostream& out, std::ostream& err) {
  config::Config config;
  if (int rc = LoadConfigOrReport(kCommand, args.config_path, &config, err); rc != kExitOk) {
    return rc;
  }
  api::ApiToken token;
  if (config.auth.tokens.empty()) {
    if (args.token) {
      return UsageError(err, kCommand,
                        "--token names an [[auth.token]], and the config has none: without "
                        "--token the link logs in with the local operator token");
    }
    // Being able to read the token file is what entitles one to a link.
    const auto path = std::filesystem::path(config.dir) / api::kLocalTokenFile;
    if (access(path.c_str(), R_OK) != 0) {
      err << fmt::format(
          "cronledger {}: cannot read {} (the local operator token serve creates at its first "
          "start): run this as the user serve runs as, after serve has started once\n",
          kCommand, path.string());
      return kExitUnavailable;
    }
    token = {"local", config::TokenRole::kOperate, ""};
  } else {
    std::string names;
    const config::TokenConfig* named = nullptr;
    for (const auto& t : config.auth.tokens) {
      if (t.role == config::TokenRole::kWorker) continue;
      names += fmt::format("{}{}", names.empty() ? "" : ", ", t.name);
      if (args.token && t.name == *args.token) named = &t;
    }
    if (!args.token) {
      return UsageError(err, kCommand,
                        fmt::format("--token NAME is required with [[auth.token]]: the token the "
                                    "link logs in as, one of {}",
                                    names));
    }
    if (named == nullptr) {
      return UsageError(err, kCommand,
                        fmt::format("--token \"{}\" is not a read or operate [[auth.token]] of "
                                    "the config; use one of {}",
                                    *args.token, names));
    }
    token = {named->name, named->role, ""};
  }
  std::unique_ptr<store::Store> store;
  if (int rc = OpenStoreOrReport(kCommand, config, &store, err, StoreAccess::kExisting);
      rc != kExitOk) {
    return rc;
  }
  // The code names the token; serve, redeeming it, logs in as that token as
  // its config defines it now.
  const api::TokenAuthenticator tokens({token});
  api::SessionStore sessions(clock, store.get(), &tokens);
  std::string code;
  try {
    code = sessions.IssueLoginCode(tokens.ByName(token.name));
  } catch (const std::runtime_error& e) {
    err << fmt::format("cronledger {}: {}\n", kCommand, e.what());
    return kExitUnavailable;
  }
  err << fmt::format(
      "cronledger {}: a one-time login link for token \"{}\" ({}), valid {} min, works once:\n",
      kCommand, token.name, api::RoleName(token.role), api::kLoginCodeTtl.count());
  out << fmt::format("{}/login?code={}\n", BaseUrl(config, *store), code);
  return kExitOk;
}

}  // namespace cronledger::cli
