#include "cli/context.h"

#include <pwd.h>
#include <unistd.h>

#include <cstdlib>
#include <string_view>
#include <variant>

#include "cli/exit_codes.h"
#include "store/open_store.h"

namespace cronledger::cli {

int UsageError(std::ostream& err, const std::string& command, const std::string& message) {
  err << "cronledger " << command << ": " << message << "\n";
  return kExitUsage;
}

int LoadConfigOrReport(const std::string& command, const std::string& path,
                       config::Config* out, std::ostream& err) {
  auto loaded = config::LoadConfig(path);
  if (auto* errors = std::get_if<config::ConfigErrors>(&loaded)) {
    for (const auto& p : errors->problems) {
      err << "cronledger " << command << ": " << p.ToString() << "\n";
    }
    return kExitUsage;
  }
  *out = std::move(std::get<config::Config>(loaded));
  return kExitOk;
}

namespace {

// A SQLite ledger whose file is not there: serve creates it, commands that
// read one do not. Only then is "has serve run?" the likely answer.
bool NoLedgerFileYet(const std::string& store) {
  constexpr std::string_view kSqlite = "sqlite:";
  if (store.rfind(kSqlite, 0) != 0) return false;
  return access(store.substr(kSqlite.size()).c_str(), F_OK) != 0;
}

}  // namespace

int OpenStoreOrReport(const std::string& command, const config::Config& config,
                      std::unique_ptr<store::Store>* out, std::ostream& err, StoreAccess access) {
  auto s =
      store::OpenStore({.url = config.server.store,
                        .synchronous_full = config.server.durability == config::Durability::kFull,
                        .read_only = access == StoreAccess::kRead},
                       access == StoreAccess::kCreate);
  if (!s.ok()) {
    err << "cronledger " << command << ": store unavailable: " << s.status().message();
    if (access != StoreAccess::kCreate && NoLedgerFileYet(config.server.store)) {
      err << " (has `cronledger serve` run with this config?)";
    }
    err << "\n";
    return s.status().code() == StatusCode::kInvalidArgument ? kExitUsage : kExitUnavailable;
  }
  *out = std::move(*s);
  return kExitOk;
}

std::string DefaultActor() {
  if (const passwd* pw = getpwuid(geteuid()); pw != nullptr && pw->pw_name != nullptr) {
    return pw->pw_name;
  }
  if (const char* user = std::getenv("USER"); user != nullptr && *user != '\0') return user;
  return "unknown";
}

int OpenJobCommand(const std::string& command, const std::string& config_path,
                   const std::string& job, JobCommand* out, std::ostream& err) {
  if (int rc = LoadConfigOrReport(command, config_path, &out->config, err); rc != kExitOk) {
    return rc;
  }
  out->job = out->config.FindJob(job);
  if (out->job == nullptr) {
    err << "cronledger " << command << ": no job named \"" << job << "\" in " << config_path
        << "\n";
    return kExitUsage;
  }
  return OpenStoreOrReport(command, out->config, &out->store, err, StoreAccess::kExisting);
}

}  // namespace cronledger::cli
