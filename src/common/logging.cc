#include "common/logging.h"

#include <chrono>
#include <memory>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/formatter.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "cronledger/schedule.h"

namespace cronledger {
namespace {

// spdlog's patterns do not escape the message (%v), so JSON needs its own
// formatter.
class JsonFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    const auto ms = std::chrono::floor<std::chrono::milliseconds>(msg.time);
    const auto secs = std::chrono::floor<std::chrono::seconds>(ms);
    std::string ts = FormatUtc(secs);  // ...T09:00:00Z
    ts.insert(ts.size() - 1, fmt::format(".{:03}", (ms - secs).count()));
    nlohmann::ordered_json j;
    j["ts"] = ts;
    j["level"] = std::string(spdlog::level::to_string_view(msg.level).data(),
                             spdlog::level::to_string_view(msg.level).size());
    j["msg"] = std::string(msg.payload.data(), msg.payload.size());
    const std::string line =
        j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
    dest.append(line.data(), line.data() + line.size());
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<JsonFormatter>();
  }
};

}  // namespace

void LogToStderr() {
  // A daemon's log belongs on stderr, where systemd and `2>serve.log` look
  // for it; stdout is a command's answer.
  spdlog::set_default_logger(std::make_shared<spdlog::logger>(
      "cronledger", std::make_shared<spdlog::sinks::stderr_sink_mt>()));
}

Status ConfigureLogging(std::string_view format) {
  if (format != "json" && format != "text") {
    return InvalidArgument(fmt::format("--log-format: \"{}\" is not one of json, text", format));
  }
  LogToStderr();
  if (format == "json") {
    spdlog::set_formatter(std::make_unique<JsonFormatter>());
    return Status::Ok();
  }
  if (format == "text") {
    spdlog::set_formatter(std::make_unique<spdlog::pattern_formatter>(
        "%Y-%m-%dT%H:%M:%S.%eZ %l %v", spdlog::pattern_time_type::utc));
  }
  return Status::Ok();
}

}  // namespace cronledger
