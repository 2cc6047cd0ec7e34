#include "cli/program_path.h"

#include <unistd.h>

namespace cronledger::cli {

std::string ProgramBesideSelf(std::string_view name) {
  std::string self(4096, '\0');
  const ssize_t n = readlink("/proc/self/exe", self.data(), self.size() - 1);
  if (n <= 0) return "";
  self.resize(static_cast<std::size_t>(n));
  const auto slash = self.rfind('/');
  if (slash == std::string::npos) return "";
  return self.substr(0, slash + 1) + std::string(name);
}

}  // namespace cronledger::cli
