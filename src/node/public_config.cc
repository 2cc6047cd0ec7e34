// cronledger::Config (include/cronledger/node.h): the validated
// configuration an embedding program or `serve` opens a node with.
#include <string>
#include <variant>

#include "config/config.h"
#include "cronledger/node.h"

namespace cronledger {
namespace {

Result<std::shared_ptr<const config::Config>> FromLoaded(
    std::variant<config::Config, config::ConfigErrors> loaded) {
  if (auto* errors = std::get_if<config::ConfigErrors>(&loaded)) {
    std::string message = errors->ToString();  // a line per problem
    if (!message.empty()) message.pop_back();  // and no empty last line
    return InvalidArgument(std::move(message));
  }
  return std::shared_ptr<const config::Config>(
      std::make_shared<config::Config>(std::move(std::get<config::Config>(loaded))));
}

}  // namespace

Result<Config> Config::Load(const std::string& path) {
  auto impl = FromLoaded(config::LoadConfig(path));
  if (!impl.ok()) return impl.status();
  return Config(std::move(*impl));
}

Result<Config> Config::Parse(std::string_view toml, const std::string& path) {
  auto impl = FromLoaded(config::ParseConfig(toml, path));
  if (!impl.ok()) return impl.status();
  return Config(std::move(*impl));
}

std::vector<std::string> Config::JobNames() const {
  std::vector<std::string> names;
  for (const auto& job : impl_->jobs) names.push_back(job.name);
  return names;
}

const config::Config& detail::ConfigOf(const Config& config) { return *config.impl_; }

}  // namespace cronledger
