#include "exec/attempt_files.h"

#include <filesystem>
#include <system_error>

#include <fmt/format.h>

#include "exec/subprocess_executor.h"

namespace cronledger::exec {

namespace fs = std::filesystem;

std::vector<std::string> KeepInputs(const std::vector<std::string>& patterns,
                                    const StepContext& ctx, const std::string& base_dir,
                                    const std::string& dest_dir) {
  std::vector<std::string> problems;
  if (patterns.empty()) return problems;
  std::error_code ec;
  fs::create_directories(dest_dir, ec);
  if (ec) {
    problems.push_back(fmt::format("keep_inputs: cannot create {}: {}", dest_dir, ec.message()));
    return problems;
  }
  for (const std::string& path : SubstitutePlaceholders(patterns, ctx)) {
    fs::path source(path);
    if (source.is_relative()) source = fs::path(base_dir) / source;
    std::string name = path;
    for (char& c : name) {
      if (c == '/') c = '_';
    }
    fs::copy_file(source, fs::path(dest_dir) / name, fs::copy_options::overwrite_existing, ec);
    if (ec) {
      problems.push_back(fmt::format("keep_inputs: cannot keep {}: {}", source.string(),
                                     ec.message()));
    }
  }
  return problems;
}

int PruneAttemptFolders(const std::string& log_dir, std::chrono::seconds retention,
                        Clock::TimePoint now) {
  int removed = 0;
  std::error_code ec;
  for (const auto& job : fs::directory_iterator(log_dir, ec)) {
    if (!job.is_directory(ec)) continue;
    for (const auto& run : fs::directory_iterator(job.path(), ec)) {
      if (!run.is_directory(ec)) continue;
      // The newest file decides: a run retried last week keeps its folder.
      fs::file_time_type newest = fs::last_write_time(run.path(), ec);
      for (const auto& f : fs::recursive_directory_iterator(run.path(), ec)) {
        const auto t = fs::last_write_time(f.path(), ec);
        if (!ec && t > newest) newest = t;
      }
      const auto newest_sys = std::chrono::file_clock::to_sys(newest);
      if (now - newest_sys > retention) {
        if (fs::remove_all(run.path(), ec) > 0 && !ec) ++removed;
      }
    }
  }
  return removed;
}

}  // namespace cronledger::exec
