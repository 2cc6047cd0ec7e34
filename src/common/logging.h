// Process-wide logging for serve: one line per event on stderr, as text or
// as JSON objects.
#ifndef CRONLEDGER_COMMON_LOGGING_H_
#define CRONLEDGER_COMMON_LOGGING_H_

#include <string_view>

#include "cronledger/status.h"

namespace cronledger {

// Sends spdlog's default logger to stderr (spdlog's own default is stdout,
// where a command's --json output goes). Every command calls it first.
void LogToStderr();

// Also LogToStderr. "text": `2026-11-29T09:00:00.123Z info message`; "json":
// `{"ts":"2026-11-29T09:00:00.123Z","level":"info","msg":"message"}` with
// the message escaped. kInvalidArgument for any other format.
Status ConfigureLogging(std::string_view format);

}  // namespace cronledger

#endif  // CRONLEDGER_COMMON_LOGGING_H_
